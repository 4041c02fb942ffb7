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
unknown members are skipped. Every value that reaches a clock conversion is range-checked
here, once (`simpler_schema.MAX_CLOCK_NS`), and core ids against `metadata.core_types`.

One bad record costs one record. A record that cannot be interpreted (a row of another
width or with a value that is no count, a phase or metric record that does not fit its
schema, a negative duration, a core outside the core table, a cycle past the range rule, a
lifecycle entry that does not fit) is skipped alone; a list field of another length than
the rest of its column (`shared_at_end` of 2 values where the others have 3) is dropped
for that record alone. What was skipped is counted, per array, in one warning per file
that quotes the first case as the strict reader would have refused it. What makes the
file as a whole uninterpretable (not JSON, a section of the wrong type, a missing
section, the metadata, both layouts at once) is a `TraceInputError` naming the file and
the JSON path.

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

import collections
import functools
import itertools
import os
from collections.abc import Callable
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

_ROW_TYPE = list[schema.Count]

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
    index: np.ndarray | None = None      # each record's position in its JSON array

    def __len__(self) -> int:
        return len(self.start)

    def arg(self, key: str) -> ArgColumn | None:
        return next((a for a in self.args if a.key == key), None)

    def take(self, idx: np.ndarray) -> PhaseColumns:
        """The records `idx` (ascending) of this stream, as a stream of their own (args
        absent from all of them dropped)."""
        args = [t for t in (_take_arg(a, idx) for a in self.args) if t is not None]
        return PhaseColumns(self.thread, self.clock, self.start[idx], self.end[idx],
                            self.kind[idx], self.kinds, args, self.source, self.producer,
                            self.stream, self.capture,
                            None if self.epoch is None else self.epoch[idx],
                            None if self.index is None else self.index[idx])


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

class _Skipped:
    """A file's bad records, each skipped alone: per array the count and the first reason
    (as the strict reader would have refused the file for it)."""

    def __init__(self) -> None:
        self.by_where: dict[str, list] = {}

    def add(self, where: str, reason: str, n: int = 1) -> None:
        entry = self.by_where.setdefault(where, [0, reason])
        entry[0] += n

    def warning(self, path: str) -> str | None:
        if not self.by_where:
            return None
        total = sum(n for n, _ in self.by_where.values())
        parts = [f"{n} in {where} (the first: {reason})"
                 for where, (n, reason) in self.by_where.items()]
        return (f"{path}: {total} bad record(s) skipped, each alone, the rest read as usual: "
                + "; ".join(parts))


class _Invalid:
    """A record that did not decode, standing in its place until its array's builder
    skips it; `reason` continues its JSON path (`[2]: expected int, got str`)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class _Mixed(list):
    """A piece decoded record by record: some of its elements may be `_Invalid` (a piece
    that decoded whole is a plain list, and is not looked at one by one)."""

    extras: list[dict] | None = None


def _each(objs: list, typ) -> list:
    """Each element of a plainly decoded piece converted to `typ` on its own; one that
    does not fit is an `_Invalid` with msgspec's reason."""
    out = _Mixed()
    for o in objs:
        try:
            out.append(msgspec.convert(o, typ))
        except msgspec.ValidationError as exc:
            out.append(_Invalid(word_error(exc, "", doc=o)))
    return out


class _RowDecoder:
    """Rows of counts, decoded whole (the fast path); a piece with a row that does not fit
    is decoded again row by row, the bad ones `_Invalid`."""

    type = list[_ROW_TYPE]
    _strict = msgspec.json.Decoder(list[_ROW_TYPE])
    _plain = msgspec.json.Decoder(list)

    def decode(self, piece):
        try:
            return self._strict.decode(piece)
        except msgspec.ValidationError:
            return _each(self._plain.decode(piece), _ROW_TYPE)

    def convert(self, obj):
        try:
            return msgspec.convert(obj, self.type)
        except msgspec.ValidationError:
            return _each(obj, _ROW_TYPE)


_ROWS = _RowDecoder()


