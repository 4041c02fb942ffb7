"""A whole-run comparison (`run_diff.RunDiff`) as text, markdown (a pull-request comment)
or JSON (`docs/diff.schema.json`, `"schema": "pypto.run_diff/1"`, times in ns).

Every format opens with the gate's decision; per rank the makespan with its interval, the
verdict (and whether it changed), the critical path's composition, the kernel families and
the tasks that changed most, each said to be on or off the critical path."""

from __future__ import annotations

import json
import textwrap

from pypto.compile_profiling.foundation.terminal import COLUMNS, md_code, printable, wrap
from pypto.compile_profiling.profile_tool import diff as stage_diff
from pypto.compile_profiling.profile_tool.rank_bound import min_runs
from pypto.compile_profiling.profile_tool.run_diff import Change, RankDiff, RunDiff, decision
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns

__all__ = ["SCHEMA", "format_run_diff", "place_on_path", "run_diff_dict", "signed_ns"]

SCHEMA = "pypto.run_diff/1"
OFF_PATH = "off the critical path: it did not set the new makespan"


def _t(ns: float | None) -> str:
    return "-" if ns is None else fmt_ns(ns)


def signed_ns(ns: float) -> str:
    """A change in ns with its sign (`+8220 ns`, `-1.2 ms`)."""
    return ("+" if ns >= 0 else "-") + fmt_ns(ns)


def _pct(c: Change) -> str:
    return "" if c.pct is None else f"{c.pct:+.1f}%"


def _interval(d: RunDiff, c: Change) -> str:
    if c.lower is None or c.upper is None:
        return "interval unknown (too few runs)"
    conf = (1 - 2 * d.alpha) * 100
    return f"{signed_ns(c.lower)} .. {signed_ns(c.upper)} ({conf:g}% interval)"


