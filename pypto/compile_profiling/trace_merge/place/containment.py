"""Span containment (`span_containment_v1`, Simpler's definition): a capture's device cycles
put on the host clock with no clock calibration, from the host spans that bracket its run.

    chip.run.runner_run                   host CLOCK_MONOTONIC (enqueue through drain)
      chip.run.runner_run.device_wall     device clock, ts = 0 (the device-phase origin)
        .orch / .sched / ...              device clock, ns from that origin
          the capture's records           device counter, absolute cycles

Two unknowns stand between a raw cycle and the host axis, each bounded here:

- the join: the cycle the device-phase origin sits on. Each `device_wall` sub-phase the log
  carries (`sched`, `orch`) brackets the records of the same stream in the capture, and
  `device_wall` itself bounds the whole capture's extent; the brackets are intersected (an
  empty intersection: the two files do not describe one run), the origin is the middle and
  the width of what remains is the join's `residual`;
- the placement: the host ns the origin sits on. Everything drawn (records and sub-phases,
  at least `device_wall` long) lies inside `runner_run`, so the origin lies in
  `[runner start, runner end - extent]`; an `aicpu_launch` marker (a host-clock point just
  before the launch) raises the lower end. The block is drawn at the lower end and the
  width that remains is published as `slack`: the records lie up to that much later.

All arithmetic is exact (`Fraction`): the published offset and slack are integers rounded
once, so a test can compute them by hand from the log's and the capture's numbers. When
constraints exclude each other, the weaker one is dropped and named (`Containment.dropped`);
only an empty join or device work wider than `runner_run` refuses (`NotOneRun`).

The slack bounds the placement for the join's middle only. What is published as the bound is
the interval of the offset itself (`host ns = cycles * 1e9 / f + offset`) that every kept
piece of evidence allows at once, over the whole width of the join: the records inside
`runner_run`, the sub-phases (joined) inside it, after the launch marker, inside the run's
`device_execution` stage. `device_wall`'s own length is not one of them: Simpler's a2a3
simulator measures it on its own clock, and on a real capture it outlasts `runner_run` by
60 ms; where it would narrow the interval, `wall_hi_ns` says how far.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementMethod
from pypto.compile_profiling.trace_merge.read.read_run_log import RunLog, StraceSpan

__all__ = ["METHOD", "RUN_ROOTS", "CaptureWindows", "Containment", "HostWindow", "Join",
           "NotOneRun", "contain", "fmt_ns", "host_windows", "join_origin"]

METHOD = PlacementMethod.SPAN_CONTAINMENT
CYCLES_METHOD = PlacementMethod.DEVICE_WALL_CYCLES   # joined by device_wall's cycles, inside runner_run
# The root span of one chip run, today's name first: PyPTO #2465 / Simpler #1877 renamed
# `simpler_run` to `chip.run`, and Simpler #1210 had renamed `run_prepared` to `simpler_run`.
RUN_ROOTS = ("chip.run", "simpler_run", "run_prepared")
RUNNER = ".runner_run"
DEVICE_WALL = ".runner_run.device_wall"
AICPU_LAUNCH = ".runner_run.aicpu_launch"
# The device_wall sub-phases a capture also records, in the order they narrow the join.
JOIN_PHASES = ("sched", "orch")
SLOT = "task_slot_"        # device_wall.task_slot_<N>: a task-timing slot, not a sub-phase
CYCLES = "device_wall cycles"    # the join's source when device_wall gives its cycles
# The dispatch a root span names (all four, else none), as Simpler's `_host_identity`.
IDENTITY_FIELDS = ("run_id", "dispatch_id", "slot_id", "generation")
NS_PER_S = 10**9


class NotOneRun(Exception):
    """The log's invocation and the capture cannot describe one run (`detail` says why)."""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(detail)


