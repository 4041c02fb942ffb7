"""The run explained as text, markdown or JSON (`pypto-profile analyze --format`).

Every format opens with the answer, at most 8 lines per rank: the verdict, the figures that
decided it, the bound on what fixing its cause can gain, the path's composition and the
placement's quality; the details follow, every long list cut to `top` rows.

JSON follows docs/analysis.schema.json (`"schema": "pypto.analysis/3"`): times in ns (device
time at the capture's clock frequency; a path's ns are integers whose parts sum exactly),
shares as fractions of the rank's makespan."""

from __future__ import annotations

import json

import numpy as np

from pypto.compile_profiling.analysis.critical_path import HELD_BY, PARTS, SCHEDULER_PARTS
from pypto.compile_profiling.analysis.end_to_end import CATEGORIES
from pypto.compile_profiling.analysis.explain import RankAnalysis, RunAnalysis
from pypto.compile_profiling.analysis.overhead import Distribution
from pypto.compile_profiling.analysis.verdict import (
    RANGE_SHOWN_FROM_NS,
    Verdict,
    engine_label,
    ms_range,
)
from pypto.compile_profiling.foundation.terminal import printable, wrap
from pypto.compile_profiling.foundation.units import duration
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns

__all__ = ["ANSWER_LINES", "SCHEMA", "analysis_dict", "answer_lines", "format_analysis"]

SCHEMA = "pypto.analysis/3"
FORMATS = ("text", "markdown", "json")
ANSWER_LINES = 8                 # the answer's lines per rank, at most
GUIDE = ("(what each verdict and figure means, and how a gain is replayed: docs/analysis.md, "
         "docs/whatif.md)")


def _dist(d: Distribution | None, digits: int = 1) -> dict | None:
    if d is None:
        return None
    return {"count": d.count, **{k: round(v, digits) for k, v in d.percentiles.items()},
            "max": round(d.max, digits), "mean": round(d.mean, digits),
            "total": round(d.total, digits)}


def _int_ns(r: RankAnalysis, widths: np.ndarray) -> np.ndarray:
    """Cycle widths laid end to end (a row's pieces), as integer ns that sum exactly: each
    boundary rounded once, the pieces its differences."""
    scale = 1e9 / r.freq_hz
    bounds = np.concatenate((np.zeros((len(widths), 1), np.int64),
                             np.cumsum(widths, axis=1)), axis=1)
    ns = np.rint(bounds * scale).astype(np.int64)
    return np.diff(ns, axis=1)


def _path_rows(r: RankAnalysis) -> list[dict]:
    p = r.observed
    kernels, displays, _ = r.labels(p.tasks)
    widths = np.concatenate((p.parts, p.compute[:, None]), axis=1)
    ns = _int_ns(r, widths)
    dur = np.rint(r.tasks.duration[p.tasks] * (1e9 / r.freq_hz)).astype(np.int64)
    masks = r.tasks.types[p.tasks].tolist()
    rows = []
    for i, (t, k, d) in enumerate(zip(r.tasks.ids[p.tasks].tolist(), kernels, displays)):
        parts = {str(name): int(v) for name, v in zip(PARTS, ns[i, :-1].tolist())}
        rows.append({"index": i, "task": d, "task_id": t, "kernel": k,
                     "engine": engine_label(masks[i], r.tasks.core_types),
                     "duration_ns": int(dur[i]), "compute_ns": int(ns[i, -1]),
                     "stall_ns": sum(parts.values()), "held_by": str(HELD_BY[p.held_by[i]]),
                     "stall_parts_ns": parts})
    return rows


def _verdict_dict(v: Verdict | None, freq_hz: int) -> dict | None:
    if v is None:
        return None
    ns = 1e9 / freq_hz
    return {"kind": str(v.kind), "head": v.head(), "rule": v.rule, "cause": v.cause,
            "family": v.family, "gain_ns": None if v.gain_ns is None else round(v.gain_ns),
            "gain_share": v.gain_share, "gain": v.gain_text, "gain_is_bound": v.gain_is_bound,
            "ties": list(v.ties), "engine": v.engine, "replay_error": v.replay_error,
            "replays": v.replays,
            "candidates": [{"verdict": lv.words, "cause": lv.cause, "family": lv.family,
                            "edit": lv.edit.words(), "makespan_ns": round(lv.makespan * ns),
                            "gain_ns": round(lv.gain * ns)} for lv in v.levers],
            "evidence": list(v.evidence), "device": _verdict_dict(v.device, freq_hz)}


