"""Host-side placement: compile traces and run logs on the reference host's clock (moved by
wall-clock anchors from another host), a capture's own run (its pid, its `device_execution`
stage), the run log's clk=dev spans, and `pipeline_profile.json` reports."""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.place.clock_alignment import monotonic_offset_ns
from pypto.compile_profiling.trace_merge.place.containment import (
    HostWindow,
)
from pypto.compile_profiling.trace_merge.place.place_device import (
    device_wall_span,
    stream_extents,
    wall_bounds,
    wall_in_host,
)
from pypto.compile_profiling.trace_merge.place.plan import (
    DEVICE_EXECUTION,
    RUNNER_RUN_SUFFIX,
    SAME_HOST_TOLERANCE_NS,
    CapturePlan,
    HostClock,
    Plan,
    ReportPlan,
)
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read.read_inputs import Inputs
from pypto.compile_profiling.trace_merge.read.wall_anchor import wall_anchor_from_log

EXACT = "exact (host CLOCK_MONOTONIC)"   # how a source on the reference host is placed


def place_traces(inputs: Inputs, plan: Plan) -> None:
    for trace in inputs.traces:
        if plan.reference_anchor is None and not plan.traces:
            plan.reference_anchor, plan.reference_host = trace.wall_anchor, trace.host
            plan.traces.append((trace, HostClock(0, EXACT)))
            continue
        ref_host = plan.reference_host
        if trace.host and ref_host and trace.host != ref_host:
            if trace.wall_anchor is not None and plan.reference_anchor is not None:
                off = monotonic_offset_ns(plan.reference_anchor, trace.wall_anchor)
                plan.traces.append((trace, HostClock(off, (
                    f"cross-host: host {trace.host} moved by wall-clock anchors ({off:+d} ns; "
                    "assumes synchronised wall clocks)"))))
            else:
                plan.warnings.append(f"{trace.path}: from host {trace.host}, but without clock "
                                     f"anchors it cannot be aligned with {ref_host}; placed "
                                     "on its own monotonic clock")
                plan.traces.append((trace, HostClock(0, "unaligned other host (no clock anchor)")))
        else:
            plan.traces.append((trace, HostClock(0, EXACT)))


def device_execution_stages(plan: Plan) -> list[tuple[int, float, float]]:
    """(os pid, start, end) of every device_execution stage, reference axis, in time order."""
    out = []
    for trace, host_clock in plan.traces:
        for i, name in enumerate(trace.name):
            if name == DEVICE_EXECUTION:
                out.append(
                    (
                        trace.pid[i],
                        trace.start_ns[i] + host_clock.offset_ns,
                        trace.end_ns[i] + host_clock.offset_ns,
                    )
                )
    out.sort(key=lambda s: s[1])
    return out


def own_run_pid(cap: rs.Capture) -> int | None:
    """The OS pid of the process that ran this capture, from its own run log."""
    log = cap.run_log
    if log is None:
        return None
    runner = log.rows_named(lambda n: n.endswith(RUNNER_RUN_SUFFIX), device_clock=False)
    if len(runner):
        return int(log.pid[runner[0]])
    if log.clock_anchors:
        return log.clock_anchors[0].pid
    return int(log.pid[0]) if len(log) else None


def host_clock(log, plan: Plan) -> HostClock:
    if plan.reference_anchor is None or not log.clock_anchors:
        return HostClock(0, EXACT)
    off = monotonic_offset_ns(plan.reference_anchor, wall_anchor_from_log(log.clock_anchors[0]))
    if abs(off) <= SAME_HOST_TOLERANCE_NS:
        return HostClock(0, "exact (host CLOCK_MONOTONIC, same host by its [CLOCK_ANCHOR])")
    return HostClock(off, f"cross-host: moved by [CLOCK_ANCHOR] wall-clock anchors ({off:+d} "
                          "ns; assumes synchronised wall clocks)")


