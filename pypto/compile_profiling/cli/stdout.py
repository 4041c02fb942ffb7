"""A command's result written to standard output as a Unix tool writes it (both commands).

- a reader that goes away early (`| head -c 100`) ends the command quietly with status 141
  (128 + SIGPIPE), as SIGPIPE ends a C tool: `main` catches `BrokenPipeError` and returns
  `reader_gone()`;
- any other write error (`> /dev/full`) is one `stdout: cannot write: <why>` line and exit 1
  (a `ProfileWriteError`);
- a stdout closed from the start (`>&-`) is the same line, raised before anything is read
  when the command checks it first (`check_open`).

After a failed write fd 1 points at /dev/null, so the interpreter's flush at exit cannot fail
a second time ("Exception ignored ... BrokenPipeError").

`write_text` writes in pieces of at most `CHUNK` bytes straight to fd 1: CPython's buffered
stdout, handed one large string, can report a pipe that closed mid-write as written (one
partial `write(2)`, the rest dropped, no error), so `query ... | head -1` used to exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import TextIO

from pypto.errors import ProfileWriteError

__all__ = ["CHUNK", "EXIT_PIPE", "PrintVersion", "check_open", "reader_gone", "write_all",
           "write_text", "writing"]

EXIT_PIPE = 128 + signal.SIGPIPE   # 141: what a shell reports for a tool stopped by SIGPIPE
CHUNK = 1 << 16                    # bytes per write(2): a pipe's buffer


def check_open() -> None:
    """`ProfileWriteError` when the process was started with stdout closed (`>&-`)."""
    if sys.stdout is None:
        raise ProfileWriteError("stdout: cannot write: standard output is closed")


@contextlib.contextmanager
def writing() -> Iterator[TextIO]:
    """`sys.stdout` to write the result to (text, or bytes to its `.buffer`), flushed on
    the way out; a write error becomes the rules of the module docstring."""
    check_open()
    try:
        sys.stdout.flush()
        yield sys.stdout
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        raise
    except OSError as e:
        _drop_stdout()
        raise ProfileWriteError(f"stdout: cannot write: {e.strerror or e}") from None


def write_text(out: TextIO, text: str) -> None:
    """`text` to `out` (inside `writing()`), in pieces of at most CHUNK bytes to its fd, each
    written whole (a short write is continued, a closed pipe is BrokenPipeError)."""
    data = text.encode(getattr(out, "encoding", None) or "utf-8", "replace")
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):     # a stream with no fd (tests)
        out.write(text)
        return
    out.flush()
    write_all(fd, data)


def write_all(fd: int, data: bytes) -> None:
    """`data` to `fd` in pieces of at most CHUNK bytes, each written whole (a short write is
    continued; a closed pipe is BrokenPipeError, never a partial write taken as done)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view[:CHUNK])
        view = view[n:]


def reader_gone() -> int:
    """The exit status of a command whose stdout reader went away (`BrokenPipeError`)."""
    _drop_stdout()
    return EXIT_PIPE


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null, so what stdout still buffers is dropped at exit instead of
    failing a second time."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, AttributeError, ValueError):
        pass


class PrintVersion(argparse.Action):
    """`--version`: `pypto.about.version_line` on one line, unwrapped (argparse's own version
    action wraps it at the terminal's width), then exit 0."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print which pypto this is and its version, and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from pypto.about import version_line

        with writing() as out:
            write_text(out, version_line(parser.prog) + "\n")
        parser.exit(0)
