"""Is the scheduler the bottleneck? The overhead model of Simpler's `sched_overhead_analysis`.

- Window: first AICore start to last AICore end (the makespan), device cycles.
- A task is ready when the last of its producers that ran ended (deps.json edges); one
  whose producers never ran is ready at its own dispatch. It waits, ready and undispatched,
  from then to its dispatch (the earliest AICPU dispatch of its blocks).
- An engine (a core type: AIC, AIV, AICPU where present) is starved at an instant when one
  of its cores is idle (fewer of its cores run a kernel than ran any) and a task of its type
  waits, ready and undispatched. A MIX task waits for both of its engines.
- All engines starved: every engine is. Some engine starved: every engine that has ready
  work is (engines with no ready work are ignored), at least one has.
- Head overhead of a block: `min(start - dispatch, start - end of the last earlier block on
  its core)`, at least 0; tail overhead: `finish - end`.
- The AICPU scheduler loop, per thread and phase kind (where the capture has scheduler
  phases): time in each kind, idle gaps between phases, loops, tasks completed.

See docs/analysis.md for the words and the verdict's rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.tasks import TaskTable

__all__ = [
    "DEPENDENCY_BOUND_SHARE",
    "PERCENTILES",
    "SCHEDULER_BOUND_SHARE",
    "Distribution",
    "EngineStarvation",
    "Overhead",
    "SchedulerThread",
    "distribution",
    "overhead",
    "scheduler_loop",
    "verdict",
]

PERCENTILES = (10, 25, 50, 75, 90, 95, 99)
SCHEDULER_BOUND_SHARE = 0.10     # some engine starved this share of the makespan or more
DEPENDENCY_BOUND_SHARE = 0.50    # the static path is at least this share of the makespan


@dataclass(slots=True)
class Distribution:
    """P10..P99 (Simpler's rule: the value at index `min(int(n * p / 100), n - 1)` of the
    sorted values), max, mean and total, in ns of device time."""

    count: int
    percentiles: dict[str, float]
    max: float
    mean: float
    total: float


def distribution(cycles: np.ndarray, freq_hz: int) -> Distribution | None:
    n = len(cycles)
    if not n:
        return None
    v = np.sort(cycles.astype(np.float64) * (1e9 / freq_hz))
    pct = {f"p{p}": float(v[min(int(n * p / 100), n - 1)]) for p in PERCENTILES}
    return Distribution(n, pct, float(v[-1]), float(v.mean()), float(v.sum()))


@dataclass(slots=True)
class EngineStarvation:
    engine: str                # "AIC", "AIV", "AICPU"
    cores: int                 # cores of this type that ran a kernel
    starved_share: float       # of the makespan


@dataclass(slots=True)
class SchedulerThread:
    """One AICPU scheduler thread's loop: ns per phase kind, idle gaps, loops, tasks."""

    thread: int
    loops: int
    completed: int
    phase_ns: dict[str, float]
    idle_ns: float
    pop_hit: int | None = None
    pop_miss: int | None = None

    @property
    def total_ns(self) -> float:
        return sum(self.phase_ns.values()) + self.idle_ns


@dataclass(slots=True, eq=False)
class Overhead:
    """The overhead verdict's inputs and the head/tail distributions of one capture."""

    engines: list[EngineStarvation]
    all_starved_share: float | None
    some_starved_share: float | None
    head: Distribution | None
    tail: Distribution | None
    scheduler: list[SchedulerThread] = field(default_factory=list)
    timeline: dict | None = None      # cycles: "ts" and per counter its values (the view)
    notes: list[str] = field(default_factory=list)

    @property
    def avg_loop_ns(self) -> float | None:
        loops = sum(t.loops for t in self.scheduler)
        return sum(t.total_ns for t in self.scheduler) / loops if loops else None


