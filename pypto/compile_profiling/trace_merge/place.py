"""Step 2 of a merge: every clock decision, per source, before anything is laid out.

One axis: host CLOCK_MONOTONIC ns of the reference host (the first compile trace's host,
else the first run log's). For each source this step decides how its times map onto it:

- host-clock sources (compile traces, `[STRACE]` host spans, host orchestrator phases) are
  exact on their own host; another host's are moved by wall-clock anchors
  (`otherData.clock_anchor`, `[CLOCK_ANCHOR]`), which assumes synchronised wall clocks;
- each capture is first paired with the run-log invocation that ran it (`pairing`: its
  dispatch identity, else its own run log, else a window fit);
- a capture with usable clock anchors is calibrated (`clock_alignment`), with the
  anchors' uncertainty; its invocation, when it has one, is checked to be its run;
- a capture without them paired with an invocation is placed by span containment
  (`containment`, Simpler's `span_containment_v1`): inside that invocation's
  `chip.run.runner_run`, joined to its `device_wall` sub-phases, after its `aicpu_launch`
  marker and inside its run's `device_execution` stage; drawn at the earliest placement,
  the remaining width is its stated bound ("contained, slack 137.0 ms"). A log and a
  capture that cannot describe one run are refused;
- a capture with neither (no run log) is an estimate bounded by its run's
  `device_execution` stage (the compile process with the run's pid, or the n-th stage for
  the n-th capture), put in the middle ("estimated ±85.6 ms"). `--offset-us` replaces
  both by the user's own placement;
- `pipeline_profile.json` has durations only: its `device_execution` goes to the first
  record of the earliest calibrated capture, else its start to the start of the other
  inputs, else 0 (estimated).

Last, nothing may land before time 0 (Perfetto drops it), and sources whose clocks were
joined only through wall-clock anchors must share some time with the reference host's:
otherwise they cannot be from one run and the merge is refused, unless `align="start"`
puts their starts together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.compile_profiling.trace_merge import read_simpler as rs
from pypto.compile_profiling.trace_merge.clock_alignment import (
    ClockAnchorsUnusable,
    build_clock_mapping,
    monotonic_offset_ns,
    wall_anchor_from_log,
)
from pypto.compile_profiling.trace_merge.containment import (
    METHOD,
    RUNNER,
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
    fmt_ns,
    host_windows,
)
from pypto.compile_profiling.trace_merge.pairing import Candidate, PairingError, pair
from pypto.compile_profiling.trace_merge.plan import (
    DEVICE_EXECUTION,
    DEVICE_WALL_SUFFIX,
    RUNNER_RUN_SUFFIX,
    SAME_HOST_TOLERANCE_NS,
    CapturePlan,
    DeviceClock,
    HostClock,
    Interval,
    Plan,
    ReportPlan,
    fmt_interval,
)
from pypto.compile_profiling.trace_merge.read_inputs import Inputs
from pypto.compile_profiling.trace_merge.run_log_choice import LogChoice, choose_run_log
from pypto.errors import TraceInputError

# --------------------------------------------------------------------------- the step

ALIGN_CHOICES = ("clock", "start")
_EXACT = "exact (host CLOCK_MONOTONIC)"


def place(inputs: Inputs, *, offset_us: float | None = None, align: str = "clock") -> Plan:
    """Decide every source's clock mapping (see the module docstring). `align="start"`:
    sources that share no time with the reference host's, and were joined to it only
    through wall-clock anchors, are moved to start with it (else they are refused)."""
    if align not in ALIGN_CHOICES:
        raise ValueError(f"align must be one of {ALIGN_CHOICES}, got {align!r}")
    plan = Plan(None, None)
    _place_traces(inputs, plan)
    choices = _choose_run_logs(inputs, plan)
    if plan.reference_anchor is None:
        for cap in inputs.captures:
            if cap.run_log is not None and cap.run_log.clock_anchors:
                plan.reference_anchor = wall_anchor_from_log(cap.run_log.clock_anchors[0])
                break
    hosts = {id(cap.run_log): _host_clock(cap.run_log, plan)
             for cap in inputs.captures if cap.run_log is not None}
    windows = {id(cap): host_windows(cap.run_log) if cap.run_log is not None else []
               for cap in inputs.captures}
    ctx = _Context(_device_execution_stages(plan), [], offset_us)
    pairs = _pair(inputs, windows, plan, ctx)
    ctx.unmatched = [c for c in inputs.captures if (c.records is not None or c.converted)
                     and id(c) not in pairs and _own_run_pid(c) is None]
    labels = _labels(inputs.captures)
    for cap, label in zip(inputs.captures, labels):
        found = pairs.get(id(cap))
        log = found[0].log if found is not None else cap.run_log
        host = hosts.get(id(log)) if log is not None else None
        capture_plan = CapturePlan(cap, label, host or HostClock(0, _EXACT), None, None,
                                   found[0].pid if found is not None else _own_run_pid(cap),
                                   *(found or (None, None)), choices.get(id(cap)))
        _place_capture(capture_plan, ctx, plan)
        plan.captures.append(capture_plan)
    if offset_us is not None and not any(c.device is not None or c.converted is not None
                                         for c in plan.captures):
        plan.warnings.append(f"--offset-us {offset_us:g}: not applied: no device capture "
                             "among the inputs")
    _check_times(plan, align, ctx)
    _place_walls(plan, windows)
    _place_reports(inputs, plan)
    return plan


def _choose_run_logs(inputs: Inputs, plan: Plan) -> dict[int, LogChoice]:
    """Of several run logs beside a capture, its own run's (`run_log_choice`), set as its
    `run_log`; none when nothing tells them apart (said as a warning). Never another run's."""
    out = {}
    stages = _device_execution_stages(plan)
    for cap in inputs.captures:
        if len(cap.run_logs) < 2:
            continue
        ident = cap.dispatch_identity
        choice = choose_run_log(
            cap.run_logs, capture_windows(cap), records=cap.records,
            identity=(ident.host_pid, ident.key) if ident else (None, None), stages=stages,
            host_offset=lambda log: _host_clock(log, plan).offset_ns)
        cap.run_log = choice.log
        out[id(cap)] = choice
        if choice.log is None:
            plan.warnings.append(f"{cap.files.directory}: {choice.how}: no run log used, the "
                                 "capture is placed without one (never another run's)")
    return out


