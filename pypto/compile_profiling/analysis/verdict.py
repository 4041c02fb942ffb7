"""The one-word answer: what set the run's length, found by replaying the run with each
candidate cause removed (`analysis.replay`), never by a formula.

The candidates (`levers`): each engine's cores (as many as it has blocks to run), each
kernel family among the heaviest on the critical path (its kernels taking no time), the
scheduler's latency (none at all; and each piece alone: completion, dispatch, launch), and
the dependencies (the same tasks without them). Each is removed in a replay; the verdict
names the one whose removal gains most, and its gain is the replayed one:

- `compute-bound (E, F)`: family F's kernels (on engine E) taking no time gains most;
- `compute-bound (E cores)`: more E cores gains most: the work outnumbers them;
- `scheduler-bound (piece)`: a scheduler with no latency gains most (the piece whose
  removal alone gains most is named);
- `dependency-bound`: the same tasks without their dependencies gains most;
- `host-bound`: with a host source, the host side of the end-to-end wall time outweighs the
  device's part at every placement the evidence allows (the device's verdict under it);
- `unknown`: a level-1 capture (no AICPU records), no deps.json, no replay, or no removal
  gains more than the tie tolerance; with the reason.

Causes whose gains lie within the tie tolerance of the best (the replay error, and at least
`TIE_SHARE` of the makespan: identical runs differ by that much) are named together. A
gain is a prediction, stated with the replay's engine and error; the calibrated engine's
predictions can be far off for some edits (docs/whatif.md), so the other candidates'
gains follow as evidence. docs/analysis.md has the rules in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.critical_path import ObservedPath
from pypto.compile_profiling.analysis.replay import (
    PIECES,
    Edit,
    Engine,
    ReplayInput,
    model_risk,
    replayed_makespan,
)
from pypto.compile_profiling.analysis.tasks import TaskTable, engine_name
from pypto.compile_profiling.foundation.str_enum import StrEnum
from pypto.compile_profiling.foundation.units import duration

__all__ = [
    "MAX_CORES",
    "RANGE_SHOWN_FROM_NS",
    "TIE_SHARE",
    "TOP_FAMILIES",
    "EngineUse",
    "Lever",
    "Verdict",
    "VerdictKind",
    "decide",
    "engine_label",
    "engine_use",
    "host_side",
    "levers",
    "ms_range",
    "starved_on_path",
]

TIE_SHARE = 0.02        # gains this close (of the makespan) are a tie: runs differ so much
TOP_FAMILIES = 3        # the heaviest families on the path, each a candidate
MAX_CORES = 4096        # "as many cores as blocks", at most this many
UNNAMED = "unknown"     # the family of a kernel without a name (no name map)
CAPTURE_HINT = ("capture with enable_chip_swimlane >= 2 (AICPU dispatch/finish records) and "
                "enable_dep_gen (deps.json) for an answer")


class VerdictKind(StrEnum):
    COMPUTE = "compute-bound"
    SCHEDULER = "scheduler-bound"
    DEPENDENCY = "dependency-bound"
    HOST = "host-bound"
    UNKNOWN = "unknown"


@dataclass(slots=True, kw_only=True)
class Verdict:
    """What set the run's length (`kind`), the rule with the figures that decided it, what
    removing its cause gains (`gain_ns`: replayed, a prediction; for `host-bound` a bound
    from the tiling, `gain_is_bound`), the causes tied with it, the candidates replayed, the
    replay's engine and error, and further findings. A `host-bound` verdict keeps the
    device's own as `device`."""

    kind: VerdictKind
    rule: str
    cause: str | None = None          # "AIV", "AIV cores", "launch", "compile", ...
    family: str | None = None         # compute-bound by a family: the family
    gain_ns: float | None = None
    gain_share: float | None = None   # of the makespan (host-bound: of the wall time)
    gain_text: str | None = None
    gain_is_bound: bool = False
    ties: list[str] = field(default_factory=list)       # the tied causes, as the head names
    levers: list[Lever] = field(default_factory=list)   # every candidate replayed
    replays: str | None = None                          # their gains, in one line
    engine: str | None = None                           # the replay's engine
    replay_error: float | None = None
    evidence: list[str] = field(default_factory=list)
    device: Verdict | None = None

    def head(self) -> str:
        """`compute-bound (AIV, gemm)`, with the causes tied with it."""
        words = [self.kind + (f" ({self.cause}{', ' + self.family if self.family else ''})"
                              if self.cause and self.kind != VerdictKind.UNKNOWN else "")]
        return ", or ".join(words + self.ties)


