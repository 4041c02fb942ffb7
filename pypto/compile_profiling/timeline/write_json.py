"""Render a `Timeline` as Chrome trace JSON, chunk by chunk.

Slice blocks, flows and counters are walked in chunks of `CHUNK_ROWS` rows, each encoded by
`json_rows` from the columns as text, with no object per event, so memory holds one chunk
of events (and the few being written) whatever the timeline's size. A second thread writes
the chunks while the next ones are encoded; no second process: a forked writer was
measured as not paying on a 2-core machine.

Text safety: output is always strict JSON and valid UTF-8 (`json_values`, `arg_values`).
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

from pypto.compile_profiling.foundation.atomic_io import atomic_writer
from pypto.compile_profiling.timeline import json_rows
from pypto.compile_profiling.timeline.json_values import dumps_strict
from pypto.compile_profiling.timeline.model import Timeline, other_data
from pypto.errors import ProfileWriteError

__all__ = ["CHUNK_ROWS", "write_chrome_json"]

log = logging.getLogger(__name__)

CHUNK_ROWS = 16384  # rows turned into events and encoded at a time
# zlib level 3 compressed 97 MB of trace JSON in 0.74 s CPU to 12.8 MB; level 6 (the zlib
# default) took 2.06 s for 11.2 MB, level 1 0.52 s for 14.9 MB (bench_exporters timeline)
GZIP_LEVEL = 3


# ------------------------------------------------------------------ events

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


def _event_texts(timeline: Timeline) -> Iterator[bytes | np.ndarray]:
    """The events as runs of JSON text (events joined by commas, no brackets): metadata,
    slices, flows (after the slices, so the slices are open when flows bind), counters.

    Flows: `s` at the source's start on its track and `f` (`bp: "e"`) at the destination's
    start on its track, sharing one id; Perfetto binds each to the deepest slice open there,
    so a source with a child starting at the same nanosecond hands its arrow to that child
    (JSON flow events bind by time; the protobuf output binds to the slice itself).
    Counters: Perfetto names a JSON counter track "<name> <arg key>", so the key is the unit
    ("value" without one); the protobuf output names its counter tracks the same
    (`model.counter_track_name`)."""

    def rows(matrices: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        for m in matrices:
            yield m.reshape(-1)[:-1]  # without the last row's comma

    metadata = _metadata_events(timeline)
    if metadata:
        yield memoryview(dumps_strict(metadata))[1:-1]  # without the list's brackets
    for block in timeline.blocks:
        yield from rows(json_rows.slice_rows(block, CHUNK_ROWS))
    next_id = 1
    for flow in timeline.flows:
        yield from rows(json_rows.flow_rows(flow, next_id, CHUNK_ROWS))
        next_id += len(flow)
    for counter in timeline.counters:
        yield from rows(json_rows.counter_rows(counter, CHUNK_ROWS))


# ------------------------------------------------------------------ writing

WRITES_AHEAD = 4  # chunks encoded while earlier ones are still being written


def _write(timeline: Timeline, out: BinaryIO) -> None:
    """The document, its event chunks written by a second thread while the next ones are
    encoded (`out.write` and zlib release the GIL, NumPy's work mostly does)."""
    out.write(b'{"displayTimeUnit":"ms","traceEvents":[\n')

    def put(sep: bytes, text) -> None:
        out.write(sep)
        out.write(text)

    sep = b""
    pending: collections.deque = collections.deque()
    with ThreadPoolExecutor(1, thread_name_prefix="json-write") as writer:
        for text in _event_texts(timeline):
            pending.append(writer.submit(put, sep, text))
            sep = b",\n"
            if len(pending) > WRITES_AHEAD:
                pending.popleft().result()
        for done in pending:
            done.result()
    out.write(b'\n],\n"otherData":')
    out.write(dumps_strict(other_data(timeline)))
    out.write(b"}\n")


def write_chrome_json(timeline: Timeline, out: str | os.PathLike | BinaryIO) -> None:
    """Write `timeline` as Chrome trace JSON to `out`.

    `out` is a path (written atomically: a temp file beside it, renamed when complete;
    gzip-compressed when it ends with `.json.gz`) or a binary stream (e.g.
    `sys.stdout.buffer`), which is written to and not closed.
    """
    if hasattr(out, "write"):
        try:
            _write(timeline, out)
        except OSError as e:
            raise ProfileWriteError(f"{getattr(out, 'name', '<stream>')}: cannot write: "
                                    f"{e.strerror or e}") from e
    else:
        with atomic_writer(out, "wb") as f:
            if os.fspath(out).lower().endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                   compresslevel=GZIP_LEVEL, mtime=0) as gz:
                    _write(timeline, gz)
            else:
                _write(timeline, f)
    log.debug("wrote %d slices, %d flows as Chrome JSON", timeline.slice_count,
              timeline.flow_count)