@dataclass(slots=True)
class _Context:
    stages: list[tuple[int, float, float]]    # device_execution stages (reference axis)
    unmatched: list                            # captures with no run pid of their own
    offset_us: float | None
    found: dict = field(default_factory=dict)  # id(capture) -> its CaptureWindows (or None)

    def windows(self, cap: rs.Capture) -> CaptureWindows | None:
        if id(cap) not in self.found:
            self.found[id(cap)] = capture_windows(cap)
        return self.found[id(cap)]


def _pair(inputs: Inputs, windows: dict, plan: Plan, ctx: _Context
          ) -> dict[int, tuple[HostWindow, str]]:
    """id(capture) -> (its run-log invocation, how it was found), for every capture that
    draws device records; `PairingError` becomes the one-line input error."""
    drawn = [c for c in inputs.captures if c.records is not None or c.converted]
    pool = [w for cap in inputs.captures for w in windows[id(cap)]]
    if not pool:
        return {}
    cands = []
    for cap in drawn:
        ident = cap.dispatch_identity
        cands.append(Candidate(cap.records.path if cap.records is not None else
                               cap.converted[0].path, ctx.windows(cap), windows[id(cap)],
                               ident.host_pid if ident else None, ident.key if ident else None,
                               ident.path if ident else None))
    try:
        found, warnings = pair(cands, pool)
    except PairingError as e:
        raise TraceInputError(e.path, e.problem) from None
    plan.warnings.extend(warnings)
    return {id(drawn[i]): (p.window, p.how) for i, p in found.items()}


def _place_capture(capture_plan: CapturePlan, ctx: _Context, plan: Plan) -> None:
    cap = capture_plan.capture
    stage = _run_stage(capture_plan, ctx.stages, ctx.unmatched)
    if cap.records is not None:
        capture_plan.device = _device_clock(capture_plan, stage, ctx, plan)
    elif cap.converted:         # the converter's rendering of records we do not have
        capture_plan.converted = _converted_clock(capture_plan, stage, ctx, plan)


