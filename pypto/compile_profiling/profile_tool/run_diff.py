"""Compare whole runs: the device makespan per rank, kernel families, the critical path's
composition, the verdict, the tasks that changed most and where they sit, and the compile
stages (`profile_tool.diff`, unchanged).

Each figure is compared as the compile stages are (`diff.regression_of`): medians per side,
the change's interval from the runs' own spread by their ranks (`rank_bound`), and a
regression only when, with confidence 1 - alpha, the figure got worse by more than its
threshold. The device makespan is gated by default (`DEFAULT_FAIL_ABOVE_PCT`, as upstream's
perf guard); any other figure only when a threshold names it (`Thresholds`). One run per
side never decides anything: the runs' noise is unknown.

A task or family that changed but sat off the critical path in the new runs is flagged: it
did not set the new makespan.
"""

from __future__ import annotations

import fnmatch
import statistics
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.profile_tool.diff import (
    DEFAULT_ALPHA,
    DEFAULT_FAIL_ABOVE_PCT,
    DEFAULT_MIN_MS,
    DEFAULT_THRESHOLD_PCT,
    ProfileDiff,
    diff_profiles,
)
from pypto.compile_profiling.profile_tool.rank_bound import lower_bound, min_runs
from pypto.compile_profiling.profile_tool.run_figures import RankFigures, RunFigures
from pypto.errors import GateError

__all__ = ["DEFAULT_FAIL_ABOVE_PCT", "Change", "RankDiff", "RunDiff", "Thresholds",
           "diff_runs"]

TOP_TASKS = 10


@dataclass(slots=True)
class Thresholds:
    """Which figures gate, and at what percent: `makespan` by default; `rules` are
    (glob over figure names, percent), the last match winning (`makespan`,
    `family:gemm`, `family:*`, `path:stall dispatch`, `e2e:launch`, `task:gemm#3`)."""

    makespan_pct: float = DEFAULT_FAIL_ABOVE_PCT
    rules: list[tuple[str, float]] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)    # the patterns that named a figure

    def pct(self, name: str) -> float | None:
        found = self.makespan_pct if name == "makespan" else None
        for pattern, pct in self.rules:
            if fnmatch.fnmatchcase(name, pattern):
                found = pct
                self.matched.add(pattern)
        return found

    def task_rules(self) -> list[str]:
        """The patterns that may name a task (`task:...`, or a glob not bound to another
        kind of figure)."""
        other = ("makespan", "family:", "path:", "e2e:")
        return [p for p, _ in self.rules if p.startswith("task:") or not p.startswith(other)]

    def unmatched(self) -> list[str]:
        """The patterns that named no figure of the runs compared."""
        return list(dict.fromkeys(p for p, _ in self.rules if p not in self.matched))


@dataclass(slots=True)
class Change:
    """One figure of one rank across the runs (ns, or a count for `:tasks`)."""

    name: str
    base: list[float]
    new: list[float]
    threshold_pct: float | None = None     # gated at this percent; None: reported only
    lower: float | None = None             # the change is at least this (1 - alpha)
    upper: float | None = None             # ... and at most this (1 - alpha)
    regression: bool = False
    on_path_runs: tuple[int, int] | None = None   # on the critical path in k of m new runs

    @property
    def on_path(self) -> bool | None:
        """On the critical path in most new runs (None: not said of this figure)."""
        return None if self.on_path_runs is None else \
            self.on_path_runs[0] * 2 > self.on_path_runs[1]

    @property
    def base_median(self) -> float | None:
        return statistics.median(self.base) if self.base else None

    @property
    def new_median(self) -> float | None:
        return statistics.median(self.new) if self.new else None

    @property
    def delta(self) -> float:
        return (self.new_median or 0.0) - (self.base_median or 0.0)

    @property
    def pct(self) -> float | None:
        b = self.base_median
        return None if not b or self.new_median is None else self.delta / b * 100

    @property
    def decided(self) -> bool:
        return self.lower is not None

    @property
    def within_noise(self) -> bool:
        """The change's interval holds 0: the runs cannot tell it from no change."""
        return self.lower is not None and self.upper is not None and \
            self.lower <= 0 <= self.upper