def _observed_path_dict(r: RankAnalysis) -> dict:
    """`rank_dict`'s observed critical path: compute, stalls by part, families, path."""
    ns = r.ns
    p = r.observed
    by_part = p.stall_by_part()
    check = p.compute_total + p.stall_total
    sched = sum(by_part[k] for k in SCHEDULER_PARTS)
    return {
        "tasks": len(p.tasks), "compute_cycles": p.compute_total,
        "compute_ns": round(ns(p.compute_total), 1), "compute_share": r.share(p.compute_total),
        "stall_cycles": p.stall_total, "stall_ns": round(ns(p.stall_total), 1),
        "stall_share": r.share(p.stall_total),
        "scheduler_latency_ns": round(ns(sched), 1), "scheduler_latency_share": r.share(sched),
        "stall_by_part": {str(k): {"cycles": v, "ns": round(ns(v), 1), "share": r.share(v)}
                          for k, v in by_part.items()},
        "held_by": {str(k): v for k, v in p.held_by_counts().items()},
        "tiling": "exact" if check == r.makespan_cycles and p.exact else f"diff {check - r.makespan_cycles}",
        "families": [{"family": f.family, "compute_ns": round(ns(f.compute_cycles), 1),
                      "compute_share": r.share(f.compute_cycles),
                      "stall_ns": round(ns(f.stall_cycles), 1), "tasks": f.tasks}
                     for f in r.families()],
        "path": _path_rows(r)}


def _overhead_dict(r: RankAnalysis) -> dict:
    """`rank_dict`'s overhead figures: starvation, head and tail, switches, scheduler."""
    ns = r.ns
    ov = r.overhead
    sched_threads = ov.scheduler
    avg_loop = ov.avg_loop_ns
    on_path = {e: c for e, _, c in r.starvation}
    return {
        "engines": [{"engine": x.engine, "cores": x.cores, "starved_share": x.starved_share,
                     "starved_on_path_ns": round(ns(on_path.get(x.engine, 0)), 1)}
                    for x in ov.engines],
        "all_engines_starved_share": ov.all_starved_share,
        "some_engine_starved_share": ov.some_starved_share,
        "head_overhead_ns": _dist(ov.head), "tail_overhead_ns": _dist(ov.tail),
        "task_switches": [{"engine": w.engine, "cores": w.cores,
                           "per_core_min_ns": round(w.per_core_min, 1),
                           "per_core_mean_ns": round(w.per_core_mean, 1),
                           "per_core_max_ns": round(w.per_core_max, 1), "events": w.events,
                           "mean_event_ns": round(w.mean_event, 1)} for w in ov.switches],
        "switch_bound_ns": None if ov.switch_bound_ns is None
        else [round(x, 1) for x in ov.switch_bound_ns],
        "fan_out": _dist(ov.fan_out, 2), "fan_in": _dist(ov.fan_in, 2),
        "scheduler": [{"thread": t.thread, "loops": t.loops, "finishes": t.finishes,
                       "tasks": t.tasks,
                       "phase_ns": {k: round(v, 1) for k, v in t.phase_ns.items()},
                       "nested": dict(t.nested), "busy_ns": round(t.busy_ns, 1),
                       "idle_ns": round(t.idle_ns, 1), "total_ns": round(t.total_ns, 1),
                       "pop_hit": t.pop_hit, "pop_miss": t.pop_miss} for t in sched_threads],
        "avg_loop_ns": None if avg_loop is None else round(avg_loop, 1),
        "tail_to_loop": None if avg_loop is None or ov.tail is None or not avg_loop
        else round(ov.tail.mean / avg_loop, 2),
        "notes": list(ov.notes)}


