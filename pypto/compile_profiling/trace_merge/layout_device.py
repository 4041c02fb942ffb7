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
from pypto.compile_profiling.trace_merge.builder import SEP, TimelineBuilder, device_args
from pypto.compile_profiling.trace_merge.containment import fmt_ns
from pypto.compile_profiling.trace_merge.lanes import sublanes
from pypto.compile_profiling.trace_merge.plan import CapturePlan, DeviceClock
from pypto.compile_profiling.trace_merge.views import Selection

# --------------------------------------------------------------------------- labels

def task_displays(task_ids: np.ndarray) -> list[str]:
    """Simpler's task label of each id: `t<local>` on ring 0, else `r<ring>t<local>`."""
    ids = np.asarray(task_ids, dtype=np.int64)
    ring, local = ((ids >> 32) & 0xFF).tolist(), (ids & 0xFFFFFFFF).tolist()
    return [f"r{r}t{x}" if r else f"t{x}" for r, x in zip(ring, local)]


def func_letter_name(func_id: int) -> str:
    """Simpler's name for a kernel without a name-map entry: 0 -> func_0_a, 26 -> func_26_aa."""
    letters = []
    m = func_id + 1
    while m > 0:
        m, rem = divmod(m - 1, 26)
        letters.append(chr(ord("a") + rem))
    return f"func_{func_id}_{''.join(reversed(letters))}"


def kernel_name(func_id: int, names: dict[int, str] | None) -> str | None:
    if func_id < 0:
        return None
    if names and func_id in names:
        return names[func_id]
    return func_letter_name(func_id)


# --------------------------------------------------------------------------- device captures

@dataclass(slots=True, eq=False)
class PhaseRows:
    """One phase stream (a scheduler thread, an orchestrator) on the reference axis; `block`
    is its drawn slices (row-aligned), None when its view is off."""

    thread: int
    block: SliceBlock | None
    start: np.ndarray          # int64 ns
    end: np.ndarray            # int64 ns
    kind: np.ndarray           # int32 index into kinds
    kinds: list[str]
    columns: object            # the reader's PhaseColumns (for args such as task_id)
    role: str = "scheduler"    # scheduler threads: "scheduler" | "resolution"

    def rows_of_kind(self, name: str) -> np.ndarray:
        k = self.kinds.index(name) if name in self.kinds else -1
        return np.flatnonzero(self.kind == k)


@dataclass(slots=True, eq=False)
class DeviceRows:
    """A capture's AICore rows (file order) with their AICPU join, in reference-axis ns,
    and the blocks that drew them: what the arrows and counters are built from."""

    label: str
    core_types: list[str]
    core_to_thread: list[int] | None
    task: np.ndarray
    core: np.ndarray
    func: np.ndarray               # kernel id (-1 unknown)
    spmd: np.ndarray               # bool
    start: np.ndarray
    end: np.ndarray
    receive: np.ndarray
    has_cpu: np.ndarray            # bool: an AICPU row joined
    dispatch: np.ndarray
    finish: np.ndarray
    worker: SliceBlock | None = None
    sched_view: SliceBlock | None = None
    sched_view_row: np.ndarray | None = None    # per AICore row: its scheduler view row, -1
    worker_proc: Process | None = None
    sched_proc: Process | None = None          # the Scheduler view
    scheduler_proc: Process | None = None      # the AICPU scheduler's phases
    scheduler: list[PhaseRows] = field(default_factory=list)
    submits: list[PhaseRows] = field(default_factory=list)   # streams with task ids
    names: dict[int, str] | None = None   # kernel names (the name map)
    labels: tuple | None = None           # _task_labels, once
    joined: np.ndarray | None = None   # per AICore row: its AICPU row, -1
    used_cpu_rows: int = 0