@dataclass(slots=True, eq=False)
class HostWindow:
    """One invocation `(pid, inv)` of a run log: its `runner_run` (host ns), `device_wall`
    length and sub-phases (device-phase ns), its dispatch identity and launch marker."""

    log: RunLog
    pid: int
    inv: int | None
    root: str                                  # "chip.run" (or an older root name)
    start_ns: int                              # runner_run, host CLOCK_MONOTONIC
    dur_ns: int
    device_wall_ns: int
    phases: dict[str, tuple[int, int]]         # sub-phase -> (ts, dur), dur > 0 only
    identity: tuple[int, int, int, int] | None
    run_epoch: int | None
    aicpu_launch_ns: int | None
    launch_problem: str | None                 # why a marker present was not usable
    spans: Sequence[StraceSpan] = ()               # its spans, in log order
    # device_wall's absolute device-counter bounds (Simpler's newer writer): (start cycle,
    # end cycle, counter Hz), the device id, or why attributes present were unusable
    wall_cycles: tuple[int, int, int] | None = None
    device_id: int | None = None
    wall_cycles_problem: str | None = None
    # task-timing slots (device_wall.task_slot_<N>): N -> (ts, dur), device-phase ns
    slots: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns

    @property
    def where(self) -> str:
        inv = "" if self.inv is None else f" inv {self.inv}"
        return f"pid {self.pid}{inv}"


@dataclass(slots=True)
class CaptureWindows:
    """A capture's device-clock extent and per-phase windows, in raw units (cycles at
    `freq_hz`); positive values only, as Simpler reads them (0 means "not stamped")."""

    path: str
    freq_hz: int
    extent: tuple[int, int]
    windows: dict[str, tuple[int, int]]       # "sched" / "orch" -> (first, last)


@dataclass(slots=True)
class Join:
    """Where the capture's cycles sit on the device-phase timeline: `origin` (cycles) is the
    cycle of phase time 0, anywhere in `[lo, hi]` (one cycle when `device_wall` gave it).
    `ruled_out`: evidence not used, each with the reason."""

    lo: Fraction
    hi: Fraction
    sources: tuple[str, ...]
    ruled_out: tuple[str, ...] = ()

    @property
    def by_cycles(self) -> bool:
        return self.sources == (CYCLES,)

    @property
    def origin(self) -> Fraction:
        return (self.lo + self.hi) / 2


