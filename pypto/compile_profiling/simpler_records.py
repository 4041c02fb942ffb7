"""Reader of Simpler's swimlane records (`chip_swimlane_records.json` or the older
`l2_swimlane_records.json`): metadata, clock anchors, AICore/AICPU rows as int64 arrays and
per-thread phase streams; big files are converted piece by piece as they are walked."""

from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.simpler_json import (
    _SEP_OBJECTS,
    _SEP_ROWS,
    _array_pieces,
    _int_matrix,
    _is_int,
    _kind,
    _nested_array_pieces,
    _NotChunkable,
    _opt_int,
    _orjson,
    _read_file_bytes,
    _req,
    _req_int,
    _walk_object,
    parse_json_bytes,
)
from pypto.errors import TraceInputError

LEVEL_KEYS = ("chip_swimlane_level", "l2_swimlane_level")
ANCHOR_SCHEMA_VERSIONS = (1,)

# Which level first collects each stream (formats.md §2.1).
_STREAM_LEVEL = {
    "aicore_tasks": 1,
    "aicpu_tasks": 2,
    "aicpu_scheduler_phases": 3,
    "aicpu_orchestrator_phases": 4,
    "host_orchestrator_phases": 4,
    "host_device_uploads": 4,
}

_PHASE_PIECE_BYTES = 48 << 10   # phase pieces are kept as the text of their records
# From this size on, a records file is held compactly (phase records as text, lazy AICore
# args: ~3x less memory); smaller ones keep plain dicts, which are faster to write out.
_COMPACT_FILE_BYTES = 128 << 20


# --------------------------------------------------------------------------- records

@dataclass(slots=True)
class AnchorSample:
    """One host/device clock read pair (formats.md §2.2); host times are CLOCK_MONOTONIC ns."""

    position: str
    sample_idx: int
    host_before_ns: int
    device_cycles: int | None
    host_after_ns: int
    rtt_ns: int | None
    uncertainty_ns: int | None
    error: object = None


@dataclass(slots=True)
class ClockAnchors:
    schema_version: int
    provider: str | None
    device_timestamp_unit: str | None
    raw_device_timestamp_unit: str | None
    samples_per_position: int | None
    samples: list[AnchorSample]


@dataclass(slots=True)
class SwimlaneMetadata:
    clock_freq_hz: int
    num_cores: int
    core_types: list[str]
    core_to_thread: list[int] | None = None
    clock_anchors: ClockAnchors | None = None
    orchestrator_source: str | None = None          # "host" for host-orchestrated runs
    host_orchestration_origin_ns: int | None = None
    host_timestamp_quantization_ns: int = 0
    host_capture: dict | None = None
    raw: dict = field(default_factory=dict)          # the metadata object as read


