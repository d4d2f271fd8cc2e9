"""Human-proxy partners (aht_bench.heldout.human): the allow-listing unpickler, sha256 checks,
the conversion to the safe format, the open-loop replay of hand-made trials, behaviour cloning,
and the published `human-proxy-v1` (v1 tasks) and `human-proxy-v2` (v2 tasks) sets. Nothing
here touches the network or the real data, except the slow rebuild test (cached data only)."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import tarfile
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
import pytest

from aht_bench import envs
from aht_bench.envs import overcooked as oc
from aht_bench.evaluation import sets
from aht_bench.heldout import human
from aht_bench.heldout.human import HumanDataError
from aht_bench.policies.networks import MLPActorCritic

UP, DOWN, RIGHT, LEFT = (0, -1), (0, 1), (1, 0), (-1, 0)


# ---------------------------------------------------------------------- hand-made trials


def _state(players, objects=()) -> str:
    """An overcooked_ai state repr as the data stores it. players: (x, y, facing, held name or
    None); objects: (name, x, y) or ("soup", x, y, onions, cook_time)."""
    ps = []
    for x, y, facing, held in players:
        p: dict[str, Any] = {"position": [x, y], "orientation": list(facing)}
        if held is not None:
            p["held_object"] = {"name": held, "position": [x, y]}
        ps.append(p)
    objs = {}
    for o in objects:
        entry = {"name": o[0], "position": [o[1], o[2]]}
        if o[0] == "soup":
            entry["state"] = ["onion", o[3], o[4]]
        objs[f"{o[1]},{o[2]}"] = entry
    return repr({"players": ps, "objects": objs, "order_list": ["onion"], "pot_explosion": False})


def _frame(layout: str, grid: list[str], states: list[str], actions: list, worker: int = 7):
    """A human-data frame of one trial: rows t = (state t, joint action t, state t + 1)."""
    n = len(actions)
    return pd.DataFrame(
        {
            "layout_name": [layout] * n,
            "layout": [repr(grid)] * n,
            "workerid_num": np.full(n, worker, np.int64),
            "cur_gameloop": np.arange(n, dtype=np.float64),
            "state": states[:-1],
            "next_state": states[1:],
            "joint_action": [repr(a) for a in actions],
            "reward": np.zeros(n),
        }
    )


CRAMPED = ["XXPXX", "O  2O", "X1  X", "XDXSX"]
# Worked by hand on cramped_room: onion piles (0,1), (4,1); pot (2,0); plate pile (1,3).
CRAMPED_STATES = [
    _state([(1, 2, UP, None), (3, 1, UP, None)]),
    # left into the counter (0,2): turns only; right into the onion pile (4,1): turns only
    _state([(1, 2, LEFT, None), (3, 1, RIGHT, None)]),
    # p0 up onto the floor (1,1); p1 interacts with the onion pile
    _state([(1, 1, UP, None), (3, 1, RIGHT, "onion")]),
    # p0 left into the onion pile (0,1): turns; p1 up into the counter (3,0): turns
    _state([(1, 1, LEFT, None), (3, 1, UP, "onion")]),
    # p0 takes an onion from the pile; p1 puts its onion on the counter (3,0)
    _state([(1, 1, LEFT, "onion"), (3, 1, UP, None)], [("onion", 3, 0)]),
    # p0 right onto (2,1); p1 stays
    _state([(2, 1, RIGHT, "onion"), (3, 1, UP, None)], [("onion", 3, 0)]),
    # p0 up into the pot (2,0): turns; p1 stays
    _state([(2, 1, UP, "onion"), (3, 1, UP, None)], [("onion", 3, 0)]),
    # p0 puts its onion into the pot (1 onion); p1 takes the onion back from the counter
    _state([(2, 1, UP, None), (3, 1, UP, "onion")], [("soup", 2, 0, 1, 0)]),
    # both stay
    _state([(2, 1, UP, None), (3, 1, UP, "onion")], [("soup", 2, 0, 1, 0)]),
]
CRAMPED_ACTIONS = [
    [[-1, 0], [1, 0]],
    [[0, -1], "INTERACT"],
    [[-1, 0], [0, -1]],
    ["INTERACT", "INTERACT"],
    [[1, 0], [0, 0]],
    [[0, -1], [0, 0]],
    ["INTERACT", "INTERACT"],
    [[0, 0], [0, 0]],
]
# Our action indices of the above: up 0, down 1, right 2, left 3, stay 4, interact 5.
CRAMPED_ACTION_IDS = [[3, 2], [0, 5], [3, 0], [5, 5], [2, 4], [0, 4], [5, 5], [4, 4]]

FORCED = ["XXXPX", "O X1P", "O2X X", "D X X", "XXXSX"]
# forced_coord: the data's player 0 ("1") is on the RIGHT, player 1 ("2") on the left. In the
# last step both interact with the middle counter (2,2): player 0 (empty-handed) goes first and
# finds nothing, then player 1 puts its onion there. In the other order player 0 would end up
# holding the onion.
FORCED_STATES = [
    _state([(3, 1, UP, None), (1, 2, UP, None)]),
    _state([(3, 2, DOWN, None), (1, 2, LEFT, None)]),  # p0 down to (3,2); p1 faces the pile
    _state([(3, 2, LEFT, None), (1, 2, LEFT, "onion")]),  # p0 faces (2,2); p1 takes an onion
    _state([(3, 2, LEFT, None), (1, 2, RIGHT, "onion")]),  # p1 faces (2,2)
    _state([(3, 2, LEFT, None), (1, 2, RIGHT, None)], [("onion", 2, 2)]),
]
FORCED_ACTIONS = [
    [[0, 1], [-1, 0]],
    [[-1, 0], "INTERACT"],
    [[0, 0], [1, 0]],
    ["INTERACT", "INTERACT"],
]


def _cramped_data() -> human.HumanData:
    return human.convert(_frame("cramped_room", CRAMPED, CRAMPED_STATES, CRAMPED_ACTIONS))


# ---------------------------------------------------------------------- the unpickler


def _like_the_human_data(rows: int = 3) -> pd.DataFrame:
    """A frame with the real data's 23 columns and dtypes (int64, float64, bool, str)."""
    frame = _frame("cramped_room", CRAMPED, CRAMPED_STATES[: rows + 1], CRAMPED_ACTIONS[:rows])
    n = len(frame)
    extra = {
        "Unnamed: 0": np.arange(n, dtype=np.int64),
        "Unnamed: 0.1": np.arange(n, dtype=np.int64),
        "datetime": np.linspace(1.5e12, 1.5e12 + 1, n),
        "is_leader": np.ones(n, bool),
        "round_num": np.ones(n),
        "round_type": ["main"] * n,
        "score": np.zeros(n),
        "time_elapsed": np.linspace(0, 1, n),
        "time_left": np.full(n, 180.0),
        "is_wait": np.zeros(n, bool),
        "completed": np.ones(n, bool),
        "run": ["run-1"] * n,
        "reward_norm": np.zeros(n),
        "cur_gameloop_total": np.full(n, n, np.int64),
        "reward_norm_total": np.zeros(n),
    }
    for k, v in extra.items():
        frame[k] = v
    frame.index = pd.Index(np.arange(100, 100 + n, dtype=np.int64))
    assert frame.shape[1] == 23
    return frame


