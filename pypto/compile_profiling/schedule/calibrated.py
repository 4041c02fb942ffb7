"""A capture whose scheduler is not known rule by rule (a real device, Simpler's CPU
simulator), replayed on its own latencies and decisions.

The model, per block (one core's part of a task), in the order the capture dispatched them:

- the block can be decided once its task is ready (every producer's finish seen), a core of
  its type can take it (with `pending_depth` 0 once the core's last block was seen finished,
  with 1, as Simpler's a2a3 sends the next block while one runs, once that block started),
  and the scheduler thread owning that core is free (a thread sends one block at a time:
  each send keeps it busy for its `send` cycles, the least gap between two of its sends in
  the capture);
- it is dispatched `delay` after that decision: what the scheduler took beyond the rule, as
  the capture shows it; it starts `launch` after its dispatch or the core's previous end,
  whichever is later; it runs its duration; its end is seen `poll` later;
- its core: the one it ran on, unless deciding there comes later than the earliest any core
  of its type offers by more than the block's `slack` (how much later it came in the
  capture); then that earliest core.

`calibrate` reads `delay`, `launch`, `poll` and `slack` off the capture by walking it
with its own decisions forced, so an unedited `replay` makes every decision the capture made
and reproduces it exactly; an edit (faster kernels, a faster scheduler, another device, no
dependencies) moves what it changes and keeps the rest. Plain Python over lists: one pass,
a heap of cores per core type and thread.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from math import ceil

import numpy as np

__all__ = ["Blocks", "Calibration", "Edited", "calibrate", "replay"]

NEVER = -(1 << 62)


@dataclass(slots=True, eq=False)
class Blocks:
    """What the replay needs of a capture, as columns. Per block (the capture's AICore
    records): its task, core type (index), core, and its observed dispatch, start, end and
    finish in device cycles; `order`: the blocks in the capture's dispatch order. Per task:
    its producers, CSR (`pred_ptr`, `pred_idx`). Per core of the device: its type index and
    the scheduler thread that owns it. Per thread: `send`, the cycles one send keeps it busy
    (from its dispatch phases; 0 where the capture does not say)."""

    task: np.ndarray
    core_type: np.ndarray
    core: np.ndarray
    dispatch: np.ndarray
    start: np.ndarray
    end: np.ndarray
    finish: np.ndarray
    order: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    device_core_types: list[int]
    device_owners: list[int]
    pending_depth: int
    send: list[int]

    @property
    def tasks(self) -> int:
        return len(self.pred_ptr) - 1


@dataclass(slots=True, eq=False)
class Calibration:
    """Per block: `delay` (dispatch after the rule allowed it), `launch` (start after the
    later of dispatch and the core's previous end), `poll` (finish after end), `duration`,
    `slack` (how much later than the earliest core its core decided), all cycles; per
    thread: `send` (cycles a send keeps it busy); `origin`: the capture's first dispatch;
    `violations`: blocks dispatched earlier than the rule allows (their delay is taken as 0,
    which an unedited replay shows as replay error)."""

    delay: list[int]
    launch: list[int]
    poll: list[int]
    duration: list[int]
    slack: list[int]
    send: list[int]
    origin: int
    violations: int


@dataclass(slots=True)
class Edited:
    """What an edit changes: the device (core types and owning threads per core id; None:
    as captured; a core of type -1 is gone), per-block duration factors, latency factors
    (`delay` and `send`: the dispatch; `launch`; `poll`: the completion), and whether
    dependencies are dropped."""

    device: tuple[list[int], list[int]] | None = None
    duration_factor: np.ndarray | None = None
    delay: float = 1.0
    launch: float = 1.0
    poll: float = 1.0
    no_deps: bool = False


def _scaled(values: list[int], factor: float) -> list[int]:
    if factor == 1.0:
        return values
    return [ceil(v * factor) for v in values]


class _Walk:
    """The pass over the blocks in dispatch order: the device's state as it goes."""

    def __init__(self, types: list[int], owners: list[int], origin: int, depth: int) -> None:
        self.types, self.owners, self.depth = types, owners, depth
        nc = len(types)
        self.slot = [origin] * nc
        self.last_end = [NEVER] * nc
        self.version = [0] * nc
        self.thread_free = [origin] * (max(owners, default=0) + 1)
        self.heaps: dict[int, dict[int, list]] = {}
        for c, (typ, th) in enumerate(zip(types, owners)):
            if typ >= 0:
                self.heaps.setdefault(typ, {}).setdefault(th, []).append((origin, c, 0))
        for per_thread in self.heaps.values():
            for h in per_thread.values():
                heapq.heapify(h)

    def earliest(self, typ: int, r: int) -> tuple[int, int]:
        """(decision time, core) of the core of `typ` that can decide soonest."""
        per_thread = self.heaps.get(typ)
        if not per_thread:
            raise ValueError("no core of a block's type on the device")
        best, best_core = None, -1
        version, free = self.version, self.thread_free
        for th, heap in per_thread.items():
            while True:                # stale entries (a core's older slots) dropped
                sl, c, v = heap[0]
                if v == version[c]:
                    break
                heapq.heappop(heap)
            cand = max(r, sl, free[th])
            if best is None or cand < best or (cand == best and c < best_core):
                best, best_core = cand, c
        return best, best_core

    def decision(self, core: int, r: int) -> int:
        return max(r, self.slot[core], self.thread_free[self.owners[core]])

    def take(self, core: int, d: int, s: int, e: int, f: int, send: int) -> None:
        th = self.owners[core]
        self.thread_free[th] = d + send
        self.last_end[core] = e
        self.slot[core] = s if self.depth else f
        self.version[core] += 1
        heapq.heappush(self.heaps[self.types[core]][th], (self.slot[core], core,
                                                          self.version[core]))


def _ready(t: int, pptr: list[int], pidx: list[int], left: list[int], finished: list[int],
           origin: int) -> int:
    r = origin
    for p in pidx[pptr[t]:pptr[t + 1]]:
        if left[p]:
            raise ValueError("a producer is dispatched after its consumer")
        r = max(r, finished[p])
    return r


def calibrate(b: Blocks) -> Calibration:
    """The capture's per-block delays, latencies and slack (the module docstring), from
    walking it with its own decisions."""
    n = len(b.task)
    task, core = b.task.tolist(), b.core.tolist()
    btype = b.core_type.tolist()
    pptr, pidx = b.pred_ptr.tolist(), b.pred_idx.tolist()
    d_obs, s_obs = b.dispatch.tolist(), b.start.tolist()
    e_obs, f_obs = b.end.tolist(), b.finish.tolist()
    origin = min(d_obs) if n else 0
    send = list(b.send)
    w = _Walk(b.device_core_types, b.device_owners, origin, b.pending_depth)
    delay, slack, launch = [0] * n, [0] * n, [0] * n
    left = [0] * b.tasks
    for t in task:
        left[t] += 1
    finished = [NEVER] * b.tasks
    ready: list[int | None] = [None] * b.tasks
    violations = 0
    for i in b.order.tolist():
        t, c = task[i], core[i]
        if ready[t] is None:
            ready[t] = _ready(t, pptr, pidx, left, finished, origin)
        r = ready[t]
        earliest, _ = w.earliest(btype[i], r)
        dec = w.decision(c, r)
        slack[i] = dec - earliest
        delay[i] = d_obs[i] - dec
        if delay[i] < 0:
            violations += 1
            delay[i] = 0
        launch[i] = s_obs[i] - max(d_obs[i], w.last_end[c])
        w.take(c, d_obs[i], s_obs[i], e_obs[i], f_obs[i], send[b.device_owners[c]])
        left[t] -= 1
        finished[t] = max(finished[t], f_obs[i])
    return Calibration(delay, launch, [f - e for f, e in zip(f_obs, e_obs)],
                       [e - s for e, s in zip(e_obs, s_obs)], slack, send, origin, violations)


def replay(b: Blocks, cal: Calibration, edit: Edited | None = None) -> tuple[np.ndarray, ...]:
    """Dispatch, start, end, finish and core of every block, replayed with `edit` (None:
    none)."""
    edit = edit or Edited()
    n = len(b.task)
    task, ocore = b.task.tolist(), b.core.tolist()
    btype = b.core_type.tolist()
    pptr, pidx = b.pred_ptr.tolist(), b.pred_idx.tolist()
    types, owners = edit.device or (b.device_core_types, b.device_owners)
    nc = len(types)
    delay = _scaled(cal.delay, edit.delay)
    launch = _scaled(cal.launch, edit.launch)
    poll = _scaled(cal.poll, edit.poll)
    send = _scaled(cal.send, edit.delay)
    send += [0] * (max(owners, default=0) + 1 - len(send))
    dur = cal.duration
    if edit.duration_factor is not None:
        dur = [ceil(v * f) for v, f in zip(dur, edit.duration_factor.tolist())]
    slack = cal.slack
    w = _Walk(types, owners, cal.origin, b.pending_depth)
    out = [[0] * n for _ in range(5)]
    d_out, s_out, e_out, f_out, c_out = out
    left = [0] * b.tasks
    for t in task:
        left[t] += 1
    finished = [NEVER] * b.tasks
    ready: list[int | None] = [None] * b.tasks
    for i in b.order.tolist():
        t = task[i]
        if ready[t] is None:
            ready[t] = cal.origin if edit.no_deps else \
                _ready(t, pptr, pidx, left, finished, cal.origin)
        r = ready[t]
        typ = btype[i]
        earliest, core = w.earliest(typ, r)
        oc = ocore[i]
        if oc < nc and types[oc] == typ:
            mine = w.decision(oc, r)
            if mine <= earliest + slack[i]:
                core, earliest = oc, mine
        di = earliest + delay[i]
        si = max(di, w.last_end[core]) + launch[i]
        ei = si + dur[i]
        fi = ei + poll[i]
        d_out[i], s_out[i], e_out[i], f_out[i], c_out[i] = di, si, ei, fi, core
        w.take(core, di, si, ei, fi, send[owners[core]])
        left[t] -= 1
        finished[t] = max(finished[t], fi)
    return tuple(np.array(x, np.int64) for x in out)
