"""A track's slice packets encoded from columns: the bytes `proto_packets.track_slices`'
packet templates would serialize, made for all of a block's rows at once with NumPy.

Why: the template path costs Python work per slice (fields set in place, one serialize call:
about 5 us a slice), half of a `.pftrace` write. Here each field is a column of bytes:
varints as an (n, 10) matrix and their lengths, strings as a fixed-width matrix and their
lengths, constant tags broadcast; a row's packet is its segments side by side, and a
boolean mask over the stacked matrix cuts out every row's bytes in order, one NumPy call
for all rows (`RowBytes`). Lengths of the nested messages (the track event, the packet) are
sums of the segments' lengths, encoded as varints in turn.

Byte for byte what the template path writes (`tests/compile_profiling/timeline/
test_proto_columns.py` compares the two on every track of the real captures): upb, like
every protobuf runtime, serializes the set fields in field-number order, and this writes
them in that order. What the columns cannot say goes through upb row by row: a packet that
carries interned data (a chunk's first packet when new blocks start, a repeated name's first
use) and a slice with more than one flow at one end. A track with per-row extra args or a
column whose values each say their own type is left to the template path whole
(`columns_apply`).
"""

from __future__ import annotations

import numpy as np
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from pypto.compile_profiling.timeline.arg_values import JSON, PROTO_FIELD, column_kind
from pypto.compile_profiling.timeline.json_values import dumps_strict, safe_text
from pypto.compile_profiling.timeline.model import ArgColumn, SliceBlock

__all__ = ["RowBytes", "encode_counter", "encode_track", "texts_of", "varints"]

_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
_END = pb.TrackEvent.TYPE_SLICE_END
_NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE

# tags: (field number << 3) | wire type, as varint bytes
T_PACKET = b"\x0a"            # Trace.packet = 1, length-delimited
T_TIMESTAMP = b"\x40"         # TracePacket.timestamp = 8, varint
T_SEQ = b"\x50"               # TracePacket.trusted_packet_sequence_id = 10
T_EVENT = b"\x5a"             # TracePacket.track_event = 11, length-delimited
FLAGS_NEEDS = bytes([0x68, _NEEDS])   # TracePacket.sequence_flags = 13
T_CATEGORY = b"\x18"          # TrackEvent.category_iids = 3
T_ANNOTATION = b"\x22"        # TrackEvent.debug_annotations = 4
TYPE_BEGIN = bytes([0x48, _BEGIN])    # TrackEvent.type = 9
END_EVENT = bytes([0x5a, 0x02, 0x48, _END])   # track_event {type: SLICE_END}
T_NAME_IID = b"\x50"          # TrackEvent.name_iid = 10
T_NAME = b"\xba\x01"          # TrackEvent.name = 23, length-delimited
T_FLOW = b"\xf9\x02"          # TrackEvent.flow_ids = 47, fixed64
T_TERMINATING = b"\x81\x03"   # TrackEvent.terminating_flow_ids = 48, fixed64
T_KEY_IID = b"\x08"           # DebugAnnotation.name_iid = 1
MAX_FLOWS = 16   # flow ids at one end of a slice made as columns; a slice with more: upb
# rows of a block encoded together: the stacked segments of 65,536 rows are about 20 MB, where
# a whole 1M-task lane's were 300 MB and more (1M merge peak RSS 3,375 MB against the
# templates' 1,769 MB before)
COLUMN_ROWS = 1 << 16
VALUE_TAG = {"bool_value": b"\x10", "uint_value": b"\x18", "int_value": b"\x20",
             "double_value": b"\x29", "string_value": b"\x32"}


def varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protobuf varints of int64/uint64 `values` (negative ints as their 64-bit two's
    complement, ten bytes, as protobuf writes an int64): a (w, n) uint8 matrix (byte k of
    every value in row k) and each value's length."""
    rest = np.asarray(values).astype(np.uint64)
    n = len(rest)
    mat = np.empty((10, n), np.uint8)
    lens = np.ones(n, np.int64)
    seven = np.uint64(7)
    for k in range(10):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest = rest >> seven
        more = rest != 0
        np.bitwise_or(low, more.astype(np.uint8) << 7, out=mat[k])
        lens += more
        if not more.any():
            return mat[:k + 1], lens
    return mat, lens


