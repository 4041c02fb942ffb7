"""Step 3 of a merge: build the `Timeline` from the placement plan.

Processes are created once, with their final names, ids and order: compile processes
first (real OS pid and thread ids, as in `trace.json`), then Simpler's host processes (a
run log's process is the compile process itself when it has the same pid on the same
host), then per capture (rank order) its device views. Where two sources bring the same
pid from different hosts, the later gets a fresh id and its name says so. Each kind of
source has its module (`layout_host`, `layout_device`, `layout_converted`); this one runs
them in order and adds what joins sources: a flow from each `kernel_codegen:<name>` stage to
every device task of that kernel, and the timeline's metadata.
"""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.timeline.model import FlowBlock, SliceBlock, Timeline
from pypto.compile_profiling.trace_merge.lay_out.builder import (
    CLOCK,
    KERNEL_CODEGEN_PREFIX,
    TimelineBuilder,
)
from pypto.compile_profiling.trace_merge.lay_out.device_counters import (
    kernel_summary,
    ready_queue_counters,
    utilisation_counters,
)
from pypto.compile_profiling.trace_merge.lay_out.device_flows import add_device_flows
from pypto.compile_profiling.trace_merge.lay_out.device_labels import kernel_name
from pypto.compile_profiling.trace_merge.lay_out.layout_converted import add_converted
from pypto.compile_profiling.trace_merge.lay_out.layout_device import add_capture
from pypto.compile_profiling.trace_merge.lay_out.layout_host import (
    add_compile_trace,
    add_host_blocks,
    add_host_phases,
    add_report,
    add_run_log,
)
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan, Plan
from pypto.compile_profiling.trace_merge.read.read_simpler import files_of
from pypto.compile_profiling.trace_merge.views import (
    ALL,
    DERIVED_VIEWS,
    DerivedViews,
    FlowKind,
    Selection,
    View,
)


def lay_out(plan: Plan, selection: Selection = ALL, derived: DerivedViews | None = None,
            kept_rows: dict | None = None) -> tuple[Timeline, list[str], list[str], list[str]]:
    """-> (timeline, summary lines, warnings, a line per kernel); `selection`: the device views
    and arrows to draw; `derived`: draws the views of `views.DERIVED_VIEWS` from the
    captures' rows; `kept_rows` (a dict) receives each drawn capture plan's `DeviceRows`,
    for an analysis that should not make them again."""
    builder = TimelineBuilder(plan)
    warnings = list(plan.warnings)
    for trace, host_clock in plan.traces:
        add_compile_trace(builder, trace, host_clock)
    for report_plan in plan.reports:
        add_report(builder, report_plan)
    for capture_plan in plan.captures:
        if capture_plan.capture.run_log is not None:
            add_run_log(builder, capture_plan, warnings)
        if capture_plan.capture.host_phases:
            add_host_phases(builder, capture_plan, warnings)
    moved = add_host_blocks(builder)

    if moved:
        warnings.append(f"{moved} host spans did not nest and were moved to sub-lanes")
    drawn = []
    for capture_plan in plan.captures:
        warnings.extend(capture_plan.capture.warnings)
        for other in capture_plan.capture.files.listed_only:
            builder.summary.append(f"{other}: not a timeline, listed only")
        if capture_plan.capture.records is not None:
            for conv in capture_plan.capture.files.converted:
                builder.summary.append(f"{conv}: Simpler's rendering of the records beside it, "
                                 "not read (the records are drawn)")
        if capture_plan.capture.records is not None:
            rows = _add_device_views(builder, capture_plan, selection, warnings)
            if rows is not None:
                drawn.append((capture_plan, rows))
        elif capture_plan.converted is not None:
            for conv in capture_plan.capture.converted:
                add_converted(builder, capture_plan, conv, warnings)
        if capture_plan.capture.records is None and not capture_plan.capture.converted and (
                capture_plan.capture.deps is not None or capture_plan.capture.name_map is not None):
            warnings.append(f"{capture_plan.capture.files.directory}: deps.json / name map without "
                            "swimlane records: nothing to draw them on")
    if derived is not None and any(selection.view(v) for v in DERIVED_VIEWS):
        derived(builder, plan, drawn, selection, warnings)
    if kept_rows is not None:
        kept_rows.update(drawn)
    n_stages, n_flows = (_kernel_codegen_flows(builder) if selection.flow(FlowKind.KERNEL_CODEGEN)
                         else (0, 0))
    made = {p: n for n, p in enumerate(builder.order)}   # a Process hashes as itself
    for n, p in enumerate(sorted(builder.order, key=lambda p: builder.flow_key(p, made[p]))):
        p.sort_index = n
    captures = _captures(builder, plan.captures, {capture_plan: {
        f: kernel_name(f, rows.names) for f in np.unique(rows.func).tolist() if f >= 0}
        for capture_plan, rows in drawn})
    warnings = list(dict.fromkeys(warnings))
    builder.tl.metadata.update({
        "clock": CLOCK,
        "producer": "pypto.compile_profiling.trace_merge",
        "reference_host": plan.reference_host,
        "sources": builder.sources,
        "alignment": {m["path"]: m["alignment"] for m in builder.sources},
        "estimated": any(m.get("estimated") for m in builder.sources),
        "kernel_codegen_flows": n_flows,
        "captures": captures,
        "warnings": warnings,
    })
    if plan.reference_anchor is not None:
        builder.tl.metadata["reference_clock_anchor"] = {
            "monotonic_ns": plan.reference_anchor.mono_ns,
            "wall_ns": plan.reference_anchor.wall_ns,
        }
    if n_flows:
        builder.summary.append(f"linked {n_stages} kernel_codegen stage(s) to their kernels' "
                               f"{n_flows} device task(s)")
    return builder.tl, builder.summary, warnings, builder.kernel_lines


