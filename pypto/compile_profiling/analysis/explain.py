"""Explain a run: per capture (rank), the critical paths, what filled the path's stalls,
the overhead figures, the end to end tiling and the verdict that follows from them, from
what the merge reads and places (`read_inputs`, `place`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.critical_path import (
    TOLERANCE_CYCLES,
    DependencyEdges,
    ObservedPath,
    StaticPath,
    dependency_edges,
    observed_path,
    static_path,
)
from pypto.compile_profiling.analysis.end_to_end import EndToEnd, end_to_end
from pypto.compile_profiling.analysis.overhead import Overhead, overhead
from pypto.compile_profiling.analysis.replay import ReplayInput, replay_input
from pypto.compile_profiling.analysis.task_slots import TaskSlot, task_slots
from pypto.compile_profiling.analysis.tasks import (
    TaskTable,
    engine_name,
    task_dispatch_finish,
    task_submission,
    task_table,
)
from pypto.compile_profiling.analysis.verdict import (
    EngineUse,
    Verdict,
    VerdictKind,
    decide,
    engine_use,
    host_side,
    starved_on_path,
)
from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.lay_out.device_labels import task_displays
from pypto.compile_profiling.trace_merge.lay_out.device_rows import DeviceRows, device_rows
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan, Plan
from pypto.errors import TraceInputError

__all__ = ["FamilyRow", "RankAnalysis", "RunAnalysis", "analyze", "analyze_capture",
           "analyze_plan", "kernel_family", "task_families"]

_FAMILY = re.compile(r"(_\d+)?(_(?:aic|aiv))?$")


def kernel_family(name: str) -> str:
    """A kernel's family, as Simpler folds them: a trailing block index and/or `_aic`/`_aiv`
    stripped (`gate_0_aic`, `exp_up_mm_2` -> `gate`, `exp_up_mm`)."""
    return _FAMILY.sub("", name, count=1) or name


def task_families(tt: TaskTable, names: dict[int, str] | None) -> tuple[list[str], np.ndarray]:
    """Each task's kernel family: the families' names, and per task the index of its own
    (NumPy over the tasks: one family lookup per distinct kernel)."""
    if not len(tt):
        return [], np.zeros(0, np.int64)
    _, first, kernel_of_task = np.unique(tt.kernel, return_index=True, return_inverse=True)
    families = [kernel_family(k) for k in tt.kernel_names(first, names)]
    unique = list(dict.fromkeys(families))
    code_of_kernel = np.array([unique.index(f) for f in families], np.int64)
    return unique, code_of_kernel[kernel_of_task.reshape(-1)]


@dataclass(slots=True)
class FamilyRow:
    family: str
    compute_cycles: int
    stall_cycles: int
    tasks: int


@dataclass(slots=True, eq=False, kw_only=True)
class RankAnalysis:
    """One capture (rank, or dispatch of a rank) explained."""

    label: str
    source: str
    level: int
    freq_hz: int
    clock: str                        # "calibrated ±636 ns", "contained -1050 ns/+333.8 ms"
    placement: PlacementStatus
    estimated: bool                   # not calibrated
    uncertainty_ns: float | None      # the largest error of the drawn placement
    offset_ns: float | None           # drawn: device ns = cycles * 1e9 / f + offset
    offset_lo_ns: float | None        # the interval the evidence allows (None: unbounded)
    offset_hi_ns: float | None
    tasks: TaskTable
    edges: DependencyEdges
    has_deps: bool
    has_cpu: bool                     # AICPU dispatch/finish records (level >= 2)
    static: StaticPath | None
    observed: ObservedPath | None
    overhead: Overhead | None         # None: not computed (`analyze_plan(overhead=False)`)
    engines: list[EngineUse]          # per engine: its cores' busy share of the makespan
    starvation: list[tuple[str, float, int]]   # (engine, starved share, cycles on the path)
    verdict: Verdict
    end_to_end: EndToEnd | None
    names: dict[int, str] | None
    notes: list[str] = field(default_factory=list)     # one line each, said once
    slots: list[TaskSlot] = field(default_factory=list)   # Simpler's task-timing slots
    host_log_dropped: dict[int, int] = field(default_factory=dict)   # pid -> records lost
    capture_metadata: dict = field(default_factory=dict)   # the records file's, as read
    replay: ReplayInput | None = None     # what its replays start from (analysis.replay)
    no_replay: str | None = None          # why it has none (one line)

    @property
    def makespan_cycles(self) -> int:
        return self.observed.makespan if self.observed is not None else 0

    def ns(self, cycles) -> float:
        return float(cycles) * 1e9 / self.freq_hz

    def share(self, cycles) -> float:
        m = self.makespan_cycles
        return float(cycles) / m if m else 0.0

    def labels(self, tasks: np.ndarray) -> tuple[list[str], list[str], list[str]]:
        """(kernel, display `t3`, label `GEMM(t3)`) of each task, as the timeline names
        them."""
        kernels = self.tasks.kernel_names(tasks, self.names)
        displays = task_displays(self.tasks.ids[tasks])
        return kernels, displays, [f"{k if k != 'unknown' else 'task'}({d})"
                                   for k, d in zip(kernels, displays)]

    def families(self) -> list[FamilyRow]:
        """Time on the observed path by kernel family, most compute first."""
        path = self.observed
        if path is None:
            return []
        kernels, _, _ = self.labels(path.tasks)
        fam = np.array([kernel_family(k) for k in kernels], dtype=object)
        rows = []
        for f in dict.fromkeys(fam.tolist()):
            sel = fam == f
            rows.append(FamilyRow(f, int(path.compute[sel].sum()), int(path.stall[sel].sum()),
                                  int(sel.sum())))
        return sorted(rows, key=lambda r: (-r.compute_cycles, r.family))


@dataclass(slots=True, eq=False)
class RunAnalysis:
    ranks: list[RankAnalysis]
    warnings: list[str]


def analyze_capture(plan: Plan, capture_plan: CapturePlan, rows: DeviceRows | None = None, *,
                    tolerance_cycles: int = TOLERANCE_CYCLES,
                    with_overhead: bool = True, with_verdict: bool = True
                    ) -> RankAnalysis | None:
    """One placed capture (None without AICore records). `rows`: its `DeviceRows` when the
    layout made them already. `with_overhead=False` leaves out the overhead figures (half
    the analysis's CPU): the verdict is the same, without the starvation evidence.
    `with_verdict=False` leaves out the verdict's replays and the end-to-end tiling (what
    `whatif` needs is the path and the replay input; the verdict stays `unknown`)."""
    rec = capture_plan.capture.records
    if rec is None or capture_plan.device is None:
        return None
    rows = rows if rows is not None else device_rows(capture_plan)
    if rows is None:
        return None
    tt = task_table(rows, rec)
    has = rows.has_cpu
    jr = np.where(has, rows.joined, 0)
    del rows          # what follows needs only these: 1M tasks, ~80 MB of rows let go
    cpu = rec.aicpu
    disp = cpu["dispatch_cycles"][jr] if has.any() else np.zeros(len(tt.row_task), np.int64)
    fin = cpu["finish_cycles"][jr] if has.any() else np.zeros(len(tt.row_task), np.int64)
    del jr
    deps = capture_plan.capture.deps
    notes: list[str] = []
    edges = dependency_edges(tt, deps, tolerance_cycles)
    path_where = deps.path if deps is not None else rec.path
    _edge_notes(edges, path_where, notes)
    has_deps = deps is not None
    static = static_path(tt, edges) if has_deps else None
    task_disp, task_fin = task_dispatch_finish(tt, disp, fin, has)
    submit = task_submission(tt, rec, task_disp)
    obs = observed_path(tt, edges, tolerance_cycles, task_disp, task_fin, submit)
    if not has_deps:
        notes.append(
            f"{capture_plan.capture.files.directory}: no deps.json (level {rec.level} capture or "
            "dep_gen off): no static path; the observed path follows resource "
            "predecessors (the previous task on the core) only"
        )
    ov = overhead(tt, disp, fin, has, deps, rec.scheduler, rec.core_to_thread, submit) \
        if with_overhead else None
    dev = capture_plan.device
    names = (
        capture_plan.capture.name_map.names if capture_plan.capture.name_map is not None else None
    )
    iv = dev.interval
    ra = RankAnalysis(
        label=capture_plan.label, source=rec.path, level=rec.level, freq_hz=rec.freq_hz,
        clock=dev.label, placement=dev.status, estimated=dev.status is not PlacementStatus.CALIBRATED,
        uncertainty_ns=dev.uncertainty_ns,
        offset_ns=dev.drawn_offset_ns if dev.drawn_offset_ns is not None else
        float(dev.offset_ns),
        offset_lo_ns=dev.offset_lo_ns, offset_hi_ns=dev.offset_hi_ns,
        tasks=tt, edges=edges, has_deps=has_deps, has_cpu=bool(has.any()), static=static,
        observed=obs, overhead=ov, engines=engine_use(tt),
        starvation=_starvation_on_path(tt, obs, ov) if ov is not None else [],
        verdict=Verdict(kind="unknown", rule="not decided yet"), end_to_end=None,
        names=names, notes=notes, capture_metadata=rec.metadata)
    if iv is None and dev.status is not PlacementStatus.CALIBRATED:
        notes.append(f"{capture_plan.capture.files.directory}: device time placed with no "
                     "bound: where host time ends and device time begins is unknown")
    host = None
    if obs is not None and len(obs.tasks) and with_verdict:
        _end_to_end_of(ra, plan, capture_plan, disp, has)
        host = _host_runs(ra)
    made = replay_input(tt, disp, fin, has, edges, rec, task_families(tt, names))
    if isinstance(made, str):
        ra.no_replay = made
    else:
        ra.replay = made
    ra.verdict = _verdict_of(ra, host) if with_verdict else Verdict(
        kind=VerdictKind.UNKNOWN, rule="not decided (asked without the verdict)")
    ra.slots = task_slots(capture_plan, task_disp, task_fin)
    _host_log_drops(ra, capture_plan)
    return ra


def _verdict_of(ra: RankAnalysis, host) -> Verdict:
    """The verdict: each candidate cause removed in a replay (`verdict.decide`)."""
    static = ra.static
    return decide(ra.tasks, ra.observed, has_cpu=ra.has_cpu, has_deps=ra.has_deps,
                  replay_input=ra.replay, no_replay=ra.no_replay,
                  static_cycles=static.length_cycles if static is not None else None,
                  kept_edges=ra.edges.kept, starvation=ra.starvation, host=host)


def _end_to_end_of(ra: RankAnalysis, plan: Plan, capture_plan: CapturePlan, disp: np.ndarray,
                   has: np.ndarray) -> None:
    """`ra.end_to_end`: the run tiled from its host side to the path's first task, cut at
    that task's own dispatch."""
    tt, obs = ra.tasks, ra.observed
    first = obs.tasks[:1]
    kernels, _, labels = ra.labels(first)
    kernel = kernels[0] if kernels[0] != "unknown" else None
    mine = np.flatnonzero((tt.row_task == first[0]) & has)
    first_dispatch = None if not len(mine) else int(disp[mine[np.argmin(tt.row_start[mine])]])
    ra.end_to_end = end_to_end(plan, capture_plan, tt, obs, labels[0], kernel, first_dispatch)


