"""Step 2 of a merge: every clock decision, per source, before anything is laid out.

One axis: host CLOCK_MONOTONIC ns of the reference host (the first compile trace's host,
else the first run log's). For each source this step decides how its times map onto it:

- host-clock sources (compile traces, `[STRACE]` host spans, host orchestrator phases) are
  exact on their own host; another host's are moved by wall-clock anchors
  (`otherData.clock_anchor`, `[CLOCK_ANCHOR]`), which assumes synchronised wall clocks;
- a capture with usable clock anchors is calibrated (`clock_alignment`), with the
  anchors' uncertainty;
- a capture without them (device-orchestrated runs, Simpler's converted traces) is an
  estimate bounded by every constraint of its own run: its device work lies inside that
  run's `device_execution` stage (the compile process with the run's pid, or the n-th
  stage for the n-th capture), inside the run log's host span that holds the device run
  (`chip.run.runner_run`), and, through the log's `clk=dev` spans (device clock, own
  origin: `...device_wall` and its children `orch`/`sched`), the scheduler and
  orchestrator phases lie inside `device_wall.sched`/`.orch`. The capture is put in the
  middle of the feasible interval and the half-width is its stated uncertainty
  ("estimated ±85.6 ms"). `--offset-us` replaces all that by the user's own placement.
- `pipeline_profile.json` has durations only: its `device_execution` goes to the first
  record of the earliest calibrated capture, else its start to the start of the other
  inputs, else 0 (estimated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.trace_merge import read_simpler as rs
from pypto.compile_profiling.trace_merge.clock_alignment import (
    ClockAnchorsUnusable,
    ClockMapping,
    WallClockAnchor,
    build_clock_mapping,
    monotonic_offset_ns,
    wall_anchor_from_log,
)
from pypto.compile_profiling.trace_merge.read_inputs import CompileTrace, Inputs, ProfileReport

SAME_HOST_TOLERANCE_NS = 1_000_000_000   # wall-minus-monotonic agreement meaning "one host"
DEVICE_EXECUTION = "device_execution"
RUNNER_RUN_SUFFIX = "runner_run"
DEVICE_WALL_SUFFIX = ".device_wall"


@dataclass(slots=True)
class HostClock:
    """A source's host CLOCK_MONOTONIC times + `offset_ns` = reference-axis times."""

    offset_ns: int
    how: str


@dataclass(slots=True)
class Interval:
    """A closed interval of offsets (ns) and where it came from."""

    lo: float
    hi: float
    why: str

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


@dataclass(slots=True)
class DeviceClock:
    """Device cycles -> reference-axis ns, and how sure that is."""

    status: str                       # "calibrated" | "estimated"
    freq_hz: int
    how: str                          # for the summary and the process args
    mapping: ClockMapping | None = None
    offset_ns: float = 0.0            # estimated: ns = cycles * 1e9 / f + offset_ns
    host_offset_ns: int = 0           # calibrated: the run's host onto the reference axis
    uncertainty_ns: float | None = None   # None: unbounded (no constraint)

    def to_ns(self, cycles: np.ndarray) -> np.ndarray:
        """int64 ns on the reference axis (time points rounded once, here)."""
        if self.mapping is not None:
            ns = self.mapping.to_host_ns(cycles) + self.host_offset_ns
        else:
            ns = cycles.astype(np.float64) * (1e9 / self.freq_hz) + self.offset_ns
        return np.rint(ns).astype(np.int64)

    def describe(self) -> dict:
        if self.mapping is not None:
            info = self.mapping.describe()
        else:
            info = {"status": "estimated", "method": "bounded_offset", "reason": self.how,
                    "frequency_hz": self.freq_hz, "offset_ns": round(self.offset_ns)}
            if self.uncertainty_ns is not None:
                info["uncertainty_ns"] = round(self.uncertainty_ns)
        if self.host_offset_ns:
            info["host_offset_ns"] = self.host_offset_ns
        return info

    @property
    def label(self) -> str:
        """What the device processes' names say: "calibrated ±386 ns", "estimated ±85.6 ms"."""
        sure = "" if self.uncertainty_ns is None else f" ±{fmt_ns(self.uncertainty_ns)}"
        return f"{self.status}{sure}"


@dataclass(slots=True)
class CapturePlan:
    """Where one capture leaf goes."""

    capture: rs.Capture
    label: str                        # "r0", "r1d0", or the work dir's name
    host: HostClock                   # its host streams and run log
    device: DeviceClock | None        # its records (None without records)
    converted: DeviceClock | None     # its merged_swimlane*.json (ns from its own origin)
    device_wall_offset_ns: int | None  # clk=dev spans: ns + offset = reference axis
    run_pid: int | None               # the OS pid of its run, when known


