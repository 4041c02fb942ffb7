"""Step 3 of a merge: build the `Timeline` from the read inputs and the placement plan.

Processes are created once, with their final names, ids and order: compile processes
first (real OS pid and thread ids, as in `trace.json`), then Simpler's host processes (a
run log's process is the compile process itself when it has the same pid on the same
host), then per capture (rank order) "Device <label> · AICore", "· AICPU scheduler",
"· Orchestrator". Where two sources bring the same pid from different hosts, the later
gets a fresh id and its name says so. Device streams go from the readers' columns to
`SliceBlock` columns; flows are `FlowBlock`s (one kind each): deps.json edges between the
first slice of each task, and one from each `kernel_codegen:<name>` stage to the first
device task of that kernel.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.trace_merge.lanes import sublanes
from pypto.compile_profiling.trace_merge.place import (
    CapturePlan,
    DeviceClock,
    HostClock,
    Plan,
    fmt_ns,
)
from pypto.compile_profiling.trace_merge.read_inputs import CompileTrace
from pypto.compile_profiling.trace_merge.timeline import (
    ArgColumn,
    FlowBlock,
    Process,
    SliceBlock,
    Timeline,
    Track,
)

SEP = " · "
KERNEL_CODEGEN_PREFIX = "kernel_codegen:"
CLOCK = "CLOCK_MONOTONIC"


# --------------------------------------------------------------------------- labels

def task_display(task_id: int) -> str:
    """Simpler's task label: `t<local>` on ring 0, else `r<ring>t<local>`."""
    ring = (task_id >> 32) & 0xFF
    local = task_id & 0xFFFFFFFF
    return f"t{local}" if ring == 0 else f"r{ring}t{local}"


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


# --------------------------------------------------------------------------- ids and rows

class _Ids:
    """Process and thread ids: real ones where they are free, fresh ones never colliding
    with any real id of any source (all sources are read before layout)."""

    def __init__(self, real: set[int]):
        self.real = real
        self.taken: set[int] = set()
        self.next = 1

    def fresh(self) -> int:
        while self.next in self.real or self.next in self.taken:
            self.next += 1
        self.taken.add(self.next)
        return self.next

    def claim(self, real_id: int) -> int | None:
        """`real_id` if no other process/thread has it yet, else None."""
        if real_id in self.taken:
            return None
        self.taken.add(real_id)
        return real_id


@dataclass(slots=True)
class _HostRows:
    """Slices bound for real threads, collected from every host-clock source, so that
    nesting is checked across sources (a run log's spans on the compile thread)."""

    track: list[Track] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    args: list[dict | None] = field(default_factory=list)
    source: list[tuple] = field(default_factory=list)   # (source key, index) for flows


class _Builder:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.tl = Timeline()
        real: set[int] = set()
        for ct, _ in plan.traces:
            real.update(ct.pid)
            real.update(ct.tid)
        for cp in plan.captures:
            if cp.capture.run_log is not None:
                for sp in cp.capture.run_log.spans:
                    real.update((sp.pid, sp.tid))
        self.ids = _Ids(real)
        self.host_rows = _HostRows()
        self.host_procs: dict[tuple[str | None, int], Process] = {}   # (host, os pid)
        self.threads: dict[tuple[int, int], Track] = {}               # (process pid, os tid)
        self.summary: list[str] = []
        self.sources: list[dict] = []
        self.codegen_rows: list[int] = []          # host rows of kernel_codegen:* stages
        self.host_index: dict[int, tuple[SliceBlock, int]] = {}   # host row -> block, row
        self.first_task: list[tuple[str, SliceBlock, int, int]] = []  # kernel, block, row, ts
        self.order: list[Process] = []

    # ---- processes and threads
    def process(self, name: str, *, os_pid: int | None = None, host: str | None = None,
                args: dict | None = None, estimated: bool = False) -> Process:
        if os_pid is not None:
            key = (host, os_pid)
            proc = self.host_procs.get(key)
            if proc is not None:
                return proc
            pid = self.ids.claim(os_pid)
            if pid is None:           # the same pid from another host: keep them apart
                pid = self.ids.fresh()
                name = f"{name} (pid {os_pid} on {host or 'another host'})"
            proc = Process(pid, name, 0, os_pid, dict(args or {}), estimated)
            self.host_procs[key] = proc
        else:
            proc = Process(self.ids.fresh(), name, 0, None, dict(args or {}), estimated)
        self.tl.processes.append(proc)
        self.order.append(proc)
        return proc

    def thread(self, proc: Process, os_tid: int, name: str, sort_index: int) -> Track:
        key = (proc.pid, os_tid)
        tr = self.threads.get(key)
        if tr is None:
            tid = self.ids.claim(os_tid)
            if tid is None:
                tid = self.ids.fresh()
            tr = self.threads[key] = Track(tid, proc, name, sort_index, os_tid)
            self.tl.tracks.append(tr)
        return tr

    def lane(self, proc: Process, name: str, sort_index: int) -> Track:
        tr = Track(self.ids.fresh(), proc, name, sort_index, None)
        self.tl.tracks.append(tr)
        return tr


