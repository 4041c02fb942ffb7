"""Readers of Simpler's capture files: every file of a capture leaf in, checked NumPy
columns out.

`discover_captures(path)` finds the leaves (a flat `dfx_outputs/` or each `rank<r>/d<k>/`)
and `read_capture(files)` reads and checks every file of one leaf into a `Capture`:
records (`chip_swimlane_records.json`, older `l2_swimlane_records.json`), `deps.json`,
`name_map_*.json`, `dispatch_program.json`, `dispatch_identity.json`, `merged_swimlane*.json`
(Simpler's converted trace), the run log and `host_phase_records.jsonl`. `pmu.csv`,
`args_dump/` and `scope_stats/` are listed, not parsed. Readers do no alignment and no layout.

Every problem is a `TraceInputError(path, problem)`, the problem naming the JSON path as
the whole file counts it (`$.tasks[17].kernel_ids[2]: expected int, got str`). The records
file and deps.json are read a piece at a time (`json_pieces`) with the typed decoders of
`simpler_schema`, each piece going straight into column chunks, so a 1M-task capture never
exists as Python objects at once.

Measured (`benchmarks/bench_readers.py`: the real `tmr_bgemm_case0_l4_depgen` repeated in
time; `read_records` + `read_deps` against `orjson.loads` of the same two files, GC paused,
2 shared cores): 100K tasks 1.42 s CPU and 85 MB peak vs 1.44 s and 892 MB; 1M tasks
(593 + 704 MB of JSON) 13.3 s CPU and 531 MB peak vs 17.7 s and 8,784 MB.

Rules learned from the real captures, where the format notes are silent:
- Level gating: a stream the level does not collect (e.g. scheduler phases at level 2) is
  ignored if present and named in `SwimlaneRecords.ignored_streams`.
- AICore rows have 6 columns (the 6th `receive_to_start_cycles`); older 5-column rows get
  0 there; one file never mixes the two.
- Host-orchestrated captures carry `host_orchestrator_phases` and `host_device_uploads` in
  host CLOCK_MONOTONIC ns (`PhaseColumns.clock == "host_ns"`), not device cycles.
- Phase kinds are free strings (unknown kinds kept). Orchestrator phases have no kind: each
  is a "submit".
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import math
import os
import re
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import (
    check_input_dir,
    entry_is_dir,
    list_input_dir,
    open_input,
)
from pypto.compile_profiling.timeline.model import ArgColumn
from pypto.compile_profiling.trace_merge import simpler_schema as schema
from pypto.compile_profiling.trace_merge.json_pieces import (
    SEP_OBJECTS,
    SEP_ROWS,
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.compile_profiling.trace_merge.read_run_log import (
    HostPhaseBatch,
    RunLog,
    read_host_phase_records,
    read_run_log,
)
from pypto.errors import TraceInputError

__all__ = [
    "LISTED_ONLY_NAMES", "RECORD_FILE_NAMES", "Capture", "CaptureFiles", "ConvertedCounter",
    "ConvertedFlow", "ConvertedSlice", "ConvertedTrace",
    "DepsGraph", "DispatchIdentity", "DispatchProgram", "NameMap", "PhaseColumns", "SwimlaneRecords",
    "add_loose_file", "discover_captures", "read_capture", "read_converted_trace", "read_deps",
    "read_dispatch_identity", "read_dispatch_program", "read_name_map", "read_records",
]

log = logging.getLogger(__name__)

RECORD_FILE_NAMES = ("chip_swimlane_records.json", "l2_swimlane_records.json")
LISTED_ONLY_NAMES = ("pmu.csv", "args_dump", "scope_stats")
SMALL_FILE_BYTES = 64 << 20      # name maps, dispatch_program.json: far below this


# --------------------------------------------------------------------------- discovery

@dataclass(slots=True)
class CaptureFiles:
    """The files of one capture leaf (a flat `dfx_outputs/` or one `rank<r>/d<k>/`)."""

    directory: str
    rank: int | None = None
    dispatch: int | None = None
    records: str | None = None
    deps: str | None = None
    name_maps: list[str] = field(default_factory=list)
    converted: list[str] = field(default_factory=list)        # merged_swimlane*.json
    run_logs: list[str] = field(default_factory=list)         # host_log*.txt, *.log
    host_phase_records: str | None = None
    dispatch_program: str | None = None
    dispatch_identity: str | None = None
    listed_only: list[str] = field(default_factory=list)      # pmu.csv, args_dump/, scope_stats/

    @property
    def label(self) -> str:
        """`r<rank>` / `r<rank>d<k>` in the distributed layout, else the directory name."""
        if self.rank is not None:
            return f"r{self.rank}" + (f"d{self.dispatch}" if self.dispatch is not None else "")
        return Path(self.directory).name

    def usable(self) -> bool:
        return bool(self.records or self.converted or self.deps or self.run_logs)


_RANK_RE = re.compile(r"rank(\d+)$")
_DISPATCH_RE = re.compile(r"d(\d+)$")


def file_kind(name: str) -> str | None:
    """What a capture file is, by its name (None: not a capture file)."""
    if name in RECORD_FILE_NAMES:
        return "records"
    if name == "deps.json":
        return "deps"
    if name.startswith("name_map") and name.endswith(".json"):
        return "name_map"
    if name.startswith("merged_swimlane") and name.endswith(".json"):
        return "converted"
    if name == "dispatch_program.json":
        return "dispatch_program"
    if name == "dispatch_identity.json":
        return "dispatch_identity"
    if name == "host_phase_records.jsonl":
        return "host_phase_records"
    if (name.startswith("host_log") and name.endswith(".txt")) or name.endswith(".log"):
        return "run_log"
    if name in LISTED_ONLY_NAMES:
        return "listed_only"
    return None


def files_of(files: CaptureFiles) -> list[str]:
    """Every file of a capture leaf (what an output must not overwrite)."""
    return [f for f in (files.records, files.deps, files.host_phase_records,
                        files.dispatch_program, files.dispatch_identity, *files.name_maps, *files.converted,
                        *files.run_logs) if f]


def add_loose_file(files: CaptureFiles, kind: str, path: str) -> None:
    """Put `path` (a file of `kind`, see `file_kind`) into `files`."""
    if kind == "records":
        if files.records is None or Path(path).name == RECORD_FILE_NAMES[0]:
            files.records = path
    elif kind in ("deps", "dispatch_program", "dispatch_identity", "host_phase_records"):
        setattr(files, kind, path)
    elif kind == "name_map":
        files.name_maps.append(path)
    elif kind == "converted":
        files.converted.append(path)
    elif kind == "run_log":
        files.run_logs.append(path)
    elif kind == "listed_only":
        files.listed_only.append(path)
    else:
        raise ValueError(f"unknown capture file kind {kind!r}")


def _classify_dir(directory: Path) -> CaptureFiles:
    files = CaptureFiles(str(directory))
    parts = directory.parts
    if len(parts) > 1 and _DISPATCH_RE.match(parts[-1]) and _RANK_RE.match(parts[-2]):
        files.rank = int(_RANK_RE.match(parts[-2]).group(1))
        files.dispatch = int(_DISPATCH_RE.match(parts[-1]).group(1))
    elif parts and _RANK_RE.match(parts[-1]):
        files.rank = int(_RANK_RE.match(parts[-1]).group(1))
    for e in list_input_dir(directory):
        kind = file_kind(e.name)
        if kind is not None and (kind == "listed_only" or not entry_is_dir(e)):
            add_loose_file(files, kind, e.path)
    return files


def discover_captures(path: str | os.PathLike) -> list[CaptureFiles]:
    """Capture leaves under a work dir, a `dfx_outputs/` dir or a leaf dir; leaves of the
    distributed layout `rank<r>/d<k>/` sorted by (rank, dispatch). Nothing usable is an
    error. Symlinked directories are not followed (no loops)."""
    check_input_dir(path)
    root = Path(path)
    if (root / "dfx_outputs").is_dir():
        root = root / "dfx_outputs"
    found = []
    walk_errors: list[OSError] = []
    for dirpath, dirnames, _ in os.walk(root, onerror=walk_errors.append):
        dirnames[:] = sorted(d for d in dirnames if d not in LISTED_ONLY_NAMES)
        files = _classify_dir(Path(dirpath))
        if files.usable():
            found.append(files)
    if walk_errors:
        exc = walk_errors[0]
        raise TraceInputError(exc.filename or path,
                              f"cannot list directory: {exc.strerror or exc}")
    if not found:
        raise TraceInputError(path, "no Simpler capture files found (looked for "
                                    "chip_swimlane_records.json, l2_swimlane_records.json, "
                                    "merged_swimlane*.json, deps.json, host_log*.txt)")
    found.sort(key=lambda f: (f.rank if f.rank is not None else -1,
                              f.dispatch if f.dispatch is not None else -1, f.directory))
    return found


# --------------------------------------------------------------------------- records

@dataclass(slots=True, eq=False)
class PhaseColumns:
    """One thread's phase records as columns: `start`/`end` (int64, in `clock` units:
    "device_cycles" or "host_ns"), `kind` (int32 index into `kinds`) and every other field
    of the records in `args` (int fields as int64 arrays, `present` set when some records
    lack them; list fields as (n, k) int64 arrays when every record has k values, else a
    list with None where absent)."""

    thread: int
    clock: str
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    kinds: list[str]
    args: list[ArgColumn] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.start)

    def arg(self, key: str) -> ArgColumn | None:
        return next((a for a in self.args if a.key == key), None)


@dataclass(slots=True, eq=False)
class SwimlaneRecords:
    """One records file, read and checked. `aicore` columns: core_id, task_id (the task
    token), reg_task_id, start_cycles, end_cycles, receive_to_start_cycles; `aicpu`:
    core_id, reg_task_id, dispatch_cycles, finish_cycles (all int64; join the two on
    (core_id, reg_task_id), not on the token)."""

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
    aicore_columns: int                         # 5 (older files) or 6, as on disk
    aicpu: dict[str, np.ndarray]
    scheduler: list[PhaseColumns]               # device cycles, one per scheduler thread
    orchestrator: list[PhaseColumns]            # AICPU orchestrator, device cycles
    host_orchestrator: list[PhaseColumns]       # host ns
    host_uploads: list[PhaseColumns]            # host ns (one list in the file: thread 0)
    ignored_streams: list[str] = field(default_factory=list)


_ROWS = msgspec.json.Decoder(list[list[schema.Count]])


def _rows(jp: JsonPieces, where: str, widths: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """An array of integer rows -> (n, max(widths)) int64, and the width found on disk."""
    parts, width = [], None
    for base, rows in jp.array(where, _ROWS, SEP_ROWS):
        lens = set(map(len, rows))
        if width is not None:
            lens.add(width)
        if len(lens) > 1 or not lens <= set(widths):
            first = width if width is not None else len(rows[0])
            i, row = next((i, r) for i, r in enumerate(rows)
                          if len(r) not in widths or len(r) != first)
            expected = " or ".join(map(str, widths))
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
        arr = np.hstack([arr, np.zeros((len(arr), full - arr.shape[1]), np.int64)])
    return arr, (width or full)


def _check_order(path, where: str, cols: dict, end: str, start: str, base: int = 0) -> None:
    """No row of `cols` ends before it starts (`where`: the array's JSON path, `base`: the
    index of its first row there)."""
    bad = cols[end] < cols[start]
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceInputError(path, f"{where}[{base + i}]: {end} {int(cols[end][i])} is before "
                                    f"{start} {int(cols[start][i])} (negative duration)")


def _check_rows(path, aicore: dict, aicpu: dict, ncores: int) -> None:
    a = aicore
    beyond = a["core_id"] >= ncores
    if ncores and beyond.any():
        i = int(np.argmax(beyond))
        raise TraceInputError(path, f"$.aicore_tasks[{i}][0]: core_id {int(a['core_id'][i])} "
                                    f"is not in metadata.core_types ({ncores} cores)")
    _check_order(path, "$.aicore_tasks", a, "end_cycles", "start_cycles")
    early = a["receive_to_start_cycles"] > a["start_cycles"]
    if early.any():
        i = int(np.argmax(early))
        raise TraceInputError(path, f"$.aicore_tasks[{i}][5]: receive_to_start_cycles "
                                    f"{int(a['receive_to_start_cycles'][i])} exceeds "
                                    f"start_cycles {int(a['start_cycles'][i])}")
    _check_order(path, "$.aicpu_tasks", aicpu, "finish_cycles", "dispatch_cycles")


@functools.cache
def _phase_decoders(record: type) -> tuple[msgspec.json.Decoder, ...]:
    """The strict, lenient and plain decoders of a phase record type, made once per type:
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
    """Typed decoding of phase records; a record with a field the schema does not declare
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


class _PhaseBuilder:
    """Column chunks of one thread's phase records, fed a decoded piece at a time."""

    def __init__(self, thread: int, spec: schema.PhaseSchema, path, where: str):
        self.thread, self.spec, self.path, self.where = thread, spec, path, where
        self.known = [f.name for f in _record_fields(spec.record)]
        self.fields = [k for k in self.known if k not in (spec.start, spec.end, spec.kind)]
        self.counts = [f.name for f in _record_fields(spec.record)
                       if f.name in self.fields and f.default == schema.ABSENT]
        # start, end and every counter in one pass: one tuple per record, flattened by
        # fromiter (measured 1.8x faster than one fromiter per field)
        self.int_get = attrgetter(spec.start, spec.end, *self.counts)
        self.ints: list[np.ndarray] = []
        self.chunks: dict[str, list] = {k: [] for k in ("kind", *self.fields)}
        self.extra_rows: list[tuple[int, dict]] = []     # (row, fields not in the schema)
        self.kind_codes: dict[str, int] = {}
        self.n = 0

    def add(self, base: int, items: list) -> None:
        n, spec, ch = len(items), self.spec, self.chunks
        w = 2 + len(self.counts)
        block = np.fromiter(itertools.chain.from_iterable(map(self.int_get, items)), np.int64,
                            n * w).reshape(n, w)
        ends = {spec.start: block[:, 0], spec.end: block[:, 1]}
        _check_order(self.path, self.where, ends, spec.end, spec.start, base)
        self.ints.append(block)
        if spec.kind is None:
            ch["kind"].append(np.zeros(n, np.int32))
        else:
            names = list(map(attrgetter(spec.kind), items))
            codes = self.kind_codes
            for k in dict.fromkeys(names):        # first-appearance order
                if k not in codes:
                    codes[k] = len(codes)
            ch["kind"].append(np.fromiter(map(codes.__getitem__, names), np.int32, n))
        for key in self.fields:
            if key in self.counts:
                continue
            vals = list(map(attrgetter(key), items))
            if n and type(vals[0]) is list and None not in vals \
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

    def finish(self) -> PhaseColumns:
        ch = self.chunks
        ints = np.concatenate(self.ints) if self.ints else \
            np.zeros((0, 2 + len(self.counts)), np.int64)
        self.ints = []
        keys = [self.spec.start, self.spec.end, *self.counts]
        col = {k: np.ascontiguousarray(ints[:, j]) for j, k in enumerate(keys)}
        del ints
        kinds = [safe_str(k) for k in self.kind_codes] if self.spec.kind else \
            [self.spec.default_kind]
        args = []
        for key in self.fields:
            if key in self.counts:
                args.append(_arg(key, col[key], col[key] != schema.ABSENT))
            elif ch[key] and all(type(p) is np.ndarray for p in ch[key]) \
                    and len({p.shape[1] for p in ch[key]}) == 1:
                args.append(ArgColumn(key, np.concatenate(ch[key])))
            else:
                values = [v for part in ch[key]
                          for v in (part.tolist() if type(part) is np.ndarray else part)]
                args.append(_list_arg(key, values))
        for key in dict.fromkeys(k for _, extra in self.extra_rows for k in extra):
            values = [None] * self.n
            for row, extra in self.extra_rows:
                values[row] = extra.get(key)
            args.append(_list_arg(key, values))
        kind = np.concatenate(ch["kind"]) if ch["kind"] else np.zeros(0, np.int32)
        return PhaseColumns(self.thread, self.spec.clock, col[self.spec.start],
                            col[self.spec.end], kind, kinds, [a for a in args if a is not None])


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