def _captures(builder: TimelineBuilder, plans: list[CapturePlan],
              kernels: dict[int, dict[int, str]]) -> list[dict]:
    """One entry per capture leaf (its rank, device, alignment and files, the names of its
    kernels by id), and `Process.rank` set on the processes drawn from its files, so that
    exporters (the Parquet tables) can tell which rank a row belongs to."""
    out = []
    by_source: dict[str, int] = {}
    for n, capture_plan in enumerate(plans):
        files = capture_plan.capture.files
        clock = capture_plan.device or capture_plan.converted
        entry = {"capture": n, "label": capture_plan.label, "rank": files.rank,
                 "device": files.dispatch, "directory": files.directory,
                 "files": files_of(files)}
        if clock is not None:
            entry.update(alignment=clock.status, method=clock.describe().get("method"),
                         uncertainty_ns=None if clock.uncertainty_ns is None
                         else round(clock.uncertainty_ns), clock_freq_hz=clock.freq_hz)
        entry["kernels"] = {str(k): v for k, v in kernels.get(capture_plan, {}).items()}
        out.append(entry)
        for path in entry["files"]:
            by_source.setdefault(path, n)
    for process in builder.tl.processes:
        source = process.args.get("source")
        n = by_source.get(source) if isinstance(source, str) else None
        if n is not None:
            process.rank = plans[n].capture.files.rank
    return out


def _add_device_views(
    builder: TimelineBuilder, capture_plan, selection: Selection, warnings: list[str]
):
    """A capture's views, then its arrows and counters, and its per-kernel totals; -> its
    rows (None without AICore rows)."""
    rows = add_capture(builder, capture_plan, selection, warnings)
    if rows is None:
        return None
    flows, drawn, unbound = add_device_flows(rows, capture_plan.capture.deps, selection)
    counts = {**drawn, **{f"{k}_unbound": v for k, v in unbound.items()}}
    builder.tl.flows.extend(flows)
    extra: dict[str, int] = {}
    if selection.view(View.READY_QUEUE) and rows.scheduler_proc is not None:
        queue = ready_queue_counters(rows, rows.scheduler_proc)
        builder.tl.counters.extend(queue)
        if queue:
            extra["ready_queue_samples"] = sum(len(c.ts_ns) for c in queue)
    if selection.view(View.UTILISATION) and rows.worker_proc is not None:
        busy, width = utilisation_counters(rows, rows.worker_proc)
        builder.tl.counters.extend(busy)
        if busy:
            extra["utilisation_counters"] = len(busy)
            rows.worker_proc.args["utilisation_bin_ns"] = width
    shown = {**{f"{k}_flows": v for k, v in counts.items()}, **extra}
    if shown:
        builder.summary.append(
            f"{capture_plan.capture.records.path}: capture {capture_plan.label}: "
            + ", ".join(f"{v} {k.replace('-', '_')}" for k, v in shown.items() if v)
        )
    for kind, n in unbound.items():
        warnings.append(f"{capture_plan.capture.records.path}: {n} {kind} arrows have no scheduler "
                        "phase to bind to (not drawn)")
    brief, lines, table = kernel_summary(capture_plan.capture, rows)
    if table:
        builder.summary.append(brief)
    builder.kernel_lines.extend(lines)
    builder.sources[-1]["kernels"] = table
    builder.sources[-1]["flows"] = counts
    builder.sources[-1].update(tasks=brief.tasks, blocks=brief.blocks,
                               makespan_ns=brief.makespan_ns)
    return rows


def _kernel_codegen_flows(builder: TimelineBuilder) -> tuple[int, int]:
    """An arrow from a kernel's `kernel_codegen:<name>` stage (the last one that started
    before the task, else the first) to every task of that kernel (to its earliest block,
    for a task on several cores) -> (stages linked, arrows)."""
    rows = builder.host_rows
    by_kernel: dict[str, list[tuple[int, int]]] = {}
    for i in builder.codegen_rows:
        by_kernel.setdefault(rows.name[i][len(KERNEL_CODEGEN_PREFIX):], []).append(
            (rows.start[i], i))
    groups: dict[tuple[int, int], tuple[SliceBlock, SliceBlock, list, list]] = {}
    linked: set[int] = set()
    for kname, block, task_rows in builder.kernel_tasks:
        cands = sorted(by_kernel.get(kname, ()))
        if not cands:
            continue
        starts = np.array([c[0] for c in cands], dtype=np.int64)
        k = np.maximum(np.searchsorted(starts, block.start_ns[task_rows], side="right") - 1, 0)
        for c in np.unique(k).tolist():
            src_block, src_row = builder.host_index[cands[c][1]]
            linked.add(cands[c][1])
            group = groups.setdefault((src_block, block), (src_block, block, [], []))
            dst = task_rows[k == c]
            group[2].append(np.full(len(dst), src_row, dtype=np.int64))
            group[3].append(dst)
    for src_block, dst_block, src_rows, dst_rows in groups.values():
        builder.tl.flows.append(FlowBlock("kernel_codegen→task", "kernel_codegen", src_block,
                                          np.concatenate(src_rows), dst_block,
                                          np.concatenate(dst_rows).astype(np.int64)))
    return len(linked), sum(len(r) for g in groups.values() for r in g[2])
