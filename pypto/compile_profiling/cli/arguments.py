"""What every `pypto-profile` command shares on its command line: argument types that refuse
a bad value with one line, the `-o/--output` option, the two errors a command raises for bad
usage, and the exit statuses (the module docstring of `cli.profile` lists them)."""

from __future__ import annotations

import argparse
import math

EXIT_OK, EXIT_REGRESSION, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TIMEOUT = 124                    # query --timeout, as timeout(1)
EXIT_INTERNAL = 70                    # a bug (EX_SOFTWARE): never 1, diff's "regression"
EXIT_NOT_FETCHED = EXIT_WRITE = 1   # as pypto-merge-traces: a write that failed is 1


class Usage(Exception):
    """The command line does not say what to do: usage, one line, exit 2."""


class Refused(Exception):
    """Bad input of the command line that is no file: exit 2 with its one line."""


def add_output_option(sp, what: str) -> None:
    sp.add_argument("-o", "--output", metavar="FILE",
                    help=f"write {what} to FILE (atomically; gzip-compressed when FILE ends "
                         "in .gz) instead of stdout")


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    return value


def positive_seconds(text: str) -> float:
    value = non_negative(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


def probability(text: str) -> float:
    value = non_negative(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value
