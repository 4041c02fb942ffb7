"""The last checks of a placement: sources joined only through wall-clock anchors must share
time with the reference host's (else refused, or moved to its start with `align="start"`),
and nothing may land before time 0 (Perfetto drops it)."""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.place.containment import (
    fmt_ns,
)
from pypto.compile_profiling.trace_merge.place.place_device import (
    PlaceContext,
    place_capture,
    stream_extents,
)
from pypto.compile_profiling.trace_merge.place.plan import (
    CapturePlan,
    HostClock,
    Plan,
)
from pypto.errors import TraceInputError


def _capture_extent(capture_plan: CapturePlan) -> tuple[int, int] | None:
    """Earliest and latest reference-axis ns of everything a capture draws."""
    cap, off = capture_plan.capture, capture_plan.host.offset_ns
    points: list[int] = []
    if capture_plan.device is not None:
        ext = stream_extents(cap)
        if ext:
            points += capture_plan.device.to_ns(np.array(ext["all"], dtype=np.int64)).tolist()
        for s in (*cap.records.host_orchestrator, *cap.records.host_uploads):
            if len(s.start):
                points += [int(s.start.min()) + off, int(s.end.max()) + off]
    if capture_plan.converted is not None:
        o = round(capture_plan.converted.offset_ns)
        points += [min(t.start_ns for t in cap.converted) + o,
                   max(t.end_ns for t in cap.converted) + o]
    if cap.run_log is not None:
        log = cap.run_log
        host = ~log.device_clock
        if host.any():
            points += [int(log.ts_ns[host].min()) + off,
                       int((log.ts_ns + log.dur_ns)[host].max()) + off]
    for batch in cap.host_phases:
        if len(batch.start_ns):
            points += [int(batch.start_ns.min()) + off, int(batch.end_ns.max()) + off]
    return (min(points), max(points)) if points else None


def _clock_groups(plan: Plan) -> dict:
    """Sources by the clock relation that put them on the axis: key 0 for the reference
    host's (and sources assumed on it), the offset for each host joined through wall-clock
    anchors, a key of its own for a trace of another host with no anchor. -> key ->
    [(path, lo, hi, source)]."""
    groups: dict = {}
    for i, (trace, host_clock) in enumerate(plan.traces):
        if trace.start_ns:
            key = ("unaligned", trace.path) if host_clock.how.startswith("unaligned") else host_clock.offset_ns
            groups.setdefault(key, []).append((trace.path, min(trace.start_ns) + host_clock.offset_ns,
                                               max(trace.end_ns) + host_clock.offset_ns, ("trace", i)))
    for capture_plan in plan.captures:
        ext = _capture_extent(capture_plan)
        if ext is not None:
            groups.setdefault(capture_plan.host.offset_ns, []).append(
                (capture_plan.capture.files.directory, *ext, ("capture", capture_plan)))
    return groups


def check_times(plan: Plan, align: str, ctx: PlaceContext) -> None:
    """Sources joined to the reference host only through wall-clock anchors must share some
    time with it, else they cannot be from one run: refused, or with `align="start"` moved
    to start with it. Then nothing may start before time 0 (Perfetto drops it)."""
    groups = _clock_groups(plan)
    ref = groups.get(0)
    moved = False
    if ref is not None:
        r_lo, r_hi = min(s[1] for s in ref), max(s[2] for s in ref)
        for key, sources in groups.items():
            if key == 0:
                continue
            lo, hi = min(s[1] for s in sources), max(s[2] for s in sources)
            if lo <= r_hi and r_lo <= hi:
                continue
            if align == "start":
                _shift(plan, ctx, sources, r_lo - lo, ref[0][0])
                moved = True
                continue
            gap = (f"that ends {_long_ns(r_lo - hi)} before this starts" if hi < r_lo else
                   f"that starts {_long_ns(lo - r_hi)} after this ends")
            hand = any(s[3][0] == "capture" and (s[3][1].device or s[3][1].converted)
                       is not None and (s[3][1].device or s[3][1].converted).status
                       is not PlacementStatus.CALIBRATED for s in sources)
            raise TraceInputError(ref[0][0], (
                f"shares no time with {sources[0][0]} ({gap}) and their clocks are joined only "
                "through wall-clock anchors (another host or boot): they cannot be from one "
                "run; --align start puts their starts together"
                + (", --offset-us US places the capture by hand" if hand else "")))
    if align == "start" and not moved:
        plan.warnings.append("--align start: not applied: every source shares time with the "
                             "reference host's (nothing needed moving)")
    for sources in _clock_groups(plan).values():
        for path, lo, _, _ in sources:
            if lo < 0:
                raise TraceInputError(path, f"would start {fmt_ns(-lo)} before time 0 on the "
                                            "merged timeline, where Perfetto drops it (check "
                                            "--offset-us)")


def _long_ns(ns: float) -> str:
    return f"{ns / 3.6e12:.1f} h" if ns >= 3.6e12 else fmt_ns(ns)


def _shift(plan: Plan, ctx: PlaceContext, sources: list, shift: int, ref_path: str) -> None:
    """Move a group of sources by `shift` ns (`--align start`), and place its captures again."""
    why = f"; moved {shift:+d} ns to start with {ref_path} (--align start: not a clock relation)"
    for _, _, _, (kind, obj) in sources:
        if kind == "trace":
            trace, host_clock = plan.traces[obj]
            plan.traces[obj] = (trace, HostClock(host_clock.offset_ns + shift, host_clock.how + why))
        else:
            obj.host = HostClock(obj.host.offset_ns + shift, obj.host.how + why)
            place_capture(obj, ctx, plan)
