"""`python -m aht_bench.cli ...`: the command line as the `aht-bench` script runs it.

May import the standard library and aht_bench.cli.
"""

import sys

from aht_bench.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
