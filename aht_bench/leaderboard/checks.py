"""The checks every leaderboard entry passes, at `submit` and in `verify` (and so in CI).

    report = check_entry(entry)          # Report(problems, passed, notes)
    report.ok                            # no problems

In order, each a `Problem` whose `kind` names it and whose message names the fix:

1. `schema`: the record has every field `aht-bench evaluate` writes, of the right type, and
   the `leaderboard` block is well formed; a multi-seed record (`protocol.runs` "seeds") has
   its per-seed fields (`agent.files`, `members[].returns_per_seed` and `normalized_per_seed`,
   the block's `agent_paths`), one per seed, and no agent file twice. Nothing else runs on a
   record that fails it.
2. `heldout_version`: the teammate set is a heldout version shipped in heldout/<task_id>/
   (development sets are refused); `heldout_integrity`: the shipped set passes its own sha256
   check; `heldout_hash`: the record's manifest sha256 is the shipped manifest's;
   `heldout_set`: the set id, members, their bounds and the seatings are the shipped ones.
3. `score`: every score the record states is recomputed from its per-episode returns and the
   bounds, as the evaluator computes them: per-member means and normalised scores (and each
   seed's score in a multi-seed record), then the aggregates with their bootstrap CIs (same
   resamples and seed; over seeds in a multi-seed record), to 1e-9 relative.
4. `agent_hash`: each of the entry's agent files that is in the repository has the record's
   sha256 (one file, or every seed's); `agent_bundle`: where the record names the agent's
   bundle (`agent.bundle`, every file its sandbox shows it: `policies.bundle`), the bundle in
   the repository has its sha256, so a weight or helper file beside the agent cannot change
   under an entry. Records from before bundles pin the agent file only (a note says so); the
   verifier's re-run pins the bundle it ran in its ledger line (`ledger`).
5. `payload_hash`: `payload_sha256` is the hash of the payload (anything else edited).

The checks after the schema all run, so one report lists every problem.

May import numpy, rliable, the standard library, aht_bench.evaluation (record, scores, sets),
aht_bench.policies (bundle, sandbox) and aht_bench.leaderboard (entries, schema).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.evaluation import scores
from aht_bench.evaluation.record import (
    agent_files,
    is_multi_seed,
    payload_sha256,
    returns_of,
)
from aht_bench.leaderboard.entries import (
    BLOCK,
    entry_agent_paths,
    repo_root,
)
from aht_bench.leaderboard.schema import REEVALUATE, schema_errors, sha256_error

TOLERANCE = 1e-9  # relative: recomputed scores agree with the record to this


@dataclasses.dataclass(frozen=True)
class Problem:
    kind: str  # schema, heldout_version, heldout_integrity, heldout_hash, heldout_set, score, ...
    message: str  # what is wrong and how to fix it


@dataclasses.dataclass
class Report:
    problems: list[Problem] = dataclasses.field(default_factory=list)
    passed: list[str] = dataclasses.field(default_factory=list)  # checks that passed, for output
    notes: list[str] = dataclasses.field(default_factory=list)  # e.g. agent not in the repo

    @property
    def ok(self) -> bool:
        return not self.problems

    def kinds(self) -> list[str]:
        return [p.kind for p in self.problems]


def check_entry(
    entry: dict[str, Any], *, repo: Path | None = None, heldout: Path | None = None
) -> Report:
    """Every check of the module docstring on `entry` (a dict as read from JSON)."""
    from aht_bench.evaluation.sets import heldout_root

    report = Report()
    schema = schema_errors(entry)
    if schema:
        for what, fix in schema:
            about = (
                "the entry's leaderboard block is malformed"
                if what.startswith(BLOCK)
                else "the record is not as `aht-bench evaluate` writes it"
            )
            report.problems.append(Problem("schema", f"{about}: {what}; {fix}"))
        return report
    report.passed.append("schema")
    payload = entry["payload"]
    before = len(report.problems)
    report.problems += _heldout_problems(payload, heldout or heldout_root())
    if len(report.problems) == before:
        ts = payload["teammate_set"]
        report.passed.append(
            f"heldout set {ts['id']}: a shipped version, manifest sha256 and members match"
        )
    score = _score_problems(payload)
    report.problems += score
    if not score:
        report.passed.append("scores recomputed from the per-episode returns")
    _check_isolation(payload, report)
    _check_agent(entry, repo or repo_root(), report)
    if payload_sha256(payload) != entry["payload_sha256"]:
        report.problems.append(
            Problem(
                "payload_hash",
                "payload_sha256 does not match the payload: the record was edited after "
                f"evaluation; {REEVALUATE}",
            )
        )
    else:
        report.passed.append("payload sha256")
    return report


# --- heldout set -----------------------------------------------------------------------------


def shipped_versions(task_id: str, heldout: Path) -> list[str]:
    """The published heldout versions of `task_id` in `heldout`: in the package's own heldout/
    the versions pinned in the package (`aht_bench.evaluation.pins`); in another folder (one
    the operator points $AHT_BENCH_HELDOUT at) every set folder but `dev`, whose pins, if any,
    are checked all the same. Development sets are never shipped."""
    from aht_bench.evaluation.pins import PINNED, pin_key
    from aht_bench.evaluation.sets import MANIFEST, package_heldout_root

    folder = heldout / task_id
    if not folder.is_dir():
        return []
    own = heldout.resolve() == package_heldout_root().resolve()
    return sorted(
        p.name
        for p in folder.iterdir()
        if (p / MANIFEST).is_file()
        and p.name != "dev"
        and (pin_key(task_id, p.name) in PINNED or not own)
    )


def _redo_version(version: str, shipped: list[str]) -> str:
    """The set to name in a fix: the record's own version when it is shipped, else the newest
    shipped `vN` (the evaluator's default), else the first shipped one."""
    from aht_bench.evaluation.sets import numbered

    if version in shipped:
        return version
    newest = numbered(shipped)[-1:]
    return newest[0] if newest else shipped[0] if shipped else "v1"


def _heldout_problems(payload: dict[str, Any], heldout: Path) -> list[Problem]:
    from aht_bench.evaluation.sets import (
        TeammateSetError,
        check_pin,
        check_published_files,
        heldout_root,
        read_manifest,
    )

    task_id = payload["task_id"]
    ts = payload["teammate_set"]
    version = ts["version"]
    shipped = shipped_versions(task_id, heldout)
    redo = (
        f"`aht-bench evaluate AGENT --task {task_id} --teammates {_redo_version(version, shipped)}`"
    )
    if version == "dev" or ts["development_set"]:
        return [
            Problem(
                "heldout_version",
                f"the record was made against the development set {ts['id']}, and the "
                "leaderboard takes published heldout sets only "
                f"({', '.join(shipped) or 'none shipped for ' + task_id}); evaluate with {redo}",
            )
        ]
    if version not in shipped:
        where = (
            f"shipped for {task_id}: {', '.join(shipped)}"
            if shipped
            else f"no heldout set is shipped for task {task_id!r} in {heldout}"
        )
        return [
            Problem(
                "heldout_version",
                f"unknown heldout version {version!r} (teammate_set.version; {where}); "
                f"evaluate against a shipped version: {redo}",
            )
        ]
    folder = heldout / task_id / version
    try:
        manifest, digest = read_manifest(folder)
        # a pinned set: its lock must match the pin, and every file its lock
        if heldout.resolve() == heldout_root().resolve() and check_pin(task_id, folder, digest):
            check_published_files(task_id, folder)
    except (TeammateSetError, OSError) as e:
        return [
            Problem(
                "heldout_integrity",
                f"the shipped heldout set {task_id}/{version} fails its own check ({e}); "
                "restore heldout/ from the repository (`aht-bench heldout verify` lists what "
                "changed)",
            )
        ]
    if ts["manifest_sha256"] != digest:
        return [
            Problem(
                "heldout_hash",
                f"teammate_set.manifest_sha256 {ts['manifest_sha256'][:16]}... does not match "
                f"the shipped heldout set {task_id}/{version} ({digest[:16]}...): the record "
                f"was made against another copy of the set, or edited; evaluate against the "
                f"shipped set: {redo}",
            )
        ]
    return _set_problems(payload, manifest, f"{task_id}/{version}", redo)


def _set_problems(
    payload: dict[str, Any], manifest: dict[str, Any], name: str, redo: str
) -> list[Problem]:
    """The record's set id, members, bounds and seatings against the shipped manifest."""
    found = []
    ts = payload["teammate_set"]
    if manifest.get("set_id") is not None and ts["id"] != manifest["set_id"]:
        found.append(
            f"teammate_set.id is {ts['id']!r}, the shipped set's is {manifest['set_id']!r}"
        )
    shipped = [(m.get("name"), m.get("bounds", {})) for m in manifest.get("members", [])]
    members = payload["members"]
    if [m["name"] for m in members] != [n for n, _ in shipped]:
        found.append(
            f"the members are {[m['name'] for m in members]}, the shipped set's "
            f"{[n for n, _ in shipped]}"
        )
    else:
        for m, (_, bounds) in zip(members, shipped, strict=True):
            if (m["lower"], m["upper"]) != (bounds.get("lower"), bounds.get("upper")):
                found.append(
                    f"member {m['name']} has bounds [{m['lower']}, {m['upper']}], the shipped "
                    f"set [{bounds.get('lower')}, {bounds.get('upper')}]"
                )
    if "seatings" in manifest and payload["protocol"]["seatings"] != manifest["seatings"]:
        found.append(
            f"protocol.seatings are {payload['protocol']['seatings']}, the shipped set's "
            f"{manifest['seatings']}"
        )
    if not found:
        return []
    return [
        Problem(
            "heldout_set",
            f"the record does not match the shipped heldout set {name}: {'; '.join(found[:3])}; "
            f"evaluate against the shipped set: {redo}",
        )
    ]


# --- scores ----------------------------------------------------------------------------------

_ESTIMATES: dict[tuple[Any, ...], dict[str, Any]] = {}  # bootstrap results by input, this process


def cached_estimates(matrix: np.ndarray, reps: int, seed: int, confidence: float) -> dict[str, Any]:
    """`scores.interval_estimates`, remembered: the bootstrap takes seconds, and `submit`,
    `verify` and the tests check the same returns more than once."""
    key = (hashlib.sha256(matrix.tobytes()).hexdigest(), matrix.shape, reps, seed, confidence)
    if key not in _ESTIMATES:
        if len(_ESTIMATES) >= 32:
            _ESTIMATES.pop(next(iter(_ESTIMATES)))
        _ESTIMATES[key] = scores.interval_estimates(
            matrix, reps=reps, seed=seed, confidence=confidence
        )
    return _ESTIMATES[key]


def _close(stated: float, computed: float) -> bool:
    return abs(stated - computed) <= TOLERANCE * max(1.0, abs(stated), abs(computed))


def _score_problems(payload: dict[str, Any]) -> list[Problem]:
    """Recompute what the evaluator derives from the returns (`evaluate.build_record`, and
    `build_seeds_record` for a multi-seed record)."""
    members = payload["members"]
    returns = returns_of(payload)  # (files, members, seatings, episodes)
    lower = np.array([m["lower"] for m in members], np.float64)
    upper = np.array([m["upper"] for m in members], np.float64)
    try:
        normalized = np.stack([scores.normalize(r, lower, upper) for r in returns])
    except ValueError as e:
        return [Problem("score", f"the scores cannot be recomputed: {e}; {REEVALUATE}")]
    stated: list[tuple[str, float, float]] = []  # (field, in the record, recomputed)
    if is_multi_seed(payload):
        matrix = scores.seed_score_matrix(normalized)
        for i, m in enumerate(members):  # first, so that a changed return names its seed
            for f, value in enumerate(m["normalized_per_seed"]):
                where = f"payload.members[{i}].normalized_per_seed[{f}]"
                stated.append((where, value, float(matrix[f, i])))
    else:
        matrix = scores.score_matrix(normalized[0])
    for i, m in enumerate(members):
        where = f"payload.members[{i}]"
        stated.append((f"{where}.mean_return", m["mean_return"], float(np.mean(returns[:, i]))))
        for s, value in enumerate(m["mean_return_per_seating"]):
            computed = float(np.mean(returns[:, i, s]))
            stated.append((f"{where}.mean_return_per_seating[{s}]", value, computed))
        stated.append(
            (
                f"{where}.max_normalized_episode",
                m["max_normalized_episode"],
                float(np.max(normalized[:, i])),
            )
        )
    points = {name: _aggregate_point(name, matrix) for name in scores.AGGREGATES}
    for name, value in points.items():
        stated.append(
            (f"payload.aggregates.{name}.value", payload["aggregates"][name]["value"], value)
        )
    for i, m in enumerate(members):
        value = float(np.mean(matrix[:, i]))
        stated.append((f"payload.members[{i}].normalized.value", m["normalized"]["value"], value))
    wrong = [(f, a, b) for f, a, b in stated if not _close(a, b)]
    if not wrong:  # the points agree: check the intervals too (the bootstrap costs seconds)
        boot = payload["protocol"]["bootstrap"]
        est = cached_estimates(matrix, boot["reps"], boot["seed"], boot["confidence"])
        pairs = [
            (f"payload.aggregates.{n}", payload["aggregates"][n], est["aggregates"][n])
            for n in scores.AGGREGATES
        ]
        pairs += [
            (f"payload.members[{i}].normalized", m["normalized"], est["members"][i])
            for i, m in enumerate(members)
        ]
        for where, record, computed in pairs:
            for j in range(2):
                if not _close(record["ci"][j], computed["ci"][j]):
                    wrong.append((f"{where}.ci[{j}]", record["ci"][j], computed["ci"][j]))
            if not _close(record["value"], computed["value"]):
                wrong.append((f"{where}.value", record["value"], computed["value"]))
    if not wrong:
        return []
    field, a, b = wrong[0]
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    return [
        Problem(
            "score",
            f"changed score: {field} is {a!r} but the record's per-episode returns give "
            f"{b!r}{more}: the scores were changed after evaluation; {REEVALUATE}",
        )
    ]


def _aggregate_point(name: str, matrix: np.ndarray) -> float:
    """The point estimate of aggregate `name` of a (runs, members) score matrix."""
    from rliable import metrics

    return float(
        {
            "mean": metrics.aggregate_mean,
            "iqm": metrics.aggregate_iqm,
            "median": metrics.aggregate_median,
            "worst_case": scores.worst_case,
        }[name](matrix)
    )


# --- agent file ------------------------------------------------------------------------------

UNSANDBOXED = {
    "in-process": "in the evaluator's own process (--in-process)",
    "process": "in a separate process without the sandbox (--no-sandbox)",
}


def _check_isolation(payload: dict[str, Any], report: Report) -> None:
    """A record made with the agent's code outside the sandbox could be the agent's own
    forgery: refused. Records from before the sandbox carry no `isolation`; only a re-run
    can vouch for them."""
    isolation = payload["agent"].get("isolation")
    if isolation in UNSANDBOXED:
        report.problems.append(
            Problem(
                "isolation",
                f"the record was made with the agent's code running {UNSANDBOXED[isolation]}, "
                "where an agent file can rewrite its own score; evaluate it again without that "
                "flag (the sandbox is the default) and submit that record",
            )
        )
    elif isolation is not None:
        report.passed.append(f"agent code ran in: {isolation}")


def _check_agent(entry: dict[str, Any], repo: Path, report: Report) -> None:
    files = agent_files(entry["payload"])
    if len(files) == 1:
        _check_agent_file(entry[BLOCK]["agent_path"], files[0], None, repo, report)
        return
    for i, (rel, file) in enumerate(zip(entry_agent_paths(entry), files, strict=True)):
        _check_agent_file(rel, file, i, repo, report)


def _check_agent_file(
    rel: str | None, file: dict[str, Any], seed: int | None, repo: Path, report: Report
) -> None:
    """The hash check of one agent file: the only one (`seed` None) or seed `seed`'s."""
    who = "agent file" if seed is None else f"seed {seed}'s agent file"
    the_who = "the agent file" if seed is None else who
    field = "payload.agent" if seed is None else f"payload.agent.files[{seed}]"
    recorded = file["sha256"]
    if rel is None:
        report.notes.append(
            f"{the_who} {file['file']} is not in this repository: schema, score and hash "
            "checks only (no agent hash, no re-run)"
        )
        return
    path = repo / rel
    if not path.is_file():
        report.notes.append(
            f"{the_who} {rel} named by the entry is not in this repository: schema, score "
            "and hash checks only (no agent hash, no re-run)"
        )
        return
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != recorded:
        report.problems.append(
            Problem(
                "agent_hash",
                f"agent hash mismatch: {field}.sha256 {recorded[:16]}... is not the sha256 "
                f"of {rel} in the repository ({digest[:16]}...): the record was made with "
                f"another version of the file, or edited; evaluate {rel} as it is now and "
                "submit that record (with --replace to update an entry)",
            )
        )
        return
    report.passed.append(f"{who} {rel}: sha256 matches")
    _check_bundle(rel, file, field, path, report)


def _check_bundle(rel: str, file: dict[str, Any], field: str, path: Path, report: Report) -> None:
    """The bundle check of one agent file whose own hash matched."""
    from aht_bench.policies.bundle import BundleError
    from aht_bench.policies.sandbox import shown_bundle

    recorded = file.get("bundle")
    if not isinstance(recorded, dict) or sha256_error(recorded.get("sha256")) is not None:
        report.notes.append(
            f"the record of {rel} pins the agent file only (made before bundles): the files "
            "beside it are pinned by the verifier's re-run (verified.json)"
        )
        return
    try:
        bundle = shown_bundle(path)
    except BundleError as e:
        report.problems.append(Problem("agent_bundle", str(e)))
        return
    if bundle.sha256() != recorded["sha256"]:
        report.problems.append(
            Problem(
                "agent_bundle",
                f"agent bundle mismatch: {field}.bundle.sha256 {recorded['sha256'][:16]}... is "
                f"not the sha256 of the {len(bundle.files)} files the sandbox shows {rel} "
                f"({bundle.how}; {bundle.sha256()[:16]}...): a file beside the agent was "
                f"added, removed or changed since the record was made; evaluate {rel} with "
                "its files as they are now and submit that record (with --replace)",
            )
        )
        return
    report.passed.append(f"bundle of {rel} ({len(bundle.files)} files): sha256 matches")