@pytest.mark.parametrize("protocol", [3, 4, 5])  # the real data is protocol 4
def test_allow_list_unpickler_loads_a_frame_like_the_human_data(tmp_path, protocol):
    frame = _like_the_human_data()
    path = tmp_path / "frame.pickle"
    path.write_bytes(pickle.dumps(frame, protocol=protocol))
    loaded = human.load_pickle(path, hashlib.sha256(path.read_bytes()).hexdigest())
    pd.testing.assert_frame_equal(loaded, frame)


def test_allow_list_unpickler_maps_the_2019_pandas_and_numpy_names():
    # The 2019 pickles name pandas' Int64Index and numpy.core.multiarray, both gone since.
    # Protocol 3 writes globals as text lines, so the names can be swapped back in.
    blob = pickle.dumps(pd.Index(np.array([4, 9], np.int64)), protocol=3)
    legacy = blob.replace(
        b"cpandas.core.indexes.base\nIndex\n", b"cpandas.core.indexes.numeric\nInt64Index\n"
    ).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"Int64Index" in legacy and b"numpy.core.multiarray" in legacy
    index = human.AllowListUnpickler(io.BytesIO(legacy)).load()
    assert isinstance(index, pd.Index) and index.dtype == np.int64 and list(index) == [4, 9]


@pytest.mark.parametrize(
    "module,name", [("os", "system"), ("builtins", "eval"), ("subprocess", "Popen")]
)
def test_allow_list_unpickler_refuses_any_other_global(tmp_path, module, name):
    marker = tmp_path / "ran"
    crafted = f"c{module}\n{name}\n(V{'touch ' + str(marker)}\ntR.".encode()
    path = tmp_path / "evil.pickle"
    path.write_bytes(crafted)
    with pytest.raises(HumanDataError, match=rf"{module}\.{name}.*not on the allow-list"):
        human.load_pickle(path)
    assert not marker.exists()


def test_load_pickle_checks_the_sha256_before_unpickling(tmp_path):
    path = tmp_path / "evil.pickle"
    path.write_bytes(b"cos\nsystem\n(Vtrue\ntR.")
    with pytest.raises(HumanDataError, match="sha256"):
        human.load_pickle(path, human.PICKLES["test"][1])


def test_load_pickle_refuses_something_that_is_not_a_frame(tmp_path):
    path = tmp_path / "array.pickle"
    path.write_bytes(pickle.dumps(np.zeros(3), protocol=4))
    with pytest.raises(HumanDataError, match="not a pandas DataFrame"):
        human.load_pickle(path)


# ---------------------------------------------------------------------- sha256 and fetching


def test_check_sha256_refuses_a_changed_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"the pinned bytes")
    digest = hashlib.sha256(b"the pinned bytes").hexdigest()
    human.check_sha256(path, digest, "test file")  # unchanged: passes
    path.write_bytes(b"the pinned bytez")
    with pytest.raises(HumanDataError, match=r"test file\) has sha256 .* expected"):
        human.check_sha256(path, digest, "test file")


def test_fetch_refuses_a_cached_sdist_with_the_wrong_sha256(tmp_path):
    (tmp_path / human.SDIST_FILENAME).write_bytes(b"not the real sdist")
    with pytest.raises(HumanDataError, match="overcooked-ai sdist"):
        human.fetch(tmp_path, log=lambda _: None)