@dataclass(slots=True)
class RankDiff:
    label: str
    makespan: Change
    base_verdict: str
    new_verdict: str
    families: list[Change]        # core time summed over cores, largest change first
    family_tasks: dict[str, tuple[float, float]]    # family -> median tasks (base, new)
    family_path: dict[str, tuple[float, float]]     # family -> compute on the path (ns)
    path: list[Change]            # the observed path's composition
    end_to_end: list[Change]
    tasks: list[Change]           # the `top` largest task changes (0: all)
    paired_tasks: int
    unpaired: tuple[int, int]     # tasks only in base, only in new
    gated: list[Change]           # every figure a threshold named

    @property
    def verdict_changed(self) -> bool:
        return self.base_verdict != self.new_verdict


@dataclass(slots=True)
class RunDiff:
    base_runs: list[str]
    new_runs: list[str]
    alpha: float
    thresholds: Thresholds
    ranks: list[RankDiff]
    compile: ProfileDiff | None
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[tuple[str, Change]]:
        return [(r.label, c) for r in self.ranks for c in r.gated if c.regression]

    @property
    def failed(self) -> bool:
        return bool(self.regressions) or bool(self.compile and self.compile.regressions)

    @property
    def runs_per_side(self) -> tuple[int, int]:
        return len(self.base_runs), len(self.new_runs)


def _change(name: str, base: list[float], new: list[float], alpha: float,
            thresholds: Thresholds | None) -> Change:
    c = Change(name, base, new)
    if base and new:
        c.lower = lower_bound(base, new, alpha)
        up = lower_bound(new, base, alpha)
        c.upper = None if up is None else -up
    if thresholds is not None:
        c.threshold_pct = thresholds.pct(name)
        if c.threshold_pct is not None and c.lower is not None and base:
            floor = c.threshold_pct / 100 * statistics.median(base)
            c.regression = c.lower > floor
    return c


def _figure_lists(ranks: list[RankFigures], get) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in ranks:
        for k, v in get(r).items():
            out.setdefault(k, []).append(float(v))
    return out


def _mode(values: list[str | None]) -> str:
    """The most common verdict of the runs that have one (a side's median run, as
    `load_runs_figures` decides it; every run given as figures with verdicts)."""
    values = [v for v in values if v is not None]
    if not values:
        return "unknown (not decided)"
    counts = Counter(values)
    top = max(counts.values())
    winners = [v for v in values if counts[v] == top]
    return winners[0] if len(counts) == 1 else (
        f"{winners[0]} ({top} of {len(values)} runs)")


def _verdict(r: RankFigures) -> str | None:
    if r.verdict is None:
        return None
    return r.verdict + (f" (device: {r.device_verdict})" if r.device_verdict else "")


def _side_tasks(ranks: list[RankFigures], family: str) -> tuple[np.ndarray, np.ndarray]:
    """One family's tasks on one side, in order: the median duration over the runs (NaN
    where no run has that task) and the share of runs that had it on the critical path."""
    arrays = [r.task_ns.get(family, np.zeros(0)) for r in ranks]
    width = max((len(a) for a in arrays), default=0)
    ns = np.full((len(ranks), width), np.nan)
    on = np.zeros((len(ranks), width))
    for i, r in enumerate(ranks):
        ns[i, :len(arrays[i])] = arrays[i]
        on[i, :len(arrays[i])] = r.task_on_path.get(family, np.zeros(0, bool))
    with warnings.catch_warnings():      # a task no run here has: NaN, said as unpaired
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(ns, axis=0) if width else np.zeros(0), on.mean(axis=0)


