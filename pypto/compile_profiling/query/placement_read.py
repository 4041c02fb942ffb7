"""What placement needs of a capture leaf, and nothing more (the per-rank driver's read).

`trace_merge.place.placement` decides a capture's clock from its run log, its records' metadata
(frequency, clock anchors) and the time envelope of its device streams (earliest start,
latest end of the AICore rows, the AICPU rows, the scheduler and orchestrator phases). This
reads exactly that: the run log whole (small), an August records file with the row arrays
reduced to their extremes and the phases decoded into their two time fields only (the
kinds, counters and lists of a phase are skipped by msgspec, never built into columns),
and Simpler's converted traces as their time span; the dispatch identity (pairing) and the
host phase records (their extent joins the "one run" check) whole. deps.json and name maps
are not opened. The result is a `Capture` whose streams are one-row envelopes: `place`
reads the same extremes from it as from the whole capture, so its decisions are the same;
the rank's task then reads the whole leaf for its layout.

A records file in today's layout (docs/simpler_layouts.md: 7-column AICore rows, or a
`scheduler_tasks` / `scheduler_records` / `aicpu_lifecycle_records` section) is read by
`read_records(times_only=True)`: the rows, and of every phase its kind, times and
`run_epoch` (the metrics and the other fields are skipped by the decoder), with the full
read's checks and its choice of this run's records, so another run's records (`run_epoch`)
never move the envelope. Each stream is then cut to its extreme records (`extreme_rows`),
so what the driver gathers per capture is a few rows, as for an August file.
"""

from __future__ import annotations

import dataclasses

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_OBJECTS,
    SEP_ROWS,
    JsonPieces,
)
from pypto.compile_profiling.trace_merge.read.read_records import metadata_fields, read_metadata
from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log
from pypto.errors import TraceInputError

__all__ = ["placement_capture"]

_ROWS = msgspec.json.Decoder(list[list[int]])
_WIDTHS = {"aicore_tasks": (5, 6, 7), "aicpu_tasks": (4,)}   # 7: today's (run_epoch)
# sections only today's layout has: such a file is read whole by `read_records`, which sets
# aside another run's records (`run_epoch`) before placement sees their times
_TODAY_KEYS = ("scheduler_tasks", "scheduler_records", "aicpu_lifecycle_records")


def _times_decoder(spec: schema.PhaseSchema) -> msgspec.json.Decoder:
    """A decoder of a phase list that keeps only the phase's start and end."""
    record = msgspec.defstruct(f"{spec.record.__name__}Times",
                               [(spec.start, int), (spec.end, int)], gc=False)
    return msgspec.json.Decoder(list[record])


_TIMES = {name: _times_decoder(spec) for name, spec in schema.PHASE_STREAMS.items()}


def _envelope_rows(jp: JsonPieces, where: str, widths: tuple[int, ...], lo_cols, hi_cols):
    """(min over `lo_cols` expressions, max over `hi_cols`, the widest row) of an array of
    int rows."""
    lo = hi = None
    widest = 0
    for _, rows in jp.array(where, _ROWS, SEP_ROWS):
        if not rows:
            continue
        if {len(r) for r in rows} - set(widths):
            raise TraceInputError(jp.path, f"{where}: rows of {sorted({len(r) for r in rows})} "
                                           f"columns, expected {widths}")
        a = np.array(rows, dtype=np.int64)
        widest = max(widest, a.shape[1])
        a_lo, a_hi = int(lo_cols(a).min()), int(hi_cols(a).max())
        lo = a_lo if lo is None else min(lo, a_lo)
        hi = a_hi if hi is None else max(hi, a_hi)
    return lo, hi, widest


def _phase_envelope(jp: JsonPieces, name: str) -> list[rs.PhaseColumns]:
    spec = schema.PHASE_STREAMS[name]
    decoder = _TIMES[name]
    where = f"$.{name}"

    def one(thread: int, at: str) -> rs.PhaseColumns:
        lo = hi = None
        for _, items in jp.array(at, decoder, SEP_OBJECTS, 256 << 10):
            if items:
                s = [getattr(p, spec.start) for p in items]
                e = [getattr(p, spec.end) for p in items]
                lo = min(s) if lo is None else min(lo, min(s))
                hi = max(e) if hi is None else max(hi, max(e))
        start = np.array([] if lo is None else [lo], np.int64)
        end = np.array([] if hi is None else [hi], np.int64)
        return rs.PhaseColumns(thread, spec.clock, start, end, np.zeros(len(start), np.int32),
                               [spec.default_kind])

    if not spec.per_thread:
        return [one(0, where)]
    return [one(t, f"{where}[{t}]") for t in jp.items(where)]