def test_fetch_reads_only_the_safe_format_once_converted(tmp_path, monkeypatch):
    data = _cramped_data()
    for split in human.SPLITS:
        human.save_data(tmp_path / f"clean_{split}_trials.npz", data)
    monkeypatch.setattr(human.fetching, "_download_sdist", lambda *a: pytest.fail("downloaded"))
    assert human.fetch(tmp_path, log=lambda _: None) == tmp_path
    assert human.load_split("test", tmp_path).num_trials == 1


def test_data_folder_argument_then_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(human.DATA_ENV, str(tmp_path / "env"))
    assert human.data_folder() == tmp_path / "env"
    assert human.data_folder(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv(human.DATA_ENV)
    assert human.data_folder() == Path("~/.cache/aht-bench/human_data").expanduser()


def test_extract_member_copies_only_the_named_regular_file(tmp_path):
    tar_path = tmp_path / "sdist.tar.gz"
    with tarfile.open(tar_path, "w:gz") as archive:
        for name, blob in (("pkg/data/a.pickle", b"wanted"), ("../escape.txt", b"no")):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))
        link = tarfile.TarInfo("pkg/data/link.pickle")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    out = human.extract_member(tar_path, "pkg/data/a.pickle", tmp_path / "out" / "a.pickle")
    assert out.read_bytes() == b"wanted"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.pickle", "out", "sdist.tar.gz"]
    with pytest.raises(HumanDataError, match="not a regular file"):
        human.extract_member(tar_path, "pkg/data/link.pickle", tmp_path / "link")
    with pytest.raises(HumanDataError, match="no member"):
        human.extract_member(tar_path, "pkg/missing", tmp_path / "missing")


# ---------------------------------------------------------------------- conversion


def test_actions_and_orientations_map_to_our_indices():
    assert [human.parse_action(a) for a in ([0, -1], [0, 1], [1, 0], [-1, 0], [0, 0])] == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert human.parse_action("INTERACT") == 5
    with pytest.raises(HumanDataError, match="unknown action"):
        human.parse_action("JUMP")
    with pytest.raises(HumanDataError, match="unknown direction"):
        human.parse_action([1, 1])
    players, objects = human.parse_state(
        _state([(1, 2, LEFT, "dish"), (3, 1, DOWN, "soup")], [("soup", 2, 0, 3, 5)])
    )
    assert players == [(1, 2, 3, human.PLATE_ITEM), (3, 1, 1, human.SOUP_ITEM)]
    assert objects == [(2, 0, human.SOUP_ITEM, 3, 5)]
    with pytest.raises(HumanDataError, match="unknown object 'tomato'"):
        human.parse_state(_state([(1, 2, UP, "tomato"), (3, 1, UP, None)]))


