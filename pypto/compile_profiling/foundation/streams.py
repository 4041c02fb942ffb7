"""Outputs that are streams: written through, never replaced.

`-o /dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`, any chain of symlinks to
them, and character devices are where the user wants the bytes to flow, as `-o -` is. An
atomic write would rename a regular file over the link (`/dev/stdout` itself, for root) and
leave the stream empty, so every writer asks `stream_of` first and writes through
(`write_through`); a file write never opens one of them (`atomic_io.check_output_path`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Iterator

__all__ = ["DEVICE", "shown", "stream_of", "utf8", "write_through"]

DEVICE = "device"              # a character device (`/dev/null`, a terminal): opened, written
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD = re.compile(r"^/(?:dev/fd|proc/(self|thread-self|\d+)/fd)/(\d+)$")
_MAX_LINKS = 40                # as the kernel's own limit on a chain of symlinks


def stream_of(path: str | os.PathLike) -> int | str | None:
    """The file descriptor of this process that `path` names (1 for its stdout, 2 for its
    stderr, N for `/dev/fd/N`), through any chain of symlinks; `DEVICE` for a character
    device; None for anything else (a file, to be written atomically, or refused)."""
    p = os.path.abspath(os.fspath(path))
    for _ in range(_MAX_LINKS):
        if p in _STD:
            return _STD[p]
        m = _FD.match(p)
        if m and m.group(1) in (None, "self", "thread-self", str(os.getpid())):
            return int(m.group(2))
        try:
            target = os.readlink(p)
        except OSError:          # not a link (or not there): the chain ends here
            break
        p = os.path.normpath(os.path.join(os.path.dirname(p), target))
    try:
        st = os.stat(path)
    except OSError:
        return None
    return DEVICE if stat.S_ISCHR(st.st_mode) else None


@contextlib.contextmanager
def write_through(path: str | os.PathLike, target: int | str) -> Iterator[int]:
    """A file descriptor to write `path`'s bytes to (`target`: `stream_of(path)`): the
    process's own descriptor (Python's buffers for it flushed first), or the device opened
    for writing, never truncated or created. Closed (a device) when the block ends."""
    if target == DEVICE:
        fd = os.open(os.fspath(path), os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            yield fd
        finally:
            os.close(fd)
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            if stream is not None and stream.fileno() == target:
                stream.flush()
    yield int(target)


def utf8(text: str) -> bytes:
    """`text` encoded as UTF-8, undecodable path bytes as U+FFFD (`shown`)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return shown(text).encode("utf-8")


def shown(text: str) -> str:
    """`text` as valid Unicode to print or store: a path's undecodable bytes (Python holds
    them as lone surrogates, PEP 383) become U+FFFD, where encoding them would fail."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text
