"""Result records: what `aht-bench evaluate` writes and `aht-bench compare` (and the
leaderboard) read.

    {
      "format": "aht-bench-result", "format_version": 1,
      "payload": {...},              # everything that defines the result
      "payload_sha256": "...",       # sha256 of the canonical JSON of the payload
      "meta": {...}                  # when, how long, the command: not hashed
    }

The payload holds the package and library versions, the task id, the agent file's name,
sha256, bundle (`agent.bundle`: {"sha256", "files"} of every file its sandbox shows it,
`policies.bundle`; records before bundles have none) and how it ran, the teammate set's id and
manifest sha256, the protocol (episodes, seed, seatings, bootstrap settings), every member's
bounds, per-episode returns and normalised score with its CI, and the aggregates. It holds
nothing that changes between two runs of the same evaluation (no time stamps, no paths), so
evaluating an agent twice gives the same `payload_sha256` (while its bundle is unchanged:
write results outside the agent's folder, or declare its `BUNDLE`). The canonical JSON is
`json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)` in UTF-8.

Two forms share format version 1. A record of one agent file has runs = episodes (no
`protocol.runs`; `agent.file`, `agent.sha256`, `members[].returns`; `meta.agent_path`). A
record of several agent files, the independently trained seeds of one agent, has runs =
training seeds, as in the paper, and says so with `protocol.runs == "seeds"`:

    agent      {"files": [{"file", "sha256", "bundle", "kind"}, ...] in seed order, "runner"}
    members[]  "returns_per_seed": [{"<seats>": [per episode]}, ...] (one per seed),
               "normalized_per_seed": [each seed's mean normalised score], and "normalized"
               {value, ci} with the CI over seeds (the other member fields as in one-file records)
    meta       "agent_paths" instead of "agent_path"

Each seed plays exactly the protocol of a one-file evaluation (same episodes, seed, seatings),
so `returns_per_seed[i]` is what evaluating file i alone records. A multi-seed record has no
`agent.file`, `agent.sha256` or `members[].returns`: a reader that does not know the form fails
on it instead of taking one seed's returns for the whole. Read both forms through
`is_multi_seed`, `agent_files`, `agent_label`, `returns_of` and `score_matrix_of`;
`result_lines` is the table `aht-bench evaluate` prints.

May import numpy, the standard library and aht_bench.files.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "aht-bench-result"
FORMAT_VERSION = 1
RUNS_SEEDS = "seeds"  # protocol.runs of a multi-seed record
_LIBRARIES = ("jax", "jaxlib", "numpy", "rliable", "jaxmarl", "jumanji")


class ResultFileError(ValueError):
    """A result file that cannot be read, or whose payload does not match its hash."""


def canonical_json(payload: Any) -> bytes:
    """The bytes `payload_sha256` is computed over."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def payload_sha256(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a result depends on."""
    out = {}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def member_entries(
    names: tuple[str, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    returns: np.ndarray,
    normalized: np.ndarray,
    member_estimates: list[dict[str, Any]],
    seatings: tuple[tuple[int, ...], ...],
) -> list[dict[str, Any]]:
    """One entry per member: bounds, per-seating per-episode returns, means, score with CI."""
    entries = []
    for m, name in enumerate(names):
        entries.append(
            {
                "name": name,
                "lower": float(lower[m]),
                "upper": float(upper[m]),
                "mean_return": float(np.mean(returns[m])),
                "mean_return_per_seating": [float(np.mean(r)) for r in returns[m]],
                "normalized": member_estimates[m],
                "max_normalized_episode": float(np.max(normalized[m])),
                "returns": {
                    ",".join(str(s) for s in seating): [float(r) for r in returns[m, i]]
                    for i, seating in enumerate(seatings)
                },
            }
        )
    return entries


def seed_member_entries(
    names: tuple[str, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    returns: np.ndarray,
    normalized: np.ndarray,
    matrix: np.ndarray,
    member_estimates: list[dict[str, Any]],
    seatings: tuple[tuple[int, ...], ...],
) -> list[dict[str, Any]]:
    """One entry per member of a multi-seed record: `returns` and `normalized` are (seeds,
    members, seatings, episodes), `matrix` the (seeds, members) score matrix."""
    entries = []
    for m, name in enumerate(names):
        entries.append(
            {
                "name": name,
                "lower": float(lower[m]),
                "upper": float(upper[m]),
                "mean_return": float(np.mean(returns[:, m])),
                "mean_return_per_seating": [
                    float(np.mean(returns[:, m, i])) for i in range(len(seatings))
                ],
                "normalized": member_estimates[m],
                "normalized_per_seed": [float(x) for x in matrix[:, m]],
                "max_normalized_episode": float(np.max(normalized[:, m])),
                "returns_per_seed": [
                    {
                        ",".join(str(s) for s in seating): [float(r) for r in seed[m, i]]
                        for i, seating in enumerate(seatings)
                    }
                    for seed in returns
                ],
            }
        )
    return entries


MIN_RUNS = 2
"""Independent runs per member below which a bootstrap CI says nothing (one run: zero width)."""


def runs_per_member(payload: dict[str, Any]) -> int:
    """The independent runs behind each member's score: the training seeds of a multi-seed
    record, else the episodes (each averaged over the seatings)."""
    if is_multi_seed(payload):
        return len(payload["agent"]["files"])
    return int(payload["protocol"]["episodes"])


def ci_warning(payload: dict[str, Any]) -> str | None:
    """Why the payload's CIs are no confidence intervals (fewer than `MIN_RUNS` runs per
    member), or None when they are."""
    runs = runs_per_member(payload)
    if runs >= MIN_RUNS:
        return None
    unit = "training seed" if is_multi_seed(payload) else "episode"
    return (
        f"the CIs come from {runs} {unit} per member: a bootstrap over fewer than {MIN_RUNS} "
        "runs has zero width and is not a confidence interval; evaluate with --episodes 2 or "
        "more (the default is 64)"
    )


def make_record(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The record of `payload`; a payload whose CIs come from fewer than `MIN_RUNS` runs per
    member says so in `ci_warning` (absent otherwise)."""
    warning = ci_warning(payload)
    if warning is not None:
        payload = payload | {"ci_warning": warning}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "payload": payload,
        "payload_sha256": payload_sha256(payload),
        "meta": meta,
    }


def write_record(path: Path, record: dict[str, Any]) -> None:
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(record, indent=1, allow_nan=False) + "\n").encode())


def result_path(out: Path | None, agent: Path, task_id: str, several: bool, seeds: int = 1) -> Path:
    """Where `aht-bench evaluate` writes the record of `agent` on `task_id`: `out` itself, or
    with `several` tasks (`--task all`) `out`/<task_id>.json; without `out`,
    results/<agent stem>/<task_id>.json (<task_id>-<N>seeds.json for the `seeds` files of one
    agent)."""
    if out is None:
        name = f"{task_id}-{seeds}seeds.json" if seeds > 1 else f"{task_id}.json"
        return Path("results") / agent.stem / name
    if several:
        return out / f"{task_id}.json"
    return out


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A result record, its format and payload hash checked; raises `ResultFileError`."""
    p = Path(path)
    try:
        record = json.loads(p.read_bytes())
    except OSError as e:
        raise ResultFileError(f"cannot read result file {p}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ResultFileError(f"result file {p} is not valid JSON: {e}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ResultFileError(
            f'{p} is not an aht-bench result record (no "format": "{FORMAT}"); pass files '
            "written by `aht-bench evaluate --out`"
        )
    if record.get("format_version") != FORMAT_VERSION:
        raise ResultFileError(
            f"{p} is a result record of format version {record.get('format_version')!r}; this "
            f"aht-bench reads version {FORMAT_VERSION}"
        )
    payload = record.get("payload")
    if not isinstance(payload, dict) or payload_sha256(payload) != record.get("payload_sha256"):
        raise ResultFileError(
            f"{p}: the payload does not match payload_sha256: the result was edited or "
            "corrupted; evaluate the agent again"
        )
    return record


def is_multi_seed(payload: dict[str, Any]) -> bool:
    """Whether a payload is the multi-seed form (runs = training seeds)."""
    return payload["protocol"].get("runs") == RUNS_SEEDS


def agent_files(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent files of a payload, in seed order: [{"file", "sha256", ...}] (one entry for a
    one-file record)."""
    agent = payload["agent"]
    return list(agent["files"]) if is_multi_seed(payload) else [agent]


def agent_label(payload: dict[str, Any]) -> str:
    """The agent's name in tables: its file name, with the seed count when there are several."""
    files = agent_files(payload)
    first = files[0]["file"]
    return first if len(files) == 1 else f"{first} ({len(files)} seeds)"


def returns_of(payload: dict[str, Any]) -> np.ndarray:
    """Every per-episode return: float64 (files, members, seatings, episodes), one file for a
    one-file record, the seatings in `protocol.seatings` order."""
    keys = [",".join(str(s) for s in seating) for seating in payload["protocol"]["seatings"]]
    members = payload["members"]
    if is_multi_seed(payload):
        per_file = [
            [[seed[k] for k in keys] for seed in m["returns_per_seed"]] for m in members
        ]  # (members, files, seatings, episodes)
        return np.asarray(per_file, np.float64).transpose(1, 0, 2, 3)
    return np.asarray([[[m["returns"][k] for k in keys] for m in members]], np.float64)


def seating_label(seating: list[int] | tuple[int, ...]) -> str:
    """How tables name a seating (the agent's seats): "seat 0", "seats 0,1"."""
    seats = ",".join(str(s) for s in seating)
    return f"seat {seats}" if len(seating) == 1 else f"seats {seats}"


def mean_returns_per_seating(payload: dict[str, Any]) -> np.ndarray:
    """(members, seatings): each member's mean base return with the agent in each seating of
    `protocol.seatings`, over episodes (and seeds), from the per-episode returns. Display only:
    an agent that learned one side of a divided layout shows e.g. 53.1 in seat 0 and 0.0 in
    seat 1, which the mean over seatings hides."""
    return returns_of(payload).mean(axis=(0, 3))


def members_above_one(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The member entries whose mean BRProx exceeds 1: the agent beat the member's upper bound,
    so the bound is too low. The mean, not the CI's upper end: with a point estimate near 1 the
    upper end often passes 1 by chance; the mean passing 1 is the paper's cue to raise it."""
    return [m for m in payload["members"] if m["normalized"]["value"] > 1.0]


def above_one_message(member: dict[str, Any]) -> str:
    """One line naming a member whose mean score exceeds 1, its score and its bound."""
    lo, hi = member["normalized"]["ci"]
    chance = "; the CI reaches 1, so it may be chance" if lo <= 1.0 else ""
    return (
        f"mean score {member['normalized']['value']:.3f} [CI {lo:.3f}, {hi:.3f}] above 1 "
        f"against {member['name']} (mean return {member['mean_return']:.4g} > upper bound "
        f"{member['upper']:.4g}{chance}): the bound is too low"
    )


def episode_score_matrices(record: dict[str, Any]) -> np.ndarray:
    """(files, episodes, members): per agent file, each episode's normalised return averaged
    over seatings, the runs = episodes matrix a one-file evaluation of that file scores."""
    payload = record["payload"]
    members = payload["members"]
    lower = np.array([m["lower"] for m in members], np.float64)[None, :, None, None]
    span = np.array([m["upper"] - m["lower"] for m in members], np.float64)[None, :, None, None]
    normalized = (returns_of(payload) - lower) / span  # (F, M, S, E)
    return normalized.mean(axis=2).transpose(0, 2, 1)


def score_matrix_of(record: dict[str, Any]) -> np.ndarray:
    """The (runs, members) score matrix of a record, the one its CIs were computed over.

    One agent file: (episodes, members), each episode's normalised return averaged over
    seatings (`aht_bench.evaluation.scores.score_matrix`). Several (`protocol.runs` "seeds"):
    (seeds, members), each seed's normalised return averaged over its episodes and seatings
    (`scores.seed_score_matrix`)."""
    payload = record["payload"]
    if is_multi_seed(payload):
        return episode_score_matrices(record).mean(axis=1)
    rows = []
    for member in payload["members"]:
        returns = np.asarray(list(member["returns"].values()), np.float64)  # (S, E)
        span = member["upper"] - member["lower"]
        rows.append(((returns - member["lower"]) / span).mean(axis=0))
    return np.asarray(rows).T


def count(n: int, noun: str) -> str:
    """ "1 member", "2 members": `n` and `noun`, in the plural unless `n` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def result_lines(record: dict[str, Any], floor: str | None = None) -> list[str]:
    """The table `aht-bench evaluate` prints for a result record: per member its bounds, mean
    return (over every seating and per ego seat: an agent that plays only one side of a
    divided layout shows), normalised score with CI and a flag above 1; then the per-seed
    means of a multi-seed record, the aggregates, `floor` (a line on the random agent's score
    on the set, to read the aggregates against), a flag when the CIs come from fewer than
    `MIN_RUNS` runs per member, and a warning per member above 1."""
    lines: list[str] = []
    payload = record["payload"]
    members = payload["members"]
    above = members_above_one(payload)
    width = max(12, *(len(m["name"]) for m in members))
    conf = int(round(100 * payload["protocol"]["bootstrap"]["confidence"]))
    seeds = len(agent_files(payload)) if is_multi_seed(payload) else 0
    over = f" over {seeds} seeds" if seeds else ""
    # the per-seat means show an agent that plays only one side of a divided layout
    seat_labels = [f"ego {seating_label(s)}" for s in payload["protocol"]["seatings"]]
    per_seat = mean_returns_per_seating(payload)
    seat_head = "".join(f"  {label:>10s}" for label in seat_labels)
    no_ci = ci_warning(payload) is not None
    unit = "seed" if seeds else "episode"
    flag_ci = f" ({runs_per_member(payload)} {unit} per member: no CI)" if no_ci else ""
    lines.append(f"{'member':{width}s}  {'lower':>7s}  {'upper':>8s}  {'mean return':>11s}"
                 f"{seat_head}  normalised [{conf}% CI{over}]{flag_ci}")  # fmt: skip
    for m, seat_means in zip(members, per_seat, strict=True):
        lo, hi = m["normalized"]["ci"]
        seat_cells = "".join(
            f"  {v:>{max(10, len(label))}.4g}"
            for v, label in zip(seat_means, seat_labels, strict=True)
        )
        flag = "  > 1: bound too low" if any(m is a for a in above) else ""
        lines.append(
            f"{m['name']:{width}s}  {m['lower']:7.4g}  {m['upper']:8.4g}  "
            f"{m['mean_return']:11.4g}{seat_cells}  {m['normalized']['value']:6.3f} "
            f"[{lo:.3f}, {hi:.3f}]{flag}"
        )
    lines.append(
        "(mean return: over every seating; ego seat N: with the agent in seat N, the member in "
        "the other seat(s))"
    )
    n_ep = payload["protocol"]["episodes"]
    n_seat = len(payload["protocol"]["seatings"])
    if seeds:
        for i, f in enumerate(agent_files(payload)):
            mean = sum(m["normalized_per_seed"][i] for m in members) / len(members)
            lines.append(f"seed {i} ({f['file']}): mean normalised score {mean:.3f}")
        lines.append(
            f"aggregate over {count(len(members), 'member')} x {seeds} seeds (each the mean of "
            f"{count(n_ep, 'episode')} x {count(n_seat, 'seating')}), stratified bootstrap "
            f"{conf}% CI over the {seeds} seeds:"
        )
    else:
        lines.append(
            f"aggregate over {count(len(members), 'member')} x {count(n_ep, 'episode')} (each "
            f"the mean of {count(n_seat, 'seating')}), stratified bootstrap {conf}% CI:"
        )
    labels = {"mean": "mean", "iqm": "IQM", "median": "median", "worst_case": "worst case"}
    for key, label in labels.items():
        agg = payload["aggregates"][key]
        lo, hi = agg["ci"]
        mark = "  <- not a CI" if no_ci else ""
        lines.append(f"  {label:10s} {agg['value']:6.3f} [{lo:.3f}, {hi:.3f}]{mark}")
    if floor is not None:
        lines.append(floor)
    if no_ci:
        lines.append(f"warning: {ci_warning(payload)}")
    for m in above:
        lines.append(f"warning: {above_one_message(m)}; by the paper's procedure it is raised")
    return lines
