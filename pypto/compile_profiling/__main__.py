"""`python -m pypto.compile_profiling`: the `pypto-profile` command."""

import sys

from pypto.compile_profiling.cli.profile import main

sys.exit(main())