def _rows(jp: JsonPieces, where: str, widths: tuple[int, ...], skipped: _Skipped
          ) -> tuple[np.ndarray, int, np.ndarray]:
    """An array of integer rows -> ((n, max(widths)) int64, the width found on disk (columns
    a narrower file lacks are 0, except the last, run_epoch, which is ABSENT), each kept
    row's index). The file's width is its first good row's; a row of another width, or with
    a value that is no count, is skipped alone."""
    parts, index, width = [], [], None
    expected = " or ".join(filter(None, (", ".join(map(str, widths[:-1])), str(widths[-1]))))
    for base, rows in jp.array(where, _ROWS, SEP_ROWS):
        lens = set(map(len, rows)) if type(rows) is not _Mixed else set()
        only = lens.pop() if len(lens) == 1 else None
        if only in widths and (width is None or only == width):
            good = range(len(rows))              # the usual piece: one width, all counts
            width = only
        else:
            good = [i for i, r in enumerate(rows) if type(r) is not _Invalid
                    and len(r) in widths and (width is None or len(r) == width)]
            if width is None and good:
                width = len(rows[good[0]])
                good = [i for i in good if len(rows[i]) == width]
        if len(good) < len(rows):
            for i in sorted(set(range(len(rows))) - set(good)):
                r = rows[i]
                if type(r) is _Invalid:
                    why = f"{where}[{base + i}]{r.reason}"
                elif len(r) in widths:
                    why = (f"{where}[{base + i}]: {len(r)} columns, expected {width}, like the "
                           "rows before it")
                else:
                    why = f"{where}[{base + i}]: {len(r)} columns, expected {expected}"
                skipped.add(where, why)
            rows = [rows[i] for i in good]
        n = len(rows)
        if n:
            parts.append(np.fromiter(itertools.chain.from_iterable(rows), np.int64,
                                     n * width).reshape(n, width))
            index.append(base + (np.arange(n, dtype=np.int64) if type(good) is range
                                 else np.array(good, dtype=np.int64)))
        del rows
    full = max(widths)
    arr = np.concatenate(parts) if parts else np.zeros((0, full), np.int64)
    if arr.shape[1] < full:
        pad = np.zeros((len(arr), full - arr.shape[1]), np.int64)
        pad[:, -1] = ABSENT
        arr = np.hstack([arr, pad])
    idx = np.concatenate(index) if index else np.zeros(0, np.int64)
    return arr, (width or full), idx


def _row_columns(arr: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(arr[:, j]) for j, k in enumerate(names)}


def _bad_rows(cols: dict, idx: np.ndarray, bad: np.ndarray, skipped: _Skipped, where: str,
              why) -> None:
    """Drop the rows `bad` of `cols` (and `idx`, their JSON positions, in place at key
    "index"), each counted in `skipped` (`why(i)`: the reason for kept row i)."""
    if not bad.any():
        return
    for i in np.flatnonzero(bad).tolist():
        skipped.add(where, why(i))
    keep = ~bad
    for k in cols:
        cols[k] = cols[k][keep]


def _check_rows(aicore: dict, cpu: dict, cpu_where: str, ncores: int, path,
                skipped: _Skipped) -> None:
    """Rows whose core is not in the core table, that end before they start, or whose
    receive time is after their start: skipped alone (a table with no cores at all for its
    rows is the file's problem: refused)."""
    for where, cols in (("$.aicore_tasks", aicore), (cpu_where, cpu)):
        core = cols["core_id"]
        if len(core) and not ncores:
            raise TraceInputError(path, f"{where}: {len(core)} rows, but metadata.core_types "
                                        "lists no cores")
        idx = cols["index"]
        _bad_rows(cols, idx, core >= ncores, skipped, where, lambda i, c=cols, x=idx, w=where: (
            f"{w}[{x[i]}][0]: core_id {int(c['core_id'][i])} is not in "
            f"metadata.core_types ({ncores} cores)"))
    a = aicore
    _bad_rows(a, a["index"], a["end_cycles"] < a["start_cycles"], skipped, "$.aicore_tasks",
              lambda i, x=a["index"]: (
                  f"$.aicore_tasks[{x[i]}]: end_cycles {int(a['end_cycles'][i])} is before "
                  f"start_cycles {int(a['start_cycles'][i])} (negative duration)"))
    _bad_rows(a, a["index"], a["receive_to_start_cycles"] > a["start_cycles"], skipped,
              "$.aicore_tasks", lambda i, x=a["index"]: (
                  f"$.aicore_tasks[{x[i]}][5]: receive_to_start_cycles "
                  f"{int(a['receive_to_start_cycles'][i])} exceeds start_cycles "
                  f"{int(a['start_cycles'][i])}"))
    c = cpu
    _bad_rows(c, c["index"], c["finish_cycles"] < c["dispatch_cycles"], skipped, cpu_where,
              lambda i, x=c["index"]: (
                  f"{cpu_where}[{x[i]}]: finish_cycles {int(c['finish_cycles'][i])} is before "
                  f"dispatch_cycles {int(c['dispatch_cycles'][i])} (negative duration)"))


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


