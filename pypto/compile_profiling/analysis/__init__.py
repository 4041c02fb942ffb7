"""Explain a run: why was it as long as it was?

    from pypto.compile_profiling.analysis import analyze
    result = analyze(["work/report/trace.json", "work/dfx_outputs"])
    for rank in result.ranks:
        print(rank.label, rank.verdict.kind, rank.verdict.rule, rank.verdict.gain_bound_ns)

Per capture (rank): the device critical path (static: the dependency-limited floor; observed:
the blame path whose compute and stalls tile the makespan to the cycle, each stall cut into
what filled it: completion, dispatch, launch), the overhead figures (was a free core waiting
while ready work sat undispatched?), with the compile trace or Simpler's host log the whole
wall time from the first compile stage to the last device task tiled into named segments,
and the verdict that follows from the path, with a bound on what fixing its cause can gain. The definitions are Simpler's own (`critical_path`,
`sched_overhead_analysis`), computed on the merge readers' NumPy columns; docs/analysis.md
says them in a user's words. Clock placement is the merge's `place` step.

This package reads `trace_merge/` and `timeline/`; nothing there imports it (the merge draws
its views through `TIMELINE_VIEWS`, passed in by the caller).
"""

from __future__ import annotations

from pypto.compile_profiling.analysis.critical_path import (
    HELD_BY,
    PARTS,
    TOLERANCE_CYCLES,
    DependencyEdges,
    HeldBy,
    ObservedPath,
    StallPart,
    StaticPath,
)
from pypto.compile_profiling.analysis.end_to_end import CATEGORIES, EndToEnd, Segment
from pypto.compile_profiling.analysis.explain import (
    FamilyRow,
    RankAnalysis,
    RunAnalysis,
    analyze,
    analyze_capture,
    analyze_plan,
    kernel_family,
)
from pypto.compile_profiling.analysis.overhead import (
    Distribution,
    EngineStarvation,
    Overhead,
    SchedulerThread,
)
from pypto.compile_profiling.analysis.tasks import TaskTable
from pypto.compile_profiling.analysis.timeline_views import TIMELINE_VIEWS
from pypto.compile_profiling.analysis.verdict import Verdict, VerdictKind

__all__ = [
    "CATEGORIES",
    "HELD_BY",
    "PARTS",
    "TIMELINE_VIEWS",
    "TOLERANCE_CYCLES",
    "DependencyEdges",
    "Distribution",
    "EndToEnd",
    "EngineStarvation",
    "FamilyRow",
    "HeldBy",
    "ObservedPath",
    "Overhead",
    "RankAnalysis",
    "RunAnalysis",
    "SchedulerThread",
    "Segment",
    "StallPart",
    "StaticPath",
    "TaskTable",
    "Verdict",
    "VerdictKind",
    "analyze",
    "analyze_capture",
    "analyze_plan",
    "kernel_family",
]
