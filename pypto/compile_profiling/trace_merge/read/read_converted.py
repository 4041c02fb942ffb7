"""Simpler's converter output (`merged_swimlane*.json`, Chrome JSON) read into columns: what a
capture without its records can still draw (slices, flows, counters, process names), with
times in integer ns from the capture's own origin."""

from __future__ import annotations

import bisect
import logging
import math
import os
from dataclasses import dataclass

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_OBJECTS,
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.errors import TraceInputError

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class ConvertedSlice:
    """A complete (`X`) event of a converted trace; times are integer ns from the capture's
    own origin, rounded once here (end = round((ts + dur) * 1000)), so slices that touch in
    the file still touch."""

    pid: int
    tid: int
    name: str
    cat: str
    start_ns: int
    end_ns: int
    args: dict | None


@dataclass(slots=True, eq=False)
class ConvertedFlow:
    """An arrow between two slices (indices into `ConvertedTrace.slices`)."""

    name: str
    cat: str
    src: int
    dst: int


@dataclass(slots=True, eq=False)
class ConvertedCounter:
    """One counter series (`C` events; a series per key of their args, named
    "<name> <key>" as Perfetto names them)."""

    pid: int
    tid: int
    name: str
    ts_ns: np.ndarray       # int64, ascending
    values: np.ndarray      # int64 or float64


@dataclass(slots=True, eq=False)
class ConvertedTrace:
    """Simpler's converted Chrome trace (`merged_swimlane*.json`), read and checked: its
    slices (sorted by pid, tid, start, longest first), flows bound to slices (by `bind_id`,
    else the slice enclosing the flow end on its track), counters and view names. Its small
    fixed pids are views, not OS processes. `start_ns`/`end_ns`: the extent of the slices."""

    path: str
    metadata: dict | None
    slices: list[ConvertedSlice]
    flows: list[ConvertedFlow]
    counters: list[ConvertedCounter]
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    thread_sort: dict[tuple[int, int], int]
    unbound_flows: int
    ignored_events: int           # phases the merge does not draw (B/E/i ...)
    start_ns: int
    end_ns: int


_EVENTS = msgspec.json.Decoder(list[dict])


_FLOW_PHASES = ("s", "f", "t")