@dataclass(slots=True)
class Containment:
    """One capture placed in one host window (log clock ns; exact)."""

    window: HostWindow
    capture: CaptureWindows
    join: Join
    head_ns: Fraction            # phase instant the block starts at (<= 0)
    extent_ns: Fraction          # device time that must fit in runner_run
    place_lo_ns: Fraction        # host ns of `head`: the placement drawn
    place_hi_ns: Fraction
    outer_slack_ns: Fraction     # before the launch marker and other narrowing
    constraints: list[str]
    dropped: list[str]
    offset_lo_ns: Fraction       # the offset (log clock) every kept constraint allows
    offset_hi_ns: Fraction
    wall_hi_ns: Fraction | None  # the upper end if device_wall's length bounded it too

    @property
    def slack_ns(self) -> Fraction:
        return self.place_hi_ns - self.place_lo_ns

    @property
    def residual_ns(self) -> Fraction:
        return (self.join.hi - self.join.lo) * NS_PER_S / self.capture.freq_hz

    def phase_offset_ns(self) -> int:
        """Host ns (log clock) = device-phase ns + this: where the clk=dev spans go."""
        return round(self.place_lo_ns - self.head_ns)

    def cycle_offset_ns(self) -> int:
        """Host ns (log clock) = cycles * 1e9 / f + this, rounded once (half to even)."""
        f = self.capture.freq_hz
        return round(self.place_lo_ns - self.head_ns - self.join.origin * NS_PER_S / f)

    def metadata(self, host_offset_ns: int = 0) -> dict:
        """Simpler's `span_containment_v1` fields (host ns moved onto the reference axis),
        and the offset's interval."""
        w, f = self.window, self.capture.freq_hz
        out = {"method": CYCLES_METHOD if self.join.by_cycles else METHOD,
               "outer_span": w.root + RUNNER, "outer_pid": w.pid,
               "outer_inv": w.inv, "outer_start_ns": w.start_ns + host_offset_ns,
               "outer_duration_ns": w.dur_ns, "device_wall_ns": w.device_wall_ns,
               "device_extent_ns": round(self.extent_ns),
               "outer_slack_ns": round(self.outer_slack_ns), "slack_ns": round(self.slack_ns),
               "place_lo_ns": round(self.place_lo_ns) + host_offset_ns,
               "place_hi_ns": round(self.place_hi_ns) + host_offset_ns,
               "join": {"sources": list(self.join.sources),
                        "origin_cycles": round(self.join.origin),
                        "residual_ns": round((self.join.hi - self.join.lo) * NS_PER_S / f)},
               "run_log": w.log.path,
               "offset_lo_ns": math.floor(self.offset_lo_ns) + host_offset_ns,
               "offset_hi_ns": math.ceil(self.offset_hi_ns) + host_offset_ns}
        if self.wall_hi_ns is not None:
            out["offset_hi_ns_if_device_wall_inside"] = math.ceil(self.wall_hi_ns) \
                + host_offset_ns
        if w.aicpu_launch_ns is not None and not any("aicpu_launch" in d for d in self.dropped):
            out["aicpu_launch_ns"] = w.aicpu_launch_ns + host_offset_ns
            out["causal_constraint"] = "aicpu_launch<=device_start"
        if w.wall_cycles is not None:
            out["device_wall_cycles"] = {"start": w.wall_cycles[0], "end": w.wall_cycles[1],
                                         "hz": w.wall_cycles[2]}
        if w.device_id is not None:
            out["device_id"] = w.device_id
        if w.slots:
            out["task_slots"] = {str(n): {"ts_ns": ts, "dur_ns": dur}
                                 for n, (ts, dur) in sorted(w.slots.items())}
        if self.dropped:
            out["dropped_constraints"] = list(self.dropped)
        return out


# --------------------------------------------------------------------------- host windows

def _identity(span: StraceSpan | None) -> tuple[int, int, int, int] | None:
    """The dispatch the root span names; None when a field is missing or not an integer, or
    on a synchronous launch (run_id and dispatch_id both 0), as Simpler reads it."""
    if span is None:
        return None
    vals = []
    for k in IDENTITY_FIELDS:
        v = span.attrs.get(k, "")
        if not (v.isascii() and v.isdigit()):
            return None
        vals.append(int(v))
    return None if vals[0] == vals[1] == 0 else tuple(vals)


