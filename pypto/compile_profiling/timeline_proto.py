"""Render a `Timeline` as a native Perfetto protobuf trace (`.pftrace`), streamed in batches.

Built only with the generated classes of the `perfetto` package
(`perfetto.protos.perfetto.trace.perfetto_trace_pb2`); nothing is hand-encoded. Packets are
collected in a `Trace` message of a few thousand packets, serialized, written and dropped,
so memory stays flat however many slices there are (concatenated `Trace` messages are one
valid `Trace`, since `packet` is a repeated field).

Layout:
- every `Process` is a process track (`ProcessDescriptor`, pid = the process uid, which is
  unique in the timeline; a real OS pid is kept in the timeline metadata);
- a host thread (`Track.os_tid` set) is a thread track (`ThreadDescriptor` pid/tid = uids);
- a hardware lane (`os_tid` None: AICore cores, scheduler threads of the device) is a plain
  named track whose `parent_uuid` is its process track, not a fake OS thread, as Perfetto
  advises; lanes are ordered by `sort_index` (`child_ordering = EXPLICIT`);
- each track's slices go on their own packet sequence (`trusted_packet_sequence_id`) whose
  `TrackEventDefaults.track_uuid` is that track, so events need not repeat it; names,
  categories and argument keys are interned per sequence (a name is interned the second time
  it is seen, so one-off task labels are not paid twice);
- slices are `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs emitted in nesting order; arguments
  are `debug_annotations`; a flow starts (`flow_ids`) on its source's begin event and ends
  (`terminating_flow_ids`) on its destination's begin event;
- `timeline.metadata` (alignment method, uncertainty, clock) goes into `chrome_events`
  metadata entries, which the trace processor files in its `metadata` table.

Clocks, a design choice: device timestamps could be written raw, on a custom device clock,
with `ClockSnapshot` packets mapping it to CLOCK_MONOTONIC so that Perfetto converts. We do
not: (1) the calibrated mapping is a two-anchor linear fit with a measured frequency
correction, which a snapshot's integer `unit_multiplier_ns` cannot express exactly (Perfetto
interpolates between snapshots at the nominal rate); (2) estimated placements (no anchors)
have no device-to-host relation to snapshot at all; (3) the Chrome JSON output needs the
same host-time values, and computing them once in `clock_alignment` keeps both outputs
identical and testable. So every timestamp here is already host CLOCK_MONOTONIC ns (the
trace's default clock), and how each device view was aligned is stated in its process name
and the metadata.

Speed (measured with upb, the active backend): `add(**fields)` costs about 1 us a packet
plus 0.3 us a debug annotation in C, whatever the Python side does; a slice is two packets
plus one annotation per argument, so this exporter cannot be as fast per slice as the JSON
one (one f-string, args through the C JSON encoder). The Python side is kept thin: one
`add` call per packet with plain dicts (fields set in C), per-shape argument plans
(`_ArgShape`), nested values as JSON text via the C encoder, and big timelines split across
two processes by track (`ForkedPart`). Not done, measured as not paying: incremental
timestamps (about 4 bytes of ~64 a packet), one `legacy_json_value` annotation for all args
(faster, but twice the bytes and the keys nested one level deeper in Perfetto).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import defaultdict

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from pypto.compile_profiling.atomic_io import atomic_writer
from pypto.compile_profiling.timeline import Slice, Timeline
from pypto.compile_profiling.timeline_json import (
    ForkedPart,
    gc_paused,
    other_data,
    parallel_parts_possible,
)
from pypto.errors import ProfileWriteError

__all__ = ["PACKETS_PER_BATCH", "write_perfetto_trace"]

log = logging.getLogger(__name__)

PACKETS_PER_BATCH = 8192

_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
_END = pb.TrackEvent.TYPE_SLICE_END
_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
_NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
_EXPLICIT = pb.TrackDescriptor.EXPLICIT
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


class _PacketStream:
    """Collects packets in a `Trace` and writes it out every `PACKETS_PER_BATCH` packets.

    `add(**fields)` appends one packet (upb sets every field in C). The hot loop keeps its
    own count and calls `flush()` itself, re-reading `add` afterwards (a new `Trace`).
    """

    def __init__(self, out) -> None:
        self._out = out
        self._trace = pb.Trace()
        self.add = self._trace.packet.add
        self.count = 0
        self.bytes_written = 0

    def added(self, n: int = 1) -> None:
        self.count += n
        if self.count >= PACKETS_PER_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.count:
            data = self._trace.SerializeToString()
            self._out.write(data)
            self.bytes_written += len(data)
            self._trace = pb.Trace()
            self.add = self._trace.packet.add
            self.count = 0


_json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_c_encode = (_c_make_encoder(None, str, json.encoder.encode_basestring, None, ":", ",", False,
                             False, False) if _c_make_encoder else None)


def _value_text(v) -> str:
    """JSON text of a nested value (list, dict, ...): the C encoder, about 10x the Python one."""
    if _c_encode is not None:
        try:
            return "".join(_c_encode(v, 0))
        except (ValueError, TypeError):  # NaN inside, or keys JSON cannot hold
            pass
    try:
        return _json_text(v)
    except ValueError:  # NaN inside a list: JSON has no spelling for it
        return json.dumps(v, default=str)


def _annotation(key_iid: int, v) -> dict:
    t = type(v)
    if t is int:
        if _INT64_MIN <= v <= _INT64_MAX:
            return {"name_iid": key_iid, "int_value": v}
        if 0 <= v <= _UINT64_MAX:
            return {"name_iid": key_iid, "uint_value": v}
        return {"name_iid": key_iid, "string_value": str(v)}
    if t is str:
        return {"name_iid": key_iid, "string_value": v}
    if t is float:
        if math.isfinite(v):
            return {"name_iid": key_iid, "double_value": v}
        return {"name_iid": key_iid, "string_value": repr(v)}
    if t is bool:
        return {"name_iid": key_iid, "bool_value": v}
    if v is None:
        return {"name_iid": key_iid, "string_value": "null"}
    return {"name_iid": key_iid, "string_value": _value_text(v)}


# value field of a debug annotation by exact Python type; anything else becomes JSON text
_FIELD_BY_TYPE = {int: "int_value", str: "string_value", float: "double_value",
                  bool: "bool_value"}


class _ArgShape:
    """How to turn args with one key sequence and one value-type sequence into annotations.

    Device slices come in a handful of shapes (same keys, same value types), so the per-key
    work (interning, choosing the value field) is done once per shape; each slice then costs
    one list comprehension of small dicts, converted to messages in C by `add(**fields)`.
    """

    __slots__ = ("fields", "float_pos", "kids", "text_pos", "types")

    def __init__(self, kids: tuple, types: tuple) -> None:
        self.kids = kids
        self.types = types
        self.fields = tuple(_FIELD_BY_TYPE.get(t, "string_value") for t in types)
        self.float_pos = tuple(i for i, t in enumerate(types) if t is float)
        self.text_pos = tuple(i for i, t in enumerate(types) if t not in _FIELD_BY_TYPE)


class _Sequence:
    """Interning state of one packet sequence (one track)."""

    __slots__ = ("all_shapes", "cats", "keys", "names", "seen_once", "seq_id", "shapes")

    def __init__(self, seq_id: int) -> None:
        self.seq_id = seq_id
        self.names: dict[str, int] = {}
        self.seen_once: set[str] = set()
        self.cats: dict[str, int] = {}
        self.keys: dict = {}
        self.shapes: dict[tuple, _ArgShape] = {}  # keys -> the shape seen last with them
        self.all_shapes: dict[tuple, _ArgShape] = {}  # (keys, types) -> shape


def _ns(v: float) -> int:
    return round(v)


def _descriptors(timeline: Timeline, stream: _PacketStream) -> None:
    for p in timeline.processes:
        stream.add(track_descriptor={
            "uuid": p.uid,
            "process": {"pid": p.uid, "process_name": p.name},
            "child_ordering": _EXPLICIT,
            "sibling_order_rank": int(p.sort_index),  # compile first, then devices
        })
        stream.added()
    for t in timeline.tracks:
        desc: dict = {"uuid": t.uid, "parent_uuid": t.process.uid,
                      "sibling_order_rank": int(t.sort_index)}
        if t.os_tid is not None:
            desc["thread"] = {"pid": t.process.uid, "tid": t.uid, "thread_name": t.name}
        else:
            desc["name"] = t.name
        stream.add(track_descriptor=desc)
        stream.added()


def _metadata_packet(timeline: Timeline, stream: _PacketStream) -> None:
    entries = []
    for k, v in other_data(timeline).items():
        if isinstance(v, str):
            entries.append({"name": str(k), "string_value": v})
        elif isinstance(v, bool):
            entries.append({"name": str(k), "bool_value": v})
        elif isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX:
            entries.append({"name": str(k), "int_value": v})
        else:
            entries.append({"name": str(k),
                            "json_value": json.dumps(v, ensure_ascii=False, default=str)})
    if entries:
        stream.add(chrome_events={"metadata": entries})
        stream.added()


def _key_iids(seq: _Sequence, keys: tuple, interned: dict) -> tuple:
    """Interned ids of `keys` on this sequence; new ones are added to `interned`."""
    ids = seq.keys
    out = []
    for k in keys:
        kid = ids.get(k)
        if kid is None:
            kid = ids[k] = len(ids) + 1
            interned.setdefault("debug_annotation_names", []).append(
                {"iid": kid, "name": str(k)})
        out.append(kid)
    return tuple(out)


def _annotations(seq: _Sequence, keys: tuple, vals: tuple, interned: dict) -> list[dict]:
    """Debug annotations of one slice's args, given as parallel key and value tuples."""
    types = tuple(map(type, vals))
    shape = seq.shapes.get(keys)
    if shape is None or shape.types != types:
        shape = seq.all_shapes.get((keys, types))
        if shape is None:
            shape = seq.all_shapes[(keys, types)] = _ArgShape(
                _key_iids(seq, keys, interned), types)
        seq.shapes[keys] = shape
    for i in shape.float_pos:
        if not math.isfinite(vals[i]):  # NaN/inf: written as text, like the JSON output
            return [_annotation(k, v) for k, v in zip(shape.kids, vals)]
    if shape.text_pos:
        vals = list(vals)
        for i in shape.text_pos:
            v = vals[i]
            vals[i] = "null" if v is None else _value_text(v)
    return [{"name_iid": k, f: v} for k, f, v in zip(shape.kids, shape.fields, vals)]


