"""The one-word answer: what set the run's length, decided from the observed critical path.

The observed path tiles the makespan exactly: compute, the scheduler's round trip
(`completion` + `dispatch` + `launch`), the `front` gap and what the records cannot cut
(`unknown`). The verdict names the largest of those, so it can never contradict the path:

- `compute-bound`: compute leads and the static path (the dependency floor) is under 50 % of
  the makespan: the work on the cores sets the time. Names the engine and the kernel family
  with the most compute on the path. Gain bound: that engine's compute on the path;
- `dependency-bound`: compute leads and the static path is at least 50 % of the makespan:
  the dependency chain sets the time (only with dependency edges). Gain bound: the makespan
  minus the floor no schedule of the same tasks can beat (the longest task, and each
  engine's work over its cores);
- `scheduler-bound`: scheduler latency leads. Names the dominant piece. Gain bound: the
  path's scheduler latency;
- `host-bound`: with a host source, the host side of the end-to-end wall time outweighs the
  device's part at every placement the evidence allows. Names the largest host category;
- `unknown`: the capture cannot tell (level 1, stalls without dispatch/finish records, a
  scheduler-latency lead without deps.json, or a front gap that leads), with the reason.

A gain bound is true by construction: the makespan is the path's length, so taking a
component off the path shortens the run by at most that component (another path may then
set the time). Starvation of an engine off the path is evidence, printed as such, never the
verdict. Simpler's `sched_overhead_analysis` calls a run scheduler-bound when some engine is
starved 25 % of the makespan and partially so at 8 %; here 8 % is the share from which a
second cause is printed with its own gain bound. docs/analysis.md has the rules in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.critical_path import (
    SCHEDULER_PARTS,
    ObservedPath,
    StallPart,
)
from pypto.compile_profiling.analysis.tasks import TaskTable, engine_name
from pypto.compile_profiling.foundation.str_enum import StrEnum

__all__ = [
    "DEPENDENCY_BOUND_SHARE",
    "RANGE_SHOWN_FROM_NS",
    "SECONDARY_SHARE",
    "SIMPLER_PARTIAL_SHARE",
    "SIMPLER_SCHEDULER_SHARE",
    "EngineUse",
    "Verdict",
    "VerdictKind",
    "decide",
    "engine_label",
    "engine_use",
    "host_side",
    "ms_range",
    "starved_on_path",
]

DEPENDENCY_BOUND_SHARE = 0.50    # static path share of the makespan: the chain sets the time
SECONDARY_SHARE = 0.08           # a second cause from this share of the makespan on
SIMPLER_SCHEDULER_SHARE = 0.25   # Simpler: SCHEDULER-BOUND at has_overhead >= 25 %
SIMPLER_PARTIAL_SHARE = 0.08     # Simpler: PARTIALLY SCHEDULER-LIMITED at >= 8 %
CAPTURE_HINT = ("capture with enable_chip_swimlane >= 2 (AICPU dispatch/finish records) and "
                "enable_dep_gen (deps.json) for an answer")

_MEANING = {
    StallPart.COMPLETION: "the AICPU noticing a predecessor had ended (its finish - end)",
    StallPart.DISPATCH: "the AICPU dispatching the next task once it had",
    StallPart.LAUNCH: "a core starting a task already dispatched to it",
}


class VerdictKind(StrEnum):
    COMPUTE = "compute-bound"
    SCHEDULER = "scheduler-bound"
    DEPENDENCY = "dependency-bound"
    HOST = "host-bound"
    UNKNOWN = "unknown"


@dataclass(slots=True, kw_only=True)
class Verdict:
    """What set the run's length (`kind`), the rule with the figures that decided it, what
    removing all of the named cause could gain at most (None: unknown), and further
    findings, one line each. A `host-bound` verdict keeps the device's own as `device`."""

    kind: VerdictKind
    rule: str
    cause: str | None = None          # "AIC", "completion", "compile", ...
    family: str | None = None         # compute-bound: the top kernel family on the path
    gain_bound_ns: float | None = None
    gain_share: float | None = None   # of the makespan (host-bound: of the wall time)
    gain_text: str | None = None
    evidence: list[str] = field(default_factory=list)
    device: Verdict | None = None


@dataclass(slots=True)
class EngineUse:
    """One engine's cores over the makespan: busy (a block running) and idle shares of
    their core time."""

    engine: str
    cores: int
    busy_share: float