class _RecordBlock:
    """Consecutive phase records as the JSON array text they were parsed from."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes):
        self.blob = blob


_decoded: dict = {}     # the few blocks decoded last -> their records
_DECODED_BLOCKS = 8


class PhaseRecord(Mapping):
    """One phase record, kept as text inside a `_RecordBlock` (a read-only mapping).

    A dict per record is the biggest memory item of a large capture (a few hundred bytes
    each, millions of them); the record's text costs about a third of that. Records are
    read back in about file order when a trace is written, so decoding a block once
    (C-speed) serves its next few hundred records. Same keys, order and values as the file.
    """

    __slots__ = ("_block", "_i")

    def __init__(self, block: _RecordBlock, i: int):
        self._block, self._i = block, i

    def _dict(self) -> dict:
        block = self._block
        recs = _decoded.get(block)
        if recs is None:
            if len(_decoded) >= _DECODED_BLOCKS:
                del _decoded[next(iter(_decoded))]
            recs = _decoded[block] = _orjson.loads(block.blob)
        return recs[self._i]

    def __getitem__(self, key: str):
        return self._dict()[key]

    def __iter__(self):
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def items(self):
        return self._dict().items()

    def __bool__(self) -> bool:
        return True          # a phase record always has its start and end keys

    def __repr__(self) -> str:
        return f"PhaseRecord({self._dict()!r})"


@dataclass(slots=True)
class PhaseStream:
    """One thread's phase records: their fields as columns plus start/end columns.

    `names[i]` is the display name of record i (scheduler `kind`, "submit" for
    orchestrator phases, `phase` for uploads). `starts`/`ends` are cycles or host ns,
    as `clock` says ("device_cycles" | "host_ns"). `records[i]` is record i as a mapping
    (the slice args): the parsed dict, or a compact `PhaseRecord` when the file was read
    in pieces. `label_values` holds the few fields slice names need (`tasks_processed`,
    `task_id`), so naming does not decode records.
    """

    thread: int
    clock: str
    records: list[Mapping]      # dicts as parsed, or `PhaseRecord`s (big files read in pieces)
    names: list[str]
    starts: np.ndarray
    ends: np.ndarray
    label_values: dict[str, list | None] = field(default_factory=dict)  # None: all absent

    def __len__(self) -> int:
        return len(self.starts)

    def values(self, key: str) -> list:
        """The field `key` of every record (None where a record lacks it)."""
        if key in self.label_values:
            got = self.label_values[key]
            return [None] * len(self.starts) if got is None else got
        return [r.get(key) for r in self.records]


# AICore row columns (after padding 5-column rows).
AIC_CORE, AIC_TOKEN, AIC_REG, AIC_START, AIC_END, AIC_R2S = range(6)
# AICPU row columns.
CPU_CORE, CPU_REG, CPU_DISPATCH, CPU_FINISH = range(4)


@dataclass(slots=True)
class SwimlaneRecords:
    """The content of one chip/l2 swimlane records file."""

    path: str
    level: int
    level_key: str
    metadata: SwimlaneMetadata
    aicore: np.ndarray                   # (n, 6) int64: core, token, reg, start, end, r2s
    aicore_columns: int                  # 5 (old) or 6 as found on disk
    aicpu: np.ndarray                    # (m, 4) int64: core, reg, dispatch, finish
    scheduler_phases: list[PhaseStream]  # one per scheduler thread (device cycles)
    orchestrator_phases: list[PhaseStream]       # AICPU orchestrator (device cycles)
    host_orchestrator_phases: list[PhaseStream]  # host orchestrator (host ns)
    host_device_uploads: PhaseStream | None      # host ns
    ignored_streams: list[str] = field(default_factory=list)
    compact: bool = False    # big file: phase records kept as text, AICore args made lazily

    @property
    def record_count(self) -> int:
        n = len(self.aicore) + len(self.aicpu)
        for group in (self.scheduler_phases, self.orchestrator_phases,
                      self.host_orchestrator_phases):
            n += sum(len(s) for s in group)
        return n + (len(self.host_device_uploads) if self.host_device_uploads else 0)

    def device_cycle_bounds(self) -> tuple[int, int] | None:
        """Earliest and latest device-cycle timestamp over all device streams."""
        lo, hi = [], []
        if len(self.aicore):
            lo.append(int((self.aicore[:, AIC_START] - self.aicore[:, AIC_R2S]).min()))
            hi.append(int(self.aicore[:, AIC_END].max()))
        if len(self.aicpu):
            lo.append(int(self.aicpu[:, CPU_DISPATCH].min()))
            hi.append(int(self.aicpu[:, CPU_FINISH].max()))
        for s in (*self.scheduler_phases, *self.orchestrator_phases):
            if len(s):
                lo.append(int(s.starts.min()))
                hi.append(int(s.ends.max()))
        return (min(lo), max(hi)) if lo else None


def _read_anchors(obj: object, path) -> ClockAnchors:
    where = "metadata.clock_anchors"
    if not isinstance(obj, dict):
        raise TraceInputError(path, f"{where}: expected an object, got {_kind(obj)}")
    version = _req(obj, "schema_version", path, where)
    if version not in ANCHOR_SCHEMA_VERSIONS or not _is_int(version):
        raise TraceInputError(path, f"{where}: unknown schema_version {version!r} "
                                    f"(supported: {', '.join(map(str, ANCHOR_SCHEMA_VERSIONS))})")
    samples_raw = _req(obj, "samples", path, where)
    if not isinstance(samples_raw, list):
        raise TraceInputError(path, f"{where}.samples: expected a list, got {_kind(samples_raw)}")
    samples = []
    for i, s in enumerate(samples_raw):
        w = f"{where}.samples[{i}]"
        if not isinstance(s, dict):
            raise TraceInputError(path, f"{w}: expected an object, got {_kind(s)}")
        position = _req(s, "position", path, w)
        if not isinstance(position, str):
            raise TraceInputError(path, f"{w}.position: expected a string, got {_kind(position)}")
        samples.append(AnchorSample(
            position=position,
            sample_idx=_req_int(s, "sample_idx", path, w, minimum=0),
            host_before_ns=_req_int(s, "host_before_ns", path, w, minimum=0),
            device_cycles=_opt_int(s, "device_cycles", path, w),
            host_after_ns=_req_int(s, "host_after_ns", path, w, minimum=0),
            rtt_ns=_opt_int(s, "rtt_ns", path, w),
            uncertainty_ns=_opt_int(s, "uncertainty_ns", path, w),
            error=s.get("error"),
        ))
    for key in ("provider", "device_timestamp_unit", "raw_device_timestamp_unit"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise TraceInputError(path, f"{where}.{key}: expected a string, got {_kind(obj[key])}")
    return ClockAnchors(version, obj.get("provider"), obj.get("device_timestamp_unit"),
                        obj.get("raw_device_timestamp_unit"),
                        _opt_int(obj, "samples_per_position", path, where), samples)


def _read_metadata(obj: object, path) -> SwimlaneMetadata:
    if not isinstance(obj, dict):
        raise TraceInputError(path, f"metadata: expected an object, got {_kind(obj)}")
    if "clock_freq_hz" not in obj:
        raise TraceInputError(path, "metadata: missing 'clock_freq_hz' (device counter "
                                    "frequency; it cannot be assumed)")
    freq = _req_int(obj, "clock_freq_hz", path, "metadata")
    if freq <= 0:
        raise TraceInputError(path, f"metadata.clock_freq_hz: must be positive, got {freq}")
    core_types = _req(obj, "core_types", path, "metadata")
    if not isinstance(core_types, list) or not all(isinstance(t, str) for t in core_types):
        raise TraceInputError(path, "metadata.core_types: expected a list of strings")
    num_cores = obj.get("num_cores", len(core_types))
    if not _is_int(num_cores) or num_cores < 0:
        raise TraceInputError(path, f"metadata.num_cores: expected a non-negative integer, "
                                    f"got {num_cores!r}")
    c2t = obj.get("core_to_thread")
    if c2t is not None and (not isinstance(c2t, list) or not all(_is_int(t) for t in c2t)):
        raise TraceInputError(path, "metadata.core_to_thread: expected a list of integers")
    anchors = obj.get("clock_anchors")
    src = obj.get("orchestrator_source")
    if src is not None and not isinstance(src, str):
        raise TraceInputError(path, f"metadata.orchestrator_source: expected a string, "
                                    f"got {_kind(src)}")
    hc = obj.get("host_capture")
    if hc is not None and not isinstance(hc, dict):
        raise TraceInputError(path, f"metadata.host_capture: expected an object, got {_kind(hc)}")
    quant = obj.get("host_timestamp_quantization_ns", 0)
    if not _is_int(quant) or quant < 0:
        raise TraceInputError(path, "metadata.host_timestamp_quantization_ns: expected a "
                                    "non-negative integer")
    return SwimlaneMetadata(
        clock_freq_hz=freq, num_cores=num_cores, core_types=core_types, core_to_thread=c2t,
        clock_anchors=None if anchors is None else _read_anchors(anchors, path),
        orchestrator_source=src,
        host_orchestration_origin_ns=_opt_int(obj, "host_orchestration_origin_ns", path,
                                              "metadata"),
        host_timestamp_quantization_ns=quant, host_capture=hc, raw=obj)


_LABEL_KEYS = ("tasks_processed", "task_id")


class _PhaseStreamBuilder:
    """Validates and converts one thread's phase records, fed a piece at a time."""

    def __init__(self, thread: int, path, where: str, *, start_key: str, end_key: str,
                 name_key: str | None, default_name: str, clock: str):
        self.thread, self.path, self.where, self.clock = thread, path, where, clock
        self.start_key, self.end_key = start_key, end_key
        self.name_key, self.default_name = name_key, default_name
        self.n = 0
        self.starts: list[np.ndarray] = []
        self.ends: list[np.ndarray] = []
        self.names: list[str] = []
        self.records: list = []
        self.blocks: list[tuple[_RecordBlock, int]] = []
        self.labels: dict[str, list] = {k: [] for k in _LABEL_KEYS}
        self.strings: dict[str, str] = {}

    def add(self, records: list, text: bytes | None = None) -> None:
        """Validate and take `records`; with `text` (the JSON array they were parsed
        from) they are kept as that text, not as dicts."""
        path, where, base = self.path, self.where, self.n
        start_key, end_key, name_key = self.start_key, self.end_key, self.name_key
        try:
            starts = list(map(operator.itemgetter(start_key), records))
            ends = list(map(operator.itemgetter(end_key), records))
            if records and set(map(type, records)) != {dict}:
                raise TypeError
        except (KeyError, TypeError, IndexError):
            for i, r in enumerate(records, base):
                if not isinstance(r, dict):
                    raise TraceInputError(path, f"{where}[{i}]: expected an object, "
                                                f"got {_kind(r)}") from None
                for key in (start_key, end_key):
                    if key not in r:
                        raise TraceInputError(path, f"{where}[{i}]: missing {key!r}") from None
            raise TraceInputError(path, f"{where}: malformed records") from None
        if set(map(type, starts)) - {int} or set(map(type, ends)) - {int}:
            for i, r in enumerate(records, base):
                for key in (start_key, end_key):
                    if type(r[key]) is not int:
                        raise TraceInputError(path, f"{where}[{i}].{key}: expected an integer, "
                                                    f"got {_kind(r[key])}")
        if name_key is None:
            self.names.extend([self.default_name] * len(records))
        else:
            try:
                names = list(map(operator.itemgetter(name_key), records))
            except KeyError:
                i = next(i for i, r in enumerate(records) if name_key not in r)
                raise TraceInputError(path, f"{where}[{base + i}]: missing {name_key!r}") \
                    from None
            if set(map(type, names)) - {str}:
                i = next(i for i, n in enumerate(names) if type(n) is not str)
                raise TraceInputError(path, f"{where}[{base + i}].{name_key}: expected a "
                                            f"string, got {_kind(names[i])}")
            strings = self.strings
            self.names.extend([strings.setdefault(n, n) for n in names])
        try:
            s = np.array(starts, dtype=np.int64)
            e = np.array(ends, dtype=np.int64)
        except OverflowError:
            raise TraceInputError(path, f"{where}: timestamp out of the 64-bit signed range") \
                from None
        if len(s):
            if int(s.min()) < 0:
                i = int(np.argmax(s < 0))
                raise TraceInputError(path, f"{where}[{base + i}].{start_key}: negative value "
                                            f"{int(s[i])}")
            bad = e < s
            if bad.any():
                i = int(np.argmax(bad))
                raise TraceInputError(path, f"{where}[{base + i}]: {end_key} {int(e[i])} is "
                                            f"before {start_key} {int(s[i])} (negative duration)")
        self.starts.append(s)
        self.ends.append(e)
        for key, out in self.labels.items():
            vals = list(map(operator.methodcaller("get", key), records))
            if set(map(type, vals)) == {int}:
                try:             # an array: the ints must not outlive their dicts one by one
                    vals = np.array(vals, dtype=np.int64)
                except OverflowError:
                    pass
            out.append(vals)
        if text is not None:
            self.blocks.append((_RecordBlock(text), len(records)))
        else:
            self.records.extend(records)
        self.n = base + len(records)

    def finish(self) -> PhaseStream:
        def cat(parts):
            if not parts:
                return np.zeros(0, dtype=np.int64)
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        labels: dict[str, list | None] = {}
        for key, parts in self.labels.items():
            vals = [v for p in parts for v in (p.tolist() if type(p) is not list else p)] \
                if len(parts) != 1 or type(parts[0]) is not list else parts[0]
            labels[key] = vals if vals.count(None) != len(vals) else None
        records = self.records
        for block, n in self.blocks:    # made last: they pack into memory the pieces freed
            records.extend(map(PhaseRecord, itertools.repeat(block, n), range(n)))
        self.blocks = []
        return PhaseStream(self.thread, self.clock, records, self.names,
                           cat(self.starts), cat(self.ends), labels)


