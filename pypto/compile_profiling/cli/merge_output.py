"""Where a merge's output goes, and what became of it: a stream written through (`-o -`,
`/dev/stderr`, a device), and the one line after a signal saying whether OUT was written."""

from __future__ import annotations

import logging
import os
import sys
import tempfile

from pypto.compile_profiling.cli.stdout import write_all, writing
from pypto.errors import (
    CutError,
    MissingDependencyError,
    OutputPathError,
    ProfileWriteError,
    PyptoError,
    TraceInputError,
)

__all__ = ["EXIT_INPUT", "EXIT_WRITE", "identity", "interrupted_line", "log_setup",
           "merge_error", "size_text", "where", "write_to_stream"]

EXIT_INPUT, EXIT_WRITE = 2, 1


def size_text(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def write_to_stream(timeline, fmt: str, write_timeline, state: dict, output: str) -> int:
    """`-o -` (or a stream named: `/dev/stderr`, `/dev/fd/N`, a device): render to a
    private temp file first (nothing half-written reaches the stream when rendering fails),
    then copy it in whole writes (`cli.stdout`: a reader that went away raises
    `BrokenPipeError`, any other write error `ProfileWriteError`); return its size."""
    from pypto.compile_profiling.foundation.streams import stream_of, write_through

    with tempfile.TemporaryDirectory(prefix="pypto-merge-") as tmp:
        path = os.path.join(tmp, "merged")
        size = write_timeline(timeline, path, fmt)
        state["stdout_started"] = True
        target = None if output == "-" else stream_of(output)
        with open(path, "rb") as f:
            if target is None:
                with writing() as out:
                    out.flush()
                    while piece := f.read(1 << 20):
                        write_all(out.fileno(), piece)
                return size
            try:
                with write_through(output, target) as fd:
                    while piece := f.read(1 << 20):
                        write_all(fd, piece)
            except BrokenPipeError:
                raise
            except OSError as e:
                raise ProfileWriteError(f"{output}: cannot write: {e.strerror or e}") from None
    return size


def where(output: str, to_stream: bool) -> str:
    """`to stdout`, `to /dev/stderr` (a stream, written through), or the file's name."""
    return "to stdout" if output == "-" else f"to {output}" if to_stream else output


def identity(path: str) -> tuple | None:
    """What is at `path` now (None: nothing); a write renames a new file into place, so a
    different identity after a write started means the new output is there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size


def interrupted_line(state: dict, name: str) -> str:
    """The one line for a merge stopped by signal `name`: what really happened to OUT,
    read from the file system (the rename may have happened just before the signal)."""
    out = state["output"]
    if out is None:
        return f"interrupted by {name}"
    if out == "-":
        if state["stdout_started"]:
            return f"stdout: cut short (interrupted by {name})"
        return f"stdout: nothing written (interrupted by {name})"
    if identity(out) not in (None, state["before"]):
        return f"{out}: written, then interrupted by {name}"
    return f"{out}: not written (interrupted by {name})"


def merge_error(e: PyptoError, target, err) -> int:
    """One line on `err` for an error of a merge writing `target`, and its exit status: an
    input, output-path or missing-extra error as it says itself (it names its file), 2; a
    failed write, 1; any other with `target` in front, 2."""
    if isinstance(e, (TraceInputError, OutputPathError, MissingDependencyError, CutError)):
        print(str(e), file=err)
        return EXIT_INPUT
    if isinstance(e, ProfileWriteError):
        print(str(e), file=err)
        return EXIT_WRITE
    print(f"{target}: {e}", file=err)
    return EXIT_INPUT


def log_setup() -> None:
    """Library messages: errors only, except what a write cleaned up after an interrupted
    run (`foundation.owned_dir`), said as a warning."""
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    cleanup = logging.getLogger("pypto.compile_profiling.foundation.owned_dir")
    handler = logging.StreamHandler(sys.stderr)     # today's stderr, each run
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    cleanup.handlers = [handler]
    cleanup.setLevel(logging.WARNING)
    cleanup.propagate = False