def add_capture(
    builder: TimelineBuilder, capture_plan: CapturePlan, selection: Selection, warnings: list[str]
) -> DeviceRows | None:
    """Draw the selected views of one capture; -> its rows (None without AICore rows)."""
    cap, dev = capture_plan.capture, capture_plan.device
    rec = cap.records
    estimated = dev.status != "calibrated"
    tag = f" ({dev.label})"
    args = device_args(capture_plan, dev, rec.path)
    args.update(chip_swimlane_level=rec.level, clock_freq_hz=rec.freq_hz)
    counts: dict[str, int] = {}
    if dev.mapping is not None:
        outside = _outside_window(rec, dev)
        counts["outside_anchor_window"] = outside
        if outside:
            args["timestamps_outside_anchor_window"] = outside
            warnings.append(f"{rec.path}: {outside} device timestamps lie outside the clock-"
                            "anchor window; they are extrapolated, not calibrated")

    def view_process(name: str) -> Process:
        """A device view, its name saying how its device clock was placed."""
        return builder.process(f"Device {capture_plan.label}{SEP}{name}{tag}", args=args,
                               estimated=estimated, capture=capture_plan, part=name)

    sched_streams = [s for s in rec.scheduler if len(s.start)]
    assigned = {t for t in rec.core_to_thread or () if t >= 0}
    roles = [thread_role(s, assigned) for s in sched_streams]
    lanes = [_scheduler_lane(s, r) for s, r in zip(sched_streams, roles)]
    capture_note = _today_args(rec, sched_streams, lanes, args, warnings)

    rows = device_rows(capture_plan)
    has_aicore = rows is not None          # device_rows: None without AICore rows
    if has_aicore and (selection.view("worker") or selection.view("utilisation")):
        rows.worker_proc = view_process("AICore")
    if has_aicore and selection.view("scheduler-view") and rows.has_cpu.any():
        rows.sched_proc = view_process("Scheduler view")
    moved = 0
    sched_proc = None
    if sched_streams and (selection.view("scheduler") or selection.view("ready-queue")):
        by_aicore = all(s.producer == "aicore" for s in sched_streams)
        sched_proc = view_process("AICore scheduler" if by_aicore else "AICPU scheduler")
    scheduler = []
    for s, lane, role in zip(sched_streams, lanes, roles):
        marker = np.isin(s.kind, [i for i, k in enumerate(s.kinds) if k in MARKER_KINDS])
        if marker.any():      # drawn on the AICPU's worker lane, as Simpler does
            markers, s = s.take(np.flatnonzero(marker)), s.take(np.flatnonzero(~marker))
            on = (
                rows.worker_proc
                if rows is not None and rows.worker_proc is not None and selection.view("worker")
                else sched_proc
                if selection.view("scheduler")
                else None
            )
            moved += _phase_rows(builder, on, f"AICPU_{s.thread}", 10_000 + s.thread, markers,
                                 dev.to_ns, "aicpu_worker", _scheduler_names)[1]
        scheduler.append(
            _phase_rows(
                builder,
                sched_proc if selection.view("scheduler") else None,
                lane,
                s.thread,
                s,
                dev.to_ns,
                "scheduler",
                _scheduler_names,
                role,
            )
        )
    moved += sum(m for _, m in scheduler)
    counts["scheduler_phases"] = sum(len(s.start) for s in rec.scheduler)
    life = [s for s in rec.lifecycle if len(s.start)]
    if life and selection.view("lifecycle"):
        proc = view_process("AICPU lifecycle")
        for s in life:
            moved += _phase_rows(builder, proc, f"AICPU_{s.thread}", s.thread, s, dev.to_ns,
                                 "aicpu_lifecycle", None)[1]
    counts["lifecycle_phases"] = sum(len(s.start) for s in life)
    host_streams = [s for s in rec.host_orchestrator if len(s.start)]
    uploads = [s for s in rec.host_uploads if len(s.start)]
    dev_orch = [s for s in rec.orchestrator if len(s.start)]
    submits = []
    if dev_orch and selection.view("orchestrator"):     # the AICPU's, on the device clock
        proc = view_process("Orchestrator")
        for s in dev_orch:
            submits.append(_phase_rows(builder, proc, f"Orch_{s.thread}", s.thread, s,
                                       dev.to_ns, "orchestrator", _submit_names))
    if (host_streams or uploads) and selection.view("orchestrator"):
        # the host's own submits and H2D uploads (host ns, exact): Simpler's "Host
        # Orchestrator" process, with its Host_<n> and H2D lanes; host work, so not "Device"
        proc = builder.process(f"{capture_plan.label}{SEP}Host Orchestrator", args={
            "alignment": {"status": "exact", "method": "host_monotonic_ns"}, "source": rec.path},
            capture=capture_plan, part="host")

        def host_ns(v: np.ndarray) -> np.ndarray:
            return v.astype(np.int64) + capture_plan.host.offset_ns

        for s in host_streams:
            submits.append(_phase_rows(builder, proc, f"Host_{s.thread}", 50 + s.thread, s,
                                       host_ns, "host_orchestrator", _submit_names))
        for s in uploads:
            moved += _phase_rows(builder, proc, "H2D", 99 + s.thread, s, host_ns, "host_h2d",
                                 None)[1]
    moved += sum(m for _, m in submits)
    counts["orchestrator_phases"] = sum(len(s.start) for s in dev_orch)
    counts["host_orchestrator_phases"] = sum(len(s.start) for s in host_streams)
    counts["host_device_uploads"] = sum(len(s.start) for s in uploads)
    n_cpu = len(rec.aicpu["dispatch_cycles"])
    counts["aicore_tasks"] = len(rows.task) if rows is not None else 0
    if rows is not None:
        rows.scheduler_proc = sched_proc
        rows.scheduler = [p for p, _ in scheduler]
        rows.submits = [p for p, _ in submits]
        if rows.worker_proc is not None and selection.view("worker"):
            moved += _worker_blocks(builder, rows, cap, selection.view("setup"))
        if rows.sched_proc is not None:
            counts["scheduler_view_overlaps"] = _scheduler_view_block(builder, rows)
        joined = int(rows.has_cpu.sum())
        counts["aicpu_joined"] = joined
        counts["aicpu_unmatched"] = unmatched = n_cpu - rows.used_cpu_rows
        if unmatched:
            section = "scheduler_tasks" if rec.layout == "today" else "aicpu_tasks"
            warnings.append(f"{rec.path}: {unmatched} {section} rows have no AICore row "
                            "(joined on core_id, reg_task_id)")
    counts["overlaps_moved"] = moved
    if moved:
        warnings.append(
            f"{rec.path}: {moved} overlapping slices of {capture_plan.label} were moved "
            "to '(overlap k)' sub-lanes"
        )
    line = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    if dev.containment is not None:
        how = f"{dev.status.upper()} {dev.bound} ({dev.how})"
    elif estimated:
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
    builder.sources.append({"path": rec.path, "kind": "swimlane_records", "rank": capture_plan.label,
                      "placement": dev.label,
                      "alignment": dev.mapping.method if not estimated
                      else f"{dev.status}: {dev.how}",
                      "estimated": estimated, "uncertainty_ns": dev.uncertainty_ns,
                      "details": dev.describe(), "host_offset_ns": capture_plan.host.offset_ns})
    return rows