@dataclass(slots=True)
class ReportPlan:
    report: ProfileReport
    origin_ns: float
    how: str


@dataclass(slots=True)
class Plan:
    reference_host: str | None
    reference_anchor: WallClockAnchor | None
    traces: list[tuple[CompileTrace, HostClock]] = field(default_factory=list)
    reports: list[ReportPlan] = field(default_factory=list)
    captures: list[CapturePlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def fmt_ns(ns: float) -> str:
    ns = abs(ns)
    if ns < 10_000:
        return f"{ns:.0f} ns"
    if ns < 10_000_000:
        return f"{ns / 1e3:.1f} us"
    if ns < 10_000_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.1f} s"


# --------------------------------------------------------------------------- the step

def place(inputs: Inputs, *, offset_us: float | None = None) -> Plan:
    """Decide every source's clock mapping (see the module docstring)."""
    plan = Plan(None, None)
    _place_traces(inputs, plan)
    if plan.reference_anchor is None:
        for cap in inputs.captures:
            if cap.run_log is not None and cap.run_log.clock_anchors:
                plan.reference_anchor = wall_anchor_from_log(cap.run_log.clock_anchors[0])
                break
    exec_stages = _device_execution_stages(plan)
    unmatched = [c for c in inputs.captures if _run_pid(c) is None
                 and (c.records is not None or c.converted)]
    flat = [c for c in inputs.captures if c.files.rank is None
            and c.files.directory.rstrip("/").endswith("dfx_outputs")]
    for cap in inputs.captures:
        host = _host_clock(cap, plan)
        stage = _run_stage(cap, exec_stages, unmatched)
        cp = CapturePlan(cap, _label(cap, single=len(flat) == 1), host, None, None, None,
                         _run_pid(cap))
        if cap.records is not None:
            cp.device = _device_clock(cap, host, stage, offset_us, plan)
        elif cap.converted:         # the converter's rendering of records we do not have
            cp.converted = _converted_clock(cap, host, stage, offset_us, plan)
        cp.device_wall_offset_ns = _device_wall_offset(cap, cp)
        plan.captures.append(cp)
    _place_reports(inputs, plan)
    return plan


def _place_traces(inputs: Inputs, plan: Plan) -> None:
    for ct in inputs.traces:
        if plan.reference_anchor is None and not plan.traces:
            plan.reference_anchor, plan.reference_host = ct.wall_anchor, ct.host
            plan.traces.append((ct, HostClock(0, "exact (host CLOCK_MONOTONIC)")))
            continue
        ref_host = plan.reference_host
        if ct.host and ref_host and ct.host != ref_host:
            if ct.wall_anchor is not None and plan.reference_anchor is not None:
                off = monotonic_offset_ns(plan.reference_anchor, ct.wall_anchor)
                plan.traces.append((ct, HostClock(off, (
                    f"cross-host: host {ct.host} moved by wall-clock anchors ({off:+d} ns; "
                    "assumes synchronised wall clocks)"))))
            else:
                plan.warnings.append(f"{ct.path}: from host {ct.host}, but without clock "
                                     f"anchors it cannot be aligned with {ref_host}; placed "
                                     "on its own monotonic clock")
                plan.traces.append((ct, HostClock(0, "unaligned other host (no clock anchor)")))
        else:
            plan.traces.append((ct, HostClock(0, "exact (host CLOCK_MONOTONIC)")))


def _device_execution_stages(plan: Plan) -> list[tuple[int, float, float]]:
    """(os pid, start, end) of every device_execution stage, reference axis, in time order."""
    out = []
    for ct, hc in plan.traces:
        for i, name in enumerate(ct.name):
            if name == DEVICE_EXECUTION:
                out.append((ct.pid[i], ct.start_ns[i] + hc.offset_ns, ct.end_ns[i] + hc.offset_ns))
    out.sort(key=lambda s: s[1])
    return out


def _run_pid(cap: rs.Capture) -> int | None:
    """The OS pid of the process that ran this capture, from its own run log."""
    log = cap.run_log
    if log is None:
        return None
    for sp in log.spans:
        if not sp.device_clock and sp.name.endswith(RUNNER_RUN_SUFFIX):
            return sp.pid
    if log.clock_anchors:
        return log.clock_anchors[0].pid
    return log.spans[0].pid if log.spans else None


def _run_stage(cap: rs.Capture, stages: list, unmatched: list) -> tuple[float, float] | None:
    """The capture's own run's device_execution stage: the one on its run's pid, else (a
    capture without a run log) the n-th stage for the n-th such capture when the counts
    match. Never another run's."""
    pid = _run_pid(cap)
    if pid is not None:
        own = [s for s in stages if s[0] == pid]
        return (own[0][1], own[0][2]) if len(own) == 1 else None
    if cap in unmatched and len(stages) == len(unmatched):
        s = stages[unmatched.index(cap)]
        return s[1], s[2]
    return None


