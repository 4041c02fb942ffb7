"""The compile profile as a Chrome-trace JSON file (`trace.json`), for Perfetto and chrome://tracing.

One complete event (`ph: "X"`) per stage on its real pid/tid. `ts` is the absolute
CLOCK_MONOTONIC time in microseconds written with exact nanosecond decimals (time points
are converted, never durations rounded, so a child never sticks out of its parent), which
lets traces of several processes on one host line up as they are. `otherData` pairs one
monotonic reading with one wall-clock reading so other tools can align other hosts.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import pypto
from pypto.compile_profiling.atomic_io import atomic_writer

if TYPE_CHECKING:
    from pypto.compile_profiling.profiler import CompileProfiler, StageRecord

CLOCK_NAME = "CLOCK_MONOTONIC"
_dumps = json.JSONEncoder(ensure_ascii=False, default=str).encode


def clock_anchor() -> dict[str, int]:
    """One CLOCK_MONOTONIC reading paired with one wall-clock reading, taken together."""
    best = None
    for _ in range(3):  # keep the tightest of three brackets
        before = time.perf_counter_ns()
        wall = time.time_ns()
        after = time.perf_counter_ns()
        if best is None or after - before < best[2] - best[0]:
            best = (before, wall, after)
    before, wall, after = best
    return {"monotonic_ns": (before + after) // 2, "wall_ns": wall,
            "uncertainty_ns": (after - before + 1) // 2}


def us(ns: int) -> str:
    """Exact microseconds text of an integer nanosecond time point."""
    if ns < 0:
        return "-" + us(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


def _iter_trace_chunks(prof: CompileProfiler, stages: list[StageRecord]):
    """Yield the JSON text of the trace in pieces (streamed to disk by the writer)."""
    total = prof.total_seconds
    now_ns = time.perf_counter_ns()
    anchor = clock_anchor()
    other = {
        "clock": CLOCK_NAME,
        "clock_anchor": anchor,
        "pid": prof.pid,
        "host": socket.gethostname(),
        "pypto_version": pypto.__version__,
        "total_seconds": round(total, 6),
        "producer": "pypto.compile_profiling",
    }
    yield '{"displayTimeUnit":"ms","otherData":' + _dumps(other) + ',"traceEvents":[\n'

    threads: dict[tuple[int, int], tuple[str, int]] = {}  # (pid, tid) -> (name, first start)
    events: list[str] = []
    append = events.append
    share_base = total * 1e9 / 100 if total > 0 else 0.0
    encoded: dict[str, str] = {}  # names, categories and paths repeat: encode each once
    # (record, path prefix, clamp window on the same thread or None)
    todo: list[tuple[StageRecord, str, tuple[int, int, int, int] | None]] = [
        (s, "", None) for s in reversed(stages)]
    pop, push = todo.pop, todo.append
    while todo:
        rec, prefix, window = pop()
        pid, tid = rec.pid, rec.tid
        start = rec.start_ns
        is_open = rec.end <= 0
        end = now_ns if is_open else rec.end_ns
        if end < start:
            end = start
        if window is not None and window[1] == tid and window[0] == pid:
            if start < window[2]:
                start = window[2]
            if end > window[3]:
                end = window[3]
            if start > end:
                start = end
        key = (pid, tid)
        known = threads.get(key)
        if known is None or start < known[1]:
            threads[key] = (rec.thread_name or (known[0] if known else ""), start)
        name = rec.name
        path = f"{prefix}/{name}" if prefix else name
        name_json = encoded.get(name)
        if name_json is None:
            name_json = encoded[name] = _dumps(name)
        path_json = encoded.get(path)
        if path_json is None:
            path_json = encoded[path] = _dumps(path)
        cat = rec.cat or "user"
        cat_json = encoded.get(cat)
        if cat_json is None:
            cat_json = encoded[cat] = _dumps(cat)
        args = '{"path":' + path_json
        if share_base:
            args += ',"share_pct":%.3f' % ((end - start) / share_base)
        if rec.args:
            extra = _dumps(rec.args)
            if len(extra) > 2:
                args += "," + extra[1:-1]
        if rec.error is not None:
            args += ',"failed":true,"error":' + _dumps(rec.error)
        if is_open:
            args += ',"open":true'
        dur = end - start
        append('{"ph":"X","name":%s,"cat":%s,"ts":%d.%03d,"dur":%d.%03d,"pid":%d,"tid":%d,'
               '"args":%s}}' % (name_json, cat_json, start // 1000, start % 1000,
                                dur // 1000, dur % 1000, pid, tid, args))
        if len(events) >= 8192:
            yield ",\n".join(events) + ",\n"
            events.clear()
        if rec.children:
            child_window = (pid, tid, start, end)
            for child in reversed(rec.children):
                push((child, path, child_window))

    yield from _metadata_chunks(prof, threads, bool(events))
    if events:
        yield ",\n".join(events)
    yield "\n]}\n"


def _metadata_chunks(prof: CompileProfiler, threads: dict, more_follow: bool):
    meta: list[dict] = []
    pids = sorted({pid for pid, _ in threads} | {prof.pid}, key=lambda p: (p != prof.pid, p))
    for index, pid in enumerate(pids):
        name = prof.process_names.get(pid, "PyPTO process")
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                     "args": {"name": name}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                     "args": {"sort_index": index}})
    main_tid = threading.main_thread().native_id
    ordered = sorted(threads.items(),
                     key=lambda kv: (kv[0][0], kv[0][1] not in (kv[0][0], main_tid), kv[1][1]))
    for index, ((pid, tid), (name, _start)) in enumerate(ordered):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                     "args": {"name": name or f"thread {tid}"}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                     "args": {"sort_index": index}})
    text = ",\n".join(_dumps(m) for m in meta)
    yield text + (",\n" if more_follow else "")


def trace_text(prof: CompileProfiler, stages: list[StageRecord] | None = None) -> str:
    """The whole trace as one JSON string."""
    return "".join(_iter_trace_chunks(prof, prof.stages if stages is None else stages))


def profile_trace(prof: CompileProfiler) -> dict:
    """The trace as a dict (`traceEvents`, `displayTimeUnit`, `otherData`)."""
    return json.loads(trace_text(prof))


def write_chrome_trace(prof: CompileProfiler, path: str | os.PathLike,
                       stages: list[StageRecord] | None = None) -> None:
    """Stream the trace to `path` atomically (temp file beside it, then rename)."""
    with atomic_writer(path, "w") as f:
        for chunk in _iter_trace_chunks(prof, prof.stages if stages is None else stages):
            f.write(chunk)
