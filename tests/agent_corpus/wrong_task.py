"""Bad on lbf-v1: its TASKS lists the sabotage game only."""

TASKS = ("sabotage-v1",)


def act(obs):
    return 0
