"""The device critical path of one capture, as Simpler's `critical_path` tool defines it.

- Happens-before edges: a `deps.json` edge p -> s is kept when both tasks ran, p != s, p
  ended by the time s started (`end[p] <= start[s] + tolerance`) and p started strictly
  before s. Every kept edge runs forward in time, so the kept graph has no cycle.
- Static path: the longest duration-weighted path through the kept edges (a task's
  duration is its span), found in the order Simpler's topological sort visits tasks.
- Observed path: from the task that ends last (the first such task in record order), step
  back to the predecessor that gated its start most tightly: a kept data predecessor, or
  the resource predecessor (the task whose block last freed the core the task's first
  block ran on). The one that ended latest wins; a tie goes to the larger task id compared
  as a decimal string, then to the data predecessor. Walking forward, each path task adds
  its compute (the part of its span past the path so far) and the stall before it; the
  two tile the makespan (first start to last end) exactly.
- What held a path task (`HeldBy`): `data` (a producer), `core` (the task before it on its
  core) or, for the first task, `start`. What filled its stall (`StallPart`): the stall,
  from the path's frontier `e` to the task's start `s`, is cut at the predecessor's AICPU
  finish and at the task's own dispatch: `completion` (the predecessor's end not yet seen),
  `dispatch` (seen, the task not yet dispatched), `launch` (dispatched, not yet started);
  the first task's gap is `front`; what the records cannot cut is `unknown`. Where the two
  cuts cross, the time after the dispatch is `launch`. The pieces tile each stall exactly.

All on NumPy columns (`tasks.TaskTable`); the per-level loops run once per dependency level,
not per task. See docs/analysis.md for the definitions in a user's words.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.tasks import TaskTable
from pypto.compile_profiling.foundation.str_enum import StrEnum

__all__ = ["HELD_BY", "PARTS", "SCHEDULER_PARTS", "TOLERANCE_CYCLES", "DependencyEdges",
           "HeldBy", "ObservedPath", "StallPart", "StaticPath", "core_predecessors",
           "dependency_edges", "kahn_levels", "observed_path", "stall_parts", "static_path"]

TOLERANCE_CYCLES = 2          # Simpler's --tol: "finished before" allows this many ticks


class HeldBy(StrEnum):
    """What the observed path's walk blamed for a task's start."""

    DATA = "data"             # a producer (a kept deps.json edge)
    CORE = "core"             # the task that last freed the core its first block ran on
    START = "start"           # neither: the path's first task


class StallPart(StrEnum):
    """What filled a stall on the observed path (see the module docstring)."""

    COMPLETION = "completion"   # before the predecessor's AICPU finish
    DISPATCH = "dispatch"       # after that finish, before the task's dispatch
    LAUNCH = "launch"           # after the task's dispatch, before its start
    FRONT = "front"             # the first path task's gap from the makespan's start
    UNKNOWN = "unknown"         # no dispatch/finish records to cut it by


HELD_BY = tuple(HeldBy)
PARTS = tuple(StallPart)
# the scheduler's round trip: what a faster scheduler could take off the path
SCHEDULER_PARTS = (StallPart.COMPLETION, StallPart.DISPATCH, StallPart.LAUNCH)
DATA, CORE, FRONT = 0, 1, 2                     # index in HELD_BY
COMPLETION, DISPATCH, LAUNCH, FRONT_GAP, UNKNOWN = range(5)   # index in PARTS


# --------------------------------------------------------------------------- edges

@dataclass(slots=True, eq=False)
class DependencyEdges:
    """The kept happens-before edges (task indices, in deps.json order) and what was left
    out, counted (each count is said once in the report when it is not zero)."""

    pred: np.ndarray
    succ: np.ndarray
    deps_tasks: int = 0
    missing_tasks: int = 0        # in deps.json with a kernel, but no AICore record
    no_block_tasks: int = 0       # in deps.json with no kernel at all: nothing ran
    not_in_deps: int = 0          # ran, but deps.json does not list them
    edges_in_file: int = 0
    edges_untimed: int = 0        # an end is a task that never ran
    self_loops: int = 0
    edges_out_of_order: int = 0   # not forward in time (within the tolerance)
    cycle_tasks: int = 0          # tasks on or behind a dependency cycle
    cycle_example: list[int] = field(default_factory=list)   # task ids around one whole cycle

    @property
    def kept(self) -> int:
        return len(self.pred)


def _index_of(sorted_ids: np.ndarray, order: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Task index of each id (-1 when no task has it); `sorted_ids = task_ids[order]`."""
    if not len(sorted_ids):
        return np.full(len(ids), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == ids, order[pos], -1)


