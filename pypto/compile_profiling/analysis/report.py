"""The run explained as text, markdown or JSON (`pypto-profile analyze --format`).

JSON follows docs/analysis.schema.json (`"schema": "pypto.analysis/1"`): times in ns (device
time at the capture's clock frequency), shares as fractions of the rank's makespan."""

from __future__ import annotations

import json

import numpy as np

from pypto.compile_profiling.analysis.critical_path import KINDS
from pypto.compile_profiling.analysis.end_to_end import CATEGORIES
from pypto.compile_profiling.analysis.explain import RankAnalysis, RunAnalysis
from pypto.compile_profiling.analysis.overhead import Distribution

__all__ = ["SCHEMA", "analysis_dict", "format_analysis"]

SCHEMA = "pypto.analysis/1"
FORMATS = ("text", "markdown", "json")


def _dist(d: Distribution | None) -> dict | None:
    if d is None:
        return None
    return {"count": d.count, **{k: round(v, 1) for k, v in d.percentiles.items()},
            "max": round(d.max, 1), "mean": round(d.mean, 1), "total": round(d.total, 1)}


def _path_rows(r: RankAnalysis) -> list[dict]:
    p = r.observed
    kernels, displays, _ = r.labels(p.tasks)
    dur = r.tasks.duration[p.tasks]
    scale = 1e9 / r.freq_hz
    rows = []
    for i, (t, k, d, du, c, s, kd) in enumerate(zip(
            r.tasks.ids[p.tasks].tolist(), kernels, displays, (dur * scale).tolist(),
            (p.compute * scale).tolist(), (p.stall * scale).tolist(), p.kind.tolist())):
        rows.append({"index": i, "task": d, "task_id": t, "kernel": k,
                     "duration_ns": round(du, 1), "compute_ns": round(c, 1),
                     "stall_ns": round(s, 1), "stall_kind": KINDS[kd]})
    return rows


def rank_dict(r: RankAnalysis) -> dict:
    ms = r.makespan_cycles
    ns = r.ns
    out = {"label": r.label, "source": r.source, "level": r.level, "clock_freq_hz": r.freq_hz,
           "clock": {"label": r.clock, "estimated": r.estimated,
                     "uncertainty_ns": None if r.uncertainty_ns is None
                     else round(r.uncertainty_ns)},
           "tasks": len(r.tasks), "blocks": int(r.tasks.blocks.sum()),
           "makespan_cycles": ms, "makespan_ns": round(ns(ms), 1)}
    e = r.edges
    out["dependencies"] = None if not r.has_deps else {
        "edges_in_file": e.edges_in_file, "kept": e.kept, "out_of_order": e.edges_out_of_order,
        "untimed": e.edges_untimed, "self_loops": e.self_loops, "deps_tasks": e.deps_tasks,
        "missing_tasks": e.missing_tasks, "no_block_tasks": e.no_block_tasks,
        "not_in_deps": e.not_in_deps, "cycle_tasks": e.cycle_tasks}
    st = r.static
    if st is not None:
        _, _, labels = r.labels(st.tasks)
        out["static_path"] = {"length_cycles": st.length_cycles,
                              "length_ns": round(ns(st.length_cycles), 1),
                              "share": r.share(st.length_cycles), "tasks": len(st.tasks),
                              "path": labels}
    else:
        out["static_path"] = None
    p = r.observed
    by_kind = p.stall_by_kind()
    check = p.compute_total + p.stall_total
    out["observed_path"] = {
        "tasks": len(p.tasks), "compute_cycles": p.compute_total,
        "compute_ns": round(ns(p.compute_total), 1), "compute_share": r.share(p.compute_total),
        "stall_cycles": p.stall_total, "stall_ns": round(ns(p.stall_total), 1),
        "stall_share": r.share(p.stall_total),
        "stall_by_kind": {k: {"cycles": v, "ns": round(ns(v), 1), "share": r.share(v)}
                          for k, v in by_kind.items()},
        "tiling": "exact" if check == ms else f"diff {check - ms}",
        "families": [{"family": f.family, "compute_ns": round(ns(f.compute_cycles), 1),
                      "compute_share": r.share(f.compute_cycles),
                      "stall_ns": round(ns(f.stall_cycles), 1), "tasks": f.tasks}
                     for f in r.families()],
        "path": _path_rows(r)}
    ov = r.overhead
    sched = ov.scheduler
    avg_loop = ov.avg_loop_ns
    out["overhead"] = {
        "engines": [{"engine": x.engine, "cores": x.cores, "starved_share": x.starved_share}
                    for x in ov.engines],
        "all_engines_starved_share": ov.all_starved_share,
        "some_engine_starved_share": ov.some_starved_share,
        "verdict": r.verdict, "rule": r.verdict_rule,
        "head_overhead_ns": _dist(ov.head), "tail_overhead_ns": _dist(ov.tail),
        "scheduler": [{"thread": t.thread, "loops": t.loops, "completed": t.completed,
                       "phase_ns": {k: round(v, 1) for k, v in t.phase_ns.items()},
                       "idle_ns": round(t.idle_ns, 1), "total_ns": round(t.total_ns, 1),
                       "pop_hit": t.pop_hit, "pop_miss": t.pop_miss} for t in sched],
        "avg_loop_ns": None if avg_loop is None else round(avg_loop, 1),
        "tail_to_loop": None if avg_loop is None or ov.tail is None or not avg_loop
        else round(ov.tail.mean / avg_loop, 2),
        "notes": list(ov.notes)}
    e2e = r.end_to_end
    out["end_to_end"] = None if e2e is None else {
        "start_ns": e2e.start_ns, "end_ns": e2e.end_ns, "wall_ns": e2e.wall_ns,
        "device_start_ns": e2e.device_start_ns,
        "tiling": "exact" if e2e.exact else "inexact", "first_task": e2e.first_task,
        "kernel": e2e.kernel, "clock": e2e.clock, "estimated": e2e.estimated,
        "uncertainty_ns": None if e2e.uncertainty_ns is None else round(e2e.uncertainty_ns),
        "categories": dict(e2e.totals),
        "segments": [{"name": s.name, "category": s.category, "start_ns": s.start_ns,
                      "dur_ns": s.dur_ns} for s in e2e.segments],
        "notes": list(e2e.notes)}
    out["notes"] = list(r.notes)
    return out


