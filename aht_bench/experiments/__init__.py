"""The paper's experiments as commands: each module trains, measures and writes its tables and
figures into one folder (`aht-bench experiment ...`).

- `sabotage`: the sabotage game (paper Sec. 6 RQ2 and App. `sabotage_game_extended`): the
  command's files, tables and plots.
- `sabotage_analysis`: ROTATE trained on the sabotage game and its last teammate read exactly
  over the game tree (`sabotage_experiment`, `sabotage_summary`).
- `cli`: the `experiment` click group.

May import jax, numpy, matplotlib, tqdm, click (in `cli` only) and aht_bench (algorithms, envs,
training, files).
"""
