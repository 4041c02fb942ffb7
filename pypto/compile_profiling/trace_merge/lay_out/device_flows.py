"""The arrows of one capture's device views (kinds in `views.py`), as `FlowBlock` columns.

Which phase an arrow leaves or enters is found by time, on the scheduler thread that owns
the task's core (`core_to_thread`; without it, any thread): the `dispatch` phase that
contains the AICPU's dispatch time, the `complete` phase that contains its finish time (or,
as Simpler's converter does, the next one to start). On every real capture each dispatch
and finish lies inside such a phase; an arrow with no phase to bind to is not drawn, and
counted. Dependency arrows follow Simpler's anchors: every row of a task, except for
multi-block (SPMD) tasks, whose rows are represented by the lowest core of each core type.
"""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.timeline.model import FlowBlock, SliceBlock
from pypto.compile_profiling.trace_merge.lay_out.device_rows import DeviceRows, PhaseRows
from pypto.compile_profiling.trace_merge.views import FlowKind, Selection

# Each kind: (flow name as Perfetto shows it, category to filter on).
KINDS = {"dependency": ("dependency", "dependency"),
         "dispatch": ("dispatch", "dispatch"),
         "complete": ("complete", "complete"),
         "submit-dispatch": ("submit→dispatch", "submit_dispatch"),
         "complete-ready": ("complete→ready", "complete_ready")}


class _Arrows:
    """Arrows collected per (kind, source block, destination block), then one FlowBlock each."""

    def __init__(self) -> None:
        self.groups: dict[tuple, tuple[str, SliceBlock, SliceBlock, list, list]] = {}
        self.counts: dict[str, int] = {}

    def add(self, kind: str, src: SliceBlock | None, src_rows: np.ndarray,
            dst: SliceBlock | None, dst_rows: np.ndarray) -> None:
        if src is None or dst is None or not len(src_rows):
            return
        g = self.groups.setdefault((kind, src, dst), (kind, src, dst, [], []))
        g[3].append(np.asarray(src_rows, dtype=np.int64))
        g[4].append(np.asarray(dst_rows, dtype=np.int64))
        self.counts[kind] = self.counts.get(kind, 0) + len(src_rows)

    def blocks(self) -> list[FlowBlock]:
        out = []
        for kind, src, dst, s, d in self.groups.values():
            name, cat = KINDS[kind]
            out.append(FlowBlock(name, cat, src, np.concatenate(s), dst, np.concatenate(d)))
        return out


def add_device_flows(rows: DeviceRows, deps, selection: Selection
                     ) -> tuple[list[FlowBlock], dict[str, int], dict[str, int]]:
    """-> (the selected arrows of one capture, arrows drawn per kind, arrows per kind that
    found no phase to bind to: not drawn)."""
    arrows = _Arrows()
    unbound: dict[str, int] = {}
    if selection.flow(FlowKind.DEPENDENCY) and deps is not None and len(deps.pred):
        _dependency(arrows, rows, deps)
    phases = {p.thread: p for p in rows.scheduler if p.block is not None}
    if phases and rows.has_cpu.any():
        cpu = np.flatnonzero(rows.has_cpu)
        thread = _thread_of(rows, cpu)
        d_thr, d_row = _phase_at(phases, thread, rows.dispatch[cpu], "dispatch")
        c_thr, c_row = _phase_at(phases, thread, rows.finish[cpu], "complete", next_ok=True)
        if selection.flow(FlowKind.DISPATCH):
            unbound["dispatch"] = int((d_row < 0).sum())
            for th, p in phases.items():
                on = (d_thr == th) & (d_row >= 0)
                arrows.add("dispatch", p.block, d_row[on], rows.worker, cpu[on])
                if rows.sched_view is not None:
                    arrows.add("dispatch", p.block, d_row[on], rows.sched_view,
                               rows.sched_view_row[cpu[on]])
        if selection.flow(FlowKind.COMPLETE):
            unbound["complete"] = int((c_row < 0).sum())
            for th, p in phases.items():
                on = (c_thr == th) & (c_row >= 0)
                arrows.add("complete", rows.worker, cpu[on], p.block, c_row[on])
                if rows.sched_view is not None:
                    arrows.add("complete", rows.sched_view, rows.sched_view_row[cpu[on]],
                               p.block, c_row[on])
        if selection.flow(FlowKind.SUBMIT_DISPATCH) and rows.submits:
            unbound["submit-dispatch"] = _submit_dispatch(arrows, rows, phases, cpu, d_thr,
                                                          d_row)
        if selection.flow(FlowKind.COMPLETE_READY) and deps is not None and len(deps.pred):
            _complete_ready(arrows, rows, deps, phases, cpu, d_thr, d_row, c_thr, c_row)
    return arrows.blocks(), arrows.counts, {k: v for k, v in unbound.items() if v}