def _end_to_end_dict(r: RankAnalysis) -> dict | None:
    """`rank_dict`'s end-to-end tiling of the run, when there is one."""
    e2e = r.end_to_end
    return None if e2e is None else {
        "start_ns": e2e.start_ns, "end_ns": e2e.end_ns, "wall_ns": e2e.wall_ns,
        "wall_range_ns": list(e2e.ranges.get("wall", (e2e.wall_ns, e2e.wall_ns))),
        "device_start_ns": e2e.device_start_ns,
        "tiling": "exact" if e2e.exact else "inexact", "first_task": e2e.first_task,
        "kernel": e2e.kernel, "clock": e2e.clock, "estimated": e2e.estimated,
        "uncertainty_ns": None if e2e.uncertainty_ns is None else round(e2e.uncertainty_ns),
        "categories": dict(e2e.totals),
        "category_ranges": {c: list(e2e.ranges.get(c, (v, v))) for c, v in e2e.totals.items()},
        "segments": [{"name": s.name, "category": s.category, "start_ns": s.start_ns,
                      "dur_ns": s.dur_ns} for s in e2e.segments],
        "notes": list(e2e.notes)}


def rank_dict(r: RankAnalysis) -> dict:
    ms = r.makespan_cycles
    ns = r.ns
    out = {"label": r.label, "source": r.source, "level": r.level, "clock_freq_hz": r.freq_hz,
           "verdict": _verdict_dict(r.verdict, r.freq_hz),
           "clock": {"label": r.clock, "placement": r.placement, "estimated": r.estimated,
                     "uncertainty_ns": None if r.uncertainty_ns is None
                     else round(r.uncertainty_ns),
                     "offset_ns": None if r.offset_ns is None else round(r.offset_ns),
                     "offset_lo_ns": None if r.offset_lo_ns is None
                     else int(np.floor(r.offset_lo_ns)),
                     "offset_hi_ns": None if r.offset_hi_ns is None
                     else int(np.ceil(r.offset_hi_ns))},
           "tasks": len(r.tasks), "blocks": int(r.tasks.blocks.sum()),
           "makespan_cycles": ms, "makespan_ns": round(ns(ms), 1),
           "engines": [{"engine": u.engine, "cores": u.cores, "busy_share": u.busy_share}
                       for u in r.engines]}
    e = r.edges
    out["dependencies"] = None if not r.has_deps else {
        "unique_edges": e.edges_in_file, "kept": e.kept, "out_of_order": e.edges_out_of_order,
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
    out["observed_path"] = _observed_path_dict(r)
    out["overhead"] = _overhead_dict(r)
    out["end_to_end"] = _end_to_end_dict(r)
    out["answer"] = answer_lines(out)
    out["task_slots"] = [_slot_dict(r, sl) for sl in r.slots]
    out["host_side_incomplete"] = ({str(pid): n for pid, n in r.host_log_dropped.items()}
                                   if r.host_log_dropped else None)
    out["notes"] = list(r.notes)
    return out


def _slot_dict(r: RankAnalysis, sl) -> dict:
    """One task-timing slot and the tasks it covers (labels as the timeline names them)."""
    out = {"slot": sl.slot, "dispatch_to_finish_ns": sl.dur_ns,
           "tolerance_ns": round(sl.tolerance_ns, 1), "tasks": None, "first": None,
           "last": None}
    if sl.tasks is not None:
        _, _, labels = r.labels(sl.tasks)
        out["tasks"] = labels
        if sl.first is not None:
            out["first"] = r.labels(np.array([sl.first]))[2][0]
            out["last"] = r.labels(np.array([sl.last]))[2][0]
    return out


def analysis_dict(result: RunAnalysis) -> dict:
    return {"schema": SCHEMA, "ranks": [rank_dict(r) for r in result.ranks],
            "warnings": list(result.warnings)}


# --------------------------------------------------------------------------- the answer

def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f} %"