def test_conversion_round_trips_through_the_safe_format(tmp_path):
    data = _cramped_data()
    # Values worked by hand from CRAMPED_STATES / CRAMPED_ACTIONS.
    assert data.num_trials == 1 and list(data.state_start) == [0, 9]
    assert data.layout[0] == "cramped_room" and data.worker[0] == 7
    assert data.grid[0] == "\n".join(CRAMPED)
    assert data.pos[0].tolist() == [[1, 2], [3, 1]]
    assert data.dir[1].tolist() == [3, 2]
    assert data.held[4].tolist() == [human.ONION_ITEM, human.NOTHING]
    assert data.action.tolist() == CRAMPED_ACTION_IDS
    assert data.steps(0) == slice(0, 8) and data.states(0) == slice(0, 9)
    soups = data.object_kind == human.SOUP_ITEM
    assert data.object_state[soups].tolist() == [7, 8]
    assert data.object_onions[soups].tolist() == [1, 1]

    path = tmp_path / "split.npz"
    human.save_data(path, data)
    with np.load(path, allow_pickle=False) as z:  # plain arrays only
        assert all(z[k].dtype != object for k in z.files)
    back = human.load_data(path)
    for field in data.__dataclass_fields__:
        a, b = getattr(data, field), getattr(back, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field


def test_conversion_refuses_a_broken_trial():
    frame = _frame("cramped_room", CRAMPED, CRAMPED_STATES, CRAMPED_ACTIONS)
    frame.loc[3, "next_state"] = CRAMPED_STATES[0]
    with pytest.raises(HumanDataError, match="next_state is not the next row's state"):
        human.convert(frame)


def test_load_data_refuses_a_foreign_npz(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, x=np.zeros(2))
    with pytest.raises(HumanDataError, match="not an aht-bench-human-data"):
        human.load_data(path)


# ---------------------------------------------------------------------- replay


def _cell_layers(env, obs_row):
    return obs_row.reshape(env.grid_obs_shape)


def test_hand_made_trial_replays_state_for_state():
    env: Any = envs.make("overcooked-cramped_room-v1")
    data = _cramped_data()
    rep = human.replay(env, data, [0], seats_by_side=True)
    assert rep.matched.all() and rep.full_match.all()
    assert rep.actions.tolist() == CRAMPED_ACTION_IDS
    grid0 = _cell_layers(env, rep.obs[0, 0])
    assert grid0[2, 1, 0] == 1 and grid0[1, 3, 1] == 1  # seat 0 at (1,2), seat 1 at (3,1)
    assert _cell_layers(env, rep.obs[0, 1])[1, 3, 0] == 1  # egocentric: seat 1 sees itself
    # before the last step: one onion in the pot (2,0) (channel 16), seat 1 holds an onion
    last = _cell_layers(env, rep.obs[7, 0])
    assert last[0, 2, 16] == 1 and last[1, 3, 23] == 1
    # 8 steps left at most: the urgency channel (25) is on throughout
    assert np.all(rep.obs.reshape(8, 2, env.height, env.width, 26)[..., 25] == 1)


def test_replay_flags_a_recording_the_env_does_not_reproduce():
    env = envs.make("overcooked-cramped_room-v1")
    states = list(CRAMPED_STATES)
    # p0 "teleports" to (2,1) where the recording has it turn left at (1,1)
    states[3] = _state([(2, 1, LEFT, None), (3, 1, UP, "onion")])
    states[4] = _state([(2, 1, LEFT, "onion"), (3, 1, UP, None)], [("onion", 3, 0)])
    data = human.convert(_frame("cramped_room", CRAMPED, states[:5], CRAMPED_ACTIONS[:4]))
    rep = human.replay(env, data, [0], seats_by_side=True)
    assert rep.matched.tolist() == [True, True, False, False]


def test_divided_layout_puts_the_left_player_in_seat_0_and_keeps_the_interact_order():
    env = envs.make("overcooked-forced_coord-v1")
    data = human.convert(_frame("random0", FORCED, FORCED_STATES, FORCED_ACTIONS))
    rep = human.replay(env, data, [0], seats_by_side=True)
    assert rep.full_match.all()  # player 0 interacted first, as recorded
    # seat 0 is the data's player 1 (left): its actions come first
    assert rep.actions.tolist() == [[3, 1], [5, 3], [2, 4], [5, 5]]
    first = _cell_layers(env, rep.obs[0, 0])
    assert first[2, 1, 0] == 1 and first[1, 3, 1] == 1  # own (1,2) left, other (3,1) right


def test_v2_seats_are_the_data_players_and_the_replay_is_v1s():
    data = human.convert(_frame("random0", FORCED, FORCED_STATES, FORCED_ACTIONS))
    v1 = human.replay(envs.make("overcooked-forced_coord-v1"), data, [0], seats_by_side=True)
    env = envs.make("overcooked-forced_coord-v2")
    rep = human.replay(env, data, [0], seats_by_side=human.VERSIONS["human-proxy-v2"].seats_by_side)
    assert rep.full_match.all()
    # seat 0 is the data's player 0 (right): FORCED_ACTIONS as recorded
    assert rep.actions.tolist() == [[1, 3], [3, 5], [4, 2], [5, 5]]
    first = _cell_layers(env, rep.obs[0, 0])
    assert first[1, 3, 0] == 1 and first[2, 1, 1] == 1  # own (3,1) right, other (1,2) left
    # the same observations as v1's replay, only the seats swapped
    np.testing.assert_array_equal(rep.obs, v1.obs[:, ::-1])
    np.testing.assert_array_equal(rep.actions, v1.actions[:, ::-1])


@pytest.mark.parametrize("seats_by_side", [True, False])
def test_the_replay_on_v2_steps_the_same_game_as_on_v1(seats_by_side):
    # From recorded states (make_inner), never from v2's random reset: same states, same obs.
    data = _cramped_data()
    v1 = human.replay(envs.make("overcooked-cramped_room-v1"), data, [0], seats_by_side=True)
    v2 = human.replay(
        envs.make("overcooked-cramped_room-v2"), data, [0], seats_by_side=seats_by_side
    )
    assert v2.matched.all() and v2.full_match.all()
    np.testing.assert_array_equal(v2.obs, v1.obs)  # shared layout: seat i is player i in both
    np.testing.assert_array_equal(v2.actions, v1.actions)


def test_replay_checks_the_recorded_layout():
    env = envs.make("overcooked-coord_ring-v1")
    with pytest.raises(HumanDataError, match="not overcooked-coord_ring-v1's layout"):
        human.replay(env, _cramped_data(), [0], seats_by_side=True)


def test_observation_steps_put_the_urgency_in_the_last_39_steps():
    steps = human.obs_steps(1204, 400)
    urgent = 400 - steps < 40  # JaxMARL's urgency rule
    assert steps[0] == 0 and steps[-1] == 399
    assert urgent.sum() == 39 and urgent[-39:].all()


# ---------------------------------------------------------------------- behaviour cloning


def test_train_bc_learns_a_deterministic_labelling():
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, (2000, 12)).astype(np.uint8)
    actions = obs[:, :3].argmax(axis=1) + 3 * obs[:, 3]  # 6 classes, a function of obs
    network = MLPActorCritic(12, 6, 1, (32,))
    config = human.BCConfig(max_epochs=15, patience=3, batch_size=100, learning_rate=1e-2)
    params, record = human.train_bc(
        jax.random.PRNGKey(0),
        network,
        obs[:1600],
        actions[:1600],
        obs[1600:],
        actions[1600:],
        config,
        log=lambda _: None,
    )
    scores = human.evaluate_bc(network, params, obs[1600:], actions[1600:])
    assert scores["action_accuracy"] > 0.97
    assert scores["majority_action_accuracy"] < 0.5  # far from learnt by always guessing one
    history = np.array(record["loss_history"])
    assert record["best_epoch"] >= 1 and history.shape == (record["epochs_run"], 2)
    assert record["best_validation_cross_entropy"] == pytest.approx(
        history[record["best_epoch"] - 1, 1], abs=1e-5
    )


