"""Every `aht-bench` command shown in README.md and docs/ names a command and options that exist.

The commands are not run here (most train or evaluate for minutes; benchmarks/results/
readme_commands.txt records a run of them as written). This catches the drift that is cheap
to catch: a renamed or removed command, subcommand or option.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from aht_bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
DEFAULT_SUBCOMMAND = {"aht-bench sweep": "run"}
"""Groups whose first word, when it names no subcommand, goes to a default one
(aht_bench/sweeps/cli.py: `aht-bench sweep rq1` is `aht-bench sweep run rq1`)."""
_FENCE = re.compile(r"^[ \t]*```[\w-]*[ \t]*\n(.*?)^[ \t]*```", re.S | re.M)


def shown_commands(text: str) -> list[str]:
    """The `aht-bench ...` lines of `text`'s fenced blocks, continuation lines joined, trailing
    comments dropped and spaces collapsed."""
    commands = []
    for block in _FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            for prefix in (".venv/bin/aht-bench ", "aht-bench "):
                if line.startswith(prefix):
                    commands.append(" ".join(line[len(prefix) :].split(" #")[0].split()))
    return commands


def _option_names(command: click.Command) -> dict[str, bool]:
    """Each option string of `command` -> whether it takes a value."""
    names = {"--help": False, "-h": False}
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in (*param.opts, *param.secondary_opts):
                names[opt] = not (param.is_flag or param.count)
    return names


def problems_of(command_line: str) -> list[str]:
    """What in `command_line` (the words after `aht-bench`) names no command or option."""
    words = shlex.split(command_line)
    command: click.Command = main
    path = ["aht-bench"]
    problems = []
    i = 0
    while i < len(words):
        word = words[i]
        options = _option_names(command)
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            if name not in options:
                problems.append(f"{' '.join(path)} has no option {name}")
            i += 2 if options.get(name) and "=" not in word else 1
            continue
        if isinstance(command, click.Group):
            sub = command.get_command(click.Context(command), word)
            default = DEFAULT_SUBCOMMAND.get(" ".join(path))
            if sub is None and default is not None:
                words.insert(i, default)  # then this word is the default command's argument
                continue
            if sub is None:
                problems.append(f"{' '.join(path)} has no command {word!r}")
                return problems
            command, path = sub, [*path, word]
        i += 1
    return problems


def test_every_shown_command_names_commands_and_options_that_exist():
    checked, found = 0, []
    for doc in DOCS:
        for line in shown_commands(doc.read_text()):
            checked += 1
            found += [
                f"{doc.relative_to(ROOT)}: `aht-bench {line}`: {p}" for p in problems_of(line)
            ]
    assert not found, "\n".join(found)
    assert checked >= 80, checked  # the README and docs show well over 80 commands


def test_the_check_finds_an_unknown_command_and_option():
    assert problems_of("heldout show --task lbf --version v2") == []
    assert problems_of("evaluate a.py --task lbf --episodez 4") == [
        "aht-bench evaluate has no option --episodez"
    ]
    assert problems_of("heldout shw --task lbf") == ["aht-bench heldout has no command 'shw'"]
    assert problems_of("--heldout /x heldout list") == []  # a group's own option and value
    assert problems_of("sweep rq1 --dry-run") == []  # `sweep run rq1 --dry-run`
    assert problems_of("sweep rq1 --dry-runn") == ["aht-bench sweep run has no option --dry-runn"]
    text = "```bash\naht-bench train rotate \\\n  --task lbf --preset quick   # quick\n```\n"
    assert shown_commands(text) == ["train rotate --task lbf --preset quick"]