def lay_out(plan: Plan) -> tuple[Timeline, list[str], list[str]]:
    """-> (timeline, summary lines, warnings)."""
    b = _Builder(plan)
    warnings = list(plan.warnings)
    for ct, hc in plan.traces:
        _add_compile_trace(b, ct, hc)
    for rp in plan.reports:
        _add_report(b, rp)
    for cp in plan.captures:
        if cp.capture.run_log is not None:
            _add_run_log(b, cp, warnings)
    moved = _host_block(b)
    if moved:
        warnings.append(f"{moved} host spans did not nest and were moved to sub-lanes")
    for cp in plan.captures:
        warnings.extend(cp.capture.warnings)
        for other in cp.capture.files.listed_only:
            b.summary.append(f"{other}: not a timeline, listed only")
        if cp.capture.records is not None:
            _add_capture(b, cp, warnings)
        for conv in cp.capture.converted:
            _add_converted(b, cp, conv, warnings)
        if cp.capture.records is None and not cp.capture.converted and (
                cp.capture.deps is not None or cp.capture.name_map is not None):
            warnings.append(f"{cp.capture.files.directory}: deps.json / name map without "
                            "swimlane records: nothing to draw them on")
    n_flows = _kernel_codegen_flows(b)
    for n, p in enumerate(b.order):
        p.sort_index = n
    warnings = list(dict.fromkeys(warnings))
    b.tl.metadata.update({
        "clock": CLOCK,
        "producer": "pypto.compile_profiling.trace_merge",
        "reference_host": plan.reference_host,
        "sources": b.sources,
        "alignment": {m["path"]: m["alignment"] for m in b.sources},
        "estimated": any(m.get("estimated") for m in b.sources),
        "kernel_codegen_flows": n_flows,
        "warnings": warnings,
    })
    if plan.reference_anchor is not None:
        b.tl.metadata["reference_clock_anchor"] = {"monotonic_ns": plan.reference_anchor.mono_ns,
                                                   "wall_ns": plan.reference_anchor.wall_ns}
    if n_flows:
        b.summary.append(f"linked {n_flows} kernel_codegen stage(s) to their first device task")
    return b.tl, b.summary, warnings


# --------------------------------------------------------------------------- host sources

def _add_compile_trace(b: _Builder, ct: CompileTrace, hc: HostClock) -> None:
    pids = sorted(set(ct.pid) | set(ct.process_names),
                  key=lambda p: (ct.process_sort.get(p, 1 << 30), p))
    procs = {}
    for pid in pids:
        args = {"os_pid": pid, "source": ct.path, "clock": CLOCK, "alignment": hc.how}
        if ct.host:
            args["host"] = ct.host
        procs[pid] = b.process(ct.process_names.get(pid, f"PyPTO process {pid}"), os_pid=pid,
                               host=ct.host, args=args)
    keys = sorted(set(zip(ct.pid, ct.tid)) | set(ct.thread_names),
                  key=lambda k: (ct.thread_sort.get(k, 1 << 30), k))
    tracks = {k: b.thread(procs[k[0]], k[1], ct.thread_names.get(k, f"thread {k[1]}"),
                          ct.thread_sort.get(k, n)) for n, k in enumerate(keys)}
    rows, off = b.host_rows, hc.offset_ns
    for i in range(len(ct.name)):
        if ct.name[i].startswith(KERNEL_CODEGEN_PREFIX):
            b.codegen_rows.append(len(rows.start))
        rows.track.append(tracks[(ct.pid[i], ct.tid[i])])
        rows.start.append(ct.start_ns[i] + off)
        rows.end.append(ct.end_ns[i] + off)
        rows.name.append(ct.name[i])
        rows.cat.append(ct.cat[i])
        rows.args.append(ct.args[i])
    b.summary.append(f"{ct.path}: compile trace, {len(ct.name)} slices in {len(procs)} "
                     f"process(es); {hc.how}")
    b.sources.append({"path": ct.path, "kind": "compile_trace", "alignment": hc.how,
                      "offset_ns": off})