def _out_of_range(values: np.ndarray, limit: int, what: str) -> tuple[np.ndarray, Callable]:
    """The mask of `values` past the range rule, and the reason for one of them."""
    bad = values >= limit
    return bad, lambda v: (f"{what} {v} is out of range (device and host times must stay "
                           f"under 2^62 ns; at this clock, below {limit})")


# --------------------------------------------------------------------------- record columns

@functools.cache
def _phase_decoders(record: type) -> tuple:
    """The strict, lenient and plain decoders of a record type and its lenient type, made
    once per type: building them (and `msgspec.structs.fields` below) evaluates the schema's
    annotations anew each time, about 1 ms per thread stream of every file read."""
    lenient = msgspec.defstruct(record.__name__ + "Lenient", [], bases=(record,),
                                forbid_unknown_fields=False, gc=False)
    return (msgspec.json.Decoder(list[record]), msgspec.json.Decoder(list[lenient]),
            msgspec.json.Decoder(list), lenient)


@functools.cache
def _record_fields(record: type) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(record)


class _PhaseDecoder:
    """Typed decoding of records; a record with a field the schema does not declare
    switches the stream to a lenient decode plus a plain one for the extra fields. A piece
    with a record that does not fit its schema is decoded again record by record, the bad
    ones `_Invalid` (their builder skips them)."""

    def __init__(self, record: type):
        self.strict, self.lenient, self.plain, self.lenient_type = _phase_decoders(record)
        self.loose = False

    def decode(self, piece):
        if not self.loose:
            try:
                return self.strict.decode(piece)
            except msgspec.ValidationError as exc:
                if "unknown field" not in str(exc):
                    return self._each(self.plain.decode(piece))
                self.loose = True
        try:
            items = _WithExtras(self.lenient.decode(piece))
        except msgspec.ValidationError:
            return self._each(self.plain.decode(piece))
        items.extras = self.plain.decode(piece)
        return items

    def convert(self, obj):
        """A piece the Python json path decoded (see `json_pieces`), typed the same way."""
        try:
            return msgspec.convert(obj, self.type)
        except msgspec.ValidationError:
            return self._each(obj)

    def _each(self, objs: list):
        self.loose = True
        items = _each(objs, self.lenient_type)
        items.extras = [o if isinstance(o, dict) else {} for o in objs]
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

    def pop_last(self) -> None:
        """Take back the piece `add` took last (to add it again without some records)."""
        n = len(self.ints.pop())
        for parts in self.chunks.values():
            parts.pop()
        self.n -= n
        self.extra_rows = [(r, e) for r, e in self.extra_rows if r < self.n]

    def finish(self, where: str = "", skipped: _Skipped | None = None,
               index: np.ndarray | None = None
               ) -> tuple[dict[str, np.ndarray], list[ArgColumn]]:
        """-> (lead columns by name, every other field as an ArgColumn in schema order,
        fields not in the schema after them; absent fields give no column). A list field
        of another length than the rest of its column is dropped for that record, counted
        in `skipped` under `where` (`index`: the records' JSON positions)."""
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
                args.append(_other_arg(key, self.chunks[key], where, skipped, index))
        for key in dict.fromkeys(k for _, extra in self.extra_rows for k in extra):
            values = [None] * self.n
            for row, extra in self.extra_rows:
                values[row] = extra.get(key)
            args.append(_list_arg(key, values, where, skipped, index))
        return ({k: col[k] for k in self.lead}, [a for a in args if a is not None])


def _other_arg(key: str, parts: list, where: str = "", skipped: _Skipped | None = None,
               index: np.ndarray | None = None) -> ArgColumn | None:
    if not parts or all(type(p) is int for p in parts):
        return None
    if all(type(p) is np.ndarray for p in parts) and len({p.shape[1] for p in parts}) == 1:
        return ArgColumn(key, np.concatenate(parts))
    values = []
    for p in parts:
        values.extend([None] * p if type(p) is int else
                      p.tolist() if type(p) is np.ndarray else p)
    return _list_arg(key, values, where, skipped, index)


