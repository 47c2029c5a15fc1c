"""`python -m tools.diff`: make diff's command line (tools/diff/cli.py)."""

import sys

from tools.diff.cli import main

sys.exit(main())