def _add_report(b: _Builder, rp) -> None:
    proc = b.process("PyPTO compile (pipeline_profile.json, estimated)", estimated=True,
                     args={"source": rp.report.path, "estimated": True,
                           "alignment": f"estimated: durations only, stages laid end to end; "
                                        f"{rp.how}"})
    track = b.lane(proc, "stages", 0)
    rows = b.host_rows
    n0 = len(rows.start)
    stack = [(iter(rp.report.stages), rp.origin_ns, None)]
    while stack:                        # children from their parent's start, end to end
        it, t, limit = stack[-1]
        st = next(it, None)
        if st is None:
            stack.pop()
            continue
        dur = st.seconds * 1e9
        if limit is not None:           # rounded child durations may add up past the parent
            t = min(t, limit)
            dur = min(dur, limit - t)
        stack[-1] = (it, t + dur, limit)
        if st.name.startswith(KERNEL_CODEGEN_PREFIX):
            b.codegen_rows.append(len(rows.start))
        rows.track.append(track)
        rows.start.append(round(t))
        rows.end.append(round(t + dur))
        rows.name.append(st.name)
        rows.cat.append("compile")
        rows.args.append({"seconds": st.seconds, "estimated": True})
        stack.append((iter(st.children), t, t + dur))
    b.summary.append(f"{rp.report.path}: compile profile (durations only), "
                     f"{len(rows.start) - n0} stages; ESTIMATED, {rp.how}")
    b.sources.append({"path": rp.report.path, "kind": "pipeline_profile",
                      "alignment": f"estimated: {rp.how}", "estimated": True})


def _add_run_log(b: _Builder, cp: CapturePlan, warnings: list[str]) -> None:
    """[STRACE] host spans on their real pid/tid; clk=dev spans on a device-clock lane of
    that run (placed by `place`), or left out with a warning when nothing places them."""
    log, hc = cp.capture.run_log, cp.host
    rows = b.host_rows
    host = None if hc.offset_ns == 0 else f"{cp.label} host"
    added = dev = 0
    dev_lanes: dict[int, Track] = {}
    for sp in log.spans:
        args = {"pid": sp.pid, "tid": sp.tid, "depth": sp.depth, "log_line": sp.line}
        if sp.inv is not None:
            args["inv"] = sp.inv
        if sp.hid is not None:
            args["hid"] = sp.hid
        args.update(sp.attrs)
        proc = b.process(f"Simpler host (pid {sp.pid})", os_pid=sp.pid,
                         host=host if host else _compile_host(b, sp.pid),
                         args={"os_pid": sp.pid, "source": log.path, "alignment": hc.how})
        if sp.device_clock:
            if cp.device_wall_offset_ns is None:
                continue
            track = dev_lanes.get(proc.pid)
            if track is None:
                track = dev_lanes[proc.pid] = b.lane(
                    proc, f"device clock ({_wall_label(cp)})", 1 << 20)
            start = sp.ts_ns + cp.device_wall_offset_ns
            args["device_clock_ts_ns"] = sp.ts_ns
            dev += 1
        else:
            track = b.thread(proc, sp.tid, f"thread {sp.tid}", 0)
            start = sp.ts_ns + hc.offset_ns
            added += 1
        rows.track.append(track)
        rows.start.append(start)
        rows.end.append(start + sp.dur_ns)
        rows.name.append(sp.name)
        rows.cat.append("simpler_host")
        rows.args.append(args)
    skipped = sum(1 for sp in log.spans if sp.device_clock) - dev
    extra = f", {dev} clk=dev spans on the run's device-clock lane ({_wall_label(cp)})" if dev \
        else ""
    if skipped:
        warnings.append(f"{log.path}: {skipped} clk=dev spans left out (no device_wall span "
                        "inside a host span to place them)")
    b.summary.append(f"{log.path}: run log, {added} [STRACE] host spans; {hc.how}{extra}")
    b.sources.append({"path": log.path, "kind": "run_log", "alignment": hc.how,
                      "offset_ns": hc.offset_ns})
    if log.clock_anchors:
        b.tl.metadata.setdefault("simpler_clock_anchors", []).extend(
            {"pid": a.pid, "mono_ns": a.mono_ns, "wall_ns": a.wall_ns, "source": log.path}
            for a in log.clock_anchors)


def _compile_host(b: _Builder, os_pid: int) -> str | None:
    """The host of a compile process with this pid (a run log of the same run, same host)."""
    for host, pid in b.host_procs:
        if pid == os_pid:
            return host
    return b.plan.reference_host