def _host_log_drops(ra: RankAnalysis, capture_plan: CapturePlan) -> None:
    """Simpler's [HOSTLOG_DROPS] in the run's log: its host side is incomplete, said in the
    notes and, where the verdict rests on the host side, as evidence."""
    log = capture_plan.window.log if capture_plan.window is not None else \
        capture_plan.capture.run_log
    if log is None or not log.host_log_drops:
        return
    ra.host_log_dropped = {pid: d.total for pid, d in sorted(log.host_log_drops.items())}
    lost = ", ".join(f"{n} by pid {pid}" for pid, n in ra.host_log_dropped.items())
    line = (f"the run log lost host records ({lost}; Simpler's [HOSTLOG_DROPS]): the host side "
            "is incomplete, and figures from it may miss time")
    ra.notes.append(f"{log.path}: {line}")
    if ra.verdict.kind == "host-bound" or ra.end_to_end is not None:
        ra.verdict.evidence.append(line)


def _starvation_on_path(tt: TaskTable, obs: ObservedPath | None, ov: Overhead
                        ) -> list[tuple[str, float, int]]:
    """Per engine: its starved share of the makespan, and the cycles of it that fell in the
    path's stalls before tasks that ran on that engine."""
    tl = ov.timeline
    if tl is None or obs is None:
        return []
    out = []
    for i, e in enumerate(ov.engines):
        flag = tl.get(f"{e.engine} starved")
        if flag is None:
            continue
        bit = tt.core_types.index(next(t for t in tt.core_types
                                       if engine_name(t) == e.engine))
        on = ((tt.types[obs.tasks] >> bit) & 1).astype(bool) & (obs.stall > 0)
        cycles = starved_on_path(tl["ts"], flag, obs.frontier[on], (obs.frontier +
                                                                    obs.stall)[on])
        out.append((e.engine, e.starved_share, cycles))
    return out


