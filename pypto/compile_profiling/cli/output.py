"""Where a `pypto-profile` command's result goes: stdout, a stream the user names
(`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, a device: written through, never replaced), or
a file written atomically (gzip for `.gz`) that is never one of the command's inputs and
never another special file; a file written is named on stderr (`wrote <file> (<n>
bytes)`)."""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import sys
from collections.abc import Callable, Iterator

from pypto.compile_profiling.cli.stdout import write_all, write_text, writing
from pypto.compile_profiling.foundation.streams import stream_of, utf8, write_through
from pypto.errors import OutputPathError, ProfileWriteError


def write_output(path: str, text: str, inputs: list[str]) -> None:
    """`text` to stdout (`-`/None) or atomically to `path`; gzip when it ends in `.gz`.
    Refuses a path that exists and is not a regular file, and any file an input stands for
    (see `_input_files`)."""
    with output_stream(path, inputs) as write:
        write(text)


@contextlib.contextmanager
def output_stream(path: str | None, inputs: list[str]) -> Iterator[Callable[[str], None]]:
    """A `write(text)` for a result written in pieces: to stdout (`-`/None, each piece at
    once, as `cli.stdout` writes), or to a temp file beside `path` renamed over it when the
    block ends without an error (gzip when it ends in `.gz`). Refused before anything is
    written: a path that exists and is not a regular file, or that is one of the inputs."""
    target = None if path is None or path == "-" else stream_of(path)
    if path is None or path == "-" or target == 1:
        with writing() as out:     # as pypto-merge-traces -o -: cli.stdout
            yield lambda text: write_text(out, text)
        return
    if target is not None:         # /dev/stderr, /dev/fd/N, a device: written through
        try:
            with write_through(path, target) as fd:
                yield lambda text: write_all(fd, utf8(text))
        except BrokenPipeError:
            raise
        except OSError as e:
            raise ProfileWriteError(f"{path}: cannot write: {e.strerror or e}") from None
        return
    from pypto.compile_profiling.foundation.atomic_io import atomic_writer

    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ProfileWriteError(f"{path}: cannot write: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(path, "exists and is not a regular file; not replaced")
    if is_input(path, inputs):
        raise OutputPathError(path, "is one of the inputs (or read with them); not overwritten")
    with atomic_writer(path, "wb") as raw:
        gz = path.endswith(".gz")
        sink = gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) if gz else raw
        try:
            yield lambda text: sink.write(utf8(text))
        finally:
            if sink is not raw:
                sink.close()
    # as every command that writes a file says where it went (pypto-merge-traces too)
    print(f"wrote {path} ({os.path.getsize(path):,} bytes)", file=sys.stderr)


REPORT_FILES = ("pipeline_profile.json", "pipeline_profile.txt", "trace.json")


def is_input(path: str, inputs: list[str]) -> bool:
    """True when `path` is an input file, a report file of an input's report dir, or inside
    an input's `dfx_outputs/` (all of which a command may read)."""
    out = os.path.realpath(path)
    for src in map(os.path.realpath, inputs):
        if not os.path.isdir(src):
            if out == src:
                return True
            src = os.path.dirname(src)   # its report dir: the siblings may be read too
        dirs = [src, os.path.join(src, "report")]
        if os.path.basename(src) == "report":
            dirs.append(os.path.dirname(src))
        for d in dirs:
            if any(out in (os.path.join(d, n), os.path.join(d, n + ".gz"))
                   for n in REPORT_FILES):
                return True
            if out.startswith(os.path.join(d, "dfx_outputs") + os.sep):
                return True
    return False