def text_matrix(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts (valid Unicode) as their UTF-8 bytes in a zero-padded (w, n) uint8 matrix
    (byte k of every text in row k), and their lengths. All-ASCII texts go into the matrix
    without a Python encode each."""
    ascii_only = all(map(str.isascii, texts))
    data = texts if ascii_only else [t.encode() for t in texts]
    lens = np.fromiter(map(len, data), np.int64, len(data))
    width = int(lens.max()) if len(data) else 0
    if not width:
        return np.zeros((0, len(data)), np.uint8), lens
    mat = np.array(data, dtype=f"S{width}").view(np.uint8).reshape(len(data), width)
    return mat.T, lens


class RowBytes:
    """Per row, a byte string made of segments laid side by side: each segment a (w, n)
    uint8 matrix (byte k of every row in its row k: columns of the output are contiguous
    rows here, so filling them is a plain copy) and each row's length in it (0: the row
    leaves it out)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.mats: list[np.ndarray] = []
        self.lens: list[np.ndarray] = []
        self._total = np.zeros(n, np.int64)       # kept as segments come: one add each

    def raw(self, mat: np.ndarray, lens: np.ndarray, where: np.ndarray | None = None) -> None:
        lens = lens if where is None else np.where(where, lens, 0)
        self.mats.append(mat)
        self.lens.append(lens)
        self._total += lens

    def const(self, data: bytes, where: np.ndarray | None = None) -> None:
        mat = np.frombuffer(data, np.uint8)[:, None]          # broadcast over the rows
        self.raw(mat, np.full(self.n, len(data), np.int64), where)

    def varint(self, values: np.ndarray, where: np.ndarray | None = None) -> None:
        self.raw(*varints(values), where)

    def fixed64(self, values: np.ndarray, where: np.ndarray | None = None) -> None:
        mat = np.ascontiguousarray(values).view(np.uint8).reshape(self.n, 8).T
        self.raw(mat, np.full(self.n, 8, np.int64), where)

    def extend(self, other: RowBytes) -> None:
        self.mats += other.mats
        self.lens += other.lens
        self._total += other._total

    def total(self) -> np.ndarray:
        return self._total.copy()

    def joined(self) -> tuple[bytes, np.ndarray]:
        """Every row's bytes, rows one after another, and the rows' offsets (n + 1): all
        segments stacked (w, n) with a mask of each row's bytes, then read row by row."""
        width = sum(m.shape[0] for m in self.mats)
        big = np.empty((width, self.n), np.uint8)
        mask = np.empty((width, self.n), bool)
        at = 0
        for mat, lens in zip(self.mats, self.lens):
            w = mat.shape[0]
            big[at:at + w] = mat
            for k in range(w):
                np.greater(lens, k, out=mask[at + k])
            at += w
        offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(self.total(), out=offsets[1:])
        return big.T[mask.T].tobytes(), offsets


def texts_of(col: ArgColumn, rows: np.ndarray) -> list[str] | None:
    """The `string_value`s of `rows` of a column of strings (a list, a table or a NumPy text
    array) or a 2D numeric array (each row's JSON text), made for all rows at once; None for
    other columns (their values go through `proto_field` one by one).

    Why: `proto_field` per value cost about 1 us a string and 2 us a 2D row (type tests,
    `dumps_strict`); the 245,400 scheduler slices of the 100k bench (a `kind` string and two
    (n, 3) columns) went from 2.21 to 1.39 s CPU (9.0 -> 5.65 us a slice, min of 4, switched
    off and on in one run). Same bytes out: the same encoder makes the same text."""
    values = col.values
    if column_kind(col) is JSON:
        if not values.shape[1]:
            return None
        text = dumps_strict(values[rows].tolist()).decode()  # "[[1,2],[3,4]]"
        return text[1:-1].replace("],[", "]\0[").split("\0")
    if col.table is None and isinstance(values, np.ndarray) and (
            values.ndim != 1 or values.dtype.kind != "U"):
        return None
    v = col.values_at(rows)
    if col.table is None and not isinstance(values, np.ndarray) and set(map(type, v)) != {str}:
        return None
    try:  # a table is not checked whole: the task table of a 1M capture holds a million
        ascii_only = "".join(v).isascii()
    except TypeError:  # a table not all of strings
        return None
    return v if ascii_only else [safe_text(x) for x in v]


def _varint(v: int) -> bytes:
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        low = v & 0x7F
        v >>= 7
        if v:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _end_packet(ts: int, seq: bytes) -> bytes:
    body = T_TIMESTAMP + _varint(ts) + seq + END_EVENT
    return T_PACKET + _varint(len(body)) + body


