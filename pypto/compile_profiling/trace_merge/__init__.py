"""Merge compile traces and Simpler device captures into one Perfetto timeline.

    result = merge_traces(["build/report/trace.json", "build/work"])
    write_timeline(result.timeline, "merged.pftrace")      # pypto.compile_profiling.timeline
    print("\\n".join(result.summary()))

One direction, one module per step:
`read_inputs` (every input read and checked, Simpler files through `read_simpler`) ->
`place` (every clock decision) -> `layout` (the `Timeline`, final names and ids) -> the
exporters of `pypto.compile_profiling.timeline`. Nothing is moved or renamed after it is
laid out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pypto.compile_profiling.foundation.gc_pause import gc_paused

if TYPE_CHECKING:  # not loaded here: `--help` reads `views` without NumPy (0.30 -> 0.13 s CPU)
    from pypto.compile_profiling.timeline.cut import Cut
    from pypto.compile_profiling.timeline.model import Timeline
    from pypto.compile_profiling.trace_merge.place.plan import Plan

__all__ = ["MergeResult", "merge_traces"]


@dataclass
class MergeResult:
    """The merged timeline, the human summary (one line each; a capture's kernels in one
    line), the warnings, and a line per kernel of each capture (also in the timeline's
    metadata, `sources[].kernels`)."""

    timeline: Timeline
    summary_lines: list[str]
    warnings: list[str]
    kernel_lines: list[str] = field(default_factory=list)
    # with `merge_traces(keep_for_analysis=True)`: the placed plan and each drawn capture
    # plan's `DeviceRows`, so `analysis.analyze_plan(plan, rows=rows)` reads nothing again
    plan: Plan | None = None
    rows: dict | None = None
    # what the merge drew differently from the whole run (a cut, the defaults at scale):
    # printed under both the brief and the full summary
    notes: list[str] = field(default_factory=list)

    def brief(self, most: int = 5) -> list[str]:
        """What was merged, in a few lines: the sources by kind, then per capture (at most
        `most`) its tasks, makespan and how sure its placement is. (`summary()`: every
        source in detail.)"""
        from pypto.compile_profiling.trace_merge.place.containment import fmt_ns

        sources = self.timeline.metadata.get("sources", [])
        words = {"compile_trace": "compile trace", "pipeline_profile": "compile profile",
                 "swimlane_records": "capture", "merged_swimlane": "converted capture",
                 "run_log": "run log", "host_phase_records": "host phase file"}
        counts: dict[str, int] = {}
        for s in sources:
            word = words.get(s["kind"], s["kind"])
            counts[word] = counts.get(word, 0) + 1
        out = ["merged " + ", ".join(f"{n} {w}{'s' * (n != 1)}" for w, n in counts.items())]
        caps = [s for s in sources if s["kind"] == "swimlane_records" and "tasks" in s]
        for s in caps[:most]:
            blocks = f" ({s['blocks']} blocks)" if s["blocks"] != s["tasks"] else ""
            out.append(f"  {s['rank']}: {s['tasks']} tasks{blocks}, makespan "
                       f"{fmt_ns(s['makespan_ns'])}; device time {s['placement']}")
            if s.get("records_ignored"):
                ignored = ", ".join(os.path.basename(p) for p in s["records_ignored"])
                out.append(f"    read {os.path.basename(s['path'])}, not {ignored} beside it")
        if len(caps) > most:
            out.append(f"  ... {len(caps) - most} more captures (-v lists every source)")
        return out + self.notes

    def summary(self, more_kernels: str = "") -> list[str]:
        """`summary_lines`, with `more_kernels.format(n=<its kernels>)` after each capture's
        kernel line that names only some of them: where the rest are, in the printer's
        words (`pypto-merge-traces`: `" (all {n}: --kernels)"`)."""
        if not more_kernels:
            return list(self.summary_lines) + self.notes
        return [line + more_kernels.format(n=line.kernels)
                if getattr(line, "kernels", 0) > getattr(line, "named", 0) else line
                for line in self.summary_lines] + self.notes


def merge_traces(inputs: Iterable[str | os.PathLike], *, offset_us: float | None = None,
                 progress: Callable[[str], None] | None = None,
                 output: str | os.PathLike | None = None,
                 views: Iterable[str] | None = None,
                 flows: Iterable[str] | None = None,
                 align: str = "clock",
                 derived_views: Callable | None = None,
                 keep_for_analysis: bool = False,
                 cut: Cut | None = None,
                 for_viewer: bool = False) -> MergeResult:
    """Read every input, place each source on one host CLOCK_MONOTONIC axis, lay them out.

    Raises `TraceInputError` (naming the file) for unreadable or invalid input, before
    anything is laid out. `progress(message)` is called as each step starts. `output`: the
    path the result will be written to; `OutputPathError` if it is one of the input files.
    `views` / `flows`: the device views and kinds of arrows to draw (names in
    `trace_merge.views.VIEWS` / `FLOWS`; default all that the captures support).
    `align`: "clock" (default) refuses sources that share no time with the reference host's
    and were joined to it only through wall-clock anchors (they cannot be from one run);
    "start" moves them to start with it instead.
    `keep_for_analysis`: keep the placed plan and the captures' rows in the result (memory:
    the rows, about 80 MB at 1M tasks) for an analysis that reuses them.
    `derived_views`: what draws `critical-path` and `overhead`
    (`pypto.compile_profiling.analysis.TIMELINE_VIEWS`); those two are drawn only when
    `views` names them (or is `all`), and asking for them without it is a `ValueError`.
    `cut`: keep only a time window and/or some ranks (`timeline.cut`); ValueError for ranks
    the run does not hold. `for_viewer`: the timeline is for the Perfetto UI, so past
    `views.SCALE_TASKS` device tasks the views and arrows not named are the lighter
    `AT_SCALE_*` defaults. Both say what they left out in `MergeResult.notes`.
    """
    from pypto.compile_profiling.trace_merge.views import (
        DERIVED_VIEWS,
        FLOWS,
        VIEWS,
        Selection,
        parse_names,
    )

    # by default every view but the analysis's: they cost an analysis of every capture
    # (1M tasks: about 8 s of CPU), so they are drawn when asked for (by name, or `all`)
    default = frozenset(VIEWS) - frozenset(DERIVED_VIEWS)
    selection = Selection(
        default if views is None else parse_names(views, VIEWS, "views"),
        frozenset(FLOWS) if flows is None else parse_names(flows, FLOWS, "flows"))
    if derived_views is None:
        asked = [v for v in DERIVED_VIEWS if v in selection.views]
        if views is not None and asked:
            raise ValueError(f"view {asked[0]!r} is drawn by pypto.compile_profiling.analysis: "
                             "pass derived_views=analysis.TIMELINE_VIEWS")
        selection = Selection(selection.views - frozenset(DERIVED_VIEWS), selection.flows)
    from pypto.compile_profiling.trace_merge.lay_out.layout import lay_out
    from pypto.compile_profiling.trace_merge.place.placement import place
    from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs

    say = progress or (lambda _msg: None)
    with gc_paused():
        say("reading inputs")
        found = read_inputs(list(inputs), output=output)
        say("placing sources")
        plan = place(found, offset_us=offset_us, align=align)
        notes: list[str] = []
        if for_viewer and (views is None or flows is None):
            selection = _at_scale(plan, selection, views is None, flows is None, notes)
        say("laying out")
        rows: dict | None = {} if keep_for_analysis else None
        timeline, summary, warnings, kernel_lines = lay_out(plan, selection, derived_views,
                                                            rows)
        if cut is not None:
            say("cutting")
            from pypto.compile_profiling.timeline.cut import cut_timeline

            timeline, lines = cut_timeline(timeline, cut)
            notes += lines
    return MergeResult(timeline, summary, warnings, kernel_lines,
                       plan if keep_for_analysis else None, rows, notes)


def _at_scale(plan: Plan, selection, default_views: bool, default_flows: bool,
              notes: list[str]):
    """`selection` with the lighter defaults past `SCALE_TASKS` device tasks (for the views
    or arrows not named), and a note of what that leaves out; else `selection`."""
    from pypto.compile_profiling.trace_merge.views import (
        AT_SCALE_FLOWS,
        AT_SCALE_VIEWS,
        SCALE_TASKS,
        Selection,
    )

    tasks = sum(len(cp.capture.records.aicore["task_id"]) for cp in plan.captures
                if cp.capture.records is not None)
    if tasks <= SCALE_TASKS:
        return selection
    views = selection.views & AT_SCALE_VIEWS if default_views else selection.views
    flows = selection.flows & AT_SCALE_FLOWS if default_flows else selection.flows
    left_views = sorted(selection.views - views)
    left_flows = sorted(selection.flows - flows)
    if not left_views and not left_flows:
        return selection
    left = []
    if left_views:
        left.append(f"views {', '.join(left_views)}")
    if left_flows:
        left.append(f"arrows {', '.join(left_flows)}")
    notes.append(f"{tasks:,} device tasks (over {SCALE_TASKS:,}): drawn light, to open fast "
                 f"in the Perfetto UI; left out: {'; '.join(left)}. --views all --flows all "
                 "draws everything; --window START:END draws a part whole")
    return Selection(views, flows)
