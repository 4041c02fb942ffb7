"""A capture's device clock: the evidence (clock anchors, the run's `device_wall` join, the
host spans that contain the run, its `device_execution` stage, `--offset-us`) in, one
`DeviceClock` out, with the interval of offsets the evidence allows and why."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.place.clock_alignment import (
    ClockAnchorsUnusable,
    build_clock_mapping,
)
from pypto.compile_profiling.trace_merge.place.containment import (
    METHOD,
    RUNNER,
    CaptureWindows,
    NotOneRun,
    contain,
    fmt_ns,
)
from pypto.compile_profiling.trace_merge.place.plan import (
    DEVICE_WALL_SUFFIX,
    RUNNER_RUN_SUFFIX,
    CapturePlan,
    DeviceClock,
    Interval,
    Plan,
    fmt_interval,
)
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.errors import TraceInputError


@dataclass(slots=True)
class PlaceContext:
    stages: list[tuple[int, float, float]]    # device_execution stages (reference axis)
    unmatched: list                            # captures with no run pid of their own
    offset_us: float | None
    found: dict = field(default_factory=dict)  # capture -> its CaptureWindows (or None)

    def windows(self, cap: rs.Capture) -> CaptureWindows | None:
        if cap not in self.found:
            self.found[cap] = capture_windows(cap)
        return self.found[cap]


def stream_extents(cap: rs.Capture) -> dict[str, tuple[int, int]]:
    """Earliest start / latest end (cycles) of the device streams, by kind and in all."""
    rec = cap.records
    out: dict[str, tuple[int, int]] = {}

    def add(kind, starts, ends):
        if len(starts):
            lo, hi = int(starts.min()), int(ends.max())
            if kind in out:
                lo, hi = min(lo, out[kind][0]), max(hi, out[kind][1])
            out[kind] = (lo, hi)

    a, c = rec.aicore, rec.aicpu
    add("aicore", a["start_cycles"] - a["receive_to_start_cycles"], a["end_cycles"])
    if len(c["dispatch_cycles"]):
        add("aicpu", c["dispatch_cycles"], c["finish_cycles"])
    for s in rec.scheduler:
        add("sched", s.start, s.end)
    for s in rec.orchestrator:
        add("orch", s.start, s.end)
    for s in rec.lifecycle:
        add("lifecycle", s.start, s.end)
    if out:
        out["all"] = (min(v[0] for v in out.values()), max(v[1] for v in out.values()))
    return out


def _positive_bounds(arrays) -> tuple[int, int] | None:
    """(min, max) of the positive values (0 is "never stamped" in Simpler's records). The
    mask is made only for a stream that holds a value <= 0: with `PlaceContext.windows` making
    the windows once per capture, a 100K-task capture is placed in 2.5-3.0 ms instead of
    34-41 ms (min of 7, three rounds; the lazy mask alone 8-12 ms, the once-only windows
    alone 13-21 ms)."""
    lo = hi = None
    for a in arrays:
        if not len(a):
            continue
        a_lo = int(a.min())
        if a_lo <= 0:                  # rare: only then pay for the mask
            a = a[a > 0]
            if not len(a):
                continue
            a_lo = int(a.min())
        a_hi = int(a.max())
        lo = a_lo if lo is None else min(lo, a_lo)
        hi = a_hi if hi is None else max(hi, a_hi)
    return None if lo is None else (lo, hi)


def capture_windows(cap: rs.Capture) -> CaptureWindows | None:
    """What containment reads of a capture, as Simpler's `capture_windows` does: the extent of
    every device-clock stream (a task's bar opens at its receive time) and the windows of the
    streams the log's sub-phases bracket (`sched`: the AICPU scheduler's; `orch`: the device
    orchestrator's). A converted trace's ns (from its own origin) count as 1 GHz cycles.
    `PlaceContext.windows` makes it once per capture (a 100K-task capture: about 5 ms)."""
    rec = cap.records
    if rec is not None:
        a, c = rec.aicore, rec.aicpu
        sched = [x for s in rec.scheduler if getattr(s, "producer", "aicpu") == "aicpu"
                 for x in (s.start, s.end)]
        orch = [x for s in rec.orchestrator for x in (s.start, s.end)]
        # today's AICPU lifecycle records (a reader of today's layout gives them as phase
        # streams) are device-clock records too: they widen the extent, as in Simpler's
        lifecycle = [x for s in getattr(rec, "lifecycle", ()) for x in (s.start, s.end)]
        ext = _positive_bounds([a["start_cycles"] - a["receive_to_start_cycles"],
                                a["start_cycles"], a["end_cycles"], c["dispatch_cycles"],
                                c["finish_cycles"], *(x for s in rec.scheduler
                                                      for x in (s.start, s.end)), *orch,
                                *lifecycle])
        if ext is None:
            return None
        found = {"sched": _positive_bounds(sched), "orch": _positive_bounds(orch),
                 "aicpu": _positive_bounds([c["dispatch_cycles"], c["finish_cycles"]])}
        return CaptureWindows(rec.path, rec.freq_hz, ext,
                              {k: v for k, v in found.items() if v is not None})
    slices = [(conv, s) for conv in cap.converted for s in conv.slices]
    if not slices:
        return None
    windows = {}
    for key, view in (("sched", "AICPU Scheduler"), ("orch", "AICPU Orchestrator")):
        mine = [s for conv, s in slices if conv.process_names.get(s.pid) == view]
        if mine:
            windows[key] = (min(s.start_ns for s in mine), max(s.end_ns for s in mine))
    return CaptureWindows(cap.converted[0].path, 1_000_000_000,
                          (min(s.start_ns for _, s in slices), max(s.end_ns for _, s in slices)),
                          windows)


def device_clock(capture_plan: CapturePlan, stage, ctx: PlaceContext, plan: Plan) -> DeviceClock:
    cap, offset_us = capture_plan.capture, ctx.offset_us
    rec = cap.records
    freq = rec.freq_hz
    why_not = "no clock anchors in the capture"
    if rec.clock_anchors is not None:
        try:
            mapping = build_clock_mapping(rec.clock_anchors, freq,
                                          host_quantization_ns=rec.host_timestamp_quantization_ns)
        except ClockAnchorsUnusable as exc:
            why_not = f"clock anchors unusable: {exc.reason}"
        else:
            dev = DeviceClock(PlacementStatus.CALIBRATED, freq, f"calibrated by clock anchors "
                              f"({mapping.method})", mapping=mapping,
                              host_offset_ns=capture_plan.host.offset_ns,
                              uncertainty_ns=mapping.uncertainty_ns)
            _calibrated_interval(dev, ctx.windows(cap))
            if capture_plan.window is not None:
                dev.cross_check = _cross_check(capture_plan, dev, ctx.windows(cap), plan)
            if offset_us is not None:
                plan.warnings.append(f"{cap.files.directory}: --offset-us {offset_us:g} not "
                                     "applied: calibrated by its clock anchors")
            return dev
    if offset_us is None and capture_plan.window is not None:
        windows = ctx.windows(cap)
        if windows is not None:
            return _contained(capture_plan, windows, stage, why_not, plan)
    scale = 1e9 / freq
    ext = {k: (lo * scale, hi * scale) for k, (lo, hi) in stream_extents(cap).items()}
    return _estimate(capture_plan, ext, stage, offset_us, plan, freq, why_not)


def converted_clock(capture_plan: CapturePlan, stage, ctx: PlaceContext, plan: Plan) -> DeviceClock:
    cap, offset_us = capture_plan.capture, ctx.offset_us
    why_not = "Simpler's converted trace has no host clock"
    if offset_us is None and capture_plan.window is not None:
        windows = ctx.windows(cap)
        if windows is not None:
            return _contained(capture_plan, windows, stage, why_not, plan)
    lo = min(t.start_ns for t in cap.converted)
    hi = max(t.end_ns for t in cap.converted)
    return _estimate(capture_plan, {"all": (lo, hi)}, stage, offset_us, plan, 1_000_000_000, why_not)


def _not_one_run(capture_plan: CapturePlan, path: str, e: NotOneRun) -> TraceInputError:
    w = capture_plan.window
    return TraceInputError(path, f"and {w.log.path} ({w.where}) cannot describe one run: "
                                 f"{e.detail}")


def _calibrated_interval(dev: DeviceClock, windows: CaptureWindows | None) -> None:
    """The anchors' offset over the capture's extent (the mapping corrects the frequency,
    so the offset moves along it), widened by their uncertainty either way."""
    if windows is None:
        return
    ends = np.array(windows.extent, dtype=np.int64)
    offs = dev.to_ns(ends) - ends * (1e9 / dev.freq_hz)
    sure = dev.uncertainty_ns or 0.0
    dev.drawn_offset_ns = float(offs[0])
    dev.offset_lo_ns, dev.offset_hi_ns = float(offs.min()) - sure, float(offs.max()) + sure


def _cross_check(capture_plan: CapturePlan, dev: DeviceClock, windows: CaptureWindows | None,
                 plan: Plan) -> str | None:
    """A calibrated capture and the invocation it was paired with: refused when they cannot
    describe one run (as a contained capture is); else whether the offsets span containment
    allows hold the anchors' (said in the summary; a warning, by how much, when not)."""
    if windows is None:
        return None
    try:
        c = contain(capture_plan.window, windows)
    except NotOneRun as e:
        raise _not_one_run(capture_plan, windows.path, e) from None
    off = capture_plan.host.offset_ns
    lo, hi = float(c.offset_lo_ns) + off, float(c.offset_hi_ns) + off
    a_lo, a_hi, at = dev.offset_lo_ns, dev.offset_hi_ns, dev.drawn_offset_ns
    where = f"span containment in {capture_plan.window.log.path} ({capture_plan.window.where})"
    if a_hi >= lo and a_lo <= hi:
        return (f"{where} agrees: it allows {fmt_interval(lo - at, hi - at)} around where the "
                "anchors put the device")
    miss = lo - a_hi if a_hi < lo else a_lo - hi
    plan.warnings.append(f"{windows.path}: its clock anchors put it {fmt_ns(miss)} "
                         f"{'earlier' if a_hi < lo else 'later'} than anything {where} allows "
                         "(the anchors or the run log are wrong; the anchors are used)")
    return None


def _contained(capture_plan: CapturePlan, windows: CaptureWindows, stage, why_not: str,
               plan: Plan) -> DeviceClock:
    """Span containment in the capture's invocation (reference axis: + the log's offset)."""
    w, off = capture_plan.window, capture_plan.host.offset_ns
    stages = [] if stage is None else [(round(stage[0]) - off, round(stage[1]) - off,
                                        "inside its run's device_execution stage")]
    try:
        c = contain(w, windows, stages)
    except NotOneRun as e:
        raise _not_one_run(capture_plan, windows.path, e) from None
    slack = round(c.slack_ns)
    join = c.join
    method = "device_wall cycles" if join.by_cycles else METHOD
    origin = ("origin at device_wall's dev_start_cycle" if join.by_cycles else
              f"origin joined by {', '.join(join.sources)} "
              f"(±{fmt_ns(float(c.residual_ns) / 2)})")
    how = (f"{method}: {w.log.path} {w.where} (paired by {capture_plan.paired_by}); "
           + "; ".join(c.constraints) + f"; {origin}; {why_not}")
    for d in c.dropped:
        plan.warnings.append(f"{windows.path}: placement constraint dropped: {d}")
    drawn = c.cycle_offset_ns() + off
    dev = DeviceClock(PlacementStatus.JOINED if join.by_cycles else PlacementStatus.CONTAINED,
                      windows.freq_hz, how,
                      offset_ns=drawn,
                      host_offset_ns=off, containment=c, offset_lo_ns=float(c.offset_lo_ns) + off,
                      offset_hi_ns=float(c.offset_hi_ns) + off)
    earlier, later = dev.interval
    dev.uncertainty_ns = max(-earlier, later)
    wall = ""
    if c.wall_hi_ns is not None:
        wall = (f"; device_wall ({fmt_ns(w.device_wall_ns)}) ending inside {w.root}{RUNNER}, "
                f"as Simpler's tools assume, would cut the later end to "
                f"+{fmt_ns(float(c.wall_hi_ns) + off - drawn)}: not relied on (Simpler's "
                "simulator times device_wall on its own clock, and it can outlast "
                f"{w.root}{RUNNER})")
    by = ("device_wall's cycles inside its host span" if join.by_cycles
          else "span containment")
    plan.warnings.append(f"{capture_plan.capture.files.directory}: device time placed by {by}, "
                         f"not calibrated: the records may lie "
                         f"{fmt_ns(-earlier)} earlier to {fmt_ns(later)} later than drawn "
                         f"(drawn as Simpler does, slack {fmt_ns(slack)}){wall} ({how})")
    return dev


def _estimate(capture_plan: CapturePlan, ext: dict, stage, offset_us, plan: Plan, freq: int,
              why_not: str) -> DeviceClock:
    """A bounded estimate of `p` in `reference_ns = nominal_ns + p` (see the docstring)."""
    where = capture_plan.capture.files.directory
    if not ext:
        return DeviceClock(PlacementStatus.ESTIMATED, freq, f"no device records; {why_not}", offset_ns=0.0)
    lo_all, hi_all = ext["all"]
    if offset_us is not None:
        base, base_why = _offset_base(capture_plan, stage)
        return DeviceClock(PlacementStatus.ESTIMATED, freq, f"{offset_us:g} us after {base_why} "
                           f"(--offset-us); {why_not}", offset_ns=base + offset_us * 1e3 - lo_all)
    bounds: list[Interval] = []
    if stage is not None:
        bounds.append(Interval(stage[0] - lo_all, stage[1] - hi_all,
                               "inside its run's device_execution stage"))
    log_bound = _run_log_bound(capture_plan, ext)
    if log_bound is not None:
        bounds.append(log_bound)
    feasible = _intersect(bounds)
    if feasible is None and bounds:
        if len(bounds) > 1:
            plan.warnings.append(f"{where}: the placement constraints disagree; dropped: "
                                 + "; ".join(b.why for b in bounds[:-1])
                                 + f"; kept: {bounds[-1].why}")
        else:
            plan.warnings.append(f"{where}: its records are longer than the span that must "
                                 f"hold them ({bounds[0].why}): centred on it")
        feasible = bounds[-1] if bounds[-1].lo <= bounds[-1].hi else Interval(
            bounds[-1].mid, bounds[-1].mid, bounds[-1].why)
    if feasible is None:
        base, base_why = _offset_base(capture_plan, stage)
        plan.warnings.append(f"{where}: device time is ESTIMATED with no bound ({why_not}, no "
                             "run log or device_execution stage of its run): its first record "
                             f"is put at {base_why}")
        return DeviceClock(PlacementStatus.ESTIMATED, freq, f"first record at {base_why}; {why_not}",
                           offset_ns=base - lo_all)
    how = f"{feasible.why}; {why_not}"
    plan.warnings.append(f"{where}: device time is ESTIMATED ±{fmt_ns(feasible.half_width)} "
                         f"({how}), not calibrated")
    return DeviceClock(PlacementStatus.ESTIMATED, freq, how, offset_ns=feasible.mid,
                       uncertainty_ns=feasible.half_width, offset_lo_ns=feasible.lo,
                       offset_hi_ns=feasible.hi)


def _offset_base(capture_plan: CapturePlan, stage) -> tuple[float, str]:
    if stage is not None:
        return stage[0], "the start of its run's device_execution stage"
    span = _runner_run(capture_plan)
    if span is not None:
        return span.ts_ns + capture_plan.host.offset_ns, f"the start of its run's {span.name} span"
    return 0.0, "time 0 (no device_execution stage or run log of its run)"


def _intersect(bounds: list[Interval]) -> Interval | None:
    if not bounds:
        return None
    lo = max(b.lo for b in bounds)
    hi = min(b.hi for b in bounds)
    if lo > hi:
        return None
    return Interval(lo, hi, "; ".join(b.why for b in bounds))


def _spans(capture_plan: CapturePlan) -> list:
    """The run-log spans of the capture's run: its invocation's, else its own log's."""
    if capture_plan.window is not None:
        return capture_plan.window.spans
    log = capture_plan.capture.run_log
    return log.spans if log is not None else []


def _runner_run(capture_plan: CapturePlan):
    return next((sp for sp in _spans(capture_plan)
                 if not sp.device_clock and sp.name.endswith(RUNNER_RUN_SUFFIX)), None)


def device_wall_span(spans: list):
    """The `<host span>.device_wall` (clk=dev) span of `spans` and its host parent span."""
    wall = next((sp for sp in spans
                 if sp.device_clock and sp.name.endswith(DEVICE_WALL_SUFFIX)), None)
    if wall is None:
        return None, None, []
    parent_name = wall.name[:-len(DEVICE_WALL_SUFFIX)]
    parent = next((sp for sp in spans if not sp.device_clock and sp.name == parent_name
                   and sp.pid == wall.pid and sp.tid == wall.tid and sp.inv == wall.inv), None)
    children = [sp for sp in spans
                if sp.device_clock and sp.name.startswith(wall.name + ".")]
    return wall, parent, children


def wall_bounds(ext: dict, wall, children) -> Interval:
    """q in `device_wall_ns = nominal_ns + q`: the records lie inside device_wall, the
    scheduler phases inside its `sched` child, the orchestrator phases inside `orch`. The
    spans and the records are not read from one clock read: in real captures they disagree
    by some µs, so constraints that exclude each other give their hull, not nothing."""
    lo_all, hi_all = ext["all"]
    bounds = [Interval(wall.ts_ns - lo_all, wall.ts_ns + wall.dur_ns - hi_all,
                       "the records inside device_wall")]
    for child in children:
        kind = child.name.rsplit(".", 1)[-1]
        if kind in ("sched", "orch") and kind in ext:
            k_lo, k_hi = ext[kind]
            bounds.append(Interval(child.ts_ns - k_lo, child.ts_ns + child.dur_ns - k_hi,
                                   f"{kind} phases inside device_wall.{kind}"))
    why = ", ".join(b.why for b in bounds)
    both = _intersect(bounds)
    if both is not None:
        return Interval(both.lo, both.hi, why)
    return Interval(min(b.lo for b in bounds), max(b.hi for b in bounds), why)


def wall_in_host(parent, wall, children) -> Interval:
    """o in `reference_ns = device_wall_ns + o` (before the host offset): device_wall starts
    inside its host span and its children end inside it. device_wall itself may end after
    the host span does (seen on a real capture: 60 ms past `runner_run`), so its own end is
    no bound."""
    content_end = max((c.ts_ns + c.dur_ns for c in children), default=wall.ts_ns)
    return Interval(parent.ts_ns - wall.ts_ns, parent.ts_ns + parent.dur_ns - content_end,
                    f"device_wall inside {parent.name}")


def _run_log_bound(capture_plan: CapturePlan, ext: dict) -> Interval | None:
    """The bound from the capture's run log (reference axis) when it holds no invocation to
    contain the capture in (no `device_wall`): the records inside `runner_run`."""
    span = _runner_run(capture_plan)
    if span is None:
        return None
    lo_all, hi_all = ext["all"]
    off = capture_plan.host.offset_ns
    return Interval(span.ts_ns - lo_all + off, span.ts_ns + span.dur_ns - hi_all + off,
                    f"the records inside its run log's {span.name} span")


def _run_stage(capture_plan: CapturePlan, stages: list, unmatched: list) -> tuple[float, float] | None:
    """The capture's own run's device_execution stage: the one on its run's pid (of several,
    the one holding its invocation's runner_run), else (a capture without a run log) the
    n-th stage for the n-th such capture when the counts match. Never another run's."""
    if capture_plan.run_pid is not None:
        own = [s for s in stages if s[0] == capture_plan.run_pid]
        if len(own) > 1 and capture_plan.window is not None:
            lo, hi = capture_plan.window.start_ns + capture_plan.host.offset_ns, capture_plan.window.end_ns + capture_plan.host.offset_ns
            own = [s for s in own if s[1] <= lo and hi <= s[2]]
        return (own[0][1], own[0][2]) if len(own) == 1 else None
    cap = capture_plan.capture
    if cap in unmatched and len(stages) == len(unmatched):
        s = stages[unmatched.index(cap)]
        return s[1], s[2]
    return None


def place_capture(capture_plan: CapturePlan, ctx: PlaceContext, plan: Plan) -> None:
    cap = capture_plan.capture
    stage = _run_stage(capture_plan, ctx.stages, ctx.unmatched)
    if cap.records is not None:
        capture_plan.device = device_clock(capture_plan, stage, ctx, plan)
    elif cap.converted:         # the converter's rendering of records we do not have
        capture_plan.converted = converted_clock(capture_plan, stage, ctx, plan)
