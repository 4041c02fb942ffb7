"""Modelled time: the schedule Simpler's runtime would run, simulated event by event.

In `RunConfig(device_timing="modelled")` the kernels still run (on the calling thread, in
submission order, so results are checked as always), but no stamp is read from the host's
clock: each task lasts its kernel's modelled cycles (`codegen.cost_model`), and the
scheduler threads, cores and orchestrator follow the same rules as the threaded device
(`device.py`), with fixed costs for each scheduler step (`ScheduleCosts`). The rules live in
`compile_profiling.schedule.rules`, the one model the replay of a capture uses too. Everything is
counted in whole device-counter ticks, so a capture reproduces to the cycle, and the
makespan answers to core counts and program changes the way a device's would, never to
the host's load. `jitter` (with a `seed`) scales each task's duration by a seeded random
factor, for runs that should differ the way real runs do.
"""

from __future__ import annotations

import random

from pypto.compile_profiling.schedule.rules import (
    COMPLETE_NS,
    DISPATCH_NS,
    LAUNCH_NS,
    POLL_NS,
    SUBMIT_NS,
    Schedule,
    ScheduleCosts,
    simulate,
    ticks_of,
)

__all__ = ["COMPLETE_NS", "DISPATCH_NS", "LAUNCH_NS", "MAX_HOLD_S", "POLL_NS", "SUBMIT_NS",
           "Schedule", "ScheduleCosts", "simulate", "task_ticks"]

# A modelled run holds the host as long as the device would have run (the capture's device
# time then lies inside the host's runner span, as a real run's does). A schedule longer
# than this is refused with one line rather than slept through.
MAX_HOLD_S = 60


def task_ticks(cycles: list[int], core_hz: int, freq_hz: int, jitter: float = 0.0,
               seed: int | None = None) -> list[int]:
    """Each task's duration in device ticks from its kernel's core cycles (counted at
    `core_hz`); with `jitter`, scaled by `max(0.05, 1 + jitter * N(0, 1))`, drawn from
    `seed`."""
    rng = random.Random(seed) if jitter else None
    out = []
    for c in cycles:
        ns = c * 1e9 / core_hz
        if rng is not None:
            ns *= max(0.05, 1.0 + jitter * rng.gauss(0.0, 1.0))
        out.append(ticks_of(ns, freq_hz))
    return out