# --------------------------------------------------------------------------- finding phases

def _thread_of(rows: DeviceRows, idx: np.ndarray) -> np.ndarray:
    """Scheduler thread owning each row's core (-1: unknown, look on every thread)."""
    c2t = rows.core_to_thread
    if not c2t:
        return np.full(len(idx), -1, dtype=np.int64)
    table = np.append(np.asarray(c2t, dtype=np.int64), -1)
    core = rows.core[idx]
    return table[np.where(core < len(c2t), core, len(c2t))]


def _phase_at(phases: dict[int, PhaseRows], thread: np.ndarray, t: np.ndarray, kind: str,
              next_ok: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """For each time `t[i]`: (thread, row) of the `kind` phase of thread `thread[i]` that
    contains it (with `next_ok`, else the next one to start); (-1, -1) when none. A row
    whose thread is unknown (-1) takes the first thread that has such a phase."""
    out_thr = np.full(len(t), -1, dtype=np.int64)
    out_row = np.full(len(t), -1, dtype=np.int64)
    for th, p in phases.items():
        cand = p.rows_of_kind(kind)
        if not len(cand):
            continue
        cand = cand[np.argsort(p.start[cand], kind="stable")]
        starts, ends = p.start[cand], p.end[cand]
        look = np.flatnonzero(((thread == th) | (thread < 0)) & (out_row < 0))
        if not len(look):
            continue
        tt = t[look]
        k = np.searchsorted(starts, tt, "right") - 1
        inside = (k >= 0) & (ends[np.maximum(k, 0)] >= tt)
        found = np.where(inside, k, -1)
        if next_ok:
            nxt = k + 1
            found = np.where(~inside & (nxt < len(cand)) & (thread[look] == th), nxt, found)
        ok = found >= 0
        out_thr[look[ok]] = th
        out_row[look[ok]] = cand[found[ok]]
    return out_thr, out_row


# --------------------------------------------------------------------------- kinds

def _anchor_pairs(rows: DeviceRows, pred: np.ndarray, succ: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(pred row, succ row) for every edge and every pair of their anchor rows."""
    is_aic = np.array([t == "aic" for t in rows.core_types] + [False])[
        np.minimum(rows.core, len(rows.core_types))]
    anchor = np.ones(len(rows.task), dtype=bool)
    if rows.spmd.any():     # SPMD: the lowest core of each (task, core type)
        sp = np.flatnonzero(rows.spmd)
        o = np.lexsort((rows.core[sp], is_aic[sp], rows.task[sp]))
        srt = sp[o]
        first = np.ones(len(srt), dtype=bool)
        first[1:] = (rows.task[srt][1:] != rows.task[srt][:-1]) | \
            (is_aic[srt][1:] != is_aic[srt][:-1])
        anchor[sp] = False
        anchor[srt[first]] = True
    a_rows = np.flatnonzero(anchor)
    a_rows = a_rows[np.argsort(rows.task[a_rows], kind="stable")]
    a_task = rows.task[a_rows]
    lo_p, hi_p = np.searchsorted(a_task, pred, "left"), np.searchsorted(a_task, pred, "right")
    lo_s, hi_s = np.searchsorted(a_task, succ, "left"), np.searchsorted(a_task, succ, "right")
    n_s = hi_s - lo_s
    cnt = (hi_p - lo_p) * n_s
    total = int(cnt.sum())
    if not total:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    edge = np.repeat(np.arange(len(pred)), cnt)
    k = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return a_rows[lo_p[edge] + k // n_s[edge]], a_rows[lo_s[edge] + k % n_s[edge]]


def _dependency(arrows: _Arrows, rows: DeviceRows, deps) -> None:
    src, dst = _anchor_pairs(rows, deps.pred, deps.succ)
    arrows.add("dependency", rows.worker, src, rows.worker, dst)
    if rows.sched_view is not None:
        s, d = rows.sched_view_row[src], rows.sched_view_row[dst]
        ok = (s >= 0) & (d >= 0)
        arrows.add("dependency", rows.sched_view, s[ok], rows.sched_view, d[ok])


def _submit_dispatch(arrows: _Arrows, rows: DeviceRows, phases: dict[int, PhaseRows],
                     cpu: np.ndarray, d_thr: np.ndarray, d_row: np.ndarray) -> int:
    """Each task's (first) submit -> the dispatch phase of each of its rows; -> rows with
    a submit but no dispatch phase."""
    ids, where = [], []
    for s_i, p in enumerate(rows.submits):
        col = p.columns.arg("task_id")
        if p.block is None or col is None or not isinstance(col.values, np.ndarray):
            continue
        ok = col.values >= 0 if col.present is None else col.present & (col.values >= 0)
        r = np.flatnonzero(ok)
        ids.append(col.values[r])
        where.append(np.column_stack((np.full(len(r), s_i), r)))
    if not ids:
        return 0
    ids_all, where_all = np.concatenate(ids), np.concatenate(where)
    first_ids, first = np.unique(ids_all, return_index=True)   # first-seen submit per task
    pos = np.minimum(np.searchsorted(first_ids, rows.task[cpu]), len(first_ids) - 1)
    has_submit = first_ids[pos] == rows.task[cpu]
    sub = where_all[first[pos]]
    for s_i, p in enumerate(rows.submits):
        for th, ph in phases.items():
            on = has_submit & (sub[:, 0] == s_i) & (d_thr == th) & (d_row >= 0)
            arrows.add("submit-dispatch", p.block, sub[on, 1], ph.block, d_row[on])
    return int((has_submit & (d_row < 0)).sum())


def _complete_ready(arrows: _Arrows, rows: DeviceRows, deps, phases: dict[int, PhaseRows],
                    cpu: np.ndarray, d_thr, d_row, c_thr, c_row) -> None:
    """For each task whose every producer was seen completing: the complete phase that saw
    its last producer finish (latest phase end; ties by thread) -> the dispatch phase of its
    earliest dispatch, when that dispatch is after the phase ended."""
    task = rows.task[cpu]
    # per task: the complete phase of its last-finishing row
    o = np.lexsort((rows.finish[cpu], task))
    last = np.ones(len(o), dtype=bool)
    last[:-1] = task[o][1:] != task[o][:-1]
    t_ids, t_i = task[o][last], o[last]
    t_thr, t_row = c_thr[t_i], c_row[t_i]
    t_end = np.full(len(t_i), -1, dtype=np.int64)
    for th, p in phases.items():
        on = (t_thr == th) & (t_row >= 0)
        t_end[on] = p.end[t_row[on]]
    # per consumer: its earliest dispatch row
    o = np.lexsort((rows.dispatch[cpu], task))
    first = np.ones(len(o), dtype=bool)
    first[1:] = task[o][1:] != task[o][:-1]
    c_ids, c_i = task[o][first], o[first]

    def lookup(ids, x):
        pos = np.minimum(np.searchsorted(ids, x), len(ids) - 1)
        return np.where(ids[pos] == x, pos, -1)

    pred, succ = deps.pred, deps.succ
    p_ix = lookup(t_ids, pred)
    seen = (p_ix >= 0) & (t_end[np.maximum(p_ix, 0)] >= 0)
    # consumers whose every producer was seen completing
    order = np.argsort(succ, kind="stable")
    s_sorted = succ[order]
    heads = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
    all_seen = np.minimum.reduceat(seen[order].astype(np.int8), heads).astype(bool)
    # releasing phase: the latest (end, thread) among the producers' phases
    key_end = np.where(seen, t_end[np.maximum(p_ix, 0)], -1)[order]
    key_thr = np.where(seen, t_thr[np.maximum(p_ix, 0)], -1)[order]
    best = np.lexsort((key_thr, key_end, np.repeat(np.arange(len(heads)),
                                                    np.diff(np.r_[heads, len(order)]))))
    group_last = np.r_[heads[1:], len(order)] - 1
    rel = order[best[group_last]]                     # edge index of the releasing producer
    consumers = s_sorted[heads]
    rel_p = p_ix[rel]
    c_pos = lookup(c_ids, consumers)
    ok = all_seen & (c_pos >= 0)
    ci = c_i[np.maximum(c_pos, 0)]
    ok &= (d_row[ci] >= 0) & (rows.dispatch[cpu][ci] >= t_end[np.maximum(rel_p, 0)])
    for sth, sp in phases.items():
        for dth, dp in phases.items():
            on = ok & (t_thr[np.maximum(rel_p, 0)] == sth) & (d_thr[ci] == dth)
            arrows.add("complete-ready", sp.block, t_row[rel_p[on]], dp.block, d_row[ci[on]])