@dataclass(slots=True)
class EngineUse:
    """One engine's cores over the makespan: busy (a block running) and idle shares of
    their core time."""

    engine: str
    cores: int
    busy_share: float


@dataclass(slots=True)
class Lever:
    """One candidate cause, removed in a replay: what it is, the edit, the replayed makespan
    (cycles) and what removing it gains against the unedited replay."""

    kind: VerdictKind
    cause: str
    family: str | None
    edit: Edit
    makespan: int
    gain: int

    @property
    def words(self) -> str:
        """The verdict head this cause would give (a family without a known kernel name is
        left out: `compute-bound (AIV)`, never one that reads like the `unknown` verdict)."""
        if self.kind == VerdictKind.DEPENDENCY or self.cause == "all":
            return str(self.kind)
        family = self.family if self.family and self.family != UNNAMED else None
        return f"{self.kind} ({self.cause}{', ' + family if family else ''})"


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


# --------------------------------------------------------------------------- the levers

def _path_families(tt: TaskTable, path: ObservedPath, inp: ReplayInput) -> list[str]:
    """The families with the most compute on the critical path, heaviest first."""
    names, code = inp.families
    if not len(path.tasks) or not names:
        return []
    compute = np.bincount(code[path.tasks], weights=path.compute.astype(np.float64),
                          minlength=len(names))
    order = np.lexsort((np.arange(len(names)), -compute))
    return [names[i] for i in order[:TOP_FAMILIES].tolist() if compute[i] > 0]


def levers(inp: ReplayInput, path: ObservedPath, has_deps: bool,
           tolerance: float = 0.0) -> list[Lever]:
    """Every candidate cause, each removed in a replay (see the module docstring). The
    scheduler's pieces, which only name it, are replayed one by one only when removing
    all of its latency gains most or ties within `tolerance` cycles (three replays saved
    in every other case)."""
    tt = inp.tasks
    base = inp.baseline().makespan
    names, code = inp.families
    out: list[Lever] = []

    def add(kind, cause, family, edit) -> Lever:
        m = replayed_makespan(inp, edit)
        out.append(Lever(kind, cause, family, edit, m, base - m))
        return out[-1]

    device = inp.blocks.device_core_types
    for i, t in enumerate(tt.core_types):
        blocks = int(np.count_nonzero(tt.row_type == i))
        have = device.count(i)
        want = max(have, min(blocks, MAX_CORES))
        if blocks and want > have:
            e = engine_name(t)
            add(VerdictKind.COMPUTE, f"{e} cores", None, Edit(cores=((e, want),)))
    for fam in _path_families(tt, path, inp):
        first = int(np.flatnonzero(code == names.index(fam))[0])
        e = engine_label(int(tt.types[first]), tt.core_types)
        add(VerdictKind.COMPUTE, e, fam, Edit(faster=((fam, 0.0),)))
    whole = add(VerdictKind.SCHEDULER, "all", None,
                Edit(sched=tuple((p, 0.0) for p in PIECES)))
    if has_deps and len(inp.edges.pred):
        add(VerdictKind.DEPENDENCY, "the dependency chain", None, Edit(no_deps=True))
    if whole.gain >= max(lv.gain for lv in out) - tolerance:
        for p in PIECES:
            add(VerdictKind.SCHEDULER, p, None, Edit(sched=((p, 0.0),)))
    return out


def _causes(found: list[Lever], tolerance: float) -> list[Lever]:
    """One lever per cause: the scheduler as a whole (its gain with no latency at all,
    named by the piece whose removal alone gains most, or the pieces tied for it within
    `tolerance` cycles), each family, each engine's cores, the dependencies; the most gain
    first."""
    pieces = [lv for lv in found if lv.kind == VerdictKind.SCHEDULER and lv.cause != "all"]
    out = [lv for lv in found if lv.kind != VerdictKind.SCHEDULER]
    whole = next((lv for lv in found if lv.kind == VerdictKind.SCHEDULER
                  and lv.cause == "all"), None)
    if whole is not None:
        top = max((lv.gain for lv in pieces), default=None)
        named = [lv.cause for lv in pieces if top is not None and top - lv.gain <= tolerance]
        out.append(Lever(whole.kind, ", ".join(named) or "all", None, whole.edit,
                         whole.makespan, whole.gain))
    return sorted(out, key=lambda lv: (-lv.gain, lv.words))