def _phase_stream(jp: JsonPieces, name: str, spec: schema.PhaseSchema) -> list[PhaseColumns]:
    decoder = _PhaseDecoder(spec.record)
    where = f"$.{name}"
    if not spec.per_thread:
        b = _PhaseBuilder(0, spec, jp.path, where)
        for base, items in jp.array(where, decoder, SEP_OBJECTS, 256 << 10):
            b.add(base, items)
        return [b.finish()]
    out = []
    for t in jp.items(where):
        b = _PhaseBuilder(t, spec, jp.path, f"{where}[{t}]")
        for base, items in jp.array(f"{where}[{t}]", decoder, SEP_OBJECTS, 256 << 10):
            b.add(base, items)
            del items
        out.append(b.finish())
    return out


def read_records(path: str | os.PathLike) -> SwimlaneRecords:
    """Read and check `chip_swimlane_records.json` (or the older `l2_swimlane_records.json`)."""
    path = str(path)
    level_key = level = meta = raw_meta = None
    rows: dict[str, tuple[np.ndarray, int]] = {}
    streams: dict[str, list[PhaseColumns]] = {}
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("a Simpler swimlane records file"):
            where = f"$.{key}"
            if key in schema.LEVEL_KEYS:
                level_key, level = key, jp.value(where, schema.SwimlaneLevel)
            elif key == "metadata":
                raw_meta = jp.value(where)
                try:
                    meta = msgspec.convert(raw_meta, schema.SwimlaneMetadata)
                except msgspec.ValidationError as exc:
                    raise TraceInputError(path, word_error(exc, where, doc=raw_meta)) from None
            elif key == "aicore_tasks":
                rows[key] = _rows(jp, where, (5, 6))
            elif key == "aicpu_tasks":
                rows[key] = _rows(jp, where, (4,))
            elif key in schema.PHASE_STREAMS:
                streams[key] = _phase_stream(jp, key, schema.PHASE_STREAMS[key])
            else:
                jp.skip(where)
    if level_key is None:
        raise TraceInputError(path, "missing 'chip_swimlane_level' (or the older "
                                    "'l2_swimlane_level'): not a Simpler swimlane records file")
    if meta is None:
        raise TraceInputError(path, "$: missing 'metadata'")
    ignored = [k for k in (*rows, *streams) if schema.STREAM_LEVEL[k] > level
               and (len(rows[k][0]) if k in rows else any(len(s) for s in streams[k]))]
    for k in (*rows, *streams):
        if schema.STREAM_LEVEL[k] > level:
            (rows if k in rows else streams).pop(k)
    aic, aic_width = rows.get("aicore_tasks", (np.zeros((0, 6), np.int64), 6))
    cpu = rows.get("aicpu_tasks", (np.zeros((0, 4), np.int64), 4))[0]
    aicore = {k: np.ascontiguousarray(aic[:, j]) for j, k in enumerate(schema.AICORE_COLUMNS)}
    aicpu = {k: np.ascontiguousarray(cpu[:, j]) for j, k in enumerate(schema.AICPU_COLUMNS)}
    del aic, cpu
    core_types = [safe_str(t) for t in meta.core_types]
    _check_rows(path, aicore, aicpu, len(core_types))
    return SwimlaneRecords(
        path=path, level=level, level_key=level_key, freq_hz=meta.clock_freq_hz,
        num_cores=meta.num_cores if meta.num_cores is not None else len(core_types),
        core_types=core_types, core_to_thread=meta.core_to_thread,
        clock_anchors=meta.clock_anchors,
        host_timestamp_quantization_ns=meta.host_timestamp_quantization_ns,
        orchestrator_source=meta.orchestrator_source,
        host_orchestration_origin_ns=meta.host_orchestration_origin_ns,
        metadata=raw_meta, aicore=aicore, aicore_columns=aic_width, aicpu=aicpu,
        scheduler=streams.get("aicpu_scheduler_phases", []),
        orchestrator=streams.get("aicpu_orchestrator_phases", []),
        host_orchestrator=streams.get("host_orchestrator_phases", []),
        host_uploads=streams.get("host_device_uploads", []),
        ignored_streams=ignored)


