"""A whole-run comparison (`run_diff.RunDiff`) as one self-contained HTML page
(`pypto-profile html BASE... -- NEW...`): the gate's decision first, then per rank
side-by-side bars, base above new, for the device makespan, the critical path's composition
and the kernel families, each with its change and interval; then the tasks that changed
most and the compile stages. No script and no network (the page's CSP forbids both)."""

from __future__ import annotations

import html

from pypto.compile_profiling.foundation.units import unit_for
from pypto.compile_profiling.profile_tool.html import PAGE_CSP, PAGE_STYLE
from pypto.compile_profiling.profile_tool.run_diff import Change, RankDiff, RunDiff, decision
from pypto.compile_profiling.profile_tool.run_diff_report import place_on_path, signed_ns
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns

__all__ = ["compare_html"]

# the page has no script at all: the run page's policy without its inline script
COMPARE_CSP = PAGE_CSP.replace("script-src 'unsafe-inline'", "script-src 'none'")
WIDTH = 1100           # label | two bars | the change and its interval (about 60 chars)
LABEL_W = 180
BAR_W = 420
BAR_H = 12
ROW_H = 2 * BAR_H + 12
COLORS = {"base": "#8fb3e0", "new": "#f2a65a"}
_EXTRA_STYLE = """
.gate{border-left:4px solid #c33;padding:4px 10px;background:#fafafa}
.gate.ok{border-left-color:#3a3}
td:last-child{text-align:left}
.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
"""


def _delta_text(d: RunDiff, c: Change) -> str:
    text = signed_ns(c.delta) + ("" if c.pct is None else f" ({c.pct:+.1f}%)")
    if c.lower is None or c.upper is None:
        return text + "; interval unknown (too few runs)"
    conf = (1 - 2 * d.alpha) * 100
    text += f"; {conf:g}%: {signed_ns(c.lower)} .. {signed_ns(c.upper)}"
    if c.regression:
        text += "; REGRESSION"
    elif c.within_noise:
        text += "; within noise"
    return text


def _bars(d: RunDiff, rows: list[tuple[str, Change]]) -> str:
    """One group of rows on one scale: per row two bars (base, new) and the change."""
    esc = html.escape
    top = max((max(c.base_median or 0, c.new_median or 0) for _, c in rows), default=0) or 1
    height = ROW_H * len(rows) + 4
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-size="11" font-family="system-ui,sans-serif">')]
    for i, (label, c) in enumerate(rows):
        y = i * ROW_H + 2
        out.append(f'<text x="{LABEL_W - 6}" y="{y + BAR_H + 4}" text-anchor="end">'
                   f'{esc(label)}</text>')
        for j, (side, value) in enumerate((("base", c.base_median), ("new", c.new_median))):
            w = 0 if value is None else max(1, round(BAR_W * value / top))
            yy = y + j * BAR_H
            out.append(f'<rect x="{LABEL_W}" y="{yy}" width="{w}" height="{BAR_H - 2}" '
                       f'fill="{COLORS[side]}"><title>{side}: '
                       f'{esc("-" if value is None else fmt_ns(value))}</title></rect>')
            out.append(f'<text x="{LABEL_W + w + 4}" y="{yy + BAR_H - 3}">'
                       f'{esc("-" if value is None else fmt_ns(value))}</text>')
        weight = ' font-weight="bold" fill="#b22"' if c.regression else ""
        out.append(f'<text x="{LABEL_W + BAR_W + 80}" y="{y + BAR_H + 4}"{weight}>'
                   f'{esc(_delta_text(d, c))}</text>')
    out.append("</svg>")
    return "".join(out)