def _phase_stream(records: object, thread: int, path, where: str, *, start_key: str,
                  end_key: str, name_key: str | None, default_name: str,
                  clock: str) -> PhaseStream:
    if not isinstance(records, list):
        raise TraceInputError(path, f"{where}: expected a list of records, got {_kind(records)}")
    b = _PhaseStreamBuilder(thread, path, where, start_key=start_key, end_key=end_key,
                            name_key=name_key, default_name=default_name, clock=clock)
    b.add(records)
    return b.finish()


def _per_thread(obj: object, path, where: str, **kw) -> list[PhaseStream]:
    if not isinstance(obj, list):
        raise TraceInputError(path, f"{where}: expected a list of per-thread lists, "
                                    f"got {_kind(obj)}")
    return [_phase_stream(t, i, path, f"{where}[{i}]", **kw) for i, t in enumerate(obj)]


_PHASE_STREAMS = {
    "aicpu_scheduler_phases": {"start_key": "start_cycles", "end_key": "end_cycles",
                               "name_key": "kind", "default_name": "",
                               "clock": "device_cycles"},
    "aicpu_orchestrator_phases": {"start_key": "start_cycles", "end_key": "end_cycles",
                                  "name_key": None, "default_name": "submit",
                                  "clock": "device_cycles"},
    "host_orchestrator_phases": {"start_key": "start_host_ns", "end_key": "end_host_ns",
                                 "name_key": None, "default_name": "submit",
                                 "clock": "host_ns"},
}
_ROW_STREAMS = {"aicore_tasks": (5, 6), "aicpu_tasks": (4,)}