# --------------------------------------------------------------------------- deps.json

@dataclass(slots=True, eq=False)
class DepsGraph:
    """deps.json's task graph as columns. Task ids are 64-bit `(ring << 32) | local`.
    `kernel_ids[i]` = (aic, aiv0, aiv1) of task i, -1 where unused or not given;
    `block_num` >= 1; edges `pred[j] -> succ[j]`, duplicates removed, in file order."""

    path: str
    task_id: np.ndarray
    kernel_ids: np.ndarray
    block_num: np.ndarray
    pred: np.ndarray
    succ: np.ndarray


_TASKS = msgspec.json.Decoder(list[schema.DepsTask], strict=False)
_EDGES = msgspec.json.Decoder(list[schema.DepsEdge], strict=False)
# A task starts with its task_id in Simpler's files: cutting only there keeps cuts out of
# the nested `args` objects (a cut elsewhere is still found and extended, just slower).
_SEP_TASKS = re.compile(rb'\}\s*,\s*(\{)\s*"task_id"')
_NO_KERNELS = [-1, -1, -1]


def read_deps(path: str | os.PathLike) -> DepsGraph:
    """Read and check deps.json: task ids, kernel ids, block_num and edges (other members,
    such as each task's `args` and the `tensors` list, are skipped unparsed)."""
    path = str(path)
    tids, kids, bnums, preds, succs = [], [], [], [], []
    seen = set()
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("deps.json"):
            if key == "tasks":
                for _, tasks in jp.array("$.tasks", _TASKS, _SEP_TASKS):
                    n = len(tasks)
                    tids.append(np.fromiter(map(attrgetter("task_id"), tasks), np.int64, n))
                    bnums.append(np.fromiter(map(attrgetter("block_num"), tasks), np.int64, n))
                    k = [_NO_KERNELS if v is None else v if len(v) == 3 else v + [-1] * (3 - len(v))
                         for v in map(attrgetter("kernel_ids"), tasks)]
                    kids.append(np.fromiter(itertools.chain.from_iterable(k), np.int64,
                                            3 * n).reshape(n, 3))
                    del tasks, k
            elif key == "edges":
                for _, edges in jp.array("$.edges", _EDGES, SEP_OBJECTS):
                    n = len(edges)
                    preds.append(np.fromiter(map(attrgetter("pred"), edges), np.int64, n))
                    succs.append(np.fromiter(map(attrgetter("succ"), edges), np.int64, n))
                    del edges
            else:
                jp.skip(f"$.{key}")
                continue
            seen.add(key)
    for key in ("tasks", "edges"):
        if key not in seen:
            raise TraceInputError(path, f"$: missing '{key}' (not a Simpler deps.json)")

    def cat(parts, shape=(0,)):
        return np.concatenate(parts) if parts else np.zeros(shape, np.int64)

    pred, succ = cat(preds), cat(succs)
    if len(pred):
        pairs = np.empty(len(pred), dtype=[("p", np.int64), ("s", np.int64)])
        pairs["p"], pairs["s"] = pred, succ
        _, first = np.unique(pairs, return_index=True)
        if len(first) < len(pred):
            first.sort()
            pred, succ = pred[first], succ[first]
    return DepsGraph(path, cat(tids), cat(kids, (0, 3)), np.maximum(cat(bnums), 1), pred, succ)


