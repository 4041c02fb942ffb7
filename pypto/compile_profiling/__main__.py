"""`python -m pypto.compile_profiling`: the `pypto-profile` command."""

from pypto.compile_profiling.cli.profile import cli

cli()
