"""Lay out the host-clock sources: our compile traces (real pid and native tids), a
`pipeline_profile.json` (durations only, laid end to end), Simpler run logs (`[STRACE]`
host spans on their real pid/tid, joining the compile process of the same run; `clk=dev`
spans on a device-clock lane of that run) and Simpler's host phase records. Their rows are
collected first and nested per thread across sources (`add_host_blocks`)."""

from __future__ import annotations

import os

import numpy as np

from pypto.compile_profiling.timeline.model import SliceBlock, Track, intern
from pypto.compile_profiling.trace_merge.kinds import SourceKind
from pypto.compile_profiling.trace_merge.lay_out.builder import (
    CLOCK,
    KERNEL_CODEGEN_PREFIX,
    TimelineBuilder,
)
from pypto.compile_profiling.trace_merge.lay_out.lanes import sublanes
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan, HostClock
from pypto.compile_profiling.trace_merge.read.read_inputs import CompileTrace


def add_compile_trace(builder: TimelineBuilder, trace: CompileTrace, host_clock: HostClock) -> None:
    # every pid any event names (a thread_name alone makes a process, as in trace.json)
    pids = sorted(set(trace.pid) | set(trace.process_names) | {p for p, _ in trace.thread_names},
                  key=lambda p: (trace.process_sort.get(p, 1 << 30), p))
    procs = {}
    for pid in pids:
        args = {"os_pid": pid, "source": trace.path, "clock": CLOCK, "alignment": host_clock.how}
        if trace.host:
            args["host"] = trace.host
        procs[pid] = builder.process(
            trace.process_names.get(pid, f"PyPTO process {pid}"),
            os_pid=pid,
            host=trace.host,
            args=args,
        )
    keys = sorted(set(zip(trace.pid, trace.tid)) | set(trace.thread_names),
                  key=lambda k: (trace.thread_sort.get(k, 1 << 30), k))
    # `otherData.lanes`: tids the profiler gave to stages that interleave on one thread
    # (asyncio tasks); they are lanes of that thread's process, not OS threads
    lanes = trace.other.get("lanes") if isinstance(trace.other.get("lanes"), dict) else {}
    tracks = {}
    for n, k in enumerate(keys):
        name, sort = trace.thread_names.get(k, f"thread {k[1]}"), trace.thread_sort.get(k, n)
        tracks[k] = (builder.lane(procs[k[0]], name, sort) if str(k[1]) in lanes
                     else builder.thread(procs[k[0]], k[1], name, sort))
    rows, off = builder.host_rows, host_clock.offset_ns
    for i in range(len(trace.name)):
        if trace.name[i].startswith(KERNEL_CODEGEN_PREFIX):
            builder.codegen_rows.append(len(rows.start))
        rows.add(
            tracks[(trace.pid[i], trace.tid[i])],
            trace.start_ns[i] + off,
            trace.end_ns[i] + off,
            trace.name[i],
            trace.cat[i],
            trace.args[i],
        )
    builder.summary.append(f"{trace.path}: compile trace, {len(trace.name)} slices in {len(procs)} "
                     f"process(es); {host_clock.how}")
    source = {"path": trace.path, "kind": SourceKind.COMPILE_TRACE, "alignment": host_clock.how,
              "offset_ns": off}
    total = trace.other.get("total_seconds")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        source["total_seconds"] = total       # the profiled span: `show` reads it back
    builder.sources.append(source)


def add_report(builder: TimelineBuilder, report_plan) -> None:
    proc = builder.process("PyPTO compile (pipeline_profile.json, estimated)", estimated=True,
                     args={"source": report_plan.report.path, "estimated": True,
                           "alignment": f"estimated: durations only, stages laid end to end; "
                                        f"{report_plan.how}"})
    track = builder.lane(proc, "stages", 0)
    rows = builder.host_rows
    n0 = len(rows.start)
    stack = [(iter(report_plan.report.stages), report_plan.origin_ns, None)]
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
            builder.codegen_rows.append(len(rows.start))
        rows.add(track, round(t), round(t + dur), st.name, "compile",
                 {"seconds": st.seconds, "estimated": True})
        stack.append((iter(st.children), t, t + dur))
    builder.summary.append(f"{report_plan.report.path}: compile profile (durations only), "
                     f"{len(rows.start) - n0} stages; ESTIMATED, {report_plan.how}")
    builder.sources.append({"path": report_plan.report.path, "kind": SourceKind.PIPELINE_PROFILE,
                      "alignment": f"estimated: {report_plan.how}", "estimated": True})


_TASK_SLOT = ".device_wall.task_slot_"


