"""`python -m tools.bench`: `make bench`'s command line (tools/bench/program.py)."""

import sys

from tools.bench.program import main

sys.exit(main())