def _runs(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else f"median of {len(paths)} runs"


def place_on_path(c: Change) -> str:
    """Where a family's or task's change sits: within the noise or not, on the critical
    path or off it (and in how many new runs)."""
    noise = "within the runs' noise; " if c.within_noise else ""
    return noise + _path_place(c) if noise or c.on_path_runs is not None else ""


def _path_place(c: Change) -> str:
    if c.on_path_runs is None:
        return ""
    k, m = c.on_path_runs
    if k == 0:
        return OFF_PATH
    if k == m:
        return "on the critical path"
    side = "on" if c.on_path else "off"
    return f"{side} the critical path (on it in {k} of {m} new runs)"


def _gate(c: Change) -> str:
    if c.threshold_pct is None:
        return ""
    return f"; gate: fail above {c.threshold_pct:g}%"


def _table(rows: list[tuple[str, ...]], numeric: int, indent: str = "    ") -> list[str]:
    """Right-aligned numeric columns, then the words; words past `COLUMNS` go on under
    the words' column (under the row's start plus a hang when the numbers leave no room)."""
    widths = [max(len(r[i]) for r in rows) for i in range(numeric)]
    out = []
    for r in rows:
        lead = indent + "  ".join(r[i].rjust(widths[i]) for i in range(numeric)) + "  "
        words = "  ".join(x for x in r[numeric:] if x)
        room = COLUMNS - len(lead)
        if len(lead) + len(words) <= COLUMNS or room < 30:
            out += wrap((lead + words).rstrip())
        else:
            parts = textwrap.wrap(words, room, break_long_words=False, break_on_hyphens=False)
            out += [lead + parts[0]] + [" " * len(lead) + x for x in parts[1:]]
    return out


def _left(names: list[str]) -> list[str]:
    """Names padded to one width: a left-aligned column."""
    w = max(map(len, names), default=0)
    return [n.ljust(w) for n in names]


def _rank_text(d: RunDiff, r: RankDiff, top: int) -> list[str]:
    m = r.makespan
    mark = "  REGRESSION" if m.regression else ""
    lines = [(f"{r.label}: device makespan {_t(m.base_median)} -> {_t(m.new_median)} "
             f"({_pct(m)}){mark}"), f"  change {_interval(d, m)}{_gate(m)}"]
    lines.append(f"  verdict (median run): {r.base_verdict} -> {r.new_verdict}"
                 if r.verdict_changed else f"  verdict (median run): {r.new_verdict} (unchanged)")
    if r.path:
        lines.append("  critical path's composition:")
        rows = [("base", "new", "change", "", "part")]
        rows += [(_t(c.base_median), _t(c.new_median), signed_ns(c.delta), _pct(c),
                  c.name.split(":", 1)[1]) for c in r.path
                 if (c.base_median or 0) or (c.new_median or 0)]
        lines += _table(rows, 4)
    fams = [c for c in r.families if c.delta][:top] if top else \
        [c for c in r.families if c.delta]
    lines.append("  kernel families (core time summed over cores):" if fams else
                 "  kernel families: no change in core time")
    if fams:
        names = _left(["family"] + [c.name.split(":", 1)[1] for c in fams])
        rows = [("change", "", "base", "new", "tasks", names[0])]
        for c, f in zip(fams, names[1:]):
            tb, tn = r.family_tasks.get(f.rstrip(), (0, 0))
            tasks = f"{tb:g}" if tb == tn else f"{tb:g}->{tn:g}"
            rows.append((signed_ns(c.delta), _pct(c), _t(c.base_median), _t(c.new_median),
                         tasks, f, place_on_path(c)))
        lines += _table(rows, 6)
    if r.tasks:
        shown = r.tasks[:top] if top else r.tasks
        lines.append(f"  tasks that changed most ({r.paired_tasks} paired by kernel family "
                     "and order):")
        names = _left([c.name.split(":", 1)[1] for c in shown])
        rows = [(signed_ns(c.delta), _t(c.base_median), "->", _t(c.new_median), n,
                 place_on_path(c)) for c, n in zip(shown, names)]
        lines += _table(rows, 5)
    if any(r.unpaired):
        lines.append(f"  unpaired tasks: {r.unpaired[0]} only in base, {r.unpaired[1]} only "
                     "in new")
    e2e = [c for c in r.end_to_end if c.delta]
    if e2e:
        lines.append("  end to end (host ns):")
        rows = [(_t(c.base_median), _t(c.new_median), signed_ns(c.delta),
                 c.name.split(":", 1)[1]) for c in e2e]
        lines += _table(rows, 3)
    return lines


def format_text(d: RunDiff, top: int = 10) -> str:
    lines = [f"base: {_runs(d.base_runs)}", f"new:  {_runs(d.new_runs)}", *wrap(decision(d))]
    for r in d.ranks:
        lines += [""] + _rank_text(d, r, top)
    if d.compile is not None:
        lines += ["", "Compile stages:"]
        lines += ["  " + x for x in stage_diff.format_text(d.compile).splitlines()[2:] if x]
    lines += [x for n in d.notes for x in wrap(f"note: {n}")]
    return "\n".join(x for ln in lines for x in wrap(printable(ln))) + "\n"


def _md_change_row(c: Change, label: str) -> str:
    note = "⚠️ regression" if c.regression else place_on_path(c)
    return (f"| {label} | {_t(c.base_median)} | {_t(c.new_median)} | {signed_ns(c.delta)} "
            f"{_pct(c)} | {note} |")


def format_markdown(d: RunDiff, top: int = 10) -> str:
    head = "### PyPTO run comparison: " + ("regression" if d.failed else "no regression")
    lines = [head, "", f"{decision(d)}. Base: {_runs(d.base_runs)}; new: {_runs(d.new_runs)}.",
             ""]
    for r in d.ranks:
        m = r.makespan
        verdict = (f"{r.base_verdict} → **{r.new_verdict}**" if r.verdict_changed
                   else f"{r.new_verdict} (unchanged)")
        lines += [f"#### {r.label}", "",
                  (f"Device makespan **{_t(m.base_median)} → {_t(m.new_median)}** "
                   f"({_pct(m)}); change {_interval(d, m)}{_gate(m)}"
                   f"{'  REGRESSION' if m.regression else ''}. Verdict (median run): {verdict}."), "",
                  "| figure | base | new | change | |", "|---|---:|---:|---:|---|"]
        for c in [c for c in r.path if c.delta]:
            lines.append(_md_change_row(c, "path: " + printable(c.name.split(":", 1)[1])))
        fams = [c for c in r.families if c.delta]
        for c in fams[:top] if top else fams:
            lines.append(_md_change_row(c, "family " + md_code(c.name.split(":", 1)[1])))
        for c in r.tasks[:top] if top else r.tasks:
            lines.append(_md_change_row(c, "task " + md_code(c.name.split(":", 1)[1])))
        lines.append("")
    if d.compile is not None:
        lines += [x.replace("### Compile profile", "#### Compile stages", 1)
                  for x in stage_diff.format_markdown(d.compile).splitlines()]
    lines += [f"_Note: {n}_" for n in d.notes]
    return "\n".join(lines) + "\n"


def _change_dict(c: Change) -> dict:
    return {"name": c.name, "base_ns": c.base, "new_ns": c.new,
            "base_median_ns": c.base_median, "new_median_ns": c.new_median,
            "delta_ns": c.delta, "change_pct": c.pct,
            "interval_ns": None if c.lower is None or c.upper is None else [c.lower, c.upper],
            "threshold_pct": c.threshold_pct, "regression": c.regression,
            "on_critical_path": c.on_path,
            "on_critical_path_runs": None if c.on_path_runs is None else list(c.on_path_runs),
            "within_noise": c.within_noise}


def run_diff_dict(d: RunDiff) -> dict:
    def rank(r: RankDiff) -> dict:
        fams = []
        for c in r.families:
            f = c.name.split(":", 1)[1]
            tb, tn = r.family_tasks.get(f, (0, 0))
            pb, pn = r.family_path.get(f, (0.0, 0.0))
            fams.append({**_change_dict(c), "family": f, "tasks": [tb, tn],
                         "path_compute_ns": [pb, pn]})
        return {"label": r.label, "makespan": _change_dict(r.makespan),
                "verdict": {"base": r.base_verdict, "new": r.new_verdict,
                            "changed": r.verdict_changed},
                "path": [_change_dict(c) for c in r.path], "families": fams,
                "tasks": [_change_dict(c) for c in r.tasks],
                "end_to_end": [_change_dict(c) for c in r.end_to_end],
                "paired_tasks": r.paired_tasks, "unpaired_base": r.unpaired[0],
                "unpaired_new": r.unpaired[1]}

    return {"schema": SCHEMA, "base_runs": d.base_runs, "new_runs": d.new_runs,
            "alpha": d.alpha, "min_runs_per_side": min_runs(d.alpha),
            "fail_above": {"makespan": d.thresholds.makespan_pct,
                           "rules": [[g, p] for g, p in d.thresholds.rules]},
            "decision": decision(d), "failed": d.failed,
            "regressions": [{"rank": label, "figure": c.name} for label, c in d.regressions],
            "ranks": [rank(r) for r in d.ranks],
            "compile": None if d.compile is None else stage_diff.diff_dict(d.compile),
            "notes": d.notes}


def format_run_diff(d: RunDiff, fmt: str, top: int = 10) -> str:
    if fmt == "markdown":
        return format_markdown(d, top)
    if fmt == "json":
        return json.dumps(run_diff_dict(d), indent=1, ensure_ascii=False) + "\n"
    return format_text(d, top)