def add_run_log(builder: TimelineBuilder, capture_plan: CapturePlan, warnings: list[str]) -> None:
    """[STRACE] host spans on their real pid/tid; each invocation's clk=dev spans on a
    device-clock lane of its process (its task-timing slots on a "task slots" lane beside
    it; placed by `place`: one lane per invocation when the process ran several), or left
    out with a warning when nothing places them. A process whose host logger dropped
    records ([HOSTLOG_DROPS]) is warned about and marked incomplete in the sources."""
    log, host_clock = capture_plan.capture.run_log, capture_plan.host
    rows = builder.host_rows
    added = dev = slots = 0
    placed = {(pid, inv): v for (path, pid, inv), v in builder.plan.wall_offsets.items()
              if path == log.path}
    runs_of: dict[int, int] = {}
    for pid, _ in placed:
        runs_of[pid] = runs_of.get(pid, 0) + 1
    dev_lanes: dict[tuple[int, int | None], Track] = {}
    labels: dict[str, None] = {}
    for sp in log.spans:
        args = {"pid": sp.pid, "tid": sp.tid, "depth": sp.depth, "log_line": sp.line}
        if sp.inv is not None:
            args["inv"] = sp.inv
        if sp.hid is not None:
            args["hid"] = sp.hid
        args.update(sp.attrs)
        proc = _simpler_host(builder, capture_plan, sp.pid, log.path)
        if sp.device_clock:
            where = placed.get((sp.pid, sp.inv))
            if where is None:
                continue
            offset, label = where
            several = runs_of[sp.pid] > 1
            lane = "task slots" if _TASK_SLOT in sp.name else "device clock"
            key = (proc.pid, sp.inv if several else None, lane)
            track = dev_lanes.get(key)
            if track is None:
                name = f"{lane} inv {sp.inv} ({label})" if several else f"{lane} ({label})"
                track = dev_lanes[key] = builder.lane(
                    proc, name, (1 << 20) + (1 if lane == "task slots" else 0))
            start = sp.ts_ns + offset
            args["device_clock_ts_ns"] = sp.ts_ns
            labels[label] = None
            dev += 1
            slots += lane == "task slots"
        else:
            track = builder.thread(proc, sp.tid, f"thread {sp.tid}", 0)
            start = sp.ts_ns + host_clock.offset_ns
            added += 1
        rows.add(track, start, start + sp.dur_ns, sp.name, "simpler_host", args)
    skipped = int(log.device_clock.sum()) - dev
    extra = (f", {dev - slots} clk=dev spans on the run's device-clock lane"
             + (f" and {slots} task slots on its task-slots lane" if slots else "")
             + f" ({'; '.join(labels)})"
             if dev else "")
    if skipped:
        warnings.append(
            f"{log.path}: {skipped} clk=dev spans left out (no device_wall span "
            "inside a host span to place them)"
        )
    builder.summary.append(f"{log.path}: run log, {added} [STRACE] host spans; {host_clock.how}{extra}")
    choice = capture_plan.log_choice
    if choice is not None:
        builder.summary.append(
            f"{log.path}: this capture's run log, of {len(choice.left_out) + 1} beside it "
            f"({choice.how}); not drawn: "
            + "; ".join(f"{os.path.basename(p)} ({why})" for p, why in choice.left_out))
    builder.sources.append(_run_log_source(log, host_clock, warnings))
    if log.clock_anchors:
        builder.tl.metadata.setdefault("simpler_clock_anchors", []).extend(
            {"pid": a.pid, "mono_ns": a.mono_ns, "wall_ns": a.wall_ns, "source": log.path}
            for a in log.clock_anchors)


def _run_log_source(log, host_clock, warnings: list[str]) -> dict:
    """The run log's entry in the trace's sources; a process whose host logger dropped
    records is marked incomplete there and warned about."""
    source = {"path": log.path, "kind": SourceKind.RUN_LOG, "alignment": host_clock.how,
              "offset_ns": host_clock.offset_ns}
    if log.host_log_drops:
        source["host_log_dropped"] = {str(pid): {"total": d.total, **d.by_reason}
                                      for pid, d in sorted(log.host_log_drops.items())}
        source["host_side_incomplete"] = True
        for pid, d in sorted(log.host_log_drops.items()):
            why = ", ".join(f"{k}={v}" for k, v in d.by_reason.items() if v)
            warnings.append(f"{log.path}: process {pid}'s host logger dropped {d.total} "
                            f"records ([HOSTLOG_DROPS] line {d.line}{': ' + why if why else ''})"
                            ": its host side is incomplete (spans, and figures from them, "
                            "may be missing)")
    return source