def engine_label(mask: int, core_types: list[str]) -> str:
    """`AIC`, `AIV`, or `AIC+AIV` for a task whose blocks ran on both (MIX)."""
    names = [engine_name(t) for i, t in enumerate(core_types) if mask >> i & 1]
    return "+".join(names) or "core"


def engine_use(tt: TaskTable) -> list[EngineUse]:
    """Per engine with cores that ran a block: block time over (cores x makespan)."""
    if not len(tt):
        return []
    span = max(int(tt.end.max()) - int(tt.start.min()), 1)
    busy = np.bincount(tt.row_type, weights=(tt.row_end - tt.row_start).astype(np.float64),
                       minlength=len(tt.core_types))
    out = []
    for i, name in enumerate(tt.core_types):
        cores = len(np.unique(tt.row_core[tt.row_type == i]))
        if cores:
            out.append(EngineUse(engine_name(name), cores,
                                 float(busy[i]) / (cores * span)))
    return out


def starved_on_path(ts: np.ndarray, starved: np.ndarray, a: np.ndarray, b: np.ndarray
                    ) -> int:
    """Cycles of [a_i, b_i) (the path's stalls) during which a 0/1 `starved` flag (one
    value per segment of the sorted points `ts`) was 1."""
    if not len(a) or len(ts) < 2:
        return 0
    seg = np.diff(ts) * starved.astype(np.int64)
    cum = np.concatenate(([0], np.cumsum(seg)))

    def upto(x: np.ndarray) -> np.ndarray:      # starved cycles in [ts[0], x)
        x = np.clip(x, ts[0], ts[-1])
        j = np.clip(np.searchsorted(ts, x, side="right") - 1, 0, len(ts) - 2)
        return cum[j] + (x - ts[j]) * starved[j].astype(np.int64)

    return int((upto(b) - upto(a)).sum())


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


@dataclass(slots=True)
class _Path:
    """The path's composition in cycles: what the rules read."""

    makespan: int
    compute: int
    parts: dict[StallPart, int]
    by_engine: dict[str, int]
    families: dict[str, dict[str, int]]     # engine -> family -> compute

    @property
    def scheduler(self) -> int:
        return sum(self.parts[p] for p in SCHEDULER_PARTS)


def _composition(tt: TaskTable, path: ObservedPath, families: list[str]) -> _Path:
    masks = tt.types[path.tasks].tolist()
    by_engine: dict[str, int] = {}
    fam: dict[str, dict[str, int]] = {}
    for m, c, f in zip(masks, path.compute.tolist(), families):
        e = engine_label(m, tt.core_types)
        by_engine[e] = by_engine.get(e, 0) + c
        fam.setdefault(e, {})
        fam[e][f] = fam[e].get(f, 0) + c
    return _Path(path.makespan, path.compute_total, path.stall_by_part(), by_engine, fam)