def answer_lines(d: dict) -> list[str]:
    """The answer for one rank (a `rank_dict`), at most ANSWER_LINES lines: the verdict,
    why, its gain, the device's own verdict and gain under a host-bound one, the critical
    path's composition, evidence, and the placement."""
    v = d["verdict"]
    lines = [f"{d['label']}: {v['head']}", f"why: {v['rule']}"]
    if v["gain"]:
        lines.append(f"{'gain bound' if v['gain_is_bound'] else 'gain'}: {v['gain']}")
    if v["replays"]:
        lines.append(f"replays: {v['replays']}")
    dev = v["device"]
    if dev is not None:
        lines.append(f"device: {dev['head']}: {dev['rule']}"
                     + (f"; gain {dev['gain']}" if dev["gain"] else ""))
        if dev["replays"]:
            lines.append(f"device replays: {dev['replays']}")
    p = d["observed_path"]
    where = "device critical path" if dev is not None else "critical path"
    if d["level"] < 2:
        lines.append(f"{where}: makespan {duration(d['makespan_ns'])}, "
                     f"{_plural(p['tasks'], 'task')}; what held them: unknown (no AICPU "
                     "records at level 1)")
    else:
        comp = ", ".join(f"{k} {_pct(x['share'])}" for k, x in p["stall_by_part"].items()
                         if x["cycles"])
        lines.append(f"{where}: makespan {duration(d['makespan_ns'])} = compute "
                     f"{_pct(p['compute_share'])}" + (f" + stalls ({comp})" if comp else "")
                     + f"; {_plural(p['tasks'], 'task')}")
    c = d["clock"]
    how = {"calibrated": "calibrated by clock anchors", "joined": "joined by device_wall's "
           "cycles inside the run log's host span", "contained": "contained by the run "
           "log's host spans", "estimated": "estimated"}.get(c["placement"], c["placement"])
    if c["offset_lo_ns"] is None:
        place = f"{how}: no bound on where the device time lies (unknown)"
    else:
        place = (f"{how}: the device time may lie "
                 f"{fmt_ns(max(c['offset_ns'] - c['offset_lo_ns'], 0))} earlier to "
                 f"{fmt_ns(max(c['offset_hi_ns'] - c['offset_ns'], 0))} later than drawn")
    evidence = list(v["evidence"]) + ([] if dev is None else
                                      [f"device: {e}" for e in dev["evidence"]])
    room = ANSWER_LINES - len(lines) - 1
    shown = evidence[:room] if len(evidence) <= room else evidence[:max(room - 1, 0)]
    lines += [f"evidence: {e}" for e in shown]
    if len(shown) < len(evidence):
        lines.append(f"evidence: ... {len(evidence) - len(shown)} more below")
    lines.append(f"placement: {place}")
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


# --------------------------------------------------------------------------- text / markdown

class _Out:
    """Lines of text or markdown: headings, bullet lines and tables in either style."""

    def __init__(self, md: bool):
        self.md, self.lines = md, []

    def head(self, text: str, level: int = 2) -> None:
        if self.md:
            self.lines += ["", "#" * level + " " + text, ""]
        else:
            self.lines += ["", *wrap(text)] if self.lines else wrap(text)

    def line(self, text: str, indent: int = 1) -> None:
        if self.md:
            self.lines.append("  " * (indent - 1) + "- " + text)
        else:                          # within 100 columns, wrapped under a hanging indent
            self.lines += wrap("  " * indent + text)

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

    def cut(self, total: int, shown: int, what: str) -> None:
        if shown < total:
            self.line(f"... {total - shown} more {what}; --top 0 for all")


def _top(rows: list, top: int) -> list:
    return rows if top <= 0 else rows[:top]


def _answer_text(o: _Out, d: dict) -> None:
    lines = d["answer"]
    if o.md:
        o.lines += ["", f"**{lines[0]}**", ""] + [f"- {x}" for x in lines[1:]]
    else:
        o.lines += (["", *wrap(lines[0])] if o.lines else wrap(lines[0]))
        o.lines += [w for x in lines[1:] for w in wrap("  " + x)]