def analysis_dict(result: RunAnalysis) -> dict:
    return {"schema": SCHEMA, "ranks": [rank_dict(r) for r in result.ranks],
            "warnings": list(result.warnings)}


# --------------------------------------------------------------------------- text / markdown

def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


class _Out:
    """Lines of text or markdown: headings, bullet lines and tables in either style."""

    def __init__(self, md: bool):
        self.md, self.lines = md, []

    def head(self, text: str, level: int = 2) -> None:
        if self.md:
            self.lines += ["", "#" * level + " " + text, ""]
        else:
            self.lines += ["", text] if self.lines else [text]

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append(("  " * (indent - 1) + "- " + text) if self.md
                          else "  " * indent + text)

    def table(self, heads: list[str], rows: list[list[str]], right: set[int]) -> None:
        if self.md:
            self.lines += ["", "| " + " | ".join(heads) + " |"]
            self.lines.append("|" + "|".join("---:" if i in right else "---"
                                             for i in range(len(heads))) + "|")
            for r in rows:
                self.lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
            self.lines.append("")
            return
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        for r in [heads, *rows]:
            self.lines.append("    " + "  ".join(
                c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                for i, c in enumerate(r)).rstrip())


def _rank_text(o: _Out, d: dict, top: int) -> None:
    ms = d["makespan_ns"]
    o.head(f"Critical path: {d['label']} ({d['clock']['label']}; {d['source']}, level "
           f"{d['level']})")
    deps = d["dependencies"]
    o.line(f"tasks: {d['tasks']} ({d['blocks']} blocks) | dependency edges kept: "
           + (f"{deps['kept']} of {deps['edges_in_file']}" if deps else "none (no deps.json)"))
    o.line(f"makespan: {_ms(ms)}")
    st = d["static_path"]
    if st is not None:
        o.line(f"static path: {_ms(st['length_ns'])} ({_pct(st['share'])} of the makespan) "
               f"over {st['tasks']} tasks")
    else:
        o.line("static path: none (no deps.json)")
    p = d["observed_path"]
    o.line(f"observed path: {p['tasks']} tasks")
    o.line(f"compute: {_ms(p['compute_ns'])} ({_pct(p['compute_share'])})", 2)
    o.line(f"stall: {_ms(p['stall_ns'])} ({_pct(p['stall_share'])})", 2)
    for kind, v in sorted(p["stall_by_kind"].items(), key=lambda kv: -kv[1]["cycles"]):
        if v["cycles"]:
            o.line(f"{kind}: {_ms(v['ns'])} ({_pct(v['share'])})", 3)
    o.line(f"tiling check: compute + stall = {p['compute_cycles'] + p['stall_cycles']} cycles "
           f"vs makespan {d['makespan_cycles']} cycles ({p['tiling']})", 2)
    o.head(f"Time on the observed path by kernel family ({d['label']})", 3)
    o.table(["kernel family", "compute ms", "% makespan", "stall ms", "on path"],
            [[f["family"], f"{f['compute_ns'] / 1e6:.3f}", _pct(f["compute_share"]),
              f"{f['stall_ns'] / 1e6:.3f}", str(f["tasks"])] for f in p["families"][:top]],
            {1, 2, 3, 4})
    o.head(f"Observed path, all {p['tasks']} tasks ({d['label']})", 3)

    def share(v):
        return f"{v / 1e3:.1f} ({v / ms * 100 if ms else 0:.2f}%)"

    o.table(["#", "kernel", "task", "task us", "compute us (%mk)", "stall us (%mk)",
             "stall kind"],
            [[str(t["index"]), t["kernel"], t["task"], f"{t['duration_ns'] / 1e3:.1f}",
              share(t["compute_ns"]), share(t["stall_ns"]), t["stall_kind"]]
             for t in p["path"]], {0, 3, 4, 5})
    _overhead_text(o, d)
    _e2e_text(o, d)
    for n in d["notes"]:
        o.line(f"note: {n}", 1)