def _task_changes(base: list[RankFigures], new: list[RankFigures], alpha: float,
                  thresholds: Thresholds, top: int
                  ) -> tuple[list[Change], list[Change], int, tuple[int, int]]:
    """The `top` largest task changes (0: all; tasks paired by family and order), every
    paired task a `task:` gate names (however small its change: a gate is never left
    unevaluated), how many tasks paired, and how many were only in base / only in new."""
    fams = list(dict.fromkeys(f for r in base + new for f in r.task_ns))
    rules = thresholds.task_rules()
    paired, only = 0, [0, 0]
    found: list[tuple[float, str, int, float]] = []     # (|delta|, family, k, on share)
    named: list[tuple[float, str, int, float]] = []     # tasks a gate names
    for f in fams:
        b, _ = _side_tasks(base, f)
        n, n_on = _side_tasks(new, f)
        m = min(len(b), len(n))
        both = ~np.isnan(b[:m]) & ~np.isnan(n[:m])
        paired += int(both.sum())
        only[0] += int((~np.isnan(b)).sum()) - int(both.sum())
        only[1] += int((~np.isnan(n)).sum()) - int(both.sum())
        delta = np.where(both, n[:m] - b[:m], 0.0)
        if rules:
            named += [(abs(float(delta[k])), f, k, float(n_on[k]))
                      for k in np.flatnonzero(both).tolist()
                      if thresholds.pct(f"task:{f}#{k}") is not None]
        order = np.argsort(-np.abs(delta), kind="stable")
        for k in (order[:top] if top else order).tolist():
            if delta[k] != 0:
                found.append((abs(float(delta[k])), f, k, float(n_on[k])))
    found.sort(key=lambda x: (-x[0], x[1], x[2]))

    def change(f: str, k: int, share: float) -> Change:
        def values(ranks: list[RankFigures]) -> list[float]:
            return [float(r.task_ns[f][k]) for r in ranks if k < len(r.task_ns.get(f, ()))]

        c = _change(f"task:{f}#{k}", values(base), values(new), alpha, thresholds)
        c.on_path_runs = (round(share * len(new)), len(new))
        return c

    tasks = [change(f, k, share) for _, f, k, share in (found[:top] if top else found)]
    shown = {c.name: c for c in tasks}
    gated = [shown.get(f"task:{f}#{k}") or change(f, k, share) for _, f, k, share in named]
    return tasks, gated, paired, (only[0], only[1])


def _rank_diff(label: str, base: list[RankFigures], new: list[RankFigures], alpha: float,
               thresholds: Thresholds, top: int = TOP_TASKS) -> RankDiff:
    def changes(get, prefix: str, gated: list[Change]) -> list[Change]:
        b, n = _figure_lists(base, get), _figure_lists(new, get)
        out = []
        for k in dict.fromkeys([*b, *n]):
            c = _change(prefix + k, b.get(k, []), n.get(k, []), alpha, thresholds)
            out.append(c)
            if c.threshold_pct is not None:
                gated.append(c)
        return out

    gated: list[Change] = []
    makespan = _change("makespan", [r.makespan_ns for r in base],
                       [r.makespan_ns for r in new], alpha, thresholds)
    gated.append(makespan)
    families = changes(lambda r: r.family_core_ns, "family:", gated)
    new_path = _figure_lists(new, lambda r: r.family_path_ns)
    for c in families:
        fam = c.name.split(":", 1)[1]
        c.on_path_runs = (sum(v > 0 for v in new_path.get(fam, [])), len(new))
    families.sort(key=lambda c: (-abs(c.delta), c.name))
    tasks_b = _figure_lists(base, lambda r: r.family_tasks)
    tasks_n = _figure_lists(new, lambda r: r.family_tasks)
    path_b = _figure_lists(base, lambda r: r.family_path_ns)
    fam_names = dict.fromkeys([*tasks_b, *tasks_n])
    med = statistics.median
    family_tasks = {f: (med(tasks_b.get(f, [0])), med(tasks_n.get(f, [0]))) for f in fam_names}
    family_path = {f: (med(path_b.get(f, [0.0])), med(new_path.get(f, [0.0])))
                   for f in fam_names}
    path = changes(lambda r: r.path, "path:", gated)
    e2e = changes(lambda r: r.end_to_end, "e2e:", gated)

    tasks, gated_tasks, paired, unpaired = _task_changes(base, new, alpha, thresholds, top)
    gated += gated_tasks
    return RankDiff(label, makespan, _mode([_verdict(r) for r in base]),
                    _mode([_verdict(r) for r in new]), families, family_tasks, family_path,
                    path, e2e, tasks, paired, unpaired, gated)


def _pair_ranks(base: list[RunFigures], new: list[RunFigures]
                ) -> tuple[list[str], bool, list[str]]:
    """Rank labels to compare, whether they pair by label, and notes: ranks pair by label
    when every run has the same labels, else by position (`r0`, `r1`, ...)."""
    runs = base + new
    labels = [tuple(r.label for r in run.ranks) for run in runs]
    if len(set(labels)) == 1:
        return list(labels[0]), True, []
    n = min(len(x) for x in labels)
    notes = ["the runs' captures have different names; ranks are paired by position"]
    if len({len(x) for x in labels}) > 1:
        notes.append(f"the runs have {min(len(x) for x in labels)} to "
                     f"{max(len(x) for x in labels)} captures; only the first {n} are "
                     "compared")
    return [f"r{i}" for i in range(n)], False, notes