def _wall_label(cp: CapturePlan) -> str:
    dev = cp.device or cp.converted
    if dev is None:
        return "estimated: middle of its host span"
    return dev.label


def _host_block(b: _Builder) -> int:
    """All host-clock rows as blocks (one per category), nested per thread."""
    rows = b.host_rows
    n = len(rows.start)
    if not n:
        return 0
    start = np.array(rows.start, dtype=np.int64)
    end = np.array(rows.end, dtype=np.int64)
    end = np.maximum(end, start)
    track_ids = {}
    tracks: list[Track] = []
    tix = np.empty(n, dtype=np.int32)
    for i, tr in enumerate(rows.track):
        k = track_ids.get(id(tr))
        if k is None:
            k = track_ids[id(tr)] = len(tracks)
            tracks.append(tr)
        tix[i] = k
    moved = 0
    overflow: dict[tuple[int, int], Track] = {}
    for k, tr in enumerate(list(tracks)):
        sel = np.flatnonzero(tix == k)
        lane = sublanes(start[sel], end[sel], allow_nesting=True)
        for j in np.flatnonzero(lane):
            key = (k, int(lane[j]))
            sub = overflow.get(key)
            if sub is None:
                sub = overflow[key] = b.lane(tr.process, f"{tr.name} (overlap {lane[j]})",
                                             tr.sort_index * 100 + int(lane[j]))
                tracks.append(sub)
            tix[sel[j]] = tracks.index(sub)
            moved += 1
    blocks: dict[str, list[int]] = {}
    for i, cat in enumerate(rows.cat):
        blocks.setdefault(cat, []).append(i)
    for cat, idx in blocks.items():
        sel = np.array(idx, dtype=np.int64)
        names, name_ix = _intern([rows.name[i] for i in idx])
        block = SliceBlock(cat, tracks, tix[sel], start[sel], end[sel] - start[sel], names,
                           name_ix, [], [rows.args[i] for i in idx])
        b.tl.blocks.append(block)
        for r, i in enumerate(idx):
            b.host_index[i] = (block, r)
    return moved


def _intern(names: list[str]) -> tuple[list[str], np.ndarray]:
    table: dict[str, int] = {}
    ix = np.fromiter((table.setdefault(s, len(table)) for s in names), dtype=np.int32,
                     count=len(names))
    return list(table), ix


# --------------------------------------------------------------------------- device captures

def _device_args(cp: CapturePlan, dev: DeviceClock, source: str) -> dict:
    args = {"alignment": dev.describe(), "source": source}
    if cp.capture.dispatch_program is not None:
        args["program"] = cp.capture.dispatch_program.program
    if dev.status != "calibrated":
        args["estimated"] = True
    return args