def add_host_phases(builder: TimelineBuilder, capture_plan: CapturePlan, warnings: list[str]) -> None:
    """The host runtime's phases from `host_phase_records.jsonl` (args, arena_build,
    runtime_init, host_orch, ...: host CLOCK_MONOTONIC, like the run log's spans) on their
    real pid/tid, where they nest inside the run log's `chip.run.*` spans."""
    host_clock = capture_plan.host
    path = capture_plan.capture.files.host_phase_records
    rows = builder.host_rows
    n = 0
    for batch in capture_plan.capture.host_phases:
        proc = _simpler_host(builder, capture_plan, batch.pid, path)
        base = {"pid": batch.pid} if batch.inv is None else {"pid": batch.pid, "inv": batch.inv}
        for phase, start, end, tid, detail in zip(
                batch.phase, (batch.start_ns + host_clock.offset_ns).tolist(),
                (batch.end_ns + host_clock.offset_ns).tolist(), batch.tid.tolist(), batch.detail):
            tid = batch.pid if tid < 0 else tid
            rows.add(builder.thread(proc, tid, f"thread {tid}", 0), start, end, phase,
                     "simpler_host_phase", {**base, "tid": tid, "detail": detail}
                     if detail is not None else {**base, "tid": tid})
            n += 1
    dropped = sum(batch.dropped for batch in capture_plan.capture.host_phases)
    if dropped:
        warnings.append(f"{path}: Simpler dropped {dropped} host phase records (not drawn)")
    builder.summary.append(f"{path}: {n} host phases; {host_clock.how}")
    builder.sources.append({"path": path, "kind": SourceKind.HOST_PHASE_RECORDS, "alignment": host_clock.how,
                      "offset_ns": host_clock.offset_ns})


def _simpler_host(builder: TimelineBuilder, capture_plan: CapturePlan, os_pid: int, source: str):
    """The Simpler host process `os_pid` of this capture's run, the same one for its run log
    and its host phase records: on the host of the compile process with that pid (else the
    reference host) when the run's clock needed no offset, else on "<label> host". Its name
    says which captures (ranks) that process ran: "Simpler host r0d0 (pid 16547)"."""
    host = _host_of(builder, capture_plan, os_pid)
    if builder.plan.run_ranks is not None:    # a per-rank shard: the whole plan's
        ranks = builder.plan.run_ranks.get((run_host_key(capture_plan), os_pid), [])
    else:
        ranks = list(dict.fromkeys(
            cp.label for cp in builder.plan.captures
            if cp.run_pid == os_pid and (cp.capture.records is not None or cp.capture.converted)
            and _host_of(builder, cp, os_pid) == host))
    args = {"os_pid": os_pid, "source": source, "alignment": capture_plan.host.how}
    name = "Simpler host"
    if ranks:
        args["ranks"] = ranks
        name += " " + ", ".join(ranks)
    return builder.process(f"{name} (pid {os_pid})", os_pid=os_pid, host=host, args=args)


def run_host_key(capture_plan: CapturePlan) -> str:
    """Which host a capture's Simpler process ran on, as far as pids must be told apart:
    a run log moved by wall-clock anchors is its own host (as `_host_of` draws it), the
    rest share the reference host. Keys `Plan.run_ranks` with the pid."""
    return f"{capture_plan.label} host" if capture_plan.host.offset_ns else ""


def _host_of(builder: TimelineBuilder, capture_plan: CapturePlan, os_pid: int) -> str | None:
    """The host a capture's Simpler process `os_pid` is drawn on (see `_simpler_host`)."""
    return run_host_key(capture_plan) or _compile_host(builder, os_pid)


def _compile_host(builder: TimelineBuilder, os_pid: int) -> str | None:
    """The host of a compile process with this pid (a run log of the same run, same host)."""
    for host, pid in builder.host_procs:
        if pid == os_pid:
            return host
    return builder.plan.reference_host


def add_host_blocks(builder: TimelineBuilder) -> int:
    """Add all host-clock rows as blocks (one per category), nested per thread; return how
    many rows went to an overlap sub-lane."""
    rows = builder.host_rows
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
        k = track_ids.get(tr)
        if k is None:
            k = track_ids[tr] = len(tracks)
            tracks.append(tr)
        tix[i] = k
    moved = 0
    overflow: dict[tuple[int, int], int] = {}   # (track, sub-lane) -> index in `tracks`
    for k, tr in enumerate(list(tracks)):
        sel = np.flatnonzero(tix == k)
        lane = sublanes(start[sel], end[sel], allow_nesting=True)
        for j in np.flatnonzero(lane):
            key = (k, int(lane[j]))
            sub = overflow.get(key)
            if sub is None:
                sub = overflow[key] = len(tracks)
                tracks.append(builder.lane(tr.process, f"{tr.name} (overlap {lane[j]})",
                                     tr.sort_index * 100 + int(lane[j])))
            tix[sel[j]] = sub
            moved += 1
    blocks: dict[str, list[int]] = {}
    for i, cat in enumerate(rows.cat):
        blocks.setdefault(cat, []).append(i)
    for cat, idx in blocks.items():
        sel = np.array(idx, dtype=np.int64)
        names, name_ix = intern([rows.name[i] for i in idx])
        block = SliceBlock(cat, tracks, tix[sel], start[sel], end[sel] - start[sel], names,
                           name_ix, [], [rows.args[i] for i in idx])
        builder.tl.blocks.append(block)
        for r, i in enumerate(idx):
            builder.host_index[i] = (block, r)
    return moved