def host_windows(log: RunLog) -> list[HostWindow]:
    """The log's invocations that launched device work: those with both `runner_run` (host
    clock) and `device_wall` (clk=dev), in (pid, inv) order. Grouped on the log's columns:
    only the spans a window names become `StraceSpan`s, its members stay rows."""
    n = len(log)
    if not n:
        return []
    order = np.lexsort((np.arange(n), log.inv, log.pid))    # by (pid, inv), then log order
    pid, inv = log.pid[order], log.inv[order]
    cut = np.flatnonzero((pid[1:] != pid[:-1]) | (inv[1:] != inv[:-1])) + 1
    out = []
    for rows in np.split(order, cut):
        named: dict[str, StraceSpan] = {}
        first: dict[int, int] = {}
        for r, k in zip(rows.tolist(), log.name[rows].tolist()):
            first.setdefault(k, r)
        names = {log.names[k]: r for k, r in first.items()}
        root = next((x for x in RUN_ROOTS if x + RUNNER in names), None)
        if root is None:
            continue
        prefix = root + DEVICE_WALL + "."
        for name, r in names.items():
            if name in (root, root + RUNNER, root + DEVICE_WALL, root + AICPU_LAUNCH) \
                    or name.startswith(prefix):
                named[name] = log.span(r)
        runner, wall = named[root + RUNNER], named.get(root + DEVICE_WALL)
        if runner.device_clock or wall is None or not wall.device_clock:
            continue
        subs = {name[len(prefix):]: (sp.ts_ns, sp.dur_ns) for name, sp in named.items()
                if name.startswith(prefix) and sp.device_clock and sp.dur_ns > 0
                and "." not in name[len(prefix):]}
        slots = {int(k[len(SLOT):]): v for k, v in subs.items()
                 if k.startswith(SLOT) and k[len(SLOT):].isascii() and k[len(SLOT):].isdigit()}
        phases = {k: v for k, v in subs.items() if not k.startswith(SLOT)}
        cycles, device_id, cycles_problem = _wall_cycles(wall)
        launch, problem = named.get(root + AICPU_LAUNCH), None
        launch_ns = None
        if launch is not None:
            if launch.device_clock or launch.dur_ns != 0:
                problem = "not a host-clock point (dur=0)"
            elif not runner.ts_ns <= launch.ts_ns <= runner.ts_ns + runner.dur_ns:
                problem = f"at {launch.ts_ns}, outside {root}{RUNNER}"
            else:
                launch_ns = launch.ts_ns
        root_span = named.get(root)
        epoch = root_span.attrs.get("run_epoch", "") if root_span is not None else ""
        out.append(HostWindow(log, runner.pid, runner.inv, root, runner.ts_ns, runner.dur_ns,
                              wall.dur_ns, phases, _identity(root_span),
                              int(epoch) if epoch.isascii() and epoch.isdigit() else None,
                              launch_ns, problem, log.spans_at(rows), cycles, device_id,
                              cycles_problem, slots))
    return out


def _wall_cycles(wall: StraceSpan) -> tuple[tuple[int, int, int] | None, int | None, str | None]:
    """device_wall's `dev_start_cycle`, `dev_end_cycle`, `dev_cnt_hz` (all three, or none)
    and `dev_id`; a problem when they are there but unusable."""
    a = wall.attrs
    dev = a.get("dev_id", "")
    device_id = int(dev) if dev.isascii() and dev.isdigit() else None
    keys = ("dev_start_cycle", "dev_end_cycle", "dev_cnt_hz")
    present = [k for k in keys if k in a]
    if not present:
        return None, device_id, None
    vals = [a.get(k, "") for k in keys]
    if len(present) < 3 or not all(v.isascii() and v.isdigit() and len(v) <= 19 for v in vals):
        return None, device_id, ("device_wall's " + " ".join(f"{k}={a.get(k, '(missing)')[:24]}"
                                                             for k in keys)
                                 + " are not three counter readings")
    start, end, hz = map(int, vals)
    if hz <= 0 or end < start or start <= 0:
        return None, device_id, (f"device_wall's dev_start_cycle={start} dev_end_cycle={end} "
                                 f"dev_cnt_hz={hz} do not describe a window")
    return (start, end, hz), device_id, None


# --------------------------------------------------------------------------- the join