def _host_clock(cap: rs.Capture, plan: Plan) -> HostClock:
    log = cap.run_log
    if plan.reference_anchor is None or log is None or not log.clock_anchors:
        return HostClock(0, "exact (host CLOCK_MONOTONIC)")
    off = monotonic_offset_ns(plan.reference_anchor, wall_anchor_from_log(log.clock_anchors[0]))
    if abs(off) <= SAME_HOST_TOLERANCE_NS:
        return HostClock(0, "exact (host CLOCK_MONOTONIC, same host by its [CLOCK_ANCHOR])")
    return HostClock(off, f"cross-host: moved by [CLOCK_ANCHOR] wall-clock anchors ({off:+d} "
                          "ns; assumes synchronised wall clocks)")


def _label(cap: rs.Capture, single: bool) -> str:
    """`r<rank>[d<k>]` in the distributed layout; a lone flat `dfx_outputs/` is `r0`; else the
    work dir's (or capture dir's) name, so two work dirs stay apart."""
    f = cap.files
    d = f.directory.rstrip("/")
    if f.rank is None and d.endswith("dfx_outputs"):
        return "r0" if single else d.rsplit("/", 2)[-2]
    return f.label


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
    if out:
        out["all"] = (min(v[0] for v in out.values()), max(v[1] for v in out.values()))
    return out


def _device_clock(cap: rs.Capture, host: HostClock, stage, offset_us, plan: Plan
                  ) -> DeviceClock:
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
            return DeviceClock("calibrated", freq, f"calibrated by clock anchors "
                               f"({mapping.method})", mapping=mapping,
                               host_offset_ns=host.offset_ns,
                               uncertainty_ns=mapping.uncertainty_ns)
    scale = 1e9 / freq
    ext = {k: (lo * scale, hi * scale) for k, (lo, hi) in _extents(cap).items()}
    return _estimate(cap, ext, host, stage, offset_us, plan, freq, why_not)


def _converted_clock(cap: rs.Capture, host: HostClock, stage, offset_us, plan: Plan
                     ) -> DeviceClock:
    lo = min(t.start_ns for t in cap.converted)
    hi = max(t.end_ns for t in cap.converted)
    return _estimate(cap, {"all": (lo, hi)}, host, stage, offset_us, plan, 1_000_000_000,
                     "Simpler's converted trace has no host clock")


def _estimate(cap, ext: dict, host: HostClock, stage, offset_us, plan: Plan, freq: int,
              why_not: str) -> DeviceClock:
    """A bounded estimate of `p` in `reference_ns = nominal_ns + p` (see the docstring)."""
    where = cap.files.directory
    if not ext:
        return DeviceClock("estimated", freq, f"no device records; {why_not}", offset_ns=0.0)
    lo_all, hi_all = ext["all"]
    if offset_us is not None:
        base, base_why = _offset_base(cap, host, stage)
        return DeviceClock("estimated", freq, f"{offset_us:g} us after {base_why} "
                           f"(--offset-us); {why_not}", offset_ns=base + offset_us * 1e3 - lo_all)
    bounds: list[Interval] = []
    if stage is not None:
        bounds.append(Interval(stage[0] - lo_all, stage[1] - hi_all,
                               "inside its run's device_execution stage"))
    log_bound = _run_log_bound(cap, ext, host)
    if log_bound is not None:
        bounds.append(log_bound)
    feasible = _intersect(bounds)
    if feasible is None and bounds:
        plan.warnings.append(f"{where}: the placement constraints disagree ("
                             + "; ".join(b.why for b in bounds) + f"); using: {bounds[-1].why}")
        feasible = bounds[-1] if bounds[-1].lo <= bounds[-1].hi else Interval(
            bounds[-1].mid, bounds[-1].mid, bounds[-1].why)
    if feasible is None:
        base, base_why = _offset_base(cap, host, stage)
        plan.warnings.append(f"{where}: device time is ESTIMATED with no bound ({why_not}, no "
                             "run log or device_execution stage of its run): its first record "
                             f"is put at {base_why}")
        return DeviceClock("estimated", freq, f"first record at {base_why}; {why_not}",
                           offset_ns=base - lo_all)
    how = f"{feasible.why}; {why_not}"
    plan.warnings.append(f"{where}: device time is ESTIMATED ±{fmt_ns(feasible.half_width)} "
                         f"({how}), not calibrated")
    return DeviceClock("estimated", freq, how, offset_ns=feasible.mid,
                       uncertainty_ns=feasible.half_width)


