"""Chrome trace events as JSON text made from a block's columns by NumPy, no object per event.

A chunk of rows becomes a uint8 matrix, one event per matrix row (ending with a comma), each
field a run of columns: a constant (keys, punctuation) copied to every row, the decimal
digits of an integer or time column computed on the whole column, a string looked up in a
table of texts encoded once by orjson. JSON allows whitespace between tokens, so a field is
as wide as its widest value in the chunk: numbers are padded with spaces on the left, strings
and floats on the right, and an argument a row does not have is blanked to spaces. The matrix
is written as it is: the file grows a little (merge of 100k device tasks: 354.3 -> 369.0 MB,
+4.1%); squeezing the spaces out (`bytes.translate`, a boolean mask) cost more than the
whole encoding (4-6 ns a byte on this host).

Every block, flow and counter a `Timeline` can hold is written this way. What `json.loads`
reads back is what the model holds (`SliceBlock.row_args`, the flows' ends, the counters'
values), each argument rendered as `arg_values` says: times are the exact decimal of the
integer nanoseconds in microseconds, shortest form ("12.5", "3.0"); integers are their
decimal digits; floats orjson's text of the same Python floats; strings orjson's. Columns
the NumPy paths do not cover (lists of mixed values, object arrays, tables of non-strings)
and `extra_args` are a table of per-row JSON texts, padded like the rest; a row's
`extra_args` are one field, the text of its dict without the braces, after the columns (a
key also in a column then comes twice: the later value is the one JSON readers keep, as in
`row_args`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import orjson

from pypto.compile_profiling.timeline.arg_values import (
    BOOL,
    DOUBLE,
    JSON,
    arg_key,
    array_kind,
    column_kind,
    json_text,
)
from pypto.compile_profiling.timeline.json_values import dumps_strict
from pypto.compile_profiling.timeline.model import (
    CounterTrack,
    FlowBlock,
    SliceBlock,
    Track,
)

__all__ = ["counter_rows", "flow_rows", "slice_rows"]

_SPACE, _QUOTE, _MINUS = 32, 34, 45


def _u32_texts(texts: list[bytes]) -> np.ndarray:
    """4-byte texts as uint32 (memory order = text order), for gathers of 4 bytes at once."""
    return np.frombuffer(b"".join(texts), np.uint32)


# the text of each 4-digit group: zero-padded (a lower group), space-padded (the leading
# group of a number, "    " when 0), and the last group when it leads ("   0" for 0)
_GROUP = np.concatenate([_u32_texts([b"%04d" % i for i in range(10000)]),
                         _u32_texts([b"%4d" % i if i else b"    " for i in range(10000)])])
_LAST_GROUP = np.concatenate([_GROUP[:10000], _u32_texts([b"%4d" % i for i in range(10000)])])
# ".ddd" of the nanoseconds below a microsecond, trailing zeros dropped (".0" for none)
_FRAC = _u32_texts([(b".%03d" % i).rstrip(b"0").ljust(4) if i else b".0  "
                    for i in range(1000)])
_POW10 = np.array([10 ** k for k in range(1, 20)], np.uint64)
_BOOL = np.frombuffer(b"falsetrue ", np.uint8).reshape(2, 5)
_E8, _E4 = np.uint64(10 ** 8), np.uint32(10 ** 4)


def _split(x: np.ndarray, d) -> tuple[np.ndarray, np.ndarray]:
    """(x // d, x % d): `//` by a scalar plus a multiply is 2-3.5x faster than `np.divmod`
    (measured on uint64 and uint32 columns of 16k)."""
    q = x // d
    return q, x - q * d


def _digits(mag: np.ndarray, neg: np.ndarray | None) -> np.ndarray:
    """(n, w) uint8: the decimal text of `mag` (uint64), right-aligned, with '-' where `neg`.

    The number is cut into 4-digit groups (uint32 arithmetic below 10**8), each group's text
    gathered as one uint32 from `_GROUP`; a group holding digits of every value in the
    column (all have at least that many digits) needs no test for leading zeros."""
    n = len(mag)
    top, low = (int(mag.max()), int(mag.min())) if n else (0, 0)
    width, always = len(str(top)), len(str(low))
    if top < 10 ** 8:
        parts = [mag.astype(np.uint32)]
    elif top < 10 ** 16:
        hi, lo = _split(mag, _E8)
        parts = [hi.astype(np.uint32), lo.astype(np.uint32)]
    else:
        hi, lo = _split(mag, _E8)
        hi, mid = _split(hi, _E8)
        parts = [hi.astype(np.uint32), mid.astype(np.uint32), lo.astype(np.uint32)]
    groups = []
    for p in parts:
        groups += _split(p, _E4)
    n_groups = -(-width // 4)
    groups = groups[len(groups) - n_groups:]
    text = np.empty((n, n_groups), np.uint32)
    started = None  # rows whose number has a digit in a group above (None: no row yet)
    for j, g in enumerate(groups):
        if 4 * (n_groups - j) <= always:
            text[:, j] = _GROUP.take(g)
            continue
        last = j == n_groups - 1
        at = g + 10000 if started is None else np.where(started, g, g + 10000)
        text[:, j] = (_LAST_GROUP if last else _GROUP).take(at)
        if not last:
            started = g != 0 if started is None else started | (g != 0)
    text = text.view(np.uint8)
    has_neg = neg is not None and neg.any()
    width += bool(has_neg)
    if width > 4 * n_groups:
        text = np.concatenate([np.full((n, 1), _SPACE, np.uint8), text], axis=1)
    text = text[:, text.shape[1] - width:]
    if has_neg:
        rows = np.flatnonzero(neg)
        n_digits = np.searchsorted(_POW10, mag[rows], side="right") + 1
        text[rows, width - 1 - n_digits] = _MINUS
    return text


def _magnitude(v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """|v| as uint64 (exact for -2**63 too) and where v < 0 (None when none is)."""
    if v.dtype.kind == "u":
        return v.astype(np.uint64, copy=False), None
    v = v.astype(np.int64, copy=False)
    if not len(v) or v.min() >= 0:
        return v.view(np.uint64), None
    return np.abs(v).view(np.uint64), v < 0


def int_text(v: np.ndarray) -> np.ndarray:
    return _digits(*_magnitude(v))


def time_text(ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer nanoseconds as exact microseconds, e.g. -1500 -> "-1.5", 2000 -> "2.0": the
    whole microseconds and the fraction, two fields."""
    mag, neg = _magnitude(ns)
    us, frac = _split(mag, np.uint64(1000))
    # frac < 1000: its int64 view is the same numbers (NumPy 1.x `take` refuses uint64)
    return _digits(us, neg), _FRAC.take(frac.view(np.int64)).view(np.uint8).reshape(-1, 4)


def _padded(texts: list[bytes]) -> np.ndarray:
    """(n, w) uint8 of JSON texts, right-padded with spaces. JSON text from orjson has no
    byte below 0x20 (control characters are escaped), so NUL padding becomes spaces by max."""
    a = np.array(texts, dtype=np.bytes_)
    m = a.view(np.uint8).reshape(len(texts), a.dtype.itemsize)
    return np.maximum(m, _SPACE, out=m)


def _all_str(values: list) -> bool:
    return set(map(type, values)) <= {str}


def _str_table(values: list[str]) -> np.ndarray:
    """`json_table` of strings, from one orjson call for the list. When no string holds a
    quote, every quote in the text delimits an item: the items are cut out by NumPy
    (16k task labels: 103-149 ns a string against 280-294 ns split by `bytes.split`);
    else split between items: inside an encoded string every quote is escaped, so '","'
    only occurs between items."""
    data = dumps_strict(values)
    buf = np.frombuffer(data, np.uint8)
    quotes = np.flatnonzero(buf == _QUOTE)
    if len(quotes) == 2 * len(values):
        starts = quotes[0::2]
        lens = quotes[1::2] - starts + 1
        cols = np.arange(int(lens.max()))
        table = buf.take(starts[:, None] + cols, mode="clip")
        return np.where(cols < lens[:, None], table, np.uint8(_SPACE))
    inner = data[2:-2].split(b'","')
    body = _padded(inner)
    table = np.full((len(inner), body.shape[1] + 2), _SPACE, np.uint8)
    table[:, 0] = _QUOTE
    table[:, 1:-1] = body
    ends = np.fromiter(map(len, inner), np.intp, len(inner)) + 1
    table[np.arange(len(inner)), ends] = _QUOTE
    return table


def json_table(values: list) -> np.ndarray:
    """(n, w) uint8: the JSON text of each value (`arg_values.json_text`), right-padded."""
    if not values:
        return np.zeros((0, 1), np.uint8)
    if _all_str(values):
        return _str_table(values)
    return _padded([json_text(v) for v in values])


def float_text(v: np.ndarray) -> np.ndarray:
    """orjson's text of the floats (NaN and infinities as null), right-padded."""
    return _padded(orjson.dumps(v.tolist())[1:-1].split(b","))


def value_text(v: np.ndarray | list, kind: str | None) -> list[np.ndarray | bytes]:
    """The fields of the JSON text of `v` (a slice of an `ArgColumn`'s values or of a
    counter's), its `arg_values` kind `kind` (None: each value's own)."""
    if kind is None:
        return [json_table(v.tolist() if isinstance(v, np.ndarray) else v)]
    if kind is JSON:  # a 2D column: each row a list
        parts: list = [b"["]
        for j in range(v.shape[1]):
            if j:
                parts.append(b",")
            parts += value_text(v[:, j], array_kind(v[:, j]))
        return parts + [b"]"]
    if kind is DOUBLE:
        return [float_text(v)]
    if kind is BOOL:
        return [_BOOL[v.view(np.uint8)]]
    return [int_text(v)]


def _extra_text(extra: dict | None) -> bytes:
    """The JSON text of a row's `extra_args` without the braces (b"" for none): orjson's,
    which is the rule's when it takes the dict as it is (it refuses NumPy values, big
    integers, bad text, keys that are not strings), else built value by value."""
    if not extra:
        return b""
    try:
        return orjson.dumps(extra)[1:-1]
    except orjson.JSONEncodeError:
        return b",".join(orjson.dumps(arg_key(k)) + b":" + json_text(v)
                         for k, v in extra.items())


class _Rows:
    """One chunk of events being laid out left to right: `n` rows of fields."""

    def __init__(self, n: int):
        self.n = n
        self.parts: list[tuple[int, np.ndarray]] = []
        self.width = 0
        self.blanks: list[tuple[np.ndarray, int, int]] = []

    def add(self, *parts: np.ndarray | bytes) -> int:
        """Append fields (constants, or (n, w) uint8); -> the first one's first column."""
        at = self.width
        for part in parts:
            if isinstance(part, bytes):
                part = np.frombuffer(part, np.uint8)
            self.parts.append((self.width, part))
            self.width += part.shape[-1]
        return at

    def blank(self, rows: np.ndarray, lo: int, hi: int) -> None:
        """Spaces over columns lo:hi of `rows` (a bool mask)."""
        self.blanks.append((rows, lo, hi))

    def matrix(self) -> np.ndarray:
        """The rows: the constants laid out in one row copied to every row, then each
        variable field copied in as one w-byte item per row (a void view). Numpy copies a
        (n, w) uint8 block into a wider matrix with a loop call per row, and a broadcast
        constant slower still: 100k timeline, constants 0.235 s field by field against
        0.023 s as one row (fields 0.149 s either way)."""
        template = np.empty(self.width, np.uint8)
        for at, part in self.parts:
            if part.ndim == 1:
                template[at:at + len(part)] = part
        out = np.empty((self.n, self.width), np.uint8)
        row = np.dtype((np.void, self.width))
        out.view(row)[:, 0] = template.view(row)[0]
        for at, part in self.parts:
            if part.ndim == 2:
                void = np.dtype((np.void, part.shape[1]))
                out[:, at:at + part.shape[1]].view(void)[:, 0] = part.view(void)[:, 0]
        for rows, lo, hi in self.blanks:
            out[rows, lo:hi] = _SPACE
        return out


def _track_table(tracks: list[Track]) -> np.ndarray:
    return _padded([b'"pid":%s,"tid":%s' % (dumps_strict(t.process.pid), dumps_strict(t.tid))
                    for t in tracks])


def _args(rows: _Rows, fields: list[tuple[bytes, list, np.ndarray | None]]) -> None:
    """`,"args":{...}` of `fields` (key text, value fields, where present; None: every
    row): a row without a field has spaces there (and no comma before its first key); a row
    with none at all has no `args`."""
    start = rows.add(b',"args":{')
    present = []
    commas = []
    for j, (key, parts, p) in enumerate(fields):
        at = rows.add((b"," if j else b"") + key)
        rows.add(*parts)
        if p is not None:
            present.append((j, p))
            rows.blank(~p, at, rows.width)
        commas.append(at)
    end = rows.add(b"}")
    if present:
        has = np.ones((rows.n, len(fields)), bool)
        for j, p in present:
            has[:, j] = p
        first = np.argmax(has, axis=1)
        for j in range(1, len(fields)):
            rows.blank(first == j, commas[j], commas[j] + 1)
        none = ~has.any(axis=1)
        rows.blank(none, start, commas[0])
        rows.blank(none, end, end + 1)


def _arg_fields(block: SliceBlock, keys: list[bytes], kinds: list, tables: list, lo: int,
                hi: int) -> list[tuple[bytes, list, np.ndarray | None]]:
    """The args fields of rows lo:hi: each column's, then the `extra_args` text."""
    fields = []
    for col, key, kind, table in zip(block.args, keys, kinds, tables):
        values = col.values[lo:hi]
        parts = [table[values]] if table is not None else value_text(values, kind)
        present = None if col.present is None else np.asarray(col.present[lo:hi], bool)
        fields.append((key, parts, present))
    if block.extra_args is not None:
        texts = [_extra_text(e) for e in block.extra_args[lo:hi]]
        has = np.fromiter(map(bool, texts), bool, len(texts))
        if has.any():
            fields.append((b"", [_padded(texts)], None if has.all() else has))
    return fields


def slice_rows(block: SliceBlock, chunk: int) -> Iterator[np.ndarray]:
    """The `X` events of `block`, `chunk` rows at a time: one (rows, w) uint8 matrix each,
    every row one event followed by a comma."""
    if not len(block):
        return
    tracks = _track_table(block.tracks)
    names = json_table(block.names)
    cat = b',"cat":' + dumps_strict(block.cat)
    keys = [orjson.dumps(arg_key(c.key)) + b":" for c in block.args]
    kinds = [column_kind(c) for c in block.args]
    tables = [None if c.table is None else json_table(c.table) for c in block.args]
    for lo in range(0, len(block), chunk):
        hi = min(lo + chunk, len(block))
        rows = _Rows(hi - lo)
        rows.add(b'{"ph":"X",')
        rows.add(tracks[block.track[lo:hi]])
        rows.add(b',"ts":')
        rows.add(*time_text(block.start_ns[lo:hi]))
        rows.add(b',"dur":')
        rows.add(*time_text(block.dur_ns[lo:hi]))
        rows.add(b',"name":')
        rows.add(names[block.name[lo:hi]])
        rows.add(cat)
        fields = _arg_fields(block, keys, kinds, tables, lo, hi)
        if fields:
            _args(rows, fields)
        rows.add(b"},")
        yield rows.matrix()


def flow_rows(flow: FlowBlock, first_id: int, chunk: int) -> Iterator[np.ndarray]:
    """The `s` and `f` events of `flow` (ids from `first_id`), one matrix row per arrow."""
    if not len(flow):
        return
    tail = b',"name":' + dumps_strict(flow.name) + b',"cat":' + dumps_strict(flow.cat) + b"},"
    ends = [(b'{"ph":"s","id":', flow.src, _track_table(flow.src.tracks), flow.src_row),
            (b'{"ph":"f","bp":"e","id":', flow.dst, _track_table(flow.dst.tracks), flow.dst_row)]
    for lo in range(0, len(flow), chunk):
        hi = min(lo + chunk, len(flow))
        ids = int_text(np.arange(first_id + lo, first_id + hi, dtype=np.int64))
        rows = _Rows(hi - lo)
        for head, block, tracks, block_rows in ends:
            r = block_rows[lo:hi]
            rows.add(head)
            rows.add(ids)
            rows.add(b",")
            rows.add(tracks[block.track[r]])
            rows.add(b',"ts":')
            rows.add(*time_text(block.start_ns[r]))
            rows.add(tail)
        yield rows.matrix()


def counter_rows(counter: CounterTrack, chunk: int) -> Iterator[np.ndarray]:
    """The `C` events of `counter`."""
    head = (b'{"ph":"C","pid":' + dumps_strict(counter.process.pid) + b',"tid":0,"name":'
            + dumps_strict(counter.name) + b',"ts":')
    key = b',"args":{' + dumps_strict(counter.unit or "value") + b":"
    kind = array_kind(counter.values)
    for lo in range(0, len(counter.ts_ns), chunk):
        hi = min(lo + chunk, len(counter.ts_ns))
        rows = _Rows(hi - lo)
        rows.add(head)
        rows.add(*time_text(counter.ts_ns[lo:hi]))
        rows.add(key)
        rows.add(*value_text(counter.values[lo:hi], kind))
        rows.add(b"}},")
        yield rows.matrix()
