"""Teammates by name: the strings `aht-bench check-agent --teammate`, `EgoEnv(teammate=...)`,
`gymnasium.make(id, teammate=...)` and `gymnasium.make_vec(id, teammate=...)` accept.

    policy, params = resolve_teammate("lbf-v1", "lexi")                  # a heuristic
    policy, params = resolve_teammate("lbf-v1", "heldout:v2:ippo_mlp_0")  # a heldout member
    policy, params = resolve_teammate("lbf-v1", "random")                # (None, None)

A name is one of:

- ``random``: uniform random actions, returned as ``(None, None)`` (each shell draws them);
- a heuristic of the task, as `aht_bench.policies.heuristics.make_heuristic` names them
  (LBF: ``lexi`` or ``seq_agent_lexi``, ...; Overcooked: ``onion_agent_0.1``, ``static``, ...);
- ``heldout:<version>:<member>``: member ``<member>`` of the task's teammate set ``<version>``
  (``heldout/<task_id>/<version>/``), loaded and verified by `load_set` like every set. A member
  of a divided Overcooked layout comes back as the set builds it (a `SeatPair` with both
  sides' params).

A name is resolved once, at the boundary, into a ``(policy, params)`` pair; a bad name is a
`ValueError` that names the problem and lists the choices. A set that fails its integrity check
raises `TeammateSetIntegrityError` as `load_set` does.

Where a shell draws a teammate per episode (`aht_bench.adapters.gymnax`), `resolve_teammates`
takes a name for several: every name above (one teammate), a whole set (``heldout:<version>``,
or a set's version alone such as ``dev``, or a set folder), or names joined by commas
(``lexi,col`` or ``onion_agent_0.3,heldout:v2:ippo_mlp_0``), each resolved as above.

May import the standard library, aht_bench.envs, aht_bench.policies and aht_bench.evaluation.sets.
"""

from __future__ import annotations

import difflib
from typing import Any

from aht_bench.envs import Task
from aht_bench.evaluation.sets import available_sets, load_set, newest_version

RANDOM = "random"
HELDOUT_PREFIX = "heldout:"


def heldout_hint(task_id: str) -> str:
    """How to name a heldout member of `task_id`, with the sets it has (for error messages)."""
    versions = available_sets(task_id)
    if not versions:
        return f"heldout:<version>:<member> (no teammate sets are shipped for {task_id})"
    newest = newest_version(task_id) or versions[-1]
    return (
        f"heldout:<version>:<member> (sets for {task_id}: {', '.join(versions)}; "
        f"`aht-bench heldout show --task {task_id} --version {newest}` lists the members)"
    )


def resolve_teammate(task: str | Task, name: str) -> tuple[Any, Any]:
    """``(policy, params)`` of the teammate `name` for `task` (a `Task`, or an id or alias);
    see the module docstring. ``(None, None)`` for ``random``."""
    from aht_bench import envs

    task = envs.task(task)
    task_id = task.id
    if not isinstance(name, str):
        raise TypeError(f"a teammate name must be a str, got {name!r}")
    if name == RANDOM:
        return None, None
    if name.startswith(HELDOUT_PREFIX):
        return _heldout_member(task, name)
    from aht_bench.policies.heuristics import make_heuristic

    try:
        return make_heuristic(task, name), None
    except ValueError as e:
        raise ValueError(
            f"{str(e).rstrip('.')}; or {RANDOM} (uniform actions), or {heldout_hint(task_id)}"
        ) from None


def _heldout_member(task: Task, name: str) -> tuple[Any, Any]:
    task_id = task.id
    version, _, member = name.removeprefix(HELDOUT_PREFIX).partition(":")
    if not version or not member:
        raise ValueError(
            f"teammate {name!r} is not of the form {heldout_hint(task_id)}, e.g. "
            "'heldout:v2:ippo_mlp_0'"
        )
    versions = available_sets(task_id)
    if version not in versions:
        have = f"its sets are {', '.join(versions)}" if versions else "it has no sets"
        raise ValueError(
            f"teammate {name!r}: no teammate set {version!r} for {task_id}; {have} "
            "(under heldout/<task_id>/)"
        )
    mates = load_set(task, version).teammates
    if member not in mates.names:
        close = difflib.get_close_matches(member, mates.names, n=1, cutoff=0.6)
        did_you_mean = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"teammate {name!r}: the set {version} of {task_id} has no member {member!r}."
            f"{did_you_mean} Its members: {', '.join(mates.names)}"
        )
    i = mates.index(member)
    return mates.policies[i], mates.params[i]


def resolve_teammates(task: str | Task, name: str) -> list[tuple[str, Any, Any]]:
    """``(member name, policy, params)`` of every teammate `name` means for `task`, in order
    (see the module docstring): a set's members, the comma-separated names one by one, or one
    teammate; ``random`` is ``("random", None, None)``."""
    from aht_bench import envs
    from aht_bench.evaluation.sets import TeammateSetError

    task = envs.task(task)
    if not isinstance(name, str):
        raise TypeError(f"a teammate name must be a str, got {name!r}")
    parts = [p.strip() for p in name.split(",")]
    if len(parts) > 1:
        if not all(parts):
            raise ValueError(f"teammates {name!r}: an empty name between commas; drop it")
        out = [m for part in parts for m in resolve_teammates(task, part)]
        names = [m[0] for m in out]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"teammates {name!r} name {', '.join(repeated)} more than once")
        return out
    version = _set_version(task, name)
    if version is not None:
        try:
            mates = load_set(task, version).teammates
        except TeammateSetError as e:
            raise ValueError(f"teammates {name!r}: {e}") from None
        return list(zip(mates.names, mates.policies, mates.params, strict=True))
    policy, params = resolve_teammate(task, name)
    return [(name, policy, params)]


def _set_version(task: Task, name: str) -> str | None:
    """The set (a version or a folder) that `name` names for `task`, None for one teammate."""
    import os

    if name.startswith(HELDOUT_PREFIX) and ":" not in name.removeprefix(HELDOUT_PREFIX):
        version = name.removeprefix(HELDOUT_PREFIX)
        versions = available_sets(task.id)
        if version not in versions:
            have = f"its sets are {', '.join(versions)}" if versions else "it has no sets"
            raise ValueError(
                f"teammates {name!r}: no teammate set {version!r} for {task.id}; {have} "
                "(under heldout/<task_id>/)"
            )
        return version
    if name in available_sets(task.id) or os.sep in name:
        return name
    if name == "dev":  # a development set the task does not have yet: say so, not "no heuristic"
        raise ValueError(
            f"teammates 'dev': {task.id} has no development set (heldout/{task.id}/dev/); its "
            f"sets are {', '.join(available_sets(task.id)) or 'none'}; or name teammates "
            f"directly: a heuristic, comma-separated heuristics, or {heldout_hint(task.id)}"
        )
    return None