def _task_dispatch(tt: TaskTable, row_dispatch: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Per task, the earliest dispatch of its blocks (-1 when none was joined)."""
    big = np.iinfo(np.int64).max
    disp = np.full(len(tt), big, dtype=np.int64)
    np.minimum.at(disp, tt.row_task[has], row_dispatch[has])
    return np.where(disp == big, -1, disp)


def _ready(tt: TaskTable, disp: np.ndarray, deps) -> np.ndarray:
    """Per task, when its last producer that ran ended, else its own dispatch."""
    ready = disp.copy()
    if deps is None or not len(deps.pred):
        return ready
    order = np.argsort(tt.ids, kind="stable")
    sorted_ids = tt.ids[order]
    pos_p = np.minimum(np.searchsorted(sorted_ids, deps.pred), len(sorted_ids) - 1)
    pos_s = np.minimum(np.searchsorted(sorted_ids, deps.succ), len(sorted_ids) - 1)
    ok = (sorted_ids[pos_p] == deps.pred) & (sorted_ids[pos_s] == deps.succ)
    p, s = order[pos_p[ok]], order[pos_s[ok]]
    keep = p != s
    p, s = p[keep], s[keep]
    last = np.full(len(tt), -1, dtype=np.int64)
    np.maximum.at(last, s, tt.end[p])
    return np.where(last >= 0, last, ready)


def overhead(tt: TaskTable, row_dispatch: np.ndarray, row_finish: np.ndarray,
             has_cpu: np.ndarray, deps, scheduler=None) -> Overhead:
    """The starvation shares (needs AICPU dispatch times and deps.json), head and tail
    overhead (needs dispatch and finish times) and the scheduler loop (needs phases)."""
    notes: list[str] = []
    sched = scheduler_loop(scheduler or [], tt.freq_hz)
    if not has_cpu.any():
        notes.append("no AICPU dispatch/finish records (swimlane level 1): no starvation "
                     "shares, no head/tail overhead")
        return Overhead([], None, None, None, None, sched, None, notes)
    if not has_cpu.all():
        notes.append(f"{int(np.count_nonzero(~has_cpu))} AICore blocks have no AICPU record: "
                     "left out of the head/tail overhead")
    head = _head(tt, row_dispatch, has_cpu)
    tail = distribution((row_finish - tt.row_end)[has_cpu], tt.freq_hz)
    if deps is None:
        notes.append("no deps.json: when a task became ready is unknown, so no starvation "
                     "shares and no verdict (run with enable_dep_gen)")
        return Overhead([], None, None, head, tail, sched, None, notes)
    engines, all_share, some_share, timeline = _starvation(tt, row_dispatch, has_cpu, deps)
    return Overhead(engines, all_share, some_share, head, tail, sched, timeline, notes)


def _head(tt: TaskTable, row_dispatch: np.ndarray, has: np.ndarray) -> Distribution | None:
    o = np.lexsort((tt.row_start, tt.row_core))
    core, st, en = tt.row_core[o], tt.row_start[o], tt.row_end[o]
    first = np.concatenate(([True], core[1:] != core[:-1]))
    prev_end = np.empty(len(o), dtype=np.int64)
    heads = np.flatnonzero(first)
    ends = np.append(heads[1:], len(o))
    for lo, hi in zip(heads, ends):                  # one step per core
        acc = np.maximum.accumulate(en[lo:hi])
        prev_end[lo] = st[lo]                        # no block before it: not a bound
        prev_end[lo + 1:hi] = acc[:-1]
    waited = st - row_dispatch[o]
    head = np.empty(len(o), dtype=np.int64)
    head[o] = np.maximum(0, np.where(first, waited, np.minimum(waited, st - prev_end)))
    return distribution(head[has], tt.freq_hz)


_ENGINE = {"aic": "AIC", "aiv": "AIV", "aicpu": "AICPU"}


def _starvation(tt: TaskTable, row_dispatch: np.ndarray, has: np.ndarray, deps):
    w0, w1 = int(tt.start.min()), int(tt.end.max())
    span = max(w1 - w0, 1)
    k = [len(np.unique(tt.row_core[tt.row_type == i])) for i in range(len(tt.core_types))]
    types = [i for i in range(len(tt.core_types)) if k[i]]
    disp = _task_dispatch(tt, row_dispatch, has)
    ready = _ready(tt, disp, deps)
    waits = disp >= 0
    r = np.clip(ready, w0, w1)
    dd = np.clip(disp, w0, w1)
    waits &= dd > r
    rs, re = np.clip(tt.row_start, w0, w1), np.clip(tt.row_end, w0, w1)
    runs = re > rs
    points = np.concatenate([np.array([w0, w1], dtype=np.int64), rs[runs], re[runs],
                             r[waits], dd[waits]])
    points.sort()                        # in place: np.unique would copy it once more
    fresh = np.empty(len(points), dtype=bool)
    fresh[0] = True
    np.not_equal(points[1:], points[:-1], out=fresh[1:])
    ts = points[fresh]
    del points, fresh
    m = len(ts)

    def steps(at_on: np.ndarray, at_off: np.ndarray) -> np.ndarray:
        """A count that rises at `at_on` and falls at `at_off`, on each segment of `ts`
        (int32 throughout: 1M tasks make ~3M segments, and the view keeps these)."""
        delta = np.zeros(m, dtype=np.int32)
        np.add.at(delta, np.searchsorted(ts, at_on), 1)
        np.subtract.at(delta, np.searchsorted(ts, at_off), 1)
        return np.cumsum(delta[:-1], dtype=np.int32, out=delta[:-1])

    seg = np.diff(ts)
    busy, wait, starved = {}, {}, {}
    for i in types:
        mine = runs & (tt.row_type == i)
        busy[i] = steps(rs[mine], re[mine])
        for_me = waits & ((tt.types >> i) & 1).astype(bool)
        wait[i] = steps(r[for_me], dd[for_me])
        starved[i] = ((k[i] - busy[i]) > 0) & (wait[i] > 0)
    all_st = np.logical_and.reduce([starved[i] for i in types]) if types else np.zeros(m - 1, bool)
    working = [wait[i] > 0 for i in types]
    any_work = np.logical_or.reduce(working) if types else np.zeros(m - 1, bool)
    some = any_work & np.logical_and.reduce([~(wait[i] > 0) | ((k[i] - busy[i]) > 0)
                                             for i in types])

    def share(mask: np.ndarray) -> float:
        return float(seg[mask].sum()) / span

    engines = [EngineStarvation(_ENGINE.get(tt.core_types[i], tt.core_types[i].upper()), k[i],
                                share(starved[i])) for i in types]
    timeline = {"ts": ts, "all engines starved": all_st.astype(np.int8),
                "some engine starved": some.astype(np.int8)}
    for e, i in zip(engines, types):
        timeline[f"{e.engine} starved"] = starved[i].astype(np.int8)
        timeline[f"{e.engine} ready, undispatched"] = wait[i]
        timeline[f"{e.engine} idle cores"] = (k[i] - busy[i]).astype(np.int32)
    return engines, share(all_st), share(some), timeline


def scheduler_loop(streams, freq_hz: int) -> list[SchedulerThread]:
    """Per AICPU scheduler thread (`read_simpler.PhaseColumns`, device cycles): ns per phase
    kind, idle gaps between its phases, loops (its highest `loop_iter`), tasks completed
    (`tasks_processed` of its `complete` phases), pop hits and misses (dispatch phases)."""
    scale = 1e9 / freq_hz
    out = []
    for s in streams:
        if not len(s.start):
            continue
        o = np.argsort(s.start, kind="stable")
        st, en, kind = s.start[o], s.end[o], s.kind[o]
        dur = (en - st).astype(np.float64)
        sums = np.bincount(kind, weights=dur, minlength=len(s.kinds))
        reach = np.maximum.accumulate(en)
        idle = float(np.maximum(0, st[1:] - reach[:-1]).sum()) * scale

        loops = _int_arg(s, "loop_iter", o)
        done = _int_arg(s, "tasks_processed", o)
        hit, miss = _int_arg(s, "pop_hit", o), _int_arg(s, "pop_miss", o)
        complete = kind == (s.kinds.index("complete") if "complete" in s.kinds else -1)
        dispatch = kind == (s.kinds.index("dispatch") if "dispatch" in s.kinds else -1)
        out.append(SchedulerThread(
            s.thread, int(loops.max()) if loops is not None else 0,
            int(done[complete].sum()) if done is not None else 0,
            {name: float(v) * scale for name, v in zip(s.kinds, sums.tolist())}, idle,
            int(hit[dispatch].sum()) if hit is not None else None,
            int(miss[dispatch].sum()) if miss is not None else None))
    return out


def _int_arg(stream, key: str, order: np.ndarray) -> np.ndarray | None:
    """An int column of a phase stream in `order`, 0 where a record lacks it."""
    c = stream.arg(key)
    if c is None or not isinstance(c.values, np.ndarray) or c.values.ndim != 1:
        return None
    v = c.values[order]
    return np.where(c.present[order], v, 0) if c.present is not None else v


def verdict(ov: Overhead | None, static_share: float | None) -> tuple[str | None, str]:
    """The one-word verdict and the rule that gave it (first rule that holds):
    scheduler-bound when some engine was starved at least 10% of the makespan; else
    dependency-bound when the static path is at least 50% of the makespan; else
    compute-bound."""
    if ov is None or ov.some_starved_share is None or static_share is None:
        return None, "no verdict: it needs AICPU dispatch records and deps.json"
    some = ov.some_starved_share
    lim_s, lim_d = SCHEDULER_BOUND_SHARE, DEPENDENCY_BOUND_SHARE
    if some >= lim_s:
        return "scheduler-bound", (f"some engine starved {some:.1%} of the makespan "
                                   f"(>= {lim_s:.0%}): free cores waited for the scheduler")
    if static_share >= lim_d:
        return "dependency-bound", (f"some engine starved {some:.1%} (< {lim_s:.0%}) and the "
                                    f"static path is {static_share:.1%} of the makespan "
                                    f"(>= {lim_d:.0%}): the dependency chain sets the time")
    return "compute-bound", (f"some engine starved {some:.1%} (< {lim_s:.0%}) and the static "
                             f"path is {static_share:.1%} of the makespan (< {lim_d:.0%}): "
                             "the work itself, spread over the cores, sets the time")