def _add_capture(b: _Builder, cp: CapturePlan, warnings: list[str]) -> None:
    cap, dev = cp.capture, cp.device
    rec = cap.records
    estimated = dev.status != "calibrated"
    tag = f" ({dev.label})"
    args = _device_args(cp, dev, rec.path)
    args.update(chip_swimlane_level=rec.level, clock_freq_hz=rec.freq_hz)
    counts: dict[str, int] = {}
    if dev.mapping is not None:
        outside = _outside_window(rec, dev)
        counts["outside_anchor_window"] = outside
        if outside:
            args["timestamps_outside_anchor_window"] = outside
            warnings.append(f"{rec.path}: {outside} device timestamps lie outside the clock-"
                            "anchor window; they are extrapolated, not calibrated")
    aic_proc = b.process(f"Device {cp.label}{SEP}AICore{tag}", args=args, estimated=estimated)
    moved = 0
    if any(len(s.start) for s in rec.scheduler):
        proc = b.process(f"Device {cp.label}{SEP}AICPU scheduler{tag}", args=args,
                         estimated=estimated)
        for s in rec.scheduler:
            moved += _phase_block(b, proc, f"Sched_{s.thread}", s.thread, s, dev.to_ns,
                                  "scheduler", _scheduler_names)
    counts["scheduler_phases"] = sum(len(s.start) for s in rec.scheduler)
    host_streams = [s for s in rec.host_orchestrator if len(s.start)]
    uploads = rec.host_uploads if rec.host_uploads is not None and len(
        rec.host_uploads.start) else None
    dev_orch = [s for s in rec.orchestrator if len(s.start)]
    if dev_orch or host_streams or uploads is not None:
        oargs = dict(args) if dev_orch else {
            "alignment": {"status": "exact", "method": "host_monotonic_ns"}, "source": rec.path}
        proc = b.process(f"Device {cp.label}{SEP}Orchestrator{tag if dev_orch else ''}",
                         args=oargs, estimated=estimated and bool(dev_orch))

        def host_ns(v: np.ndarray) -> np.ndarray:
            return v.astype(np.int64) + cp.host.offset_ns

        for s in dev_orch:
            moved += _phase_block(b, proc, f"Orch_{s.thread}", s.thread, s, dev.to_ns,
                                  "orchestrator", _submit_names)
        for s in host_streams:
            moved += _phase_block(b, proc, f"Host_{s.thread}", 50 + s.thread, s, host_ns,
                                  "host_orchestrator", _submit_names)
        if uploads is not None:
            moved += _phase_block(b, proc, "H2D", 99, uploads, host_ns, "host_h2d", None)
    counts["orchestrator_phases"] = sum(len(s.start) for s in dev_orch)
    counts["host_orchestrator_phases"] = sum(len(s.start) for s in host_streams)
    counts["host_device_uploads"] = len(uploads.start) if uploads is not None else 0
    aic, joined, unmatched, aic_moved = _aicore_block(b, aic_proc, cp)
    moved += aic_moved
    counts.update(aicore_tasks=len(aic) if aic is not None else 0, aicpu_joined=joined,
                  aicpu_unmatched=unmatched)
    if unmatched:
        warnings.append(f"{rec.path}: {unmatched} aicpu_tasks rows have no AICore row "
                        "(joined on core_id, reg_task_id)")
    n_flows = missing = 0
    if aic is not None and cap.deps is not None and len(cap.deps.pred):
        n_flows, missing = _dependency_flows(b, aic, cap.deps)
    counts["dependency_flows"] = n_flows
    counts["dependency_edges_without_slices"] = missing
    counts["overlaps_moved"] = moved
    if moved:
        warnings.append(f"{rec.path}: {moved} overlapping slices of {cp.label} were moved "
                        "to '(overlap k)' sub-lanes")
    line = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    if estimated:
        how = f"ESTIMATED{' ±' + fmt_ns(dev.uncertainty_ns) if dev.uncertainty_ns is not None else ''} ({dev.how})"
    else:
        how = (f"calibrated by clock anchors ({dev.mapping.method}, uncertainty "
               f"±{fmt_ns(dev.uncertainty_ns)})")
    if cp.host.offset_ns:
        how += f"; {cp.host.how}"
    b.summary.append(f"{rec.path}: capture {cp.label}, level {rec.level}: {line}; {how}")
    b.sources.append({"path": rec.path, "kind": "swimlane_records", "rank": cp.label,
                      "alignment": dev.mapping.method if not estimated
                      else f"estimated: {dev.how}",
                      "estimated": estimated, "uncertainty_ns": dev.uncertainty_ns,
                      "details": dev.describe(), "host_offset_ns": cp.host.offset_ns})


def _outside_window(rec, dev: DeviceClock) -> int:
    lo, hi = dev.mapping.window_cycles
    n = 0
    cols = [rec.aicore["start_cycles"], rec.aicore["end_cycles"],
            rec.aicpu["dispatch_cycles"], rec.aicpu["finish_cycles"]]
    for s in (*rec.scheduler, *rec.orchestrator):
        cols += [s.start, s.end]
    for c in cols:
        if len(c):
            n += int(((c < lo) | (c > hi)).sum())
    return n


def _phase_block(b: _Builder, proc: Process, lane: str, sort_index: int, s, to_ns, cat: str,
                 namer) -> int:
    start, end = to_ns(s.start), to_ns(s.end)
    end = np.maximum(end, start)
    sub = sublanes(start, end, allow_nesting=True)
    n_lanes = int(sub.max()) + 1 if len(sub) else 1
    tracks = [b.lane(proc, lane if k == 0 else f"{lane} (overlap {k})", sort_index * 100 + k)
              for k in range(n_lanes)]
    names, name_ix = namer(s) if namer else (list(s.kinds), s.kind.astype(np.int32))
    kind_col = ArgColumn("kind", [s.kinds[k] for k in s.kind.tolist()]) if namer is not None \
        else None
    args = [c for c in (kind_col,) if c is not None]
    args += [ArgColumn("start_cycles" if to_ns is not None and cat not in (
        "host_orchestrator", "host_h2d") else "start_ns", s.start),
             ArgColumn("end_cycles" if cat not in ("host_orchestrator", "host_h2d")
                       else "end_ns", s.end)]
    args += list(s.fields)
    b.tl.blocks.append(SliceBlock(cat, tracks, sub, start, end - start, names, name_ix, args))
    return int(np.count_nonzero(sub))