def _rank_text(o: _Out, d: dict, top: int) -> None:
    ms = d["makespan_ns"]
    o.head(f"Critical path: {d['label']} ({d['clock']['label']}; {d['source']}, level "
           f"{d['level']})")
    deps = d["dependencies"]
    o.line(f"tasks: {d['tasks']} ({d['blocks']} blocks: an SPMD or MIX task runs as several) | "
           "dependency edges kept: " + (f"{deps['kept']} of {deps['unique_edges']} (unique "
                                        "producer -> consumer pairs in deps.json)" if deps
                                        else "none (no deps.json)"))
    o.line(f"makespan: {duration(ms)} (first block start to last block end)")
    if d["engines"]:
        o.line("core time: " + "; ".join(
            f"{u['engine']} ({_plural(u['cores'], 'core')}) busy {_pct(u['busy_share'])}"
            for u in d["engines"]))
    st = d["static_path"]
    if st is not None:
        o.line(f"static path: {duration(st['length_ns'])} ({_pct(st['share'])} of the makespan) "
               f"over {st['tasks']} tasks")
    else:
        o.line("static path: none (no deps.json)")
    p = d["observed_path"]
    held = ", ".join(f"{k} {v}" for k, v in p["held_by"].items() if v)
    o.line(f"observed path: {p['tasks']} tasks (held by: {held})")
    o.line(f"compute: {duration(p['compute_ns'])} ({_pct(p['compute_share'])})", 2)
    if d["level"] < 2:                 # nothing tells a stall from a core busy elsewhere
        o.line(f"between its tasks: {duration(p['stall_ns'])} ({_pct(p['stall_share'])}): "
               "what held them is unknown at level 1 (no AICPU dispatch/finish records); "
               "the core time above is what is known", 2)
    else:
        o.line(f"stall: {duration(p['stall_ns'])} ({_pct(p['stall_share'])}), by what filled "
               "it:", 2)
        for kind, v in p["stall_by_part"].items():
            if v["cycles"]:
                o.line(f"{kind}: {duration(v['ns'])} ({_pct(v['share'])})", 3)
    o.line(f"tiling check: compute + stall = {p['compute_cycles'] + p['stall_cycles']} cycles "
           f"vs makespan {d['makespan_cycles']} cycles ({p['tiling']})", 2)
    fams = p["families"]
    o.head(f"Time on the observed path by kernel family ({d['label']})", 3)
    o.table(["kernel family", "compute ms", "% makespan", "stall ms", "on path"],
            [[f["family"], f"{f['compute_ns'] / 1e6:.3f}", _pct(f["compute_share"]),
              f"{f['stall_ns'] / 1e6:.3f}", str(f["tasks"])] for f in _top(fams, top)],
            {1, 2, 3, 4})
    o.cut(len(fams), len(_top(fams, top)), "families")
    path = p["path"]
    shown = path if top <= 0 else sorted(
        sorted(path, key=lambda t: -(t["compute_ns"] + t["stall_ns"]))[:top],
        key=lambda t: t["index"])
    o.head(f"Observed path ({d['label']}): "
           + (f"all {len(path)} tasks" if len(shown) == len(path) else
              f"the {len(shown)} of {len(path)} tasks that add the most, in path order"), 3)

    # the stall parts a column each: those some row has (the scheduler's three when none)
    pieces = [k for k in ("completion", "dispatch", "launch", "front", "unknown")
              if any(t["stall_parts_ns"][k] for t in shown)] or ["completion", "dispatch",
                                                                 "launch"]
    o.table(["#", "kernel", "task", "task us", "compute us", "stall us", "held by",
             *pieces],
            [[str(t["index"]), t["kernel"], t["task"], f"{t['duration_ns'] / 1e3:.1f}",
              f"{t['compute_ns'] / 1e3:.1f}", f"{t['stall_ns'] / 1e3:.1f}", t["held_by"],
              *(f"{t['stall_parts_ns'][k] / 1e3:.1f}" for k in pieces)] for t in shown],
            {0, 3, 4, 5, *range(7, 7 + len(pieces))})
    o.line(f"(us, of a makespan of {ms / 1e3:.1f} us)")
    o.cut(len(path), len(shown), "path tasks")
    _slots_text(o, d, top)
    _overhead_text(o, d, top)
    _e2e_text(o, d, top)
    for n in d["notes"]:
        o.line(f"note: {n}", 1)