def _wall_offset(capture_plan: CapturePlan | None, w: HostWindow, host: HostClock) -> int | None:
    """Offset of one invocation's clk=dev spans onto the reference axis: where containment
    put the device-phase origin; for a calibrated or hand-placed capture, consistent with
    where its records were put and inside the host span that holds them; with no capture,
    the middle of what that host span allows."""
    dev = None if capture_plan is None else capture_plan.device or capture_plan.converted
    if dev is not None and dev.containment is not None:
        return dev.containment.phase_offset_ns() + host.offset_ns
    wall, parent, children = device_wall_span(w.spans)
    if parent is None:                       # device_wall on another thread than runner_run
        parent = next(sp for sp in w.spans if not sp.device_clock
                      and sp.name == w.root + ".runner_run")
    o = wall_in_host(parent, wall, children)
    o_lo, o_hi = o.lo + host.offset_ns, o.hi + host.offset_ns
    # device_wall's own end inside its host span too, where that leaves room (a simulator's
    # wall can run past it: then only its start and its children are bounds)
    own_end = parent.ts_ns + parent.dur_ns - wall.ts_ns - wall.dur_ns + host.offset_ns
    if o_lo <= own_end:
        o_hi = min(o_hi, own_end)
    if capture_plan is not None and capture_plan.device is not None:
        ext = stream_extents(capture_plan.capture)
        if ext:
            scale = 1e9 / dev.freq_hz
            q = wall_bounds({k: (a * scale, b * scale) for k, (a, b) in ext.items()},
                             wall, children)
            if dev.mapping is None:
                o = dev.offset_ns - q.mid        # reference = nominal + p = wall + (p - q)
            else:                                # calibrated: records' reference times known
                first = float(dev.to_ns(np.array([ext["all"][0]]))[0])
                o = first - (ext["all"][0] * scale + q.mid)
            if o_lo <= o_hi:
                o = min(max(o, o_lo), o_hi)
            return round(o)
    if o_lo > o_hi:
        return None
    return round((o_lo + o_hi) / 2)


def place_walls(plan: Plan, windows: dict) -> None:
    """`plan.wall_offsets` for every invocation of every run log that has clk=dev spans."""
    by_window = {capture_plan.window: capture_plan for capture_plan in plan.captures if capture_plan.window is not None}
    for owner in plan.captures:
        for w in windows[owner.capture]:
            capture_plan = by_window.get(w)
            host = capture_plan.host if capture_plan is not None else owner.host
            off = _wall_offset(capture_plan, w, host)
            if off is None:
                continue
            dev = None if capture_plan is None else capture_plan.device or capture_plan.converted
            label = "estimated: middle of its host span" if dev is None else dev.label
            plan.wall_offsets[(w.log.path, w.pid, w.inv)] = (off, label)


def place_reports(inputs: Inputs, plan: Plan) -> None:
    calibrated_starts = []
    for capture_plan in plan.captures:
        if capture_plan.device is not None and capture_plan.device.status is PlacementStatus.CALIBRATED:
            ext = stream_extents(capture_plan.capture)
            if ext:
                calibrated_starts.append(float(capture_plan.device.to_ns(np.array([ext["all"][0]]))[0]))
    starts = [min(trace.start_ns) + host_clock.offset_ns for trace, host_clock in plan.traces if trace.start_ns]
    for rep in inputs.reports:
        rel = _stage_offset_ns(rep.stages, DEVICE_EXECUTION)
        if calibrated_starts and rel is not None:
            origin = min(calibrated_starts) - rel
            how = "its device_execution put at the first record of the calibrated capture"
            if origin < 0:          # never before time 0, where Perfetto drops it
                origin, how = 0.0, ("its start put at time 0 (its device_execution at the "
                                    "calibrated capture's first record would start before)")
        elif starts:
            origin, how = float(min(starts)), "its start put at the start of the other inputs"
        else:
            origin, how = 0.0, "its start put at time 0"
        plan.reports.append(ReportPlan(rep, origin, how))
        plan.warnings.append(f"{rep.path}: pipeline_profile.json has no absolute times: stage "
                             f"layout ESTIMATED ({how})")


def _stage_offset_ns(stages, name: str) -> float | None:
    """Start (ns, relative) of the first stage called `name` when stages are laid end to end
    (children from their parent's start); iterative, so any depth works."""
    stack = [(iter(stages), 0.0)]
    while stack:
        it, t = stack[-1]
        st = next(it, None)
        if st is None:
            stack.pop()
            continue
        if st.name == name:
            return t
        stack[-1] = (it, t + st.seconds * 1e9)
        stack.append((iter(st.children), t))
    return None
