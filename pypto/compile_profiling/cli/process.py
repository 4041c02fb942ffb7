"""What a command does as a process, beside its job: SIGTERM ended like Ctrl-C (one line, the
temporary output removed on the way out), and the stderr of child processes kept off the
user's terminal. Shared by `pypto-merge-traces` and `pypto-profile`."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "Terminated", "sigterm_raises",
           "stderr_kept_from_children", "stopped_by"]

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so the temp output is removed on the way out
    (as for Ctrl-C's KeyboardInterrupt)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs in the main thread, SIGTERM raises `Terminated` where the main
    thread is, so `finally` blocks and atomic writers clean up as for Ctrl-C. Elsewhere (a
    thread): nothing. The previous handler is restored after."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def stopped_by(e: BaseException) -> tuple[str, int]:
    """("SIGINT", 130) for Ctrl-C's KeyboardInterrupt, ("SIGTERM", 143) for `Terminated`."""
    return ("SIGINT", EXIT_INTERRUPTED) if isinstance(e, KeyboardInterrupt) else \
        ("SIGTERM", EXIT_TERMINATED)


@contextlib.contextmanager
def stderr_kept_from_children():
    """For --per-rank: every process started in the block gets /dev/null as its stderr (fd
    2), at any time, and this process's own lines reach the real stderr through
    `sys.stderr`, a stream on a copy of it. Dask's threads start worker processes whenever
    they see fit: a nanny restarts a worker a terminal's Ctrl-C killed, even while this
    process is on its way out, and a worker whose parent went away mid-spawn prints a
    traceback (seen 2 in 14 runs under load, Python 3.10, distributed 2024.8). Restored when
    the block ends, except after Ctrl-C or SIGTERM: the process is then ending, and Dask may
    still start a worker. Only when `sys.stderr` is fd 2 itself (not a test's capture)."""
    try:
        real_fd = sys.stderr.fileno() == 2 and os.dup(2)
    except (AttributeError, OSError, ValueError):
        real_fd = False
    if real_fd is False:
        yield
        return
    old = sys.stderr
    old.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    sys.stderr = open(real_fd, "w", buffering=1, encoding=old.encoding,  # noqa: SIM115
                      errors=old.errors)
    try:
        yield
    except (KeyboardInterrupt, Terminated):
        raise                  # fd 2 stays /dev/null; main's one line goes to sys.stderr
    except BaseException:
        _restore_stderr(old)
        raise
    _restore_stderr(old)


def _restore_stderr(old) -> None:
    """fd 2 back to the real stderr and `sys.stderr` back to `old`. Our stream stays open:
    a logging handler made in the block may still hold it, and it writes to the real
    stderr too."""
    ours = sys.stderr
    ours.flush()
    os.dup2(ours.fileno(), 2)
    sys.stderr = old