def test_cross_entropy_matches_a_hand_computation():
    logits = jax.numpy.array([[0.0, 0.0], [np.log(3.0), 0.0]])
    # -(log 1/2 + log 3/4) / 2
    expected = -(np.log(0.5) + np.log(0.75)) / 2
    assert float(human.cross_entropy(logits, jax.numpy.array([1, 0]))) == pytest.approx(expected)


def test_build_refuses_tasks_without_data_and_existing_sets(tmp_path):
    with pytest.raises(ValueError, match="no human gameplay data for lbf-v1"):
        human.build("lbf", tmp_path / "x")
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "manifest.json").write_text("{}")
    with pytest.raises(HumanDataError, match="never overwritten"):
        human.build("cramped_room", tmp_path / "set", data_dir=tmp_path / "nodata")


@pytest.mark.parametrize(
    "version,task_version,newest",
    [("human-proxy-v1", 1, True), ("human-proxy-v2", 2, False), ("human-proxy-v3", 2, True)],
)
def test_each_version_covers_the_five_overcooked_tasks_of_its_task_version(
    version, task_version, newest
):
    proxy = human.VERSIONS[version]
    assert proxy.name == version and proxy.task_version == task_version
    assert sorted(proxy.tasks) == sorted(f"overcooked-{n}-v{task_version}" for n in oc.LAYOUTS)
    for task_id in proxy.tasks:
        assert envs.resolve(task_id) == task_id
        # by default the newest version built on the task's version
        task = envs.task(task_id)
        assert (human.resolve_task(task_id) == (task, proxy)) == newest
        assert human.resolve_task(task_id, version) == (task, proxy)
        assert human.resolve_task(task, version) == (task, proxy)  # a Task passes through
        assert human.DATA_LAYOUTS[task_id] == human.DATA_LAYOUT_NAMES[task_id.split("-")[1]]


def test_v1_keeps_its_seat_rule_and_only_v2_records_changes():
    v1, v2 = human.VERSIONS["human-proxy-v1"], human.VERSIONS["human-proxy-v2"]
    assert v1.seats_by_side and not v2.seats_by_side
    assert v1.seats == (
        "divided layouts: seat 0 is the player in the left region; otherwise seat i is the "
        "data's player i"
    )  # the text of the published v1 manifests
    assert v1.changes == () and len(v2.changes) == 4
    assert not v1.bounds_v2 and v2.bounds_v2  # v1: self-play bound; v2: Bounds v2
    assert any(c.startswith("bounds: Bounds v2") for c in v2.changes)


def test_v3_is_v2_but_for_the_example_agents_rule():
    v2, v3 = human.VERSIONS["human-proxy-v2"], human.VERSIONS["human-proxy-v3"]
    same = ("task_version", "seats_by_side", "bounds_v2")
    assert [getattr(v3, f) for f in same] == [getattr(v2, f) for f in same]
    assert v3.example_upper_ci and not v2.example_upper_ci
    assert v3.changes[: len(v2.changes)] == v2.changes and len(v3.changes) == len(v2.changes) + 1


def test_a_version_is_built_only_on_its_own_task_version():
    with pytest.raises(
        ValueError,
        match="human-proxy-v2 is built on the v2 tasks, not on "
        "overcooked-cramped_room-v1: build it for overcooked-cramped_room-v2",
    ):
        human.resolve_task("overcooked-cramped_room-v1", "human-proxy-v2")
    with pytest.raises(ValueError, match="build it for overcooked-forced_coord-v1"):
        human.resolve_task("forced_coord", "human-proxy-v1")  # the alias names v2
    with pytest.raises(ValueError, match="unknown human-proxy version 'human-proxy-v9'"):
        human.resolve_task("cramped_room", "human-proxy-v9")


def test_cli_build_names_the_task_a_version_needs(tmp_path):
    from click.testing import CliRunner

    from aht_bench.cli import main

    args = ["heldout", "build", "--task", "cramped_room", "--version", "human-proxy-v1"]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "build it for overcooked-cramped_room-v1" in result.output


def test_upper_bound_sources_play_every_partner_with_the_builds_protocol(monkeypatch):
    # the runners are stubbed: this checks who is played, with which protocol, and the order
    from aht_bench.evaluation import evaluate
    from aht_bench.heldout import build, recipes
    from aht_bench.policies.heuristics import PAPER_HEURISTICS

    task_id = "overcooked-cramped_room-v2"
    cfg = human.BCConfig(episodes=3, eval_seed=7)
    calls: list[Any] = []

    def cross_play(task, rows, cols, seatings, episodes, seed):
        calls.append(("cross_play", task, rows.names, cols, seatings, episodes, seed))
        values = np.arange(1.0, rows.size + 1)  # heuristic h returns h + 1 in every episode
        return np.broadcast_to(values[:, None, None, None], (rows.size, 1, 2, episodes))

    def example_agent_returns(rec, cols, seatings, log):
        calls.append(("examples", rec.task_id, rec.example_agents, rec.episodes, rec.eval_seed))
        rel = "agents/examples/heuristic_agent.py"
        skipped = {"file": "agents/examples/random_agent.py", "skipped": "its TASKS"}
        returns = np.full((1, 2, 3), 9.5)  # (members, seatings, episodes)
        return [(rel, returns)], [{"file": rel, "runner": "jax"}, skipped]

    monkeypatch.setattr(evaluate, "cross_play", cross_play)
    monkeypatch.setattr(build.bounds, "_example_agent_returns", example_agent_returns)
    proxy_set, seatings = object(), ((0, 1), (1, 0))
    sources, info, played = human.upper_bound_sources(
        task_id,
        proxy_set,
        seatings,
        4.0,
        5.0,
        cfg,
        lambda _: None,
        human.VERSIONS["human-proxy-v2"],
    )
    assert len(played) == 1 and played[0].shape == (1, 2, 3)
    heuristics = PAPER_HEURISTICS[task_id]
    assert calls == [
        ("cross_play", envs.task(task_id), heuristics, proxy_set, seatings, 3, 7),  # resolved
        ("examples", task_id, recipes.EXAMPLE_AGENTS, 3, 7),
    ]
    assert [(s["set_by"], s["kind"], s["value"]) for s in sources] == [
        ("human_proxy self-play", "self-play", 4.0),
        ("bc_partner", "bc-partner", 5.0),
        *[(h, "heuristic", float(i + 1)) for i, h in enumerate(heuristics)],
        ("agents/examples/heuristic_agent.py", "example_agent", 9.5),
    ]
    assert all(a["episodes_per_seating"] == 3 and a["seed"] == 7 for a in info)
    assert info[1]["skipped"] == "its TASKS"
    bound = build.upper_bound(sources)
    assert (bound["upper"], bound["upper_set_by"]) == (9.5, "agents/examples/heuristic_agent.py")


