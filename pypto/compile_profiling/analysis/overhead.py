"""Is the scheduler the bottleneck? The overhead model of Simpler's `sched_overhead_analysis`.

- Window: first AICore start to last AICore end (the makespan), device cycles.
- A task is ready when the last of its producers that ran ended (deps.json edges); one
  with no producer that ran is ready from its submission (a host-built graph: the run's
  first dispatch; a device orchestrator: its `submit` phase), or, where that is unknown, at
  its own dispatch. It waits, ready and undispatched,
  from then to its dispatch (the earliest AICPU dispatch of its blocks).
- An engine (a core type: AIC, AIV, AICPU where present) is starved at an instant when one
  of its cores is idle (fewer of its cores run a kernel than ran any) and a task of its type
  waits, ready and undispatched. A MIX task waits for both of its engines.
- All engines starved: every engine is. Some engine starved: every engine that has ready
  work is (engines with no ready work are ignored), at least one has.
- Head overhead of a block: `min(start - dispatch, start - end of the last earlier block on
  its core)`, at least 0; tail overhead: `finish - end`.
- The AICPU scheduler loop, per thread and phase kind (where the capture has scheduler
  phases): time in each kind, a phase nested in another (`resolve` inside `complete`) taken
  out of its container's time so nothing counts twice, idle gaps between phases, loops,
  block finishes seen (`tasks_processed` of `complete`) and tasks retired (a task is the
  thread's that saw its last block finish, as Simpler counts them).
- Task switches (Simpler's "aicore switch"): on a core, the gap from a block's end to the
  next block's start when that next block was dispatched before the first ended, per core
  (never summed over cores: switches on different cores overlap), with Simpler's makespan
  bound [least per-core total, sum over engines of each engine's least per-core total].
- Fan-out / fan-in per task that ran: its unique consumers and producers in deps.json.

The verdict is `verdict.decide`'s, from the critical path; starvation is its evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.tasks import TaskTable, engine_name

__all__ = [
    "PERCENTILES",
    "Distribution",
    "EngineStarvation",
    "EngineSwitches",
    "Overhead",
    "SchedulerThread",
    "distribution",
    "exclusive_phase_time",
    "fan_degrees",
    "overhead",
    "scheduler_loop",
    "task_switches",
]

PERCENTILES = (10, 25, 50, 75, 90, 95, 99)


@dataclass(slots=True)
class Distribution:
    """P10..P99 (Simpler's rule: the value at index `min(int(n * p / 100), n - 1)` of the
    sorted values), max, mean and total, in ns of device time."""

    count: int
    percentiles: dict[str, float]
    max: float
    mean: float
    total: float


def distribution(cycles: np.ndarray, freq_hz: int | None) -> Distribution | None:
    """The distribution of `cycles` in ns (`freq_hz` None: of plain counts)."""
    n = len(cycles)
    if not n:
        return None
    v = np.sort(cycles.astype(np.float64) * (1.0 if freq_hz is None else 1e9 / freq_hz))
    pct = {f"p{p}": float(v[min(int(n * p / 100), n - 1)]) for p in PERCENTILES}
    return Distribution(n, pct, float(v[-1]), float(v.mean()), float(v.sum()))


@dataclass(slots=True)
class EngineStarvation:
    engine: str                # "AIC", "AIV", "AICPU"
    cores: int                 # cores of this type that ran a kernel
    starved_share: float       # of the makespan


@dataclass(slots=True)
class SchedulerThread:
    """One AICPU scheduler thread's loop: ns per phase kind with nested phases taken out of
    their container (`nested`: kind -> the kind it ran inside), idle gaps, loops, block
    finishes it saw, tasks it retired (None: no `core_to_thread` to tell)."""

    thread: int
    loops: int
    finishes: int
    tasks: int | None
    phase_ns: dict[str, float]
    idle_ns: float
    nested: dict[str, str] = field(default_factory=dict)
    pop_hit: int | None = None
    pop_miss: int | None = None

    @property
    def busy_ns(self) -> float:
        return sum(self.phase_ns.values())

    @property
    def total_ns(self) -> float:
        return self.busy_ns + self.idle_ns


@dataclass(slots=True)
class EngineSwitches:
    """Task switches of one engine's cores (ns): per-core totals and the events."""

    engine: str
    cores: int
    per_core_min: float
    per_core_mean: float
    per_core_max: float
    events: int
    mean_event: float