def _scheduler_names(s) -> tuple[list[str], np.ndarray]:
    """`kind(tasks_processed)`, or the kind alone; one string per distinct label."""
    tp = next((c for c in s.fields if c.key == "tasks_processed"), None)
    if tp is None or not isinstance(tp.values, np.ndarray):
        return list(s.kinds), s.kind.astype(np.int32)
    present = tp.present if tp.present is not None else np.ones(len(s.kind), dtype=bool)
    key = np.where(present, tp.values, -1)
    pairs, inv = np.unique(np.column_stack((s.kind.astype(np.int64), key)), axis=0,
                           return_inverse=True)
    names = [f"{s.kinds[k]}({v})" if v >= 0 else s.kinds[k] for k, v in pairs.tolist()]
    return names, inv.reshape(-1).astype(np.int32)


def _submit_names(s) -> tuple[list[str], np.ndarray]:
    """`submit(t3)` for records with a task id, else the stream's kind."""
    tid = next((c for c in s.fields if c.key == "task_id"), None)
    if tid is None or not isinstance(tid.values, np.ndarray):
        return list(s.kinds), s.kind.astype(np.int32)
    present = tid.present if tid.present is not None else np.ones(len(s.kind), dtype=bool)
    vals = tid.values.tolist()
    kinds = s.kind.tolist()
    labels = [f"submit({task_display(v)})" if ok and v >= 0 else s.kinds[k]
              for v, ok, k in zip(vals, present.tolist(), kinds)]
    return _intern(labels)


def _aicore_block(b: _Builder, proc: Process, cp: CapturePlan):
    """The AICore slices (kernel start to end), one lane per core; -> (block, joined AICPU
    rows, unmatched AICPU rows, rows moved to overlap lanes)."""
    cap, dev = cp.capture, cp.device
    rec = cap.records
    a = rec.aicore
    n = len(a["start_cycles"])
    cpu = rec.aicpu
    n_cpu = len(cpu["dispatch_cycles"])
    if not n:
        return None, 0, n_cpu, 0
    core = a["core_id"]
    task = a["task_id"]
    start, end = dev.to_ns(a["start_cycles"]), dev.to_ns(a["end_cycles"])
    end = np.maximum(end, start)
    core_types = list(rec.core_types)
    ct_arr = np.array(core_types, dtype=object)
    row_ct = ct_arr[core]
    is_aic = row_ct == "aic"

    # lanes: one per core (AIC_<id>/AIV_<id>), overlaps to sub-lanes
    tracks: list[Track] = []
    tix = np.empty(n, dtype=np.int32)
    moved = 0
    for c in np.unique(core).tolist():
        sel = np.flatnonzero(core == c)
        sub = sublanes(start[sel], end[sel], allow_nesting=False)
        base = f"{core_types[c].upper()}_{c}"
        first = len(tracks)
        for k in range(int(sub.max()) + 1):
            tracks.append(b.lane(proc, base if k == 0 else f"{base} (overlap {k})",
                                 c * 100 + k))
        tix[sel] = first + sub
        moved += int(np.count_nonzero(sub))

    # kernel of each row: deps.json kernel_ids (aic, aiv0, aiv1) by core type
    func = np.full(n, -1, dtype=np.int64)
    spmd = np.zeros(n, dtype=bool)
    deps = cap.deps
    if deps is not None and len(deps.task_id):
        order = np.argsort(deps.task_id, kind="stable")
        sorted_ids = deps.task_id[order]
        pos = np.searchsorted(sorted_ids, task)
        pos = np.minimum(pos, len(sorted_ids) - 1)
        found = sorted_ids[pos] == task
        k = deps.kernel_ids[order[pos]]
        aiv = np.where(k[:, 1] >= 0, k[:, 1], k[:, 2])
        func = np.where(found, np.where(is_aic, k[:, 0], aiv), -1)
        func = np.where(func >= 0, func, -1)
        spmd = found & (deps.block_num[order[pos]] > 1)
    else:                           # Simpler's rule without deps: several rows, one core type
        uniq, inv, cnt = np.unique(task, return_inverse=True, return_counts=True)
        types = np.zeros(len(uniq), dtype=np.int64)
        np.bitwise_or.at(types, inv, np.where(is_aic, 1, 2))
        spmd = ((cnt > 1) & (types != 3))[inv]
    names_map = cap.name_map.names if cap.name_map is not None else None
    keys = np.column_stack((task, func, spmd.astype(np.int64)))
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    labels, displays, knames = [], [], []
    for t, f, sp in uniq.tolist():
        disp = task_display(t)
        kn = kernel_name(f, names_map)
        displays.append(disp)
        knames.append(kn)
        if kn is None:
            labels.append(f"task({disp})")
        else:
            labels.append(f"{kn}{'_spmd' if sp and 'spmd' not in kn.lower() else ''}({disp})")

    # AICPU rows join on (core_id, reg_task_id); the last duplicate wins
    joined_row = np.full(n, -1, dtype=np.int64)
    if n_cpu:
        index = {}
        for j, key in enumerate(zip(cpu["core_id"].tolist(), cpu["reg_task_id"].tolist())):
            index[key] = j
        joined_row = np.fromiter(
            (index.get(key, -1) for key in zip(core.tolist(), a["reg_task_id"].tolist())),
            dtype=np.int64, count=n)
    has = joined_row >= 0
    jr = np.where(has, joined_row, 0)
    disp_c = cpu["dispatch_cycles"][jr] if n_cpu else np.zeros(n, dtype=np.int64)
    fin_c = cpu["finish_cycles"][jr] if n_cpu else np.zeros(n, dtype=np.int64)
    matched = int(has.sum())
    used = len(np.unique(joined_row[has])) if matched else 0
    disp_arr = np.array(displays, dtype=object)
    args = [
        ArgColumn("task_id", task),
        ArgColumn("task", disp_arr[inv].tolist()),
        ArgColumn("core_id", core),
        ArgColumn("core_type", row_ct.tolist()),
        ArgColumn("kernel_id", func),
        ArgColumn("reg_task_id", a["reg_task_id"]),
        ArgColumn("start_cycles", a["start_cycles"]),
        ArgColumn("end_cycles", a["end_cycles"]),
        ArgColumn("receive_to_start_cycles", a["receive_to_start_cycles"]),
        ArgColumn("dispatch_cycles", disp_c, has),
        ArgColumn("finish_cycles", fin_c, has),
        ArgColumn("dispatch_ts_ns", dev.to_ns(disp_c), has),
        ArgColumn("finish_ts_ns", dev.to_ns(fin_c), has),
    ]
    block = SliceBlock("aicore", tracks, tix, start, end - start, labels,
                       inv.astype(np.int32), args)
    b.tl.blocks.append(block)

    # first row of each kernel (for kernel_codegen flows)
    for f in np.unique(func[func >= 0]).tolist():
        rows = np.flatnonzero(func == f)
        r = int(rows[np.argmin(start[rows])])
        kn = kernel_name(f, names_map)
        b.first_task.append((kn, block, r, int(start[r])))
    return block, matched, n_cpu - used, moved