def test_v3_example_candidate_is_the_evaluators_upper_ci(monkeypatch):
    # human-proxy-v3: the example agent is played with `aht-bench evaluate`'s default protocol
    # and counts with the upper end of its CI, the bootstrap the evaluator runs on the set
    from aht_bench.evaluation import evaluate, scores
    from aht_bench.heldout import build

    cfg = human.BCConfig(episodes=3, eval_seed=7)
    protocols: list[tuple[int, int]] = []
    rng = np.random.default_rng(0)
    noisy = rng.normal(100.0, 20.0, size=(1, 2, evaluate.DEFAULT_EPISODES))

    def cross_play(task, rows, cols, seatings, episodes, seed):
        return np.ones((rows.size, 1, 2, episodes))

    def example_agent_returns(rec, cols, seatings, log):
        protocols.append((rec.episodes, rec.eval_seed))
        return [("agents/examples/heuristic_agent.py", noisy)], [{"file": "x"}]

    monkeypatch.setattr(evaluate, "cross_play", cross_play)
    monkeypatch.setattr(build.bounds, "_example_agent_returns", example_agent_returns)
    v3 = human.VERSIONS["human-proxy-v3"]
    sources, info, _ = human.upper_bound_sources(
        "overcooked-cramped_room-v2", object(), ((0, 1), (1, 0)), 4.0, 5.0, cfg, print, v3
    )
    assert protocols == [(evaluate.DEFAULT_EPISODES, 7)]
    assert info[0]["episodes_per_seating"] == evaluate.DEFAULT_EPISODES
    (example,) = [s for s in sources if s["kind"] == "example_agent"]
    est = scores.interval_estimates(scores.score_matrix(noisy), seed=7)
    assert example["value"] == est["members"][0]["ci"][1]
    assert example["mean"] == noisy.mean() < example["value"]
    # at that bound the evaluator's normalised upper CI is 1 (to the rounding step the build
    # settles with _fit_example_bounds)
    (upper,) = build.bounds._fit_example_bounds(np.array([example["value"]]), [noisy], 7)
    assert upper - example["value"] <= 1e-9 * upper
    normalized = scores.normalize(noisy, np.zeros(1), np.array([upper]))
    high = scores.interval_estimates(scores.score_matrix(normalized), seed=7)["members"][0]["ci"][1]
    assert 1.0 - 1e-9 < high <= 1.0


# ---------------------------------------------------------------------- published sets

PROXY_SETS = [(v, t) for v, proxy in human.VERSIONS.items() for t in proxy.tasks]
SET_FILES = [
    "bc_partner.safetensors",
    "bc_partner.safetensors.json",
    "human_proxy.safetensors",
    "human_proxy.safetensors.json",
    "manifest.json",
    "manifest.sha256",
]


def _published(task_id: str, version: str) -> Path:
    folder = sets.heldout_root() / task_id / version
    assert (folder / sets.MANIFEST).is_file(), f"{folder} is not published"
    return folder


def _manifest(task_id: str, version: str) -> dict[str, Any]:
    return sets.read_manifest(_published(task_id, version))[0]


@pytest.mark.parametrize("version,task_id", PROXY_SETS)
def test_every_human_proxy_set_is_published_and_locked(version, task_id):
    from aht_bench import heldout

    folder = _published(task_id, version)
    root = sets.heldout_root()
    lock_file = heldout.lock_path(folder)
    assert lock_file == root / task_id / f"{version}.sha256" and lock_file.is_file()
    lock = heldout.read_lock(root)
    rels = [f"{task_id}/{version}/{name}" for name in SET_FILES]
    assert sorted(p.relative_to(root).as_posix() for p in folder.iterdir()) == rels
    for rel in rels:  # the lock lists every file with its digest (immutability)
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == lock[rel]
    assert not [p for p in heldout.verify(root, load_members=False) if f"/{version}/" in p]