def _arg(key: str, values: np.ndarray, present: np.ndarray | None) -> ArgColumn | None:
    if present is not None:
        if not present.any():
            return None
        if present.all():
            present = None
    return ArgColumn(key, values, present)


def _list_arg(key: str, values: list, where: str = "", skipped: _Skipped | None = None,
              index: np.ndarray | None = None) -> ArgColumn | None:
    """A column of non-int (or nullable, or extra) values: int64 when every present value
    is an int, (n, k) int64 when every value is a list of k ints, else a list. Lists of ints
    of several lengths: the most common length is the column's, and a list of another
    length is dropped for its record alone (None), counted in `skipped`."""
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
    if types <= {list, type(None)} and all(type(x) is int for v in values if v is not None
                                           for x in v):
        lengths = collections.Counter(len(v) for v in values if v is not None)
        k = max(lengths, key=lambda n: (lengths[n], -n))
        if len(lengths) > 1:
            odd = [i for i, v in enumerate(values) if v is not None and len(v) != k]
            if skipped is not None:
                for i in odd:
                    at = int(index[i]) if index is not None else i
                    skipped.add(f"{where}.{key}", f"{where}[{at}].{key}: {len(values[i])} "
                                                  f"values where the others have {k}: "
                                                  "dropped for that record alone")
            values = list(values)
            for i in odd:
                values[i] = None
            present_n -= len(odd)
        if None not in values:
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


def _kept(items: list, keep: list[int]) -> list:
    """The records `keep` of a decoded piece, with their extra fields (if any)."""
    out = _WithExtras([items[i] for i in keep])
    extras = getattr(items, "extras", None)
    out.extras = None if extras is None else [extras[i] for i in keep]
    return out


class _PhaseBuilder:
    """One thread's phase records (one stream) as columns, fed a decoded piece at a time.
    A record that did not decode, or ends before it starts, is skipped alone."""

    def __init__(self, thread: int, spec: schema.PhaseSchema, path, where: str,
                 skipped: _Skipped):
        self.thread, self.spec, self.path, self.where = thread, spec, path, where
        self.skipped = skipped
        skip = (spec.kind,) if spec.kind else ()
        self.cols = _Columns(spec.record, (spec.start, spec.end), skip, spec.nullable)
        self.kind_chunks: list[np.ndarray] = []
        self.kind_codes: dict[str, int] = {}
        self.index: list[np.ndarray] = []
        self.seen = 0                           # records in the JSON array, bad ones too

    def add(self, base: int, items: list) -> None:
        spec, where = self.spec, self.where
        self.seen = max(self.seen, base + len(items))
        keep = None
        if type(items) is _Mixed:                # some records did not decode: skip them
            keep = [i for i, it in enumerate(items) if type(it) is not _Invalid]
            for i, it in enumerate(items):
                if type(it) is _Invalid:
                    self.skipped.add(where, f"{where}[{base + i}]{it.reason}")
            items = _kept(items, keep)
        block = self.cols.add(items)
        backwards = block[:, 1] < block[:, 0]    # the lead columns: start, end
        if backwards.any():                      # rare: take the piece back without them
            self.cols.pop_last()
            at = keep if keep is not None else list(range(len(items)))
            for i in np.flatnonzero(backwards).tolist():
                self.skipped.add(where, f"{where}[{base + at[i]}]: {spec.end} "
                                        f"{int(block[i, 1])} is before {spec.start} "
                                        f"{int(block[i, 0])} (negative duration)")
            ok = np.flatnonzero(~backwards).tolist()
            keep = [at[i] for i in ok]
            items = _kept(items, ok)
            self.cols.add(items)
        n = len(items)
        self.index.append(base + (np.arange(n, dtype=np.int64) if keep is None
                                  else np.array(keep, dtype=np.int64)))
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
        lead, args = self.cols.finish(self.where, self.skipped)
        kinds = [safe_str(k) for k in self.kind_codes] if self.spec.kind else \
            [self.spec.default_kind]
        kind = np.concatenate(self.kind_chunks) if self.kind_chunks else np.zeros(0, np.int32)
        cols = PhaseColumns(self.thread, self.spec.clock, lead[self.spec.start],
                            lead[self.spec.end], kind, kinds, args, source=self.where,
                            index=np.concatenate(self.index) if self.index
                            else np.zeros(0, np.int64))
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