def _host_runs(ra: RankAnalysis) -> dict | None:
    """The end-to-end evidence for the host-bound rule: the tiling at the drawn placement
    and at each end of the offset interval."""
    e2e = ra.end_to_end
    if e2e is None:
        return None
    return host_side([e2e, *e2e.alternatives], float(e2e.end_ns - e2e.device_start_ns))


def _edge_notes(d: DependencyEdges, where: str, notes: list[str]) -> None:
    if d.missing_tasks:
        notes.append(f"{where}: {d.missing_tasks} of its {d.deps_tasks} tasks are missing "
                     "from the records (no AICore block ran them): left out with their edges")
    if d.no_block_tasks:
        notes.append(f"{where}: {d.no_block_tasks} tasks have no blocks (no kernel: dummy or "
                     "alloc tasks): left out with their edges")
    if d.cycle_tasks:
        names = task_displays(np.array(d.cycle_example))
        ring = names + names[:1] if len(names) <= 8 else \
            names[:4] + [f"... ({len(names) - 7} more)"] + names[-3:] + names[:1]
        notes.append(f"{where}: dependency cycle of {len(names)} tasks ({' -> '.join(ring)}; "
                     f"{d.cycle_tasks} tasks on or behind cycles): only edges that run forward "
                     "in time are kept")
    if d.self_loops:
        notes.append(f"{where}: {d.self_loops} edges from a task to itself: ignored")


