"""One self-contained HTML page of a run: no network at all (a Content-Security-Policy
forbids every fetch), so it can be mailed, archived in CI or opened on an air-gapped host.

Answer first: `analyze`'s answer (verdict, why, gain bound, evidence), then the whole run on
one clock (`run_picture`: compile stages, each engine's utilisation, the critical path), then
the compile's icicle chart per thread lane (hover a box: name, total, self time, args), the
folded stage table, the per-kernel table and the figures behind the answer. Long tables show
their first `TOP_ROWS` rows, the rest folded. A capture directory without a compile profile
gets the device half of the page.
"""

from __future__ import annotations

import html
import json
import math

from pypto.compile_profiling.profile_data.model import Profile, Stage, walk
from pypto.compile_profiling.profile_data.view import (
    UNACCOUNTED,
    self_ns,
    unaccounted_ns,
    view_rows,
)
from pypto.compile_profiling.profile_tool.kernels import KernelRow, format_kernels
from pypto.compile_profiling.profile_tool.run_picture import device_svg, run_svg
from pypto.compile_profiling.report import fmt_time

CHART_WIDTH = 950       # px: the page fits a 1,024 px window (it scales down below)
TOP_ROWS = 20           # rows of a long table shown before the rest is folded
ROW_HEIGHT = 18
LANE_GAP = 22
LABEL_MIN_PX = 36
_COLORS = {"compile": "#8fb3e0", "parse": "#c7a6e0", "pass": "#9fd4a3", "codegen": "#f2c27b",
           "device": "#e89a9a", "runtime": "#a6d8d8", "user": "#d6d6a8"}
PAGE_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'")


def _t(ns: float) -> str:
    return fmt_time(ns / 1e9)