def _phase_stream(jp: JsonPieces, name: str, spec: schema.PhaseSchema,
                  skipped: _Skipped) -> list[PhaseColumns]:
    """An August-style stream: a list per thread of records (or one flat list)."""
    decoder = _PhaseDecoder(spec.record)
    where = f"$.{name}"
    if not spec.per_thread:
        b = _PhaseBuilder(0, spec, jp.path, where, skipped)
        _phase_array(jp, where, b, decoder)
        return [b.finish()]
    out = []
    for t in jp.items(where):
        b = _PhaseBuilder(t, spec, jp.path, f"{where}[{t}]", skipped)
        _phase_array(jp, f"{where}[{t}]", b, decoder)
        out.append(b.finish())
    return out


# --------------------------------------------------------------------------- today's sections

_SCHEMA_VERSION = Literal[1]
_PRODUCER = Literal["aicpu", "aicore"]


def _scheduler_tasks(jp: JsonPieces, where: str, skipped: _Skipped) -> tuple[tuple, str]:
    """`scheduler_tasks: {producer, records, [schema_version]}` -> (rows, width, index),
    producer."""
    producer = rows = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "producer":
            producer = jp.value(w, _PRODUCER)
        elif key == "records":
            rows = _rows(jp, w, (4, 5), skipped)
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

    def __init__(self, path: str, where: str, skipped: _Skipped):
        self.path, self.where, self.skipped = path, where, skipped
        self.cols = _Columns(schema.SchedulerMetric, ("record_index",))
        self.index: list[np.ndarray] = []

    def add(self, base: int, items: list) -> None:
        keep = range(len(items))
        if type(items) is _Mixed:
            keep = [i for i, it in enumerate(items) if type(it) is not _Invalid]
            for i, it in enumerate(items):
                if type(it) is _Invalid:
                    self.skipped.add(self.where, f"{self.where}[{base + i}]{it.reason}")
            items = _kept(items, keep)
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
            args = [t for t in (_take_arg(a, keep) for a in args) if t is not None]
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


def _take_arg(a: ArgColumn, idx: np.ndarray) -> ArgColumn | None:
    """Rows `idx` of a column (None when none of them holds a value)."""
    values = a.values[idx] if isinstance(a.values, np.ndarray) else \
        [a.values[i] for i in idx.tolist()]
    present = None if a.present is None else a.present[idx]
    if present is not None and not present.any():
        return None
    return ArgColumn(a.key, values, None if present is not None and present.all() else present,
                     a.table)


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


def _scheduler_stream(jp: JsonPieces, where: str, index: int,
                      skipped: _Skipped) -> PhaseColumns:
    b = _PhaseBuilder(index, _SCHEDULER, jp.path, f"{where}.records", skipped)
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
            metrics = _Metrics(jp.path, w, skipped)
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
        metrics.join(cols, b.cols.known, b.seen)
    cols.producer = header.get("producer") or "aicpu"
    capture = header.get("capture")
    cols.capture = None if capture is None else msgspec.structs.asdict(capture)
    cols.stream = {k: (safe_str(v) if isinstance(v, str) else v) for k, v in header.items()
                   if k not in ("producer", "capture", "runtime") and v is not None}
    return cols


def _scheduler_records(jp: JsonPieces, where: str, warnings: list[str],
                       skipped: _Skipped) -> list[PhaseColumns]:
    """`scheduler_records: {streams: [...], [schema_version]}` -> one PhaseColumns per
    stream, each at its `scheduler_id` (the writer omits idle schedulers, so the position in
    the list is not the id); ids missing, out of range or repeated: list order, warned."""
    streams = None
    for key in jp.object(where):
        w = f"{where}.{key}"
        if key == "streams":
            streams = [_scheduler_stream(jp, f"{w}[{i}]", i, skipped) for i in jp.items(w)]
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


