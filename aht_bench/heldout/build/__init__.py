"""Building a heldout set: candidates, best responses, cross-play, pruning, bounds, publishing.

    aht-bench heldout build --task cramped_room --version v1      # -> heldout/<task_id>/v1/
    build("cramped_room", "v1", out=Path("/tmp/rebuild"))          # a rebuild elsewhere

The steps (paper App. "Evaluation Teammates" and "Evaluation Return Normalization Procedure"):

1. **Candidates** from the recipe (`recipes.V1`): IPPO self-play teams, BRDiv confederates,
   heuristics. A learned candidate is one agent on seat-symmetric tasks (LBF and the undivided
   Overcooked layouts: the agent that trained in seat 1, the teammate seat when an ego takes
   seat 0; observations are egocentric and spawns symmetric, so it plays either seat). On the
   divided layouts (asymm_advantages, forced_coord) it is the self-play pair, played as a
   `SeatPair`: the IPPO team's agent of each side, or the BRDiv confederate on its side with its
   own best response on the other.
2. **Best responses**: a PPO best response per candidate and seat (`recipe.br_seats`); on
   divided layouts the two seats' best responses form one `SeatPair` partner. v1 trains each
   for `br_timesteps`; a recipe with `br_plateau` (v2) trains it in chunks until its return
   stops rising (`plateaued`), saving the train state after every chunk.
3. **Evaluation**: every partner (each candidate's best response, every candidate, the recipe's
   extra heuristics) plays every candidate in every seating (`evaluate.cross_play`).
4. **Pruning**: an IPPO team of a source with `tries` that ends its training with self-play
   return 0 is no candidate (the next seed is tried). A candidate is kept if it is competent
   (its best-response return is above zero and at least `min_competence` of the best
   candidate's) and adds diversity: its own best response beats the other kept candidates' best
   responses with it by at least `min_gap` of its best-response return. Candidates failing
   diversity are dropped one at a time, the least diverse first, recomputing the others'
   off-diagonal means after each drop. Every pruned candidate is recorded with its reason and
   numbers.
5. **Bounds**: lower 0; upper the best-response return, raised to the best return of any
   evaluated partner (who raised it and by how much is recorded). Bounds v2 (`upper_bound`):
   the partners include the recipe's example agent files, played by the evaluator, and the
   task's maximum return is one more candidate; every candidate value is recorded. An example
   agent's candidate value is the upper end of its per-member 95% CI exactly as `aht-bench
   evaluate` computes it on the published set (`_example_upper_returns`), so that no example
   agent can score above 1 even at the upper end of its CI (an example that sets a bound at its
   mean return would score 1.0 with a CI above 1).
6. **Publish**: `heldout/<task_id>/<version>/manifest.json` (+ `manifest.sha256`), the kept
   members' weights under `members/`, their best responses under `br/`; assembled in a temporary
   folder and renamed into place. A published version is never overwritten: building onto an
   existing folder is refused (rebuild elsewhere with `out=`).

Trained pieces are cached under the work folder (default `~/.cache/aht-bench/heldout-build/`,
`AHT_BENCH_BUILD_DIR` or `work=`), keyed by name, seed and budget, so an interrupted build
resumes where it stopped. PPO, BRDiv and evaluation are seeded; on the same CPU build of the
same libraries a rebuild reproduces the same weights bit for bit.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

from aht_bench.heldout.build.best_responses import (
    plateaued,
)
from aht_bench.heldout.build.bounds import (
    upper_bound,
)
from aht_bench.heldout.build.core import (
    BUILD_DIR_ENV,
    Candidate,
    HeldoutBuildError,
    Log,
    default_work_dir,
    recipe,
)
from aht_bench.heldout.build.publish import (
    BOUNDS_V2,
    build,
    manifest_head,
)
from aht_bench.heldout.build.selection import (
    select,
)
from aht_bench.heldout.build.unit_runs import (
    train_unit,
    units,
)

__all__ = [
    "BOUNDS_V2",
    "BUILD_DIR_ENV",
    "Candidate",
    "HeldoutBuildError",
    "Log",
    "build",
    "default_work_dir",
    "manifest_head",
    "plateaued",
    "recipe",
    "select",
    "train_unit",
    "units",
    "upper_bound",
]