def _plain(value, depth: int = 0):
    """`value` as strict JSON data for the page: non-finite floats and foreign objects as
    text, lone surrogates escaped, nesting cut at 20 levels."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if depth >= 20:
        return repr(value)[:200]
    if isinstance(value, dict):
        return {_plain(str(k)): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return _plain(str(value))


def _lanes(profile: Profile) -> list[tuple[tuple[int, int], str, list[tuple[Stage, int]]]]:
    """Per (pid, tid): its name and its stages with their depth on that lane."""
    lanes: dict[tuple[int, int], list[tuple[Stage, int]]] = {}
    names: dict[tuple[int, int], str] = {}
    depth_on_lane: dict[int, int] = {}   # by id(): a StageRecord compares by value (upstream's)
    for st, _depth, parent in walk(profile.stages):
        lane = (st.pid, st.tid)
        d = 0
        if parent is not None and (parent.pid, parent.tid) == lane:
            d = depth_on_lane[id(parent)] + 1
        depth_on_lane[id(st)] = d
        lanes.setdefault(lane, []).append((st, d))
        if st.thread_name and lane not in names:
            names[lane] = st.thread_name
    out = []
    for lane, stages in lanes.items():
        label = names.get(lane) or f"thread {lane[1]}"
        out.append((lane, f"{label} (pid {lane[0]}, tid {lane[1]})", stages))
    return out  # in order of first stage: the main thread's first


def _chart(profile: Profile) -> tuple[str, list[dict]]:
    stages = [st for st, _d, _p in walk(profile.stages)]
    if not stages:
        return "<p>No stages.</p>", []
    t0 = min(s.start_ns for s in stages)
    t1 = max(s.end_ns for s in stages)
    scale = CHART_WIDTH / max(t1 - t0, 1)
    parts: list[str] = []
    info: list[dict] = []
    y = 0
    for _lane, label, lane_stages in _lanes(profile):
        parts.append(f'<text class="lane" x="0" y="{y + 13}">{html.escape(label)}</text>')
        y += LANE_GAP
        rows = 1 + max(d for _s, d in lane_stages)
        for st, d in lane_stages:
            i = len(info)
            x = (st.start_ns - t0) * scale
            w = max(st.duration_ns * scale, 0.5)
            color = _COLORS.get(st.cat, "#cccccc")
            if st.error is not None:
                color = "#e05050"
            ry = y + d * ROW_HEIGHT
            parts.append(f'<rect class="stage" data-i="{i}" x="{x:.2f}" y="{ry}" '
                         f'width="{w:.2f}" height="{ROW_HEIGHT - 1}" fill="{color}"/>')
            if w >= LABEL_MIN_PX:
                chars = int(w / 7)
                text = st.name if len(st.name) <= chars else st.name[:max(chars - 1, 1)] + "…"
                parts.append(f'<text class="label" x="{x + 3:.2f}" y="{ry + 13}" '
                             f'data-i="{i}">{html.escape(text)}</text>')
            info.append({"name": st.name, "total": _t(st.duration_ns), "self": _t(self_ns(st)),
                         "cat": st.cat, "thread": label, "args": _plain(st.args or {}),
                         "error": st.error, "open": st.is_open})
        y += rows * ROW_HEIGHT + 8
    svg = (f'<svg id="chart" class="fit" xmlns="http://www.w3.org/2000/svg" '
           f'width="{CHART_WIDTH + 2}" height="{y}" viewBox="0 0 {CHART_WIDTH + 2} {y}">'
           + "".join(parts) + "</svg>")
    return svg, info


def _folded(table_id: str, heads: tuple | list, rows: list[str], what: str) -> str:
    """A table of `rows` (`<tr>` texts): the first TOP_ROWS, the rest in a folded table."""
    head = "<thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead>"
    out = [f"<table id=\"{table_id}\">{head}<tbody>", *rows[:TOP_ROWS], "</tbody></table>"]
    if len(rows) > TOP_ROWS:
        out += [(f"<details><summary>{len(rows) - TOP_ROWS} more {what}</summary>"
                f"<table>{head}<tbody>"), *rows[TOP_ROWS:], "</tbody></table></details>"]
    return "".join(out)


def _summary_table(profile: Profile) -> str:
    total = profile.total_ns

    def share(ns: float) -> str:
        return f"{ns / total * 100:.1f}%" if total > 0 else ""

    heads = ("stage", "count", "total", "wall, where summed over threads", "self", "share",
             "mean", "max")
    rows = []
    un = unaccounted_ns(profile)
    rows.append(f"<tr><td>{UNACCOUNTED}</td><td></td><td>{_t(un)}</td><td></td><td>{_t(un)}</td>"
                f"<td>{share(un)}</td><td></td><td></td></tr>")
    for r in view_rows(profile.stages):
        indent = "&nbsp;" * (2 * (r.depth - 1))
        mean = _t(r.mean_ns) if r.folded else ""
        mx = _t(r.max_ns) if r.folded else ""
        # a family whose members ran at once on several threads: its total is their sum
        wall = f"{_t(r.wall_ns)} ({r.threads} threads)" if r.summed else ""
        summed = f"{_t(r.total_ns)} (sum)" if r.summed else _t(r.total_ns)
        rows.append(f"<tr><td>{indent}{html.escape(r.label)}</td><td>{r.count}</td>"
                    f"<td>{summed}</td><td>{wall}</td><td>{_t(r.self_ns)}</td>"
                    f"<td>{share(r.total_ns)}</td><td>{mean}</td><td>{mx}</td></tr>")
    return _folded("summary", heads, rows, "stages")


def _kernel_table(rows: list[KernelRow]) -> str:
    data = json.loads(format_kernels(rows, "json"))["kernels"]
    heads = ["kernel", "codegen ms", "self ms", "tasks", "core", "device total µs", "mean µs",
             "max µs"]
    keys = ["kernel", "codegen_ms", "self_ms", "tasks", "core_type", "device_total_us",
            "device_mean_us", "device_max_us"]
    rows = []
    for rec in data:
        cells = []
        for k in keys:
            v = rec[k]
            cells.append("-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v))
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return _folded("kernels", heads, rows, "kernels")


PAGE_STYLE = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px} h2{font-size:15px;margin-top:24px}
.answer{border-left:4px solid #c33;padding:2px 10px;margin:8px 0;background:#fafafa} .answer ul{margin:4px 0}
.wrap{overflow-x:auto;border:1px solid #ddd;padding:4px}
svg.fit{max-width:100%;height:auto;display:block}
svg text.tick{fill:#888}
svg text{font:11px system-ui,sans-serif;pointer-events:none}
svg text.lane{font-weight:bold;fill:#444}
rect.stage{stroke:#fff;stroke-width:0.5}
rect.stage:hover{stroke:#000;stroke-width:1}
#tip{position:fixed;display:none;background:#fffbe6;border:1px solid #999;padding:6px;
 max-width:480px;white-space:pre-wrap;font:12px ui-monospace,monospace;pointer-events:none}
table{border-collapse:collapse;margin-top:8px}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left;font-family:ui-monospace,monospace}
"""