def _track_events(seq: _Sequence, track_uid: int, slices: list[Slice],
                  flow_ends: dict[int, tuple[list[int], list[int]]],
                  stream: _PacketStream) -> int:
    """Emit the begin/end packets of one track's slices; return how many ends were clipped.

    The hot loop of the protobuf export: each packet is one `add(**fields)` call, so upb sets
    every field (nested messages included) in C; the Python side only builds small dicts.
    """
    seq_id = seq.seq_id
    stream.add(trusted_packet_sequence_id=seq_id, sequence_flags=_CLEARED,
               trace_packet_defaults={"track_event_defaults": {"track_uuid": track_uid}})
    stream.added()
    names, seen_once, cats = seq.names, seq.seen_once, seq.cats
    starts = [round(s.ts_ns) for s in slices]
    low = min(starts)
    if low < 0:
        s = slices[starts.index(low)]
        raise ProfileWriteError(
            f"slice {s.name!r} starts before time 0 ({low} ns); protobuf timestamps are "
            "unsigned: shift the timeline (e.g. --offset-us) first")
    neg_ends = [-max(round(s.ts_ns + s.dur_ns), st) for s, st in zip(slices, starts)]
    # by start, longest first (parents before children); the index keeps ties in input order
    order = sorted(zip(starts, neg_ends, range(len(slices))))
    stack: list[int] = []  # end times of open slices
    clipped = 0
    end_event = {"type": _END}
    add = stream.add
    limit = PACKETS_PER_BATCH
    count = stream.count
    for st, neg_en, i in order:
        s = slices[i]
        en = -neg_en
        while stack and stack[-1] <= st:
            add(timestamp=stack.pop(), trusted_packet_sequence_id=seq_id, track_event=end_event)
            count += 1
        if stack and en > stack[-1]:  # sticks out of its parent: clip rather than corrupt
            en = stack[-1]
            clipped += 1
        interned = None
        name = s.name
        iid = names.get(name)
        if iid is not None:
            te: dict = {"type": _BEGIN, "name_iid": iid}
        elif name in seen_once:
            iid = names[name] = len(names) + 1
            interned = {"event_names": [{"iid": iid, "name": name}]}
            te = {"type": _BEGIN, "name_iid": iid}
        else:
            seen_once.add(name)
            te = {"type": _BEGIN, "name": name}
        cat = s.cat
        if cat:
            cid = cats.get(cat)
            if cid is None:
                cid = cats[cat] = len(cats) + 1
                if interned is None:
                    interned = {}
                interned["event_categories"] = [{"iid": cid, "name": cat}]
            te["category_iids"] = (cid,)
        args = s.args
        if args:
            if type(args) is dict:
                keys, vals = tuple(args), tuple(args.values())
            else:  # any Mapping (e.g. built lazily): iterated once
                keys, vals = zip(*args.items())
            if interned is None:
                new_keys: dict = {}
                te["debug_annotations"] = _annotations(seq, keys, vals, new_keys)
                if new_keys:
                    interned = new_keys
            else:
                te["debug_annotations"] = _annotations(seq, keys, vals, interned)
        if flow_ends:
            ends = flow_ends.get(id(s))
            if ends is not None:
                if ends[0]:
                    te["flow_ids"] = ends[0]
                if ends[1]:
                    te["terminating_flow_ids"] = ends[1]
        try:
            if interned:
                add(timestamp=st, trusted_packet_sequence_id=seq_id, sequence_flags=_NEEDS,
                    interned_data=interned, track_event=te)
            else:
                add(timestamp=st, trusted_packet_sequence_id=seq_id, sequence_flags=_NEEDS,
                    track_event=te)
        except ValueError:
            if not args:
                raise
            # an int beyond int64 (upb then adds nothing): choose each value's field one by one
            te["debug_annotations"] = [_annotation(seq.keys[k], v) for k, v in zip(keys, vals)]
            if interned:
                add(timestamp=st, trusted_packet_sequence_id=seq_id, sequence_flags=_NEEDS,
                    interned_data=interned, track_event=te)
            else:
                add(timestamp=st, trusted_packet_sequence_id=seq_id, sequence_flags=_NEEDS,
                    track_event=te)
        count += 1
        stack.append(en)
        if count >= limit:
            stream.count = count
            stream.flush()
            add, count = stream.add, 0
    while stack:
        add(timestamp=stack.pop(), trusted_packet_sequence_id=seq_id, track_event=end_event)
        count += 1
    stream.count = count
    stream.added(0)
    return clipped


