"""What a change would do to a run, predicted by replaying it (`pypto-profile whatif`).

Per capture (rank), over one run or several: the observed makespan; the unedited replay
against it (the replay error); the edited replay's makespan, which is the prediction, with its
change from the observed; and an interval: the spread of the runs' predictions, widened by
the largest replay error. The predicted run's critical path is cut as `analyze` cuts the
observed one. docs/whatif.md says how the replay works and how well it predicts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from pypto.compile_profiling.analysis.critical_path import ObservedPath
from pypto.compile_profiling.analysis.replay import (
    CALIBRATED_RISK,
    PIECES,
    Edit,
    Engine,
    ReplayInput,
    edit_kinds,
    model_risk,
    replay,
)
from pypto.compile_profiling.analysis.tasks import TaskTable
from pypto.compile_profiling.analysis.verdict import engine_label
from pypto.compile_profiling.foundation.terminal import wrap
from pypto.compile_profiling.foundation.units import duration
from pypto.errors import TraceInputError

__all__ = ["CALIBRATED_RISK", "SCHEMA", "RankPrediction", "RunPrediction", "edit_kinds",
           "format_whatif", "model_risk", "parse_edit", "predict", "whatif_dict"]

SCHEMA = "pypto.whatif/1"
FORMATS = ("text", "json")
ENGINE_WORDS = {Engine.RULES: "the run's own rules, exact",
                Engine.CALIBRATED: "on the capture's own latencies and decisions"}
# --------------------------------------------------------------------------- edits

def _pairs(values: Iterable[str], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, sep, amount = v.partition("=")
        if not sep or not name.strip() or not amount.strip():
            raise ValueError(f"{what} {v!r}: expected NAME=VALUE")
        out.append((name.strip(), amount.strip()))
    return out


def _number(text: str, what: str, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not {'a whole number' if integer else 'a number'}"
                         ) from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what}: {text!r} must be 0 or more")
    return value


def parse_edit(cores: Iterable[str] = (), faster: Iterable[str] = (),
               sched: Iterable[str] = (), no_deps: bool = False) -> Edit:
    """The edit the command line asks for (`--cores AIV=16`, `--faster gemm=2` (0: no time
    at all), `--sched-latency 0.5` or `launch=0`, `--no-deps`); `ValueError` with one line
    for a malformed one."""
    core_pairs = []
    for name, n in _pairs(cores, "--cores"):
        count = int(_number(n, f"--cores {name}", integer=True))
        if count < 1:
            raise ValueError(f"--cores {name}={n}: an engine needs at least one core")
        core_pairs.append((name.upper(), count))
    fast = [(name, _number(k, f"--faster {name}")) for name, k in _pairs(faster, "--faster")]
    pieces: dict[str, float] = {}
    for v in sched:
        if "=" not in v:
            k = _number(v, "--sched-latency")
            pieces.update(dict.fromkeys(PIECES, k))
            continue
        ((piece, k),) = _pairs([v], "--sched-latency")
        if piece not in PIECES:
            raise ValueError(f"--sched-latency {v!r}: the pieces are {', '.join(PIECES)}")
        pieces[piece] = _number(k, f"--sched-latency {piece}")
    for what, pairs in (("--cores", core_pairs), ("--faster", fast)):
        names = [n for n, _ in pairs]
        if len(set(names)) != len(names):
            twice = min(n for n in names if names.count(n) > 1)
            raise ValueError(f"{what} names {twice} twice")
    return Edit(tuple(core_pairs), tuple(fast), tuple((p, pieces[p]) for p in PIECES
                                                       if p in pieces), no_deps)


# --------------------------------------------------------------------------- predictions

@dataclass(slots=True, eq=False)
class RunPrediction:
    """One run's capture: observed, replayed and predicted makespans (cycles), and the
    predicted critical path's composition (cycles by part)."""

    source: str
    engine: Engine
    freq_hz: int
    observed: int
    replayed: int
    predicted: int
    composition: dict[str, int]
    path_tasks: int

    @property
    def error(self) -> float:
        return (self.replayed - self.observed) / self.observed if self.observed else 0.0

    def ns(self, cycles: float) -> float:
        return cycles * 1e9 / self.freq_hz