_SCRIPT = """
const stages = JSON.parse(document.getElementById('stage-data').textContent);
const tip = document.getElementById('tip');
function describe(s) {
  let t = s.name + '\\ntotal: ' + s.total + '\\nself:  ' + s.self + '\\ncat:   ' + s.cat +
          '\\nlane:  ' + s.thread;
  if (s.error) t += '\\nFAILED: ' + s.error;
  if (s.open) t += '\\n(still open)';
  const keys = Object.keys(s.args);
  if (keys.length) t += '\\nargs:  ' + JSON.stringify(s.args, null, 1);
  return t;
}
document.getElementById('chart').addEventListener('mousemove', (e) => {
  const i = e.target.getAttribute && e.target.getAttribute('data-i');
  if (i === null || i === undefined) { tip.style.display = 'none'; return; }
  tip.textContent = describe(stages[+i]);
  tip.style.display = 'block';
  tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 500) + 'px';
  tip.style.top = (e.clientY + 12) + 'px';
});
document.getElementById('chart').addEventListener('mouseleave', () => {
  tip.style.display = 'none';
});
"""


def _answer_section(doc: dict) -> str:
    """The run explained, answer first (`pypto-profile analyze --format json`'s document):
    per rank its answer lines (verdict, why, gain bound, path, evidence, placement)."""
    esc = html.escape
    out = []
    for r in doc.get("ranks", []):
        head, *rest = r["answer"]
        out.append(f"<div class=\"answer\"><p><b>{esc(head)}</b></p><ul>"
                   + "".join(f"<li>{esc(x)}</li>" for x in rest) + "</ul></div>")
    return "".join(out)


def _analysis_section(doc: dict) -> str:
    """The figures behind the answer, per rank: the path's composition by what filled its
    stalls, starvation, the end-to-end categories (with their ranges where the placement
    is uncertain)."""
    esc = html.escape

    def pct(x) -> str:
        return "-" if x is None else f"{x * 100:.1f}%"

    out = []
    for r in doc.get("ranks", []):
        p, st, ov = r["observed_path"], r["static_path"], r["overhead"]
        rows = [("makespan", _t(r["makespan_ns"]), ""),
                ("static path", _t(st["length_ns"]) if st else "-",
                 f"{pct(st['share'])} of the makespan, {st['tasks']} tasks" if st
                 else "no deps.json"),
                ("observed path", f"{p['tasks']} tasks", f"tiling {p['tiling']}"),
                ("compute on it", _t(p["compute_ns"]), pct(p["compute_share"]))]
        rows += [(f"stall: {k}", _t(v["ns"]), pct(v["share"]))
                 for k, v in p["stall_by_part"].items() if v["cycles"]]
        rows += [(f"{e['engine']} starved", pct(e["starved_share"]),
                  f"{e['cores']} cores; {_t(e['starved_on_path_ns'])} in the path's stalls")
                 for e in ov["engines"]]
        e2e = r["end_to_end"]
        if e2e is not None:
            for c, v in e2e["categories"].items():
                lo, hi = e2e["category_ranges"][c]
                if hi:
                    # a range whose ends read the same is no range at this precision
                    same = _t(lo) == _t(hi)
                    rows.append((f"end to end: {c}", _t(v) if same else
                                 f"{_t(lo)} to {_t(hi)}",
                                 pct(v / e2e["wall_ns"] if e2e["wall_ns"] else 0)
                                 + ("" if same else " (placement uncertain)")))
        out.append(f"<h3>{esc(r['label'])} ({esc(r['clock']['label'])})</h3>"
                   "<table class=\"analysis\"><tbody>" + "".join(
                       f"<tr><td>{esc(a)}</td><td>{esc(b)}</td><td>{esc(c)}</td></tr>"
                       for a, b, c in rows) + "</tbody></table>")
    return "".join(out)