# --------------------------------------------------------------------------- small files

def _small_json(path, type_, what: str):
    """A small JSON file (a name map, dispatch_program.json), read and checked whole."""
    with open_input(path) as f:
        jp = JsonPieces(f, path, max_piece_bytes=SMALL_FILE_BYTES)
        if jp.peek() != b"{":
            next(jp.members(what))        # words the error (empty, not an object)
        value = jp.value("$")
        jp.finish()
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise TraceInputError(path, word_error(exc, "$", doc=value)) from None


@dataclass(slots=True, eq=False)
class NameMap:
    """name_map_<case>.json: kernel (callable) id -> name, valid within one program."""

    path: str
    level: int | None
    orchestrator_name: str | None
    names: dict[int, str]


def read_name_map(path: str | os.PathLike) -> NameMap:
    nm = _small_json(path, schema.NameMapFile, "a name map")
    names = {}
    for k, v in nm.callable_id_to_name.items():
        digits = k.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
            raise TraceInputError(path, f"$.callable_id_to_name: key {safe_str(k)[:40]!r} is "
                                        "not an integer id")
        names[int(k)] = safe_str(v)
    orch = None if nm.orchestrator_name is None else safe_str(nm.orchestrator_name)
    return NameMap(str(path), nm.level, orch, names)