# Scheduler phase roles, in both of Simpler's runtimes' vocabularies (its
# scheduler_thread_role): a thread doing only resolution work, on its own (a standalone
# resolve) or owning no core, is a resolution thread, not a scheduler.
_WORK_KINDS = frozenset({"complete", "dispatch", "release", "state_probe", "worksteal",
                         "refill", "early_dispatch", "drain", "graph_prepare"})
_RESOLUTION_KINDS = frozenset({"resolve", "resolve_standalone", "async_poll", "dummy"})
# Labels as Simpler's converter shows them: an AICore scheduler names its phases for the
# reader; an AICPU one shows the recorded name, the two below as their report labels.
_AICPU_DISPLAY = {"resolve_standalone": "resolve", "dummy_task": "dummy"}
# One task's marker, sampled as its completion begins: Simpler draws these on the AICPU's
# own worker lane (`AICPU_<n>`), not among the scheduler's phases they would cut across.
MARKER_KINDS = frozenset({"dummy_task", "predicated_skip"})
_AICORE_DISPLAY = {"complete": "Completion", "resolve": "Resolve", "state_probe": "StateProbe",
                   "dispatch": "Dispatch", "worksteal": "Worksteal", "refill": "Refill"}


def thread_role(s, assigned: set[int]) -> str:
    """"resolution" for a stream with resolution work and no scheduler work whose resolve
    stands alone (not inside a complete or dummy phase) or whose thread owns no core
    (`assigned`: the threads of `core_to_thread`); else "scheduler"."""
    seen = np.bincount(s.kind, minlength=len(s.kinds)) > 0
    present = {k for k, on in zip(s.kinds, seen.tolist()) if on}
    if not present & _RESOLUTION_KINDS or present & _WORK_KINDS:
        return "scheduler"
    if "resolve_standalone" in present or (assigned and s.thread not in assigned):
        return "resolution"
    # a resolve is nested when a complete/dummy phase starts at or before it and ends after
    kind_of = np.array(s.kinds, dtype=object)[s.kind] if len(s.kinds) else np.array([])
    parents = np.flatnonzero(np.isin(kind_of, ["complete", "dummy"]))
    res = np.flatnonzero(kind_of == "resolve")
    if not len(res):
        return "scheduler"
    if not len(parents):
        return "resolution"
    o = np.argsort(s.start[parents], kind="stable")
    p_start, p_end = s.start[parents][o], s.end[parents][o]
    k = np.searchsorted(p_start, s.start[res], "right") - 1
    nested = (k >= 0) & (s.end[res] < p_end[np.maximum(k, 0)])
    return "scheduler" if nested.all() else "resolution"


