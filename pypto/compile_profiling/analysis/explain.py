"""Explain a run: per capture (rank), the critical paths, the overhead verdict and the end
to end tiling, from what the merge reads and places (`read_inputs`, `place`)."""

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
from pypto.compile_profiling.analysis.overhead import Overhead, overhead, verdict
from pypto.compile_profiling.analysis.tasks import TaskTable, task_table
from pypto.compile_profiling.trace_merge.layout_device import (
    DeviceRows,
    device_rows,
    task_displays,
)
from pypto.compile_profiling.trace_merge.place import CapturePlan, Plan
from pypto.errors import TraceInputError

__all__ = ["FamilyRow", "RankAnalysis", "RunAnalysis", "analyze", "analyze_capture",
           "analyze_plan", "kernel_family"]

_FAMILY = re.compile(r"(_\d+)?(_(?:aic|aiv))?$")


def kernel_family(name: str) -> str:
    """A kernel's family, as Simpler folds them: a trailing block index and/or `_aic`/`_aiv`
    stripped (`gate_0_aic`, `exp_up_mm_2` -> `gate`, `exp_up_mm`)."""
    return _FAMILY.sub("", name, count=1) or name


@dataclass(slots=True)
class FamilyRow:
    family: str
    compute_cycles: int
    stall_cycles: int
    tasks: int


@dataclass(slots=True, eq=False)
class RankAnalysis:
    """One capture (rank, or dispatch of a rank) explained."""

    label: str
    source: str
    level: int
    freq_hz: int
    clock: str                        # "calibrated ±636 ns", "estimated ±85.6 ms"
    estimated: bool
    uncertainty_ns: float | None
    tasks: TaskTable
    edges: DependencyEdges
    has_deps: bool
    static: StaticPath | None
    observed: ObservedPath | None
    overhead: Overhead
    verdict: str | None
    verdict_rule: str
    end_to_end: EndToEnd | None
    names: dict[int, str] | None
    notes: list[str] = field(default_factory=list)     # one line each, said once

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
                    tolerance_cycles: int = TOLERANCE_CYCLES) -> RankAnalysis | None:
    """One placed capture (None without AICore records). `rows`: its `DeviceRows` when the
    layout made them already."""
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
    obs = observed_path(tt, edges, tolerance_cycles)
    if not has_deps:
        notes.append(
            f"{capture_plan.capture.files.directory}: no deps.json (level {rec.level} capture or "
            "dep_gen off): no static path; the observed path follows resource "
            "predecessors (the previous task on the core) only"
        )
    ov = overhead(tt, disp, fin, has, deps, rec.scheduler)
    static_share = (static.length_cycles / obs.makespan) if static is not None and obs and \
        obs.makespan else None
    word, rule = verdict(ov, static_share)
    dev = capture_plan.device
    names = (
        capture_plan.capture.name_map.names if capture_plan.capture.name_map is not None else None
    )
    ra = RankAnalysis(capture_plan.label, rec.path, rec.level, rec.freq_hz, dev.label,
                      dev.status != "calibrated", dev.uncertainty_ns, tt, edges, has_deps,
                      static, obs, ov, word, rule, None, names, notes)
    if obs is not None and len(obs.tasks):
        first = obs.tasks[:1]
        kernels, _, labels = ra.labels(first)
        kernel = kernels[0] if kernels[0] != "unknown" else None
        mine = np.flatnonzero((tt.row_task == first[0]) & has)
        first_dispatch = None if not len(mine) else int(dev.to_ns(
            disp[mine[np.argmin(tt.row_start[mine])]:][:1])[0])
        ra.end_to_end = end_to_end(plan, capture_plan, tt, obs, labels[0], kernel, first_dispatch)
    return ra


def _edge_notes(d: DependencyEdges, where: str, notes: list[str]) -> None:
    if d.missing_tasks:
        notes.append(f"{where}: {d.missing_tasks} of its {d.deps_tasks} tasks are missing "
                     "from the records (no AICore block ran them): left out with their edges")
    if d.no_block_tasks:
        notes.append(f"{where}: {d.no_block_tasks} tasks have no blocks (no kernel: dummy or "
                     "alloc tasks): left out with their edges")
    if d.cycle_tasks:
        ring = " -> ".join(task_displays(np.array(d.cycle_example + d.cycle_example[:1])))
        notes.append(f"{where}: dependency cycle ({ring}; {d.cycle_tasks} tasks on or behind "
                     "cycles): only edges that run forward in time are kept")
    if d.self_loops:
        notes.append(f"{where}: {d.self_loops} edges from a task to itself: ignored")


def analyze_plan(plan: Plan, *, tolerance_cycles: int = TOLERANCE_CYCLES,
                 rows: dict[int, DeviceRows] | None = None) -> RunAnalysis:
    """Every capture of a placed merge (`rows`: `DeviceRows` by `id(capture plan)`)."""
    out, warnings = [], list(plan.warnings)
    for cp in plan.captures:
        r = (rows or {}).get(id(cp))
        ra = analyze_capture(plan, cp, r, tolerance_cycles=tolerance_cycles)
        if ra is not None:
            out.append(ra)
            warnings.extend(ra.notes)
        elif cp.capture.records is not None:
            warnings.append(f"{cp.capture.records.path}: no AICore task records: nothing to "
                            "analyse")
    return RunAnalysis(out, list(dict.fromkeys(warnings)))


def analyze(inputs: Iterable[str | os.PathLike], *, offset_us: float | None = None,
            tolerance_cycles: int = TOLERANCE_CYCLES,
            progress: Callable[[str], None] | None = None) -> RunAnalysis:
    """Read and place `inputs` as `pypto-merge-traces` does, then explain every capture.
    Raises `TraceInputError` for bad input, or when no capture has swimlane records."""
    from pypto.compile_profiling.foundation.gc_pause import gc_paused
    from pypto.compile_profiling.trace_merge.place import place
    from pypto.compile_profiling.trace_merge.read_inputs import read_inputs

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
        return analyze_plan(plan, tolerance_cycles=tolerance_cycles)