def join_origin(w: HostWindow, cap: CaptureWindows) -> Join:
    """Bound the cycle of device-phase time 0: each (sub-phase window, the capture's stream
    of that phase) pair says the stream lies inside the window; `device_wall` bounds the
    whole extent. `NotOneRun` when the brackets do not meet."""
    f = cap.freq_hz
    lo = hi = None
    sources = []

    def narrow(start_ns: int, dur_ns: int, first: int, last: int, source: str) -> None:
        nonlocal lo, hi
        up = first - Fraction(start_ns * f, NS_PER_S)
        down = last - Fraction((start_ns + dur_ns) * f, NS_PER_S)
        hi = up if hi is None else min(hi, up)
        lo = down if lo is None else max(lo, down)
        sources.append(source)

    for name in JOIN_PHASES:
        if name in w.phases and name in cap.windows:
            narrow(*w.phases[name], *cap.windows[name], name)
    narrow(0, w.device_wall_ns, *cap.extent, "device_wall")
    if lo > hi:
        width = (lo - hi) * NS_PER_S / f
        raise NotOneRun(f"the device windows they report do not overlap ({', '.join(sources)} "
                        f"miss each other by {fmt_ns(width)})")
    ruled_out = []
    if "aicpu" in cap.windows:          # each slot lies within the AICPU's dispatches/finishes
        first, last = cap.windows["aicpu"]
        for slot, (ts, dur) in sorted(w.slots.items()):
            s_lo = max(lo, first - Fraction(ts * f, NS_PER_S))
            s_hi = min(hi, last - Fraction((ts + dur) * f, NS_PER_S))
            if s_lo > s_hi:             # as any other constraint that leaves no placement
                miss = (s_lo - s_hi) * NS_PER_S / f
                ruled_out.append(f"task slot {slot} ({fmt_ns(dur)}): it misses the AICPU's "
                                 f"records by {fmt_ns(miss)} where {', '.join(sources)} "
                                 "place them: not used")
                continue
            lo, hi = s_lo, s_hi
            sources.append(f"{SLOT}{slot}")
    if w.wall_cycles_problem is not None:
        ruled_out.append(f"{w.wall_cycles_problem}: not used")
    elif w.wall_cycles is not None:
        start, _, hz = w.wall_cycles
        if hz != f:
            ruled_out.append(f"device_wall's cycles (dev_cnt_hz={hz}, the capture counts at "
                             f"{f} Hz): not used")
        elif lo - 1 <= start <= hi + 1:     # within a cycle of what the ns figures allow
            return Join(Fraction(start), Fraction(start), (CYCLES,))
        else:
            miss = (lo - start if start < lo else start - hi) * NS_PER_S / f
            ruled_out.append(f"device_wall's dev_start_cycle={start}: {fmt_ns(miss)} "
                             f"{'before' if start < lo else 'after'} what {', '.join(sources)} "
                             "allow (the cycles and the log's ns figures disagree): not used")
    return Join(lo, hi, tuple(sources), tuple(ruled_out))


# --------------------------------------------------------------------------- the placement

def contain(w: HostWindow, cap: CaptureWindows,
            stages: list[tuple[int, int, str]] = ()) -> Containment:
    """Place `cap` inside `w` (Simpler's rule, see the module docstring), then keep its
    records inside each of `stages` ((start, end, why), host ns of the log's clock). A
    constraint that leaves no placement is dropped and named: `device_wall`'s own length
    (the records and sub-phases still fit), then the `aicpu_launch` marker, then a stage."""
    join = join_origin(w, cap)
    f, origin = cap.freq_hz, join.origin
    drawn = [(c - origin) * NS_PER_S / f for c in cap.extent]
    for ts, dur in (*w.phases.values(), *w.slots.values()):
        drawn += [Fraction(ts), Fraction(ts + dur)]
    lo_phase, hi_phase = min(drawn), max(drawn)
    head = min(Fraction(0), lo_phase)
    wall_ns = Fraction(w.device_wall_ns)
    if join.by_cycles:                  # the wall's own length on the device counter
        wall_ns = Fraction((w.wall_cycles[1] - w.wall_cycles[0]) * NS_PER_S, f)
    extent = max(wall_ns, hi_phase) - head
    constraints = [f"the device block inside {w.root}{RUNNER}"]
    dropped: list[str] = list(join.ruled_out)
    wall_kept = True
    outer = w.dur_ns - extent
    if outer < 0:
        drawn_extent = hi_phase - head
        if w.dur_ns - drawn_extent < 0:
            raise NotOneRun(f"{fmt_ns(drawn_extent)} of device work does not fit in "
                            f"{w.where}'s {w.root}{RUNNER} of {fmt_ns(w.dur_ns)}")
        dropped.append(f"device_wall ({fmt_ns(wall_ns)}) inside {w.root}{RUNNER} "
                       f"({fmt_ns(w.dur_ns)}): longer than what is left after the device "
                       "start; only the records and sub-phases are kept inside")
        wall_kept = False
        extent = drawn_extent
        outer = w.dur_ns - extent
    place_lo = Fraction(w.start_ns)
    place_hi = w.start_ns + outer
    launch = None                       # the marker, when kept
    if w.launch_problem is not None:
        dropped.append(f"the aicpu_launch marker ({w.launch_problem})")
    elif w.aicpu_launch_ns is not None:
        if w.aicpu_launch_ns <= place_hi:
            place_lo = max(place_lo, Fraction(w.aicpu_launch_ns))
            constraints.append("after its aicpu_launch marker")
            launch = w.aicpu_launch_ns
        else:
            dropped.append(f"the aicpu_launch marker at {w.aicpu_launch_ns}: it leaves no "
                           f"room for {fmt_ns(extent)} of device work before {w.root}{RUNNER} "
                           "ends")
    first, last = drawn[0] - head, drawn[1] - head    # the records, from the block start
    kept_stages = []
    for start_ns, end_ns, why in stages:
        lo, hi = max(place_lo, start_ns - first), min(place_hi, end_ns - last)
        if lo > hi:
            dropped.append(f"{why}: it excludes {w.root}{RUNNER}'s placement")
            continue
        place_lo, place_hi = lo, hi
        constraints.append(why)
        kept_stages.append((start_ns, end_ns))
    if join.by_cycles:
        constraints.append(f"joined by device_wall's cycles ({w.wall_cycles[0]} to "
                           f"{w.wall_cycles[1]} at {w.wall_cycles[2]} Hz)")
    off_lo, off_hi, wall_hi = _offset_interval(w, cap, join, launch, kept_stages,
                                               wall_kept and join.by_cycles)
    return Containment(w, cap, join, head, extent, place_lo, place_hi, outer, constraints,
                       dropped, off_lo, off_hi, wall_hi)