# --------------------------------------------------------------------------- the verdict

def _gain_words(lv: Lever, base: int, ns: float) -> str:
    what = {VerdictKind.DEPENDENCY: "without its dependencies",
            VerdictKind.SCHEDULER: "with no scheduler latency"}.get(lv.kind)
    if what is None:
        what = (f"with as many {lv.cause} as it has blocks for them" if lv.family is None
                else f"with its {lv.cause} kernels (their names unknown) taking no time"
                if lv.family == UNNAMED else f"with the {lv.family} kernels taking no time")
    share = lv.gain / base if base else 0.0
    return (f"{what} the run would take {duration(lv.makespan * ns)} instead of "
            f"{duration(base * ns)} (-{_pct(share)})")


def decide(tt: TaskTable, path: ObservedPath | None, *, has_cpu: bool, has_deps: bool,
           replay_input: ReplayInput | None, no_replay: str | None,
           static_cycles: int | None, kept_edges: int,
           starvation: list[tuple[str, float, int]], host: dict | None = None) -> Verdict:
    """The verdict of one capture (`starvation`: (engine, starved share of the makespan,
    starved cycles during the path's stalls on tasks of that engine); `host`: the end-to-end
    side, `host_side`)."""
    ns = 1e9 / tt.freq_hz
    if path is None or not path.makespan:
        return _with_host(Verdict(kind=VerdictKind.UNKNOWN, rule="no task ran for any time: "
                                  "nothing sets a length"), host)
    m = path.makespan
    evidence = _starvation_evidence(starvation, m, ns)
    if static_cycles is not None and kept_edges:
        evidence.append(f"static path (the dependency floor) {_pct(static_cycles / m)} of "
                        "the makespan")
    if not has_cpu:
        use = engine_use(tt)
        busy = "; ".join(f"{u.engine} ({_plural(u.cores, 'core')}) busy {_pct(u.busy_share)}, "
                         f"idle {_pct(1 - u.busy_share)}" for u in use)
        dev = Verdict(kind=VerdictKind.UNKNOWN, rule=(
            "a level-1 capture has no AICPU dispatch/finish records: what held the critical "
            "path's tasks cannot be told, and the run cannot be replayed"),
            evidence=[f"core time: {busy}" if busy else "no core ran a block", CAPTURE_HINT])
        return _with_host(dev, host)
    if replay_input is None:
        return _with_host(Verdict(kind=VerdictKind.UNKNOWN, rule=(
            f"the run cannot be replayed: {no_replay}"), evidence=evidence), host)
    if not has_deps:
        return _with_host(Verdict(kind=VerdictKind.UNKNOWN, rule=(
            "without deps.json a replay cannot tell a wait for a producer from a wait for the "
            "scheduler, so no cause can be told"),
            evidence=["capture with enable_dep_gen (deps.json) for an answer", *evidence]),
            host)
    base = replay_input.baseline().makespan
    err = replay_input.error
    tolerance = max(abs(err), TIE_SHARE) * base
    found = levers(replay_input, path, has_deps, tolerance)
    causes = _causes(found, tolerance)
    engine = str(replay_input.engine)
    best = causes[0] if causes else None
    replayed = f"replayed ({engine} engine, replay error {_pct(abs(err))})"
    if best is None or best.gain <= tolerance:
        return _with_host(Verdict(kind=VerdictKind.UNKNOWN, rule=(
            "no single cause's removal shortens the run by more than "
            f"{duration(tolerance * ns)} ({_pct(tolerance / base if base else 0)}: the replay "
            "error, or what identical runs differ by)"),
            levers=found, engine=engine, replay_error=err,
            evidence=[f"{replayed}: {_gain_words(lv, base, ns)}" for lv in causes[:3]]
            + evidence), host)
    tied = [lv for lv in causes[1:] if best.gain - lv.gain <= tolerance and lv.gain > tolerance]
    share = best.gain / base if base else 0.0
    v = Verdict(kind=best.kind, rule=_rule(best, tied, causes, base, ns),
                cause=None if best.kind == VerdictKind.DEPENDENCY or best.cause == "all"
                else best.cause,
                family=None if best.family == UNNAMED else best.family,
                gain_ns=best.gain * ns, gain_share=share, levers=found,
                engine=engine, replay_error=err, ties=[lv.words for lv in tied],
                gain_text=(f"{duration(best.gain * ns)} ({_pct(share)}), a prediction: "
                           f"{replayed}{_risk_words(replay_input.engine, best.edit)}"),
                replays=_replays_line(found, base), evidence=evidence)
    return _with_host(v, host)


