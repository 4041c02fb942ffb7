"""Compare compile profiles: which stages got slower, faster, appeared or vanished.

Stages are matched by their key in the folded view (`compile/passes/ConstantFolding`,
`compile/codegen/kernel_codegen:*`): a family is compared as one (its summed time), so
kernels renamed between runs still compare. With several runs per side each stage's time is
the median over the runs that have it, so one noisy run does not decide. A stage is a
regression when it slowed by more than `threshold_pct` percent *and* more than `min_ms`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from pypto.compile_profiling.profile_data.model import Profile
from pypto.compile_profiling.profile_data.view import view_rows
from pypto.compile_profiling.report import fmt_time

DEFAULT_THRESHOLD_PCT = 10.0
DEFAULT_MIN_MS = 1.0


@dataclass(slots=True)
class StageChange:
    key: str
    base_ns: float | None     # median over the base runs that have the stage; None: new
    new_ns: float | None      # median over the new runs that have the stage; None: vanished
    base_count: float = 0     # family size (median)
    new_count: float = 0
    regression: bool = False

    @property
    def delta_ns(self) -> float:
        return (self.new_ns or 0.0) - (self.base_ns or 0.0)

    @property
    def pct(self) -> float | None:
        if self.base_ns is None or self.new_ns is None or self.base_ns <= 0:
            return None
        return (self.new_ns - self.base_ns) / self.base_ns * 100

    @property
    def status(self) -> str:
        if self.base_ns is None:
            return "new"
        if self.new_ns is None:
            return "vanished"
        return "regression" if self.regression else (
            "slower" if self.delta_ns > 0 else "faster" if self.delta_ns < 0 else "same")


@dataclass(slots=True)
class ProfileDiff:
    base_runs: list[str]
    new_runs: list[str]
    base_total_ns: float
    new_total_ns: float
    changes: list[StageChange]     # matched stages, largest slowdown first (ties: by %)
    added: list[StageChange]       # in NEW only
    vanished: list[StageChange]    # in BASE only
    threshold_pct: float
    min_ms: float

    @property
    def regressions(self) -> list[StageChange]:
        return [c for c in self.changes if c.regression]


def _stage_times(profile: Profile) -> dict[str, tuple[int, int]]:
    """key -> (total ns, count) of each row of the folded view."""
    return {r.key: (r.total_ns, r.count) for r in view_rows(profile.stages)}


def _medians(runs: list[Profile]) -> dict[str, tuple[float, float]]:
    per_key: dict[str, list[tuple[int, int]]] = {}
    for p in runs:
        for key, value in _stage_times(p).items():
            per_key.setdefault(key, []).append(value)
    return {k: (statistics.median(t for t, _ in v), statistics.median(c for _, c in v))
            for k, v in per_key.items()}


def diff_profiles(base: list[Profile], new: list[Profile],
                  threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                  min_ms: float = DEFAULT_MIN_MS) -> ProfileDiff:
    """Compare the medians of `base` runs with the medians of `new` runs."""
    b, n = _medians(base), _medians(new)
    changes, added, vanished = [], [], []
    for key in b.keys() | n.keys():
        if key not in n:
            vanished.append(StageChange(key, b[key][0], None, b[key][1], 0))
        elif key not in b:
            added.append(StageChange(key, None, n[key][0], 0, n[key][1]))
        else:
            c = StageChange(key, b[key][0], n[key][0], b[key][1], n[key][1])
            c.regression = (c.delta_ns > min_ms * 1e6
                            and c.new_ns > c.base_ns * (1 + threshold_pct / 100))
            changes.append(c)
    changes.sort(key=lambda c: (-c.delta_ns, -(c.pct or 0.0), c.key))  # the cause first
    added.sort(key=lambda c: (-c.new_ns, c.key))
    vanished.sort(key=lambda c: (-c.base_ns, c.key))
    return ProfileDiff([p.source for p in base], [p.source for p in new],
                       statistics.median(p.total_ns for p in base),
                       statistics.median(p.total_ns for p in new),
                       changes, added, vanished, threshold_pct, min_ms)


# --------------------------------------------------------------------------- output

def _t(ns: float | None) -> str:
    return "-" if ns is None else fmt_time(ns / 1e9)


def _signed(ns: float) -> str:
    return ("+" if ns >= 0 else "-") + fmt_time(abs(ns) / 1e9)


def _pct(c: StageChange | None, base: float = 0.0, new: float = 0.0) -> str:
    pct = c.pct if c is not None else ((new - base) / base * 100 if base > 0 else None)
    return "" if pct is None else f"{pct:+.1f}%"


def _listed(d: ProfileDiff) -> list[StageChange]:
    """Matched stages whose change reaches `min_ms` (the rest is noise in a report)."""
    return [c for c in d.changes if abs(c.delta_ns) >= d.min_ms * 1e6 or c.regression]


def _runs(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else f"median of {len(paths)} runs"


def format_text(d: ProfileDiff) -> str:
    listed = _listed(d)
    total = (f"Total: {_t(d.base_total_ns)} -> {_t(d.new_total_ns)} "
             f"({_pct(None, d.base_total_ns, d.new_total_ns)})")
    verdict = (f"{len(d.regressions)} regression(s) (slower by more than {d.threshold_pct:g}% "
               f"and {d.min_ms:g} ms)")
    lines = [f"base: {_runs(d.base_runs)}", f"new:  {_runs(d.new_runs)}", total, verdict, ""]
    rows = [("change", "", "base", "new", "stage")]
    for c in listed:
        mark = "  REGRESSION" if c.regression else ""
        rows.append((_signed(c.delta_ns), _pct(c), _t(c.base_ns), _t(c.new_ns), c.key + mark))
    for c in d.added:
        rows.append(("+" + _t(c.new_ns), "new", "-", _t(c.new_ns), c.key))
    for c in d.vanished:
        rows.append(("-" + _t(c.base_ns), "vanished", _t(c.base_ns), "-", c.key))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows if len(rows) > 1 else []:
        lines.append("  ".join(r[i].rjust(widths[i]) for i in range(4)) + "  " + r[4])
    hidden = len(d.changes) - len(listed)
    if hidden:
        lines.append(f"({hidden} matched stage(s) changed by less than {d.min_ms:g} ms)")
    return "\n".join(lines) + "\n"


def format_markdown(d: ProfileDiff) -> str:
    n = len(d.regressions)
    head = f"### Compile profile: {n} regression{'s' if n != 1 else ''}" if n else \
        "### Compile profile: no regression"
    summary = (f"Total: **{_t(d.base_total_ns)} → {_t(d.new_total_ns)}** "
               f"({_pct(None, d.base_total_ns, d.new_total_ns)}); base: {_runs(d.base_runs)}, "
               f"new: {_runs(d.new_runs)}; regression = slower by more than "
               f"{d.threshold_pct:g}% and {d.min_ms:g} ms.")
    lines = [head, "", summary, "", "| stage | base | new | change | |",
             "|---|---:|---:|---:|---|"]

    def esc(key: str) -> str:
        return "`" + key.replace("`", "'").replace("|", "\\|") + "`"

    for c in _listed(d):
        note = "⚠️ regression" if c.regression else ""
        lines.append(f"| {esc(c.key)} | {_t(c.base_ns)} | {_t(c.new_ns)} | "
                     f"{_signed(c.delta_ns)} ({_pct(c)}) | {note} |")
    for c in d.added:
        lines.append(f"| {esc(c.key)} | - | {_t(c.new_ns)} | +{_t(c.new_ns)} | new |")
    for c in d.vanished:
        lines.append(f"| {esc(c.key)} | {_t(c.base_ns)} | - | -{_t(c.base_ns)} | vanished |")
    return "\n".join(lines) + "\n"


def diff_dict(d: ProfileDiff) -> dict:
    def rec(c: StageChange) -> dict:
        return {"key": c.key, "status": c.status,
                "base_ms": None if c.base_ns is None else c.base_ns / 1e6,
                "new_ms": None if c.new_ns is None else c.new_ns / 1e6,
                "delta_ms": c.delta_ns / 1e6, "change_pct": c.pct,
                "base_count": c.base_count, "new_count": c.new_count}

    return {"base_runs": d.base_runs, "new_runs": d.new_runs,
            "threshold_pct": d.threshold_pct, "min_ms": d.min_ms,
            "base_total_ms": d.base_total_ns / 1e6, "new_total_ms": d.new_total_ns / 1e6,
            "regressions": [c.key for c in d.regressions],
            "stages": [rec(c) for c in d.changes + d.added + d.vanished]}


def format_diff(d: ProfileDiff, fmt: str) -> str:
    if fmt == "markdown":
        return format_markdown(d)
    if fmt == "json":
        return json.dumps(diff_dict(d), indent=1, ensure_ascii=False) + "\n"
    return format_text(d)
