"""The analysis on the merged timeline: the `critical-path` and `overhead` views.

`TIMELINE_VIEWS` is what `merge_traces(..., derived_views=...)` calls after the device views
are laid out (the merge never imports this package): per capture, "Device r0 · Critical
path (<clock>)" holds the observed path as one track (a slice per path task's compute and
one per piece of each stall, named by what filled it: completion, dispatch, launch, front,
unknown; arrows from task to task along it) and the overhead counters
(0/1: per engine "starved", a free core while ready work of its type waits undispatched;
"all engines starved", "some engine starved"). With a host source, the end-to-end segments go on a "critical path (end to end)"
lane of the run's compile process, the device part as one slice, an arrow into the path.
"""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.analysis.critical_path import HELD_BY, PARTS
from pypto.compile_profiling.analysis.end_to_end import COMPUTE, device_segments
from pypto.compile_profiling.analysis.explain import RankAnalysis, analyze_capture
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    CounterTrack,
    FlowBlock,
    SliceBlock,
    intern,
)
from pypto.compile_profiling.trace_merge.lay_out.builder import SEP, TimelineBuilder, device_args
from pypto.compile_profiling.trace_merge.views import View

__all__ = ["TIMELINE_VIEWS", "draw_views"]


def draw_views(builder: TimelineBuilder, plan, drawn: list, sel, warnings: list[str]) -> None:
    """Draw the selected analysis views of every drawn capture (`drawn`: (capture plan,
    DeviceRows) pairs)."""
    for cp, rows in drawn:
        ra = analyze_capture(plan, cp, rows)
        if ra is None or ra.observed is None:
            continue
        warnings.extend(ra.notes)
        dev = cp.device
        proc = builder.process(f"Device {cp.label}{SEP}Critical path ({dev.label})",
                         args={**device_args(cp, dev, ra.source),
                               "verdict": str(ra.verdict.kind), "verdict_rule": ra.verdict.rule},
                         estimated=ra.estimated, capture=cp, part="Critical path")
        parts = []
        if sel.view(View.CRITICAL_PATH):
            block = _path_block(builder, proc, ra, dev.to_ns)
            parts.append(f"observed path {len(ra.observed.tasks)} tasks (tiling "
                         f"{'exact' if ra.observed.exact else 'inexact'})")
            if ra.end_to_end is not None:
                _end_to_end_block(builder, cp, ra, block)
                parts.append(f"end to end {len(ra.end_to_end.segments)} segments")
        if sel.view(View.OVERHEAD) and ra.overhead.timeline is not None:
            counters = _overhead_counters(proc, ra, dev.to_ns)
            builder.tl.counters.extend(counters)
            parts.append(f"{len(counters)} overhead counters")
        parts.append(f"verdict {ra.verdict.kind}")
        builder.summary.append(f"{ra.source}: capture {cp.label}: " + ", ".join(parts))


TIMELINE_VIEWS = draw_views


def _path_block(builder: TimelineBuilder, proc, ra: RankAnalysis, to_ns) -> SliceBlock:
    path = ra.observed
    track = builder.lane(proc, "observed path", 0)
    starts, ends, where, what = device_segments(path, to_ns)
    kernels, displays, labels = ra.labels(path.tasks)
    names = labels + [str(p) for p in PARTS]
    name = np.where(what == COMPUTE, where, len(labels) + np.minimum(what, len(PARTS) - 1))
    scale = 1e9 / ra.freq_hz
    dur = ra.tasks.duration[path.tasks]
    disp_names, disp_ix = intern(displays)
    kern_names, kern_ix = intern(kernels)
    block = SliceBlock(
        "critical_path", [track], np.zeros(len(starts), dtype=np.int32), starts, ends - starts,
        names, name.astype(np.int32), [
            ArgColumn("task", disp_ix[where], table=disp_names),
            ArgColumn("task_id", ra.tasks.ids[path.tasks][where]),
            ArgColumn("kernel", kern_ix[where], table=kern_names),
            ArgColumn("piece", (what == COMPUTE).astype(np.int32), table=["stall", "compute"]),
            ArgColumn("held_by", path.held_by[where].astype(np.int32),
                      table=[str(h) for h in HELD_BY]),
            ArgColumn("path_index", where),
            ArgColumn("task_span_ns", np.rint(dur[where] * scale).astype(np.int64)),
            ArgColumn("compute_ns", np.rint(path.compute[where] * scale).astype(np.int64)),
            ArgColumn("stall_ns", np.rint(path.stall[where] * scale).astype(np.int64))])
    builder.tl.blocks.append(block)
    comp = np.flatnonzero(what == COMPUTE)               # one compute piece per task, in order
    if len(comp) > 1:
        builder.tl.flows.append(FlowBlock("critical path", "critical_path", block, comp[:-1],
                                    block, comp[1:]))
    return block


def _end_to_end_block(builder: TimelineBuilder, cp, ra: RankAnalysis, path_block: SliceBlock
                      ) -> None:
    e2e = ra.end_to_end
    proc = next((p for (host, pid), p in builder.host_procs.items() if pid == cp.run_pid), None) \
        or next(iter(builder.host_procs.values()), None)
    if proc is None:
        proc = builder.process(f"Run {cp.label}{SEP}End to end", args={"clock": "CLOCK_MONOTONIC"})
    track = builder.lane(proc, "critical path (end to end)", 1 << 21)
    segs = e2e.segments
    names, ix = intern([s.name for s in segs])
    cats, cat_ix = intern([s.category for s in segs])
    start = np.array([s.start_ns for s in segs], dtype=np.int64)
    dur = np.array([s.dur_ns for s in segs], dtype=np.int64)
    block = SliceBlock("critical_path_e2e", [track], np.zeros(len(segs), dtype=np.int32), start,
                       dur, names, ix, [ArgColumn("category", cat_ix, table=cats),
                                        ArgColumn("device_clock", np.full(len(segs), 0),
                                                  table=[e2e.clock])])
    builder.tl.blocks.append(block)
    if len(path_block) and len(segs):
        builder.tl.flows.append(FlowBlock("end to end → device path", "critical_path", block,
                                    np.array([len(segs) - 1]), path_block, np.array([0])))


def _overhead_counters(proc, ra: RankAnalysis, to_ns) -> list[CounterTrack]:
    tl = ra.overhead.timeline
    ts = to_ns(tl["ts"])
    out = []
    for name, values in tl.items():
        if name == "ts" or "starved" not in name:   # the flags (counts change every task)
            continue
        v = np.append(values, 0).astype(np.int64)
        last = np.concatenate((ts[1:] > ts[:-1], [True]))    # one value per time point
        t, v = ts[last], v[last]
        change = np.concatenate(([True], v[1:] != v[:-1]))   # only where it changes
        out.append(CounterTrack(proc, name, t[change], v[change], "flag"))
    return out