def profile_html(profile: Profile | None, kernels: list[KernelRow] | None = None,
                 analysis: dict | None = None, run=None) -> str:
    """The page's HTML text. `profile`: the compile profile (None: a capture directory
    alone); `analysis`: the run explained, as `pypto-profile analyze`'s JSON document (its
    answer opens the page, its figures follow the tables); `run`: the same `RunAnalysis`,
    for the picture of the whole run."""
    esc = html.escape
    if profile is not None:
        svg, info = _chart(profile)
        title = f"PyPTO run: {profile.source or 'live profile'}"
    else:
        svg, info = "", []
        title = "PyPTO run: " + ", ".join(r["source"] for r in (analysis or {}).get("ranks", []))
    # no `<`, `>` or `&` inside the script element, whatever the stage names hold
    data = (json.dumps(info, ensure_ascii=True, allow_nan=False).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{PAGE_CSP}\">",
        f"<title>{esc(title)}</title><style>{PAGE_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if analysis and analysis.get("ranks"):
        parts.append(f"<h2 id=\"answer\">The answer</h2>{_answer_section(analysis)}")
    ranks = run.ranks if run is not None else []
    picture = run_svg(profile.stages if profile is not None and profile.timed else [], ranks)
    if picture:
        parts += ["<h2 id=\"run\">The run on one clock</h2>",
                  ("<p>Compile stages, each engine's share of busy cores (darker: busier) and "
                  "the critical path, on the host clock (device time placed as the merge "
                  "places it).</p>"), f"<div class=\"wrap\">{picture}</div>"]
        device = device_svg(ranks)
        if device and profile is not None and profile.timed:    # else the picture above is it
            parts += ["<h2 id=\"device\">The device part, zoomed</h2>",
                      "<p>The same lanes from the first device task to the last.</p>",
                      f"<div class=\"wrap\">{device}</div>"]
    if profile is not None:
        parts += [
            "<h2 id=\"compile\">Compile stages</h2>",
            (f"<p>Total {_t(profile.total_ns)}, {len(info)} stages"
             + ("" if profile.timed else " (durations only: stages laid end to end)")
             + ". Hover a box for its details.</p>"),
            f"<div id=\"chart-wrap\" class=\"wrap\">{svg}</div><div id=\"tip\"></div>",
            "<h2>Stages (families folded)</h2>", _summary_table(profile),
        ]
    if kernels:
        parts += ["<h2>Kernels: compile and device cost</h2>", _kernel_table(kernels)]
    if analysis and analysis.get("ranks"):
        parts += ["<h2 id=\"analysis\">Run analysis: the figures behind the answer</h2>",
                  _analysis_section(analysis)]
    if profile is not None:
        parts += [f"<script type=\"application/json\" id=\"stage-data\">{data}</script>",
                  f"<script>{_SCRIPT}</script>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