def _scheduler_lane(s, role: str) -> str:
    if s.producer == "aicore":
        worker = s.stream.get("worker_id")
        return f"Scheduler_{worker if worker is not None else s.thread}"
    return f"Sched_{s.thread}" + (" (resolution)" if role == "resolution" else "")


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


def _scheduler_names(s) -> tuple[list[str], np.ndarray]:
    """`kind(tasks_processed)`, or the kind alone; a phase naming a task (`task_id`:
    dummy_task, predicated_skip, graph_prepare, an AICore scheduler's task phases) is
    `kind(t5)`; an AICore scheduler's phase without a task is its display name alone
    (`Dispatch(t23)`, `Bootstrap`), as Simpler's converter labels them. One string per
    distinct label."""
    aicore = getattr(s, "producer", "aicpu") == "aicore"
    display = [(_AICORE_DISPLAY if aicore else _AICPU_DISPLAY).get(k, k) for k in s.kinds]
    n = len(s.kind)
    tid = s.arg("task_id")
    has_task = np.zeros(n, dtype=bool)
    if tid is not None and isinstance(tid.values, np.ndarray):
        has_task = np.ones(n, dtype=bool) if tid.present is None else tid.present.copy()
    tp = s.arg("tasks_processed")
    if aicore or tp is None or not isinstance(tp.values, np.ndarray):
        key = np.full(n, -1, dtype=np.int64)
    else:
        present = tp.present if tp.present is not None else np.ones(n, dtype=bool)
        key = np.where(present, tp.values, -1)
    kind = s.kind.astype(np.int64)
    plain = ~has_task
    if plain.all() and (key < 0).all() and display == list(s.kinds):
        return list(s.kinds), s.kind.astype(np.int32)
    k_p, v_p = kind[plain], key[plain]
    if _packable((k_p, 16), (v_p + 1, 47)):  # 800k rows: 1.57 -> 0.08 s CPU (row-wise)
        packed, inv = np.unique((k_p << 47) | (v_p + 1), return_inverse=True)
        pairs = np.column_stack((packed >> 47, (packed & ((1 << 47) - 1)) - 1))
    else:
        pairs, inv = np.unique(np.column_stack((k_p, v_p)), axis=0, return_inverse=True)
    names = [f"{display[k]}({v})" if v >= 0 else display[k] for k, v in pairs.tolist()]
    out = np.empty(n, dtype=np.int32)
    out[plain] = inv.reshape(-1)
    if has_task.any():
        t_pairs, t_inv = np.unique(np.column_stack((kind[has_task], tid.values[has_task])),
                                   axis=0, return_inverse=True)
        shown = task_displays(t_pairs[:, 1])
        out[has_task] = len(names) + t_inv.reshape(-1)
        names += [f"{display[k]}({d})" for k, d in zip(t_pairs[:, 0].tolist(), shown)]
    return names, out


