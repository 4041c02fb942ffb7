"""JSON reading shared by the Simpler readers: whole-file parsing with worded errors,
the piece-by-piece walker for big files (`_walk_object`, `_array_pieces`), and the small
validation helpers (`_req`, `_req_int`, `_int_matrix`, ...) that turn bad values into
`TraceInputError`s."""

from __future__ import annotations

import json
import os
import re

import numpy as np

from pypto.compile_profiling.input_files import read_input_bytes, sniff_json
from pypto.errors import TraceInputError

try:  # orjson parses the big record files ~2-3x faster; plain json is the fallback.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    _orjson = None


# --------------------------------------------------------------------------- JSON

def load_json_file(path: str | os.PathLike) -> object:
    """Parse one JSON file; any read or syntax problem becomes a TraceInputError."""
    return parse_json_bytes(_read_file_bytes(path), path)


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


def _read_file_bytes(path) -> bytes:
    """A JSON file's bytes; special files, garbage and unreadable files are refused (see
    `input_files`)."""
    return read_input_bytes(path, sniff=sniff_json)


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