@dataclass(slots=True, eq=False)
class RankPrediction:
    """One rank over the runs that have it."""

    label: str
    edit: Edit
    runs: list[RunPrediction] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)    # (run, why no replay)

    def _ns(self, attr: str) -> list[float]:
        return [r.ns(getattr(r, attr)) for r in self.runs]

    @property
    def observed_ns(self) -> float:
        return statistics.median(self._ns("observed"))

    @property
    def predicted_ns(self) -> float:
        return statistics.median(self._ns("predicted"))

    @property
    def change(self) -> float:
        return (self.predicted_ns - self.observed_ns) / self.observed_ns \
            if self.observed_ns else 0.0

    @property
    def replay_error(self) -> float:
        """The largest replay error of its runs (absolute, a fraction)."""
        return max((abs(r.error) for r in self.runs), default=0.0)

    @property
    def risk(self) -> float:
        """The engines' largest error seen for this kind of edit (`model_risk`)."""
        return max((model_risk(r.engine, self.edit) for r in self.runs), default=0.0)

    @property
    def interval_ns(self) -> tuple[float, float]:
        """The runs' predictions' spread, widened by the largest replay error or the
        engine's error for this kind of edit, whichever is larger."""
        p = self._ns("predicted")
        e = max(self.replay_error, self.risk)
        return min(p) * (1 - e), max(p) * (1 + e)

    @property
    def median_run(self) -> RunPrediction:
        ranked = sorted(self.runs, key=lambda r: (r.ns(r.predicted), r.source))
        return ranked[(len(ranked) - 1) // 2]


def path_composition(tt: TaskTable, path: ObservedPath) -> dict[str, int]:
    """A critical path's cycles by part: `compute <engine>` and `stall <piece>`."""
    out: dict[str, int] = {}
    for mask, c in zip(tt.types[path.tasks].tolist(), path.compute.tolist()):
        key = "compute " + engine_label(mask, tt.core_types)
        out[key] = out.get(key, 0) + c
    for part, cycles in path.stall_by_part().items():
        if cycles:
            out[f"stall {part}"] = cycles
    return out


def run_prediction(source: str, inp: ReplayInput, edit: Edit) -> RunPrediction:
    """One capture's prediction (`ValueError` for an edit that does not fit it)."""
    base = inp.baseline()
    edited = base if edit.empty else replay(inp, edit)
    path = edited.path(inp)
    return RunPrediction(source, inp.engine, inp.tasks.freq_hz, inp.makespan, base.makespan,
                         edited.makespan, path_composition(edited.table(inp), path),
                         len(path.tasks))


def predict(runs: list[tuple[str, list]], edit: Edit) -> list[RankPrediction]:
    """`runs`: (source, its `RankAnalysis`es) per run. Ranks pair across runs by label."""
    out: dict[str, RankPrediction] = {}
    for source, ranks in runs:
        for r in ranks:
            rank = out.setdefault(r.label, RankPrediction(r.label, edit))
            if r.replay is None:
                rank.missing.append((source, r.no_replay or "no replay"))
                continue
            rank.runs.append(run_prediction(source, r.replay, edit))
    if not out:
        raise TraceInputError(runs[0][0] if runs else "<inputs>", "no capture to replay")
    return list(out.values())


# --------------------------------------------------------------------------- output

def _pct(x: float, signed: bool = False) -> str:
    return f"{x * 100:{'+' if signed else ''}.1f} %"


def _composition_text(run: RunPrediction) -> str:
    total = run.predicted or 1
    comp = run.composition
    compute = [(k.split(" ", 1)[1], v) for k, v in comp.items() if k.startswith("compute ")]
    stalls = [(k.split(" ", 1)[1], v) for k, v in comp.items() if k.startswith("stall ")]
    parts = " + ".join(f"{e} {_pct(v / total)}" for e, v in compute) or "no compute"
    if stalls:
        parts += " + stalls (" + ", ".join(f"{p} {_pct(v / total)}" for p, v in stalls) + ")"
    n = run.path_tasks
    return f"{parts}; {n} task{'s' * (n != 1)}"


def rank_lines(p: RankPrediction) -> list[str]:
    if not p.runs:
        why = p.missing[0][1] if p.missing else "no replay"
        return [f"{p.label}: {p.edit.words()}: unknown: {why}"]
    lo, hi = p.interval_ns
    engines = sorted({r.engine for r in p.runs})
    many = len(p.runs) > 1
    widened = (f"this engine's error against re-runs for such an edit, {_pct(p.risk)}"
               if p.risk > p.replay_error else "the replay error")
    spread = f"the {len(p.runs)} runs' spread, widened by {widened}" if many else widened
    out = [(f"{p.label}: {p.edit.words()}: makespan {duration(p.observed_ns)} -> "
            f"{duration(p.predicted_ns)} predicted ({_pct(p.change, True)})"
            + ("; medians of the runs" if many else "")),
           f"  interval: {duration(lo)} to {duration(hi)} ({spread})",
           (f"  replay error: {_pct(p.replay_error)} (unedited, against the capture); "
            "engine: " + ", ".join(f"{e}, {ENGINE_WORDS[e]}" for e in engines)),
           f"  critical path, predicted: {_composition_text(p.median_run)}"]
    out += [f"  not replayed: {source}: {why}" for source, why in p.missing]
    return out


def whatif_dict(preds: list[RankPrediction], edit: Edit) -> dict:
    def run_dict(r: RunPrediction) -> dict:
        return {"source": r.source, "engine": str(r.engine),
                "observed_ns": round(r.ns(r.observed), 1),
                "replayed_ns": round(r.ns(r.replayed), 1),
                "predicted_ns": round(r.ns(r.predicted), 1), "replay_error": r.error,
                "path": {k: round(r.ns(v), 1) for k, v in r.composition.items()},
                "path_tasks": r.path_tasks}

    ranks = []
    for p in preds:
        d = {"label": p.label, "runs": [run_dict(r) for r in p.runs],
             "not_replayed": [{"source": s, "why": w} for s, w in p.missing]}
        if p.runs:
            lo, hi = p.interval_ns
            d.update({"observed_ns": round(p.observed_ns, 1),
                      "predicted_ns": round(p.predicted_ns, 1), "change_share": p.change,
                      "interval_ns": [round(lo, 1), round(hi, 1)],
                      "replay_error": p.replay_error, "model_risk": p.risk})
        ranks.append(d)
    return {"schema": SCHEMA, "edit": {
        "words": edit.words(), "cores": dict(edit.cores), "faster": dict(edit.faster),
        "sched_latency": dict(edit.sched), "no_deps": edit.no_deps}, "ranks": ranks}


def format_whatif(preds: list[RankPrediction], edit: Edit, fmt: str = "text") -> str:
    if fmt == "json":
        import json

        return json.dumps(whatif_dict(preds, edit), indent=1) + "\n"
    lines = [w for p in preds for ln in rank_lines(p) for w in wrap(ln)]
    lines.append("(how the replay works and how well it predicts: docs/whatif.md)")
    return "\n".join(lines) + "\n"
