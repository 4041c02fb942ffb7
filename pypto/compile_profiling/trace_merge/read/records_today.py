"""Today's sections of the records file: `scheduler_tasks`, `scheduler_records` (streams
whose records are joined with their `metrics` by `record_index`) and
`aicpu_lifecycle_records`."""

from __future__ import annotations

from operator import attrgetter
from typing import Literal

import msgspec
import numpy as np

from pypto.compile_profiling.timeline.model import ArgColumn
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_OBJECTS,
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.compile_profiling.trace_merge.read.record_phases import (
    PhaseBuilder,
    PhaseDecoder,
    RecordColumns,
    arg_column,
    kept,
    list_arg,
    phase_array,
)
from pypto.compile_profiling.trace_merge.read.record_rows import (
    Invalid,
    Mixed,
    Skipped,
    decode_rows,
)
from pypto.compile_profiling.trace_merge.read.swimlane_records import PhaseColumns, take_arg
from pypto.errors import TraceInputError

ABSENT = schema.ABSENT


_SCHEMA_VERSION = Literal[1]


_PRODUCER = Literal["aicpu", "aicore"]


def scheduler_tasks(jp: JsonPieces, where: str, skipped: Skipped) -> tuple[tuple, str]:
    """`scheduler_tasks: {producer, records, [schema_version]}` -> (rows, width, index),
    producer."""
    producer = rows = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "producer":
            producer = jp.value(w, _PRODUCER)
        elif key == "records":
            rows = decode_rows(jp, w, (4, 5), skipped)
        elif key == "schema_version":
            jp.value(w, _SCHEMA_VERSION)
        else:
            jp.skip(w)
    for key, got in (("producer", producer), ("records", rows)):
        if got is None:
            raise TraceInputError(jp.path, f"{where}: missing '{key}'")
    return rows, producer


class _Metrics:
    """A today's stream's `metrics`: per-record queue figures, joined onto the records by
    `record_index` (so the joined columns are those of an August thread list). An entry
    that does not decode, or names no record (out of range, or one named before), is
    skipped alone."""

    def __init__(self, path: str, where: str, skipped: Skipped):
        self.path, self.where, self.skipped = path, where, skipped
        self.cols = RecordColumns(schema.SchedulerMetric, ("record_index",))
        self.index: list[np.ndarray] = []

    def add(self, base: int, items: list) -> None:
        keep = range(len(items))
        if type(items) is Mixed:
            keep = [i for i, it in enumerate(items) if type(it) is not Invalid]
            for i, it in enumerate(items):
                if type(it) is Invalid:
                    self.skipped.add(self.where, f"{self.where}[{base + i}]{it.reason}")
            items = kept(items, keep)
        self.cols.add(items)
        self.index.append(base + np.asarray(keep, dtype=np.int64))

    def join(self, phases: PhaseColumns, order: list[str], in_file: int) -> None:
        """Onto `phases`, whose records sit at `phases.index` of the `in_file` records of
        the JSON array: an entry of a record that was skipped goes with it."""
        idx_d, args = self.cols.finish(self.where, self.skipped)
        idx = idx_d["record_index"]
        at = np.concatenate(self.index) if self.index else np.zeros(0, np.int64)
        _, first = np.unique(idx, return_index=True)
        again = np.ones(len(idx), dtype=bool)
        again[first] = False
        bad = (idx >= in_file) | again
        for j in np.flatnonzero(bad).tolist():
            why = (f"record_index {int(idx[j])} is out of range ({in_file} records)"
                   if idx[j] >= in_file else f"record_index {int(idx[j])} appears twice")
            self.skipped.add(self.where, f"{self.where}[{int(at[j])}]: {why}")
        kept = phases.index if phases.index is not None else np.arange(len(phases))
        if len(kept):
            pos = np.minimum(np.searchsorted(kept, idx), len(kept) - 1)
            found = kept[pos] == idx
        else:
            pos, found = np.zeros(len(idx), np.int64), np.zeros(len(idx), dtype=bool)
        keep = np.flatnonzero(~bad & found)
        if len(keep) < len(idx):
            args = [t for t in (take_arg(a, keep) for a in args) if t is not None]
        rows = pos[keep]
        n = len(phases)
        for a in args:
            own = phases.arg(a.key)
            if own is not None:
                raise TraceInputError(self.path, f"{self.where}: metric '{a.key}' would "
                                                 "overwrite the records' own field")
            joined = _scattered(a, rows, n)
            if joined is not None:
                phases.args.append(joined)
        rank = {k: i for i, k in enumerate(order)}
        phases.args.sort(key=lambda a: rank.get(a.key, len(rank)))   # stable: extras last


def _scattered(a: ArgColumn, idx: np.ndarray, n: int) -> ArgColumn | None:
    """Column `a` of the metrics rows placed at their records `idx` of `n`."""
    present = np.zeros(n, dtype=bool)
    present[idx] = True if a.present is None else a.present
    if isinstance(a.values, np.ndarray):
        full = np.full((n, *a.values.shape[1:]), ABSENT, np.int64)
        full[idx] = a.values
        if full.ndim == 1:
            return arg_column(a.key, full, present)
        if present.all():
            return ArgColumn(a.key, full)
        values = [None] * n
        for i, v in zip(idx.tolist(), a.values.tolist()):
            values[i] = v
    else:
        values = [None] * n
        for i, v in zip(idx.tolist(), a.values):
            values[i] = v
    return list_arg(a.key, [v if p else None for v, p in zip(values, present.tolist())])