def _records_envelope(path: str) -> rs.SwimlaneRecords:
    level = meta = raw = None
    found: dict = {}
    streams: dict = {}
    today = False
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("a Simpler swimlane records file"):
            where = f"$.{key}"
            if key in schema.LEVEL_KEYS:
                level = jp.value(where, schema.SwimlaneLevel)
            elif key == "metadata":
                raw, meta = read_metadata(jp, where)
            elif key in _TODAY_KEYS:
                today = True    # today's layout: read whole (below), not as an envelope
                break
            elif key == "aicore_tasks":
                lo, hi, widest = _envelope_rows(
                    jp, where, _WIDTHS[key],
                    lambda a: a[:, 3] - (a[:, 5] if a.shape[1] > 5 else 0), lambda a: a[:, 4])
                found[key] = (lo, hi)
                if widest == 7:
                    today = True
                    break
            elif key == "aicpu_tasks":
                lo, hi, _ = _envelope_rows(jp, where, _WIDTHS[key], lambda a: a[:, 2],
                                           lambda a: a[:, 3])
                found[key] = (lo, hi)
            elif key in schema.PHASE_STREAMS:
                streams[key] = _phase_envelope(jp, key)
            else:
                jp.skip(where)
    if today:
        return _extremes(rs.read_records(path, times_only=True))
    if level is None or meta is None:
        raise TraceInputError(path, "not a Simpler swimlane records file (no level or metadata)")
    for k in list(found) + list(streams):
        if schema.STREAM_LEVEL[k] > level:
            (found if k in found else streams).pop(k)

    def rows(key: str, columns: tuple[str, ...], lo_col: str, hi_col: str) -> dict:
        lo, hi = found.get(key, (None, None))
        n = 0 if lo is None else 1
        cols = {c: np.zeros(n, np.int64) for c in columns}
        if n:
            cols[lo_col][:] = lo
            cols[hi_col][:] = hi
        return cols

    aicore = rows("aicore_tasks", schema.AICORE_COLUMNS, "start_cycles", "end_cycles")
    aicpu = rows("aicpu_tasks", schema.AICPU_COLUMNS, "dispatch_cycles", "finish_cycles")
    return rs.SwimlaneRecords(
        path=path, level=level, level_key=schema.LEVEL_KEYS[0],
        **metadata_fields(meta, list(meta.core_types)), metadata=raw, aicore=aicore, aicore_columns=6, aicpu=aicpu,
        scheduler=streams.get("aicpu_scheduler_phases", []),
        orchestrator=streams.get("aicpu_orchestrator_phases", []),
        host_orchestrator=streams.get("host_orchestrator_phases", []),
        host_uploads=streams.get("host_device_uploads", []))


def extreme_rows(*columns: np.ndarray) -> np.ndarray:
    """The rows (ascending) holding each column's minimum, maximum and least positive value
    (0 is Simpler's "never stamped", which placement leaves out): every extent placement
    takes of the columns, with or without the zeros, is the same on these rows alone."""
    at: set[int] = set()
    for c in columns:
        if len(c):
            at.update((int(c.argmin()), int(c.argmax())))
            positive = np.flatnonzero(c > 0)
            if len(positive):
                at.add(int(positive[c[positive].argmin()]))
    return np.array(sorted(at), dtype=np.int64)


def _extremes(rec: rs.SwimlaneRecords) -> rs.SwimlaneRecords:
    """`rec` with every row table and phase stream cut to its extreme rows."""
    a, c = rec.aicore, rec.aicpu
    keep = extreme_rows(a["start_cycles"] - a["receive_to_start_cycles"], a["start_cycles"],
                        a["end_cycles"])
    rec.aicore = {k: v[keep] for k, v in a.items()}
    keep = extreme_rows(c["dispatch_cycles"], c["finish_cycles"])
    rec.aicpu = {k: v[keep] for k, v in c.items()}
    for group in (rec.scheduler, rec.orchestrator, rec.host_orchestrator, rec.host_uploads,
                  rec.lifecycle):
        group[:] = [s.take(extreme_rows(s.start, s.end)) for s in group]
    return rec


def placement_capture(files: rs.CaptureFiles) -> rs.Capture:
    """The capture leaf `files` as placement reads it (see the module docstring)."""
    cap = rs.Capture(files)
    if files.records:
        cap.records = _records_envelope(files.records)
    elif files.converted:
        cap.converted = [dataclasses.replace(rs.read_converted_trace(p), slices=[], flows=[],
                                             counters=[]) for p in files.converted]
    if files.dispatch_identity:     # pairs the capture with its host invocation
        cap.dispatch_identity = rs.read_dispatch_identity(files.dispatch_identity)
    if files.run_logs:            # of several, `place` keeps the capture's own run's
        cap.run_logs = [read_run_log(p) for p in files.run_logs]
        cap.run_log = cap.run_logs[0] if len(cap.run_logs) == 1 else None
    if files.host_phase_records:    # their extent joins the "one run" check
        cap.host_phases = rs.read_host_phase_records(files.host_phase_records)
    return cap