@dataclass(slots=True, eq=False)
class DispatchProgram:
    """dispatch_program.json of a distributed leaf: which program ran in this dispatch."""

    path: str
    program: str


def read_dispatch_program(path: str | os.PathLike) -> DispatchProgram:
    dp = _small_json(path, schema.DispatchProgramFile, "dispatch_program.json")
    return DispatchProgram(str(path), safe_str(dp.program))


@dataclass(slots=True, eq=False)
class DispatchIdentity:
    """dispatch_identity.json: `key` is the dispatch as the host log's root span names it
    (run_id, dispatch_id, slot_id, generation), None when the sidecar lacks a part or
    names a synchronous launch (run_id and dispatch_id 0); `host_pid` the process."""

    path: str
    key: tuple[int, int, int, int] | None
    host_pid: int | None


def read_dispatch_identity(path: str | os.PathLike) -> DispatchIdentity:
    d = _small_json(path, schema.DispatchIdentityFile, "dispatch_identity.json")
    parts = (d.run_id, d.endpoint_dispatch_id, d.pipeline_slot, d.pipeline_generation)
    key = None if None in parts or parts[0] == parts[1] == 0 else parts
    return DispatchIdentity(str(path), key, d.host_pid)


# --------------------------------------------------------------------------- converted trace

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