@dataclass(slots=True, eq=False)
class Overhead:
    """The starvation shares, the head/tail distributions, the scheduler loop, task
    switches and fan-in/out of one capture."""

    engines: list[EngineStarvation]
    all_starved_share: float | None
    some_starved_share: float | None
    head: Distribution | None
    tail: Distribution | None
    scheduler: list[SchedulerThread] = field(default_factory=list)
    timeline: dict | None = None      # cycles: "ts" and per counter its values (the view)
    notes: list[str] = field(default_factory=list)
    switches: list[EngineSwitches] = field(default_factory=list)
    switch_bound_ns: tuple[float, float] | None = None
    fan_out: Distribution | None = None    # consumers per task (counts)
    fan_in: Distribution | None = None     # producers per task (counts)

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


def _ready(tt: TaskTable, disp: np.ndarray, deps, submit: np.ndarray | None = None
           ) -> np.ndarray:
    """Per task, when its last producer that ran ended; a task with none that ran, from its
    submission where that is known, else from its own dispatch."""
    ready = disp.copy()
    if submit is not None:
        ready = np.where(submit >= 0, np.minimum(submit, np.where(disp >= 0, disp, submit)),
                         ready)
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
             has_cpu: np.ndarray, deps, scheduler=None, core_to_thread=None,
             submit: np.ndarray | None = None) -> Overhead:
    """The starvation shares (needs AICPU dispatch times and deps.json), head and tail
    overhead and task switches (need dispatch and finish times), the scheduler loop (needs
    phases) and fan-in/out (needs deps.json)."""
    notes: list[str] = []
    retired = _retired_by_thread(tt, row_finish, has_cpu, core_to_thread)
    sched = scheduler_loop(scheduler or [], tt.freq_hz, retired)
    fan_out, fan_in = fan_degrees(tt, deps)
    if not has_cpu.any():
        notes.append("no AICPU dispatch/finish records (swimlane level 1): no starvation "
                     "shares, no head/tail overhead, no task switches")
        return Overhead([], None, None, None, None, sched, None, notes, fan_out=fan_out,
                        fan_in=fan_in)
    if not has_cpu.all():
        notes.append(f"{int(np.count_nonzero(~has_cpu))} AICore blocks have no AICPU record: "
                     "left out of the head/tail overhead and the task switches")
    head = _head(tt, row_dispatch, has_cpu)
    tail = distribution((row_finish - tt.row_end)[has_cpu], tt.freq_hz)
    switches, bound = task_switches(tt, row_dispatch, has_cpu)
    if deps is None:
        notes.append("no deps.json: when a task became ready is unknown, so no starvation "
                     "shares (run with enable_dep_gen)")
        return Overhead([], None, None, head, tail, sched, None, notes, switches, bound)
    engines, all_share, some_share, timeline = _starvation(tt, row_dispatch, has_cpu, deps,
                                                           submit)
    return Overhead(engines, all_share, some_share, head, tail, sched, timeline, notes,
                    switches, bound, fan_out, fan_in)


def _retired_by_thread(tt: TaskTable, row_finish: np.ndarray, has: np.ndarray,
                       core_to_thread) -> dict[int, int] | None:
    """Tasks per scheduler thread, each counted by the thread that saw its last block
    finish (Simpler's rule); None without `core_to_thread` or AICPU records."""
    if not core_to_thread or not has.any():
        return None
    c2t = np.asarray(core_to_thread, dtype=np.int64)
    rows = np.flatnonzero(has)
    # per task its row with the latest finish (the first such row in record order)
    o = rows[np.lexsort((rows, -row_finish[rows], tt.row_task[rows]))]
    t = tt.row_task[o]
    last = o[np.concatenate(([True], t[1:] != t[:-1]))]
    core = tt.row_core[last]
    ok = (core >= 0) & (core < len(c2t))
    thread = c2t[core[ok]]
    thread = thread[thread >= 0]
    ids, counts = np.unique(thread, return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist()))