def _offset_base(cap, host: HostClock, stage) -> tuple[float, str]:
    if stage is not None:
        return stage[0], "the start of its run's device_execution stage"
    span = _runner_run(cap)
    if span is not None:
        return span.ts_ns + host.offset_ns, f"the start of its run's {span.name} span"
    return 0.0, "time 0 (no device_execution stage or run log of its run)"


def _intersect(bounds: list[Interval]) -> Interval | None:
    if not bounds:
        return None
    lo = max(b.lo for b in bounds)
    hi = min(b.hi for b in bounds)
    if lo > hi:
        return None
    return Interval(lo, hi, "; ".join(b.why for b in bounds))


def _runner_run(cap: rs.Capture):
    log = cap.run_log
    if log is None:
        return None
    return next((sp for sp in log.spans
                 if not sp.device_clock and sp.name.endswith(RUNNER_RUN_SUFFIX)), None)


def _device_wall(cap: rs.Capture):
    """The run log's `<host span>.device_wall` (clk=dev) span and its host parent span."""
    log = cap.run_log
    if log is None:
        return None, None, []
    wall = next((sp for sp in log.spans
                 if sp.device_clock and sp.name.endswith(DEVICE_WALL_SUFFIX)), None)
    if wall is None:
        return None, None, []
    parent_name = wall.name[:-len(DEVICE_WALL_SUFFIX)]
    parent = next((sp for sp in log.spans if not sp.device_clock and sp.name == parent_name
                   and sp.pid == wall.pid and sp.tid == wall.tid and sp.inv == wall.inv), None)
    children = [sp for sp in log.spans
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


def _run_log_bound(cap, ext: dict, host: HostClock) -> Interval | None:
    """The bound from the capture's own run log (reference axis), if it gives one: the
    records inside the host span that ran the device (`runner_run`), and through the
    `clk=dev` spans, tighter."""
    span = _runner_run(cap)
    if span is None:
        return None
    lo_all, hi_all = ext["all"]
    off = host.offset_ns
    bounds = [Interval(span.ts_ns - lo_all + off, span.ts_ns + span.dur_ns - hi_all + off,
                       f"the records inside its run log's {span.name} span")]
    wall, parent, children = _device_wall(cap)
    if wall is not None and parent is not None:
        o = _wall_in_host(parent, wall, children)
        q = _wall_bounds(ext, wall, children)
        if o.lo <= o.hi and q.lo <= q.hi:
            bounds.append(Interval(q.lo + o.lo + off, q.hi + o.hi + off,
                                   f"its run log's clk=dev spans ({o.why}, {q.why})"))
    return _intersect(bounds) or bounds[0]


def _device_wall_offset(cap: rs.Capture, cp: CapturePlan) -> int | None:
    """Offset of the run log's clk=dev spans onto the reference axis: consistent with where
    the capture's records were put, and inside the host span that holds them."""
    wall, parent, children = _device_wall(cap)
    if wall is None:
        return None
    o_lo = o_hi = None
    if parent is not None:
        o = _wall_in_host(parent, wall, children)
        o_lo, o_hi = o.lo + cp.host.offset_ns, o.hi + cp.host.offset_ns
    dev = cp.device
    if dev is not None and cap.records is not None:
        ext = _extents(cap)
        if ext:
            scale = 1e9 / dev.freq_hz
            q = _wall_bounds({k: (a * scale, b * scale) for k, (a, b) in ext.items()},
                             wall, children)
            if dev.mapping is None:
                o = dev.offset_ns - q.mid        # reference = nominal + p = wall + (p - q)
            else:                                # calibrated: records' reference times known
                first = float(dev.to_ns(np.array([ext["all"][0]]))[0])
                o = first - (ext["all"][0] * scale + q.mid)
            if o_lo is not None and o_lo <= o_hi:
                o = min(max(o, o_lo), o_hi)
            return round(o)
    if o_lo is None or o_lo > o_hi:
        return None
    return round((o_lo + o_hi) / 2)


# --------------------------------------------------------------------------- reports

def _place_reports(inputs: Inputs, plan: Plan) -> None:
    calibrated_starts = []
    for cp in plan.captures:
        if cp.device is not None and cp.device.status == "calibrated":
            ext = _extents(cp.capture)
            if ext:
                calibrated_starts.append(float(cp.device.to_ns(np.array([ext["all"][0]]))[0]))
    starts = [min(ct.start_ns) + hc.offset_ns for ct, hc in plan.traces if ct.start_ns]
    for rep in inputs.reports:
        rel = _stage_offset_ns(rep.stages, DEVICE_EXECUTION)
        if calibrated_starts and rel is not None:
            origin = min(calibrated_starts) - rel
            how = "its device_execution put at the first record of the calibrated capture"
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