def _place_traces(inputs: Inputs, plan: Plan) -> None:
    for trace in inputs.traces:
        if plan.reference_anchor is None and not plan.traces:
            plan.reference_anchor, plan.reference_host = trace.wall_anchor, trace.host
            plan.traces.append((trace, HostClock(0, _EXACT)))
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
            plan.traces.append((trace, HostClock(0, _EXACT)))


def _device_execution_stages(plan: Plan) -> list[tuple[int, float, float]]:
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


def _own_run_pid(cap: rs.Capture) -> int | None:
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


def _host_clock(log, plan: Plan) -> HostClock:
    if plan.reference_anchor is None or not log.clock_anchors:
        return HostClock(0, _EXACT)
    off = monotonic_offset_ns(plan.reference_anchor, wall_anchor_from_log(log.clock_anchors[0]))
    if abs(off) <= SAME_HOST_TOLERANCE_NS:
        return HostClock(0, "exact (host CLOCK_MONOTONIC, same host by its [CLOCK_ANCHOR])")
    return HostClock(off, f"cross-host: moved by [CLOCK_ANCHOR] wall-clock anchors ({off:+d} "
                          "ns; assumes synchronised wall clocks)")


def _labels(captures: list[rs.Capture]) -> list[str]:
    """Per capture: `r<rank>[d<k>]` in the distributed layout; a lone flat `dfx_outputs/` is
    `r0`; else the work dir's (or capture dir's) name. Captures that would share a label
    (two work dirs both called `work`, or two runs' `rank0/d0`) are named by the path that
    tells them apart instead (`a/work`, `b/work`), so their device processes differ."""
    flat = [c for c in captures if _flat(c.files)]
    labels = [("r0" if len(flat) == 1 else Path(_named_dir(c.files)).name) if _flat(c.files)
              else c.files.label for c in captures]
    for label in {x for x in labels if labels.count(x) > 1}:
        alike = [i for i, x in enumerate(labels) if x == label]
        named = [os.path.abspath(_named_dir(captures[i].files)) for i in alike]
        common = os.path.commonpath(named)
        for i, d in zip(alike, named):
            where = os.path.relpath(d, common)
            labels[i] = where if _flat(captures[i].files) or captures[i].files.rank is None \
                else f"{where} {label}"
    return labels


def _flat(files: rs.CaptureFiles) -> bool:
    return files.rank is None and Path(files.directory).name.endswith("dfx_outputs")


def _named_dir(files: rs.CaptureFiles) -> str:
    """The directory a capture's label comes from: a flat `dfx_outputs/`'s work dir, the
    work dir above a distributed layout's `dfx_outputs/rank<r>/...`, else the capture dir."""
    d = Path(files.directory)
    if _flat(files):
        return str(d.parent)
    if files.rank is not None:
        parts = d.parts
        if "dfx_outputs" in parts:
            at = len(parts) - 1 - parts[::-1].index("dfx_outputs")
            return str(Path(*parts[:at]))
    return str(d)


# --------------------------------------------------------------------------- device clocks

