"""A `Timeline` as Perfetto packets: each track's slices on its own packet sequence (begin
and end events from packet templates set in place, args from columns a chunk at a time,
names interned), flows on their ends, counters, track descriptors and the metadata.
`write_proto` decides the order they are written in and by whom.

Layout:
- every `Process` is a process track (`ProcessDescriptor` pid = `Process.pid`), its tracks
  ordered by `sort_index` (`child_ordering = EXPLICIT`);
- every track is a thread track (`ThreadDescriptor` pid/tid = `Process.pid` / `Track.tid`),
  a real thread (`os_tid`) or a lane (AICore cores, device scheduler threads), as in the JSON
  output, so the two name every track alike, in the UI ("Sched_0 5") and in SQL; a counter
  track is named as Perfetto names the JSON one ("<name> <unit>", `counter_track_name`);
- each track's slices, whichever blocks they come from, are merged and sorted by (start,
  longest first) and go on their own packet sequence, whose `TrackEventDefaults` names the
  track; they are `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs in nesting order (a slice that
  sticks out of its parent is clipped to it, and counted in a warning);
- names, categories and argument keys are interned per sequence (a name only if it occurs
  more than once on the track, so one-off task labels are not paid twice); args are
  `debug_annotations`;
- a flow starts (`flow_ids`) on its source's begin and ends (`terminating_flow_ids`) on its
  destination's begin; counters are counter tracks with `TYPE_COUNTER` events;
- `timeline.metadata` (and the process list, as in the JSON `otherData`) goes into
  `chrome_events` metadata entries, which the trace processor files in its `metadata` table.

Every timestamp is already on the trace's default clock (host CLOCK_MONOTONIC ns, or an
estimate the process name says it is), so no `ClockSnapshot` is written.

Speed (upb backend, measured on the 2-core machine): building a packet from dicts with
`add(**fields)` cost 3.3 us plus 1.1 us a debug annotation; setting the fields of a kept
packet in place and serializing it costs about a third of that, so slices are written
through `_BeginTemplate`s, their args from columns turned into lists once per chunk of
`ROWS_PER_CHUNK` slices (string and 2D columns into their text at once:
`proto_columns.texts_of`), and counter values through `Trace`s of `COUNTERS_PER_SERIALIZE`
packets. Not done, measured as not paying before: incremental timestamps (about 4 bytes of
~64 a packet), one JSON annotation for all args (twice the bytes, keys nested one level
deeper in Perfetto). The templates cost Python work per row (a field set is 0.1 us, a
serialize call about 1 us: the 100k bench write was 3.9-4.9 s CPU in one process), so a
track whose blocks allow it is made from columns instead (`proto_columns.encode_track`, the
same bytes: 2.3-2.7 s); the templates write the rest.
"""

from __future__ import annotations

import logging
from typing import BinaryIO

import numpy as np
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from pypto.compile_profiling.timeline.arg_values import (
    BOOL,
    INT,
    JSON,
    PROTO_FIELD,
    STRING,
    arg_key,
    arg_value,
    column_kind,
    json_text,
    proto_field,
)
from pypto.compile_profiling.timeline.json_values import safe_text
from pypto.compile_profiling.timeline.model import (
    CounterTrack,
    SliceBlock,
    Timeline,
    Track,
    counter_track_name,
    other_data,
)
from pypto.compile_profiling.timeline.proto_columns import (
    encode_counter,
    encode_track,
    texts_of,
)
from pypto.errors import ProfileWriteError

log = logging.getLogger(__name__)


COUNTERS_PER_SERIALIZE = 256  # counter packets set in place and serialized together


# slices whose args are built from columns at a time: 200k bench slices took 1.52 s CPU with
# 1024, 1.58 s with 4096, 1.93 s with 16384 (the chunk's lists outgrow the caches)
ROWS_PER_CHUNK = 4096

# Slices from columns (`proto_columns.encode_track`), byte for byte the templates' packets;
# False: every track through the templates (for the tests that compare the two, and to
# measure the gain: see proto_columns)
COLUMN_ENCODER = True


_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN


_END = pb.TrackEvent.TYPE_SLICE_END


_COUNTER = pb.TrackEvent.TYPE_COUNTER


_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED


_NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


_EXPLICIT = pb.TrackDescriptor.EXPLICIT