class _Interning:
    """Each block's category and arg-key ids on the track's `Sequence` (`seq`, whose
    `cat_iid` / `key_iid` the template path calls too), assigned when the block is first met
    (at the start of a `ROWS_PER_CHUNK` chunk, blocks in index order); `at[row]`: the
    interned data the packet of that row carries."""

    def __init__(self, seq) -> None:
        self.seq = seq
        self.block_cat: dict[int, int | None] = {}
        self.block_keys: dict[int, list[int]] = {}
        self.at: dict[int, dict[str, list]] = {}

    def meet(self, b: int, block: SliceBlock) -> None:
        self.block_cat[b] = self.seq.cat_iid(block.cat) if block.cat else None
        self.block_keys[b] = [self.seq.key_iid(col.key) for col in block.args]


def _name_iids(blk: np.ndarray, name: np.ndarray, track_rows: dict, blocks: list
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per slice (track order): its name's interned id (0: written inline), and the slices
    that first use a repeated name. A name is interned when it occurs more than once among
    its block's rows on the track, ids in the order of first use over the track."""
    repeated = np.zeros(len(blk), bool)
    for b, rows in track_rows.items():
        counts = np.bincount(blocks[b].name[rows])
        at = blk == b
        repeated[at] = counts[name[at]] >= 2
    iid = np.zeros(len(blk), np.int64)
    pos = np.flatnonzero(repeated)
    if not len(pos):
        return iid, pos
    key = blk[pos] * (int(name.max()) + 1) + name[pos]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), np.int64)
    rank[order] = np.arange(1, len(first) + 1)
    iid[pos] = rank[inverse.reshape(-1)]
    return iid, np.sort(pos[first])