def _lifecycle(jp: JsonPieces, where: str, warnings: list[str],
               skipped: _Skipped) -> list[PhaseColumns]:
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
    skipped = _Skipped()
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("a Simpler swimlane records file"):
            where = f"$.{key}"
            if key in schema.LEVEL_KEYS:
                level_key, level = key, jp.value(where, schema.SwimlaneLevel)
            elif key == "metadata":
                raw_meta, meta = read_metadata(jp, where)
            elif key == "aicore_tasks":
                rows[key] = _rows(jp, where, (5, 6, 7), skipped)
            elif key == "aicpu_tasks":
                rows[key] = _rows(jp, where, (4,), skipped)
            elif key == "scheduler_tasks":
                rows[key], producer = _scheduler_tasks(jp, where, skipped)
            elif key == "scheduler_records":
                streams[key] = _scheduler_records(jp, where, warnings, skipped)
            elif key == "aicpu_lifecycle_records":
                streams[key] = _lifecycle(jp, where, warnings, skipped)
            elif key in schema.PHASE_STREAMS:
                streams[key] = _phase_stream(jp, key, schema.PHASE_STREAMS[key], skipped)
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

    none = np.zeros(0, np.int64)
    aic, aic_width, aic_at = rows.get("aicore_tasks", (np.zeros((0, 7), np.int64), 7, none))
    cpu_key = "scheduler_tasks" if "scheduler_tasks" in rows else "aicpu_tasks"
    cpu_where = "$.scheduler_tasks.records" if cpu_key == "scheduler_tasks" else "$.aicpu_tasks"
    cpu_arr, _, cpu_at = rows.get(cpu_key, (np.zeros((0, 5), np.int64), 5, none))
    if aic.shape[1] < 7:                                  # a 5/6-wide August file: no epoch
        aic = np.hstack([aic, np.full((len(aic), 1), ABSENT, np.int64)])
    if cpu_arr.shape[1] < 5:
        cpu_arr = np.hstack([cpu_arr, np.full((len(cpu_arr), 1), ABSENT, np.int64)])
    aicore = _row_columns(aic, schema.AICORE_COLUMNS)
    aicpu = _row_columns(cpu_arr, schema.SCHEDULER_TASK_COLUMNS)
    aicore["index"], aicpu["index"] = aic_at, cpu_at     # JSON positions, until checked
    del aic, cpu_arr
    if cpu_key not in rows:                   # no task timing (or gated by the level)
        producer = None
    elif cpu_key == "aicpu_tasks":
        producer = "aicpu"
    core_types = [safe_str(t) for t in meta.core_types]
    if meta.num_cores is not None and meta.num_cores != len(core_types):
        raise TraceInputError(path, f"$.metadata.num_cores: {meta.num_cores}, but "
                                    f"metadata.core_types lists {len(core_types)} cores")
    _check_rows(aicore, aicpu, cpu_where, len(core_types), path, skipped)
    scheduler = streams.get("scheduler_records", streams.get("aicpu_scheduler_phases", []))
    orchestrator = streams.get("aicpu_orchestrator_phases", [])
    host_orch = streams.get("host_orchestrator_phases", [])
    uploads = streams.get("host_device_uploads", [])
    lifecycle = streams.get("aicpu_lifecycle_records", [])
    _check_ranges(meta.clock_freq_hz, aicore, aicpu, cpu_where,
                  [*scheduler, *orchestrator, *lifecycle], skipped)
    del aicore["index"], aicpu["index"]
    said = skipped.warning(path)
    if said:
        warnings.append(said)

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


def _check_ranges(freq: int, aicore: dict, aicpu: dict, cpu_where: str,
                  device_streams: list[PhaseColumns], skipped: _Skipped) -> None:
    """The one range rule on every device cycle value (host ns are bounded by type): a
    record past it is skipped alone."""
    limit = schema.max_cycles(freq)
    for where, cols, checks in (("$.aicore_tasks", aicore, (("start_cycles", 3),
                                                             ("end_cycles", 4))),
                                (cpu_where, aicpu, (("dispatch_cycles", 2),
                                                    ("finish_cycles", 3)))):
        for key, col in checks:
            bad, why = _out_of_range(cols[key], limit, key)
            _bad_rows(cols, cols["index"], bad, skipped, where,
                      lambda i, c=cols, k=key, j=col, w=where, y=why: (
                          f"{w}[{int(c['index'][i])}][{j}]: {y(int(c[k][i]))}"))
    for st in device_streams:
        # end >= start was checked per record, so the end is the one to bound
        bad, why = _out_of_range(st.end, limit, "end_cycles")
        if bad.any():
            at = st.index if st.index is not None else np.arange(len(st.end))
            for i in np.flatnonzero(bad).tolist():
                skipped.add(st.source, f"{st.source}[{int(at[i])}]: {why(int(st.end[i]))}")
            t = st.take(np.flatnonzero(~bad))
            st.start, st.end, st.kind, st.args, st.epoch, st.index = (
                t.start, t.end, t.kind, t.args, t.epoch, t.index)


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
