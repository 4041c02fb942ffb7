"""Measures derived from one capture's records: the shared ready queue's depth and each
core's busy fraction (counter tracks), and per-kernel totals (summary lines)."""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.timeline.model import CounterTrack, Process
from pypto.compile_profiling.trace_merge.lay_out.device_rows import DeviceRows
from pypto.compile_profiling.trace_merge.lay_out.kernel_totals import device_kernel_costs
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns

QUEUE_TYPES = ("AIC", "AIV", "MIX")
UTILISATION_BINS = 200          # about this many samples per core over the capture


SAMPLING_KINDS = ("complete", "dispatch")
RESOLUTION_SAMPLING_KINDS = ("resolve", "resolve_standalone", "async_poll", "dummy")


def ready_queue_counters(rows: DeviceRows, proc: Process) -> list[CounterTrack]:
    """`shared_ready_queue AIC/AIV/MIX`: the depth each `complete` and `dispatch` phase
    (and each phase of a resolution thread) saw when it ended (`shared_at_end`; other
    phases do not sample the queue: Simpler zero-fills theirs), all scheduler threads on
    one track per core type, since it is one global queue. The figures come from the
    records themselves (August) or from their `metrics` entries (today): the reader joins
    the two, so both layouts give the same samples."""
    ts, vals = [], []
    for p in rows.scheduler:
        col = p.columns.arg("shared_at_end")
        if col is None:
            continue
        depth, have = _queue_depths(col.values)
        if depth is None:
            continue
        sel = np.zeros(len(p.kind), dtype=bool)
        kinds = SAMPLING_KINDS + (RESOLUTION_SAMPLING_KINDS if p.role == "resolution" else ())
        for k in kinds:
            sel[p.rows_of_kind(k)] = True
        sel &= have
        if col.present is not None:
            sel &= col.present
        ts.append(p.end[sel])
        vals.append(depth[sel])
    if not ts or not sum(map(len, ts)):
        return []
    t, v = np.concatenate(ts), np.concatenate(vals)
    o = np.argsort(t, kind="stable")
    return [CounterTrack(proc, f"shared_ready_queue {name}", t[o], v[o, i].astype(np.int64),
                         "tasks") for i, name in enumerate(QUEUE_TYPES)]


def _queue_depths(values) -> tuple[np.ndarray | None, np.ndarray | bool]:
    """`shared_at_end` as (n, 3) int64 and which records have it: the (n, 3) column as it
    is, or a column of lists (some records lack it, or had another length and were
    dropped by the reader) with the records that hold three ints."""
    k = len(QUEUE_TYPES)
    if isinstance(values, np.ndarray):
        return (values, True) if values.ndim == 2 and values.shape[1] == k else (None, False)
    have = np.array([type(v) is list and len(v) == k for v in values], dtype=bool)
    if not have.any():
        return None, False
    depth = np.zeros((len(values), k), dtype=np.int64)
    depth[have] = [values[i] for i in np.flatnonzero(have).tolist()]
    return depth, have