def dependency_edges(tt: TaskTable, deps, tolerance: int = TOLERANCE_CYCLES
                     ) -> DependencyEdges:
    """The happens-before edges of `deps` (a `read_simpler.DepsGraph`, or None: none)."""
    empty = np.zeros(0, dtype=np.int64)
    if deps is None:
        return DependencyEdges(empty, empty)
    order = np.argsort(tt.ids, kind="stable")
    sorted_ids = tt.ids[order]
    d = DependencyEdges(empty, empty, deps_tasks=len(deps.task_id),
                        edges_in_file=len(deps.pred))
    in_records = _index_of(sorted_ids, order, deps.task_id) >= 0
    no_kernel = (deps.kernel_ids < 0).all(axis=1)
    d.missing_tasks = int(np.count_nonzero(~in_records & ~no_kernel))
    d.no_block_tasks = int(np.count_nonzero(~in_records & no_kernel))
    listed = np.zeros(len(tt), dtype=bool)
    dep_sorted = np.sort(deps.task_id)
    if len(dep_sorted):
        pos = np.minimum(np.searchsorted(dep_sorted, tt.ids), len(dep_sorted) - 1)
        listed = dep_sorted[pos] == tt.ids
    d.not_in_deps = int(np.count_nonzero(~listed))
    p = _index_of(sorted_ids, order, deps.pred)
    s = _index_of(sorted_ids, order, deps.succ)
    timed = (p >= 0) & (s >= 0)
    d.edges_untimed = int(np.count_nonzero(~timed))
    loop = timed & (p == s)
    d.self_loops = int(np.count_nonzero(loop))
    ok = timed & ~loop
    p, s = p[ok], s[ok]
    _find_cycles(d, tt, p, s)
    fwd = (tt.end[p] <= tt.start[s] + tolerance) & (tt.start[p] < tt.start[s])
    d.edges_out_of_order = int(np.count_nonzero(~fwd))
    d.pred, d.succ = p[fwd], s[fwd]
    return d


def _find_cycles(d: DependencyEdges, tt: TaskTable, p: np.ndarray, s: np.ndarray) -> None:
    """Count the tasks that a topological sort of the raw edges never reaches (on a cycle
    or behind one) and name the tasks of one cycle."""
    level = kahn_levels(len(tt), p, s)
    stuck = level < 0
    d.cycle_tasks = int(np.count_nonzero(stuck))
    if not d.cycle_tasks:
        return
    keep = stuck[p] & stuck[s]          # among stuck tasks every one has a stuck pred
    pred_of = np.full(len(tt), -1, dtype=np.int64)
    pred_of[s[keep]] = p[keep]
    v, seen = int(np.flatnonzero(stuck & (pred_of >= 0))[0]), {}
    while v not in seen:                # bounded by the stuck tasks (an error case only)
        seen[v] = len(seen)
        v = int(pred_of[v])
    cycle = list(seen)[seen[v]:][::-1]
    d.cycle_example = [int(tt.ids[i]) for i in cycle]     # every edge of it real


def kahn_levels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Each node's level in a topological sort (0: no predecessor; else one more than its
    deepest predecessor), -1 for nodes on or behind a cycle. One NumPy step per level."""
    level = np.full(n, -1, dtype=np.int64)
    indeg = np.bincount(dst, minlength=n)
    o = np.argsort(src, kind="stable")
    targets = dst[o]
    offsets = np.searchsorted(src[o], np.arange(n + 1))
    frontier = np.flatnonzero(indeg == 0)
    depth = 0
    while len(frontier):
        level[frontier] = depth
        lo, hi = offsets[frontier], offsets[frontier + 1]
        cnt = hi - lo
        total = int(cnt.sum())
        if not total:
            break
        starts = np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
        hit, times = np.unique(targets[starts + np.arange(total)], return_counts=True)
        indeg[hit] -= times
        frontier = hit[indeg[hit] == 0]
        depth += 1
    return level


# --------------------------------------------------------------------------- static path

@dataclass(slots=True, eq=False)
class StaticPath:
    """The longest duration-weighted chain of kept edges: the dependency-limited floor."""

    length_cycles: int
    tasks: np.ndarray          # task indices, first to last


def _groups(keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal keys in a sorted array."""
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))