def analyze_plan(plan: Plan, *, tolerance_cycles: int = TOLERANCE_CYCLES,
                 rows: dict[int, DeviceRows] | None = None,
                 with_overhead: bool = True, with_verdict: bool = True) -> RunAnalysis:
    """Every capture of a placed merge (`rows`: `DeviceRows` by `capture plan`;
    `with_overhead`, `with_verdict`: as `analyze_capture`)."""
    out, warnings = [], list(plan.warnings)
    for cp in plan.captures:
        r = (rows or {}).get(cp)
        ra = analyze_capture(plan, cp, r, tolerance_cycles=tolerance_cycles,
                             with_overhead=with_overhead, with_verdict=with_verdict)
        if ra is not None:
            out.append(ra)
            warnings.extend(ra.notes)
        elif cp.capture.records is not None:
            warnings.append(f"{cp.capture.records.path}: no AICore task records: nothing to "
                            "analyse")
    return RunAnalysis(out, list(dict.fromkeys(warnings)))


def analyze(inputs: Iterable[str | os.PathLike], *, offset_us: float | None = None,
            tolerance_cycles: int = TOLERANCE_CYCLES,
            progress: Callable[[str], None] | None = None,
            with_overhead: bool = True, with_verdict: bool = True) -> RunAnalysis:
    """Read and place `inputs` as `pypto-merge-traces` does, then explain every capture
    (`with_overhead`, `with_verdict`: as `analyze_capture`). Raises `TraceInputError` for bad input, or
    when no capture has swimlane records."""
    from pypto.compile_profiling.foundation.gc_pause import gc_paused
    from pypto.compile_profiling.trace_merge.place.placement import place
    from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs

    say = progress or (lambda _m: None)
    paths = [str(p) for p in inputs]
    with gc_paused():
        say("reading inputs")
        found = read_inputs(paths)
        if not any(c.records is not None for c in found.captures):
            raise TraceInputError(paths[0] if len(paths) == 1 else "<inputs>",
                                  "no Simpler swimlane records (chip_swimlane_records.json) "
                                  "among the inputs: nothing to analyse")
        say("placing sources")
        plan = place(found, offset_us=offset_us)
        say("analysing")
        return analyze_plan(plan, tolerance_cycles=tolerance_cycles,
                            with_overhead=with_overhead, with_verdict=with_verdict)

