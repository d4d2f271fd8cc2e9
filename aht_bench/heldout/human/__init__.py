"""Human-proxy partners for the five Overcooked layouts: behaviour cloning on the Carroll et al.
(2019) human-human gameplay data, as in the paper's App. "Human Proxy Evaluations".

    from aht_bench.heldout import human
    human.fetch()                      # download, verify and convert the data once (cached)
    human.build("overcooked-cramped_room-v1")  # -> heldout/<that task>/human-proxy-v1/
    human.build("overcooked-cramped_room-v2")  # -> heldout/<that task>/human-proxy-v3/

Three published versions (`VERSIONS`, `ProxyVersion`), one recipe: `human-proxy-v1` on the
`overcooked-<layout>-v1` tasks, `human-proxy-v2` and `human-proxy-v3` on the
`overcooked-<layout>-v2` tasks (the game as the paper's code runs it). v2 differs from v1 only
in the task the proxies are evaluated and bounded on, the bound rule and the seat rule (below);
v3 has v2's weights and differs from it only in how an example agent counts towards the bound
(`ProxyVersion.example_upper_ci`). Their manifests list the differences under
`changes_from_human_proxy_v1`. With no version given, a task gets the newest built on its task
version (`resolve_task`: human-proxy-v1 on v1 tasks, human-proxy-v3 on v2 tasks).

Per layout, two behaviour-cloned MLPs (the usual protocol of Carroll et al.):

- `human_proxy`: cloned from the TEST split. It is the one member of the published set
  (kind `human-proxy`), with BRProx bounds lower 0 and upper, on human-proxy-v1, its own
  self-play return on the set's task (both seats the proxy; the paper normalises human-proxy
  returns this way); on human-proxy-v2, Bounds v2 (`upper_bound_sources`, `build.upper_bound`):
  the highest return of its self-play, the BC partner, the layout's paper heuristics and the
  example agents that list the task, every source recorded in the manifest.
- `bc_partner`: cloned from the TRAIN split, a partner for training ego agents; listed in the
  manifest under "bc_partner", not as a member.

**The data** ships inside the `overcooked-ai` source distribution on PyPI: two pandas pickles
(`clean_{train,test}_trials.pickle`, 76 human-human trials of about 1,200 joint steps each).
They are never committed or redistributed; `fetch` builds a local cache (default
`~/.cache/aht-bench/human_data`, or `$AHT_BENCH_HUMAN_DATA`, or `data_dir=`):

1. `python -m pip download overcooked-ai==1.1.0 --no-deps --no-binary :all:` through a
   requirements file that pins the sdist's sha256 (`--require-hashes`: pip checks the archive
   before it prepares the package's metadata, which runs its setup.py in a build environment);
   the sha256 is checked again here (`SDIST_SHA256`).
2. The two pickles, and nothing else, are read out of the tarball by exact member name (no
   `extractall`) and their sha256 checked (`PICKLES`).
3. They are unpickled by `AllowListUnpickler`, whose `find_class` resolves only the exact
   pandas/numpy (module, name) pairs in `ALLOWED_GLOBALS` and refuses any other global with a
   `HumanDataError` (a crafted pickle naming `os.system` cannot run).
4. Each frame is converted ONCE to a safe format, `clean_<split>_trials.npz` (plain numeric and
   fixed-width string arrays, read with `np.load(allow_pickle=False)`): per trial its layout,
   and per recorded state the players' positions, orientations and held items and the loose
   objects (items on counters, pot contents); per joint step the two actions and the reward.
   States are parsed with `ast.literal_eval` (no code runs). The pickles are deleted after the
   conversion; later builds read only the `.npz` files.

**Replay.** Each trial is replayed open-loop in our JaxMARL environment from its first recorded
state (`Overcooked.make_inner`), one vmapped `lax.scan` per layout, to get OUR egocentric
observation of every state the humans acted in. After every joint step the replayed state is
compared with the recorded next state: positions and held items (the `replay_match_rate` of the
manifest) and, in addition, orientations, pot contents and counter items (`full_match_rate`).
Conversion from overcooked_ai's conventions: positions are (x, y) in both; orientation and
move vectors (0,-1), (0,1), (1,0), (-1,0) are our up, down, right, left (0..3); `[0, 0]` is
stay (4) and "INTERACT" interact (5); a held or placed "dish" is our plate, a "soup" off a pot
our dish (a plated soup); a pot's soup with n < 3 onions is pot status 23 - n, a full one that
has cooked c steps is max(0, 20 - c).

Seats: the replay runs with JaxMARL agent i = the data's player i, because JaxMARL, like
overcooked_ai, resolves the two interacts of a step in agent order (when both players use one
counter in the same step the order decides who gets the item; replaying forced_coord's test
split with the players swapped diverged at the first such step and matched 49% of the steps
instead of 100%). The outputs are then put in our seat order. human-proxy-v1: on the divided
layouts seat 0 is the player in the LEFT region (the v1 env's seat rule), elsewhere seat i is
the data's player i. human-proxy-v2: seat i is the data's player i on every layout (the v2
task draws each seat's side every episode, so no side belongs to a seat). Our observations are
egocentric (own layers first; nothing else depends on the seat), so an observation does not
depend on which seat the replay gave the player; the seat order only orders the pooled BC
transitions (and so the minibatches). The replay starts from recorded states
(`make_inner`), never from a reset, so v2's random reset does not enter it: on v1 and v2 it
steps the same dynamics and returns the same observations and match rates.

Human games lasted about 1,200 steps, ours 400, and our observation's urgency channel is on in
the last 39 steps. The replayed state's `step` is therefore set to
`max(0, 400 - steps_left_in_the_trial)`: the urgency channel is on exactly when the humans had
fewer than 40 steps left, and off before.

**Behaviour cloning** (`train_bc`): an `MLPActorCritic` (value head unused) trained with Adam
on the cross-entropy of its policy logits against the human action, on both players'
transitions, every step kept (idle "stay" steps included: they are how the humans played). A
few whole trials of the training split (`BCConfig.validation_fraction`) are held out for early
stopping on their cross-entropy; the best epoch's weights are kept. Held-out action accuracy is
measured on the OTHER split (the proxy on the train split, the partner on the test split), with
the majority-action baseline next to it.

**Evaluation**: self-play of each network and the proxy with the partner, `BCConfig.episodes`
episodes per seating, both seatings, seed `BCConfig.eval_seed`, through
`aht_bench.evaluation.evaluate.cross_play` on the set's task (v2: episodes start from v2's
random object state and sides); the networks act by sampling from their logits.

The set folder holds `manifest.json` (+ `manifest.sha256`), `human_proxy.safetensors` and
`bc_partner.safetensors` (+ their JSON cards); nothing derived from the data but the trained
weights and the measured numbers. It is assembled in a temporary folder and renamed into place;
an existing set is never overwritten (rebuild elsewhere with `out=`).

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

from aht_bench.heldout.human.bc import (
    BCConfig,
    cross_entropy,
    evaluate_bc,
    train_bc,
)
from aht_bench.heldout.human.building import (
    BOUNDS_V2,
    Cloned,
    bounds_v2_fields,
    build,
    build_recipe,
    carroll_data,
    clone_and_bound,
    resolve_task,
    results_record,
    save_models,
    upper_bound_sources,
)
from aht_bench.heldout.human.data import (
    HumanData,
    convert,
    data_folder,
    load_data,
    load_split,
    parse_action,
    parse_state,
    save_data,
)
from aht_bench.heldout.human.fetching import (
    AllowListUnpickler,
    check_sha256,
    extract_member,
    fetch,
    load_pickle,
    sha256_file,
)
from aht_bench.heldout.human.replay import (
    Replay,
    check_grid,
    obs_steps,
    replay,
    seat_order,
)
from aht_bench.heldout.human.versions import (
    ALLOWED_GLOBALS,
    DATA_ENV,
    DATA_LAYOUT_NAMES,
    DATA_LAYOUTS,
    DEFAULT_DATA_DIR,
    INTERACT,
    NOTHING,
    ONION_ITEM,
    OVERCOOKED_AI_VERSION,
    PICKLES,
    PLATE_ITEM,
    SAFE_FORMAT,
    SAFE_FORMAT_VERSION,
    SDIST_FILENAME,
    SDIST_SHA256,
    SOUP_ITEM,
    SPLITS,
    STAY,
    VERSIONS,
    HumanDataError,
    Log,
    ProxyVersion,
)

__all__ = [
    "bounds_v2_fields",
    "build_recipe",
    "results_record",
    "save_models",
    "ALLOWED_GLOBALS",
    "AllowListUnpickler",
    "BCConfig",
    "BOUNDS_V2",
    "Cloned",
    "DATA_ENV",
    "DATA_LAYOUTS",
    "DATA_LAYOUT_NAMES",
    "DEFAULT_DATA_DIR",
    "HumanData",
    "HumanDataError",
    "INTERACT",
    "Log",
    "NOTHING",
    "ONION_ITEM",
    "OVERCOOKED_AI_VERSION",
    "PICKLES",
    "PLATE_ITEM",
    "ProxyVersion",
    "Replay",
    "SAFE_FORMAT",
    "SAFE_FORMAT_VERSION",
    "SDIST_FILENAME",
    "SDIST_SHA256",
    "SOUP_ITEM",
    "SPLITS",
    "STAY",
    "VERSIONS",
    "build",
    "carroll_data",
    "check_grid",
    "check_sha256",
    "clone_and_bound",
    "convert",
    "cross_entropy",
    "data_folder",
    "evaluate_bc",
    "extract_member",
    "fetch",
    "load_data",
    "load_pickle",
    "load_split",
    "obs_steps",
    "parse_action",
    "parse_state",
    "replay",
    "resolve_task",
    "save_data",
    "seat_order",
    "sha256_file",
    "train_bc",
    "upper_bound_sources",
]