# --------------------------------------------------------------------------- a capture

@dataclass(slots=True, eq=False)
class Capture:
    """One capture leaf, every file read and checked."""

    files: CaptureFiles
    records: SwimlaneRecords | None = None
    deps: DepsGraph | None = None
    name_map: NameMap | None = None
    dispatch_program: DispatchProgram | None = None
    dispatch_identity: DispatchIdentity | None = None
    run_log: RunLog | None = None
    converted: list[ConvertedTrace] = field(default_factory=list)
    host_phases: list[HostPhaseBatch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_capture(files: CaptureFiles, *, converted: bool = True) -> Capture:
    """Read every file of one leaf (see the module docstring). `converted=False` leaves
    Simpler's converted traces unread (listed in `files.converted` only): beside the raw
    records they add nothing, and at 1M tasks they hold ~5M events as Python objects."""
    cap = Capture(files)
    if files.records:
        cap.records = read_records(files.records)
    if files.deps:
        cap.deps = read_deps(files.deps)
    if files.name_maps:
        cap.name_map = read_name_map(files.name_maps[0])
        if len(files.name_maps) > 1:
            cap.warnings.append(f"{files.directory}: {len(files.name_maps)} name maps, using "
                                f"{Path(files.name_maps[0]).name}")
    if files.dispatch_program:
        cap.dispatch_program = read_dispatch_program(files.dispatch_program)
    if files.dispatch_identity:
        cap.dispatch_identity = read_dispatch_identity(files.dispatch_identity)
    if files.run_logs:
        cap.run_log = read_run_log(files.run_logs[0])
        if len(files.run_logs) > 1:
            cap.warnings.append(f"{files.directory}: {len(files.run_logs)} run logs, using "
                                f"{Path(files.run_logs[0]).name}")
    if converted:
        cap.converted = [read_converted_trace(p) for p in files.converted]
    if files.host_phase_records:
        cap.host_phases = read_host_phase_records(files.host_phase_records)
    for p in files.listed_only:
        log.info("not a timeline, listed only: %s", p)
    return cap
