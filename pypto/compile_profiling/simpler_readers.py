"""Readers for Simpler's runtime-profiling files: foreign files in, plain records out.

Every reader is strict: a file that is unreadable, truncated, of the wrong shape or with
impossible values raises `pypto.errors.TraceInputError(path, problem)` with a one-line
problem text, never another exception. Readers do no alignment and no layout; they only
turn files into records (see `clock_alignment` and `device_timeline` for the next steps).

Big streams stay compact: AICore/AICPU rows are NumPy int64 arrays (one row per record),
phase streams keep NumPy start/end columns plus their records. Big files are read piece by
piece (`_walk_object`): the Python objects of only a few MB exist at once, phase records are
kept as their own JSON text (`PhaseRecord`, a mapping decoded on use), deps.json's unused
per-task `args` are stripped before parsing, and a big deps.json is read in a forked child
while the records file is read (`load_capture`). Anything the piecewise reader does not
expect makes it fall back to parsing the file whole, which also words the error.

Formats: shared/docs/formats.md §2 and the real captures in shared/fixtures/simpler/.
Choices where the docs are silent:
- `l2_swimlane_records.json` (key `l2_swimlane_level`) has the same schema as
  `chip_swimlane_records.json` (key `chip_swimlane_level`); 5-column AICore rows get
  `receive_to_start_cycles = 0`.
- Level gating: streams a level does not collect (e.g. scheduler phases at level 2) are
  ignored if present, and listed in `SwimlaneRecords.ignored_streams`.
- Scheduler phase `kind`s are free strings (new: complete/dispatch/release/resolve/drain,
  old: scan/poll/idle/fanout); unknown kinds are kept, not rejected.
"""

from __future__ import annotations

import itertools
import json
import logging
import operator
import os
import pickle
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.errors import TraceInputError

try:  # orjson parses the big record files ~2-3x faster; plain json is the fallback.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    _orjson = None

log = logging.getLogger(__name__)

RECORD_FILE_NAMES = ("chip_swimlane_records.json", "l2_swimlane_records.json")
LEVEL_KEYS = ("chip_swimlane_level", "l2_swimlane_level")
ANCHOR_SCHEMA_VERSIONS = (1,)
STRACE_VERSIONS = ("1",)
LISTED_ONLY_NAMES = ("pmu.csv", "args_dump", "scope_stats")

# Which level first collects each stream (formats.md §2.1).
_STREAM_LEVEL = {
    "aicore_tasks": 1,
    "aicpu_tasks": 2,
    "aicpu_scheduler_phases": 3,
    "aicpu_orchestrator_phases": 4,
    "host_orchestrator_phases": 4,
    "host_device_uploads": 4,
}


# --------------------------------------------------------------------------- JSON