def _risk_words(engine: Engine, edit: Edit) -> str:
    """How far such a prediction has been off against real re-runs (docs/whatif.md); the
    rules engine's have not been."""
    risk = model_risk(engine, edit)
    return (f"; predictions of this kind by this engine were off by up to {_pct(risk)} "
            "against real re-runs") if risk else ""


def _replays_line(found: list[Lever], base: int) -> str:
    """Every candidate's replayed change, the most gain first (`16 AIV cores -18.8 %`)."""
    ranked = sorted(found, key=lambda lv: (-lv.gain, lv.edit.words()))
    return "; ".join(f"{lv.edit.words()} {_signed(-lv.gain / base if base else 0.0)}"
                     for lv in ranked)


def _signed(x: float) -> str:
    return f"{x * 100:+.1f} %"


def _rule(best: Lever, tied: list[Lever], causes: list[Lever], base: int, ns: float) -> str:
    """Why: the winning removal beside the next one."""
    lead = _gain_words(best, base, ns)
    if tied:
        return (f"{lead}; as much, within the tie tolerance: "
                + "; ".join(_gain_words(lv, base, ns) for lv in tied))
    rest = causes[1] if len(causes) > 1 else None
    tail = {VerdictKind.DEPENDENCY: "the chain of dependencies sets the time",
            VerdictKind.SCHEDULER: ("no piece alone" if best.cause == "all" else
                                    f"its {best.cause} latency the most" if "," not in best.cause
                                    else f"its {best.cause} latencies alike"),
            VerdictKind.COMPUTE: ("the work outnumbers the cores" if best.family is None
                                  else "the work on the cores sets the time")}[best.kind]
    return lead + (f", more than any other removal (next: {rest.words}, "
                   f"{_signed(-rest.gain / base if base else 0)})" if rest else "") + f": {tail}"


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
        elif on_path >= starved * makespan - 0.5:
            out.append(f"{engine} starved {_pct(starved)} of the makespan, all of it in the "
                       "critical path's stalls")
        else:
            out.append(f"{engine} starved {_pct(starved)} of the makespan; "
                       f"{duration(on_path * ns)} ({_pct(on_path / makespan)}) of it in the "
                       "critical path's stalls, the rest off the path: that would not "
                       "shorten this run")
    return out


RANGE_SHOWN_FROM_NS = 10_000   # narrower ranges are within the ms figures' last digits


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def ms_range(lo: float, hi: float) -> str:
    """`12.345 ms`, or `12.345-380.300 ms` where the ends are 10 us or more apart (a
    calibrated capture's ±571 ns would otherwise read "363.745-363.746 ms")."""
    if hi - lo < RANGE_SHOWN_FROM_NS:
        return duration((lo + hi) / 2)
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
                f"vs {duration(device_ns)} on the device: whether it outweighs the device "
                "depends on where the device time lies (placement uncertain)")
        return dev
    cats = [{c: v for c, v in e.totals.items() if not c.startswith("device")} for e in runs]
    tops = {max(c, key=lambda k: (c[k], k)) for c in cats}
    lead = (f"the host side is {ms_range(min(sides), max(sides))} of the "
            f"{ms_range(min(walls), max(walls))} end-to-end wall time, the device's part "
            f"{duration(device_ns)}")
    if len(tops) == 1:
        named = tops.pop()
        vals = [c[named] for c in cats]
        rule = f"{lead}; the largest host part is {named} ({ms_range(min(vals), max(vals))})"
    else:
        named, vals = "host side", sides
        rule = (f"{lead}; which host part is largest depends on where the device time lies "
                "(placement uncertain)")
    return Verdict(kind=VerdictKind.HOST, cause=named, rule=rule,
                   gain_ns=float(max(vals)), gain_is_bound=True,
                   gain_share=min(max(vals) / max(max(walls), 1), 1.0),
                   gain_text=(f"no {named} at all would shorten the wall time by at most "
                              f"{duration(max(vals))}"), device=dev)