def static_path(tt: TaskTable, edges: DependencyEdges) -> StaticPath | None:
    """The static path, with Simpler's tie rules: a task's predecessor on it is the first
    kept edge (deps.json order) whose producer's path is strictly the longest (and longer
    than 0); the path ends at the task whose path is longest, the first of those in the
    order of Simpler's topological sort (level by level; in a level, by the position of a
    task's last-sorted producer, then by the first kept edge into it)."""
    n = len(tt)
    if not n:
        return None
    p, s = edges.pred, edges.succ
    level = kahn_levels(n, p, s)
    dur = tt.duration
    finish = dur.copy()
    choice = np.full(n, -1, dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    roots = np.flatnonzero(level == 0)           # in record order already
    pos[roots] = np.arange(len(roots))
    taken = len(roots)
    k = np.arange(len(p))
    o = np.lexsort((k, s, level[s]))
    p, s, k, lv = p[o], s[o], k[o], level[s[o]]
    bounds = np.searchsorted(lv, np.arange(1, int(level.max()) + 2)) if len(lv) else []
    for lo, hi in itertools.pairwise(bounds):   # one step per dependency level
        if lo == hi:
            continue
        bp, bs, bk = p[lo:hi], s[lo:hi], k[lo:hi]
        g = _groups(bs)
        nodes = bs[g]
        fp = finish[bp]
        fmax = np.maximum.reduceat(fp, g)
        counts = np.diff(np.append(g, len(bs)))
        at = np.arange(len(bs))
        first = np.minimum.reduceat(np.where(fp == np.repeat(fmax, counts), at, len(bs)), g)
        choice[nodes] = np.where(fmax > 0, bp[first], -1)
        finish[nodes] = dur[nodes] + np.maximum(fmax, 0)
        last_pred = np.maximum.reduceat(pos[bp], g)
        ranked = nodes[np.lexsort((bk[g], last_pred))]
        pos[ranked] = taken + np.arange(len(ranked))
        taken += len(ranked)
    best = np.flatnonzero(finish == finish.max())
    v = int(best[np.argmin(pos[best])])
    length = int(finish[v])
    path = []
    while v >= 0:                                  # at most one task per level
        path.append(v)
        v = int(choice[v])
    return StaticPath(length, np.array(path[::-1], dtype=np.int64))


# --------------------------------------------------------------------------- observed path

def core_predecessors(tt: TaskTable, tolerance: int = TOLERANCE_CYCLES
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per task, its resource predecessor and the time it freed the core (-1: none).

    On each core, blocks in (start, end, task id as a string) order: the core was freed, for
    a block, at the latest end of the blocks before it (the first block reaching that end
    holds it). A block starting its task's span, on a core freed by another task no later
    than `tolerance` after that start, proposes that task; of several proposals (a task's
    first blocks on several cores) the latest free time wins, then the first core in record
    order."""
    n = len(tt)
    cp_task = np.full(n, -1, dtype=np.int64)
    cp_end = np.full(n, -1, dtype=np.int64)
    rows = len(tt.row_task)
    if not rows:
        return cp_task, cp_end
    core = tt.row_core
    cores, first = np.unique(core, return_index=True)
    core_rank = np.empty(int(cores.max()) + 1, dtype=np.int64)
    core_rank[cores[np.argsort(first)]] = np.arange(len(cores))
    rank = core_rank[core]
    t = tt.row_task
    o = np.lexsort((tt.str_rank[t], tt.row_end, tt.row_start, rank))
    rk, st, en, tk = rank[o], tt.row_start[o], tt.row_end[o], t[o]
    bounds = np.append(_groups(rk), rows)
    props_t, props_end, props_task, props_at = [], [], [], []
    for lo, hi in itertools.pairwise(bounds):   # one step per core
        e = en[lo:hi]
        run = np.maximum.accumulate(e)
        prev = np.concatenate(([np.iinfo(np.int64).min], run[:-1]))
        at = np.arange(hi - lo)
        holder = np.maximum.accumulate(np.where(e > prev, at, 0))   # first to reach run[i]
        if hi - lo < 2:
            continue
        i = at[1:]
        free_at, by = run[i - 1], tk[lo:hi][holder[i - 1]]
        mine = tk[lo:hi][i]
        ok = (by != mine) & (free_at <= st[lo:hi][i] + tolerance) & \
            (st[lo:hi][i] == tt.start[mine])
        props_t.append(mine[ok])
        props_end.append(free_at[ok])
        props_task.append(by[ok])
        props_at.append(lo + i[ok])
    if props_t:
        pt, pe = np.concatenate(props_t), np.concatenate(props_end)
        pk, pa = np.concatenate(props_task), np.concatenate(props_at)
        if len(pt):
            o = np.lexsort((pa, -pe, pt))
            head = o[_groups(pt[o])]
            cp_task[pt[head]], cp_end[pt[head]] = pk[head], pe[head]
    return cp_task, cp_end


@dataclass(slots=True, eq=False)
class ObservedPath:
    """The observed (blame) path, first task to last, with what each task adds."""

    tasks: np.ndarray          # task indices in path order
    held_by: np.ndarray        # int8 per path task: what gated its start (index in HELD_BY)
    stall: np.ndarray          # int64 cycles of stall before it
    compute: np.ndarray        # int64 cycles of compute it adds
    frontier: np.ndarray       # int64 cycles: where the path stood before it
    parts: np.ndarray          # int64 cycles (path task, part in PARTS): its stall, cut
    t0: int                    # first start of any task
    t1: int                    # last end of any task

    @property
    def makespan(self) -> int:
        return self.t1 - self.t0

    @property
    def compute_total(self) -> int:
        return int(self.compute.sum())

    @property
    def stall_total(self) -> int:
        return int(self.stall.sum())

    def stall_by_part(self) -> dict[StallPart, int]:
        """Cycles of stall on the path per part (every part, zeros included)."""
        return {k: int(v) for k, v in zip(PARTS, self.parts.sum(axis=0).tolist())}

    def held_by_counts(self) -> dict[HeldBy, int]:
        counts = np.bincount(self.held_by, minlength=len(HELD_BY))
        return {k: int(v) for k, v in zip(HELD_BY, counts.tolist())}

    @property
    def exact(self) -> bool:
        """Compute plus stall equal the makespan, and each stall's parts its stall, to the
        cycle."""
        return (self.compute_total + self.stall_total == self.makespan
                and bool((self.parts.sum(axis=1) == self.stall).all()))


def _ancestors(parent: np.ndarray, v: int) -> np.ndarray:
    """`v` and all its ancestors by `parent` (-1: none), by pointer doubling: one NumPy
    step per doubling of the chain length."""
    marked = np.zeros(len(parent), dtype=bool)
    marked[v] = True
    jump = parent.copy()
    while True:
        idx = np.flatnonzero(marked)
        nxt = jump[idx]
        nxt = nxt[nxt >= 0]
        nxt = nxt[~marked[nxt]]
        if not len(nxt):
            return np.flatnonzero(marked)
        marked[nxt] = True
        jump = np.where(jump >= 0, jump[np.maximum(jump, 0)], -1)


def observed_path(tt: TaskTable, edges: DependencyEdges,
                  tolerance: int = TOLERANCE_CYCLES, dispatch: np.ndarray | None = None,
                  finish: np.ndarray | None = None, submit: np.ndarray | None = None
                  ) -> ObservedPath | None:
    """The observed path; `dispatch` / `finish`: per task its earliest AICPU dispatch and
    latest AICPU finish in cycles, -1 unknown (`tasks.task_dispatch_finish`; None: a capture
    without AICPU records), which cut each stall into its parts; `submit`: per task its
    submission (`tasks.task_submission`), which cuts the front gap."""
    n = len(tt)
    if not n:
        return None
    start, end = tt.start, tt.end
    # data candidate per task: the kept producer that ended last (then larger id string)
    d_task = np.full(n, -1, dtype=np.int64)
    d_end = np.full(n, -1, dtype=np.int64)
    d_rank = np.full(n, -1, dtype=np.int64)
    p, s = edges.pred, edges.succ
    if len(p):
        o = np.lexsort((tt.str_rank[p], end[p], s))
        last = np.append(_groups(s[o])[1:], len(o)) - 1
        e = o[last]
        d_task[s[e]], d_end[s[e]], d_rank[s[e]] = p[e], end[p[e]], tt.str_rank[p[e]]
    c_task, c_end = core_predecessors(tt, tolerance)
    c_ok = c_task >= 0
    c_ok[c_ok] = start[c_task[c_ok]] < start[c_ok]
    c_rank = np.where(c_ok, tt.str_rank[np.maximum(c_task, 0)], -1)
    d_ok = d_task >= 0
    # (end, id string, data over core): the larger tuple gates the task
    core_wins = c_ok & (~d_ok | (c_end > d_end) | ((c_end == d_end) & (c_rank > d_rank)))
    parent = np.where(core_wins, c_task, np.where(d_ok, d_task, -1))
    gate = np.where(core_wins, CORE, np.where(d_ok, DATA, FRONT)).astype(np.int8)
    t0, t1 = int(start.min()), int(end.max())
    sink = int(np.flatnonzero(end == t1)[0])
    path = _ancestors(parent, sink)
    path = path[np.argsort(start[path], kind="stable")]   # starts strictly rise along it
    ps, pe = start[path], end[path]
    reach = np.maximum.accumulate(pe)
    frontier = np.maximum(np.concatenate(([t0], reach[:-1])), t0)
    stall = np.maximum(0, ps - frontier)
    compute = np.maximum(0, pe - np.maximum(ps, frontier))
    none = np.full(n, -1, dtype=np.int64)
    d = (none if dispatch is None else dispatch)[path]
    f = (none if finish is None else finish)[np.concatenate(([-1], path[:-1]))] \
        if len(path) else none[:0]
    first_ready = -1 if submit is None or not len(path) else int(submit[path[0]])
    parts = stall_parts(frontier, frontier + stall, f, d, first_ready)
    return ObservedPath(path, gate[path], stall, compute, frontier, parts, t0, t1)


def stall_parts(e: np.ndarray, s: np.ndarray, finish: np.ndarray, dispatch: np.ndarray,
                first_ready: int = -1) -> np.ndarray:
    """Each stall [e, s) of a path cut at its predecessor's `finish` and its own `dispatch`
    (cycles, -1 unknown) into PARTS: (n, 5) int64 cycles whose rows sum to `s - e` exactly.
    The first one is the front gap: cut at the first task's own dispatch like any other
    stall, what came before it split at its submission (`first_ready`): before it `front`
    (not yet submitted), after it `dispatch` (submitted, not yet sent); without a dispatch
    record, or a submission, what came before the dispatch is `front`."""
    n = len(e)
    out = np.zeros((n, len(PARTS)), dtype=np.int64)
    if not n:
        return out
    e0, s0, d0 = int(e[0]), int(s[0]), int(dispatch[0])
    if d0 < 0:
        out[0, FRONT_GAP] = s0 - e0
    else:
        d0 = min(max(d0, e0), s0)
        r0 = d0 if first_ready < 0 else min(max(first_ready, e0), d0)
        out[0, FRONT_GAP] = r0 - e0
        out[0, DISPATCH] = d0 - r0
        out[0, LAUNCH] = s0 - d0
    e, s, finish, dispatch = e[1:], s[1:], finish[1:], dispatch[1:]
    dk, fk = dispatch >= 0, finish >= 0
    cut_d = np.where(dk, np.clip(dispatch, e, s), s)     # after it: launch
    cut_f = np.minimum(np.where(fk, np.clip(finish, e, s), e), cut_d)
    rest = cut_d - cut_f                                 # after the finish, before dispatch
    out[1:, LAUNCH] = s - cut_d
    out[1:, COMPLETION] = cut_f - e
    out[1:, DISPATCH] = np.where(dk & fk, rest, 0)
    # a cut the records cannot make: unknown (no finish: all before the dispatch; no
    # dispatch either: the whole stall)
    out[1:, UNKNOWN] = np.where(fk, np.where(dk, 0, rest), cut_d - e)
    return out