def task_switches(tt: TaskTable, row_dispatch: np.ndarray, has: np.ndarray
                  ) -> tuple[list[EngineSwitches], tuple[float, float] | None]:
    """Per engine, the task switches of its cores (Simpler's aicore switch: on a core, the
    gap `[end, next start]` when the next block was dispatched before `end`), and the
    makespan switch bound [least per-core total, sum of each engine's least per-core
    total], all in ns."""
    if not len(tt.row_task):
        return [], None
    scale = 1e9 / tt.freq_hz
    o = np.lexsort((tt.row_end, tt.row_start, tt.row_core))
    core, st, en, disp, ok = (tt.row_core[o], tt.row_start[o], tt.row_end[o],
                              row_dispatch[o], has[o])
    w0, w1 = int(tt.start.min()), int(tt.end.max())
    same = core[1:] == core[:-1]
    gap = np.minimum(st[1:], w1) - np.maximum(en[:-1], w0)
    switch = same & ok[1:] & ok[:-1] & (gap > 0) & (disp[1:] < en[:-1])
    cores = np.unique(core)
    per_core = np.zeros(len(cores), dtype=np.float64)
    np.add.at(per_core, np.searchsorted(cores, core[1:][switch]),
              gap[switch].astype(np.float64) * scale)
    events_core = core[1:][switch]
    type_of = tt.row_type[o][np.searchsorted(core, cores)]
    out, minima = [], []
    for i, name in enumerate(tt.core_types):
        mine = type_of == i
        if not mine.any():
            continue
        totals = per_core[mine]
        ev = np.isin(events_core, cores[mine])
        n_ev = int(np.count_nonzero(ev))
        ev_ns = float(gap[switch][ev].sum()) * scale
        out.append(EngineSwitches(engine_name(name), int(mine.sum()),
                                  float(totals.min()), float(totals.mean()),
                                  float(totals.max()), n_ev, ev_ns / n_ev if n_ev else 0.0))
        minima.append(float(totals.min()))
    bound = (float(per_core.min()), float(sum(minima))) if len(per_core) else None
    return out, bound


def fan_degrees(tt: TaskTable, deps) -> tuple[Distribution | None, Distribution | None]:
    """Per task that ran, its unique consumers (fan-out) and producers (fan-in) in deps.json
    (edges from a task to itself left out), as distributions of counts."""
    if deps is None or not len(tt):
        return None, None
    ran = np.sort(tt.ids)
    keep = deps.pred != deps.succ
    p, s = deps.pred[keep], deps.succ[keep]

    def per_task(ends: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(ran, ends), len(ran) - 1)
        hit = ran[pos] == ends
        return np.bincount(pos[hit], minlength=len(ran))

    return distribution(per_task(p), None), distribution(per_task(s), None)


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


def _starvation(tt: TaskTable, row_dispatch: np.ndarray, has: np.ndarray, deps,
                submit: np.ndarray | None = None):
    w0, w1 = int(tt.start.min()), int(tt.end.max())
    span = max(w1 - w0, 1)
    k = [len(np.unique(tt.row_core[tt.row_type == i])) for i in range(len(tt.core_types))]
    types = [i for i in range(len(tt.core_types)) if k[i]]
    disp = _task_dispatch(tt, row_dispatch, has)
    ready = _ready(tt, disp, deps, submit)
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

    engines = [EngineStarvation(engine_name(tt.core_types[i]), k[i],
                                share(starved[i])) for i in types]
    timeline = {"ts": ts, "all engines starved": all_st.astype(np.int8),
                "some engine starved": some.astype(np.int8)}
    for e, i in zip(engines, types):
        timeline[f"{e.engine} starved"] = starved[i].astype(np.int8)
        timeline[f"{e.engine} ready, undispatched"] = wait[i]
        timeline[f"{e.engine} idle cores"] = (k[i] - busy[i]).astype(np.int32)
    return engines, share(all_st), share(some), timeline