def _submit_names(s) -> tuple[list[str], np.ndarray]:
    """`submit(t3)` for records with a task id, else the stream's kind; one string per
    distinct (kind, task id), made after `np.unique` (1M records, all distinct: 1.27 s CPU
    for one label per record interned by a dict -> 0.47 s, min of 3)."""
    tid = s.arg("task_id")
    if tid is None or not isinstance(tid.values, np.ndarray):
        return list(s.kinds), s.kind.astype(np.int32)
    present = tid.present if tid.present is not None else np.ones(len(s.kind), dtype=bool)
    task = np.where(present & (tid.values >= 0), tid.values, -1)
    keys, inv = np.unique(np.where(task >= 0, task, -1 - s.kind.astype(np.int64)),
                          return_inverse=True)
    ids = keys[keys >= 0]
    labels = [s.kinds[-1 - k] for k in keys[keys < 0].tolist()] + \
        [f"submit({d})" for d in task_displays(ids)]
    return labels, inv.reshape(-1).astype(np.int32)


def row_kernels(cap) -> tuple[np.ndarray, np.ndarray]:
    """Kernel id of each AICore row (-1: unknown) and whether its task is SPMD.

    deps.json's `kernel_ids` are (aic, aiv0, aiv1): AIC cores run the first. An AIV core is
    its cluster's AIV0 or AIV1 by its place among the AIV cores in core order (the runtime
    pairs them so: cluster c gets the 2c-th and (2c+1)-th), so a MIX task whose two AIV
    subtasks run different kernels names each block after its own; where only one AIV slot is
    set, every AIV block ran that one. (Simpler's converter names them all after AIV0's.)
    SPMD: `block_num > 1`; without deps.json, Simpler's rule: a task with several rows, all
    on one core type."""
    a = cap.records.aicore
    task = a["task_id"]
    n = len(task)
    core_is_aic = np.array([t == "aic" for t in cap.records.core_types], dtype=bool)
    is_aic = core_is_aic[a["core_id"]]
    aiv1_core = (np.cumsum(~core_is_aic) - 1) % 2 == 1      # odd place among the AIV cores
    deps = cap.deps
    if deps is not None and len(deps.task_id):
        order = np.argsort(deps.task_id, kind="stable")
        sorted_ids = deps.task_id[order]
        pos = np.minimum(np.searchsorted(sorted_ids, task), len(sorted_ids) - 1)
        found = sorted_ids[pos] == task
        k = deps.kernel_ids[order[pos]]
        own, other = ((np.where(aiv1_core[a["core_id"]], k[:, i], k[:, j]) for i, j in
                       ((2, 1), (1, 2))))
        aiv = np.where(own >= 0, own, other)
        func = np.where(found, np.where(is_aic, k[:, 0], aiv), -1)
        return np.where(func >= 0, func, -1), found & (deps.block_num[order[pos]] > 1)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    uniq, inv, cnt = np.unique(task, return_inverse=True, return_counts=True)
    types = np.zeros(len(uniq), dtype=np.int64)
    np.bitwise_or.at(types, inv.reshape(-1), np.where(is_aic, 1, 2))
    return np.full(n, -1, dtype=np.int64), ((cnt > 1) & (types != 3))[inv.reshape(-1)]