def _slots_text(o: _Out, d: dict, top: int) -> None:
    """Each task-timing slot beside the tasks it covers."""
    slots = d["task_slots"]
    if not slots:
        return
    o.head(f"Task-timing slots ({d['label']}): AICPU dispatch to finish of the tasks tagged "
           "timing_slot=N, and the tasks dispatched and finished inside it", 3)
    rows = []
    for sl in slots:
        tasks = sl["tasks"]
        if tasks is None:
            covered = "unknown (no dispatch/finish records: capture at level >= 2)"
        else:
            shown = _top(tasks, top)
            covered = ", ".join(shown) + (f", ... {len(tasks) - len(shown)} more"
                                          if len(shown) < len(tasks) else "")
            if sl["first"] is not None:
                covered += (f" (dispatched at its start: {sl['first']}; finished at its end: "
                            f"{sl['last']})")
        exact = "exact" if not sl["tolerance_ns"] else f"±{fmt_ns(sl['tolerance_ns'])}"
        rows.append([str(sl["slot"]), f"{sl['dispatch_to_finish_ns'] / 1e3:.1f}", exact,
                     covered or "none"])
    o.table(["slot", "us", "window", "tasks covered"], rows, {0, 1})


def _overhead_text(o: _Out, d: dict, top: int) -> None:
    ov = d["overhead"]
    o.head(f"Overhead: {d['label']}")
    if ov["engines"]:
        o.line("starved (a free core of the engine while a ready, undispatched task of its "
               "type waits), share of the makespan; Simpler calls 25 % of 'some engine' "
               "scheduler-bound, 8 % partially:")
        for e in ov["engines"]:
            o.line(f"{e['engine']} ({_plural(e['cores'], 'core')}): {_pct(e['starved_share'])}; in the "
                   f"critical path's stalls {duration(e['starved_on_path_ns'])}", 2)
        o.line(f"all engines starved: {_pct(ov['all_engines_starved_share'])}; some engine "
               f"starved: {_pct(ov['some_engine_starved_share'])}", 2)
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
    if ov["task_switches"]:
        o.line("task switches (a core picking up a block dispatched before its previous "
               "block ended; per core, never summed over cores), us:")
        o.table(["engine", "cores", "min/core", "mean/core", "max/core", "events",
                 "us/event"],
                [[w["engine"], str(w["cores"]), f"{w['per_core_min_ns'] / 1e3:.1f}",
                  f"{w['per_core_mean_ns'] / 1e3:.1f}", f"{w['per_core_max_ns'] / 1e3:.1f}",
                  str(w["events"]), f"{w['mean_event_ns'] / 1e3:.2f}"]
                 for w in ov["task_switches"]], set(range(1, 7)))
        lo, hi = ov["switch_bound_ns"]
        o.line(f"makespan switch bound (Simpler's): {lo / 1e3:.2f}-{hi / 1e3:.2f} us", 2)
    for key, what in (("fan_out", "fan-out (consumers per task)"),
                      ("fan_in", "fan-in (producers per task)")):
        dist = ov[key]
        if dist is not None:
            o.line(f"{what}, {dist['count']} tasks: total {dist['total']:.0f}, mean "
                   f"{dist['mean']:.2f}, P50 {dist['p50']:.0f}, P90 {dist['p90']:.0f}, max "
                   f"{dist['max']:.0f}")
    threads = ov["scheduler"]
    if threads:
        kinds = list(dict.fromkeys(k for t in threads for k in t["phase_ns"]))
        nested = {k: v for t in threads for k, v in t["nested"].items()}
        o.line("AICPU scheduler loop (us per phase kind, each instant counted once; idle: "
               "gaps between phases; finishes: blocks seen finished; tasks: tasks whose "
               "last block it saw finish):")
        shown = _top(threads, top)
        rows = []
        for t in shown:
            rows.append([f"T{t['thread']}", str(t["loops"]), str(t["finishes"]),
                         "-" if t["tasks"] is None else str(t["tasks"]),
                         f"{t['total_ns'] / 1e3:.1f}"]
                        + [f"{t['phase_ns'].get(k, 0) / 1e3:.1f}" for k in kinds]
                        + [f"{t['idle_ns'] / 1e3:.1f}"])
        o.table(["thread", "loops", "finishes", "tasks", "total us",
                 *(f"{k}*" if k in nested else k for k in kinds), "idle"],
                rows, set(range(1, 6 + len(kinds))))
        for k, outer in nested.items():
            o.line(f"{k}*: the time of {k} phases inside {outer} phases, taken out of {outer}'s")
        o.cut(len(threads), len(shown), "threads")
        if ov["avg_loop_ns"] is not None:
            o.line(f"average loop {ov['avg_loop_ns'] / 1e3:.3f} us; average tail overhead = "
                   f"{ov['tail_to_loop']} loops" if ov["tail_to_loop"] is not None else
                   f"average loop {ov['avg_loop_ns'] / 1e3:.3f} us")
    for n in ov["notes"]:
        o.line(f"note: {n}")


