"""Shared pieces of the leaderboard tests: a real result record, tampering, the CI check and
the CLI runner.

RECORD is what `aht-bench evaluate agents/examples/random_agent.py --task lbf --teammates v1
--episodes 2 --reps 200 --no-plot --out tests/leaderboard/data/random_agent-lbf-2ep.json` wrote
(the few episodes and resamples keep the checks fast). It stays valid while random_agent.py and
the lbf heldout v1 set are unchanged; if either changes, rerun that command.

SEEDS_RECORD is the multi-seed record (runs = training seeds) of the three stand-in seed files
in data/seeds/ (uniform random actions from seeds 0, 1 and 2), written by `aht-bench evaluate
tests/leaderboard/data/seeds/random_seed0.py tests/leaderboard/data/seeds/random_seed1.py
tests/leaderboard/data/seeds/random_seed2.py --task lbf --teammates v1 --episodes 2 --reps 200
--no-plot --out tests/leaderboard/data/random_seeds-lbf-2ep.json`; rerun it when they or the
set change.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner

from aht_bench.cli import main
from aht_bench.evaluation import scores
from aht_bench.evaluation.record import member_entries, payload_sha256, seed_member_entries
from aht_bench.leaderboard import board, entries

REPO = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).parent / "data" / "random_agent-lbf-2ep.json"
COMMITTED = REPO / "leaderboard"
SEEDS_RECORD = Path(__file__).parent / "data" / "random_seeds-lbf-2ep.json"
SEED_FILES = [f"tests/leaderboard/data/seeds/random_seed{i}.py" for i in range(3)]

# tamper kind -> (how the record is changed, a regex of the message that must reject it)
TAMPERS = {
    "score": "changed score: payload.aggregates.mean.value is",
    "heldout_hash": (
        r"teammate_set.manifest_sha256 0{16}\.\.\. does not match the shipped heldout set "
        r"lbf-v1/v1"
    ),
    "agent_hash": (
        r"agent hash mismatch: payload.agent.sha256 f{16}\.\.\. is not the sha256 of "
        r"agents/examples/random_agent.py"
    ),
    "heldout_version": (
        r"unknown heldout version 'v9' \(teammate_set.version; shipped for lbf-v1: v1"
    ),
    "isolation": (
        r"the record was made with the agent's code running in the evaluator's own process "
        r"\(--in-process\), where an agent file can rewrite its own score"
    ),
}


# tamper of a multi-seed record -> (the check that must reject it, a regex of its message)
SEED_TAMPERS = {
    "score": ("score", "changed score: payload.aggregates.mean.value is"),
    "seed_returns": ("score", r"changed score: payload.members\[0\].normalized_per_seed\[1\] is"),
    "agent_hash": (
        "agent_hash",
        r"agent hash mismatch: payload.agent.files\[2\].sha256 f{16}\.\.\. is not the sha256 of "
        r"tests/leaderboard/data/seeds/random_seed2.py",
    ),
    "heldout_hash": ("heldout_hash", TAMPERS["heldout_hash"]),
    "heldout_version": ("heldout_version", TAMPERS["heldout_version"]),
}


def load_record() -> dict[str, Any]:
    return json.loads(RECORD.read_text())


def load_seeds_record() -> dict[str, Any]:
    return json.loads(SEEDS_RECORD.read_text())


def tamper_seeds(record: dict[str, Any], how: str) -> dict[str, Any]:
    """A copy of the multi-seed `record` (or entry) with one tamper of SEED_TAMPERS, the payload
    rehashed."""
    out = copy.deepcopy(record)
    p = out["payload"]
    if how == "seed_returns":
        p["members"][0]["returns_per_seed"][1]["0"][0] += 1.0  # one return of seed 1
    elif how == "agent_hash":
        p["agent"]["files"][2]["sha256"] = "f" * 64
    else:
        return tamper(record, how)
    out["payload_sha256"] = payload_sha256(p)
    return out


def tamper(record: dict[str, Any], kind: str, rehash: bool = True) -> dict[str, Any]:
    """A copy of `record` (or entry) with one tamper of TAMPERS; `rehash` recomputes
    payload_sha256, as a careful forger would, so only the targeted check can catch it."""
    out = copy.deepcopy(record)
    p = out["payload"]
    if kind == "score":
        p["aggregates"]["mean"]["value"] += 0.1
    elif kind == "heldout_hash":
        p["teammate_set"]["manifest_sha256"] = "0" * 64
    elif kind == "agent_hash":
        p["agent"]["sha256"] = "f" * 64
    elif kind == "heldout_version":
        p["teammate_set"]["version"] = "v9"
    elif kind == "isolation":  # the mark of a record made in-process, where it can be forged
        p["agent"]["isolation"] = "in-process"
    else:
        raise ValueError(kind)
    if rehash:
        out["payload_sha256"] = payload_sha256(p)
    return out


def rescore(
    record: dict[str, Any], returns: np.ndarray, upper: np.ndarray | None = None
) -> dict[str, Any]:
    """A copy of `record` with other returns (members, seatings, episodes) (and upper
    bounds), every score recomputed the evaluator's way (`evaluate.build_record`) and the
    payload rehashed: a consistent forgery."""
    out = copy.deepcopy(record)
    p = out["payload"]
    members = p["members"]
    names = tuple(m["name"] for m in members)
    lower = np.array([m["lower"] for m in members])
    upper = np.array([m["upper"] for m in members]) if upper is None else upper
    seatings = tuple(tuple(s) for s in p["protocol"]["seatings"])
    normalized = scores.normalize(returns, lower, upper)
    boot = p["protocol"]["bootstrap"]
    est = scores.interval_estimates(
        scores.score_matrix(normalized), reps=boot["reps"], seed=boot["seed"]
    )
    p["members"] = member_entries(
        names, lower, upper, returns, normalized, est["members"], seatings
    )
    p["aggregates"] = est["aggregates"]
    out["payload_sha256"] = payload_sha256(p)
    return out


def rescore_seeds(record: dict[str, Any], returns: np.ndarray) -> dict[str, Any]:
    """`rescore` for a multi-seed record: other returns (seeds, members, seatings, episodes),
    every score recomputed (`evaluate.build_seeds_record`), the payload rehashed."""
    out = copy.deepcopy(record)
    p = out["payload"]
    members = p["members"]
    names = tuple(m["name"] for m in members)
    lower = np.array([m["lower"] for m in members])
    upper = np.array([m["upper"] for m in members])
    seatings = tuple(tuple(s) for s in p["protocol"]["seatings"])
    normalized = np.stack([scores.normalize(r, lower, upper) for r in returns])
    matrix = scores.seed_score_matrix(normalized)
    boot = p["protocol"]["bootstrap"]
    est = scores.interval_estimates(matrix, reps=boot["reps"], seed=boot["seed"])
    p["members"] = seed_member_entries(
        names, lower, upper, returns, normalized, matrix, est["members"], seatings
    )
    p["aggregates"] = est["aggregates"]
    out["payload_sha256"] = payload_sha256(p)
    return out


def returns_of(record: dict[str, Any]) -> np.ndarray:
    p = record["payload"]
    keys = [",".join(str(s) for s in seating) for seating in p["protocol"]["seatings"]]
    return np.array([[m["returns"][k] for k in keys] for m in p["members"]], np.float64)


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return path


def ci_check(path: Path) -> board.Verification:
    """What CI runs on every committed entry: the checks, without the re-run."""
    return board.verify(path, rerun=False)


def messages(verification: board.Verification) -> list[str]:
    return [p.message for p in verification.report.problems]


def run(root: Path, *args: str):
    """`aht-bench leaderboard ARGS` with the leaderboard folder `root`."""
    return CliRunner().invoke(
        main,
        ["leaderboard", *args],
        env={entries.LEADERBOARD_ENV: str(root)},
        catch_exceptions=False,
    )


def submit_cli(
    root: Path, result: Path, name: str = "random (example)", *extra: str, rerun: bool = False
):
    """`leaderboard submit`, by default without its re-run (`--no-rerun`): the tests of the
    re-run at submission pass `rerun=True`."""
    flags = () if rerun else ("--no-rerun",)
    return run(
        root,
        "submit",
        str(result),
        "--name",
        name,
        "--description",
        "uniform random",
        *flags,
        *extra,
    )


def stand_in_rerun(entry: dict[str, Any], salt: str = "2026-01-01T00:00:00.000000Z") -> Any:
    """What a re-run leaves for `ledger.record_rerun` (`rerun.RerunResult`), without running
    one: the entry's own record as the re-run's, on the seed of `salt`, its claim reproduced.
    For tests of the ledger's bookkeeping; a line so written was not made by `verify`."""
    from types import SimpleNamespace

    from aht_bench.leaderboard import rerun

    record = copy.deepcopy(entries.record_of(entry))
    seed = rerun.rerun_seed(entry["payload_sha256"], salt)
    record["payload"]["protocol"]["seed"] = seed
    return SimpleNamespace(
        episodes=record["payload"]["protocol"]["episodes"], salt=salt, seed=seed, record=record,
        scores=record["payload"]["aggregates"], wall_seconds=0.0,
        claim=rerun.Claim("statistical", True, "stand-in"),
    )  # fmt: skip