def _extents(cap: rs.Capture) -> dict[str, tuple[int, int]]:
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
    mask is made only for a stream that holds a value <= 0: with `_Context.windows` making
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
    `_Context.windows` makes it once per capture (a 100K-task capture: about 5 ms)."""
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


def _device_clock(capture_plan: CapturePlan, stage, ctx: _Context, plan: Plan) -> DeviceClock:
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
            dev = DeviceClock("calibrated", freq, f"calibrated by clock anchors "
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
    ext = {k: (lo * scale, hi * scale) for k, (lo, hi) in _extents(cap).items()}
    return _estimate(capture_plan, ext, stage, offset_us, plan, freq, why_not)


def _converted_clock(capture_plan: CapturePlan, stage, ctx: _Context, plan: Plan) -> DeviceClock:
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
    dev = DeviceClock("joined" if join.by_cycles else "contained", windows.freq_hz, how,
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
        return DeviceClock("estimated", freq, f"no device records; {why_not}", offset_ns=0.0)
    lo_all, hi_all = ext["all"]
    if offset_us is not None:
        base, base_why = _offset_base(capture_plan, stage)
        return DeviceClock("estimated", freq, f"{offset_us:g} us after {base_why} "
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
        return DeviceClock("estimated", freq, f"first record at {base_why}; {why_not}",
                           offset_ns=base - lo_all)
    how = f"{feasible.why}; {why_not}"
    plan.warnings.append(f"{where}: device time is ESTIMATED ±{fmt_ns(feasible.half_width)} "
                         f"({how}), not calibrated")
    return DeviceClock("estimated", freq, how, offset_ns=feasible.mid,
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


def _device_wall(spans: list):
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


def _wall_bounds(ext: dict, wall, children) -> Interval:
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


def _wall_in_host(parent, wall, children) -> Interval:
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


def _wall_offset(capture_plan: CapturePlan | None, w: HostWindow, host: HostClock) -> int | None:
    """Offset of one invocation's clk=dev spans onto the reference axis: where containment
    put the device-phase origin; for a calibrated or hand-placed capture, consistent with
    where its records were put and inside the host span that holds them; with no capture,
    the middle of what that host span allows."""
    dev = None if capture_plan is None else capture_plan.device or capture_plan.converted
    if dev is not None and dev.containment is not None:
        return dev.containment.phase_offset_ns() + host.offset_ns
    wall, parent, children = _device_wall(w.spans)
    if parent is None:                       # device_wall on another thread than runner_run
        parent = next(sp for sp in w.spans if not sp.device_clock
                      and sp.name == w.root + ".runner_run")
    o = _wall_in_host(parent, wall, children)
    o_lo, o_hi = o.lo + host.offset_ns, o.hi + host.offset_ns
    # device_wall's own end inside its host span too, where that leaves room (a simulator's
    # wall can run past it: then only its start and its children are bounds)
    own_end = parent.ts_ns + parent.dur_ns - wall.ts_ns - wall.dur_ns + host.offset_ns
    if o_lo <= own_end:
        o_hi = min(o_hi, own_end)
    if capture_plan is not None and capture_plan.device is not None:
        ext = _extents(capture_plan.capture)
        if ext:
            scale = 1e9 / dev.freq_hz
            q = _wall_bounds({k: (a * scale, b * scale) for k, (a, b) in ext.items()},
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


def _place_walls(plan: Plan, windows: dict) -> None:
    """`plan.wall_offsets` for every invocation of every run log that has clk=dev spans."""
    by_window = {id(capture_plan.window): capture_plan for capture_plan in plan.captures if capture_plan.window is not None}
    for owner in plan.captures:
        for w in windows[id(owner.capture)]:
            capture_plan = by_window.get(id(w))
            host = capture_plan.host if capture_plan is not None else owner.host
            off = _wall_offset(capture_plan, w, host)
            if off is None:
                continue
            dev = None if capture_plan is None else capture_plan.device or capture_plan.converted
            label = "estimated: middle of its host span" if dev is None else dev.label
            plan.wall_offsets[(w.log.path, w.pid, w.inv)] = (off, label)


# --------------------------------------------------------------------------- one run, time >= 0

def _capture_extent(capture_plan: CapturePlan) -> tuple[int, int] | None:
    """Earliest and latest reference-axis ns of everything a capture draws."""
    cap, off = capture_plan.capture, capture_plan.host.offset_ns
    points: list[int] = []
    if capture_plan.device is not None:
        ext = _extents(cap)
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


def _check_times(plan: Plan, align: str, ctx: _Context) -> None:
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
                       != "calibrated" for s in sources)
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


def _shift(plan: Plan, ctx: _Context, sources: list, shift: int, ref_path: str) -> None:
    """Move a group of sources by `shift` ns (`--align start`), and place its captures again."""
    why = f"; moved {shift:+d} ns to start with {ref_path} (--align start: not a clock relation)"
    for _, _, _, (kind, obj) in sources:
        if kind == "trace":
            trace, host_clock = plan.traces[obj]
            plan.traces[obj] = (trace, HostClock(host_clock.offset_ns + shift, host_clock.how + why))
        else:
            obj.host = HostClock(obj.host.offset_ns + shift, obj.host.how + why)
            _place_capture(obj, ctx, plan)


# --------------------------------------------------------------------------- reports

def _place_reports(inputs: Inputs, plan: Plan) -> None:
    calibrated_starts = []
    for capture_plan in plan.captures:
        if capture_plan.device is not None and capture_plan.device.status == "calibrated":
            ext = _extents(capture_plan.capture)
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