def decide(tt: TaskTable, path: ObservedPath | None, families: list[str], *,
           has_cpu: bool, has_deps: bool, static_cycles: int | None, kept_edges: int,
           starvation: list[tuple[str, float, int]], host: dict | None = None) -> Verdict:
    """The verdict of one capture. `families`: the kernel family of each path task;
    `starvation`: (engine, starved share of the makespan, starved cycles during the path's
    stalls on tasks of that engine); `host`: the end-to-end side (`host_side`, below)."""
    ns = 1e9 / tt.freq_hz
    if path is None or not path.makespan:
        return Verdict(kind=VerdictKind.UNKNOWN, rule="no task ran for any time: nothing sets "
                                                      "a length")
    comp = _composition(tt, path, families)
    m = comp.makespan

    def share(c: float) -> float:
        return c / m

    stall_total = m - comp.compute
    evidence = _starvation_evidence(starvation, m, ns)
    if not has_cpu:
        use = engine_use(tt)
        busy = "; ".join(f"{u.engine} ({u.cores} cores) busy {_pct(u.busy_share)}, idle "
                         f"{_pct(1 - u.busy_share)}" for u in use)
        dev = Verdict(kind=VerdictKind.UNKNOWN, rule=(
            f"a level-1 capture has no AICPU dispatch/finish records: what held the critical "
            f"path's tasks (stalls {_pct(share(stall_total))} of the makespan, compute "
            f"{_pct(share(comp.compute))}) cannot be told"),
            evidence=[f"core time: {busy}" if busy else "no core ran a block", CAPTURE_HINT])
        return _with_host(dev, host)
    sched = comp.scheduler
    front, unknown = comp.parts[StallPart.FRONT], comp.parts[StallPart.UNKNOWN]
    lead = max((comp.compute, "compute"), (sched, "scheduler"), (unknown, "unknown"),
               (front, "front"))[1]
    top_part = max(SCHEDULER_PARTS, key=lambda p: comp.parts[p])
    sched_line = (f"scheduler latency {_pct(share(sched))} of the makespan on the path ("
                  + ", ".join(f"{p} {_pct(share(comp.parts[p]))}" for p in SCHEDULER_PARTS)
                  + ")")
    static_share = share(static_cycles) if static_cycles is not None and kept_edges else None
    floor_line = None if static_share is None else (
        f"static path (the dependency floor) {_pct(static_share)} of the makespan")
    if lead == "compute":
        engine = max(comp.by_engine, key=lambda e: (comp.by_engine[e], e))
        fams = comp.families[engine]
        family = max(fams, key=lambda f: (fams[f], f))
        if static_share is not None and static_share >= DEPENDENCY_BOUND_SHARE:
            floor = _schedule_floor(tt)
            v = Verdict(kind=VerdictKind.DEPENDENCY, cause="the dependency chain", rule=(
                f"compute is {_pct(share(comp.compute))} of the critical path and the "
                f"static path (the dependency floor) is {_pct(static_share)} of the "
                f"makespan (>= {_pct(DEPENDENCY_BOUND_SHARE)}): the chain of "
                "dependencies sets the time; more cores would not shorten it"),
                gain_bound_ns=(m - floor) * ns, gain_share=share(m - floor),
                gain_text=("running the chain's tasks in parallel (same tasks, same cores) "
                           f"shortens the run by at most {_ms((m - floor) * ns)} "
                           f"({_pct(share(m - floor))})"))
        else:
            c = comp.by_engine[engine]
            v = Verdict(kind=VerdictKind.COMPUTE, cause=engine, family=family, rule=(
                f"compute is {_pct(share(comp.compute))} of the critical path, {engine} "
                f"{_pct(share(c))} (top family {family}: {_pct(share(fams[family]))})"
                + (f"; the static path (the dependency floor) is only {_pct(static_share)} "
                   "of the makespan: the work on the cores, not the dependency chain, sets "
                   "the time" if static_share is not None else "")),
                gain_bound_ns=c * ns, gain_share=share(c),
                gain_text=(f"{engine} kernels on the critical path taking no time would "
                           f"shorten the run by at most {_ms(c * ns)} ({_pct(share(c))}); "
                           f"{family} alone by at most {_ms(fams[family] * ns)}"))
        if share(sched) >= SECONDARY_SHARE:
            v.evidence.append(f"also: {sched_line}: a scheduler with no latency would "
                              f"shorten the run by at most {_ms(sched * ns)}")
    elif lead == "scheduler" and has_deps:
        v = Verdict(kind=VerdictKind.SCHEDULER, cause=str(top_part), rule=(
            f"{sched_line}, more than compute ({_pct(share(comp.compute))}); most of it is "
            f"{top_part}: {_MEANING[top_part]}"),
            gain_bound_ns=sched * ns, gain_share=share(sched),
            gain_text=(f"a scheduler with no latency would shorten the run by at most "
                       f"{_ms(sched * ns)} ({_pct(share(sched))}); no {top_part} latency by "
                       f"at most {_ms(comp.parts[top_part] * ns)}"))
    elif lead == "scheduler":
        v = Verdict(kind=VerdictKind.UNKNOWN, rule=(
            f"{sched_line} leads, but without deps.json a stall may also be a wait for a "
            "producer on another core, which the records do not show"),
            evidence=["capture with enable_dep_gen (deps.json) for an answer"])
    elif lead == "unknown":
        v = Verdict(kind=VerdictKind.UNKNOWN, rule=(
            f"{_pct(share(unknown))} of the makespan is stall on the path whose tasks lack "
            "AICPU dispatch/finish records: what filled it cannot be told"),
            evidence=[CAPTURE_HINT])
    else:
        v = Verdict(kind=VerdictKind.UNKNOWN, rule=(
            f"the critical path's first task started {_pct(share(front))} of the makespan "
            "after the run's first task, and nothing in the records held it (its submission "
            "or its inputs from the host may have)"))
    if floor_line and v.kind not in (VerdictKind.DEPENDENCY, VerdictKind.COMPUTE):
        v.evidence.append(floor_line)
    v.evidence.extend(evidence)
    return _with_host(v, host)


