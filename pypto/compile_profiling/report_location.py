"""Say where a compile profile report went: one INFO line on logger `pypto.compile_profiling`.

The line is for a user who asked for profiling (`ir.compile(profiling=True)`,
`RunConfig(compile_profiling=True)`, `PYPTO_COMPILE_PROFILING=1`), so it must show up even
when the program never configured logging: then, and only then, a handler printing the bare
message to stderr is added to that logger when the first report is written. A program that
configured logging gets the record like any other and decides itself.
"""

from __future__ import annotations

import logging
import os
import sys

from pypto.compile_profiling.report import REPORT_JSON, REPORT_TEXT, TRACE_JSON

LOGGER_NAME = "pypto.compile_profiling"
logger = logging.getLogger(LOGGER_NAME)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at the time (it may be replaced after setup)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _ensure_visible() -> None:
    if logger.handlers or logging.getLogger().handlers:
        return  # logging is configured: leave it to the program
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    # only this logger's own lines: INFO of the package's other modules stays unseen
    handler.addFilter(lambda record: record.name == LOGGER_NAME)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def log_report_location(report_dir: str | os.PathLike) -> None:
    """One line naming the report directory (relative to the working directory when it lies
    under it, so the line fits a terminal) and its files."""
    _ensure_visible()
    where = os.path.abspath(report_dir)
    rel = os.path.relpath(where)
    if not rel.startswith(os.pardir):
        where = rel
    logger.info("pypto: compile profile written to %s%s (%s, %s, %s)", where, os.sep,
                REPORT_TEXT, os.path.splitext(REPORT_JSON)[1], TRACE_JSON)
