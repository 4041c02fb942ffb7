"""Lay out one Simpler capture's records as the views `views.py` lists: "Device <label> ·
AICore" (worker lanes, one per core: the receive -> start wait, then the kernel bar),
"· Scheduler view" (per core, scheduler dispatch to finish), "· AICPU scheduler" (one lane
per scheduler thread, `Sched_<n>`, and per resolution thread, `Sched_<n> (resolution)`;
"· AICore scheduler" with `Scheduler_<worker>` lanes when AICores schedule, as on a5),
"· Orchestrator" (the AICPU orchestrator, device cycles), "<label> · Host Orchestrator" (the
host orchestrator's submits and H2D uploads, host ns: Simpler's name), "· AICPU lifecycle"
(today's per-AICPU-thread control phases). Columns in,
columns out: the capture's arrays become `SliceBlock` columns, and a `DeviceRows` keeps what
the arrows (`device_flows`) and counters (`device_counters`) need, row-aligned with the
AICore rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.timeline.model import ArgColumn, Process, SliceBlock, Track
from pypto.compile_profiling.trace_merge.kinds import PlacementMethod, PlacementStatus, SourceKind
from pypto.compile_profiling.trace_merge.lay_out.builder import SEP, TimelineBuilder, device_args
from pypto.compile_profiling.trace_merge.lay_out.device_labels import (
    MARKER_KINDS,
    kernel_name,
    scheduler_lane,
    scheduler_names,
    submit_names,
    task_displays,
    thread_role,
)
from pypto.compile_profiling.trace_merge.lay_out.device_rows import (
    DeviceRows,
    PhaseRows,
    device_rows,
    unique_rows,
)
from pypto.compile_profiling.trace_merge.lay_out.lanes import sublanes
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan, DeviceClock
from pypto.compile_profiling.trace_merge.views import Selection, View

# --------------------------------------------------------------------------- labels


# --------------------------------------------------------------------------- device captures


@dataclass
class _Drawing:
    """One capture being drawn: what every step of `add_capture` reads and adds to."""

    builder: TimelineBuilder
    capture_plan: CapturePlan
    selection: Selection
    warnings: list[str]
    args: dict
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def dev(self):
        return self.capture_plan.device

    @property
    def rec(self):
        return self.capture_plan.capture.records

    @property
    def estimated(self) -> bool:
        return self.dev.status is not PlacementStatus.CALIBRATED

    def view_process(self, name: str) -> Process:
        """A device view, its name saying how its device clock was placed."""
        return self.builder.process(
            f"Device {self.capture_plan.label}{SEP}{name} ({self.dev.label})", args=self.args,
            estimated=self.estimated, capture=self.capture_plan, part=name)


def add_capture(
    builder: TimelineBuilder, capture_plan: CapturePlan, selection: Selection, warnings: list[str]
) -> DeviceRows | None:
    """Draw the selected views of one capture; -> its rows (None without AICore rows)."""
    dev, rec = capture_plan.device, capture_plan.capture.records
    args = device_args(capture_plan, dev, rec.path)
    args.update(chip_swimlane_level=rec.level, clock_freq_hz=rec.freq_hz)
    d = _Drawing(builder, capture_plan, selection, warnings, args)
    if dev.mapping is not None:
        outside = _outside_window(rec, dev)
        d.counts["outside_anchor_window"] = outside
        if outside:
            args["timestamps_outside_anchor_window"] = outside
            warnings.append(f"{rec.path}: {outside} device timestamps lie outside the clock-"
                            "anchor window; they are extrapolated, not calibrated")
    sched_streams = [s for s in rec.scheduler if len(s.start)]
    assigned = {t for t in rec.core_to_thread or () if t >= 0}
    roles = [thread_role(s, assigned) for s in sched_streams]
    lanes = [scheduler_lane(s, r) for s, r in zip(sched_streams, roles)]
    capture_note = _today_args(rec, sched_streams, lanes, args, warnings)
    rows = device_rows(capture_plan)
    has_aicore = rows is not None          # device_rows: None without AICore rows
    if has_aicore and (selection.view(View.WORKER) or selection.view(View.UTILISATION)):
        rows.worker_proc = d.view_process("AICore")
    if has_aicore and selection.view(View.SCHEDULER_VIEW) and rows.has_cpu.any():
        rows.sched_proc = d.view_process("Scheduler view")
    sched_proc, scheduler, moved = _draw_scheduler(d, rows, sched_streams, lanes, roles)
    moved += _draw_lifecycle(d)
    submits, orch_moved = _draw_orchestrators(d)
    moved += orch_moved
    moved += _draw_rows(d, rows, sched_proc, scheduler, submits)
    d.counts["overlaps_moved"] = moved
    if moved:
        warnings.append(
            f"{rec.path}: {moved} overlapping slices of {capture_plan.label} were moved "
            "to '(overlap k)' sub-lanes"
        )
    _summarise(d, capture_note)
    return rows


def _draw_scheduler(d: _Drawing, rows, sched_streams: list, lanes: list, roles: list):
    """The scheduler's phase lanes (its marker phases on the AICPU's worker lane, as Simpler
    draws them); -> (its process, each lane's rows, slices moved to sub-lanes)."""
    selection, rec = d.selection, d.rec
    moved = 0
    sched_proc = None
    if sched_streams and (selection.view(View.SCHEDULER) or selection.view(View.READY_QUEUE)):
        by_aicore = all(s.producer == "aicore" for s in sched_streams)
        sched_proc = d.view_process("AICore scheduler" if by_aicore else "AICPU scheduler")
    scheduler = []
    for s, lane, role in zip(sched_streams, lanes, roles):
        marker = np.isin(s.kind, [i for i, k in enumerate(s.kinds) if k in MARKER_KINDS])
        if marker.any():      # drawn on the AICPU's worker lane, as Simpler does
            markers, s = s.take(np.flatnonzero(marker)), s.take(np.flatnonzero(~marker))
            on = (
                rows.worker_proc
                if rows is not None and rows.worker_proc is not None and selection.view(View.WORKER)
                else sched_proc
                if selection.view(View.SCHEDULER)
                else None
            )
            moved += _phase_rows(d.builder, on, f"AICPU_{s.thread}", 10_000 + s.thread, markers,
                                 d.dev.to_ns, "aicpu_worker", scheduler_names)[1]
        scheduler.append(_phase_rows(d.builder,
                                     sched_proc if selection.view(View.SCHEDULER) else None,
                                     lane, s.thread, s, d.dev.to_ns, "scheduler",
                                     scheduler_names, role))
    moved += sum(m for _, m in scheduler)
    d.counts["scheduler_phases"] = sum(len(s.start) for s in rec.scheduler)
    return sched_proc, scheduler, moved


def _draw_lifecycle(d: _Drawing) -> int:
    """The AICPU threads' lifecycle phases (today's captures); -> slices moved."""
    moved = 0
    life = [s for s in d.rec.lifecycle if len(s.start)]
    if life and d.selection.view(View.LIFECYCLE):
        proc = d.view_process("AICPU lifecycle")
        for s in life:
            moved += _phase_rows(d.builder, proc, f"AICPU_{s.thread}", s.thread, s, d.dev.to_ns,
                                 "aicpu_lifecycle", None)[1]
    d.counts["lifecycle_phases"] = sum(len(s.start) for s in life)
    return moved


def _draw_orchestrators(d: _Drawing):
    """The AICPU orchestrator's submits (device clock), the host orchestrator's submits and
    H2D uploads (host clock, exact); -> (the submit lanes' rows, slices moved)."""
    rec, capture_plan = d.rec, d.capture_plan
    host_streams = [s for s in rec.host_orchestrator if len(s.start)]
    uploads = [s for s in rec.host_uploads if len(s.start)]
    dev_orch = [s for s in rec.orchestrator if len(s.start)]
    submits = []
    moved = 0
    if dev_orch and d.selection.view(View.ORCHESTRATOR):     # the AICPU's, on the device clock
        proc = d.view_process("Orchestrator")
        for s in dev_orch:
            submits.append(_phase_rows(d.builder, proc, f"Orch_{s.thread}", s.thread, s,
                                       d.dev.to_ns, "orchestrator", submit_names))
    if (host_streams or uploads) and d.selection.view(View.ORCHESTRATOR):
        # the host's own submits and H2D uploads (host ns, exact): Simpler's "Host
        # Orchestrator" process, with its Host_<n> and H2D lanes; host work, so not "Device"
        proc = d.builder.process(f"{capture_plan.label}{SEP}Host Orchestrator", args={
            "alignment": {"status": PlacementStatus.EXACT, "method": PlacementMethod.HOST_MONOTONIC}, "source": rec.path},
            capture=capture_plan, part="host")

        def host_ns(v: np.ndarray) -> np.ndarray:
            return v.astype(np.int64) + capture_plan.host.offset_ns

        for s in host_streams:
            submits.append(_phase_rows(d.builder, proc, f"Host_{s.thread}", 50 + s.thread, s,
                                       host_ns, "host_orchestrator", submit_names))
        for s in uploads:
            moved += _phase_rows(d.builder, proc, "H2D", 99 + s.thread, s, host_ns, "host_h2d",
                                 None)[1]
    moved += sum(m for _, m in submits)
    d.counts["orchestrator_phases"] = sum(len(s.start) for s in dev_orch)
    d.counts["host_orchestrator_phases"] = sum(len(s.start) for s in host_streams)
    d.counts["host_device_uploads"] = sum(len(s.start) for s in uploads)
    return submits, moved


def _draw_rows(d: _Drawing, rows, sched_proc, scheduler: list, submits: list) -> int:
    """The AICore tasks on their worker lanes and the Scheduler view, and the AICPU join's
    counts; -> slices moved."""
    rec = d.rec
    n_cpu = len(rec.aicpu["dispatch_cycles"])
    d.counts["aicore_tasks"] = len(rows.task) if rows is not None else 0
    if rows is None:
        return 0
    moved = 0
    rows.scheduler_proc = sched_proc
    rows.scheduler = [p for p, _ in scheduler]
    rows.submits = [p for p, _ in submits]
    if rows.worker_proc is not None and d.selection.view(View.WORKER):
        moved += _worker_blocks(d.builder, rows, d.capture_plan.capture,
                                d.selection.view(View.SETUP))
    if rows.sched_proc is not None:
        d.counts["scheduler_view_overlaps"] = _scheduler_view_block(d.builder, rows)
    d.counts["aicpu_joined"] = int(rows.has_cpu.sum())
    d.counts["aicpu_unmatched"] = unmatched = n_cpu - rows.used_cpu_rows
    if unmatched:
        section = "scheduler_tasks" if rec.layout == "today" else "aicpu_tasks"
        d.warnings.append(f"{rec.path}: {unmatched} {section} rows have no AICore row "
                          "(joined on core_id, reg_task_id)")
    return moved


def _summarise(d: _Drawing, capture_note: str) -> None:
    """The capture's summary line (what was drawn, how its clock was placed) and its entry
    in the trace's sources."""
    rec, dev, capture_plan, builder = d.rec, d.dev, d.capture_plan, d.builder
    line = ", ".join(f"{v} {k}" for k, v in d.counts.items() if v)
    if dev.containment is not None:
        how = f"{dev.status.upper()} {dev.bound} ({dev.how})"
    elif d.estimated:
        how = f"ESTIMATED{' ±' + fmt_ns(dev.uncertainty_ns) if dev.uncertainty_ns is not None else ''} ({dev.how})"
    else:
        how = (f"calibrated by clock anchors ({dev.mapping.method}, uncertainty "
               f"±{fmt_ns(dev.uncertainty_ns)})")
        if dev.cross_check:
            how += f"; {dev.cross_check}"
    if capture_plan.host.offset_ns:
        how += f"; {capture_plan.host.how}"
    builder.summary.append(f"{rec.path}: capture {capture_plan.label}, level {rec.level}: {line}; {how}"
                     + capture_note)
    builder.sources.append({"path": rec.path, "kind": SourceKind.SWIMLANE_RECORDS, "rank": capture_plan.label,
                      "placement": dev.label,
                      "alignment": dev.mapping.method if not d.estimated
                      else f"{dev.status}: {dev.how}",
                      "estimated": d.estimated, "uncertainty_ns": dev.uncertainty_ns,
                      "details": dev.describe(), "host_offset_ns": capture_plan.host.offset_ns})
    if capture_plan.capture.files.records_ignored:     # which one was read: said by default
        builder.sources[-1]["records_ignored"] = list(capture_plan.capture.files.records_ignored)


def _today_args(rec, streams, lanes: list[str], args: dict, warnings: list[str]) -> str:
    """What only today's layout says (run identity, records set aside, the device's capture
    accounting per scheduler stream) into the capture's process args; -> the summary's
    words for it ("" for an August file)."""
    if rec.run_epoch is not None:
        args["run_epoch"] = rec.run_epoch
    if rec.set_aside:
        args["set_aside_other_runs"] = dict(rec.set_aside)
    captured = {lane: s.capture for s, lane in zip(streams, lanes) if s.capture is not None}
    if not captured and not rec.set_aside:
        return ""
    note = ""
    if captured:
        args["capture"] = {"scheduler_records": captured}
        committed = sum(c["committed"] for c in captured.values())
        dropped = sum(c["dropped"] for c in captured.values())
        cut = [lane for lane, c in captured.items() if c["truncated"]]
        note = f"; scheduler capture: {committed} committed, {dropped} dropped" + (
            f", truncated: {', '.join(cut)}" if cut else "")
        if dropped or cut:
            warnings.append(f"{rec.path}: the device dropped {dropped} scheduler records"
                            + (f" ({', '.join(cut)} truncated)" if cut else "")
                            + ": those phases are missing from the timeline")
    if rec.set_aside:
        note += f"; {sum(rec.set_aside.values())} records of other runs set aside"
    return note


def _outside_window(rec, dev: DeviceClock) -> int:
    lo, hi = dev.mapping.window_cycles
    n = 0
    cols = [rec.aicore["start_cycles"], rec.aicore["end_cycles"],
            rec.aicpu["dispatch_cycles"], rec.aicpu["finish_cycles"]]
    for s in (*rec.scheduler, *rec.orchestrator, *rec.lifecycle):
        cols += [s.start, s.end]
    for c in cols:
        if len(c):
            n += int(((c < lo) | (c > hi)).sum())
    return n


def _phase_rows(builder: TimelineBuilder, proc: Process | None, lane: str, sort_index: int, s, to_ns,
                cat: str, namer, role: str = "scheduler") -> tuple[PhaseRows, int]:
    """One phase stream on the reference axis, drawn on `proc` (lanes `lane`, `lane (overlap
    k)`) unless `proc` is None; -> (its rows, slices moved to overlap lanes)."""
    start, end = to_ns(s.start), to_ns(s.end)
    end = np.maximum(end, start)
    rows = PhaseRows(s.thread, None, start, end, s.kind, s.kinds, s, role)
    if proc is None:
        return rows, 0
    sub = sublanes(start, end, allow_nesting=True)
    n_lanes = int(sub.max()) + 1 if len(sub) else 1
    tracks = [builder.lane(proc, lane if k == 0 else f"{lane} (overlap {k})", sort_index * 100 + k)
              for k in range(n_lanes)]
    names, name_ix = namer(s) if namer else (list(s.kinds), s.kind.astype(np.int32))
    unit = "cycles" if s.clock == "device_cycles" else "host_ns"
    args = [ArgColumn("kind", s.kind, table=list(s.kinds))] if namer is not None \
        and len(s.kinds) > 1 else []
    args += [ArgColumn(f"start_{unit}", s.start), ArgColumn(f"end_{unit}", s.end), *s.args]
    rows.block = SliceBlock(cat, tracks, sub, start, end - start, names, name_ix, args)
    builder.tl.blocks.append(rows.block)
    return rows, int(np.count_nonzero(sub))


def _task_labels(rows: DeviceRows, names_map) -> tuple[list[str], np.ndarray, list[str]]:
    """Simpler's label of each row (`GEMM(t3)`, `PA_spmd(r1t2)`, `task(t3)`) as (labels,
    index per row, the `t3` display of each label: a row's display is `displays[index]`),
    computed once per capture: the kernel part once per distinct (kernel, spmd), the rest
    per distinct task (1M tasks: 1.98 s CPU one call per task -> 0.63 s, min of 3)."""
    if rows.labels is not None:
        return rows.labels
    uniq, inv = unique_rows(rows.task, rows.func + 1, rows.spmd.astype(np.int64))
    kinds, kind_ix = np.unique(uniq[:, 1] * 2 + uniq[:, 2], return_inverse=True)
    heads = []
    for key in kinds.tolist():
        kn = kernel_name((key >> 1) - 1, names_map)
        spmd = key & 1 and kn is not None and "spmd" not in kn.lower()
        heads.append("task" if kn is None else f"{kn}_spmd" if spmd else kn)
    displays = task_displays(uniq[:, 0])
    labels = [f"{heads[k]}({d})" for k, d in zip(kind_ix.reshape(-1).tolist(), displays)]
    rows.labels = labels, inv.astype(np.int32), displays
    return rows.labels


def _core_lanes(builder: TimelineBuilder, proc: Process, rows: DeviceRows, start: np.ndarray,
                end: np.ndarray, mask: np.ndarray | None = None
                ) -> tuple[list[Track], np.ndarray, int]:
    """One lane per core (`AIC_3`), overlapping rows on `AIC_3 (overlap k)`; -> (tracks,
    track index per selected row, rows on overlap lanes)."""
    idx = np.arange(len(rows.core)) if mask is None else np.flatnonzero(mask)
    core = rows.core[idx]
    tracks: list[Track] = []
    tix = np.empty(len(idx), dtype=np.int32)
    moved = 0
    for c in np.unique(core).tolist():
        on = np.flatnonzero(core == c)
        sub = sublanes(start[idx[on]], end[idx[on]], allow_nesting=False)
        core_type = rows.core_types[c] if c < len(rows.core_types) else "core"
        base = f"{core_type.upper()}_{c}"
        first = len(tracks)
        for k in range(int(sub.max()) + 1):
            tracks.append(builder.lane(proc, base if k == 0 else f"{base} (overlap {k})", c * 100 + k))
        tix[on] = first + sub
        moved += int(np.count_nonzero(sub))
    return tracks, tix, moved


def _worker_blocks(builder: TimelineBuilder, rows: DeviceRows, cap, setup: bool) -> int:
    """The kernel bars (kernel start to end) and, with `setup`, the receive -> start wait
    before each, on one lane per core; a lane holds a task from receive to end, so the
    wait never overlaps the previous kernel. -> rows moved to overlap lanes."""
    rec = cap.records
    a = rec.aicore
    lane_start = rows.receive if setup else rows.start
    tracks, tix, moved = _core_lanes(builder, rows.worker_proc, rows, lane_start, rows.end)
    names_map = rows.names
    labels, name_ix, displays = _task_labels(rows, names_map)
    has = rows.has_cpu
    jr = np.where(has, rows.joined, 0)
    cpu = rec.aicpu
    n = len(rows.task)
    disp_c = cpu["dispatch_cycles"][jr] if has.any() else np.zeros(n, dtype=np.int64)
    fin_c = cpu["finish_cycles"][jr] if has.any() else np.zeros(n, dtype=np.int64)
    core_type = np.minimum(rows.core, len(rows.core_types)).astype(np.int32)
    args = [
        ArgColumn("task_id", rows.task),
        ArgColumn("task", name_ix, table=displays),
        ArgColumn("core_id", rows.core),
        ArgColumn("core_type", core_type, table=rows.core_types + ["core"]),
        ArgColumn("kernel_id", rows.func),
        ArgColumn("reg_task_id", a["reg_task_id"]),
        ArgColumn("start_cycles", a["start_cycles"]),
        ArgColumn("end_cycles", a["end_cycles"]),
        ArgColumn("receive_to_start_cycles", a["receive_to_start_cycles"]),
        ArgColumn("dispatch_cycles", disp_c, has),
        ArgColumn("finish_cycles", fin_c, has),
        ArgColumn("dispatch_ts_ns", rows.dispatch, has),
        ArgColumn("finish_ts_ns", rows.finish, has),
        ArgColumn("dispatch_to_start_ns", rows.start - rows.dispatch, has),
        ArgColumn("end_to_finish_ns", rows.finish - rows.end, has),
    ]
    block = SliceBlock("aicore", tracks, tix, rows.start, rows.end - rows.start, labels,
                       name_ix, args)
    builder.tl.blocks.append(block)
    rows.worker = block
    if setup:
        wait = np.flatnonzero(rows.receive < rows.start)
        if len(wait):
            builder.tl.blocks.append(
                SliceBlock(
                    "aicore_setup",
                    tracks,
                    tix[wait],
                    rows.receive[wait],
                    rows.start[wait] - rows.receive[wait],
                    ["setup"],
                    np.zeros(len(wait), dtype=np.int32),
                    [
                        ArgColumn("task", name_ix[wait], table=displays),
                        ArgColumn("task_id", rows.task[wait]),
                        ArgColumn("receive_to_start_ns", rows.start[wait] - rows.receive[wait]),
                    ],
                )
            )
    # each task's first row (its earliest block), by kernel: the kernel_codegen arrows' ends
    sel = np.flatnonzero(rows.func >= 0)
    if len(sel):
        order = sel[np.lexsort((rows.start[sel], rows.task[sel]))]
        task = rows.task[order]
        first = order[np.r_[True, task[1:] != task[:-1]]]
        for f in np.unique(rows.func[first]).tolist():
            builder.kernel_tasks.append((kernel_name(f, names_map), block,
                                         first[rows.func[first] == f]))
    return moved


def _scheduler_view_block(builder: TimelineBuilder, rows: DeviceRows) -> int:
    """The Scheduler view: per core, each task from the AICPU's dispatch to its finish
    (two tasks of one core overlap when the AICPU dispatches ahead: a second lane).
    -> rows on overlap lanes (expected, not moved data: no warning)."""
    has = rows.has_cpu
    tracks, tix, moved = _core_lanes(builder, rows.sched_proc, rows, rows.dispatch, rows.finish, has)
    idx = np.flatnonzero(has)
    labels, name_ix, displays = _task_labels(rows, rows.names)
    block = SliceBlock("scheduler_view", tracks, tix, rows.dispatch[idx],
                       rows.finish[idx] - rows.dispatch[idx], labels, name_ix[idx], [
                           ArgColumn("task_id", rows.task[idx]),
                           ArgColumn("task", name_ix[idx], table=displays),
                           ArgColumn("core_id", rows.core[idx]),
                           ArgColumn("dispatch_to_start_ns", rows.start[idx] - rows.dispatch[idx]),
                           ArgColumn("kernel_ns", rows.end[idx] - rows.start[idx]),
                           ArgColumn("end_to_finish_ns", rows.finish[idx] - rows.end[idx])])
    builder.tl.blocks.append(block)
    rows.sched_view = block
    rows.sched_view_row = np.full(len(rows.task), -1, dtype=np.int64)
    rows.sched_view_row[idx] = np.arange(len(idx))
    return moved