def nice_bin_ns(span_ns: int, bins: int = UTILISATION_BINS) -> int:
    """A round bin width (1, 2 or 5 x 10^k ns) giving at most about `bins` bins."""
    raw = max(span_ns / bins, 1.0)
    k = 10 ** int(np.floor(np.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * k >= raw:
            return int(m * k)
    return int(10 * k)


def utilisation_counters(rows: DeviceRows, proc: Process) -> tuple[list[CounterTrack], int]:
    """`<core> busy`: per core, the fraction of each bin (a round width, about 200 bins over
    the capture) that a kernel ran on it; -> (counters, bin width ns). Exact: the busy time
    up to t is piecewise linear in t, so it is interpolated at the bin edges."""
    start, end = rows.start, rows.end
    if not len(start):
        return [], 0
    lo, hi = int(start.min()), int(end.max())
    width = nice_bin_ns(max(hi - lo, 1))
    first = lo - lo % width
    edges = np.arange(first, hi + width, width, dtype=np.int64)
    if edges[-1] < hi:
        edges = np.append(edges, edges[-1] + width)
    out = []
    for c in np.unique(rows.core).tolist():
        sel = rows.core == c
        s, e = _union(start[sel], end[sel])
        busy = np.concatenate(([0], np.cumsum(e - s)))       # busy time at each segment end
        points = np.empty(2 * len(s), dtype=np.int64)
        points[0::2], points[1::2] = s, e
        level = np.empty(2 * len(s), dtype=np.int64)
        level[0::2], level[1::2] = busy[:-1], busy[1:]
        acc = np.interp(edges, points, level)                # busy time up to each edge
        frac = np.round(np.diff(acc) / width, 4)
        ct = rows.core_types[c].upper() if c < len(rows.core_types) else "CORE"
        out.append(CounterTrack(proc, f"{ct}_{c} busy", np.append(edges[:-1], edges[-1]),
                                np.append(frac, 0.0), "fraction"))
    return out, width


def _union(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping intervals (sorted, disjoint result)."""
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    heads = np.flatnonzero(new)
    tails = np.r_[heads[1:], len(s)] - 1
    return s[heads], run_end[tails]


BRIEF_KERNELS = 3               # kernels named in a capture's one summary line


def kernel_summary(capture, rows: DeviceRows) -> tuple[str, list[str], list[dict]]:
    """Per kernel: tasks, AICore runs, core types, total / mean / max device time
    (kernel start to end, from the records' own clock) -> (one line for the whole capture,
    naming the kernels with the most device time; a line per kernel; JSON rows)."""
    label = rows.label
    costs = sorted(device_kernel_costs(capture, rows.func), key=lambda k: -k.total_ns)
    lines, table = [], []
    for k in costs:
        mean = k.total_ns / k.executions if k.executions else 0.0
        types = "+".join(sorted(t.upper() for t in k.core_types))
        lines.append(f"  {label} kernel {k.kernel} ({types}): {k.tasks} tasks, "
                     f"{k.executions} runs, device time total {fmt_ns(k.total_ns)}, "
                     f"mean {fmt_ns(mean)}, max {fmt_ns(k.max_ns)}")
        table.append({"kernel": k.kernel, "core_types": sorted(k.core_types),
                      "tasks": k.tasks, "runs": k.executions, "total_ns": round(k.total_ns),
                      "mean_ns": round(mean), "max_ns": round(k.max_ns)})
    makespan = int(rows.end.max() - rows.start.min()) if len(rows.start) else 0
    tasks, blocks = len(np.unique(rows.task)), len(rows.task)
    return _brief(label, table, tasks, blocks, makespan), lines, table


class KernelBrief(str):
    """A capture's one summary line about its kernels. It names `named` of its `kernels`;
    where the others are listed depends on who prints it (the CLI: `--kernels`), so the
    printer says so (`MergeResult.summary`), not the line."""

    label: str
    kernels: int
    named: int
    tasks: int
    blocks: int
    makespan_ns: int
    core_ns: int        # core time summed over cores
    top: str            # the kernels with the most core time, as the line names them


def _brief(label: str, table: list[dict], tasks: int, blocks: int, makespan_ns: int
           ) -> KernelBrief:
    """`r0d0: 64 kernels, 1000 tasks (1200 blocks), makespan 2.1 ms, 9.8 ms core time
    (summed over cores); most: A (AIV) 0.3 ms, ...`: the tasks as `analyze` counts them,
    and the core time named as what it is, beside the wall time it fits in."""
    total = sum(k["total_ns"] for k in table)
    top = ", ".join(f"{k['kernel']} ({'+'.join(t.upper() for t in k['core_types'])}) "
                    f"{fmt_ns(k['total_ns'])}" for k in table[:BRIEF_KERNELS])
    n = len(table)
    parts = f"{tasks} tasks" + (f" ({blocks} blocks)" if blocks != tasks else "")
    line = KernelBrief(f"  {label}: {n} kernel{'s' * (n != 1)}, {parts}, makespan "
                       f"{fmt_ns(makespan_ns)}, {fmt_ns(total)} core time (summed over "
                       f"cores); most: {top}")
    line.label, line.kernels, line.named = label, n, min(n, BRIEF_KERNELS)
    line.tasks, line.blocks, line.makespan_ns = tasks, blocks, makespan_ns
    line.core_ns, line.top = total, top
    return line
