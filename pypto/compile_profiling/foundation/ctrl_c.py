"""A Ctrl-C that must not land inside a finalizer.

Python runs a `__del__` written in Python (pyarrow's `ParquetWriter` has one) whenever the
object's last reference goes. A SIGINT whose handler runs inside it raises KeyboardInterrupt
there, which Python cannot pass on: it prints "Exception ignored in ... KeyboardInterrupt"
with a traceback and the work goes on, the user's Ctrl-C lost. Where such objects are let
go, `ctrl_c_deferred` holds the signal until the block ends and raises it then.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["ctrl_c_deferred"]


@contextlib.contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """While the block runs (in the main thread, where Python runs signal handlers), a
    SIGINT is noted, not raised; after it, a noted one is raised as KeyboardInterrupt.
    Elsewhere, or when SIGINT is not Python's default handler's: nothing changes."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if noted:
        raise KeyboardInterrupt