@pytest.mark.parametrize("version,task_id", PROXY_SETS)
def test_published_human_proxy_set_is_consistent(version, task_id):
    folder = _published(task_id, version)
    eval_set = sets.load_set(task_id, version)  # verifies manifest and weight hashes
    m = eval_set.manifest
    assert m is not None
    assert eval_set.names == ("human_proxy",)
    assert m["set_id"] == f"{task_id}/{version}" and m["version"] == version
    assert m["task_id"] == m["env_id"] == task_id
    member = m["members"][0]
    assert member["kind"] == "human-proxy"
    results = m["results"]
    proxy = results["human_proxy"]
    assert member["bounds"]["lower"] == 0.0 == eval_set.lower[0]
    if human.VERSIONS[version].bounds_v2:
        _check_bounds_v2(m, task_id)
    else:  # v1: the proxy's self-play return, and exactly the keys published
        assert list(member["bounds"]) == [
            "lower",
            "upper",
            "upper_set_by",
            "self_play_return_per_seating",
        ]
        assert member["bounds"]["upper_set_by"] == "human_proxy self-play"
        assert eval_set.upper[0] == proxy["self_play_return"] > 0
        for key in ("partner_returns", "example_agents", "bounds_procedure"):
            assert key not in m
    assert proxy["self_play_return"] == pytest.approx(
        np.mean(proxy["self_play_return_per_seating"])
    )
    for name, split in (("human_proxy", "train"), ("bc_partner", "test")):
        r = results[name]
        assert r["held_out_split"] == split
        for key in ("held_out_action_accuracy", "held_out_majority_action_accuracy"):
            assert 0.0 <= r[key] <= 1.0
        assert r["held_out_transitions"] == m["source"]["splits"][split]["transitions"]
        assert r["self_play_return"] >= 0
    assert results["human_proxy_with_bc_partner"]["return"] >= 0

    source = m["source"]
    assert source["sdist_sha256"] == human.SDIST_SHA256
    assert {s: v["sha256"] for s, v in source["pickles"].items()} == {
        s: d for s, (_, d) in human.PICKLES.items()
    }
    assert source["data_layout"] == human.DATA_LAYOUTS[task_id]
    assert source["seats"] == human.VERSIONS[version].seats
    for split in human.SPLITS:
        info = source["splits"][split]
        assert info["transitions"] == 2 * info["joint_steps"] > 0
        assert 0.0 <= info["replay_full_match_rate"] <= info["replay_match_rate"] <= 1.0
    named = "" if version in ("human-proxy-v1", "human-proxy-v2") else f"version='{version}', "
    assert m["recipe"]["command"].endswith(f"build('{task_id}', {named}seed=0)\"")
    changes = m.get("changes_from_human_proxy_v1")
    assert changes == (list(human.VERSIONS[version].changes) or None)

    from aht_bench.policies.io import load_policy

    partner = m["bc_partner"]
    blob = (folder / partner["file"]).read_bytes()
    assert hashlib.sha256(blob).hexdigest() == partner["sha256"]
    policy, _ = load_policy(folder / partner["file"])
    assert policy.obs_dim == envs.make(task_id).obs_dim
    # nothing but the manifest and the two policies (+ cards) is published
    assert sorted(p.name for p in folder.iterdir()) == SET_FILES
    json.dumps(m)  # plain JSON


def _check_bounds_v2(m: dict[str, Any], task_id: str) -> None:
    """The member's upper bound is the highest of its recorded sources, each with provenance:
    self-play, the BC partner, every paper heuristic of the layout, every example agent that
    lists the task (the others recorded as skipped)."""
    from aht_bench.heldout import recipes
    from aht_bench.policies.heuristics import PAPER_HEURISTICS

    bounds, results = m["members"][0]["bounds"], m["results"]
    proxy = human.VERSIONS[m["version"]]
    sources = bounds["upper_candidates"]
    set_by = [s["set_by"] for s in sources]
    for s in sources:
        if s["kind"] == "example_agent" and proxy.example_upper_ci:
            # v3: the evaluator's upper CI, its mean beside it
            assert set(s) == {"set_by", "kind", "value", "mean", "value_is"}
            assert s["value"] >= s["mean"] > 0
        else:
            assert set(s) == {"set_by", "kind", "value"}
    played = [a for a in m["example_agents"] if "skipped" not in a]
    episodes = 64 if proxy.example_upper_ci else m["recipe"]["evaluation"]["episodes_per_seating"]
    assert all(a["episodes_per_seating"] == episodes for a in played)
    agents = [a["file"] for a in m["example_agents"] if "skipped" not in a]
    skipped = [a["file"] for a in m["example_agents"] if "skipped" in a]
    assert sorted(agents + skipped) == sorted(recipes.EXAMPLE_AGENTS)
    assert "agents/examples/heuristic_agent.py" in agents  # it lists the v2 tasks
    assert "agents/examples/random_agent.py" in skipped  # it does not
    assert set_by == [
        "human_proxy self-play",
        "bc_partner",
        *PAPER_HEURISTICS[task_id],
        *agents,
    ]
    assert sources[0]["value"] == results["human_proxy"]["self_play_return"]
    assert sources[1]["value"] == results["human_proxy_with_bc_partner"]["return"]
    # the bound by a plain loop: the highest value, named by the first source reaching it
    best = sources[0]
    for s in sources[1:]:
        if s["value"] > best["value"]:
            best = s
    raise_ = bounds.get("rounding_raise", 0.0)  # v3: the rounding step, a few ulps at most
    assert 0.0 <= raise_ <= 1e-9 * best["value"]
    assert bounds["upper"] == best["value"] + raise_
    assert best["value"] >= results["human_proxy"]["self_play_return"] > 0
    assert (bounds["upper_set_by"], bounds["upper_set_by_kind"]) == (best["set_by"], best["kind"])
    assert bounds["raised_by"] == pytest.approx(bounds["upper"] - bounds["self_play_return"])
    assert sets.load_set(task_id, m["version"]).upper[0] == bounds["upper"]
    returns = m["partner_returns"]
    assert returns["rows"] == set_by and returns["cols"] == ["human_proxy"]
    assert [r[0] for r in returns["mean_return"]] == pytest.approx([s["value"] for s in sources])
    assert "Bounds v2" in m["bounds_procedure"] and "human-proxy-v1" in m["bounds_procedure"]