def _rank_of(run: RunFigures, label: str, i: int, by_label: bool) -> RankFigures:
    return next(r for r in run.ranks if r.label == label) if by_label else run.ranks[i]


def diff_runs(base: list[RunFigures], new: list[RunFigures], *,
              thresholds: Thresholds | None = None, alpha: float = DEFAULT_ALPHA,
              threshold_pct: float = DEFAULT_THRESHOLD_PCT,
              min_ms: float = DEFAULT_MIN_MS, top: int = TOP_TASKS) -> RunDiff:
    """Compare the runs of `base` with those of `new` (see the module docstring);
    `threshold_pct` and `min_ms` are the compile stages' rule (`diff.diff_profiles`);
    `top`: the task changes kept (0: all; a task a gate names is always evaluated).
    `GateError` when the gate cannot be evaluated as asked: some runs have a device
    capture and others not, or a `--fail-above` pattern names no figure."""
    thresholds = thresholds or Thresholds()
    with_capture = [bool(r.ranks) for r in base + new]
    if any(with_capture) and not all(with_capture):
        missing = [r.source for r, has in zip(base + new, with_capture) if not has]
        raise GateError(f"{missing[0]}: no device capture (dfx_outputs/), while other runs "
                        f"have one{f' ({len(missing)} runs lack one)' if len(missing) > 1 else ''}"
                        ": the device gate cannot compare it (compare the runs' compile "
                        "profiles, their report/ dirs, for the compile stages alone)")
    notes: list[str] = []
    compile_diff = None
    b_prof = [r.profile for r in base if r.profile is not None]
    n_prof = [r.profile for r in new if r.profile is not None]
    if b_prof and n_prof:
        compile_diff = diff_profiles(b_prof, n_prof, threshold_pct, min_ms, alpha)
    elif b_prof or n_prof:
        notes.append("only one side has a compile profile: compile stages not compared")
    ranks: list[RankDiff] = []
    if all(r.ranks for r in base + new):
        labels, by_label, pair_notes = _pair_ranks(base, new)
        notes += pair_notes
        for i, label in enumerate(labels):
            b = [_rank_of(run, label, i, by_label) for run in base]
            n = [_rank_of(run, label, i, by_label) for run in new]
            ranks.append(_rank_diff(label, b, n, alpha, thresholds, top))
        modes = {r.timing for run in base + new for r in run.ranks}
        if len(modes) > 1:
            notes.append("the runs' device times were made differently ("
                         + ", ".join(sorted(str(m) for m in modes)) + "): the comparison "
                         "mixes modelled and measured time")
    unmatched = thresholds.unmatched()
    if unmatched and ranks:
        raise GateError(f"--fail-above {unmatched[0]}: names no figure of these runs (figures "
                        "are makespan, family:NAME, path:compute AIV, path:stall dispatch, "
                        "e2e:CATEGORY, task:FAMILY#K; `--format json` lists them)")
    return RunDiff([r.source for r in base], [r.source for r in new], alpha, thresholds,
                   ranks, compile_diff, notes)


def decision(d: RunDiff) -> str:
    """The one line that says what the gate decided, and why nothing could be when so."""
    m, n = d.runs_per_side
    need = min_runs(d.alpha)
    conf = f"{(1 - d.alpha) * 100:g}%"
    regs = d.regressions
    stage_regs = len(d.compile.regressions) if d.compile else 0
    undecided = any(not r.makespan.decided for r in d.ranks)
    if regs or stage_regs:
        named = [f"{label} {c.name}" for label, c in regs]
        if stage_regs:
            named.append(f"{stage_regs} compile stage(s)")
        return (f"REGRESSION: {', '.join(named)} worse by more than the threshold, with "
                f"{conf} confidence")
    if undecided:
        why = ("one run per side decides nothing" if m == 1 and n == 1 else
               f"{m} base and {n} new runs cannot tell a change from noise at {conf} "
               "confidence")
        return (f"no regression decided: {why}; give at least {need} runs per side "
                "(BASE1 BASE2 ... -- NEW1 NEW2 ...)")
    if not d.ranks and d.compile is not None:
        from pypto.compile_profiling.profile_tool.diff import verdict

        return verdict(d.compile)
    return f"no regression (with {conf} confidence, nothing gated got worse beyond its threshold)"