def _read_records_chunked(buf: bytes, path) -> SwimlaneRecords:
    """The big streams converted piece by piece as the file is walked (see `_walk_object`):
    rows straight into int64 arrays, phase records into compact `PhaseRecord`s."""
    converted: dict[str, tuple] = {}
    compact = len(buf) >= _COMPACT_FILE_BYTES

    def rows(name: str, ncols: tuple[int, ...]):
        def handle(buf: bytes, p: int) -> int:
            parts, widths = [], set()

            def consume(chunk: list, _text: bytes) -> None:
                if chunk:
                    widths.add(len(chunk[0]) if type(chunk[0]) is list else -1)
                parts.append(_int_matrix(chunk, ncols, path, name))

            end = _array_pieces(buf, p, _SEP_ROWS, consume)
            if len(widths) > 1:
                raise _NotChunkable      # mixed row widths: the plain path words it
            arr = (np.concatenate(parts) if len(parts) > 1 else parts[0]) if parts else \
                np.zeros((0, max(ncols)), dtype=np.int64)
            converted[name] = ("rows", arr, widths.pop() if widths else max(ncols))
            return end
        return handle

    def phases(name: str, kw: dict):
        def handle(buf: bytes, p: int) -> int:
            builders: list[_PhaseStreamBuilder] = []

            def start(i: int) -> None:
                builders.append(_PhaseStreamBuilder(i, path, f"{name}[{i}]", **kw))

            end = _nested_array_pieces(
                buf, p, _SEP_OBJECTS, start,
                lambda chunk, text: builders[-1].add(chunk, text if compact else None),
                piece_bytes=_PHASE_PIECE_BYTES)
            converted[name] = ("phases", [b.finish() for b in builders])
            return end
        return handle

    handlers = {name: rows(name, n) for name, n in _ROW_STREAMS.items()}
    handlers.update({name: phases(name, kw) for name, kw in _PHASE_STREAMS.items()})
    small = _walk_object(buf, handlers)
    rec = _records_from_doc(small, path, converted)
    rec.compact = compact
    return rec


