"""Atomic file writes: a reader never sees a half-written report or trace.

Everything goes to a temporary file in the target directory and is renamed into place
only once complete; on any failure the temporary file is removed.

The rename replaces a regular file or a symlink at the target (the symlink itself: the file
it pointed to is left alone). Anything else there (a directory, FIFO, socket or device,
e.g. `/dev/null` for root) is refused with `OutputPathError` before anything is written,
since the rename would silently put a regular file in its place.

Temp files are named `.<name>.pypto-tmp-<host>-<pid>-<random>`. A process killed while
writing (kill -9, power loss) leaves its temp file behind; the next write into that
directory removes every such file whose process is gone (same host, pid not running).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pypto.compile_profiling.input_files import special_kind
from pypto.errors import OutputPathError, ProfileWriteError

log = logging.getLogger(__name__)

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def ensure_dir(path: str | os.PathLike) -> Path:
    """Create `path` (and parents); a failure names the directory."""
    p = Path(path)
    if p.is_dir():
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ProfileWriteError(f"{p}: cannot create directory: {e.strerror or e}") from e
    if not p.is_dir():
        raise ProfileWriteError(f"{p}: not a directory")
    return p


def check_output_path(path: str | os.PathLike) -> None:
    """Raise `OutputPathError` when something an atomic write must not replace is at `path`:
    anything but a regular file or a symlink (which is replaced, its target left alone)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ProfileWriteError(f"{path}: cannot write: {e.strerror or e}") from None
    kind = None if stat.S_ISLNK(mode) else special_kind(mode)
    if kind is not None:
        raise OutputPathError(path, f"is {kind}, not a regular file: refusing to replace it")


TEMP_MARK = ".pypto-tmp-"
_HOST = socket.gethostname()


def _create_temp(directory: Path, name: str) -> tuple[int, str]:
    """An exclusive new file beside the target, created with the usual 0o666 & ~umask mode."""
    while True:
        tmp = os.path.join(directory, f".{name[:100]}{TEMP_MARK}{_HOST}-{os.getpid()}-"
                                      f"{secrets.token_hex(4)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:      # e.g. EPERM: it exists, as another user
        return True
    return True


def remove_stale_temps(directory: str | os.PathLike) -> list[str]:
    """Remove the temp files in `directory` left by writers of this host that are no longer
    running (killed mid-write); return their paths. Never raises."""
    removed = []
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if e.name.startswith(".") and TEMP_MARK in e.name]
    except OSError:
        return removed
    for name in names:
        host_and_pid = name.rpartition(TEMP_MARK)[2].rpartition("-")[0]  # <host>-<pid>-<rand>
        host, _, pid_text = host_and_pid.rpartition("-")
        if host != _HOST or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid() or _pid_running(pid):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
            log.info("removed %s, left by process %d that is gone", path, pid)
    return removed


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w",
                  encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temp file beside `path`; rename it over `path` only if the block succeeds."""
    target = Path(path)
    check_output_path(target)
    directory = ensure_dir(target.parent if str(target.parent) else ".")
    binary = "b" in mode
    remove_stale_temps(directory)
    try:
        fd, tmp = _create_temp(directory, target.name)
    except OSError as e:
        raise ProfileWriteError(f"{directory}: cannot write here: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb" if binary else "w",
                       encoding=None if binary else encoding,
                       newline=None if binary else "") as f:
            yield f
        check_output_path(target)   # again: something may have appeared there meanwhile
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise ProfileWriteError(f"{target}: cannot write: {e.strerror or e}") from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    with atomic_writer(path, "w") as f:
        f.write(text)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_writer(path, "wb") as f:
        f.write(data)
