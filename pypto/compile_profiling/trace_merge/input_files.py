"""Opening input files: the one place the merge opens what a user named.

Special files are refused before they are opened (a FIFO would block `open()` forever, a
device such as `/dev/zero` never ends), and the opened file is checked again (`fstat`) to
be the regular file that was examined, so a FIFO swapped in between cannot block either
(`O_NONBLOCK`). Symlinks to regular files are followed; a symlink loop, a missing or
unreadable file is one `TraceInputError` line. Inputs are only ever opened for reading.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from pypto.errors import TraceInputError

__all__ = ["check_input_dir", "open_input", "read_input_bytes"]

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, expected a file"
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"is {kind}, not a regular file"


def _os_problem(exc: OSError, what: str) -> str:
    return f"cannot {what}: {exc.strerror or exc}"


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open a regular file for reading (binary, unbuffered); anything else is refused."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise TraceInputError(path, "no such file or directory") from None
        raise TraceInputError(path, _os_problem(exc, "read file")) from None
    problem = _not_regular(st.st_mode)
    if problem:
        raise TraceInputError(path, problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise TraceInputError(path, _os_problem(exc, "read file")) from None
    try:
        st2 = os.fstat(fd)
        problem = _not_regular(st2.st_mode)
        if problem is None and (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            problem = "was replaced while being opened"
        if problem:
            raise TraceInputError(path, problem)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """The whole content of a regular input file; more than `max_bytes` is an error
    (checked on the size before reading, and on what is read: the file may grow)."""
    with open_input(path) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise TraceInputError(path, f"is {size:,} bytes, more than the {max_bytes:,} "
                                        "this kind of file may have")
        try:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
        except OSError as exc:
            raise TraceInputError(path, _os_problem(exc, "read file")) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise TraceInputError(path, f"is more than the {max_bytes:,} bytes this kind of file "
                                    "may have")
    return data


def check_input_dir(path: str | os.PathLike) -> None:
    """A directory we may list: exists, is a directory (symlinks followed), readable."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceInputError(path, "no such file or directory") from None
    except OSError as exc:
        raise TraceInputError(path, _os_problem(exc, "access directory")) from None
    if not stat.S_ISDIR(st.st_mode):
        raise TraceInputError(path, "expected a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise TraceInputError(path, "cannot list directory: Permission denied")
