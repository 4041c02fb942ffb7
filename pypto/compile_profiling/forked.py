"""Run one job in a forked child process and get its result back: the merge's second core.

Why: the merge's big steps are CPython-bound and independent (parsing deps.json beside the
records file; rendering half of a big timeline), and a fork shares the parent's data
copy-on-write for free. The child's return value, or its exception, comes back pickled
through a pipe; the child never returns into the caller's stack (it ends in `os._exit`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import tempfile
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, BinaryIO

from pypto.errors import ProfileWriteError, PyptoError

if TYPE_CHECKING:
    from typing_extensions import Self


class ForkedChildFailed(PyptoError):
    """The child process died, or what it sent back could not be read."""


class ForkedCall:
    """`work()` running in a forked child; `result()` waits for it, `cancel()` stops it."""

    def __init__(self, work: Callable[[], object]) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: never returns into the caller's stack
            code = 1
            try:
                os.close(read_fd)
                try:
                    outcome = ("ok", work())
                except BaseException as e:  # noqa: BLE001 - handed to the parent
                    outcome = ("error", e)
                try:
                    payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - an unpicklable result or exception
                    what = outcome[1]
                    payload = pickle.dumps(("error", ForkedChildFailed(
                        f"unpicklable result from the child: {type(what).__name__}: {what}")))
                with os.fdopen(write_fd, "wb") as w:
                    w.write(payload)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid: int | None = pid
        self._read_fd: int | None = read_fd

    def result(self) -> object:
        """Wait for the child; return what `work()` returned, or raise what it raised."""
        try:
            with os.fdopen(self._read_fd, "rb") as r:
                payload = r.read()
        finally:
            self._read_fd = None
            _, status = os.waitpid(self._pid, 0)
            self._pid = None
        if not payload or os.waitstatus_to_exitcode(status) != 0:
            raise ForkedChildFailed(f"the child process failed (status {status})")
        try:
            kind, value = pickle.loads(payload)
        except Exception as e:  # e.g. a third-party exception that won't rebuild
            raise ForkedChildFailed(f"the child's result could not be read: {e}") from e
        if kind == "error":
            raise value
        return value

    def cancel(self) -> None:
        """Stop and reap a child that was not waited for (e.g. the parent failed first)."""
        if self._pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self._pid, 0)
            self._pid = None
        if self._read_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._read_fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


class ForkedPart:
    """Part of an output file rendered by a forked child into an anonymous temp file.

    The parent renders its own part, then `copy_into(out)` appends the child's bytes and
    returns `work`'s (small, picklable) result. An exception in the child is raised in the
    parent; `close()` (also via `with`) stops a child that was not joined.
    """

    def __init__(self, work: Callable[[BinaryIO], object], directory: str | os.PathLike) -> None:
        self._file = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by close()
        file = self._file

        def render() -> object:
            result = work(file)
            file.flush()
            return result

        self._call = ForkedCall(render)

    def copy_into(self, out: IO) -> object:
        """Wait for the child, append what it wrote to `out`, return `work`'s result."""
        try:
            result = self._call.result()
        except ForkedChildFailed as e:
            raise ProfileWriteError(f"the writer's child process failed: {e}") from e
        if hasattr(out, "buffer"):  # a text file: append the child's UTF-8 bytes as they are
            out.flush()
            out = out.buffer
        self._file.seek(0)
        shutil.copyfileobj(self._file, out, 1 << 22)
        return result

    def close(self) -> None:
        self._call.cancel()
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