def _overhead_text(o: _Out, d: dict) -> None:
    ov = d["overhead"]
    o.head(f"Overhead: {d['label']}")
    if ov["engines"]:
        o.line("starved (a free core of the engine while a ready, undispatched task of its "
               "type waits), share of the makespan:")
        for e in ov["engines"]:
            o.line(f"{e['engine']} ({e['cores']} cores): {_pct(e['starved_share'])}", 2)
        o.line(f"all engines starved: {_pct(ov['all_engines_starved_share'])}; some engine "
               f"starved: {_pct(ov['some_engine_starved_share'])}", 2)
    verdict = ov["verdict"] or "none"
    o.line(f"verdict: {verdict} ({ov['rule']})")
    for key, what in (("head_overhead_ns", ("head overhead: min(start - dispatch, start - "
                                           "previous end on the core), >= 0")),
                      ("tail_overhead_ns", "tail overhead: finish - end")):
        dist = ov[key]
        if dist is None:
            continue
        o.line(f"{what}, {dist['count']} blocks (us):")
        o.table(["P10", "P25", "P50", "P75", "P90", "P95", "P99", "max", "mean"],
                [[f"{dist[k] / 1e3:.2f}" for k in ("p10", "p25", "p50", "p75", "p90", "p95",
                                                  "p99", "max", "mean")]], set(range(9)))
    if ov["scheduler"]:
        kinds = list(dict.fromkeys(k for t in ov["scheduler"] for k in t["phase_ns"]))
        o.line("AICPU scheduler loop (us per phase kind; idle: gaps between phases):")
        rows = []
        for t in ov["scheduler"]:
            rows.append([f"T{t['thread']}", str(t["loops"]), str(t["completed"]),
                         f"{t['total_ns'] / 1e3:.1f}"]
                        + [f"{t['phase_ns'].get(k, 0) / 1e3:.1f}" for k in kinds]
                        + [f"{t['idle_ns'] / 1e3:.1f}"])
        o.table(["thread", "loops", "completed", "total us", *kinds, "idle"], rows,
                set(range(1, 5 + len(kinds))))
        if ov["avg_loop_ns"] is not None:
            o.line(f"average loop {ov['avg_loop_ns'] / 1e3:.3f} us; average tail overhead = "
                   f"{ov['tail_to_loop']} loops" if ov["tail_to_loop"] is not None else
                   f"average loop {ov['avg_loop_ns'] / 1e3:.3f} us")
    for n in ov["notes"]:
        o.line(f"note: {n}")


def _e2e_text(o: _Out, d: dict) -> None:
    e = d["end_to_end"]
    if e is None:
        return
    wall = e["wall_ns"]
    first = e["segments"][0]["category"] if e["segments"] else ""
    origin = "the first compile stage" if first == "compile" else "the first host span"
    o.head(f"End to end: {d['label']}, {_ms(wall)} from {origin} to the last device task "
           f"(tiling: {e['tiling']})")
    o.line(f"first path task {e['first_task']}" + (f", kernel {e['kernel']}" if e["kernel"]
                                                   else "") + f"; device side {e['clock']}")
    o.table(["category", "ms", "share"],
            [[c, f"{e['categories'][c] / 1e6:.3f}", _pct(e["categories"][c] / wall if wall
                                                      else 0)] for c in CATEGORIES],
            {1, 2})
    o.line("segments (from the start of the wall time):")
    o.table(["at ms", "ms", "category", "segment"],
            [[f"{(s['start_ns'] - e['start_ns']) / 1e6:.3f}", f"{s['dur_ns'] / 1e6:.3f}",
              s["category"], s["name"]] for s in e["segments"]], {0, 1})
    for n in e["notes"]:
        o.line(f"note: {n}")


def format_analysis(result: RunAnalysis, fmt: str = "text", *, top: int = 25) -> str:
    """`text`, `markdown` or `json` (`top`: rows of the kernel-family table)."""
    d = analysis_dict(result)
    if fmt == "json":
        return json.dumps(d, indent=1, ensure_ascii=False, default=_plain) + "\n"
    o = _Out(fmt == "markdown")
    if o.md:
        o.lines.append("# Run analysis (critical path, overhead, end to end)")
    for rank in d["ranks"]:
        _rank_text(o, rank, top)
    if d["warnings"]:
        o.head("Warnings")
        for w in d["warnings"]:
            o.line(w)
    return "\n".join(o.lines).lstrip("\n") + "\n"


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"not JSON: {type(v).__name__}")