def load_json_file(path: str | os.PathLike) -> object:
    """Parse one JSON file; any read or syntax problem becomes a TraceInputError."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise TraceInputError(path, "is a directory, expected a JSON file") from None
    except OSError as exc:
        raise TraceInputError(path, f"cannot read file: {exc.strerror or exc}") from None
    return parse_json_bytes(data, path)


def parse_json_bytes(data: bytes, path: str | os.PathLike) -> object:
    """Parse JSON text, naming truncation separately from other syntax errors."""
    if not data.strip():
        raise TraceInputError(path, "file is empty, expected JSON")
    try:
        if _orjson is not None:
            return _orjson.loads(data)
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as first:
        err: Exception = first
    if _orjson is not None:
        # orjson's message is terse; re-parse with json for a position to report.
        try:
            return json.loads(data)   # the rare input json accepts and orjson not (NaN)
        except (ValueError, UnicodeDecodeError, RecursionError) as second:
            err = second
    pos = getattr(err, "pos", None)
    if pos is not None and pos >= len(data.rstrip()):
        raise TraceInputError(path, "truncated JSON (file ends before the document is "
                                    "complete)") from None
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    raise TraceInputError(path, f"invalid JSON: {msg}") from None


# --------------------------------------------------------------------------- chunked parsing
#
# Big record files (hundreds of MB) are parsed a few MB at a time: the top-level object is
# walked member by member and each big array is cut into pieces at element boundaries, so the
# Python objects of only one piece exist at once. Cut points are found by pattern (e.g.
# `},{`), not by a full scan; that is safe because a piece is only accepted when orjson
# parses `[` + piece + `]` completely: JSON lexing is deterministic, so a cut inside a
# string or a nested value always makes that parse fail. Any surprise raises `_NotChunkable`
# and the caller parses the whole file the plain way (which also words the error message).

_CHUNK_BYTES = 4 << 20
_PHASE_PIECE_BYTES = 48 << 10   # phase pieces are kept as the text of their records
# From this size on, a records file is held compactly (phase records as text, lazy AICore
# args: ~3x less memory); smaller ones keep plain dicts, which are faster to write out.
_COMPACT_FILE_BYTES = 128 << 20
_WS = b" \t\r\n"
_SMALL_WINDOW = 1 << 16


class _NotChunkable(Exception):
    """The chunked reader cannot handle this file; parse it whole instead."""


def _skip_ws(buf: bytes, p: int) -> int:
    n = len(buf)
    while p < n and buf[p] in _WS:
        p += 1
    return p


def _after_document(exc: Exception) -> bool:
    return str(exc).startswith(("unexpected content after document", "trailing characters"))


def _byte_pos(text, pos: int) -> int:
    """orjson reports positions in characters; the walker needs bytes."""
    text = bytes(text)
    if text.isascii():
        return pos
    return len(text.decode("utf-8", "replace")[:pos].encode("utf-8"))


def _small_value(buf: bytes, p: int) -> tuple[object, int]:
    """Parse the (small) JSON value starting at `p` -> (value, index after it)."""
    mv = memoryview(buf)
    window = _SMALL_WINDOW
    while True:
        end = min(len(buf), p + window)
        try:
            value = _orjson.loads(mv[p:end])
        except _orjson.JSONDecodeError as exc:
            if not _after_document(exc):
                if end == len(buf):
                    raise _NotChunkable from None
                window *= 8
                continue
            stop = p + _byte_pos(mv[p:end], exc.pos)
            while stop > p and buf[stop - 1] in _WS:
                stop -= 1
            try:
                return _orjson.loads(mv[p:stop]), stop
            except _orjson.JSONDecodeError:
                raise _NotChunkable from None
        if end == len(buf):  # a complete document up to EOF: not inside an object
            raise _NotChunkable
        window *= 8          # a number may have been cut short: look further
        del value


def _array_pieces(buf: bytes, p: int, sep: re.Pattern, consume,
                  strip: re.Pattern | None = None, piece_bytes: int | None = None) -> int:
    """Feed the elements of the array at `buf[p] == '['` to `consume(list, text)` piece by
    piece; `text` is the JSON array text the list was parsed from.

    `sep` matches between two elements; its group 1 starts the next element. `strip`
    removes unneeded members from a piece before it is parsed (the piece that holds the
    array's end is parsed as is). Returns the index after the closing `]`.
    """
    step = _CHUNK_BYTES if piece_bytes is None else piece_bytes
    if buf[p:p + 1] != b"[":
        raise _NotChunkable
    q = _skip_ws(buf, p + 1)
    if buf[q:q + 1] == b"]":
        return q + 1
    mv = memoryview(buf)
    while True:
        m = sep.search(buf, q + step)
        cut = m.start() + 1 if m else len(buf)
        piece = b"[" + mv[q:cut] + b"]"
        try:
            if strip is not None and m is not None:
                try:
                    items = _orjson.loads(strip.sub(b"", piece))
                except _orjson.JSONDecodeError:
                    items = _orjson.loads(piece)     # positions below refer to `piece`
            else:
                items = _orjson.loads(piece)
        except _orjson.JSONDecodeError as exc:
            if not _after_document(exc):
                raise _NotChunkable from None
            k = q - 2 + _byte_pos(piece, exc.pos)   # last byte of the array (ws skipped)
            while k > q and buf[k] in _WS:
                k -= 1
            if buf[k:k + 1] != b"]":
                raise _NotChunkable from None
            piece = b"[" + mv[q:k] + b"]"
            try:
                items = _orjson.loads(piece)
            except _orjson.JSONDecodeError:
                raise _NotChunkable from None
            consume(items, piece)
            return k + 1
        consume(items, piece)
        del items, piece
        if m is None:
            raise _NotChunkable
        q = m.start(1)


def _nested_array_pieces(buf: bytes, p: int, sep: re.Pattern, start_inner, consume,
                         piece_bytes: int | None = None) -> int:
    """An array of arrays (one per thread): `start_inner(i)` then pieces of inner array i."""
    if buf[p:p + 1] != b"[":
        raise _NotChunkable
    q = _skip_ws(buf, p + 1)
    if buf[q:q + 1] == b"]":
        return q + 1
    i = 0
    while True:
        start_inner(i)
        q = _skip_ws(buf, _array_pieces(buf, q, sep, consume, piece_bytes=piece_bytes))
        c = buf[q:q + 1]
        if c == b"]":
            return q + 1
        if c != b",":
            raise _NotChunkable
        q = _skip_ws(buf, q + 1)
        i += 1


def _walk_object(buf: bytes, handlers: dict) -> dict:
    """Walk the top-level object; members named in `handlers` and holding an array go to
    `handlers[key](buf, p) -> end`; the other (small) members are parsed and returned."""
    small: dict = {}
    seen: set[str] = set()
    p = _skip_ws(buf, 0)
    if buf[p:p + 1] != b"{":
        raise _NotChunkable
    p = _skip_ws(buf, p + 1)
    if buf[p:p + 1] == b"}":
        return small
    while True:
        if buf[p:p + 1] != b'"':
            raise _NotChunkable
        e = buf.find(b'"', p + 1)
        if e < 0 or buf.find(b"\\", p + 1, e) >= 0:
            raise _NotChunkable
        try:
            key = buf[p + 1:e].decode("utf-8")
        except UnicodeDecodeError:
            raise _NotChunkable from None
        if key in seen:
            raise _NotChunkable
        seen.add(key)
        p = _skip_ws(buf, e + 1)
        if buf[p:p + 1] != b":":
            raise _NotChunkable
        p = _skip_ws(buf, p + 1)
        if key in handlers and buf[p:p + 1] == b"[":
            p = handlers[key](buf, p)
        else:
            small[key], p = _small_value(buf, p)
        p = _skip_ws(buf, p)
        c = buf[p:p + 1]
        if c == b"}":
            if _skip_ws(buf, p + 1) != len(buf):
                raise _NotChunkable
            return small
        if c != b",":
            raise _NotChunkable
        p = _skip_ws(buf, p + 1)


_SEP_OBJECTS = re.compile(rb"\}\s*,\s*(\{)")
_SEP_ROWS = re.compile(rb"\]\s*,\s*(\[)")
_SEP_TASKS = re.compile(rb'\}\s*,\s*(\{)\s*"task_id"')

# deps.json: a task's `args` (its tensor arguments; most of the file) is not used. This
# matches `,"args":[...]` when the list holds only flat objects (string keys; string, number,
# true/false/null or flat-list values; printable-ASCII strings without escapes), following
# JSON's grammar exactly: a match always is a whole, valid `args` member, and removing it
# leaves the other members as they were. Anything else is left in place and parsed.
_J_STR = rb'"[\x20\x21\x23-\x5b\x5d-\x7e]*+"'
_J_SCALAR = (rb'(?:' + _J_STR + rb'|-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+'
             rb'|true|false|null)')
_J_FLAT = rb'\[\s*+(?:' + _J_SCALAR + rb'\s*+(?:,\s*+' + _J_SCALAR + rb'\s*+)*+)?+\]'
_J_VALUE = rb'(?:' + _J_SCALAR + rb'|' + _J_FLAT + rb')'
_J_OBJ = (rb'\{\s*+(?:' + _J_STR + rb'\s*+:\s*+' + _J_VALUE + rb'\s*+(?:,\s*+' + _J_STR
          + rb'\s*+:\s*+' + _J_VALUE + rb'\s*+)*+)?+\}')
# Possessive quantifiers (*+, ++, ?+): no backtracking; every token here ends at a delimiter.
_STRIP_TASK_ARGS = re.compile(rb',\s*+"args"\s*+:\s*+\[\s*+(?:' + _J_OBJ + rb'\s*+(?:,\s*+'
                              + _J_OBJ + rb'\s*+)*+)?+\]')


def _read_file_bytes(path) -> bytes:
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise TraceInputError(path, "is a directory, expected a JSON file") from None
    except OSError as exc:
        raise TraceInputError(path, f"cannot read file: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- helpers

def _is_int(v: object) -> bool:
    return type(v) is int


def _req(obj: dict, key: str, path, where: str):
    if key not in obj:
        raise TraceInputError(path, f"{where}: missing {key!r}")
    return obj[key]


def _req_int(obj: dict, key: str, path, where: str, *, minimum: int | None = None) -> int:
    v = _req(obj, key, path, where)
    if not _is_int(v):
        raise TraceInputError(path, f"{where}.{key}: expected an integer, got {_kind(v)}")
    if minimum is not None and v < minimum:
        raise TraceInputError(path, f"{where}.{key}: must be >= {minimum}, got {v}")
    return v


def _opt_int(obj: dict, key: str, path, where: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if not _is_int(v):
        raise TraceInputError(path, f"{where}.{key}: expected an integer, got {_kind(v)}")
    return v


def _kind(v: object) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _int_matrix(rows: object, ncols: tuple[int, ...], path, where: str) -> np.ndarray:
    """Rows of integers -> (n, max(ncols)) int64 array; short rows are zero-padded."""
    width = max(ncols)
    if not isinstance(rows, list):
        raise TraceInputError(path, f"{where}: expected a list of rows, got {_kind(rows)}")
    if not rows:
        return np.zeros((0, width), dtype=np.int64)
    try:
        arr = np.array(rows)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is None or arr.ndim != 2 or arr.dtype.kind not in "iu":
        _explain_bad_rows(rows, ncols, path, where)  # raises with the first bad row
        raise TraceInputError(path, f"{where}: rows must be lists of integers")
    if arr.shape[1] not in ncols:
        raise TraceInputError(path, f"{where}: rows have {arr.shape[1]} columns, expected "
                                    f"{' or '.join(map(str, ncols))}")
    if arr.dtype.kind == "u":  # values beyond int64: not a valid cycle count or id
        raise TraceInputError(path, f"{where}: integer value out of the 64-bit signed range")
    if arr.size and int(arr.min()) < 0:
        i, j = np.argwhere(arr < 0)[0]
        raise TraceInputError(path, f"{where}[{i}][{j}]: negative value {int(arr[i, j])}")
    arr = arr.astype(np.int64, copy=False)
    if arr.shape[1] < width:
        arr = np.hstack([arr, np.zeros((arr.shape[0], width - arr.shape[1]), dtype=np.int64)])
    return arr


def _explain_bad_rows(rows: list, ncols: tuple[int, ...], path, where: str) -> None:
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            raise TraceInputError(path, f"{where}[{i}]: expected a list, got {_kind(row)}")
        if len(row) not in ncols:
            raise TraceInputError(path, f"{where}[{i}]: {len(row)} columns, expected "
                                        f"{' or '.join(map(str, ncols))}")
        for j, v in enumerate(row):
            if not _is_int(v):
                raise TraceInputError(path, f"{where}[{i}][{j}]: expected an integer, "
                                            f"got {_kind(v)}")


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


# --------------------------------------------------------------------------- deps / names

@dataclass(slots=True)
class DepsGraph:
    """deps.json: the task graph. Task ids are 64-bit `(ring << 32) | local`."""

    path: str
    task_ids: list[int]
    kernel_ids: dict[int, tuple[int, ...]]   # task -> (aic, aiv0, aiv1); -1 = inactive
    block_num: dict[int, int]
    edges: list[tuple[int, int]]             # (pred, succ), duplicates removed, file order


def _task_id(v: object, path, where: str) -> int:
    if type(v) is str and v.isascii() and v.isdigit():
        t = int(v)
    elif _is_int(v) and v >= 0:
        t = v
    else:
        raise TraceInputError(path, f"{where}: expected a task id (decimal string), got {v!r}")
    if t >= 1 << 64:
        raise TraceInputError(path, f"{where}: task id {t} does not fit in 64 bits")
    return t


def _decimal_ids(values: list) -> list[int] | None:
    """All values decimal strings of 1-19 digits (< 2**64) -> ints; else None (slow path)."""
    if not values or set(map(type, values)) != {str}:
        return None
    joined = "".join(values)
    if not (joined.isascii() and joined.isdigit()) or min(map(len, values)) < 1 \
            or max(map(len, values)) > 19:
        return None
    return list(map(int, values))


class _DepsBuilder:
    """Collects what the merge uses from deps.json (ids, kernel ids, block_num, edges);
    fed task and edge lists piece by piece, so per-task `args` never pile up.

    Each piece is checked column-wise first (C-level maps); a piece with anything unusual
    goes through the per-item loop, which words the error exactly."""

    def __init__(self, path):
        self.path = path
        self.task_ids: list[int] = []
        self.kernel_ids: dict[int, tuple[int, ...]] = {}
        self.block_num: dict[int, int] = {}
        self._edges: dict[tuple[int, int], None] = {}   # insertion-ordered, duplicates dropped
        self._kid_tuples: dict[tuple, tuple] = {}   # few distinct kernel id triples: share them
        self.n_tasks = self.n_edges = 0

    def add_tasks(self, tasks: list) -> None:
        if not self._add_tasks_fast(tasks):
            self._add_tasks_checked(tasks)
        self.n_tasks += len(tasks)

    def _add_tasks_fast(self, tasks: list) -> bool:
        if not tasks or set(map(type, tasks)) != {dict}:
            return not tasks
        tids = _decimal_ids(list(map(operator.methodcaller("get", "task_id"), tasks)))
        if tids is None:
            return False
        kids = list(map(operator.methodcaller("get", "kernel_ids"), tasks))
        kid_types = set(map(type, kids))
        if not kid_types <= {list, type(None)}:
            return False
        present = [k for k in kids if k is not None] if type(None) in kid_types else kids
        if present and set(map(type, itertools.chain.from_iterable(present))) - {int}:
            return False
        bns = list(map(operator.methodcaller("get", "block_num", 1), tasks))
        if set(map(type, bns)) != {int} or min(bns) < 0:
            return False
        self.task_ids.extend(tids)
        intern = self._kid_tuples.setdefault
        if present is kids:
            self.kernel_ids.update(zip(tids, [intern(t, t) for t in map(tuple, kids)]))
        else:
            self.kernel_ids.update((t, intern(tuple(k), tuple(k)))
                                   for t, k in zip(tids, kids) if k is not None)
        self.block_num.update(zip(tids, map(max, bns, itertools.repeat(1))))
        return True

    def _add_tasks_checked(self, tasks: list) -> None:
        path, base = self.path, self.n_tasks
        task_ids, kernel_ids, block_num = self.task_ids, self.kernel_ids, self.block_num
        kid_tuples = self._kid_tuples
        for i, t in enumerate(tasks, base):
            if type(t) is not dict:
                raise TraceInputError(path, f"tasks[{i}]: expected an object, got {_kind(t)}")
            where = f"tasks[{i}]"
            tid = _task_id(_req(t, "task_id", path, where), path, f"{where}.task_id")
            task_ids.append(tid)
            kids = t.get("kernel_ids")
            if kids is not None:
                if type(kids) is not list or not all(type(k) is int for k in kids):
                    raise TraceInputError(path, f"tasks[{i}].kernel_ids: expected a list of "
                                                "integers")
                kt = tuple(kids)
                kernel_ids[tid] = kid_tuples.setdefault(kt, kt)
            bn = t.get("block_num", 1)
            if type(bn) is not int or bn < 0:
                raise TraceInputError(path, f"tasks[{i}].block_num: expected a non-negative "
                                            f"integer, got {bn!r}")
            block_num[tid] = max(1, bn)

    def add_edges(self, edges: list) -> None:
        fast = bool(edges) and set(map(type, edges)) == {dict}
        if fast:
            preds = _decimal_ids(list(map(operator.methodcaller("get", "pred"), edges)))
            succs = _decimal_ids(list(map(operator.methodcaller("get", "succ"), edges)))
            fast = preds is not None and succs is not None
        if fast:
            self._edges.update(dict.fromkeys(zip(preds, succs)))
        else:
            self._add_edges_checked(edges)
        self.n_edges += len(edges)

    def _add_edges_checked(self, edges: list) -> None:
        path, out = self.path, self._edges
        for i, e in enumerate(edges, self.n_edges):
            where = f"edges[{i}]"
            if type(e) is not dict:
                raise TraceInputError(path, f"{where}: expected an object, got {_kind(e)}")
            out[(_task_id(_req(e, "pred", path, where), path, f"{where}.pred"),
                 _task_id(_req(e, "succ", path, where), path, f"{where}.succ"))] = None

    def result(self) -> DepsGraph:
        return DepsGraph(str(self.path), self.task_ids, self.kernel_ids, self.block_num,
                         list(self._edges))


def _read_deps_chunked(buf: bytes, path) -> DepsGraph:
    b = _DepsBuilder(path)
    done = []

    def pieces(sep, consume, strip=None):
        def handle(buf, p):
            done.append(consume)
            return _array_pieces(buf, p, sep, lambda items, _text: consume(items), strip)
        return handle

    _walk_object(buf, {"tasks": pieces(_SEP_TASKS, b.add_tasks, _STRIP_TASK_ARGS),
                       "edges": pieces(_SEP_OBJECTS, b.add_edges)})
    if len(done) != 2:
        raise _NotChunkable            # absent or not lists: the plain path words the error
    return b.result()


def read_deps(path: str | os.PathLike, data: object = None) -> DepsGraph:
    """Read deps.json: task ids, kernel ids, block_num and edges (per-task args are dropped)."""
    if data is None:
        buf = _read_file_bytes(path)
        if _orjson is not None and buf.strip():
            try:
                return _read_deps_chunked(buf, path)
            except (_NotChunkable, TraceInputError):
                pass   # parse it whole: same result, and the canonical error message
        data = parse_json_bytes(buf, path)
        del buf
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    tasks = _req(data, "tasks", path, "deps.json")
    edges = _req(data, "edges", path, "deps.json")
    if not isinstance(tasks, list):
        raise TraceInputError(path, f"tasks: expected a list, got {_kind(tasks)}")
    if not isinstance(edges, list):
        raise TraceInputError(path, f"edges: expected a list, got {_kind(edges)}")
    b = _DepsBuilder(path)
    b.add_tasks(tasks)
    b.add_edges(edges)
    return b.result()


@dataclass(slots=True)
class NameMap:
    """name_map_<case>.json: kernel (callable) id -> name, valid within one program."""

    path: str
    level: int | None
    orchestrator_name: str | None
    names: dict[int, str]


def read_name_map(path: str | os.PathLike, data: object = None) -> NameMap:
    if data is None:
        data = load_json_file(path)
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    table = _req(data, "callable_id_to_name", path, "name map")
    if not isinstance(table, dict):
        raise TraceInputError(path, f"callable_id_to_name: expected an object, got {_kind(table)}")
    names = {}
    for k, v in table.items():
        if not (k.isdigit() or (k.startswith("-") and k[1:].isdigit())):
            raise TraceInputError(path, f"callable_id_to_name: key {k!r} is not an integer id")
        if not isinstance(v, str):
            raise TraceInputError(path, f"callable_id_to_name[{k!r}]: expected a string, "
                                        f"got {_kind(v)}")
        names[int(k)] = v
    level = data.get("level")
    if level is not None and not _is_int(level):
        raise TraceInputError(path, f"level: expected an integer, got {_kind(level)}")
    orch = data.get("orchestrator_name")
    if orch is not None and not isinstance(orch, str):
        raise TraceInputError(path, f"orchestrator_name: expected a string, got {_kind(orch)}")
    return NameMap(str(path), level, orch, names)


@dataclass(slots=True)
class DispatchProgram:
    """dispatch_program.json of a distributed leaf: which program ran in this dispatch."""

    path: str
    program: str
    raw: dict


def read_dispatch_program(path: str | os.PathLike, data: object = None) -> DispatchProgram:
    if data is None:
        data = load_json_file(path)
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    program = _req(data, "program", path, "dispatch_program.json")
    if not isinstance(program, str) or not program:
        raise TraceInputError(path, f"program: expected a non-empty string, got {program!r}")
    return DispatchProgram(str(path), program, data)


# --------------------------------------------------------------------------- converted trace

@dataclass(slots=True)
class MergedSwimlane:
    """Simpler's converted Chrome trace (`merged_swimlane*.json`): events as read.

    Timestamps are microseconds from the capture's own origin; pids 1-5 are views.
    """

    path: str
    events: list[dict]
    metadata: dict | None


def read_merged_swimlane(path: str | os.PathLike, data: object = None) -> MergedSwimlane:
    if data is None:
        data = load_json_file(path)
    if isinstance(data, list):
        events, meta = data, None
    elif isinstance(data, dict):
        events = _req(data, "traceEvents", path, "trace")
        meta = data.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise TraceInputError(path, f"metadata: expected an object, got {_kind(meta)}")
    else:
        raise TraceInputError(path, f"expected a Chrome trace object, got {_kind(data)}")
    if not isinstance(events, list):
        raise TraceInputError(path, f"traceEvents: expected a list, got {_kind(events)}")
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise TraceInputError(path, f"traceEvents[{i}]: expected an object, got {_kind(ev)}")
        ph = ev.get("ph")
        if not isinstance(ph, str):
            raise TraceInputError(path, f"traceEvents[{i}]: missing or invalid 'ph'")
        if ph in ("X", "s", "f", "t", "C", "B", "E", "i", "I"):
            ts = ev.get("ts")
            if type(ts) not in (int, float):
                raise TraceInputError(path, f"traceEvents[{i}].ts: expected a number, "
                                            f"got {_kind(ts)}")
            if ph == "X":
                dur = ev.get("dur", 0)
                if type(dur) not in (int, float):
                    raise TraceInputError(path, f"traceEvents[{i}].dur: expected a number, "
                                                f"got {_kind(dur)}")
                if dur < 0:
                    raise TraceInputError(path, f"traceEvents[{i}].dur: negative duration {dur}")
        if "pid" in ev and not _is_int(ev["pid"]):
            raise TraceInputError(path, f"traceEvents[{i}].pid: expected an integer")
        if "tid" in ev and not _is_int(ev["tid"]):
            raise TraceInputError(path, f"traceEvents[{i}].tid: expected an integer")
    return MergedSwimlane(str(path), events, meta)


# --------------------------------------------------------------------------- host log

@dataclass(slots=True)
class StraceSpan:
    """One `[STRACE]` host span. `ts_ns` is CLOCK_MONOTONIC unless `device_clock`."""

    pid: int
    tid: int
    name: str
    ts_ns: int
    dur_ns: int
    depth: int
    inv: int | None
    hid: str | None
    device_clock: bool           # tagged clk=dev: offset on the device's own origin
    attrs: dict[str, str]
    line: int


@dataclass(slots=True)
class LogClockAnchor:
    """`[CLOCK_ANCHOR] v=1 pid=<pid> mono_ns=<ns> wall_ns=<ns>`: monotonic <-> wall time."""

    pid: int
    mono_ns: int
    wall_ns: int
    line: int


@dataclass(slots=True)
class HostLog:
    path: str
    spans: list[StraceSpan]
    clock_anchors: list[LogClockAnchor]


_KV = re.compile(r"(\S+?)=(\S*)")


def _kv_fields(text: str) -> dict[str, str]:
    return dict(_KV.findall(text))


def read_host_log(path: str | os.PathLike) -> HostLog:
    """Parse `[STRACE]` and `[CLOCK_ANCHOR]` lines of a Simpler run log.

    Other lines are ignored; the markers may be preceded by any prefix.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise TraceInputError(path, "is a directory, expected a log file") from None
    except OSError as exc:
        raise TraceInputError(path, f"cannot read file: {exc.strerror or exc}") from None
    spans: list[StraceSpan] = []
    anchors: list[LogClockAnchor] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        i = line.find("[STRACE] ")
        if i >= 0:
            spans.append(_parse_strace(line[i + 9:], path, lineno))
            continue
        i = line.find("[CLOCK_ANCHOR] ")
        if i >= 0:
            f = _kv_fields(line[i + 15:])
            anchors.append(LogClockAnchor(_log_int(f, "pid", path, lineno, "[CLOCK_ANCHOR]"),
                                          _log_int(f, "mono_ns", path, lineno, "[CLOCK_ANCHOR]"),
                                          _log_int(f, "wall_ns", path, lineno, "[CLOCK_ANCHOR]"),
                                          lineno))
            if f.get("v", "1") not in STRACE_VERSIONS:
                raise TraceInputError(path, f"line {lineno}: unknown [CLOCK_ANCHOR] version "
                                            f"v={f['v']}")
    if not spans and not anchors:
        raise TraceInputError(path, "no [STRACE] or [CLOCK_ANCHOR] lines: not a Simpler run log")
    return HostLog(str(path), spans, anchors)


def _log_int(f: dict, key: str, path, lineno: int, marker: str) -> int:
    v = f.get(key)
    if v is None:
        raise TraceInputError(path, f"line {lineno}: {marker} without {key}=")
    try:
        return int(v)
    except ValueError:
        raise TraceInputError(path, f"line {lineno}: {marker} {key}={v!r} is not an "
                                    "integer") from None


_STRACE_KNOWN = {"v", "pid", "tid", "inv", "hid", "depth", "name", "ts", "dur"}


def _parse_strace(rest: str, path, lineno: int) -> StraceSpan:
    f = _kv_fields(rest)
    v = f.get("v")
    if v is None:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without v=")
    if v not in STRACE_VERSIONS:
        raise TraceInputError(path, f"line {lineno}: unknown [STRACE] version v={v}")
    name = f.get("name")
    if not name:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without name=")
    ts = _log_int(f, "ts", path, lineno, "[STRACE]")
    dur = _log_int(f, "dur", path, lineno, "[STRACE]")
    if dur < 0:
        raise TraceInputError(path, f"line {lineno}: [STRACE] negative duration dur={dur}")
    if ts < 0:
        raise TraceInputError(path, f"line {lineno}: [STRACE] negative ts={ts}")
    inv = _log_int(f, "inv", path, lineno, "[STRACE]") if "inv" in f else None
    depth = _log_int(f, "depth", path, lineno, "[STRACE]") if "depth" in f else 0
    attrs = {k: val for k, val in f.items() if k not in _STRACE_KNOWN}
    return StraceSpan(_log_int(f, "pid", path, lineno, "[STRACE]"),
                      _log_int(f, "tid", path, lineno, "[STRACE]"), name, ts, dur, depth, inv,
                      f.get("hid"), attrs.get("clk") == "dev", attrs, lineno)


@dataclass(slots=True)
class HostPhaseBatch:
    """One line of host_phase_records.jsonl: host-side phases on CLOCK_MONOTONIC."""

    pid: int
    inv: int | None
    clock: str
    dropped: int
    phases: PhaseStream           # names = phase; records carry tid/detail


def read_host_phase_records(path: str | os.PathLike) -> list[HostPhaseBatch]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TraceInputError(path, f"cannot read file: {exc.strerror or exc}") from None
    out = []
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        obj = parse_json_bytes(line, f"{path}:{lineno}")
        where = f"line {lineno}"
        if not isinstance(obj, dict):
            raise TraceInputError(path, f"{where}: expected an object, got {_kind(obj)}")
        clock = obj.get("clock", "host_monotonic_ns")
        if clock != "host_monotonic_ns":
            raise TraceInputError(path, f"{where}: unknown clock {clock!r}")
        stream = _phase_stream(_req(obj, "records", path, where), 0, path, f"{where}.records",
                               start_key="start_ns", end_key="end_ns", name_key="phase",
                               default_name="", clock="host_ns")
        for i, r in enumerate(stream.records):
            if "tid" in r and not _is_int(r["tid"]):
                raise TraceInputError(path, f"{where}.records[{i}].tid: expected an integer")
        out.append(HostPhaseBatch(_req_int(obj, "pid", path, where), _opt_int(obj, "inv", path,
                                  where), clock, obj.get("dropped", 0) or 0, stream))
    if not out:
        raise TraceInputError(path, "no records")
    return out


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
    merged_swimlanes: list[str] = field(default_factory=list)
    host_logs: list[str] = field(default_factory=list)
    host_phase_records: str | None = None
    dispatch_program: str | None = None
    listed_only: list[str] = field(default_factory=list)   # pmu.csv, args_dump/, scope_stats/

    @property
    def label(self) -> str:
        """`r<rank>` / `r<rank>d<k>` in the distributed layout, else the directory name."""
        if self.rank is not None:
            return f"r{self.rank}" + (f"d{self.dispatch}" if self.dispatch is not None else "")
        return Path(self.directory).name

    def usable(self) -> bool:
        return bool(self.records or self.merged_swimlanes or self.deps or self.host_logs)


_RANK_RE = re.compile(r"rank(\d+)$")
_DISPATCH_RE = re.compile(r"d(\d+)$")


def _classify_dir(directory: Path) -> CaptureFiles:
    files = CaptureFiles(str(directory))
    parts = directory.parts
    if parts and _DISPATCH_RE.match(parts[-1]) and len(parts) > 1 and _RANK_RE.match(parts[-2]):
        files.rank = int(_RANK_RE.match(parts[-2]).group(1))
        files.dispatch = int(_DISPATCH_RE.match(parts[-1]).group(1))
    elif parts and _RANK_RE.match(parts[-1]):
        files.rank = int(_RANK_RE.match(parts[-1]).group(1))
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise TraceInputError(directory, f"cannot list directory: {exc.strerror or exc}") from None
    for e in entries:
        name = e.name
        if e.is_dir():
            if name in LISTED_ONLY_NAMES:
                files.listed_only.append(e.path)
            continue
        if name in RECORD_FILE_NAMES:
            if files.records is None or name == RECORD_FILE_NAMES[0]:
                files.records = e.path
        elif name == "deps.json":
            files.deps = e.path
        elif name.startswith("name_map") and name.endswith(".json"):
            files.name_maps.append(e.path)
        elif name.startswith("merged_swimlane") and name.endswith(".json"):
            files.merged_swimlanes.append(e.path)
        elif name == "dispatch_program.json":
            files.dispatch_program = e.path
        elif name == "host_phase_records.jsonl":
            files.host_phase_records = e.path
        elif (name.startswith("host_log") and name.endswith(".txt")) or name.endswith(".log"):
            files.host_logs.append(e.path)
        elif name in LISTED_ONLY_NAMES:
            files.listed_only.append(e.path)
    return files


def discover_captures(path: str | os.PathLike) -> list[CaptureFiles]:
    """Find capture leaves under a work dir, a `dfx_outputs/` dir or a leaf dir.

    Leaves of the distributed layout `rank<r>/d<k>/` come back sorted by (rank, dispatch).
    A directory with nothing usable is an error.
    """
    root = Path(path)
    if not root.exists():
        raise TraceInputError(path, "no such file or directory")
    if not root.is_dir():
        raise TraceInputError(path, "expected a directory")
    if (root / "dfx_outputs").is_dir():
        root = root / "dfx_outputs"
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in LISTED_ONLY_NAMES)
        files = _classify_dir(Path(dirpath))
        if files.usable():
            found.append(files)
    if not found:
        raise TraceInputError(path, "no Simpler capture files found (looked for "
                                    "chip_swimlane_records.json, l2_swimlane_records.json, "
                                    "merged_swimlane*.json, deps.json, host_log*.txt)")
    found.sort(key=lambda f: (f.rank if f.rank is not None else -1,
                              f.dispatch if f.dispatch is not None else -1, f.directory))
    return found


