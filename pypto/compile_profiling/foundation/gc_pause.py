"""The garbage collector held while big acyclic structures are built and written."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector while stage trees, reports and traces are built.

    What they allocate is acyclic, so the collector has nothing to find there, but hundreds
    of thousands of new records and event strings trigger many full passes over them:
    building and writing the trace of 200,000 stages took 5.3-6.3 s with the collector
    running and 3.4-4.8 s held (same host; the workload of bench_overhead.py's export).
    For the ~80 stages of a 64-kernel compile it makes no measurable difference.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
