"""The leaderboard: result records of `aht-bench evaluate` that anyone can check, and the pages
generated from them.

    from aht_bench import leaderboard
    path, entry, report = leaderboard.submit("result.json", "my agent", "PPO ego, 3M steps")
    report = leaderboard.check_entry(entry)          # schema, heldout set, scores, hashes
    verification = leaderboard.verify(path)          # the checks, then a re-run of the agent
    leaderboard.render_files()                       # leaderboard/README.md and index.html

- `entries`: the entry format (a result record plus name, description and agent path), file
  names, reading and atomic writing.
- `checks`: what every entry must pass (`check_entry`), each failure a `Problem` with its fix.
- `rerun`: the agent re-run in a child process, compared with the record.
- `render`: the README table and the self-contained HTML page, as text.
- `board`: submit, verify and render_files, what `aht-bench leaderboard` calls (`cli`).

Data lives in leaderboard/ at the top of the repository; the package never imports from it.

May import the standard library, numpy, rliable, click (in `cli`) and aht_bench.evaluation.
"""

from aht_bench.leaderboard.board import (
    Rejected,
    Verification,
    load_entries,
    render_files,
    submit,
    verify,
)
from aht_bench.leaderboard.checks import Problem, Report, check_entry
from aht_bench.leaderboard.entries import EntryError, EntryExistsError, leaderboard_root

__all__ = [
    "EntryError",
    "EntryExistsError",
    "Problem",
    "Rejected",
    "Report",
    "Verification",
    "check_entry",
    "leaderboard_root",
    "load_entries",
    "render_files",
    "submit",
    "verify",
]
