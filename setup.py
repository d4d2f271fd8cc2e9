"""Package layout that pyproject.toml cannot express: files from outside aht_bench/ shipped in it.

The code wheel carries the example agents (`agents/examples/`, which errors and docs cite) and
the docs (`docs/`) as `aht_bench/_shipped/examples/` and `aht_bench/_shipped/docs/`, so an
installed aht-bench has them (`aht-bench examples`, `aht-bench docs`; `aht_bench.shipped`
finds them). It carries no heldout data: the sets are distributions of their own
(`aht_bench.evaluation.data`, built by packaging/build_heldout_wheels.py). Everything else is
in pyproject.toml.
"""

from setuptools import find_packages, setup

SHIPPED = {"aht_bench._shipped.examples": "agents/examples", "aht_bench._shipped.docs": "docs"}
SHIPPED_FILES = {
    "aht_bench._shipped.examples": ["**/*"],  # every example and its folder (sb3_ppo/, ...)
    # the screenshots (docs/images/, 0.19 MB of PNG) stay out: the code wheel stays well under
    # 1 MB, and `aht-bench docs` prints the pages as text
    "aht_bench._shipped.docs": ["**/*.md"],
}

setup(
    packages=[*find_packages(include=["aht_bench", "aht_bench.*"]), *SHIPPED],
    package_dir=SHIPPED,
    package_data={
        "aht_bench": [
            "py.typed",
            "experiments/specs/*.toml",
            "sweeps/throughput.json",
            "evaluation/random_floor.json",
        ],
        **SHIPPED_FILES,
    },
    exclude_package_data={"": ["**/__pycache__/*", "**/*.pyc"]},
)