def _rank_section(d: RunDiff, r: RankDiff, top: int) -> list[str]:
    esc = html.escape
    verdict = (f"{r.base_verdict} → <b>{esc(r.new_verdict)}</b>" if r.verdict_changed
               else f"{esc(r.new_verdict)} (unchanged)")
    out = [f"<h2>{esc(r.label)}</h2>", f"<p>Verdict (median run): {verdict}</p>",
           "<h3>Device makespan</h3>", _bars(d, [("makespan", r.makespan)])]
    path = [(c.name.split(":", 1)[1], c) for c in r.path
            if (c.base_median or 0) or (c.new_median or 0)]
    if path:
        out += ["<h3>The critical path's composition</h3>", _bars(d, path)]
    fams = [(c.name.split(":", 1)[1], c) for c in r.families][:top]
    if fams:
        out += ["<h3>Kernel families: core time summed over cores</h3>", _bars(d, fams),
                _left_out(len(r.families) - len(fams), "kernel families")]
    if r.tasks:
        shown = r.tasks if top <= 0 else r.tasks[:top]
        times, change = (unit_for([x for c in shown for x in (c.base_median, c.new_median)]),
                         unit_for([c.delta for c in shown]))
        rows = "".join(
            f"<tr><td>{esc(c.name.split(':', 1)[1])}</td><td>{times(c.base_median or 0)}</td>"
            f"<td>{times(c.new_median or 0)}</td><td>{change(c.delta, signed=True)}</td>"
            f"<td>{esc(place_on_path(c))}</td></tr>" for c in shown)
        out += [(f"<h3>Tasks that changed most ({r.paired_tasks} paired by kernel family and "
                "order)</h3>"), "<table><thead><tr><th>task</th><th>base</th><th>new</th>"
                "<th>change</th><th>critical path</th></tr></thead><tbody>" + rows
                + "</tbody></table>", _left_out(len(r.tasks) - len(shown), "tasks")]
    return out


def _left_out(n: int, what: str) -> str:
    """The line under a table cut to its largest rows: how many it left out."""
    return (f"<p>{n} more {what}: <code>pypto-profile diff BASE -- NEW --top 0</code> lists "
            "them all</p>" if n > 0 else "")


def _compile_section(d: RunDiff, top: int) -> list[str]:
    c = d.compile
    if c is None:
        return []
    from pypto.compile_profiling.profile_tool.diff import verdict

    esc = html.escape
    # the largest changes either way (increases and decreases), the rest counted
    ranked = sorted(c.changes, key=lambda s: (-abs(s.delta_ns), s.key))
    shown = ranked if top <= 0 else ranked[:top]
    times = unit_for([x for s in shown for x in (s.base_ns, s.new_ns)])
    change = unit_for([s.delta_ns for s in shown])
    rows = "".join(
        f"<tr><td>{esc(s.key)}</td><td>{times(s.base_ns)}</td><td>{times(s.new_ns)}</td>"
        f"<td>{change(s.delta_ns, signed=True)}</td>"
        f"<td>{'REGRESSION' if s.regression else 'within the threshold'}</td></tr>"
        for s in shown)
    return ["<h2>Compile stages</h2>", f"<p>{esc(verdict(c))}</p>",
            "<table><thead><tr><th>stage</th><th>base</th><th>new</th><th>change</th>"
            "<th>gate</th></tr></thead><tbody>" + rows + "</tbody></table>",
            _left_out(len(ranked) - len(shown), "stages")]


def compare_html(d: RunDiff, top: int = 10) -> str:
    """The page's HTML text."""
    esc = html.escape
    ok = "" if d.failed else " ok"
    runs = f"base: {len(d.base_runs)} run(s), new: {len(d.new_runs)} run(s)"
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{COMPARE_CSP}\">",
        "<title>PyPTO run comparison</title>",
        f"<style>{PAGE_STYLE}{_EXTRA_STYLE}</style></head><body>",
        "<h1>PyPTO run comparison</h1>",
        f'<p class="gate{ok}">{esc(decision(d))}</p>',
        (f'<p class="key">{esc(runs)}; bars: <span style="background:{COLORS["base"]}">'
        f'</span>base <span style="background:{COLORS["new"]}"></span>new (medians); '
        "changes with their interval from the runs' spread</p>"),
    ]
    for r in d.ranks:
        parts += _rank_section(d, r, top)
    parts += _compile_section(d, top)
    parts += [f"<p><i>Note: {esc(n)}</i></p>" for n in d.notes]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