def _dependency_flows(b: _Builder, aic: SliceBlock, deps) -> tuple[int, int]:
    """deps.json edges between the first slice of each task."""
    task = aic.args[0].values
    order = np.lexsort((aic.start_ns, task))
    t_sorted = task[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = t_sorted[1:] != t_sorted[:-1]
    ids, rows = t_sorted[first], order[first]

    def lookup(x):
        pos = np.minimum(np.searchsorted(ids, x), len(ids) - 1)
        return np.where(ids[pos] == x, rows[pos], -1)

    src, dst = lookup(deps.pred), lookup(deps.succ)
    ok = (src >= 0) & (dst >= 0)
    if ok.any():
        b.tl.flows.append(FlowBlock("dependency", "dependency", aic, src[ok], aic, dst[ok]))
    return int(ok.sum()), int((~ok).sum())


def _kernel_codegen_flows(b: _Builder) -> int:
    """One arrow from each kernel's `kernel_codegen:<name>` stage (the last one that
    started before the task) to the first device task of that kernel."""
    rows = b.host_rows
    by_kernel: dict[str, list[tuple[int, int]]] = {}
    for i in b.codegen_rows:
        by_kernel.setdefault(rows.name[i][len(KERNEL_CODEGEN_PREFIX):], []).append(
            (rows.start[i], i))
    groups: dict[tuple[int, int], tuple[SliceBlock, SliceBlock, list[int], list[int]]] = {}
    for kname, block, r, ts in b.first_task:
        cands = sorted(by_kernel.get(kname, ()))
        if not cands:
            continue
        k = max(bisect.bisect_right([c[0] for c in cands], ts) - 1, 0)
        src_block, src_row = b.host_index[cands[k][1]]
        group = groups.setdefault((id(src_block), id(block)), (src_block, block, [], []))
        group[2].append(src_row)
        group[3].append(r)
    for src_block, dst_block, src_rows, dst_rows in groups.values():
        b.tl.flows.append(FlowBlock("kernel_codegen→first task", "kernel_codegen", src_block,
                                    np.array(src_rows, dtype=np.int64), dst_block,
                                    np.array(dst_rows, dtype=np.int64)))
    return sum(len(g[2]) for g in groups.values())


# --------------------------------------------------------------------------- converted traces

def _add_converted(b: _Builder, cp: CapturePlan, conv, warnings: list[str]) -> None:
    """Simpler's converted trace, ESTIMATED: each of its views (small fixed pids) becomes
    "Device <label> · Simpler <view> (estimated ±...)"; lanes, nesting and flows kept."""
    dev = cp.converted
    off = round(dev.offset_ns)
    tag = f" ({dev.label})"
    args = _device_args(cp, dev, conv.path)
    if conv.metadata:
        args["simpler_metadata"] = conv.metadata
    procs: dict[int, Process] = {}
    for pid in sorted({s.pid for s in conv.slices} | set(conv.process_names)):
        view = conv.process_names.get(pid) or f"view {pid}"
        procs[pid] = b.process(f"Device {cp.label}{SEP}Simpler {view}{tag}",
                               args=dict(args, simpler_pid=pid), estimated=True)
    by_lane: dict[tuple[int, int], list[int]] = {}
    for i, s in enumerate(conv.slices):
        by_lane.setdefault((s.pid, s.tid), []).append(i)
    tracks: list[Track] = []
    n = len(conv.slices)
    tix = np.empty(n, dtype=np.int32)
    start = np.array([s.start_ns for s in conv.slices], dtype=np.int64) + off
    end = np.array([s.end_ns for s in conv.slices], dtype=np.int64) + off
    moved = 0
    for key in sorted(by_lane):
        idx = np.array(by_lane[key], dtype=np.int64)
        name = conv.thread_names.get(key) or f"tid {key[1]}"
        sort = conv.thread_sort.get(key, key[1])
        sub = sublanes(start[idx], end[idx], allow_nesting=True)
        first = len(tracks)
        for k in range(int(sub.max()) + 1):
            tracks.append(b.lane(procs[key[0]], name if k == 0 else f"{name} (overlap {k})",
                                 sort * 100 + k))
        tix[idx] = first + sub
        moved += int(np.count_nonzero(sub))
    by_cat: dict[str, list[int]] = {}
    for i, s in enumerate(conv.slices):
        by_cat.setdefault(s.cat, []).append(i)
    where: dict[int, tuple[SliceBlock, int]] = {}
    for cat, idx in by_cat.items():
        sel = np.array(idx, dtype=np.int64)
        names, name_ix = _intern([conv.slices[i].name for i in idx])
        block = SliceBlock(cat, tracks, tix[sel], start[sel], end[sel] - start[sel], names,
                           name_ix, [], [conv.slices[i].args for i in idx])
        b.tl.blocks.append(block)
        for r, i in enumerate(idx):
            where[i] = (block, r)
    flows: dict[tuple, tuple[list, list, SliceBlock, SliceBlock]] = {}
    for fl in conv.flows:
        sb, sr_ = where[fl.src]
        db, dr = where[fl.dst]
        entry = flows.setdefault((fl.name, fl.cat, id(sb), id(db)), ([], [], sb, db))
        entry[0].append(sr_)
        entry[1].append(dr)
    for (name, cat, _, _), (srows, drows, sb, db) in flows.items():
        b.tl.flows.append(FlowBlock(name, cat or name, sb, np.array(srows, dtype=np.int64), db,
                                    np.array(drows, dtype=np.int64)))
    for ctr in conv.counters:
        from pypto.compile_profiling.trace_merge.timeline import CounterTrack

        b.tl.counters.append(CounterTrack(procs.get(ctr.pid) or next(iter(procs.values())),
                                          ctr.name, ctr.ts_ns + off, ctr.values))
    if moved:
        warnings.append(f"{conv.path}: {moved} slices did not nest and were moved to sub-lanes")
    if conv.unbound_flows:
        warnings.append(f"{conv.path}: {conv.unbound_flows} flow events could not be bound to "
                        "a slice")
    b.summary.append(f"{conv.path}: Simpler converted trace ({cp.label}), {n} slices, "
                     f"{len(conv.flows)} flows, {len(conv.counters)} counters; ESTIMATED "
                     f"({dev.label}: {dev.how})")
    b.sources.append({"path": conv.path, "kind": "merged_swimlane",
                      "alignment": f"estimated: {dev.how}", "estimated": True,
                      "uncertainty_ns": dev.uncertainty_ns})