def _offset_interval(w: HostWindow, cap: CaptureWindows, join: Join, launch: int | None,
                     stages: list[tuple[int, int]], wall_by_cycles: bool
                     ) -> tuple[Fraction, Fraction, Fraction | None]:
    """The offset (`host ns = cycles * k + offset`, k = 1e9 / f, log clock) that the kept
    evidence allows for any origin in the join: the records `[first, last]` inside
    `runner_run`, after the launch marker and inside each stage; the sub-phases and task
    slots (at `origin * k + offset + ts`) inside `runner_run` and after the marker. With
    `wall_by_cycles`, `device_wall` itself (its cycles, read off the device counter) ends
    inside `runner_run`, as Simpler's contract says. Else also the upper end if
    `device_wall`'s ns length had to end inside `runner_run` (None: it would not cut)."""
    k = Fraction(NS_PER_S, cap.freq_hz)
    first, last = cap.extent
    run_s, run_e = w.start_ns, w.start_ns + w.dur_ns
    spans = [*w.phases.values(), *w.slots.values()]
    p_lo = min([0] + [ts for ts, _ in spans])
    p_hi = max([0] + [ts + dur for ts, dur in spans])
    lows = [run_s - first * k, run_s - p_lo - join.hi * k]
    highs = [run_e - last * k, run_e - p_hi - join.lo * k]
    if launch is not None:
        lows += [launch - first * k, launch - p_lo - join.hi * k]
    for start_ns, end_ns in stages:
        lows.append(start_ns - first * k)
        highs.append(end_ns - last * k)
    if wall_by_cycles:
        highs.append(run_e - w.wall_cycles[1] * k)
    lo, hi = max(lows), min(highs)
    if wall_by_cycles:
        return lo, hi, None
    wall = run_e - max(p_hi, w.device_wall_ns) - join.lo * k
    return lo, hi, (max(wall, lo) if wall < hi else None)


def fmt_ns(ns) -> str:
    """A duration (ns, any real number type) as the merge's messages write it."""
    ns = abs(float(ns))
    if ns < 10_000:
        return f"{ns:.0f} ns"
    if ns < 10_000_000:
        return f"{ns / 1e3:.1f} us"
    if ns < 10_000_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.1f} s"
