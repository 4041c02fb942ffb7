"""Past the device: the run's whole wall time, first compile stage to last device task.

The device part is the observed path from its first task's start (device compute and its
stalls by what filled them: completion, dispatch, launch, unknown; its front gap is what
this module explains instead). Before it, on the
reference axis of the merge's `place` step (never a second clock decision), every instant
goes to the most specific thing known to have been happening on the way to that first task,
in this order of precedence (highest first):

1. the first path task's own launch: its dispatch -> start, and for an AICPU orchestrator
   its submit and submit -> dispatch (device clock);
2. the device orchestrator at work (device clock);
3. the first task's host submit, the host orchestrator at work, H2D uploads (host clock);
4. Simpler's host phase records (`arena_build`, `graph_upload`, ...);
5. the run log's `[STRACE]` host spans (`chip.run.bind`, `chip.run.runner_run`, ...), the
   deeper span first;
6. after a host submit, waiting for the dispatch;
7. the compile stages of the run's main thread (the deeper stage first) and the
   `kernel_codegen:<kernel>` stage of the first task's kernel;

and an instant that none of them covers is "unexplained". The segments tile the wall time
exactly (integer ns). Where the device's placement is uncertain, the tiling is made again at
each end of the offset interval the evidence allows, and every category carries the range
(`EndToEnd.ranges`): the segments at the host/device boundary are never one false point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.analysis.critical_path import PARTS, ObservedPath, StallPart
from pypto.compile_profiling.analysis.tasks import TaskTable
from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.lay_out.builder import KERNEL_CODEGEN_PREFIX
from pypto.compile_profiling.trace_merge.place.plan import DEVICE_EXECUTION, CapturePlan, Plan

__all__ = ["CATEGORIES", "COMPUTE", "EndToEnd", "Segment", "device_segments", "end_to_end"]

# the device's stall categories carry the stall parts' names (the front gap is explained by
# the host side instead, so it never appears)
DEVICE_STALLS = tuple(p for p in PARTS if p is not StallPart.FRONT)
CATEGORIES = ("compile", "host preparation", "launch", "device compute",
              *(f"device stall: {p}" for p in DEVICE_STALLS), "unexplained")
COMPUTE = len(PARTS)          # `device_segments`' code for a compute piece
# categories of stages that are compile time; `import` is a first call's lazy imports
# (`import:<module>` stages), paid by the compile that triggered them
COMPILE_CATS = ("parse", "pass", "codegen", "compile", "import")
FOLD_OVER = 16           # host phases with more records than this are drawn as their hull


@dataclass(slots=True)
class Segment:
    name: str
    category: str
    start_ns: int            # reference axis
    end_ns: int

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(slots=True, eq=False)
class EndToEnd:
    """The wall time from the first compile stage to the last device task's end, tiled."""

    start_ns: int
    end_ns: int
    device_start_ns: int
    segments: list[Segment]          # host side, then one segment for the device path
    totals: dict[str, int]           # ns per category (CATEGORIES)
    first_task: str
    kernel: str | None
    clock: str                       # how the device side was placed ("calibrated ±636 ns")
    uncertainty_ns: float | None
    estimated: bool
    notes: list[str] = field(default_factory=list)
    # per category (and "wall") its (least, most) ns over the placements the evidence
    # allows; equal ends where the placement does not move it
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the tilings at the interval's ends (where they differ from this one)
    alternatives: list[EndToEnd] = field(default_factory=list)

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def exact(self) -> bool:
        return sum(self.totals.values()) == self.wall_ns and \
            sum(s.dur_ns for s in self.segments) == self.wall_ns