class PacketStream:
    """Serialized packets, written out every `PACKETS_PER_BATCH` packets.

    Each packet is appended as a serialized one-packet `Trace`: concatenated, they are one
    `Trace`. Hot loops append the bytes of their templates themselves (`parts`, `count`) and
    call `flush_if_full()`; other packets go through `add(**fields)`.
    """

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.parts: list[bytes] = []
        self.count = 0
        self.bytes_written = 0

    def add(self, **fields) -> None:
        trace = pb.Trace()
        trace.packet.add(**fields)
        self.parts.append(trace.SerializeToString())
        self.count += 1
        self.flush_if_full()

    def flush_if_full(self) -> None:
        if self.count >= PACKETS_PER_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            data = b"".join(self.parts)
            self._out.write(data)
            self.bytes_written += len(data)
            self.parts.clear()
        self.count = 0


class Sequence:
    """Interning state of one packet sequence (one track). New entries wait in `pending`
    until the next packet that carries them."""

    __slots__ = ("cats", "keys", "name_count", "pending", "seq_id")

    def __init__(self, seq_id: int) -> None:
        self.seq_id = seq_id
        self.name_count = 0  # event names interned so far (see `_BlockRows`)
        self.cats: dict[str, int] = {}
        self.keys: dict[str, int] = {}
        self.pending: dict[str, list] = {}

    def key_iid(self, key) -> int:
        kid = self.keys.get(key)
        if kid is None:
            kid = self.keys[key] = len(self.keys) + 1
            self.pending.setdefault("debug_annotation_names", []).append(
                {"iid": kid, "name": arg_key(key)})
        return kid

    def cat_iid(self, cat: str) -> int:
        cid = self.cats.get(cat)
        if cid is None:
            cid = self.cats[cat] = len(self.cats) + 1
            self.pending.setdefault("event_categories", []).append(
                {"iid": cid, "name": safe_text(cat)})
        return cid

    def take_pending(self) -> dict | None:
        pending = self.pending
        if not pending:
            return None
        self.pending = {}
        return pending


class _BeginTemplate:
    """One begin packet of one block's rows (with one set of present args), kept and
    serialized again for each row after its fields are set in place. For a leaf slice (no
    child: the next slice on the track starts after its end) the template holds its end
    packet too, so both go out in one serialization (`end_packet`: 0.82 -> 0.72 s CPU for
    the 100,000 slices of `benchmarks/bench_exporters.py`, one `SerializeToString` call and
    the end-time stack round trip less per slice).

    Why: with upb, building a packet from dicts (`packet.add(**fields)`) cost 3.3 us a packet
    plus 1.1 us a debug annotation, setting a field in place 0.35-0.45 us, serializing a small
    packet about 0.5 us (measured on the 2-core machine under load): a begin packet with 10
    int args went from 15.2 to 6.7 us, an end packet from 3.3 to 1.1 us.
    """

    __slots__ = ("anns", "chunk_fields", "cols", "end_packet", "event", "fields", "flows_in",
                 "flows_out", "n_anns", "n_in", "n_out", "name_iids", "names", "packet",
                 "packets", "repeated", "serialize")

    def __init__(self, rows: _BlockRows, key_iids: list[int], fields: list[str | None],
                 cols: list[int], leaf: bool) -> None:
        seq_id = rows.seq.seq_id
        self.names, self.name_iids, self.repeated = rows.names, rows.name_iids, rows.repeated
        trace = pb.Trace()
        self.packet = trace.packet.add(trusted_packet_sequence_id=seq_id,
                                       sequence_flags=_NEEDS)
        self.end_packet = (trace.packet.add(trusted_packet_sequence_id=seq_id,
                                            track_event={"type": _END}) if leaf else None)
        self.packets = 2 if leaf else 1
        self.event = te = self.packet.track_event
        te.type = _BEGIN
        te.category_iids.extend(rows.cat_iids)
        self.anns = [te.debug_annotations.add(name_iid=k) for k in key_iids]
        self.n_anns = len(self.anns)
        self.fields = fields  # per annotation: its value field, None if the value says
        self.cols = cols  # per annotation: its column in the block
        self.serialize = trace.SerializeToString
        self.chunk_fields: list = []  # per annotation, for the chunk: see `chunk_values`
        self.flows_out = te.flow_ids
        self.flows_in = te.terminating_flow_ids
        self.n_out = self.n_in = 0  # ids in flows_out / flows_in

    @staticmethod
    def set_flows(ids: int | list, field, n_was: int) -> int:
        """Make the repeated flow-id `field` (holding `n_was` ids) hold `ids` (a flow id, a
        list of them, or 0: none); return how many it holds.

        Assigning items in place costs 0.09 us each; clearing and extending the field cost
        1.2 us a row (measured), so the field is resized only when the count changes. The
        hot loop sets one id into a field of one itself, and `Flows.of` gives a single id
        as an int from one `tolist` (not a tuple made per row): 100k bench, min of 8
        alternating runs, 5.41 -> 4.85 s CPU for the whole write (medians 6.86 -> 6.39)."""
        if type(ids) is int:
            ids = [ids] if ids else []
        n = len(ids)
        if n != n_was:
            del field[:]
            if n:
                field.extend(ids)
        else:
            for j, v in enumerate(ids):
                field[j] = v
        return n

    def chunk_values(self, block: SliceBlock, rows: np.ndarray) -> list[tuple]:
        """The template's arg values of `rows` of `block`, a tuple per row. Sets
        `chunk_fields`: each annotation's field for these rows, None where each value gives
        its own (the values are then (field, value) pairs)."""
        self.chunk_fields = []
        values = []
        for f, c in zip(self.fields, self.cols):
            col = block.args[c]
            if f is not None:
                values.append(col.values[rows].tolist())
            elif (texts := texts_of(col, rows)) is not None:
                f = "string_value"
                values.append(texts)
            else:
                values.append([proto_field(v) for v in col.values_at(rows)])
            self.chunk_fields.append(f)
        return list(zip(*values)) if values else [()] * len(rows)