def read_swimlane_records(path: str | os.PathLike, data: object = None) -> SwimlaneRecords:
    """Read `chip_swimlane_records.json` or the older `l2_swimlane_records.json`.

    `data` may carry the already-parsed document (the file is then not read again).
    Without it the file is read in pieces (`_read_records_chunked`) when it can be, so the
    Python objects of the whole document never exist at once; on any doubt or error it is
    parsed whole, which also gives the canonical error message.
    """
    if data is None:
        buf = _read_file_bytes(path)
        if _orjson is not None and buf.strip():
            try:
                return _read_records_chunked(buf, path)
            except (_NotChunkable, TraceInputError):
                pass
        data = parse_json_bytes(buf, path)
        del buf
    return _records_from_doc(data, path, {})


def _records_from_doc(data: object, path, converted: dict) -> SwimlaneRecords:
    """Validate and assemble; `converted` holds big streams already converted."""
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    level_key = next((k for k in LEVEL_KEYS if k in data), None)
    if level_key is None:
        raise TraceInputError(path, "missing 'chip_swimlane_level' (or the older "
                                    "'l2_swimlane_level'): not a Simpler swimlane records file")
    level = data[level_key]
    if not _is_int(level) or level not in (1, 2, 3, 4):
        raise TraceInputError(path, f"{level_key}: unknown level {level!r} (expected 1, 2, 3 or 4)")
    if "metadata" not in data:
        raise TraceInputError(path, "missing 'metadata'")
    meta = _read_metadata(data["metadata"], path)

    ignored = []

    def stream(name: str, default):
        if name in converted:
            value = converted[name]
            if _STREAM_LEVEL[name] > level:
                if len(value[1]):
                    ignored.append(name)
                return default
            return value
        if name not in data or data[name] is None:
            return default
        if _STREAM_LEVEL[name] > level:
            if data[name]:
                ignored.append(name)
            return default
        return data[name]

    aicore_raw = stream("aicore_tasks", [])
    if type(aicore_raw) is tuple:
        _, aicore, aicore_columns = aicore_raw
    else:
        aicore = _int_matrix(aicore_raw, (5, 6), path, "aicore_tasks")
        aicore_columns = len(aicore_raw[0]) if aicore_raw else 6
    aicpu_raw = stream("aicpu_tasks", [])
    aicpu = aicpu_raw[1] if type(aicpu_raw) is tuple else _int_matrix(aicpu_raw, (4,), path,
                                                                      "aicpu_tasks")
    if len(aicore):
        ncores = len(meta.core_types)
        bad = aicore[:, AIC_CORE] >= ncores
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceInputError(path, f"aicore_tasks[{i}]: core_id {int(aicore[i, 0])} is not "
                                        f"in metadata.core_types ({ncores} cores)")
        bad = aicore[:, AIC_END] < aicore[:, AIC_START]
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceInputError(path, f"aicore_tasks[{i}]: end_cycles {int(aicore[i, 4])} is "
                                        f"before start_cycles {int(aicore[i, 3])} "
                                        "(negative duration)")
        bad = aicore[:, AIC_R2S] > aicore[:, AIC_START]
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceInputError(path, f"aicore_tasks[{i}]: receive_to_start_cycles exceeds "
                                        "start_cycles")
    if len(aicpu):
        bad = aicpu[:, CPU_FINISH] < aicpu[:, CPU_DISPATCH]
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceInputError(path, f"aicpu_tasks[{i}]: finish_cycles {int(aicpu[i, 3])} is "
                                        f"before dispatch_cycles {int(aicpu[i, 2])} "
                                        "(negative duration)")
    def per_thread(name: str) -> list[PhaseStream]:
        value = stream(name, [])
        if type(value) is tuple:
            return value[1]
        return _per_thread(value, path, name, **_PHASE_STREAMS[name])

    sched = per_thread("aicpu_scheduler_phases")
    orch = per_thread("aicpu_orchestrator_phases")
    host_orch = per_thread("host_orchestrator_phases")
    uploads_raw = stream("host_device_uploads", None)
    uploads = None
    if uploads_raw is not None:
        uploads = _phase_stream(uploads_raw, 0, path, "host_device_uploads",
                                start_key="start_host_ns", end_key="end_host_ns",
                                name_key="phase", default_name="", clock="host_ns")
    return SwimlaneRecords(str(path), level, level_key, meta, aicore, aicore_columns, aicpu,
                           sched, orch, host_orch, uploads, ignored)