def write_perfetto_trace(timeline: Timeline, path: str | os.PathLike, *,
                         parallel: bool | None = None) -> int:
    """Write `timeline` to `path` as a Perfetto protobuf trace, atomically; return its size.

    A big timeline is rendered by two processes, about half of the tracks each (their packet
    sequences are independent); `parallel`: see `timeline_json.parallel_parts_possible`.
    """
    with gc_paused():
        return _write(timeline, path, parallel)


def _split_in_two(jobs: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Two groups of (sequence, track, slices) jobs with about equal rendering cost each.

    A slice costs two packets plus one annotation per argument (about 8 : 1 measured), and
    one track's slices share a shape, so its cost is estimated from its first slice.
    """
    def cost(job: tuple) -> int:
        slices = job[2]
        args = slices[0].args
        return len(slices) * (8 + (len(args) if args else 0))

    mine: list[tuple] = []
    theirs: list[tuple] = []
    load = [0, 0]
    for job, c in sorted(((j, cost(j)) for j in jobs), key=lambda jc: -jc[1]):
        side = 0 if load[0] <= load[1] else 1
        (mine, theirs)[side].append(job)
        load[side] += c
    return sorted(mine, key=lambda j: j[0]), sorted(theirs, key=lambda j: j[0])


def _write(timeline: Timeline, path: str | os.PathLike, parallel: bool | None) -> int:
    by_track: dict[int, list[Slice]] = defaultdict(list)
    for s in timeline.slices:
        by_track[id(s.track)].append(s)
    # id(slice) -> (flows starting there, flows ending there)
    flow_ends: dict[int, tuple[list[int], list[int]]] = {}
    for f in timeline.flows:
        flow_ends.setdefault(id(f.src), ([], []))[0].append(f.id)
        flow_ends.setdefault(id(f.dst), ([], []))[1].append(f.id)
    jobs = []  # (sequence id, track uid, slices): one packet sequence per track
    for n, track in enumerate(timeline.tracks):
        slices = by_track.pop(id(track), None)
        if slices:
            jobs.append((n + 1, track.uid, slices))

    def emit(group: list[tuple], stream: _PacketStream) -> int:
        clipped = 0
        for seq_id, track_uid, slices in group:
            clipped += _track_events(_Sequence(seq_id), track_uid, slices, flow_ends, stream)
        stream.flush()
        return clipped

    with atomic_writer(path, "wb") as out:
        stream = _PacketStream(out)
        _descriptors(timeline, stream)
        _metadata_packet(timeline, stream)
        if len(jobs) > 1 and parallel_parts_possible(len(timeline.slices), parallel):
            # sequences are independent: a forked child renders about half of the tracks
            mine, theirs = _split_in_two(jobs)

            def child_work(child_out) -> tuple[int, int]:
                child_stream = _PacketStream(child_out)
                return emit(theirs, child_stream), child_stream.bytes_written

            with ForkedPart(child_work, os.path.dirname(os.path.abspath(path))) as child:
                clipped = emit(mine, stream)
                child_clipped, child_bytes = child.copy_into(out)
            clipped += child_clipped
            size = stream.bytes_written + child_bytes
        else:
            clipped = emit(jobs, stream)
            size = stream.bytes_written
    if by_track:
        log.warning("%d slices were on tracks not registered in the timeline and were skipped",
                    sum(len(v) for v in by_track.values()))
    if clipped:
        log.warning("%d slices stuck out of their parent and were clipped", clipped)
    return size