class _BlockRows:
    """The begin templates of one block on one track, by which args are present, and the
    interning of the block's names there.

    A name is interned (`name_iids`, by index into `block.names`) from its first use when it
    occurs more than once among the block's rows on the track (`repeated`, counted up front
    with `bincount`); one-off task labels are written inline. Counting up front replaced a
    set of the name strings seen once per track: 9.79 -> 9.18 s CPU for 1M bench slices
    (best of 3, loaded machine), and a repeated name no longer goes out inline first."""

    def __init__(self, seq: Sequence, block: SliceBlock, rows: np.ndarray) -> None:
        self.seq, self.block = seq, block
        self.names = block.names
        self.name_iids: dict[int, int] = {}
        self.repeated = set(np.flatnonzero(np.bincount(block.name[rows]) >= 2).tolist())
        self.cat_iids = (seq.cat_iid(block.cat),) if block.cat else ()
        self.key_iids = [seq.key_iid(c.key) for c in block.args]
        kinds = [column_kind(c) for c in block.args]  # a field per column, or per value
        self.fields = [None if k is None or k is JSON else PROTO_FIELD[k] for k in kinds]
        self.masked = [i for i, c in enumerate(block.args) if c.present is not None]
        self.templates: dict[int, _BeginTemplate] = {}

    def groups(self, rows: np.ndarray, leaf: np.ndarray):
        """(positions in `rows`, template) per set of present args and leaf or not."""
        key = leaf.astype(np.int64)  # bit 0: leaf; bit k + 1: masked arg k present
        for bit, i in enumerate(self.masked):
            key |= self.block.args[i].present[rows].astype(np.int64) << (bit + 1)
        for k in np.unique(key).tolist():
            yield np.flatnonzero(key == k), self._template(k)

    def _template(self, key: int) -> _BeginTemplate:
        t = self.templates.get(key)
        if t is None:
            cols = [i for i in range(len(self.fields))
                    if i not in self.masked or key >> (self.masked.index(i) + 1) & 1]
            t = self.templates[key] = _BeginTemplate(
                self, [self.key_iids[i] for i in cols], [self.fields[i] for i in cols], cols,
                bool(key & 1))
        return t


