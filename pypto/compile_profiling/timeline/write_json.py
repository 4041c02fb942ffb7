"""Render a `Timeline` as Chrome trace JSON, chunk by chunk.

Slice blocks, flows and counters are walked in chunks of `CHUNK_ROWS` rows. What
`json_rows` covers (every block the merge of a Simpler capture makes) is encoded by it from
the columns as text, with no object per event; the rest (blocks with `extra_args`, list
columns that are not all strings, 2D float columns) is built as plain dicts (names, pids
and tids by index lookup) and written by one `orjson.dumps` call per chunk. Either way
memory holds one chunk of events (and the few being written) whatever the timeline's size.
A second thread writes the chunks while the next ones are encoded; no second process: a
forked writer was measured as not paying on a 2-core machine.

Times: the model holds integer nanoseconds; Chrome JSON wants microseconds. On the dict
path `ns / 1000` as a float is written by orjson as its shortest round-trip text, which is
the exact decimal (three digits after the point at most) while |ns| < 2**52 (about 52 days
of uptime); beyond that, a chunk's time points are written as exact decimal text
(`orjson.Fragment`). `json_rows` writes the exact decimal, shortest form, always.

Text safety: output is always strict JSON (`json_values.dumps_strict`): a chunk orjson
refuses is encoded again from a cleaned copy.
"""

from __future__ import annotations

import collections
import gzip
import logging
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

import numpy as np
import orjson

from pypto.compile_profiling.foundation.atomic_io import atomic_writer
from pypto.compile_profiling.timeline.json_values import dumps_strict
from pypto.compile_profiling.timeline.model import (
    CounterTrack,
    FlowBlock,
    SliceBlock,
    Timeline,
    other_data,
)
from pypto.errors import ProfileWriteError

__all__ = ["CHUNK_ROWS", "write_chrome_json"]

log = logging.getLogger(__name__)

CHUNK_ROWS = 16384  # rows turned into events and encoded at a time
# zlib level 3 compressed 97 MB of trace JSON in 0.74 s CPU to 12.8 MB; level 6 (the zlib
# default) took 2.06 s for 11.2 MB, level 1 0.52 s for 14.9 MB (bench_exporters timeline)
GZIP_LEVEL = 3

_EXACT_FLOAT_NS = 1 << 52  # below this, ns / 1000 prints as the exact decimal


# ------------------------------------------------------------------ events

def _us(ns: np.ndarray) -> list:
    """Microseconds of integer-ns time points, exact to the nanosecond when written."""
    if not len(ns) or -_EXACT_FLOAT_NS < ns.min() and ns.max() < _EXACT_FLOAT_NS:
        return (ns / 1000).tolist()
    return [orjson.Fragment(f"{'-' if v < 0 else ''}{abs(v) // 1000}.{abs(v) % 1000:03d}")
            for v in ns.tolist()]  # Python ints: abs(-2**63) is not an int64


def _slice_events(block: SliceBlock) -> Iterator[list[dict]]:
    """The `X` events of `block`, `CHUNK_ROWS` at a time."""
    pids = [t.process.pid for t in block.tracks]
    tids = [t.tid for t in block.tracks]
    names, cat = block.names, block.cat
    has_args = bool(block.args) or block.extra_args is not None
    for lo in range(0, len(block), CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, len(block))
        tracks = block.track[lo:hi].tolist()
        ts = _us(block.start_ns[lo:hi])
        dur = _us(block.dur_ns[lo:hi])
        name = block.name[lo:hi].tolist()
        if not has_args:
            yield [{"ph": "X", "pid": pids[t], "tid": tids[t], "ts": s, "dur": d,
                    "name": names[n], "cat": cat}
                   for t, s, d, n in zip(tracks, ts, dur, name)]
        else:  # a row without args (all absent) is written without `args`
            yield [{"ph": "X", "pid": pids[t], "tid": tids[t], "ts": s, "dur": d,
                    "name": names[n], "cat": cat, "args": a} if a else
                   {"ph": "X", "pid": pids[t], "tid": tids[t], "ts": s, "dur": d,
                    "name": names[n], "cat": cat}
                   for t, s, d, n, a in zip(tracks, ts, dur, name, block.row_args(lo, hi))]


def _flow_events(flow: FlowBlock, first_id: int) -> Iterator[list[dict]]:
    """`s` at the source's start on its track and `f` (`bp: "e"`) at the destination's start
    on its track, sharing one id; Perfetto binds each to the deepest slice open there, so a
    source with a child starting at the same nanosecond hands its arrow to that child (JSON
    flow events bind by time; the protobuf output binds to the slice itself)."""
    src, dst = flow.src, flow.dst
    src_pids = [t.process.pid for t in src.tracks]
    src_tids = [t.tid for t in src.tracks]
    dst_pids = [t.process.pid for t in dst.tracks]
    dst_tids = [t.tid for t in dst.tracks]
    name, cat = flow.name, flow.cat
    for lo in range(0, len(flow), CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, len(flow))
        s_rows, d_rows = flow.src_row[lo:hi], flow.dst_row[lo:hi]
        events = []
        append = events.append
        for i, st, sts, dt, dts in zip(range(first_id + lo, first_id + hi),
                                       src.track[s_rows].tolist(), _us(src.start_ns[s_rows]),
                                       dst.track[d_rows].tolist(), _us(dst.start_ns[d_rows])):
            append({"ph": "s", "id": i, "pid": src_pids[st], "tid": src_tids[st], "ts": sts,
                    "name": name, "cat": cat})
            append({"ph": "f", "bp": "e", "id": i, "pid": dst_pids[dt], "tid": dst_tids[dt],
                    "ts": dts, "name": name, "cat": cat})
        yield events