def _scheduler_stream(jp: JsonPieces, where: str, index: int, skipped: Skipped,
                      times_only: bool = False) -> PhaseColumns:
    spec = schema.times_schema(SCHEDULER) if times_only else SCHEDULER
    b = PhaseBuilder(index, spec, jp.path, f"{where}.records", skipped)
    decoder = PhaseDecoder(spec.record)
    header: dict = {}
    metrics = None
    has_records = False
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "records":
            phase_array(jp, w, b, decoder)
            has_records = True
        elif key == "metrics" and not times_only:
            metrics = _Metrics(jp.path, w, skipped)
            for base, items in jp.array(w, PhaseDecoder(schema.SchedulerMetric),
                                        SEP_OBJECTS, 256 << 10):
                metrics.add(base, items)
        elif key in schema.STREAM_FIELDS:
            header[key] = jp.value(w, schema.STREAM_FIELDS[key])
        else:
            jp.skip(w)
    if not has_records:
        raise TraceInputError(jp.path, f"{where}: missing 'records'")
    cols = b.finish()
    if metrics is not None:
        metrics.join(cols, b.cols.known, b.seen)
    cols.producer = header.get("producer") or "aicpu"
    capture = header.get("capture")
    cols.capture = None if capture is None else msgspec.structs.asdict(capture)
    cols.stream = {k: (safe_str(v) if isinstance(v, str) else v) for k, v in header.items()
                   if k not in ("producer", "capture", "runtime") and v is not None}
    return cols


def scheduler_records(jp: JsonPieces, where: str, warnings: list[str], skipped: Skipped,
                      times_only: bool = False) -> list[PhaseColumns]:
    """`scheduler_records: {streams: [...], [schema_version]}` -> one PhaseColumns per
    stream, each at its `scheduler_id` (the writer omits idle schedulers, so the position in
    the list is not the id); ids missing, out of range or repeated: list order, warned.
    `times_only`: see `read_records`."""
    streams = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "streams":
            streams = [_scheduler_stream(jp, f"{w}[{i}]", i, skipped, times_only)
                       for i in jp.items(w)]
        elif key == "schema_version":
            jp.value(w, _SCHEMA_VERSION)
        else:
            jp.skip(w)
    if streams is None:
        raise TraceInputError(jp.path, f"{where}: missing 'streams'")
    ids = [s.stream.get("scheduler_id") for s in streams]
    if all(type(i) is int and 0 <= i < MAX_SCHEDULER_ID for i in ids) \
            and len(set(ids)) == len(ids):
        for s, i in zip(streams, ids):
            s.thread = i
        streams.sort(key=attrgetter("thread"))
    elif streams:
        warnings.append(f"{jp.path}: {where}.streams have no distinct scheduler_id in "
                        f"0..{MAX_SCHEDULER_ID - 1}; numbered in file order")
    return streams


def lifecycle_streams(jp: JsonPieces, where: str, warnings: list[str],
               skipped: Skipped) -> list[PhaseColumns]:
    """`aicpu_lifecycle_records`: one object per AICPU thread -> its phases (start/end
    pairs; 0: not recorded). Entries that are not such objects (the section is the
    runtime's JSON, written verbatim) are set aside with one warning; an object that does
    not fit the record, or a phase that ends before it starts, is skipped alone."""
    value = jp.value(where)
    if not isinstance(value, list):
        raise TraceInputError(jp.path, f"{where}: expected array, got "
                                       f"{type(value).__name__}")
    out, odd = [], []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            odd.append(i)
            continue
        try:
            r = msgspec.convert(entry, schema.LifecycleRecord)
        except msgspec.ValidationError as exc:
            skipped.add(where, word_error(exc, f"{where}[{i}]", doc=entry))
            continue
        starts, ends, kinds = [], [], []
        for name, s_key, e_key in schema.LIFECYCLE_PHASES:
            s, e = getattr(r, s_key), getattr(r, e_key)
            if not s and not e:
                continue
            if e < s:
                skipped.add(where, f"{where}[{i}]: {e_key} {e} is before {s_key} {s} "
                                   "(negative duration)")
                continue
            starts.append(s)
            ends.append(e)
            kinds.append(name)
        out.append(PhaseColumns(r.aicpu_thread_id, "device_cycles",
                                np.array(starts, np.int64), np.array(ends, np.int64),
                                np.arange(len(kinds), dtype=np.int32), kinds,
                                source=f"{where}[{i}]"))
    if odd:
        warnings.append(f"{jp.path}: {where}: {len(odd)} entries are not lifecycle records "
                        f"(objects with aicpu_thread_id and *_cycles; first at {where}"
                        f"[{odd[0]}]), set aside")
    return out


SCHEDULER = schema.PHASE_STREAMS["aicpu_scheduler_phases"]


MAX_SCHEDULER_ID = 256           # Simpler's bound on a scheduler index (int8 tables)
