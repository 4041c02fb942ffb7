"""Simpler's swimlane records file of either layout -> checked NumPy columns.

`read_records(path)` reads `chip_swimlane_records.json` (older name
`l2_swimlane_records.json`) as Simpler's writer of August 2026 or today's writes it, into
one `SwimlaneRecords` (docs/simpler_layouts.md). The layout is decided from what the file
holds, never from a version number alone: `scheduler_tasks` / `scheduler_records` sections
or 7-column AICore rows are today's, `aicpu_tasks` / `aicpu_scheduler_phases` August's
(`schema_version`, where a section has one, must be 1). One reader per concept serves
both, so the same concept comes out as the same columns: AICore rows (5, 6 or 7 columns),
scheduler task rows (`aicpu_tasks` or `scheduler_tasks.records`, 4 or 5 columns),
scheduler phases (August thread lists, or today's streams whose records are joined with
their `metrics` by `record_index`), orchestrator phases, host orchestrator phases and
uploads, and today's `aicpu_lifecycle_records`.

Today's records carry `run_epoch`, the run that produced them. The run's epoch is
`metadata.collection.run_epoch` when given, else the one most AICore rows carry (then
scheduler rows, then phases); records of another epoch (a predecessor run's late buffer)
are set aside, counted in `set_aside` and one warning, never drawn as this run's. Phase
kinds the reader does not know are kept under their own name and counted in one warning;
unknown members are skipped; what cannot be interpreted is a `TraceInputError` naming
the file and the JSON path. Every value that reaches a clock conversion is range-checked
here, once (`simpler_schema.MAX_CLOCK_NS`), and core ids against `metadata.core_types`.

The big arrays are read a piece at a time (`json_pieces`) with the typed decoders of
`simpler_schema`, each piece going straight into column chunks, so a 1M-task capture never
exists as Python objects at once.

Rules learned from the real captures, where the format notes are silent:
- Level gating: a stream the level does not collect (e.g. scheduler phases at level 2) is
  ignored if present and named in `SwimlaneRecords.ignored_streams` (today's writer gates
  its sections itself: `STREAM_LEVEL_TODAY`).
- AICore rows have 6 columns in August files (the 6th `receive_to_start_cycles`); older
  5-column rows get 0 there; one file never mixes widths.
- Host-orchestrated captures carry `host_orchestrator_phases` and `host_device_uploads` in
  host CLOCK_MONOTONIC ns (`PhaseColumns.clock == "host_ns"`), not device cycles.
- Phase kinds are free strings. Orchestrator phases have no kind: each is a "submit".
"""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Literal

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.timeline.model import ArgColumn
from pypto.compile_profiling.trace_merge import simpler_schema as schema
from pypto.compile_profiling.trace_merge.json_pieces import (
    SEP_OBJECTS,
    SEP_ROWS,
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.errors import TraceInputError

__all__ = ["PhaseColumns", "SwimlaneRecords", "check_clock_range", "metadata_fields",
           "read_metadata", "read_records"]

ABSENT = schema.ABSENT
_TODAY_KEYS = ("scheduler_tasks", "scheduler_records", "aicpu_lifecycle_records")
_SCHEDULER = schema.PHASE_STREAMS["aicpu_scheduler_phases"]
_MAX_SCHEDULER_ID = 256           # Simpler's bound on a scheduler index (int8 tables)


@dataclass(slots=True, eq=False)
class PhaseColumns:
    """One thread's phase records as columns: `start`/`end` (int64, in `clock` units:
    "device_cycles" or "host_ns"), `kind` (int32 index into `kinds`) and every other field
    of the records in `args` (int fields as int64 arrays, `present` set when some records
    lack them; list fields as (n, k) int64 arrays when every record has k values, else a
    list with None where absent). A today's scheduler stream also says who wrote it
    (`producer`: "aicpu" or "aicore"; `stream`: its platform, scheduler_id, worker_id,
    core_type, physical_core_id as given) and what the device kept of it (`capture`:
    committed, dropped, truncated). `source`: the JSON path of the records."""

    thread: int
    clock: str
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    kinds: list[str]
    args: list[ArgColumn] = field(default_factory=list)
    source: str = ""
    producer: str = "aicpu"
    stream: dict = field(default_factory=dict)
    capture: dict | None = None
    epoch: np.ndarray | None = None      # run_epoch per record (ABSENT: none recorded)

    def __len__(self) -> int:
        return len(self.start)

    def arg(self, key: str) -> ArgColumn | None:
        return next((a for a in self.args if a.key == key), None)

    def take(self, idx: np.ndarray) -> PhaseColumns:
        """The records `idx` (ascending) of this stream, as a stream of their own (args
        absent from all of them dropped)."""
        args = []
        for a in self.args:
            values = a.values[idx] if isinstance(a.values, np.ndarray) else \
                [a.values[i] for i in idx.tolist()]
            present = None if a.present is None else a.present[idx]
            if present is not None and not present.any():
                continue
            args.append(ArgColumn(a.key, values, None if present is not None and present.all()
                                  else present, a.table))
        return PhaseColumns(self.thread, self.clock, self.start[idx], self.end[idx],
                            self.kind[idx], self.kinds, args, self.source, self.producer,
                            self.stream, self.capture,
                            None if self.epoch is None else self.epoch[idx])


@dataclass(slots=True, eq=False)
class SwimlaneRecords:
    """One records file, read and checked. `aicore` columns: core_id, task_id (the task
    token), reg_task_id, start_cycles, end_cycles, receive_to_start_cycles, run_epoch;
    `aicpu` (the scheduler task rows, whoever produced them): core_id, reg_task_id,
    dispatch_cycles, finish_cycles, run_epoch (all int64; join the two on (core_id,
    reg_task_id), not on the token; run_epoch is ABSENT where not recorded). Only this
    run's records are in the columns (`run_epoch`, `set_aside`)."""

    path: str
    level: int
    level_key: str
    freq_hz: int
    num_cores: int
    core_types: list[str]
    core_to_thread: list[int] | None
    clock_anchors: schema.ClockAnchors | None   # fields by name, as build_clock_mapping reads
    host_timestamp_quantization_ns: int
    orchestrator_source: str | None
    host_orchestration_origin_ns: int | None
    metadata: dict                              # the metadata object as read
    aicore: dict[str, np.ndarray]
    aicore_columns: int                         # 5, 6 (August) or 7 (today), as on disk
    aicpu: dict[str, np.ndarray]
    scheduler: list[PhaseColumns]               # device cycles, one per scheduler thread
    orchestrator: list[PhaseColumns]            # AICPU orchestrator, device cycles
    host_orchestrator: list[PhaseColumns]       # host ns
    host_uploads: list[PhaseColumns]            # host ns (one list in the file: thread 0)
    ignored_streams: list[str] = field(default_factory=list)
    layout: str = "august"                      # "august" | "today"
    runtime: str | None = None                  # metadata.runtime (today)
    host_clock_domain_id: str | None = None
    scheduler_task_producer: str | None = None  # "aicpu" | "aicore"; None: no task timing
    run_epoch: int | None = None                # this run's; None: no identity recorded
    set_aside: dict[str, int] = field(default_factory=dict)   # other runs' records, by key
    lifecycle: list[PhaseColumns] = field(default_factory=list)  # per AICPU thread, cycles
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- rows

_ROWS = msgspec.json.Decoder(list[list[schema.Count]])


def _rows(jp: JsonPieces, where: str, widths: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """An array of integer rows -> (n, max(widths)) int64, and the width found on disk
    (columns a narrower file lacks are 0, except the last, run_epoch, which is ABSENT)."""
    parts, width = [], None
    for base, rows in jp.array(where, _ROWS, SEP_ROWS):
        lens = set(map(len, rows))
        if width is not None:
            lens.add(width)
        if len(lens) > 1 or not lens <= set(widths):
            first = width if width is not None else len(rows[0])
            i, row = next((i, r) for i, r in enumerate(rows)
                          if len(r) not in widths or len(r) != first)
            expected = " or ".join(filter(None, (", ".join(map(str, widths[:-1])),
                                                 str(widths[-1]))))
            if len(row) in widths:
                expected = f"{first}, like the rows before it"
            raise TraceInputError(jp.path, f"{where}[{base + i}]: {len(row)} columns, "
                                           f"expected {expected}")
        width = lens.pop()
        n = len(rows)
        parts.append(np.fromiter(itertools.chain.from_iterable(rows), np.int64,
                                 n * width).reshape(n, width))
        del rows
    full = max(widths)
    arr = np.concatenate(parts) if parts else np.zeros((0, full), np.int64)
    if arr.shape[1] < full:
        pad = np.zeros((len(arr), full - arr.shape[1]), np.int64)
        pad[:, -1] = ABSENT
        arr = np.hstack([arr, pad])
    return arr, (width or full)


def _row_columns(arr: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(arr[:, j]) for j, k in enumerate(names)}


def _check_order(path, where: str, cols: dict, end: str, start: str, base: int = 0) -> None:
    """No row of `cols` ends before it starts (`where`: the array's JSON path, `base`: the
    index of its first row there)."""
    bad = cols[end] < cols[start]
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceInputError(path, f"{where}[{base + i}]: {end} {int(cols[end][i])} is before "
                                    f"{start} {int(cols[start][i])} (negative duration)")


def _check_rows(path, aicore: dict, cpu: dict, cpu_where: str, ncores: int) -> None:
    for where, cols in (("$.aicore_tasks", aicore), (cpu_where, cpu)):
        core = cols["core_id"]
        if len(core) and not ncores:
            raise TraceInputError(path, f"{where}: {len(core)} rows, but metadata.core_types "
                                        "lists no cores")
        beyond = core >= ncores
        if beyond.any():
            i = int(np.argmax(beyond))
            raise TraceInputError(path, f"{where}[{i}][0]: core_id {int(core[i])} is not in "
                                        f"metadata.core_types ({ncores} cores)")
    a = aicore
    _check_order(path, "$.aicore_tasks", a, "end_cycles", "start_cycles")
    early = a["receive_to_start_cycles"] > a["start_cycles"]
    if early.any():
        i = int(np.argmax(early))
        raise TraceInputError(path, f"$.aicore_tasks[{i}][5]: receive_to_start_cycles "
                                    f"{int(a['receive_to_start_cycles'][i])} exceeds "
                                    f"start_cycles {int(a['start_cycles'][i])}")
    _check_order(path, cpu_where, cpu, "finish_cycles", "dispatch_cycles")


def check_clock_range(path, where: str, values: np.ndarray, limit: int, what: str,
                      index=None) -> None:
    """The one range rule: every value converted to ns must stay under MAX_CLOCK_NS
    (`limit`: `schema.max_cycles(freq)` for device cycles, `MAX_CLOCK_NS` for ns). Shared
    with the run-log reader. `index(i)`: the path suffix of element i (default `[i]`)."""
    if len(values) and int(values.max()) >= limit:
        i = int(np.argmax(values >= limit))
        at = index(i) if index else f"[{i}]"
        clock = "" if limit == schema.MAX_CLOCK_NS else f"; at this clock, below {limit}"
        raise TraceInputError(path, f"{where}{at}: {what} {int(values[i])} is out of range "
                                    f"(device and host times must stay under 2^62 ns{clock})")


# --------------------------------------------------------------------------- record columns

@functools.cache
def _phase_decoders(record: type) -> tuple[msgspec.json.Decoder, ...]:
    """The strict, lenient and plain decoders of a record type, made once per type:
    building them (and `msgspec.structs.fields` below) evaluates the schema's annotations
    anew each time, about 1 ms per thread stream of every file read."""
    lenient = msgspec.defstruct(record.__name__ + "Lenient", [], bases=(record,),
                                forbid_unknown_fields=False, gc=False)
    return (msgspec.json.Decoder(list[record]), msgspec.json.Decoder(list[lenient]),
            msgspec.json.Decoder(list[dict]))


@functools.cache
def _record_fields(record: type) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(record)


class _PhaseDecoder:
    """Typed decoding of records; a record with a field the schema does not declare
    switches the stream to a lenient decode plus a plain one for the extra fields."""

    def __init__(self, record: type):
        self.strict, self.lenient, self.plain = _phase_decoders(record)
        self.loose = False

    def decode(self, piece):
        if not self.loose:
            try:
                return self.strict.decode(piece)
            except msgspec.ValidationError as exc:
                if "unknown field" not in str(exc):
                    raise
                self.loose = True
        items = _WithExtras(self.lenient.decode(piece))
        items.extras = self.plain.decode(piece)
        return items

    @property
    def type(self):
        """What a piece decodes to (for the Python-json path of `JsonPieces`)."""
        return (self.lenient if self.loose else self.strict).type


class _WithExtras(list):
    extras: list[dict] | None = None


class _Columns:
    """Column chunks of decoded records of one Struct type, fed a piece at a time: the
    `lead` int fields and every counter (default ABSENT) in one int64 block per piece,
    nullable ints as ABSENT where null, other fields (lists, strings) as (n, k) arrays or
    lists, and fields the schema does not declare (lenient decode) per row."""

    def __init__(self, record: type, lead: tuple[str, ...], skip: tuple[str, ...] = (),
                 nullable: tuple[str, ...] = ()):
        fields = _record_fields(record)
        self.known = [f.name for f in fields]
        self.lead = lead
        self.counts = [f.name for f in fields
                       if f.default == ABSENT and f.name not in lead and f.name not in skip]
        self.nullable = [k for k in nullable if k in self.known]
        self.others = [k for k in self.known if k not in lead and k not in skip
                       and k not in self.counts and k not in self.nullable]
        # lead and every counter in one pass: one tuple per record, flattened by fromiter
        # (measured 1.8x faster than one fromiter per field)
        self.int_get = attrgetter(*lead, *self.counts)
        self.width = len(lead) + len(self.counts)
        self.ints: list[np.ndarray] = []
        self.chunks: dict[str, list] = {k: [] for k in (*self.nullable, *self.others)}
        self.extra_rows: list[tuple[int, dict]] = []     # (row, fields not in the schema)
        self.n = 0

    def add(self, items: list) -> np.ndarray:
        """Take one decoded piece; -> its int block (lead columns first)."""
        n, ch = len(items), self.chunks
        block = np.fromiter(itertools.chain.from_iterable(map(self.int_get, items)), np.int64,
                            n * self.width).reshape(n, self.width)
        self.ints.append(block)
        for key in self.nullable:
            vals = list(map(attrgetter(key), items))
            nulls = vals.count(None)
            if nulls == n:
                ch[key].append(n)                 # all null: no array at all
            else:
                ch[key].append(np.fromiter(vals if not nulls else
                                           (ABSENT if v is None else v for v in vals),
                                           np.int64, n))
        for key in self.others:
            vals = list(map(attrgetter(key), items))
            if vals.count(None) == n:
                vals = n                          # all absent: a count, not n Nones
            elif type(vals[0]) is list and None not in vals \
                    and len(set(map(len, vals))) == 1:
                k = len(vals[0])          # (n, k) int64: 24 B a row, not ~143 B a list
                vals = np.fromiter(itertools.chain.from_iterable(vals), np.int64,
                                   n * k).reshape(n, k)
            ch[key].append(vals)
        for j, d in enumerate(getattr(items, "extras", None) or ()):
            extra = {k: v for k, v in d.items() if k not in self.known}
            if extra:
                self.extra_rows.append((self.n + j, extra))
        self.n += n
        return block

    def finish(self) -> tuple[dict[str, np.ndarray], list[ArgColumn]]:
        """-> (lead columns by name, every other field as an ArgColumn in schema order,
        fields not in the schema after them; absent fields give no column)."""
        ints = np.concatenate(self.ints) if self.ints else \
            np.zeros((0, self.width), np.int64)
        self.ints = []
        keys = [*self.lead, *self.counts]
        col = {k: np.ascontiguousarray(ints[:, j]) for j, k in enumerate(keys)}
        del ints
        args = []
        for key in self.known:
            if key in self.counts:
                args.append(_arg(key, col[key], col[key] != ABSENT))
            elif key in self.nullable:
                parts = self.chunks[key]
                if all(type(p) is int for p in parts):
                    continue
                v = np.concatenate([np.full(p, ABSENT, np.int64) if type(p) is int else p
                                    for p in parts])
                args.append(_arg(key, v, v != ABSENT))
            elif key in self.others:
                args.append(_other_arg(key, self.chunks[key]))
        for key in dict.fromkeys(k for _, extra in self.extra_rows for k in extra):
            values = [None] * self.n
            for row, extra in self.extra_rows:
                values[row] = extra.get(key)
            args.append(_list_arg(key, values))
        return ({k: col[k] for k in self.lead}, [a for a in args if a is not None])


def _other_arg(key: str, parts: list) -> ArgColumn | None:
    if not parts or all(type(p) is int for p in parts):
        return None
    if all(type(p) is np.ndarray for p in parts) and len({p.shape[1] for p in parts}) == 1:
        return ArgColumn(key, np.concatenate(parts))
    values = []
    for p in parts:
        values.extend([None] * p if type(p) is int else
                      p.tolist() if type(p) is np.ndarray else p)
    return _list_arg(key, values)


def _arg(key: str, values: np.ndarray, present: np.ndarray | None) -> ArgColumn | None:
    if present is not None:
        if not present.any():
            return None
        if present.all():
            present = None
    return ArgColumn(key, values, present)


def _list_arg(key: str, values: list) -> ArgColumn | None:
    """A column of non-int (or nullable, or extra) values: int64 when every present value
    is an int, (n, k) int64 when every value is a list of k ints, else a list."""
    present_n = len(values) - values.count(None)
    if present_n == 0:
        return None
    types = set(map(type, values))
    if types <= {int, type(None)}:
        present = np.array([v is not None for v in values]) if present_n < len(values) \
            else None
        try:
            arr = np.array([0 if v is None else v for v in values], dtype=np.int64)
        except OverflowError:
            return ArgColumn(key, values, present)
        return _arg(key, arr, present)
    if types == {list} and len(set(map(len, values))) == 1:
        try:
            arr = np.array(values, dtype=np.int64)
            if arr.ndim == 2:
                return ArgColumn(key, arr)
        except (OverflowError, ValueError, TypeError):
            pass
    if str in types:
        values = [safe_str(v) if type(v) is str else v for v in values]
    present = np.array([v is not None for v in values]) if present_n < len(values) else None
    return ArgColumn(key, values, present)


class _PhaseBuilder:
    """One thread's phase records (one stream) as columns, fed a decoded piece at a time."""

    def __init__(self, thread: int, spec: schema.PhaseSchema, path, where: str):
        self.thread, self.spec, self.path, self.where = thread, spec, path, where
        skip = (spec.kind,) if spec.kind else ()
        self.cols = _Columns(spec.record, (spec.start, spec.end), skip, spec.nullable)
        self.kind_chunks: list[np.ndarray] = []
        self.kind_codes: dict[str, int] = {}

    def add(self, base: int, items: list) -> None:
        n, spec = len(items), self.spec
        block = self.cols.add(items)
        ends = {spec.start: block[:, 0], spec.end: block[:, 1]}
        _check_order(self.path, self.where, ends, spec.end, spec.start, base)
        if spec.kind is None:
            self.kind_chunks.append(np.zeros(n, np.int32))
        else:
            names = list(map(attrgetter(spec.kind), items))
            codes = self.kind_codes
            for k in dict.fromkeys(names):        # first-appearance order
                if k not in codes:
                    codes[k] = len(codes)
            self.kind_chunks.append(np.fromiter(map(codes.__getitem__, names), np.int32, n))

    def finish(self) -> PhaseColumns:
        lead, args = self.cols.finish()
        kinds = [safe_str(k) for k in self.kind_codes] if self.spec.kind else \
            [self.spec.default_kind]
        kind = np.concatenate(self.kind_chunks) if self.kind_chunks else np.zeros(0, np.int32)
        cols = PhaseColumns(self.thread, self.spec.clock, lead[self.spec.start],
                            lead[self.spec.end], kind, kinds, args, source=self.where)
        epoch = cols.arg("run_epoch")
        if epoch is not None:
            cols.args.remove(epoch)
            cols.epoch = epoch.values
        return cols


def _phase_array(jp: JsonPieces, where: str, b: _PhaseBuilder,
                 decoder: _PhaseDecoder) -> None:
    for base, items in jp.array(where, decoder, SEP_OBJECTS, 256 << 10):
        b.add(base, items)
        del items


def _phase_stream(jp: JsonPieces, name: str, spec: schema.PhaseSchema) -> list[PhaseColumns]:
    """An August-style stream: a list per thread of records (or one flat list)."""
    decoder = _PhaseDecoder(spec.record)
    where = f"$.{name}"
    if not spec.per_thread:
        b = _PhaseBuilder(0, spec, jp.path, where)
        _phase_array(jp, where, b, decoder)
        return [b.finish()]
    out = []
    for t in jp.items(where):
        b = _PhaseBuilder(t, spec, jp.path, f"{where}[{t}]")
        _phase_array(jp, f"{where}[{t}]", b, decoder)
        out.append(b.finish())
    return out


# --------------------------------------------------------------------------- today's sections

_SCHEMA_VERSION = Literal[1]
_PRODUCER = Literal["aicpu", "aicore"]


def _scheduler_tasks(jp: JsonPieces, where: str) -> tuple[tuple[np.ndarray, int], str]:
    """`scheduler_tasks: {producer, records, [schema_version]}` -> (rows, width), producer."""
    producer = rows = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "producer":
            producer = jp.value(w, _PRODUCER)
        elif key == "records":
            rows = _rows(jp, w, (4, 5))
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
    `record_index` (so the joined columns are those of an August thread list)."""

    def __init__(self, path: str, where: str):
        self.path, self.where = path, where
        self.cols = _Columns(schema.SchedulerMetric, ("record_index",))

    def add(self, base: int, items: list) -> None:
        self.cols.add(items)

    def join(self, phases: PhaseColumns, order: list[str]) -> None:
        idx_d, args = self.cols.finish()
        idx = idx_d["record_index"]
        n = len(phases)
        bad = idx >= n
        if bad.any():
            j = int(np.argmax(bad))
            raise TraceInputError(self.path, f"{self.where}[{j}]: record_index {int(idx[j])} "
                                             f"is out of range ({n} records)")
        seen = np.zeros(n, dtype=bool)
        seen[idx] = True
        if int(np.count_nonzero(seen)) < len(idx):
            _, first = np.unique(idx, return_index=True)
            j = int(np.setdiff1d(np.arange(len(idx)), first)[0])
            raise TraceInputError(self.path, f"{self.where}[{j}]: record_index {int(idx[j])} "
                                             "appears twice")
        for a in args:
            own = phases.arg(a.key)
            if own is not None:
                raise TraceInputError(self.path, f"{self.where}: metric '{a.key}' would "
                                                 "overwrite the records' own field")
            phases.args.append(_scattered(a, idx, n))
        rank = {k: i for i, k in enumerate(order)}
        phases.args = [a for a in phases.args if a is not None]
        phases.args.sort(key=lambda a: rank.get(a.key, len(rank)))   # stable: extras last


def _scattered(a: ArgColumn, idx: np.ndarray, n: int) -> ArgColumn | None:
    """Column `a` of the metrics rows placed at their records `idx` of `n`."""
    present = np.zeros(n, dtype=bool)
    present[idx] = True if a.present is None else a.present
    if isinstance(a.values, np.ndarray):
        full = np.full((n, *a.values.shape[1:]), ABSENT, np.int64)
        full[idx] = a.values
        if full.ndim == 1:
            return _arg(a.key, full, present)
        if present.all():
            return ArgColumn(a.key, full)
        values = [None] * n
        for i, v in zip(idx.tolist(), a.values.tolist()):
            values[i] = v
    else:
        values = [None] * n
        for i, v in zip(idx.tolist(), a.values):
            values[i] = v
    return _list_arg(a.key, [v if p else None for v, p in zip(values, present.tolist())])


def _scheduler_stream(jp: JsonPieces, where: str, index: int) -> PhaseColumns:
    b = _PhaseBuilder(index, _SCHEDULER, jp.path, f"{where}.records")
    decoder = _PhaseDecoder(_SCHEDULER.record)
    header: dict = {}
    metrics = None
    has_records = False
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "records":
            _phase_array(jp, w, b, decoder)
            has_records = True
        elif key == "metrics":
            metrics = _Metrics(jp.path, w)
            for base, items in jp.array(w, _PhaseDecoder(schema.SchedulerMetric),
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
        metrics.join(cols, b.cols.known)
    cols.producer = header.get("producer") or "aicpu"
    capture = header.get("capture")
    cols.capture = None if capture is None else msgspec.structs.asdict(capture)
    cols.stream = {k: (safe_str(v) if isinstance(v, str) else v) for k, v in header.items()
                   if k not in ("producer", "capture", "runtime") and v is not None}
    return cols


def _scheduler_records(jp: JsonPieces, where: str, warnings: list[str]) -> list[PhaseColumns]:
    """`scheduler_records: {streams: [...], [schema_version]}` -> one PhaseColumns per
    stream, each at its `scheduler_id` (the writer omits idle schedulers, so the position in
    the list is not the id); ids missing, out of range or repeated: list order, warned."""
    streams = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "streams":
            streams = [_scheduler_stream(jp, f"{w}[{i}]", i) for i in jp.items(w)]
        elif key == "schema_version":
            jp.value(w, _SCHEMA_VERSION)
        else:
            jp.skip(w)
    if streams is None:
        raise TraceInputError(jp.path, f"{where}: missing 'streams'")
    ids = [s.stream.get("scheduler_id") for s in streams]
    if all(type(i) is int and 0 <= i < _MAX_SCHEDULER_ID for i in ids) \
            and len(set(ids)) == len(ids):
        for s, i in zip(streams, ids):
            s.thread = i
        streams.sort(key=attrgetter("thread"))
    elif streams:
        warnings.append(f"{jp.path}: {where}.streams have no distinct scheduler_id in "
                        f"0..{_MAX_SCHEDULER_ID - 1}; numbered in file order")
    return streams


def _lifecycle(jp: JsonPieces, where: str, warnings: list[str]) -> list[PhaseColumns]:
    """`aicpu_lifecycle_records`: one object per AICPU thread -> its phases (start/end
    pairs; 0: not recorded). Entries that are not such objects (the section is the
    runtime's JSON, written verbatim) are set aside with one warning."""
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
            raise TraceInputError(jp.path, word_error(exc, f"{where}[{i}]", doc=entry)) from None
        starts, ends, kinds = [], [], []
        for name, s_key, e_key in schema.LIFECYCLE_PHASES:
            s, e = getattr(r, s_key), getattr(r, e_key)
            if not s and not e:
                continue
            if e < s:
                raise TraceInputError(jp.path, f"{where}[{i}]: {e_key} {e} is before {s_key} "
                                               f"{s} (negative duration)")
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


# --------------------------------------------------------------------------- the file

def metadata_fields(meta: schema.SwimlaneMetadata, core_types: list[str]) -> dict:
    """The `SwimlaneRecords` fields taken from the file's metadata as they are (`core_types`
    as the caller made them text), for every reader that builds one."""
    return {
        "freq_hz": meta.clock_freq_hz,
        "num_cores": meta.num_cores if meta.num_cores is not None else len(core_types),
        "core_types": core_types, "core_to_thread": meta.core_to_thread,
        "clock_anchors": meta.clock_anchors,
        "host_timestamp_quantization_ns": meta.host_timestamp_quantization_ns,
        "orchestrator_source": meta.orchestrator_source,
        "host_orchestration_origin_ns": meta.host_orchestration_origin_ns}


def read_metadata(jp: JsonPieces, where: str) -> tuple[dict, schema.SwimlaneMetadata]:
    """The records file's `metadata` at `where`: (as written, checked against its schema);
    a `TraceInputError` naming the file and the field when it does not fit."""
    raw = jp.value(where)
    try:
        return raw, msgspec.convert(raw, schema.SwimlaneMetadata)
    except msgspec.ValidationError as exc:
        raise TraceInputError(jp.path, word_error(exc, where, doc=raw)) from None


def read_records(path: str | os.PathLike) -> SwimlaneRecords:
    """Read and check a records file of either layout (see the module docstring)."""
    path = str(path)
    level_key = level = meta = raw_meta = None
    rows: dict[str, tuple[np.ndarray, int]] = {}
    streams: dict[str, list[PhaseColumns]] = {}
    producer = None
    warnings: list[str] = []
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("a Simpler swimlane records file"):
            where = f"$.{key}"
            if key in schema.LEVEL_KEYS:
                level_key, level = key, jp.value(where, schema.SwimlaneLevel)
            elif key == "metadata":
                raw_meta, meta = read_metadata(jp, where)
            elif key == "aicore_tasks":
                rows[key] = _rows(jp, where, (5, 6, 7))
            elif key == "aicpu_tasks":
                rows[key] = _rows(jp, where, (4,))
            elif key == "scheduler_tasks":
                rows[key], producer = _scheduler_tasks(jp, where)
            elif key == "scheduler_records":
                streams[key] = _scheduler_records(jp, where, warnings)
            elif key == "aicpu_lifecycle_records":
                streams[key] = _lifecycle(jp, where, warnings)
            elif key in schema.PHASE_STREAMS:
                streams[key] = _phase_stream(jp, key, schema.PHASE_STREAMS[key])
            else:
                jp.skip(where)
    if level_key is None:
        raise TraceInputError(path, "missing 'chip_swimlane_level' (or the older "
                                    "'l2_swimlane_level'): not a Simpler swimlane records file")
    if meta is None:
        raise TraceInputError(path, "$: missing 'metadata'")
    for old, new in (("aicpu_tasks", "scheduler_tasks"),
                     ("aicpu_scheduler_phases", "scheduler_records")):
        if old in (*rows, *streams) and new in (*rows, *streams):
            raise TraceInputError(path, f"$: both '{old}' (August layout) and '{new}' (today's) "
                                        "are present; which one is this run's is ambiguous")
    today = any(k in rows or k in streams for k in _TODAY_KEYS) or (
        "aicore_tasks" in rows and rows["aicore_tasks"][1] == 7)
    gates = schema.STREAM_LEVEL_TODAY if today else schema.STREAM_LEVEL
    ignored = [k for k in (*rows, *streams) if gates.get(k, 1) > level
               and (len(rows[k][0]) if k in rows else any(len(s) for s in streams[k]))]
    for k in (*rows, *streams):
        if gates.get(k, 1) > level:
            (rows if k in rows else streams).pop(k)

    aic, aic_width = rows.get("aicore_tasks", (np.zeros((0, 7), np.int64), 7))
    cpu_key = "scheduler_tasks" if "scheduler_tasks" in rows else "aicpu_tasks"
    cpu_where = "$.scheduler_tasks.records" if cpu_key == "scheduler_tasks" else "$.aicpu_tasks"
    cpu_arr, _ = rows.get(cpu_key, (np.zeros((0, 5), np.int64), 5))
    if aic.shape[1] < 7:                                  # a 5/6-wide August file: no epoch
        aic = np.hstack([aic, np.full((len(aic), 1), ABSENT, np.int64)])
    if cpu_arr.shape[1] < 5:
        cpu_arr = np.hstack([cpu_arr, np.full((len(cpu_arr), 1), ABSENT, np.int64)])
    aicore = _row_columns(aic, schema.AICORE_COLUMNS)
    aicpu = _row_columns(cpu_arr, schema.SCHEDULER_TASK_COLUMNS)
    del aic, cpu_arr
    if cpu_key not in rows:                   # no task timing (or gated by the level)
        producer = None
    elif cpu_key == "aicpu_tasks":
        producer = "aicpu"
    core_types = [safe_str(t) for t in meta.core_types]
    if meta.num_cores is not None and meta.num_cores != len(core_types):
        raise TraceInputError(path, f"$.metadata.num_cores: {meta.num_cores}, but "
                                    f"metadata.core_types lists {len(core_types)} cores")
    _check_rows(path, aicore, aicpu, cpu_where, len(core_types))
    scheduler = streams.get("scheduler_records", streams.get("aicpu_scheduler_phases", []))
    orchestrator = streams.get("aicpu_orchestrator_phases", [])
    host_orch = streams.get("host_orchestrator_phases", [])
    uploads = streams.get("host_device_uploads", [])
    lifecycle = streams.get("aicpu_lifecycle_records", [])
    _check_ranges(path, meta.clock_freq_hz, aicore, aicpu, cpu_where,
                  [*scheduler, *orchestrator, *lifecycle])

    run_epoch = _run_epoch(meta, aicore, aicpu, [*scheduler, *orchestrator])
    set_aside: dict[str, int] = {}
    if run_epoch is not None:
        _keep_run(aicore, run_epoch, "aicore_tasks", set_aside)
        _keep_run(aicpu, run_epoch, cpu_key, set_aside)
        for key, group in (("scheduler_records", scheduler),
                           ("aicpu_orchestrator_phases", orchestrator)):
            for s in group:
                _keep_run_phases(s, run_epoch, key, set_aside)
    if set_aside:
        what = ", ".join(f"{n} {k}" for k, n in set_aside.items())
        warnings.append(f"{path}: {sum(set_aside.values())} records of another run (run_epoch "
                        f"other than this run's {run_epoch}) set aside, not drawn: {what}")
    _warn_unknown_kinds(path, scheduler, warnings)

    rec = SwimlaneRecords(
        path=path, level=level, level_key=level_key, **metadata_fields(meta, core_types),
        metadata=raw_meta, aicore=aicore, aicore_columns=aic_width, aicpu=aicpu,
        scheduler=scheduler, orchestrator=orchestrator, host_orchestrator=host_orch,
        host_uploads=uploads, ignored_streams=ignored,
        layout="today" if today else "august",
        runtime=None if meta.runtime is None else safe_str(meta.runtime),
        host_clock_domain_id=None if meta.host_clock_domain_id is None
        else safe_str(meta.host_clock_domain_id),
        scheduler_task_producer=producer,
        run_epoch=run_epoch, set_aside=set_aside, lifecycle=lifecycle, warnings=warnings)
    return rec


def _check_ranges(path, freq: int, aicore: dict, aicpu: dict, cpu_where: str,
                  device_streams: list[PhaseColumns]) -> None:
    """The one range rule on every device cycle value (host ns are bounded by type)."""
    limit = schema.max_cycles(freq)
    for key, col in (("start_cycles", 3), ("end_cycles", 4)):
        check_clock_range(path, "$.aicore_tasks", aicore[key], limit, key,
                          lambda i, c=col: f"[{i}][{c}]")
    for key, col in (("dispatch_cycles", 2), ("finish_cycles", 3)):
        check_clock_range(path, cpu_where, aicpu[key], limit, key,
                          lambda i, c=col: f"[{i}][{c}]")
    for s in device_streams:
        # end >= start was checked per record, so the end is the one to bound
        check_clock_range(path, s.source, s.end, limit, "end_cycles")


def _run_epoch(meta, aicore: dict, aicpu: dict, streams: list[PhaseColumns]) -> int | None:
    """This run's epoch: metadata.collection's, else the most common among the AICore rows
    (ties: the later run), then the scheduler rows, then the phases; None when no record
    carries one (an August file)."""
    if meta.collection is not None:
        return meta.collection.run_epoch
    for col in (aicore["run_epoch"], aicpu["run_epoch"],
                *(s.epoch for s in streams if s.epoch is not None)):
        known = col[col != ABSENT]
        if len(known):
            vals, counts = np.unique(known, return_counts=True)
            return int(vals[counts == counts.max()].max())
    return None


def _keep_run(cols: dict[str, np.ndarray], run: int, key: str, set_aside: dict) -> None:
    ep = cols["run_epoch"]
    keep = (ep == run) | (ep == ABSENT)
    if not keep.all():
        set_aside[key] = set_aside.get(key, 0) + int((~keep).sum())
        for k in cols:
            cols[k] = cols[k][keep]


def _keep_run_phases(s: PhaseColumns, run: int, key: str, set_aside: dict) -> None:
    if s.epoch is None:
        return
    keep = (s.epoch == run) | (s.epoch == ABSENT)
    if keep.all():
        return
    set_aside[key] = set_aside.get(key, 0) + int((~keep).sum())
    t = s.take(np.flatnonzero(keep))
    s.start, s.end, s.kind, s.args, s.epoch = t.start, t.end, t.kind, t.args, t.epoch


def _warn_unknown_kinds(path: str, scheduler: list[PhaseColumns], warnings: list[str]) -> None:
    counts: dict[str, int] = {}
    for s in scheduler:
        for code, name in enumerate(s.kinds):
            if name not in schema.KNOWN_PHASE_KINDS:
                n = int(np.count_nonzero(s.kind == code))
                if n:
                    counts[name] = counts.get(name, 0) + n
    if counts:
        names = ", ".join(sorted(counts)[:8]) + (", ..." if len(counts) > 8 else "")
        warnings.append(f"{path}: {sum(counts.values())} scheduler phases of {len(counts)} "
                        f"kind(s) this reader does not know ({names}), drawn under their own "
                        "names")
