"""Package layout that pyproject.toml cannot express: the heldout sets as package data.

`heldout/` (the published teammate sets, their locks and the development sets) ships in the
wheel as the data package `aht_bench_heldout`, so that `pip install aht-bench` brings them
(`aht_bench.evaluation.sets.installed_heldout_root`). Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["aht_bench", "aht_bench.*"]), "aht_bench_heldout"],
    package_dir={"aht_bench_heldout": "heldout"},
    package_data={
        "aht_bench": ["py.typed", "experiments/specs/*.toml", "sweeps/throughput.json"],
        "aht_bench_heldout": ["**/*"],
    },
    exclude_package_data={"aht_bench_heldout": ["**/__pycache__/*", "**/*.pyc"]},
)