def device_rows(capture_plan: CapturePlan) -> DeviceRows | None:
    """The AICore rows with their AICPU row (joined on (core_id, reg_task_id), the last
    duplicate wins) and kernel, every time point on the reference axis."""
    cap, dev = capture_plan.capture, capture_plan.device
    rec = cap.records
    a, cpu = rec.aicore, rec.aicpu
    n = len(a["start_cycles"])
    if not n:
        return None
    start, end = dev.to_ns(a["start_cycles"]), dev.to_ns(a["end_cycles"])
    end = np.maximum(end, start)
    receive = np.minimum(dev.to_ns(a["start_cycles"] - a["receive_to_start_cycles"]), start)
    joined = _join_last(a["core_id"], a["reg_task_id"], cpu["core_id"], cpu["reg_task_id"])
    has = joined >= 0
    if has.any():
        jr = np.where(has, joined, 0)
        dispatch = dev.to_ns(cpu["dispatch_cycles"][jr])
        finish = np.maximum(dev.to_ns(cpu["finish_cycles"][jr]), dispatch)
    else:
        dispatch = finish = np.zeros(n, dtype=np.int64)
    func, spmd = row_kernels(cap)
    rows = DeviceRows(capture_plan.label, list(rec.core_types), rec.core_to_thread, a["task_id"],
                      a["core_id"], func, spmd, start, end, receive, has, dispatch, finish)
    used = np.zeros(len(cpu["core_id"]), dtype=bool)
    used[joined[has]] = True                  # 900k rows: 0.79 -> 0.003 s CPU (np.unique)
    rows.used_cpu_rows = int(np.count_nonzero(used))
    rows.names = cap.name_map.names if cap.name_map is not None else None
    rows.joined = joined
    return rows


def _task_labels(rows: DeviceRows, names_map) -> tuple[list[str], np.ndarray, list[str]]:
    """Simpler's label of each row (`GEMM(t3)`, `PA_spmd(r1t2)`, `task(t3)`) as (labels,
    index per row, the `t3` display of each label: a row's display is `displays[index]`),
    computed once per capture: the kernel part once per distinct (kernel, spmd), the rest
    per distinct task (1M tasks: 1.98 s CPU one call per task -> 0.63 s, min of 3)."""
    if rows.labels is not None:
        return rows.labels
    uniq, inv = _unique_rows(rows.task, rows.func + 1, rows.spmd.astype(np.int64))
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


def _packable(*cols_bits: tuple[np.ndarray, int]) -> bool:
    """Whether non-negative columns fit their bit widths (then one int64 key holds a row)."""
    return all(not len(c) or (int(c.min()) >= 0 and int(c.max()) < (1 << bits))
               for c, bits in cols_bits)


def _unique_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Unique (a, b, c) rows and each row's index into them. Packed into one int64 key when
    the values fit (a: 46 bits, b: 16, c: 1), else NumPy's row-wise unique. Measured (CPU,
    random rows): 100k 0.168 -> 0.013 s, 1M 3.05 -> 0.30 s."""
    if _packable((a, 46), (b, 16), (c, 1)):
        keys, inv = np.unique((a << 17) | (b << 1) | c, return_inverse=True)
        return np.column_stack((keys >> 17, (keys >> 1) & 0xFFFF, keys & 1)), inv.reshape(-1)
    uniq, inv = np.unique(np.column_stack((a, b, c)), axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def _join_last(core: np.ndarray, reg: np.ndarray, cpu_core: np.ndarray, cpu_reg: np.ndarray
               ) -> np.ndarray:
    """For each AICore row, the AICPU row with the same (core_id, reg_task_id), the last one
    when there are several; -1 when none. Sorted keys and a binary search; measured (CPU,
    random rows) against a dict of tuple keys: 100k 0.14 -> 0.04 s, 1M 1.59 -> 0.78 s."""
    n = len(core)
    if not len(cpu_core) or not n:
        return np.full(n, -1, dtype=np.int64)
    if _packable((core, 16), (reg, 47), (cpu_core, 16), (cpu_reg, 47)):
        left, right = (core << 47) | reg, (cpu_core << 47) | cpu_reg
    else:
        pairs = np.concatenate((np.column_stack((core, reg)), np.column_stack((cpu_core, cpu_reg))))
        _, codes = np.unique(pairs, axis=0, return_inverse=True)
        codes = codes.reshape(-1)
        left, right = codes[:n], codes[n:]
    rev = right[::-1]                       # the last duplicate wins
    keys, first_in_rev = np.unique(rev, return_index=True)
    rows = len(right) - 1 - first_in_rev
    pos = np.minimum(np.searchsorted(keys, left), len(keys) - 1)
    return np.where(keys[pos] == left, rows[pos], -1)