def _flow_ends(keys: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per global row: how many flows end there, and where its ids start in the sorted
    ids."""
    lo = np.searchsorted(keys, rows, "left")
    return np.searchsorted(keys, rows, "right") - lo, lo


def _flow_fields(te: RowBytes, tag: bytes, n: np.ndarray, lo: np.ndarray,
                 ids: np.ndarray) -> None:
    """Each row's flow ids at one end (`n` of them from `ids[lo:]`), one field each."""
    for k in range(int(n.max()) if len(n) else 0):
        has = n > k
        at = np.minimum(lo + k, len(ids) - 1)
        te.const(tag, has)
        te.fixed64(ids[at].astype("<u8"), has)


def _ends(start: list[int], end: list[int], leaf: list[bool]
          ) -> tuple[list[int], dict[int, list[int]], list[int], int]:
    """The template path's end bookkeeping on plain ints: each slice's end (clipped to its
    parent's), the ends of open slices written before slice i (`pops[i]`), those written
    after the last slice, and how many ends were clipped."""
    stack: list[int] = []
    pops: dict[int, list[int]] = {}
    final = list(end)
    clipped = 0
    for i, st in enumerate(start):
        if stack and stack[-1] <= st:
            out = pops[i] = []
            while stack and stack[-1] <= st:
                out.append(stack.pop())
        en = final[i]
        if stack and en > stack[-1]:        # sticks out of its parent: clipped
            en = final[i] = stack[-1]
            clipped += 1
        if not leaf[i]:
            stack.append(en)
    return final, pops, stack[::-1], clipped


def _fixed_field(col: ArgColumn) -> str | None:
    kind = column_kind(col)
    return None if kind is None or kind is JSON else PROTO_FIELD[kind]


def encode_track(seq, blk: np.ndarray, row: np.ndarray, start: np.ndarray,
                 end: np.ndarray, leaf: np.ndarray, blocks: list[SliceBlock],
                 track_rows: dict[int, np.ndarray], offsets: np.ndarray, flows,
                 chunk_rows: int) -> tuple[list[bytes], int] | None:
    """The packets of one track's slices (sorted as `track_slices` sorts them), in the
    order the template path writes them: (byte pieces, clipped ends); None when a
    block of the track needs the template path (see the module docstring). `seq`: the
    track's `proto_packets.Sequence` (its id and interning)."""
    if any(blocks[b].extra_args is not None for b in track_rows):
        return None
    n = len(start)
    where_of = {b: np.flatnonzero(blk == b) for b in track_rows}
    texts: dict[tuple[int, int], list[str]] = {}
    for b, where in where_of.items():
        for c, col in enumerate(blocks[b].args):
            if _fixed_field(col) is None:
                t = texts_of(col, row[where])
                if t is None:
                    return None
                texts[b, c] = t
    final, pops, tail, clipped = _ends(start.tolist(), end.tolist(), leaf.tolist())
    final_arr = np.array(final, np.int64)
    name = np.empty(n, np.int64)
    for b, where in where_of.items():
        name[where] = blocks[b].name[row[where]]
    iid, first_use = _name_iids(blk, name, track_rows, blocks)
    seq_id = seq.seq_id
    interning = _Interning(seq)
    for lo in range(0, n, chunk_rows):
        for b in np.unique(blk[lo:lo + chunk_rows]).tolist():
            if b not in interning.block_keys:
                interning.meet(b, blocks[b])
        pending = seq.take_pending()
        if pending:
            interning.at[lo] = pending
    for r in first_use.tolist():
        interning.at.setdefault(r, {}).setdefault("event_names", []).append(
            {"iid": int(iid[r]), "name": safe_text(blocks[blk[r]].names[name[r]])})
    if flows.any:
        g = offsets[blk] + row
        n_out, out_lo = _flow_ends(flows.src, g)
        n_in, in_lo = _flow_ends(flows.dst, g)
        multi = np.flatnonzero((n_out > MAX_FLOWS) | (n_in > MAX_FLOWS)).tolist()
    else:
        n_out = n_in = out_lo = in_lo = None
        multi = []
    seq_bytes = T_SEQ + _varint(seq_id)
    pieces: list[bytes | None] = [None] * n
    for b, where_all in where_of.items():
        for lo in range(0, len(where_all), COLUMN_ROWS):
            where = where_all[lo:lo + COLUMN_ROWS]
            cols = {c: t[lo:lo + COLUMN_ROWS] for (tb, c), t in texts.items() if tb == b}
            blob, offs = _block_packets(b, blocks[b], where, row[where], start[where],
                                        final_arr[where], leaf[where], iid[where],
                                        name[where], interning, cols, seq_bytes,
                                        None if n_out is None else
                                        (n_out[where], out_lo[where], flows.src_ids,
                                         n_in[where], in_lo[where], flows.dst_ids))
            ol = offs.tolist()
            for k, i in enumerate(where.tolist()):
                pieces[i] = blob[ol[k]:ol[k + 1]]
    for i in set(interning.at) | set(multi):
        b = int(blk[i])
        j = int(np.searchsorted(where_of[b], i))
        flow_ids = None
        if n_out is not None:
            flow_ids = (flows.src_ids[out_lo[i]:out_lo[i] + n_out[i]].tolist(),
                        flows.dst_ids[in_lo[i]:in_lo[i] + n_in[i]].tolist())
        pieces[i] = _one_packet(seq_id, blocks[b], b, int(row[i]), j, int(start[i]),
                                final[i], bool(leaf[i]), int(iid[i]), int(name[i]), interning,
                                texts, flow_ids, interning.at.get(i))
    out: list[bytes] = []
    at = 0
    for i in sorted(pops):
        out.extend(pieces[at:i])
        out.extend(_end_packet(ts, seq_bytes) for ts in pops[i])
        at = i
    out.extend(pieces[at:])
    out.extend(_end_packet(ts, seq_bytes) for ts in tail)
    return out, clipped


def _block_packets(b: int, block: SliceBlock, where: np.ndarray, rows: np.ndarray,
                   start: np.ndarray, end: np.ndarray, leaf: np.ndarray, iid: np.ndarray,
                   name: np.ndarray, interning: _Interning, texts: dict, seq: bytes,
                   flow: tuple | None) -> tuple[bytes, np.ndarray]:
    """The begin packets (and a leaf's end packet after it) of some of one block's rows on
    the track, as one blob and each row's offsets; `texts`: the text columns' values of
    these rows, by column."""
    m = len(where)
    te = RowBytes(m)
    cid = interning.block_cat[b]
    if cid is not None:
        te.const(T_CATEGORY + _varint(cid))
    for c, (col, kid) in enumerate(zip(block.args, interning.block_keys[b])):
        present = None if col.present is None else col.present[rows]
        key = T_KEY_IID + _varint(kid)
        val = RowBytes(m)
        field = _fixed_field(col)
        if field is None:
            mat, lens = text_matrix(texts[c])
            val.const(VALUE_TAG["string_value"])
            val.varint(lens)
            val.raw(mat, lens)
        else:
            values = col.values[rows]
            val.const(VALUE_TAG[field])
            if field == "double_value":
                val.fixed64(values.astype("<f8"))
            elif field == "bool_value":
                val.raw(values.astype(np.uint8)[None, :], np.ones(m, np.int64))
            else:
                val.varint(values)
        te.const(T_ANNOTATION, present)
        te.varint(len(key) + val.total(), present)
        te.const(key, present)
        for mat, lens in zip(val.mats, val.lens):
            te.raw(mat, lens, present)
    te.const(TYPE_BEGIN)
    inline = iid == 0
    te.const(T_NAME_IID, ~inline)
    te.varint(iid, ~inline)
    if inline.any():
        names = block.names
        texts_inline = [(names[k] if names[k].isascii() else safe_text(names[k]))
                        if inl else "" for k, inl in zip(name.tolist(), inline.tolist())]
        mat, lens = text_matrix(texts_inline)
        te.const(T_NAME, inline)
        te.varint(lens, inline)
        te.raw(mat, lens, inline)
    if flow is not None:
        n_out, out_lo, out_ids, n_in, in_lo, in_ids = flow
        _flow_fields(te, T_FLOW, np.minimum(n_out, MAX_FLOWS), out_lo, out_ids)
        _flow_fields(te, T_TERMINATING, np.minimum(n_in, MAX_FLOWS), in_lo, in_ids)
    pkt = RowBytes(m)
    pkt.const(T_TIMESTAMP)
    pkt.varint(start)
    pkt.const(seq)
    pkt.const(T_EVENT)
    pkt.varint(te.total())
    pkt.extend(te)
    pkt.const(FLAGS_NEEDS)
    out = RowBytes(m)
    out.const(T_PACKET)
    out.varint(pkt.total())
    out.extend(pkt)
    if leaf.any():
        ts, ts_len = varints(end)
        out.const(T_PACKET, leaf)
        out.varint(1 + ts_len + len(seq) + len(END_EVENT), leaf)
        out.const(T_TIMESTAMP, leaf)
        out.raw(ts, ts_len, leaf)
        out.const(seq, leaf)
        out.const(END_EVENT, leaf)
    return out.joined()


def _one_packet(seq_id: int, block: SliceBlock, b: int, r: int, j: int, start: int,
                end: int, leaf: bool, iid: int, name: int, interning: _Interning,
                texts: dict, flow_ids: tuple | None, interned: dict | None) -> bytes:
    """One row's packets through upb: a packet with interned data, or with several flows
    at one end (fields set as the template path sets them)."""
    trace = pb.Trace()
    packet = trace.packet.add(timestamp=start, trusted_packet_sequence_id=seq_id,
                              sequence_flags=_NEEDS)
    te = packet.track_event
    cid = interning.block_cat[b]
    if cid is not None:
        te.category_iids.append(cid)
    for c, (col, kid) in enumerate(zip(block.args, interning.block_keys[b])):
        if col.present is not None and not col.present[r]:
            continue
        field = _fixed_field(col)
        value = texts[b, c][j] if field is None else col.values[r].item()
        setattr(te.debug_annotations.add(name_iid=kid), field or "string_value", value)
    te.type = _BEGIN
    if iid:
        te.name_iid = iid
    else:
        text = block.names[name]
        te.name = text if text.isascii() else safe_text(text)
    if flow_ids is not None:
        te.flow_ids.extend(flow_ids[0])
        te.terminating_flow_ids.extend(flow_ids[1])
    if interned:
        packet.interned_data.MergeFrom(pb.InternedData(**interned))
    if leaf:
        trace.packet.add(timestamp=end, trusted_packet_sequence_id=seq_id,
                         track_event={"type": _END})
    return trace.SerializeToString()


COUNTER_TYPE = bytes([0x48, pb.TrackEvent.TYPE_COUNTER])   # TrackEvent.type = 9
T_COUNTER_INT = b"\xf0\x01"       # TrackEvent.counter_value = 30, varint
T_COUNTER_DOUBLE = b"\xe1\x02"    # TrackEvent.double_counter_value = 44, fixed64


def encode_counter(seq_id: int, ts: np.ndarray, values: np.ndarray) -> bytes | None:
    """A counter track's value packets, byte for byte what `proto_packets.counter_events`
    serializes; None for values it would not take as they are (bools, uints past int64)."""
    kind = values.dtype.kind
    if kind == "u" and len(values) and int(values.max()) > (1 << 63) - 1 or kind not in "iuf":
        return None
    n = len(ts)
    te = RowBytes(n)
    te.const(COUNTER_TYPE)
    if kind == "f":
        te.const(T_COUNTER_DOUBLE)
        te.fixed64(values.astype("<f8"))
    else:
        te.const(T_COUNTER_INT)
        te.varint(values.astype(np.int64))
    pkt = RowBytes(n)
    pkt.const(T_TIMESTAMP)
    pkt.varint(ts)
    pkt.const(T_SEQ + _varint(seq_id))
    pkt.const(T_EVENT)
    pkt.varint(te.total())
    pkt.extend(te)
    out = RowBytes(n)
    out.const(T_PACKET)
    out.varint(pkt.total())
    out.extend(pkt)
    return out.joined()[0]
