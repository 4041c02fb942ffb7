"""Simpler's task-timing slots of a run, each beside the tasks it covers.

A slot (`chip.run.runner_run.device_wall.task_slot_<N>` in the run log, `timing_slot=N` in
the DSL) is the AICPU's window from the earliest dispatch to the latest finish of the tasks
tagged with it. The log gives it on the device-phase timeline; the capture's records give
each task's dispatch and finish in cycles; the join (`containment.join_origin`) relates the
two. The tasks a slot covers are those dispatched and finished inside its window: the ones
tagged with it are among them, and are the one dispatched at its start and the one that
finished at its end. Exact to the cycle when `device_wall` gives its cycles; otherwise the
window is as uncertain as the join, and the report says by how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pypto.compile_profiling.trace_merge.place.containment import NS_PER_S, NotOneRun, join_origin
from pypto.compile_profiling.trace_merge.place.place_device import capture_windows
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan

__all__ = ["TaskSlot", "task_slots"]


@dataclass(slots=True)
class TaskSlot:
    """One slot: `dur_ns` (dispatch to finish, as the log says), the tasks it covers (task
    indices, by dispatch), and `tolerance_ns` (0: exact; else how far the window may be
    off, from the join's width)."""

    slot: int
    dur_ns: int
    tasks: np.ndarray | None          # None: the capture has no dispatch/finish records
    first: int | None                 # the task dispatched at its start
    last: int | None                  # the task that finished at its end
    tolerance_ns: float


def task_slots(capture_plan: CapturePlan, task_dispatch: np.ndarray, task_finish: np.ndarray
               ) -> list[TaskSlot]:
    """The capture's invocation's slots (none without a run log that has them)."""
    w = capture_plan.window
    if w is None or not w.slots:
        return []
    cw = capture_windows(capture_plan.capture)
    known = task_dispatch >= 0
    if cw is None or not known.any():
        return [TaskSlot(n, dur, None, None, None, 0.0) for n, (_, dur) in sorted(w.slots.items())]
    try:
        join = join_origin(w, cw)
    except NotOneRun:              # the merge refuses these; nothing to say here
        return []
    f = cw.freq_hz
    half = (join.hi - join.lo) / 2
    tol = half + 1                 # cycles: the join's half width, and a cycle of ns rounding
    out = []
    for n, (ts, dur) in sorted(w.slots.items()):
        lo = join.origin + Fraction(ts * f, NS_PER_S)
        hi = join.origin + Fraction((ts + dur) * f, NS_PER_S)
        inside = known & (task_dispatch >= float(lo - tol)) & (task_finish <= float(hi + tol))
        tasks = np.flatnonzero(inside)
        tasks = tasks[np.argsort(task_dispatch[tasks], kind="stable")]
        first = last = None
        if len(tasks):
            first = int(tasks[np.argmin(task_dispatch[tasks])])
            last = int(tasks[np.argmax(task_finish[tasks])])
        out.append(TaskSlot(n, dur, tasks, first, last, float(half * NS_PER_S / f)))
    return out
