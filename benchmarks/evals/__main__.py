"""`python -m benchmarks evals ...` (or `python -m benchmarks.evals ...`): see cli.py."""

import sys

from .cli import main

sys.exit(main())