def device_segments(path: ObservedPath, to_ns, *, front_gap: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The observed path as reference-axis pieces: (start_ns, end_ns, path position, what:
    a stall part's index in PARTS, or COMPUTE). Each stall's parts go in the order they
    happen (front; completion, dispatch or unknown, launch). Boundaries are converted as
    time points, so the pieces touch and tile [first start (or t0 with the front gap), last
    end]; without the front gap the first task's whole stall is left out (the device part
    then starts at its start)."""
    n = len(path.tasks)
    order = [PARTS.index(p) for p in (StallPart.FRONT, StallPart.COMPLETION,
                                       StallPart.DISPATCH, StallPart.UNKNOWN,
                                       StallPart.LAUNCH)]
    widths = np.concatenate((path.parts[:, order], path.compute[:, None]), axis=1)
    if not front_gap and n:
        widths[0, :-1] = 0      # the first task's whole gap: explained by what came before
    start_at = path.frontier + path.stall - widths[:, :-1].sum(axis=1)
    bounds = start_at[:, None] + np.concatenate((np.zeros((n, 1), np.int64),
                                                 np.cumsum(widths, axis=1)), axis=1)
    pts = to_ns(bounds.reshape(-1)).reshape(bounds.shape)
    b, e = pts[:, :-1], pts[:, 1:]
    keep = e > b
    what = np.broadcast_to(np.array(order + [COMPUTE], dtype=np.int64), keep.shape)
    where = np.broadcast_to(np.arange(n)[:, None], keep.shape)
    return b[keep], e[keep], where[keep], what[keep]


def _nesting_depth(start: list[int], end: list[int]) -> list[int]:
    """Depth of each interval of one thread by containment (few: the host stages)."""
    order = sorted(range(len(start)), key=lambda i: (start[i], -end[i]))
    depth = [0] * len(start)
    stack: list[int] = []
    for i in order:
        while stack and end[stack[-1]] < end[i] or stack and start[i] >= end[stack[-1]]:
            stack.pop()
        depth[i] = len(stack)
        stack.append(i)
    return depth


def _compile_trace(plan: Plan, capture_plan: CapturePlan):
    """The compile trace of this capture's run (its pid), or the only one."""
    for trace, host_clock in plan.traces:
        if capture_plan.run_pid is not None and capture_plan.run_pid in trace.pid:
            return trace, host_clock
    return plan.traces[0] if len(plan.traces) == 1 else (None, None)


def end_to_end(plan: Plan, capture_plan: CapturePlan, tt: TaskTable, path: ObservedPath,
               first_label: str, kernel: str | None, dispatch_cycles: int | None
               ) -> EndToEnd | None:
    """The tiled wall time of one capture's run (None without any host-clock source), at the
    drawn placement, with each category's range over the placements its offset interval
    allows. `first_label`: the first path task as the timeline names it; `kernel`: its
    kernel; `dispatch_cycles`: the AICPU dispatch of its first block (None: not recorded)."""
    dev = capture_plan.device
    drawn = _tiled(plan, capture_plan, dev, tt, path, first_label, kernel, dispatch_cycles)
    if drawn is None:
        return None
    runs = [drawn]
    iv = dev.interval
    for shift in (() if iv is None else iv):
        if round(shift):
            runs.append(_tiled(plan, capture_plan, dev.shifted(round(shift)), tt, path,
                               first_label, kernel, dispatch_cycles))
    drawn.ranges = {c: (min(r.totals[c] for r in runs), max(r.totals[c] for r in runs))
                    for c in CATEGORIES}
    drawn.ranges["wall"] = (min(r.wall_ns for r in runs), max(r.wall_ns for r in runs))
    drawn.alternatives = runs[1:]
    return drawn


def _tiled(plan: Plan, capture_plan: CapturePlan, dev, tt: TaskTable, path: ObservedPath,
           first_label: str, kernel: str | None, dispatch_cycles: int | None
           ) -> EndToEnd | None:
    """The tiling with the device placed by `dev`."""
    if dev is None or path is None or not len(path.tasks):
        return None
    cap = capture_plan.capture
    notes: list[str] = []
    first = int(path.tasks[0])
    starts, ends, _where, what = device_segments(path, dev.to_ns, front_gap=False)
    dev_start = int(starts[0]) if len(starts) else int(dev.to_ns(np.array([path.t1]))[0])
    dev_end = int(ends[-1]) if len(ends) else dev_start
    disp_ns = None if dispatch_cycles is None else \
        int(dev.to_ns(np.array([dispatch_cycles], dtype=np.int64))[0])
    iv: list[tuple[float, int, int, int, str, str]] = []   # (layer, depth, s, e, name, cat)
    trace, host_clock = _compile_trace(plan, capture_plan)
    if trace is not None:
        _compile_intervals(trace, host_clock.offset_ns, capture_plan, kernel, iv)
    elif plan.traces:
        notes.append("several compile traces and none of this run's pid: compile stages "
                     "left out")
    tid = int(tt.ids[first])
    submit_end = _host_intervals(capture_plan, tid, first_label, iv)
    if submit_end is not None and disp_ns is not None:
        iv.append((6, 0, submit_end, disp_ns, f"awaiting dispatch ({first_label})", "launch"))
    _device_orchestration_intervals(cap.records, dev, tid, first_label, disp_ns, iv)
    if disp_ns is not None:
        iv.append((0, 0, disp_ns, dev_start, f"dispatched → started ({first_label})", "launch"))
    if not iv:
        return None
    w0 = min(min(x[2] for x in iv), dev_start)
    segments = _tile(iv, w0, dev_start)
    totals = dict.fromkeys(CATEGORIES, 0)
    for sg in segments:
        totals[sg.category] += sg.dur_ns
    d = (ends - starts).astype(np.int64)
    totals["device compute"] += int(d[what == COMPUTE].sum())
    for part in DEVICE_STALLS:
        totals[f"device stall: {part}"] += int(d[what == PARTS.index(part)].sum())
    n = len(path.tasks)
    segments.append(Segment(f"device: observed path ({n} task{'s' * (n != 1)})", "device",
                            dev_start, dev_end))
    if dev.status is not PlacementStatus.CALIBRATED:
        notes.append(f"the device side is not calibrated ({dev.label}): where host time "
                     "ends and device time begins is uncertain by that much; the ranges "
                     "cover it")
    return EndToEnd(w0, dev_end, dev_start, segments, totals, first_label, kernel, dev.label,
                    dev.uncertainty_ns, dev.status is not PlacementStatus.CALIBRATED, notes)


def _host_intervals(capture_plan: CapturePlan, tid: int, first_label: str, iv: list) -> int | None:
    """The host side's intervals into `iv`: the run log's spans, host phases, the host
    orchestrator's submits and uploads; -> the end of the first task's submit, if seen."""
    cap = capture_plan.capture
    host_off = capture_plan.host.offset_ns
    log = cap.run_log
    if log is not None:
        pid = capture_plan.run_pid
        for sp in log.spans:
            if sp.device_clock or (pid is not None and sp.pid != pid):
                continue
            cat = "launch" if sp.name.endswith("runner_run") else "host preparation"
            iv.append((5, sp.depth, sp.ts_ns + host_off, sp.ts_ns + sp.dur_ns + host_off,
                       sp.name, cat))
    for batch in cap.host_phases:
        names = np.array(batch.phase, dtype=object)
        for name in dict.fromkeys(batch.phase):
            sel = np.flatnonzero(names == name)
            s0, e0 = batch.start_ns[sel] + host_off, batch.end_ns[sel] + host_off
            if len(sel) > FOLD_OVER:
                iv.append((4, 0, int(s0.min()), int(e0.max()), f"{name} x{len(sel)}",
                           "host preparation"))
            else:
                iv.extend((4, 0, int(a), int(b), name, "host preparation")
                          for a, b in zip(s0.tolist(), e0.tolist()))
    submit_end = None
    rec = cap.records
    for s in rec.host_orchestrator:
        if not len(s.start):
            continue
        st, en = s.start + host_off, s.end + host_off
        iv.append((3, 0, int(st.min()), int(en.max()),
                   f"host orchestration ({len(st)} submits)", "host preparation"))
        hit = _submit_of(s, tid)
        if hit is not None:
            iv.append((3, 1, int(st[hit]), int(en[hit]), f"submit({first_label})",
                       "host preparation"))
            submit_end = int(en[hit])
    for s in rec.host_uploads:
        if len(s.start):
            iv.extend((3, 0, int(a + host_off), int(b + host_off), "H2D upload",
                       "host preparation") for a, b in zip(s.start.tolist(), s.end.tolist()))
    return submit_end


def _device_orchestration_intervals(rec, dev, tid: int, first_label: str,
                                    disp_ns: int | None, iv: list) -> None:
    """The device orchestrator's intervals into `iv`, with the first task's submit and its
    wait for dispatch."""
    for s in rec.orchestrator:
        if not len(s.start):
            continue
        st, en = dev.to_ns(s.start), dev.to_ns(s.end)
        iv.append((2, 0, int(st.min()), int(en.max()), "device orchestration", "launch"))
        hit = _submit_of(s, tid)
        if hit is not None:
            iv.append((1, 1, int(st[hit]), int(en[hit]), f"submit({first_label})", "launch"))
            if disp_ns is not None:
                iv.append((1, 0, int(en[hit]), disp_ns, (f"submitted → dispatched "
                           f"({first_label})"), "launch"))


def _submit_of(stream, task_id: int) -> int | None:
    """The row of an orchestrator stream that submitted `task_id` (its first), or None."""
    col = stream.arg("task_id")
    if col is None or not isinstance(col.values, np.ndarray):
        return None
    hit = np.flatnonzero(col.values == task_id)
    if col.present is not None:
        hit = hit[col.present[hit]]
    return int(hit[0]) if len(hit) else None


def _tile(iv: list, w0: int, w1: int) -> list[Segment]:
    """Paint [w0, w1) with the intervals, lowest precedence first; merge equal neighbours."""
    if w1 <= w0:
        return []
    pts = {w0, w1}
    for _, _, s, e, _, _ in iv:
        pts.add(min(max(s, w0), w1))
        pts.add(min(max(e, w0), w1))
    bounds = np.array(sorted(pts), dtype=np.int64)
    label = np.full(len(bounds) - 1, -1, dtype=np.int64)
    keys: list[tuple[str, str]] = []
    for layer, depth, s, e, name, cat in sorted(iv, key=lambda x: (-x[0], x[1])):
        i0 = int(np.searchsorted(bounds, max(s, w0)))
        i1 = int(np.searchsorted(bounds, min(e, w1)))
        if i1 > i0:
            label[i0:i1] = len(keys)
            keys.append((name, cat))
    out: list[Segment] = []
    for i, lab in enumerate(label.tolist()):
        name, cat = keys[lab] if lab >= 0 else ("unexplained", "unexplained")
        a, b = int(bounds[i]), int(bounds[i + 1])
        if out and out[-1].name == name and out[-1].category == cat:
            out[-1].end_ns = b
        else:
            out.append(Segment(name, cat, a, b))
    return out


def _compile_intervals(
    trace, offset: int, capture_plan: CapturePlan, kernel: str | None, iv: list
) -> None:
    """The run's main-thread stages and the first task's kernel_codegen stage (with what
    nests in it), deeper stages first."""
    n = len(trace.name)
    pid = capture_plan.run_pid if capture_plan.run_pid in trace.pid else None
    execs = [i for i in range(n) if trace.name[i] == DEVICE_EXECUTION and
             (pid is None or trace.pid[i] == pid)]
    if execs:
        main = (trace.pid[execs[0]], trace.tid[execs[0]])
    else:
        first = min(range(n), key=lambda i: trace.start_ns[i]) if n else None
        if first is None:
            return
        main = (trace.pid[first], trace.tid[first])
    by_track: dict[tuple[int, int], list[int]] = {}
    for i in range(n):
        by_track.setdefault((trace.pid[i], trace.tid[i]), []).append(i)
    depth = {}
    for idx in by_track.values():
        for i, d in zip(idx, _nesting_depth([trace.start_ns[i] for i in idx],
                                            [trace.end_ns[i] for i in idx])):
            depth[i] = d
    chosen = list(by_track.get(main, []))
    if kernel is not None:
        stage = KERNEL_CODEGEN_PREFIX + kernel
        ks = [i for i in range(n) if trace.name[i] == stage and trace.pid[i] == main[0]]
        if ks:
            k = max(ks, key=lambda i: trace.start_ns[i])
            inside = [
                i
                for i in by_track[(trace.pid[k], trace.tid[k])]
                if trace.start_ns[k] <= trace.start_ns[i] and trace.end_ns[i] <= trace.end_ns[k]
            ]
            for i in inside:
                if (trace.pid[i], trace.tid[i]) != main:
                    depth[i] += 1000          # above the main thread's codegen stage
            chosen += [i for i in inside if (trace.pid[i], trace.tid[i]) != main]
    for i in chosen:
        cat = "compile" if trace.cat[i] in COMPILE_CATS else "host preparation"
        iv.append((7, depth[i], trace.start_ns[i] + offset, trace.end_ns[i] + offset, trace.name[i],
                   cat))