def _schedule_floor(tt: TaskTable) -> int:
    """No schedule of these tasks on these cores is shorter: the longest task, and each
    engine's block time spread evenly over its cores."""
    floor = int(tt.duration.max())
    busy = np.bincount(tt.row_type, weights=(tt.row_end - tt.row_start).astype(np.float64),
                       minlength=len(tt.core_types))
    for i in range(len(tt.core_types)):
        cores = len(np.unique(tt.row_core[tt.row_type == i]))
        if cores:
            floor = max(floor, int(np.ceil(busy[i] / cores)))
    return floor


def _starvation_evidence(starvation: list[tuple[str, float, int]], makespan: int,
                         ns: float) -> list[str]:
    """Starved engines as evidence: how much of it fell in the path's stalls (before tasks
    of that engine); the rest is off the critical path and would not shorten the run."""
    out = []
    for engine, starved, on_path in starvation:
        if starved <= 0:
            continue
        if not on_path:
            out.append(f"{engine} starved {_pct(starved)} of the makespan, off the critical "
                       "path: it would not shorten this run")
        else:
            out.append(f"{engine} starved {_pct(starved)} of the makespan; "
                       f"{_ms(on_path * ns)} ({_pct(on_path / makespan)}) of it in the "
                       "critical path's stalls (in its scheduler latency), the rest off the "
                       "path: that would not shorten this run")
    return out


RANGE_SHOWN_FROM_NS = 10_000   # narrower ranges are within the ms figures' last digits


def ms_range(lo: float, hi: float) -> str:
    """`12.345 ms`, or `12.345-380.300 ms` where the ends are 10 us or more apart (a
    calibrated capture's ±571 ns would otherwise read "363.745-363.746 ms")."""
    if hi - lo < RANGE_SHOWN_FROM_NS:
        return _ms((lo + hi) / 2)
    return f"{_ms(lo)[:-3]}-{_ms(hi)}"


def host_side(e2e_by_offset: list, device_ns: float) -> dict | None:
    """The end-to-end evidence for `host-bound`: per placement the evidence allows (the
    offset interval's ends and the drawn one), the wall time and its categories."""
    if not e2e_by_offset:
        return None
    return {"runs": e2e_by_offset, "device_ns": device_ns}


def _with_host(dev: Verdict, host: dict | None) -> Verdict:
    """`host-bound` when the host side outweighs the device's part at every placement."""
    if host is None:
        return dev
    runs, device_ns = host["runs"], host["device_ns"]
    sides = [e.wall_ns - device_ns for e in runs]
    walls = [e.wall_ns for e in runs]
    if not all(s > device_ns for s in sides):
        if any(s > device_ns for s in sides):
            dev.evidence.append(
                f"host side of the end-to-end wall time {ms_range(min(sides), max(sides))} "
                f"vs {_ms(device_ns)} on the device: whether it outweighs the device depends "
                "on where the device time lies (placement uncertain)")
        return dev
    cats = [{c: v for c, v in e.totals.items() if not c.startswith("device")} for e in runs]
    tops = {max(c, key=lambda k: (c[k], k)) for c in cats}
    lead = (f"the host side is {ms_range(min(sides), max(sides))} of the "
            f"{ms_range(min(walls), max(walls))} end-to-end wall time, the device's part "
            f"{_ms(device_ns)}")
    if len(tops) == 1:
        named = tops.pop()
        vals = [c[named] for c in cats]
        rule = f"{lead}; the largest host part is {named} ({ms_range(min(vals), max(vals))})"
    else:
        named, vals = "host side", sides
        rule = (f"{lead}; which host part is largest depends on where the device time lies "
                "(placement uncertain)")
    return Verdict(kind=VerdictKind.HOST, cause=named, rule=rule,
                   gain_bound_ns=float(max(vals)), gain_share=max(vals) / max(min(walls), 1),
                   gain_text=(f"no {named} at all would shorten the wall time by at most "
                              f"{_ms(max(vals))}"), device=dev)
