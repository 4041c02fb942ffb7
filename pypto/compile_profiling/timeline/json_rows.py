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

What `json.loads` reads back is what the dict path of `write_json` gives (same keys in the
same order, same values): times are the exact decimal of the integer nanoseconds in
microseconds, shortest form ("12.5", "3.0"); integers are their decimal digits; floats are
orjson's text of the same Python floats; strings are orjson's (strict JSON: `dumps_strict`).
A block this does not cover (`extra_args`, list columns that are not all strings, 2D float
columns, object arrays) is left to the dict path: `block_supported` says which.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import orjson

from pypto.compile_profiling.timeline.json_values import dumps_strict
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    CounterTrack,
    FlowBlock,
    SliceBlock,
    Track,
)

__all__ = ["block_supported", "counter_rows", "counter_supported", "flow_rows", "slice_rows"]

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
    """(n, w) uint8: the strict JSON text of each value, right-padded with spaces."""
    if not values:
        return np.zeros((0, 1), np.uint8)
    if _all_str(values):
        return _str_table(values)
    return _padded([dumps_strict(v) for v in values])


def float_text(v: np.ndarray) -> np.ndarray:
    """orjson's text of the floats (NaN and infinities as null), right-padded."""
    return _padded(orjson.dumps(v.tolist())[1:-1].split(b","))


def column_supported(col: ArgColumn) -> bool:
    if col.table is not None:
        return _all_str(col.table)
    v = col.values
    if isinstance(v, np.ndarray):
        return (v.ndim == 1 and v.dtype.kind in "iufb") or (v.ndim == 2 and v.dtype.kind in "iu")
    return _all_str(v)


def block_supported(block: SliceBlock) -> bool:
    return block.extra_args is None and all(column_supported(c) for c in block.args)


def counter_supported(counter: CounterTrack) -> bool:
    v = counter.values
    return isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iufb"


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

    def value(self, v: np.ndarray | list) -> None:
        """Append the JSON text of a column's values (a supported `ArgColumn.values` slice)."""
        if isinstance(v, list):
            self.add(_str_table(v))
        elif v.ndim == 2:
            self.add(b"[")
            for j in range(v.shape[1]):
                if j:
                    self.add(b",")
                self.add(int_text(v[:, j]))
            self.add(b"]")
        elif v.dtype.kind == "f":
            self.add(float_text(v))
        elif v.dtype.kind == "b":
            self.add(_BOOL[v.view(np.uint8)])
        else:
            self.add(int_text(v))

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


def _args(rows: _Rows, cols: list[ArgColumn], tables: list, lo: int, hi: int) -> None:
    """`,"args":{...}`: each column's key and value; a row without a column has spaces there
    (and no comma before its first key); a row with no args at all has no `args`.
    `tables[j]`: the `json_table` of column j's `table`, if it has one."""
    start = rows.add(b',"args":{')
    present = []
    commas = []
    for j, col in enumerate(cols):
        at = rows.add((b"," if j else b"") + dumps_strict(col.key) + b":")
        if tables[j] is None:
            rows.value(col.values[lo:hi])
        else:
            rows.add(tables[j][col.values[lo:hi]])
        if col.present is not None:
            p = np.asarray(col.present[lo:hi], bool)
            present.append((j, p))
            rows.blank(~p, at, rows.width)
        commas.append(at)
    end = rows.add(b"}")
    if present:
        has = np.ones((rows.n, len(cols)), bool)
        for j, p in present:
            has[:, j] = p
        first = np.argmax(has, axis=1)
        for j in range(1, len(cols)):
            rows.blank(first == j, commas[j], commas[j] + 1)
        none = ~has.any(axis=1)
        rows.blank(none, start, commas[0])
        rows.blank(none, end, end + 1)


def slice_rows(block: SliceBlock, chunk: int) -> Iterator[np.ndarray]:
    """The `X` events of `block` (`block_supported`), `chunk` rows at a time: one (rows, w)
    uint8 matrix each, every row one event followed by a comma."""
    if not len(block):
        return
    tracks = _track_table(block.tracks)
    names = json_table(block.names)
    cat = b',"cat":' + dumps_strict(block.cat)
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
        if block.args:
            _args(rows, block.args, tables, lo, hi)
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
    """The `C` events of `counter` (`counter_supported`)."""
    head = (b'{"ph":"C","pid":' + dumps_strict(counter.process.pid) + b',"tid":0,"name":'
            + dumps_strict(counter.name) + b',"ts":')
    key = b',"args":{' + dumps_strict(counter.unit or "value") + b":"
    for lo in range(0, len(counter.ts_ns), chunk):
        hi = min(lo + chunk, len(counter.ts_ns))
        rows = _Rows(hi - lo)
        rows.add(head)
        rows.add(*time_text(counter.ts_ns[lo:hi]))
        rows.add(key)
        rows.value(counter.values[lo:hi])
        rows.add(b"}},")
        yield rows.matrix()
