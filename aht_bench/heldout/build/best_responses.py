"""Step 2, the best responses: a PPO best response per candidate and seat, trained for a fixed
budget (v1) or in chunks until its return stops rising (`plateaued`, v2), cached per chunk.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from aht_bench.heldout.build.candidates import _cached_policy, _shaping_provenance, _shaping_tag
from aht_bench.heldout.build.core import Candidate, Log, _progress
from aht_bench.heldout.recipes import BR_SEED, Recipe
from aht_bench.policies.seated import SeatPair
from aht_bench.policies.teammate_set import TeammateSet


def _partner_digest(cand: Candidate) -> str:
    """sha256 of a candidate's weight files (of its name for a heuristic): what a cached best
    response was trained against."""
    digest = hashlib.sha256(cand.name.encode())
    for _, path in sorted(cand.files, key=lambda f: str(f[1])):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _cached_br(path: Path, cand: Candidate, partner: str, log: Log) -> tuple[Any, Any] | None:
    """The cached best response at `path` if it was trained against this very candidate: its
    card's `partner_sha256` is the candidate's (files cached before that field existed: the
    best response is newer than the candidate's weight files). A best response to an older
    candidate of the same name (a changed recipe) is retrained."""
    from aht_bench.policies.io import read_card

    cached = _cached_policy(path)
    if cached is None:
        return None
    recorded = read_card(path)["provenance"].get("partner_sha256")
    if recorded is None:
        newer = all(path.stat().st_mtime > f.stat().st_mtime for _, f in cand.files)
        if newer:
            return cached
    elif recorded == partner:
        return cached
    log(f"  the cached best response {path.name} was trained against another {cand.name}")
    return None


def _br_file(rec: Recipe, c: int, name: str, seat: int, work: Path) -> tuple[int, Path]:
    """Seed and cache file of the best response to candidate number `c` (`name`) in `seat`."""
    seed = rec.seed_base + BR_SEED + 10 * c + seat
    tag = ("" if rec.br_preset == "quick" else f"-{rec.br_preset}") + _shaping_tag(rec.shaping)
    if rec.br_plateau is not None:
        plateau = rec.br_plateau
        budget = f"c{rec.br_timesteps}-max{plateau.max_timesteps}-tol{plateau.tolerance:g}"
        if plateau.min_chunks != 2:
            budget += f"-min{plateau.min_chunks}"
    else:
        budget = f"t{rec.br_timesteps}"
    return seed, work / f"br-{name}-seat{seat}-s{seed}-{budget}{tag}.safetensors"


def _best_responses(
    rec: Recipe,
    env: Any,
    candidates: list[Candidate],
    work: Path,
    log: Log,
    only: int | None = None,
) -> list[tuple[Any, Any, list[dict[str, Any]]]]:
    """Per candidate: (partner policy, params, one provenance dict per seat with its file);
    `only`: that candidate's best responses alone (`train_unit`)."""
    from aht_bench.algorithms import br
    from aht_bench.policies.io import read_card, save_policy
    from aht_bench.training import presets
    from aht_bench.training.config import BRConfig

    out = []
    for c, cand in enumerate(candidates):
        if only is not None and c != only:
            continue
        trained = []
        for seat in rec.br_seats:
            seed, path = _br_file(rec, c, cand.name, seat, work)
            partner = _partner_digest(cand)
            cached = _cached_br(path, cand, partner, log)
            if cached is None and rec.br_plateau is not None:
                _train_br_until_plateau(rec, cand, seat, seed, partner, path, log)
                cached = _cached_policy(path)
                assert cached is not None
            if cached is None:
                config = presets.get(
                    "br",
                    rec.br_preset,
                    rec.task_id,
                    total_timesteps=rec.br_timesteps,
                    learner_seat=seat,
                    shaping=rec.shaping,
                )
                assert isinstance(config, BRConfig)
                log(
                    f"training a best response to {cand.name} in seat {seat} "
                    f"({rec.br_timesteps:,} steps, seed {seed})"
                )
                start = time.perf_counter()
                # one name for every teammate: same-architecture members share a compile
                mates = TeammateSet(["partner"], [(cand.policy, cand.params)])
                tick, close = _progress(config.num_updates, f"br {cand.name} seat {seat}")
                try:
                    result = br.train(
                        jax.random.PRNGKey(seed), config, on_iteration=tick, inputs=(mates,)
                    )
                finally:
                    close()
                params = jax.tree.map(lambda x: np.asarray(x[0]), br.learner_params(result.state))
                curve = np.asarray(result.metrics["episode_return"][0], np.float64)
                tail = curve[-max(1, len(curve) // 10) :]
                prov = {
                    "algorithm": "br (aht_bench.algorithms.br, PPO)",
                    "preset": rec.br_preset,
                    "total_timesteps": rec.br_timesteps,
                    "learner_seat": seat,
                    "seed": seed,
                    "key": f"jax.random.PRNGKey({seed})",
                    "best_response_to": cand.name,
                    "partner_sha256": partner,
                    "train_seconds": round(time.perf_counter() - start, 1),
                    "final_train_return": float(np.nanmean(tail))
                    if np.any(np.isfinite(tail))
                    else None,
                }
                prov.update(_shaping_provenance(rec))
                save_policy(
                    path, br.network(config), params, {"task_id": rec.task_id, "provenance": prov}
                )
                log(
                    f"  done in {prov['train_seconds']:.0f}s; "
                    f"return at the end {prov['final_train_return']}"
                )
                cached = _cached_policy(path)
                assert cached is not None
            prov = dict(read_card(path)["provenance"])
            prov["cache_file"] = str(path)
            trained.append((cached, prov))
        if len(trained) == 1:
            (policy, params), _ = trained[0]
        else:
            policy = SeatPair.for_env(env, (trained[0][0][0], trained[1][0][0]))
            params = (trained[0][0][1], trained[1][0][1])
        out.append((policy, params, [p for _, p in trained]))
    return out


def plateaued(curve: list[float], tolerance: float, min_chunks: int = 2) -> bool:
    """Whether a learning curve has stopped rising (Bounds v2's stop rule).

    `curve[k]`: the mean training return over chunk k. Flat once at least `max(2, min_chunks)`
    chunks are done and the last chunk's mean rose by less than `tolerance` times the one
    before: `curve[-1] - curve[-2] < tolerance * |curve[-2]|`. A curve still at 0 (or with a
    chunk in which no episode ended, NaN) is not flat: training goes on to the budget."""
    if len(curve) < max(2, min_chunks):
        return False
    last, before = float(curve[-1]), float(curve[-2])
    if not (np.isfinite(last) and np.isfinite(before)):
        return False
    return last - before < tolerance * abs(before)


def _chunk_mean(returns: np.ndarray) -> float:
    return float(np.nanmean(returns)) if np.any(np.isfinite(returns)) else float("nan")


def _train_br_until_plateau(
    rec: Recipe, cand: Candidate, seat: int, seed: int, partner: str, path: Path, log: Log
) -> None:
    """Train the best response to `cand` in `seat` in chunks of `rec.br_timesteps` env steps
    until `plateaued` or `rec.br_plateau.max_timesteps`, and save it to `path` with its learning
    curve. One run: the train state carries over between chunks (the learning rate anneals over
    the maximum budget) and is saved after every chunk next to `path`, so a killed build resumes
    from the last finished chunk, bit for bit."""
    from aht_bench.algorithms import br
    from aht_bench.policies.io import save_policy
    from aht_bench.training import checkpoint, presets
    from aht_bench.training.config import BRConfig

    plateau = rec.br_plateau
    assert plateau is not None
    probe = presets.get("br", rec.br_preset, rec.task_id, learner_seat=seat, shaping=rec.shaping)
    assert isinstance(probe, BRConfig)
    chunk_updates = max(1, rec.br_timesteps // probe.batch_size)
    max_chunks = max(1, plateau.max_timesteps // rec.br_timesteps)
    config = presets.get(
        "br",
        rec.br_preset,
        rec.task_id,
        total_timesteps=max_chunks * chunk_updates * probe.batch_size,
        learner_seat=seat,
        shaping=rec.shaping,
    )
    assert isinstance(config, BRConfig) and config.num_updates == max_chunks * chunk_updates
    mates = TeammateSet(["partner"], [(cand.policy, cand.params)])
    state = br.init_seeds(jax.random.PRNGKey(seed), config, 1, (mates,))
    if chunk_updates % config.updates_per_call:
        raise ValueError(
            f"a chunk of {chunk_updates} updates is not a multiple of updates_per_call = "
            f"{config.updates_per_call}: set br_timesteps to a multiple of one call's env steps"
        )
    state_path = Path(str(path).removesuffix(".safetensors") + ".state.safetensors")
    state, curve, seconds = _resume_chunks(state_path, state, partner, cand.name, log)
    while len(curve) < max_chunks and not plateaued(curve, plateau.tolerance, plateau.min_chunks):
        k = len(curve) + 1
        log(
            f"training a best response to {cand.name} in seat {seat}: chunk {k} of at most "
            f"{max_chunks} ({chunk_updates * config.batch_size:,} env steps, seed {seed})"
        )
        start = time.perf_counter()
        tick, close = _progress(chunk_updates, f"br {cand.name} seat {seat} chunk {k}")
        offset = (k - 1) * chunk_updates  # the run counts its updates, not the chunk's
        try:
            result = br.run(
                state,
                config,
                chunk_updates // config.updates_per_call,
                on_iteration=lambda done, *_, tick=tick, offset=offset: tick(done - offset),
            )
        finally:
            close()
        seconds += time.perf_counter() - start
        state = result.state
        curve.append(_chunk_mean(np.asarray(result.metrics["episode_return"][0], np.float64)))
        log(f"  chunk {k}: mean return {curve[-1]:.4g}")
        checkpoint.save_state(
            state_path,
            state,
            {"curve": curve, "partner_sha256": partner, "train_seconds": round(seconds, 1)},
        )
    flat = plateaued(curve, plateau.tolerance, plateau.min_chunks)
    params = jax.tree.map(lambda x: np.asarray(x[0]), br.learner_params(state))
    prov = {
        "algorithm": "br (aht_bench.algorithms.br, PPO), trained until its return stopped rising",
        "preset": rec.br_preset,
        "total_timesteps": len(curve) * chunk_updates * config.batch_size,
        "learner_seat": seat,
        "seed": seed,
        "key": f"jax.random.PRNGKey({seed})",
        "best_response_to": cand.name,
        "partner_sha256": partner,
        "train_seconds": round(seconds, 1),
    } | _curve_provenance(
        curve,
        chunk_updates * config.batch_size,
        config.num_updates * config.batch_size,
        plateau.tolerance,
        flat,
    )
    prov.update(_shaping_provenance(rec))
    save_policy(path, br.network(config), params, {"task_id": rec.task_id, "provenance": prov})
    log(
        f"  best response to {cand.name} seat {seat}: {len(curve)} chunks, {prov['stopped']}; "
        f"curve {[round(c, 4) for c in curve]}"
    )
    state_path.unlink(missing_ok=True)
    checkpoint.card_path(state_path).unlink(missing_ok=True)


def _resume_chunks(
    state_path: Path, state: Any, partner: str, name: str, log: Log
) -> tuple[Any, list[float], float]:
    """(train state, learning curve, seconds) saved after the last finished chunk of a best
    response to the partner whose sha256 is `partner`; the fresh `state`, [] and 0 if none."""
    from aht_bench.training import checkpoint

    if not state_path.is_file():
        return state, [], 0.0
    try:
        loaded, meta = checkpoint.load_state(state_path, state)
    except checkpoint.CheckpointError as e:
        log(f"  ignoring the unreadable chunk state {state_path.name}: {e}")
        return state, [], 0.0
    if meta.get("partner_sha256") != partner:
        return state, [], 0.0
    curve = list(meta["curve"])
    log(f"  resuming the best response to {name} after chunk {len(curve)}")
    return loaded, curve, float(meta["train_seconds"])


def _curve_provenance(
    curve: list[float], chunk_timesteps: int, max_timesteps: int, tolerance: float, flat: bool
) -> dict[str, Any]:
    """A plateau-trained best response's card fields about its learning curve."""
    return {
        "final_train_return": curve[-1] if curve and np.isfinite(curve[-1]) else None,
        "chunk_timesteps": chunk_timesteps,
        "max_timesteps": max_timesteps,
        "plateau_tolerance": tolerance,
        "learning_curve": [round(c, 6) if np.isfinite(c) else None for c in curve],
        "learning_curve_note": "mean training return (base, the learner's stochastic policy) "
        "per chunk",
        "flat_at_end": flat,
        "stopped": "plateau" if flat else "maximum budget",
    }
