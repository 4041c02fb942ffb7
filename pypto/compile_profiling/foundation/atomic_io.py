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
import errno
import logging
import os
import secrets
import shutil
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from pypto.compile_profiling.foundation.input_files import refuse_read_input, special_kind
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
    anything but a regular file or a symlink (which is replaced, its target left alone), or
    a file this command read (`input_files.guarding_inputs`)."""
    from pypto.compile_profiling.foundation.streams import stream_of

    if stream_of(path) is not None:       # a stream is written through, never replaced
        raise OutputPathError(path, "is a stream (standard output or error, a descriptor or "
                                    "a device): not replaced by a file")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ProfileWriteError(f"{path}: cannot write: {e.strerror or e}") from None
    kind = None if stat.S_ISLNK(mode) else special_kind(mode)
    if kind is not None:
        raise OutputPathError(path, f"is {kind}, not a regular file: refusing to replace it")
    refuse_read_input(path)


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


def temp_beside(path: str | os.PathLike) -> tuple[int, str]:
    """(fd, path) of an exclusive new temp file in `path`'s directory, named like
    `atomic_writer`'s (so a killed writer's is removed by `remove_stale_temps`); the caller
    closes and removes it."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        return _create_temp(directory, target.name)
    except OSError as e:
        raise ProfileWriteError(f"{directory}: cannot write here: {e.strerror or e}") from e


def pid_running(pid: int) -> bool:
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
        if pid == os.getpid() or pid_running(pid):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
            log.info("removed %s, left by process %d that is gone", path, pid)
    return removed


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w",
                  encoding: str | None = "utf-8", errors: str | None = None) -> Iterator[IO]:
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
                       errors=None if binary else errors,
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


# -- a set of files replaced together ---------------------------------------------------------

_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux `renameat2(RENAME_EXCHANGE)`); False where the
    platform or file system cannot (the caller falls back)."""
    try:
        import ctypes  # loaded on first use: about 3 ms, once per process

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (ImportError, OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), a)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT/SIGTERM wait until the block is done (main thread, where Python handles them)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def replace_file_set(directory: str | os.PathLike,
                     writers: dict[str, Callable[[IO[str]], None]]) -> None:
    """Write the files `writers` names (each `write(text_file)`) into `directory`, so that the
    directory holds either its previous set of these files or the complete new set, never a
    mix, even if the process dies part-way.

    The new set is written into a fresh sibling directory, which then trades places with
    `directory` in one `renameat2(RENAME_EXCHANGE)` (or one rename, when `directory` does not
    exist yet); the old set is then deleted. A `directory` that holds other files too (or a
    platform without the exchange) gets each file written to a temp file beside it first and
    the finished files renamed into place back to back with SIGINT/SIGTERM held, so a failure
    or an interrupt leaves the previous set untouched.
    """
    target = Path(directory)
    try:
        parent = ensure_dir(target.parent if str(target.parent) else ".")
    except ProfileWriteError as e:
        cause = e.__cause__
        reason = getattr(cause, "strerror", None) or "a parent is not a directory"
        raise ProfileWriteError(f"{target}: cannot create directory: {reason}") from e
    names = set(writers)
    try:
        existing = set(os.listdir(target)) if target.is_dir() else None
    except OSError as e:
        raise ProfileWriteError(f"{target}: cannot read directory: {e.strerror or e}") from e
    if target.exists() and existing is None:
        raise ProfileWriteError(f"{target}: not a directory")
    _remove_stale_staging(parent, target.name)
    if existing is None or existing <= names:
        staging = _staging_dir(parent, target.name)
        try:
            for name, write in writers.items():
                with open(os.path.join(staging, name), "w", encoding="utf-8",
                          errors="backslashreplace", newline="") as f:
                    write(f)
            if existing is None:
                try:
                    os.rename(staging, target)
                    return
                except OSError:
                    existing = set()  # created meanwhile: exchange with it
            if _exchange(staging, str(target)):
                return  # `staging` now holds the previous set; removed below
        except OSError as e:
            raise ProfileWriteError(f"{target}: cannot write: {e.strerror or e}") from e
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _replace_in_place(target, writers)


def _remove_stale_staging(parent: Path, name: str) -> None:
    """Staging directories left by a killed writer (its pid is gone) are removed."""
    prefix = f".{name}."
    try:
        entries = [e for e in os.listdir(parent) if e.startswith(prefix) and e.endswith(".new")]
    except OSError:
        return
    for entry in entries:
        pid = entry[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_running(int(pid)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _staging_dir(parent: Path, name: str) -> str:
    while True:
        path = os.path.join(parent, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.new")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
        except OSError as e:
            raise ProfileWriteError(f"{parent}: cannot write here: {e.strerror or e}") from e


def _replace_in_place(target: Path, writers: dict[str, Callable[[IO[str]], None]]) -> None:
    ensure_dir(target)
    temps: list[tuple[str, Path]] = []
    try:
        for name, write in writers.items():
            fd, tmp = _create_temp(target, name)
            temps.append((tmp, target / name))
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace",
                           newline="") as f:
                write(f)
        with _signals_held():
            for tmp, final in temps:
                os.replace(tmp, final)
        temps.clear()
    except OSError as e:
        raise ProfileWriteError(f"{target}: cannot write: {e.strerror or e}") from e
    finally:
        for tmp, _final in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