def _counter_events(counter: CounterTrack) -> Iterator[list[dict]]:
    """`C` events. Perfetto names a JSON counter track "<name> <arg key>", so the key is the
    unit ("value" without one); the protobuf output names it "<name>" with the unit apart."""
    pid, name = counter.process.pid, counter.name
    key = counter.unit or "value"
    for lo in range(0, len(counter.ts_ns), CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, len(counter.ts_ns))
        yield [{"ph": "C", "pid": pid, "tid": 0, "name": name, "ts": ts, "args": {key: v}}
               for ts, v in zip(_us(counter.ts_ns[lo:hi]), counter.values[lo:hi].tolist())]


def _metadata_events(timeline: Timeline) -> list[dict]:
    events = []
    for p in timeline.processes:
        events.append({"ph": "M", "name": "process_name", "pid": p.pid, "tid": 0,
                       "args": {"name": p.name}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": p.pid, "tid": 0,
                       "args": {"sort_index": p.sort_index}})
    for t in timeline.tracks:
        events.append({"ph": "M", "name": "thread_name", "pid": t.process.pid, "tid": t.tid,
                       "args": {"name": t.name}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": t.process.pid,
                       "tid": t.tid, "args": {"sort_index": t.sort_index}})
    return events


def _event_texts(timeline: Timeline, columnar: bool) -> Iterator[bytes | np.ndarray]:
    """The events as runs of JSON text (events joined by commas, no brackets): metadata,
    slices, flows (after the slices, so the slices are open when flows bind), counters.
    With `columnar`, what `json_rows` covers is made by it, the rest as dicts."""
    from pypto.compile_profiling.timeline import json_rows

    def dicts(chunks: Iterator[list[dict]]) -> Iterator[memoryview]:
        for events in chunks:
            if events:
                yield memoryview(dumps_strict(events))[1:-1]  # without the list's brackets

    def rows(matrices: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        for m in matrices:
            yield m.reshape(-1)[:-1]  # without the last row's comma

    yield from dicts(iter([_metadata_events(timeline)]))
    for block in timeline.blocks:
        if columnar and json_rows.block_supported(block):
            yield from rows(json_rows.slice_rows(block, CHUNK_ROWS))
        else:
            yield from dicts(_slice_events(block))
    next_id = 1
    for flow in timeline.flows:
        if columnar:
            yield from rows(json_rows.flow_rows(flow, next_id, CHUNK_ROWS))
        else:
            yield from dicts(_flow_events(flow, next_id))
        next_id += len(flow)
    for counter in timeline.counters:
        if columnar and json_rows.counter_supported(counter):
            yield from rows(json_rows.counter_rows(counter, CHUNK_ROWS))
        else:
            yield from dicts(_counter_events(counter))


# ------------------------------------------------------------------ writing

WRITES_AHEAD = 4  # chunks encoded while earlier ones are still being written


def _write(timeline: Timeline, out: BinaryIO, columnar: bool) -> None:
    """The document, its event chunks written by a second thread while the next ones are
    encoded (`out.write` and zlib release the GIL, NumPy's work mostly does)."""
    out.write(b'{"displayTimeUnit":"ms","traceEvents":[\n')

    def put(sep: bytes, text) -> None:
        out.write(sep)
        out.write(text)

    sep = b""
    pending: collections.deque = collections.deque()
    with ThreadPoolExecutor(1, thread_name_prefix="json-write") as writer:
        for text in _event_texts(timeline, columnar):
            pending.append(writer.submit(put, sep, text))
            sep = b",\n"
            if len(pending) > WRITES_AHEAD:
                pending.popleft().result()
        for done in pending:
            done.result()
    out.write(b'\n],\n"otherData":')
    out.write(dumps_strict(other_data(timeline)))
    out.write(b"}\n")


def write_chrome_json(timeline: Timeline, out: str | os.PathLike | BinaryIO, *,
                      columnar: bool = True) -> None:
    """Write `timeline` as Chrome trace JSON to `out`.

    `out` is a path (written atomically: a temp file beside it, renamed when complete;
    gzip-compressed when it ends with `.json.gz`) or a binary stream (e.g.
    `sys.stdout.buffer`), which is written to and not closed. `columnar=False` writes every
    event through a dict (the reference `json_rows` is tested against; slower).
    """
    if hasattr(out, "write"):
        try:
            _write(timeline, out, columnar)
        except OSError as e:
            raise ProfileWriteError(f"{getattr(out, 'name', '<stream>')}: cannot write: "
                                    f"{e.strerror or e}") from e
    else:
        with atomic_writer(out, "wb") as f:
            if os.fspath(out).lower().endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                   compresslevel=GZIP_LEVEL, mtime=0) as gz:
                    _write(timeline, gz, columnar)
            else:
                _write(timeline, f, columnar)
    log.debug("wrote %d slices, %d flows as Chrome JSON", timeline.slice_count,
              timeline.flow_count)