class _ConvertedBuilder:
    def __init__(self, path: str):
        self.path = path
        self.slices: list[ConvertedSlice] = []
        self.slice_ids: list = []
        self.flow_ends: dict[tuple, list] = {}
        self.series: dict[tuple, tuple[list, list]] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.thread_sort: dict[tuple[int, int], int] = {}
        self.ignored = 0

    def add(self, base: int, events: list) -> None:
        path = self.path
        try:
            checked = msgspec.convert(events, list[schema.ConvertedEvent])
        except msgspec.ValidationError as exc:
            raise TraceInputError(path, word_error(exc, "$.traceEvents", base, events)) from None
        for i, c in enumerate(checked, base):
            ph = c.ph
            if ph == "M":
                self._metadata(c)
                continue
            if c.ts is None:
                if ph in ("X", "C", *_FLOW_PHASES):
                    raise TraceInputError(path, f"$.traceEvents[{i}]: missing 'ts'")
                self.ignored += 1
                continue
            ts_ns = round(c.ts * 1000)
            if ph == "X":
                end_ns = round((c.ts + (c.dur or 0.0)) * 1000)
                self.slices.append(ConvertedSlice(c.pid, c.tid, safe_str(c.name), c.cat, ts_ns,
                                                  end_ns, c.args))
                self.slice_ids.append(c.id)
            elif ph in _FLOW_PHASES:
                ends = self.flow_ends.setdefault((repr(c.id), c.cat, c.name), [None, None])
                ends[0 if ph == "s" else 1] = (c.pid, c.tid, ts_ns, c.bind_id)
            elif ph == "C":
                for key, v in (c.args or {}).items():
                    if type(v) not in (int, float) or not math.isfinite(v) or abs(v) >= 2**63:
                        raise TraceInputError(path, f"$.traceEvents[{i}].args.{key}: expected a "
                                                    f"finite number, got {v!r}"[:200])
                    ts, vals = self.series.setdefault((c.pid, c.tid, c.name, key), ([], []))
                    ts.append(ts_ns)
                    vals.append(v)
            else:
                self.ignored += 1

    def _metadata(self, c) -> None:
        args = c.args or {}
        key = (c.pid, c.tid)
        if c.name == "process_name" and isinstance(args.get("name"), str):
            self.process_names[c.pid] = safe_str(args["name"])
        elif c.name == "thread_name" and isinstance(args.get("name"), str):
            self.thread_names[key] = safe_str(args["name"])
        elif c.name == "thread_sort_index" and type(args.get("sort_index")) is int:
            self.thread_sort[key] = args["sort_index"]

    def finish(self, metadata) -> ConvertedTrace:
        order = sorted(range(len(self.slices)), key=lambda i: (
            self.slices[i].pid, self.slices[i].tid, self.slices[i].start_ns,
            -self.slices[i].end_ns))
        slices = [self.slices[i] for i in order]
        by_id = {}
        for new, old in enumerate(order):
            sid = self.slice_ids[old]
            if type(sid) is int:
                by_id.setdefault(sid, new)
        per_track: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        for k, s in enumerate(slices):
            starts, idx = per_track.setdefault((s.pid, s.tid), ([], []))
            starts.append(s.start_ns)
            idx.append(k)

        def bound(end) -> int | None:
            pid, tid, ts, bind = end
            if type(bind) is int and bind in by_id:
                return by_id[bind]
            starts, idx = per_track.get((pid, tid), ([], []))
            j = bisect.bisect_right(starts, ts) - 1
            while j >= 0:                       # the innermost slice holding ts
                s = slices[idx[j]]
                if s.start_ns <= ts <= s.end_ns:
                    return idx[j]
                j -= 1
            return None

        flows, unbound = [], 0
        for (_, cat, name), (src, dst) in self.flow_ends.items():
            a = bound(src) if src else None
            b = bound(dst) if dst else None
            if a is None or b is None:
                unbound += 1
            else:
                flows.append(ConvertedFlow(safe_str(name) or "flow", cat, a, b))
        counters = []
        for (pid, tid, name, key), (ts, vals) in self.series.items():
            o = np.argsort(np.array(ts, dtype=np.int64), kind="stable")
            v = np.array(vals, dtype=np.int64 if all(type(x) is int for x in vals)
                         else np.float64)
            counters.append(ConvertedCounter(pid, tid, safe_str(f"{name} {key}"),
                                             np.array(ts, dtype=np.int64)[o], v[o]))
        lo = min((s.start_ns for s in slices), default=0)
        hi = max((s.end_ns for s in slices), default=0)
        return ConvertedTrace(self.path, metadata, slices, flows, counters, self.process_names,
                              self.thread_names, self.thread_sort, unbound, self.ignored,
                              lo, hi)


def read_converted_trace(path: str | os.PathLike) -> ConvertedTrace:
    """Read and check a `merged_swimlane*.json` (an object with `traceEvents`, or a bare
    list of events), a piece at a time."""
    path = str(path)
    b = _ConvertedBuilder(path)
    meta = None
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        if jp.peek() == b"[":
            for base, events in jp.array("$", _EVENTS, SEP_OBJECTS):
                b.add(base, events)
            jp.finish()
        else:
            found = False
            for key in jp.members("a Chrome trace"):
                if key == "traceEvents":
                    for base, events in jp.array("$.traceEvents", _EVENTS, SEP_OBJECTS):
                        b.add(base, events)
                    found = True
                elif key == "metadata":
                    meta = jp.value("$.metadata", dict)
                else:
                    jp.skip(f"$.{key}")
            if not found:
                raise TraceInputError(path, "$: missing 'traceEvents' (not a Chrome trace)")
    return b.finish(meta)