@pytest.mark.parametrize("layout", oc.LAYOUTS)
def test_v3_is_v2_but_for_the_bounds(layout):
    task_id = f"overcooked-{layout}-v2"
    v2, v3 = (_manifest(task_id, v) for v in ("human-proxy-v2", "human-proxy-v3"))
    # the same weights, byte for byte, and the same measured numbers
    assert v3["members"][0]["sha256"] == v2["members"][0]["sha256"]
    assert v3["bc_partner"]["sha256"] == v2["bc_partner"]["sha256"]
    for key in ("results", "seatings"):
        assert v3[key] == v2[key], key
    # the same data and replay; only the seat rule's wording differs ("as human-proxy-v2")
    assert {k: v for k, v in v3["source"].items() if k != "seats"} == {
        k: v for k, v in v2["source"].items() if k != "seats"
    }
    for key in ("bc", "network", "seeds", "evaluation"):
        assert v3["recipe"][key] == v2["recipe"][key], key
    b2, b3 = (m["members"][0]["bounds"] for m in (v2, v3))
    # every source but the example agents is v2's; an example agent counts at least its mean
    c2, c3 = b2["upper_candidates"], b3["upper_candidates"]
    assert [c["set_by"] for c in c3] == [c["set_by"] for c in c2]
    for a, b in zip(c2, c3, strict=True):
        if a["kind"] != "example_agent":
            assert a == b
    assert b3["upper"] >= max(c["value"] for c in c2 if c["kind"] != "example_agent")


@pytest.mark.parametrize("layout", oc.LAYOUTS)
def test_v2_has_v1s_data_recipe_and_replay(layout):
    v1 = _manifest(f"overcooked-{layout}-v1", "human-proxy-v1")
    v2 = _manifest(f"overcooked-{layout}-v2", "human-proxy-v2")
    # the same trials, replayed with the same match rates
    assert v2["source"]["splits"] == v1["source"]["splits"]
    for key in ("dataset", "overcooked_ai_version", "sdist_sha256", "pickles", "data_layout"):
        assert v2["source"][key] == v1["source"][key]
    for key in ("bc", "network", "seeds", "evaluation"):
        assert v2["recipe"][key] == v1["recipe"][key]
    assert v2["seatings"] == v1["seatings"]
    if layout not in oc.DIVIDED_LAYOUTS:
        # shared layouts: the same BC inputs in the same order, so the same training run
        for name in ("human_proxy", "bc_partner"):
            a, b = v1["recipe"]["training"][name], v2["recipe"]["training"][name]
            for key in ("best_epoch", "loss_history", "validation_trials", "seed"):
                assert a[key] == b[key], (name, key)


@pytest.mark.slow
@pytest.mark.parametrize("version", list(human.VERSIONS))
def test_published_proxy_self_play_return_is_reproduced(version):
    from aht_bench.evaluation.evaluate import cross_play

    task_id = human.VERSIONS[version].task_id("cramped_room")
    _published(task_id, version)
    eval_set = sets.load_set(task_id, version)
    m = eval_set.manifest
    assert m is not None
    protocol = m["recipe"]["evaluation"]
    returns = cross_play(
        task_id,
        eval_set.teammates,
        eval_set.teammates,
        eval_set.seatings,
        protocol["episodes_per_seating"],
        protocol["seed"],
    )
    per_seating = returns[0, 0].mean(axis=1)
    recorded = m["results"]["human_proxy"]
    np.testing.assert_allclose(per_seating, recorded["self_play_return_per_seating"], atol=1e-6)
    assert float(returns.mean()) == pytest.approx(recorded["self_play_return"], abs=1e-6)


@pytest.mark.slow
def test_v1_recipe_still_builds_the_published_forced_coord_set_byte_for_byte(tmp_path):
    # forced_coord: a divided layout, where v1's seat rule (left player in seat 0) matters.
    if not all((human.data_folder() / f"clean_{s}_trials.npz").is_file() for s in human.SPLITS):
        pytest.skip("the human data is not cached; run aht_bench.heldout.human.fetch() first")
    task_id = "overcooked-forced_coord-v1"
    folder = human.build(task_id, tmp_path / "set", log=lambda _: None)
    published = _published(task_id, "human-proxy-v1")
    for name in SET_FILES[:4]:  # the weights and their cards
        assert (folder / name).read_bytes() == (published / name).read_bytes(), name
    new, old = sets.read_manifest(folder)[0], _manifest(task_id, "human-proxy-v1")
    del new["recipe"]["build_seconds"], old["recipe"]["build_seconds"]
    for name in ("human_proxy", "bc_partner"):
        del new["recipe"]["training"][name]["train_seconds"]
        del old["recipe"]["training"][name]["train_seconds"]
    assert new == old