class Flows:
    """Flow ids by global slice row (block offset + row), sorted for `searchsorted`."""

    def __init__(self, timeline: Timeline, offsets: dict[int, int], first_id: int = 1) -> None:
        src, dst, ids = [], [], []
        next_id = first_id
        for f in timeline.flows:
            src.append(offsets[f.src] + f.src_row.astype(np.int64))
            dst.append(offsets[f.dst] + f.dst_row.astype(np.int64))
            ids.append(np.arange(next_id, next_id + len(f), dtype=np.int64))
            next_id += len(f)
        self.any = next_id > first_id
        if self.any:
            src_all, dst_all, id_all = np.concatenate(src), np.concatenate(dst), np.concatenate(ids)
            o = np.argsort(src_all, kind="stable")
            self.src, self.src_ids = src_all[o], id_all[o]
            o = np.argsort(dst_all, kind="stable")
            self.dst, self.dst_ids = dst_all[o], id_all[o]

    def of(self, rows: np.ndarray) -> tuple[list, list]:
        """Per global row: its outgoing and terminating flow ids: 0 (none), the id, or a list
        of ids when there are several."""
        out = self._lookup(self.src, self.src_ids, rows)
        into = self._lookup(self.dst, self.dst_ids, rows)
        return out, into

    @staticmethod
    def _lookup(keys: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> list:
        lo = np.searchsorted(keys, rows, "left")
        n = np.searchsorted(keys, rows, "right") - lo
        # one list of ints, no Python work per row: 0 (ids start at 1) where there is none
        result: list = np.where(n > 0, ids[np.minimum(lo, len(ids) - 1)], 0).tolist()
        for i in np.flatnonzero(n > 1).tolist():
            result[i] = ids[lo[i]:lo[i] + n[i]].tolist()
        return result


def rows_by_track(timeline: Timeline) -> dict[int, list[tuple[int, np.ndarray]]]:
    """track -> [(block index, its rows on that track)], in block order."""
    by_track: dict[int, list] = {}
    for b, block in enumerate(timeline.blocks):
        if not len(block):
            continue
        order = np.argsort(block.track, kind="stable")
        counts = np.bincount(block.track, minlength=len(block.tracks))
        ends = np.cumsum(counts)
        for t, (n, end) in enumerate(zip(counts.tolist(), ends.tolist())):
            if n:
                by_track.setdefault(block.tracks[t], []).append((b, order[end - n:end]))
    return by_track


def track_slices(seq: Sequence, track: Track, uuid: int, parts: list, timeline: Timeline,
                  offsets: np.ndarray, flows: Flows, stream: PacketStream) -> int:
    """Emit the begin/end packets of one track's slices; return how many ends were clipped."""
    blocks = timeline.blocks
    blk, row, start, end, leaf = _track_order(track, parts, blocks)
    seq_id = seq.seq_id
    stream.add(trusted_packet_sequence_id=seq_id, sequence_flags=_CLEARED,
               trace_packet_defaults={"track_event_defaults": {"track_uuid": uuid}})
    track_rows = dict(parts)
    if COLUMN_ENCODER:
        made = encode_track(seq, blk, row, start, end, leaf, blocks, track_rows, offsets,
                            flows, ROWS_PER_CHUNK)
        if made is not None:
            pieces, clipped = made
            for k in range(0, len(pieces), PACKETS_PER_BATCH):
                batch = pieces[k:k + PACKETS_PER_BATCH]
                stream.parts.extend(batch)
                stream.count += len(batch)
                stream.flush_if_full()
            return clipped
    return _template_rows(seq, blk, row, start, end, leaf, blocks, track_rows, offsets, flows,
                          stream)


def _track_order(track: Track, parts: list, blocks: list):
    """One track's rows of every block in drawing order (by start, the longer first); ->
    (block, row, start, end, leaf: no child, the next slice starts after its end)."""
    blk = np.concatenate([np.full(len(rows), b, np.int64) for b, rows in parts])
    row = np.concatenate([rows for _, rows in parts]).astype(np.int64)
    start = np.concatenate([blocks[b].start_ns[rows] for b, rows in parts]).astype(np.int64)
    dur = np.concatenate([blocks[b].dur_ns[rows] for b, rows in parts]).astype(np.int64)
    if start.min() < 0:
        raise ProfileWriteError(
            f"track {track.name!r}: a slice starts before time 0 ({int(start.min())} ns); "
            "protobuf timestamps are unsigned")
    order = np.lexsort((-dur, start))  # stable: ties keep block, then row order
    blk, row, start, end = blk[order], row[order], start[order], (start + dur)[order]
    leaf = np.empty(len(start), bool)  # no child: the next slice starts after its end
    leaf[:-1] = start[1:] >= end[:-1]
    leaf[-1:] = True
    return blk, row, start, end, leaf


def _chunk_templates(seq: Sequence, blocks: list, block_rows: dict, track_rows: dict,
                     c_blk: np.ndarray, c_row: np.ndarray, leaf: np.ndarray):
    """A chunk's rows as (name index, arg values, template, extra args), per row."""
    hi_lo = len(c_blk)
    names: list = [None] * hi_lo  # indices into the row's block.names
    values: list = [None] * hi_lo
    templates: list = [None] * hi_lo
    extras: list = [None] * hi_lo
    for b in np.unique(c_blk).tolist():
        block = blocks[b]
        br = block_rows.get(b)
        if br is None:
            br = block_rows[b] = _BlockRows(seq, block, track_rows[b])
        at = np.flatnonzero(c_blk == b)
        rows = c_row[at]
        for i, n in zip(at.tolist(), block.name[rows].tolist()):
            names[i] = n
        for group, t in br.groups(rows, leaf[at]):
            g_at = at[group].tolist()
            for i, v in zip(g_at, t.chunk_values(block, rows[group])):
                values[i] = v
                templates[i] = t
        if block.extra_args is not None:
            extra = block.extra_args
            for i, r in zip(at.tolist(), rows.tolist()):
                extras[i] = extra[r]
    return names, values, templates, extras


def _template_rows(seq: Sequence, blk, row, start, end, leaf, blocks: list, track_rows: dict,
                   offsets: np.ndarray, flows: Flows, stream: PacketStream) -> int:
    """The packets of rows the column encoder does not take, a template per kind of row;
    -> how many ends were clipped."""
    end_packet, end_serialize = _end_packet(seq.seq_id)
    block_rows: dict[int, _BlockRows] = {}
    stack: list[int] = []  # end times of open slices
    clipped = 0
    for lo in range(0, len(start), ROWS_PER_CHUNK):
        hi = min(lo + ROWS_PER_CHUNK, len(start))
        c_blk, c_row = blk[lo:hi], row[lo:hi]
        names, values, templates, extras = _chunk_templates(
            seq, blocks, block_rows, track_rows, c_blk, c_row, leaf[lo:hi])
        out_ids, in_ids = flows.of(offsets[c_blk] + c_row) if flows.any else \
            ([0] * (hi - lo),) * 2
        parts_append = stream.parts.append
        count = stream.count
        for st, en, name, vals, t, extra, outs, ins in zip(
                start[lo:hi].tolist(), end[lo:hi].tolist(), names, values, templates, extras,
                out_ids, in_ids):
            while stack and stack[-1] <= st:
                end_packet.timestamp = stack.pop()
                parts_append(end_serialize())
                count += 1
            if stack and en > stack[-1]:  # sticks out of its parent: clip rather than corrupt
                en = stack[-1]
                clipped += 1
            packet, te = t.packet, t.event
            packet.timestamp = st
            iid = t.name_iids.get(name)
            if iid is not None:
                te.name_iid = iid
            elif name in t.repeated:
                seq.name_count += 1
                iid = t.name_iids[name] = seq.name_count
                seq.pending.setdefault("event_names", []).append(
                    {"iid": iid, "name": safe_text(t.names[name])})
                te.name_iid = iid
            else:
                name = t.names[name]
                te.name = name if name.isascii() else safe_text(name)
            for ann, f, v in zip(t.anns, t.chunk_fields, vals):
                if f is None:
                    f, v = v
                setattr(ann, f, v)
            if extra:
                for k, v in extra.items():
                    f, v = proto_field(v)
                    te.debug_annotations.add(name_iid=seq.key_iid(k), **{f: v})
            if outs or t.n_out:  # one id where one was: set in place, without a call
                if t.n_out == 1 and type(outs) is int and outs:
                    t.flows_out[0] = outs
                else:
                    t.n_out = t.set_flows(outs, t.flows_out, t.n_out)
            if ins or t.n_in:
                if t.n_in == 1 and type(ins) is int and ins:
                    t.flows_in[0] = ins
                else:
                    t.n_in = t.set_flows(ins, t.flows_in, t.n_in)
            pending = seq.pending
            if pending:
                packet.interned_data.MergeFrom(pb.InternedData(**seq.take_pending()))
            end_p = t.end_packet
            if end_p is None:
                stack.append(en)
            else:
                end_p.timestamp = en
            parts_append(t.serialize())
            count += t.packets
            if extra:
                del te.debug_annotations[t.n_anns:]
            if pending:
                packet.ClearField("interned_data")
            if count >= PACKETS_PER_BATCH:
                stream.count = count
                stream.flush()
                count = 0
        stream.count = count
    _close_open(stack, end_packet, end_serialize, stream)
    return clipped


def _end_packet(seq_id: int):
    """An end packet to stamp and serialize again and again: (packet, its serializer)."""
    end_trace = pb.Trace()
    packet = end_trace.packet.add(trusted_packet_sequence_id=seq_id, track_event={"type": _END})
    return packet, end_trace.SerializeToString


def _close_open(stack: list[int], end_packet, end_serialize, stream: PacketStream) -> None:
    """The end packets of the slices still open at a track's end, innermost first."""
    while stack:
        end_packet.timestamp = stack.pop()
        stream.parts.append(end_serialize())
        stream.count += 1
    stream.flush_if_full()


def track_descriptors(timeline: Timeline, uuids: dict[int, int], stream: PacketStream) -> None:
    for p in timeline.processes:
        stream.add(track_descriptor={
            "uuid": uuids[p],
            "process": {"pid": p.pid, "process_name": safe_text(p.name)},
            "child_ordering": _EXPLICIT,
            "sibling_order_rank": p.sort_index,
        })
    for t in timeline.tracks:
        stream.add(track_descriptor={
            "uuid": uuids[t], "parent_uuid": uuids[t.process],
            "sibling_order_rank": t.sort_index,
            "thread": {"pid": t.process.pid, "tid": t.tid, "thread_name": safe_text(t.name)}})
    for c in timeline.counters:
        stream.add(track_descriptor={
            "uuid": uuids[c], "parent_uuid": uuids[c.process],
            "name": safe_text(counter_track_name(c)), "counter": {"unit_name": safe_text(c.unit)}})


def metadata_packet(timeline: Timeline, stream: PacketStream) -> None:
    """`other_data` (as in the JSON output) as `chrome_events` metadata entries: a value of
    a kind an entry has a field for (`INT`, `BOOL`, `STRING`) in that field, any other as
    its JSON text (`json_value`)."""
    entries = []
    for k, v in other_data(timeline).items():
        kind, value = arg_value(v)
        if kind is INT or kind is BOOL or kind is STRING:
            entries.append({"name": arg_key(k), PROTO_FIELD[kind]: value})
        else:
            entries.append({"name": arg_key(k), "json_value": json_text(v).decode()})
    stream.add(chrome_events={"metadata": entries})


def counter_events(seq_id: int, uuid: int, counter: CounterTrack,
                    stream: PacketStream) -> None:
    stream.add(trusted_packet_sequence_id=seq_id, sequence_flags=_CLEARED,
               trace_packet_defaults={"track_event_defaults": {"track_uuid": uuid}})
    if len(counter.ts_ns) and counter.ts_ns.min() < 0:
        raise ProfileWriteError(
            f"counter {counter.name!r}: a value before time 0 ({int(counter.ts_ns.min())} "
            "ns); protobuf timestamps are unsigned")
    values = counter.values
    if COLUMN_ENCODER and (data := encode_counter(seq_id, counter.ts_ns, values)) is not None:
        stream.parts.append(data)
        stream.count += len(values)
        stream.flush_if_full()
        return
    field = "double_counter_value" if values.dtype.kind == "f" else "counter_value"
    n = len(counter.ts_ns)
    slots = _counter_slots(seq_id, min(n, COUNTERS_PER_SERIALIZE))
    for lo in range(0, n, COUNTERS_PER_SERIALIZE):
        hi = min(lo + COUNTERS_PER_SERIALIZE, n)
        if hi - lo < len(slots[1]):
            slots = _counter_slots(seq_id, hi - lo)
        trace, packets, events = slots
        for p, te, ts, v in zip(packets, events, counter.ts_ns[lo:hi].tolist(),
                                values[lo:hi].tolist()):
            p.timestamp = ts
            setattr(te, field, v)
        stream.parts.append(trace.SerializeToString())
        stream.count += hi - lo
        stream.flush_if_full()


def _counter_slots(seq_id: int, k: int) -> tuple:
    """A `Trace` of `k` counter packets (set in place, serialized together), its packets and
    their track events.

    Why: serializing packets one at a time costs about 0.4 us a call on top of the bytes;
    the 419,402 counter values of the 100k bench took 0.329 s CPU with one packet serialized
    per value, 0.232 s with 256 at a time (min of 5 alternating; medians 0.339 / 0.259).
    Same bytes: a `Trace` of k packets is the k one-packet `Trace`s concatenated."""
    trace = pb.Trace()
    packets = [trace.packet.add(trusted_packet_sequence_id=seq_id,
                                track_event={"type": _COUNTER}) for _ in range(k)]
    return trace, packets, [p.track_event for p in packets]


PACKETS_PER_BATCH = 8192  # packets serialized and written at a time
