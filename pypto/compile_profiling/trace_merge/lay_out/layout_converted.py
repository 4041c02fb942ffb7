"""Lay out Simpler's converted trace (`merged_swimlane*.json`), placed as an estimate.

Its small fixed pids are views, not OS processes: each becomes "Device <label> · Simpler
<view> (estimated ±...)"; its lanes, nesting, flows (bound to slices by the reader) and
counters are kept. Times are the reader's integer ns, so slices that touch in the file
still touch here.
"""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.timeline.model import CounterTrack, FlowBlock, SliceBlock, intern
from pypto.compile_profiling.trace_merge.kinds import SourceKind
from pypto.compile_profiling.trace_merge.lay_out.builder import SEP, TimelineBuilder, device_args
from pypto.compile_profiling.trace_merge.lay_out.lanes import sublanes
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan


def add_converted(
    builder: TimelineBuilder, capture_plan: CapturePlan, conv, warnings: list[str]
) -> None:
    dev = capture_plan.converted
    off = round(dev.offset_ns)
    tag = f" ({dev.label})"
    args = device_args(capture_plan, dev, conv.path)
    if conv.metadata:
        args["simpler_metadata"] = conv.metadata
    slices = conv.slices
    procs = {}
    for pid in sorted({s.pid for s in slices} | set(conv.process_names)
                      | {c.pid for c in conv.counters}):
        view = conv.process_names.get(pid) or f"view {pid}"
        procs[pid] = builder.process(f"Device {capture_plan.label}{SEP}Simpler {view}{tag}",
                               args=dict(args, simpler_pid=pid), estimated=True,
                               capture=capture_plan, part="Simpler")
    n = len(slices)
    start = np.fromiter((s.start_ns for s in slices), dtype=np.int64, count=n) + off
    end = np.fromiter((s.end_ns for s in slices), dtype=np.int64, count=n) + off
    tracks, tix, moved = _lanes(builder, conv, procs, start, end)
    where = _blocks(builder, slices, tracks, tix, start, end)
    _flows(builder, conv, where)
    for c in conv.counters:
        builder.tl.counters.append(CounterTrack(procs[c.pid], c.name, c.ts_ns + off, c.values))
    if moved:
        warnings.append(f"{conv.path}: {moved} slices did not nest and were moved to sub-lanes")
    if conv.unbound_flows:
        warnings.append(f"{conv.path}: {conv.unbound_flows} flows could not be bound to a slice")
    samples = sum(len(c.ts_ns) for c in conv.counters)
    builder.summary.append(
        f"{conv.path}: Simpler converted trace ({capture_plan.label}), {n} slices, "
        f"{len(conv.flows)} flows, {samples} counter samples; ESTIMATED "
        f"({dev.label}: {dev.how})"
    )
    builder.sources.append({"path": conv.path, "kind": SourceKind.MERGED_SWIMLANE,
                      "alignment": f"{dev.status}: {dev.how}", "estimated": True,
                      "uncertainty_ns": dev.uncertainty_ns})


def _lanes(builder: TimelineBuilder, conv, procs: dict, start: np.ndarray, end: np.ndarray):
    """A lane per (pid, tid) of the converted trace, split into sub-lanes where its slices
    do not nest; -> (tracks, each slice's track index, slices moved to a sub-lane)."""
    slices = conv.slices
    by_lane: dict[tuple[int, int], list[int]] = {}
    for i, s in enumerate(slices):
        by_lane.setdefault((s.pid, s.tid), []).append(i)
    tracks = []
    tix = np.zeros(len(slices), dtype=np.int32)
    moved = 0
    for key in sorted(by_lane):
        idx = np.array(by_lane[key], dtype=np.int64)
        name = conv.thread_names.get(key) or f"tid {key[1]}"
        sort = conv.thread_sort.get(key, key[1])
        sub = sublanes(start[idx], end[idx], allow_nesting=True)
        first = len(tracks)
        for k in range(int(sub.max()) + 1):
            tracks.append(builder.lane(procs[key[0]], name if k == 0 else f"{name} (overlap {k})",
                                 sort * 100 + k))
        tix[idx] = first + sub
        moved += int(np.count_nonzero(sub))
    return tracks, tix, moved


def _blocks(builder: TimelineBuilder, slices, tracks, tix: np.ndarray, start: np.ndarray,
            end: np.ndarray) -> list[tuple[SliceBlock, int]]:
    """A block per category; -> where each slice went (its block and row)."""
    by_cat: dict[str, list[int]] = {}
    for i, s in enumerate(slices):
        by_cat.setdefault(s.cat, []).append(i)
    where: list[tuple[SliceBlock, int]] = [None] * len(slices)  # type: ignore[list-item]
    for cat, idx in by_cat.items():
        sel = np.array(idx, dtype=np.int64)
        names, name_ix = intern([slices[i].name for i in idx])
        block = SliceBlock(cat, tracks, tix[sel], start[sel], end[sel] - start[sel], names,
                           name_ix, [], [slices[i].args for i in idx])
        builder.tl.blocks.append(block)
        for r, i in enumerate(idx):
            where[i] = (block, r)
    return where


def _flows(builder: TimelineBuilder, conv, where: list[tuple[SliceBlock, int]]) -> None:
    """The converted trace's arrows, a block per (name, category, source and target
    block)."""
    groups: dict[tuple, tuple[SliceBlock, SliceBlock, list[int], list[int]]] = {}
    for fl in conv.flows:
        (sb, sr), (db, dr) = where[fl.src], where[fl.dst]
        g = groups.setdefault((fl.name, fl.cat, sb, db), (sb, db, [], []))
        g[2].append(sr)
        g[3].append(dr)
    for (name, cat, _, _), (sb, db, srows, drows) in groups.items():
        builder.tl.flows.append(FlowBlock(name, cat or name, sb, np.array(srows, dtype=np.int64),
                                          db, np.array(drows, dtype=np.int64)))