@dataclass(slots=True)
class Capture:
    """One capture leaf, read: what `device_timeline.add_device_capture` consumes."""

    files: CaptureFiles
    records: SwimlaneRecords | None = None
    deps_graph: DepsGraph | None = None
    name_map: NameMap | None = None
    dispatch_program: DispatchProgram | None = None
    host_log: HostLog | None = None
    warnings: list[str] = field(default_factory=list)
    deps_pending: _DepsInChild | None = None   # deps.json still being read by a child

    @property
    def deps(self) -> DepsGraph | None:
        """deps.json's graph; waits for the child reading it if there is one (errors in the
        file are raised here)."""
        if self.deps_pending is not None:
            pending, self.deps_pending = self.deps_pending, None
            self.deps_graph = pending.result()
        return self.deps_graph

    @deps.setter
    def deps(self, value: DepsGraph | None) -> None:
        if self.deps_pending is not None:
            self.deps_pending.cancel()
            self.deps_pending = None
        self.deps_graph = value


_PARALLEL_DEPS_BYTES = 4 << 20   # a deps.json this big is read in a child, beside the records


class _DepsInChild:
    """Reads deps.json in a forked child while the parent reads the records file (2 cores:
    the two big parses overlap). The graph comes back packed in NumPy arrays."""

    def __init__(self, path: str):
        self.path = path
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:                       # child: read, send, exit without cleanup
            try:
                os.close(r)
                try:
                    payload = ("ok", _pack_deps(read_deps(path)))
                except TraceInputError as exc:
                    payload = ("error", exc.path, exc.problem)
                except BaseException as exc:    # noqa: BLE001 - reported by the parent
                    payload = ("crash", f"{type(exc).__name__}: {exc}")
                with os.fdopen(w, "wb") as f:
                    pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                os._exit(0)
        os.close(w)
        self.fd = r

    def result(self) -> DepsGraph:
        try:
            with os.fdopen(self.fd, "rb") as f:
                data = f.read()
        finally:
            os.waitpid(self.pid, 0)
        try:
            payload = pickle.loads(data)
        except Exception:                       # noqa: BLE001 - child died mid-way
            payload = ("crash", "no result")
        if payload[0] == "error":
            raise TraceInputError(payload[1], payload[2])
        if payload[0] != "ok":
            log.warning("reading %s in a child failed (%s); reading it here", self.path,
                        payload[1])
            return read_deps(self.path)
        return _unpack_deps(self.path, payload[1])

    def cancel(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def _pack_deps(g: DepsGraph) -> tuple:
    kid_index: dict[tuple, int] = {}
    kids = [-1] * len(g.task_ids)
    for i, t in enumerate(g.task_ids):
        k = g.kernel_ids.get(t)
        if k is not None:
            kids[i] = kid_index.setdefault(k, len(kid_index))
    return (np.array(g.task_ids, dtype=np.uint64), list(kid_index), np.array(kids, np.int64),
            np.array([g.block_num[t] for t in g.task_ids], dtype=np.int64),
            np.array(g.edges, dtype=np.uint64).reshape(-1, 2))


def _unpack_deps(path, packed: tuple) -> DepsGraph:
    tids_a, kid_tuples, kids, bns, edges = packed
    tids = tids_a.tolist()
    kernel_ids = {t: kid_tuples[k] for t, k in zip(tids, kids.tolist()) if k >= 0}
    return DepsGraph(str(path), tids, kernel_ids, dict(zip(tids, bns.tolist())),
                     list(map(tuple, edges.tolist())))


def _deps_in_child(files: CaptureFiles) -> _DepsInChild | None:
    if not (files.deps and files.records and _orjson is not None and hasattr(os, "fork")):
        return None
    try:
        if os.path.getsize(files.deps) < _PARALLEL_DEPS_BYTES:
            return None
        return _DepsInChild(files.deps)
    except OSError:
        return None


def load_capture(files: CaptureFiles, *, read_host_log_file: bool = True) -> Capture:
    """Read the parseable files of one leaf (merged_swimlane*.json is left to its reader)."""
    cap = Capture(files)
    pending = _deps_in_child(files)
    try:
        if files.records:
            cap.records = read_swimlane_records(files.records)
        if pending is None and files.deps:
            cap.deps = read_deps(files.deps)
        _load_small_files(cap, files, read_host_log_file)
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    # The child's result is collected on first use of `cap.deps` (device_timeline lays out
    # the phase streams first, so reading deps.json overlaps that too).
    cap.deps_pending = pending
    return cap


def _load_small_files(cap: Capture, files: CaptureFiles, read_host_log_file: bool) -> None:
    if files.name_maps:
        cap.name_map = read_name_map(files.name_maps[0])
        if len(files.name_maps) > 1:
            cap.warnings.append(f"{files.directory}: {len(files.name_maps)} name maps, using "
                                f"{Path(files.name_maps[0]).name}")
    if files.dispatch_program:
        cap.dispatch_program = read_dispatch_program(files.dispatch_program)
    if read_host_log_file and files.host_logs:
        cap.host_log = read_host_log(files.host_logs[0])
    for p in files.listed_only:
        log.info("not a timeline, listed only: %s", p)