def scheduler_loop(streams, freq_hz: int, retired: dict[int, int] | None = None
                   ) -> list[SchedulerThread]:
    """Per AICPU scheduler thread (`read_simpler.PhaseColumns`, device cycles): ns per phase
    kind (nested phases out of their container), idle gaps between its phases, loops (its
    highest `loop_iter`), block finishes (`tasks_processed` of its `complete` phases), tasks
    retired (`retired`: by thread index), pop hits and misses (dispatch phases)."""
    scale = 1e9 / freq_hz
    out = []
    for s in streams:
        if not len(s.start) or getattr(s, "producer", "aicpu") != "aicpu":
            continue
        o = np.argsort(s.start, kind="stable")
        st, en, kind = s.start[o], s.end[o], s.kind[o]
        excl, idle, nested = exclusive_phase_time(st, en, kind, len(s.kinds))
        loops = _int_arg(s, "loop_iter", o)
        done = _int_arg(s, "tasks_processed", o)
        hit, miss = _int_arg(s, "pop_hit", o), _int_arg(s, "pop_miss", o)
        complete = kind == (s.kinds.index("complete") if "complete" in s.kinds else -1)
        dispatch = kind == (s.kinds.index("dispatch") if "dispatch" in s.kinds else -1)
        out.append(SchedulerThread(
            s.thread, int(loops.max()) if loops is not None else 0,
            int(done[complete].sum()) if done is not None else 0,
            None if retired is None else retired.get(s.thread, 0),
            {name: float(v) * scale for name, v in zip(s.kinds, excl.tolist())},
            idle * scale, {s.kinds[a]: s.kinds[b] for a, b in nested},
            int(hit[dispatch].sum()) if hit is not None else None,
            int(miss[dispatch].sum()) if miss is not None else None))
    return out


def exclusive_phase_time(st: np.ndarray, en: np.ndarray, kind: np.ndarray, kinds: int
                         ) -> tuple[np.ndarray, int, set[tuple[int, int]]]:
    """One thread's phases sorted by start: (cycles per kind with every instant counted
    once, for the innermost phase running then; idle cycles between phases; the (inner,
    outer) kind pairs that nested). Whole columns for the usual shapes (phases one after
    another, or one level of nesting); a plain sweep for deeper nesting or partial
    overlaps, which only a malformed capture has."""
    n = len(st)
    if not n:
        return np.zeros(kinds, dtype=np.int64), 0, set()
    run = np.maximum.accumulate(en)
    before = np.concatenate(([st[0]], run[:-1]))
    first = np.concatenate(([True], np.zeros(n - 1, dtype=bool)))
    nested = ~first & (en <= before)
    partial = ~first & ~nested & (st < before)
    idle = int(np.maximum(0, st[1:] - before[1:]).sum()) if n > 1 else 0
    inner_st, inner_en = st[nested], en[nested]
    deep = len(inner_en) > 1 and bool(
        ((inner_en[1:] <= np.maximum.accumulate(inner_en)[:-1]) &
         (inner_st[1:] < np.maximum.accumulate(inner_en)[:-1])).any())
    if partial.any() or deep:
        return _exclusive_sweep(st, en, kind, kinds, idle)
    at = np.arange(n)
    holder = np.maximum.accumulate(np.where(en > np.concatenate(([en[0] - 1], run[:-1])),
                                            at, 0))
    container = np.concatenate(([0], holder[:-1]))[nested]
    own = (en - st).astype(np.int64)
    sub = np.bincount(container, weights=(inner_en - inner_st), minlength=n).astype(np.int64)
    excl_rows = own - sub
    excl = np.bincount(kind, weights=excl_rows, minlength=kinds).astype(np.int64)
    pairs = set(zip(kind[nested].tolist(), kind[container].tolist()))
    return excl, idle, pairs


def _exclusive_sweep(st, en, kind, kinds: int, idle: int):
    """The exact sweep behind `exclusive_phase_time`: a stack of open phases; each instant
    goes to the phase that started last among those still running."""
    excl = [0] * kinds
    pairs: set[tuple[int, int]] = set()
    stack: list[tuple[int, int]] = []
    cur = int(st[0])
    for s, e, k in zip(st.tolist(), en.tolist(), kind.tolist()):
        while stack and stack[-1][0] <= e:     # ended, or overlapped past its end
            end, k0 = stack.pop()
            stop = min(end, s)
            if stop > cur:
                excl[k0] += stop - cur
                cur = stop
        if stack:
            if s > cur:
                excl[stack[-1][1]] += s - cur
            pairs.add((k, stack[-1][1]))
        cur = max(cur, s)
        stack.append((e, k))
    while stack:
        end, k0 = stack.pop()
        if end > cur:
            excl[k0] += end - cur
            cur = end
    return np.array(excl, dtype=np.int64), idle, pairs


def _int_arg(stream, key: str, order: np.ndarray) -> np.ndarray | None:
    """An int column of a phase stream in `order`, 0 where a record lacks it."""
    c = stream.arg(key)
    if c is None or not isinstance(c.values, np.ndarray) or c.values.ndim != 1:
        return None
    v = c.values[order]
    return np.where(c.present[order], v, 0) if c.present is not None else v