def _e2e_text(o: _Out, d: dict, top: int) -> None:
    e = d["end_to_end"]
    if e is None:
        return
    wall = e["wall_ns"]
    first = e["segments"][0]["category"] if e["segments"] else ""
    origin = "the first compile stage" if first == "compile" else "the first host span"
    lo, hi = e["wall_range_ns"]
    o.head(f"End to end: {d['label']}, {ms_range(lo, hi)} from {origin} to the last device "
           f"task (tiling: {e['tiling']})")
    o.line(f"first path task {e['first_task']}" + (f", kernel {e['kernel']}" if e["kernel"]
                                                   else "") + f"; device side {e['clock']}")
    rng = e["category_ranges"]
    moved = any(b - a >= RANGE_SHOWN_FROM_NS for a, b in rng.values())
    o.table(["category", "ms", "share"] + (["over the placement interval"] if moved else []),
            [[c, f"{e['categories'][c] / 1e6:.3f}",
              _pct(e["categories"][c] / wall if wall else 0)]
             + ([ms_range(*rng[c]) + (" (placement uncertain)"
                                      if rng[c][1] - rng[c][0] >= RANGE_SHOWN_FROM_NS
                                      else "")] if moved else [])
             for c in CATEGORIES], {1, 2})
    segs = e["segments"]
    shown = segs
    if 0 < top < len(segs):
        longest = sorted(range(len(segs)), key=lambda i: -segs[i]["dur_ns"])[:top]
        shown = [segs[i] for i in sorted(longest)]
    o.line("segments (from the start of the wall time, at the drawn placement)"
           + ("" if len(shown) == len(segs) else f", the {len(shown)} longest in time order")
           + ":")
    o.table(["at ms", "ms", "category", "segment"],
            [[f"{(s['start_ns'] - e['start_ns']) / 1e6:.3f}", f"{s['dur_ns'] / 1e6:.3f}",
              s["category"], s["name"]] for s in shown], {0, 1})
    o.cut(len(segs), len(shown), "segments")
    for n in e["notes"]:
        o.line(f"note: {n}")


def format_analysis(result: RunAnalysis, fmt: str = "text", *, top: int = 10) -> str:
    """`text`, `markdown` or `json` (`top`: rows of each long list; 0: all)."""
    d = analysis_dict(result)
    if fmt == "json":
        return json.dumps(d, indent=1, ensure_ascii=False, default=_plain) + "\n"
    o = _Out(fmt == "markdown")
    if o.md:
        o.lines.append("# Run analysis: the answer first")
    for rank in d["ranks"]:
        _answer_text(o, rank)
    for rank in d["ranks"]:
        _rank_text(o, rank, top)
    if d["warnings"]:
        o.head("Warnings")
        warnings = _top(d["warnings"], top)
        for w in warnings:
            o.line(w)
        o.cut(len(d["warnings"]), len(warnings), "warnings")
    o.lines += ["", GUIDE if not o.md else f"*{GUIDE}*"]
    # a kernel or path name never moves the cursor or forges a line (markdown: the table
    # cells and code spans are escaped as they are made)
    return "\n".join(map(printable, o.lines)).lstrip("\n") + "\n"


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"not JSON: {type(v).__name__}")
