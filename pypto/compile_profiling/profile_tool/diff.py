"""Compare compile profiles: which stages got slower, faster, appeared or vanished, and
which slowdowns are real rather than noise.

Stages are matched by their key in the folded view (`compile/passes/ConstantFolding`,
`compile/codegen/kernel_codegen:*`): a family is compared as one (its summed time per run),
so kernels renamed between runs still compare. Each side is one run or several; a stage's
time on a side is the list of its times in the runs that have it.

The rule, exactly (`regression_of`). For a stage with base times B (m runs) and new times N
(n runs):

- floor = max(`min_ms` ms, `threshold_pct` % of median(B)): the smallest slowdown that
  counts at all, whatever the statistics say (the stated noise floor);
- bound = `rank_bound.lower_bound(B, N, alpha)`: with confidence 1 - `alpha` the stage is
  slower by at least this much, judged from the runs' own spread by their ranks (the c-th
  smallest of the m * n differences N_j - B_i; see `rank_bound`);
- the stage is a regression when bound > floor: with confidence 1 - alpha it got slower by
  more than the floor;
- bound is None when m and n are too few to tell any change from noise at `alpha`, that is
  when 1 / C(m + n, m) > alpha (one run per side never can; at the default alpha 0.01 it
  takes 5 runs per side, or 4 and 5): such a stage is never a regression, and the diff says
  so (`undecided`).

`change` (and `pct`) is median(N) - median(B), what the tables show. New and vanished
stages are listed, never regressions.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from pypto.compile_profiling.foundation.terminal import md_code, printable, wrap
from pypto.compile_profiling.profile_data.model import Profile
from pypto.compile_profiling.profile_data.view import view_rows
from pypto.compile_profiling.profile_tool.rank_bound import lower_bound, min_runs
from pypto.compile_profiling.report import fmt_time

DEFAULT_THRESHOLD_PCT = 10.0
DEFAULT_MIN_MS = 1.0
DEFAULT_FAIL_ABOVE_PCT = 15.0   # whole runs: device makespan 15 % slower fails (upstream's
                                # perf_guard); here so that `--help` loads no NumPy
DEFAULT_ALPHA = 0.01  # measured: at 0.05 identical runs gave false regressions (docs/performance.md)


@dataclass(slots=True)
class StageChange:
    key: str
    base_ns: float | None     # median over the base runs that have the stage; None: new
    new_ns: float | None      # median over the new runs that have the stage; None: vanished
    base_count: float = 0     # family size (median)
    new_count: float = 0
    regression: bool = False
    base_runs: int = 0        # how many base / new runs have the stage
    new_runs: int = 0
    floor_ns: float = 0.0     # the smallest slowdown that counts (see the module docstring)
    bound_ns: float | None = None  # slower by at least this, with confidence 1 - alpha

    @property
    def delta_ns(self) -> float:
        return (self.new_ns or 0.0) - (self.base_ns or 0.0)

    @property
    def pct(self) -> float | None:
        if self.base_ns is None or self.new_ns is None or self.base_ns <= 0:
            return None
        return (self.new_ns - self.base_ns) / self.base_ns * 100

    @property
    def undecided(self) -> bool:
        """Matched, but too few runs to tell a change from noise."""
        return self.base_ns is not None and self.new_ns is not None and self.bound_ns is None

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
    alpha: float = DEFAULT_ALPHA

    @property
    def regressions(self) -> list[StageChange]:
        return [c for c in self.changes if c.regression]

    @property
    def undecided(self) -> list[StageChange]:
        return [c for c in self.changes if c.undecided]


def _stage_times(profile: Profile) -> dict[str, tuple[int, int]]:
    """key -> (total ns, count) of each row of the folded view."""
    return {r.key: (r.total_ns, r.count) for r in view_rows(profile.stages)}


def _per_key(runs: list[Profile]) -> dict[str, list[tuple[int, int]]]:
    """key -> (total ns, count) in each run that has the stage."""
    per_key: dict[str, list[tuple[int, int]]] = {}
    for p in runs:
        for key, value in _stage_times(p).items():
            per_key.setdefault(key, []).append(value)
    return per_key


def regression_of(base: list[float], new: list[float], threshold_pct: float, min_ms: float,
                  alpha: float) -> tuple[bool, float, float | None]:
    """(regression, floor ns, bound ns) for one stage's base and new times (see the module
    docstring): a regression when the 1 - alpha lower bound of the slowdown exceeds the
    floor; bound None (never a regression) when the runs are too few to say."""
    floor = max(min_ms * 1e6, threshold_pct / 100 * statistics.median(base))
    bound = lower_bound(base, new, alpha)
    return bound is not None and bound > floor, floor, bound


def diff_profiles(base: list[Profile], new: list[Profile],
                  threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                  min_ms: float = DEFAULT_MIN_MS, alpha: float = DEFAULT_ALPHA) -> ProfileDiff:
    """Compare the runs of `base` with the runs of `new`, stage by stage."""
    b, n = _per_key(base), _per_key(new)
    changes, added, vanished = [], [], []

    def median(values: list[tuple[int, int]], i: int) -> float:
        return statistics.median(v[i] for v in values)

    for key in b.keys() | n.keys():
        if key not in n:
            vanished.append(StageChange(key, median(b[key], 0), None, median(b[key], 1), 0,
                                        base_runs=len(b[key])))
        elif key not in b:
            added.append(StageChange(key, None, median(n[key], 0), 0, median(n[key], 1),
                                     new_runs=len(n[key])))
        else:
            bt, nt = [v[0] for v in b[key]], [v[0] for v in n[key]]
            regression, floor, bound = regression_of(bt, nt, threshold_pct, min_ms, alpha)
            changes.append(StageChange(key, statistics.median(bt), statistics.median(nt),
                                       median(b[key], 1), median(n[key], 1), regression,
                                       len(bt), len(nt), floor, bound))
    changes.sort(key=lambda c: (-c.delta_ns, -(c.pct or 0.0), c.key))  # the cause first
    added.sort(key=lambda c: (-c.new_ns, c.key))
    vanished.sort(key=lambda c: (-c.base_ns, c.key))
    return ProfileDiff([p.source for p in base], [p.source for p in new],
                       statistics.median(p.total_ns for p in base),
                       statistics.median(p.total_ns for p in new),
                       changes, added, vanished, threshold_pct, min_ms, alpha)


# --------------------------------------------------------------------------- output

def _t(ns: float) -> str:
    return fmt_time(ns / 1e9)


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


def _bound(c: StageChange) -> str:
    return "-" if c.bound_ns is None else _signed(c.bound_ns)


def _confidence(d: ProfileDiff) -> str:
    return f"{(1 - d.alpha) * 100:g}%"


def verdict(d: ProfileDiff) -> str:
    """The one line that says what was decided, and why nothing could be when so."""
    need = min_runs(d.alpha)
    if d.changes and len(d.undecided) == len(d.changes):
        return (f"no regression decided: {len(d.base_runs)} base and {len(d.new_runs)} new "
                f"run(s) cannot tell a change from noise at {_confidence(d)} confidence; give "
                f"at least {need} runs per side (BASE1 BASE2 ... -- NEW1 NEW2 ..., or a "
                "directory of runs)")
    line = (f"{len(d.regressions)} regression(s) (slower, with {_confidence(d)} confidence, by "
            f"more than {d.threshold_pct:g}% and {d.min_ms:g} ms)")
    if d.undecided:
        line += f"; {len(d.undecided)} stage(s) in too few runs to decide"
    return line


def format_text(d: ProfileDiff) -> str:
    listed = _listed(d)
    total = (f"Total: {_t(d.base_total_ns)} -> {_t(d.new_total_ns)} "
             f"({_pct(None, d.base_total_ns, d.new_total_ns)})")
    lines = [f"base: {_runs(d.base_runs)}", f"new:  {_runs(d.new_runs)}", total, verdict(d), ""]
    rows = [("change", "", "base", "new", "at least", "stage")]
    for c in listed:
        mark = "  REGRESSION" if c.regression else ""
        rows.append((_signed(c.delta_ns), _pct(c), _t(c.base_ns), _t(c.new_ns), _bound(c),
                     c.key + mark))
    for c in d.added:
        rows.append(("+" + _t(c.new_ns), "new", "-", _t(c.new_ns), "", c.key))
    for c in d.vanished:
        rows.append(("-" + _t(c.base_ns), "vanished", _t(c.base_ns), "-", "", c.key))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows if len(rows) > 1 else []:
        lines.append("  ".join(r[i].rjust(widths[i]) for i in range(5)) + "  " + r[5])
    hidden = len(d.changes) - len(listed)
    if hidden:
        lines.append(f"({hidden} matched stage(s) changed by less than {d.min_ms:g} ms)")
    if len(rows) > 1:
        lines.append(f"(at least: the slowdown with {_confidence(d)} confidence, from the "
                     "runs' spread; '-': too few runs)")
    return "\n".join(x for ln in lines for x in wrap(printable(ln))) + "\n"


def format_markdown(d: ProfileDiff) -> str:
    n = len(d.regressions)
    head = f"### Compile profile: {n} regression{'s' if n != 1 else ''}" if n else \
        "### Compile profile: no regression"
    summary = (f"Total: **{_t(d.base_total_ns)} → {_t(d.new_total_ns)}** "
               f"({_pct(None, d.base_total_ns, d.new_total_ns)}); base: {_runs(d.base_runs)}, "
               f"new: {_runs(d.new_runs)}; {verdict(d)}.")
    lines = [head, "", summary, "",
             f"| stage | base | new | change | at least ({_confidence(d)}) | |",
             "|---|---:|---:|---:|---:|---|"]

    esc = md_code

    for c in _listed(d):
        note = "⚠️ regression" if c.regression else ""
        lines.append(f"| {esc(c.key)} | {_t(c.base_ns)} | {_t(c.new_ns)} | "
                     f"{_signed(c.delta_ns)} ({_pct(c)}) | {_bound(c)} | {note} |")
    for c in d.added:
        lines.append(f"| {esc(c.key)} | - | {_t(c.new_ns)} | +{_t(c.new_ns)} | | new |")
    for c in d.vanished:
        lines.append(f"| {esc(c.key)} | {_t(c.base_ns)} | - | -{_t(c.base_ns)} | | vanished |")
    return "\n".join(lines) + "\n"


def diff_dict(d: ProfileDiff) -> dict:
    def ms(ns: float | None) -> float | None:
        return None if ns is None else ns / 1e6

    def rec(c: StageChange) -> dict:
        return {"key": c.key, "status": c.status,
                "base_ms": ms(c.base_ns), "new_ms": ms(c.new_ns),
                "delta_ms": c.delta_ns / 1e6, "change_pct": c.pct,
                "base_count": c.base_count, "new_count": c.new_count,
                "base_runs": c.base_runs, "new_runs": c.new_runs,
                "floor_ms": ms(c.floor_ns) if c.base_runs and c.new_runs else None,
                "at_least_ms": ms(c.bound_ns), "undecided": c.undecided}

    return {"base_runs": d.base_runs, "new_runs": d.new_runs,
            "threshold_pct": d.threshold_pct, "min_ms": d.min_ms, "alpha": d.alpha,
            "min_runs_per_side": min_runs(d.alpha), "verdict": verdict(d),
            "base_total_ms": d.base_total_ns / 1e6, "new_total_ms": d.new_total_ns / 1e6,
            "regressions": [c.key for c in d.regressions],
            "undecided": [c.key for c in d.undecided],
            "stages": [rec(c) for c in d.changes + d.added + d.vanished]}


def format_diff(d: ProfileDiff, fmt: str) -> str:
    if fmt == "markdown":
        return format_markdown(d)
    if fmt == "json":
        return json.dumps(diff_dict(d), indent=1, ensure_ascii=False) + "\n"
    return format_text(d)
