"""Render a `Timeline` as a native Perfetto protobuf trace (`.pftrace`), streamed in batches.

Built only with the generated classes of the `perfetto` package; nothing is hand-encoded.
Each packet is serialized as a one-packet `Trace` (concatenated `Trace` messages are one
`Trace`, `packet` being a repeated field); `proto_packets.PACKETS_PER_BATCH` of them are joined, written
and dropped, so memory stays flat whatever the number of slices.

The packets themselves (each track's slices on its own sequence, flows, counters, the
track descriptors and the metadata) are made by `proto_packets`.

A big timeline written to a file is written by two processes where this process may fork
(`_SecondWriter`): a forked child writes the later packet sequences to a temp file beside
the output while this process writes the first ones, then appends the child's file. The
bytes are the same as from one process. Measured when both writers were dict-heavy, a
second process gave no wall gain; with the packet templates it does (see `_SecondWriter`).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import shutil
import signal
import threading
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from pypto.compile_profiling.foundation.atomic_io import atomic_writer, temp_beside
from pypto.compile_profiling.timeline.model import (
    CounterTrack,
    Timeline,
    Track,
)
from pypto.compile_profiling.timeline.proto_packets import (
    Flows,
    PacketStream,
    Sequence,
    counter_events,
    metadata_packet,
    rows_by_track,
    track_descriptors,
    track_slices,
)
from pypto.errors import ProfileWriteError

if TYPE_CHECKING:  # typing.Self is Python 3.11+; annotations are never evaluated here
    from typing_extensions import Self


__all__ = ["SPLIT_MIN_ROWS", "write_perfetto_trace"]

log = logging.getLogger(__name__)

SPLIT_MIN_ROWS = 200_000  # slices + counter values from which a second process writes half


SHARD_UUID_BITS = 32   # track uuids: shard << 32 | n
SHARD_SEQ_BITS = 18    # packet sequence ids (uint32): shard << 18 | n, up to 16,383 shards
SHARD_FLOW_BITS = 40   # flow ids: shard << 40 | n


def _write(timeline: Timeline, out: BinaryIO, path: str | os.PathLike | None = None,
           shard: int = 0, metadata: bool = True) -> int:
    """Write the trace to `out`; `path` (the final output path, when there is one) allows the
    second writer process (`_SecondWriter`) for a big timeline. `shard`: the ids (track
    uuids, packet sequence ids, flow ids) are drawn from that shard's own range, so shards
    written apart concatenate into one trace; `metadata=False` leaves the metadata out."""
    if shard and (len(timeline.tracks) + len(timeline.counters) >= 1 << SHARD_SEQ_BITS
                  or shard >= 1 << (32 - SHARD_SEQ_BITS)):
        raise ProfileWriteError(f"shard {shard}: too many tracks or shards for the id ranges")
    stream = PacketStream(out)
    uuids: dict[int, int] = {}
    uuid_base, seq_base = shard << SHARD_UUID_BITS, shard << SHARD_SEQ_BITS
    for obj in (*timeline.processes, *timeline.tracks, *timeline.counters):
        uuids[obj] = uuid_base + len(uuids) + 1
    track_descriptors(timeline, uuids, stream)
    if metadata:
        metadata_packet(timeline, stream)
    offsets, total = {}, 0
    for block in timeline.blocks:
        offsets[block] = total
        total += len(block)
    block_offsets = np.array([offsets[b] for b in timeline.blocks], np.int64)
    flows = Flows(timeline, offsets, (shard << SHARD_FLOW_BITS) + 1)
    by_track = rows_by_track(timeline)
    jobs: list[tuple[int, Track | CounterTrack, list | None]] = []  # one per packet sequence
    for track in timeline.tracks:
        parts = by_track.pop(track, None)
        if parts:
            jobs.append((seq_base + len(jobs) + 1, track, parts))
    for counter in timeline.counters:
        if len(counter.ts_ns):
            jobs.append((seq_base + len(jobs) + 1, counter, None))

    def run(jobs: list, stream: PacketStream) -> int:
        clipped = 0
        for seq_id, obj, parts in jobs:
            if parts is None:
                counter_events(seq_id, uuids[obj], obj, stream)
            else:
                clipped += track_slices(Sequence(seq_id), obj, uuids[obj], parts,
                                         timeline, block_offsets, flows, stream)
        stream.flush()
        return clipped

    split = _split_point(timeline, jobs) if path is not None and _may_fork() else len(jobs)
    if split < len(jobs):
        with _SecondWriter(path, lambda s: run(jobs[split:], s)) as child:
            clipped = run(jobs[:split], stream)
            clipped += child.append_to(out, stream)
    else:
        clipped = run(jobs, stream)
    if by_track:
        log.warning("%d slices are on tracks missing from the timeline's track list and were "
                    "not written", sum(len(r) for parts in by_track.values() for _, r in parts))
    if clipped:
        log.warning("%d slices stuck out of their parent and were clipped to it", clipped)
    return stream.bytes_written


def _may_fork() -> bool:
    """A second writer process may be forked: POSIX, 2 CPUs or more for this process, no
    other Python thread (a fork copies only the calling thread; another's locks could be
    held forever in the child)."""
    if not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return False
    return len(os.sched_getaffinity(0)) >= 2 and threading.active_count() == 1


def _split_point(timeline: Timeline, jobs: list) -> int:
    """How many of `jobs` (in order) this process writes; the second process writes the rest.
    `len(jobs)` (no second process) below `SPLIT_MIN_ROWS` slices and counter values.

    The cost of a job is estimated from its rows: about 3 us a slice plus 0.3 us an arg
    column and 1.5 us a flow end (a block's flow ends spread over its rows), 0.75 us a counter
    value (fitted to the per-track times of the 100k bench). Counting flow ends balanced the
    two processes of the 100k write (the child had run 0.7-1 s longer): 4.08-4.38 -> 3.31-3.33
    s wall, 2 runs each."""
    n_rows = timeline.slice_count + sum(len(c.ts_ns) for c in timeline.counters)
    if n_rows < SPLIT_MIN_ROWS or len(jobs) < 2:
        return len(jobs)
    flow_ends = {b: 0 for b in timeline.blocks}
    for f in timeline.flows:
        flow_ends[f.src] += len(f)
        flow_ends[f.dst] += len(f)
    per_row = [3 + 0.3 * len(b.args) + 1.5 * flow_ends[b] / max(len(b), 1)
               for b in timeline.blocks]
    cost = []
    for _, obj, parts in jobs:
        if parts is None:
            cost.append(0.75 * len(obj.ts_ns))
        else:
            cost.append(sum(len(rows) * per_row[b] for b, rows in parts))
    half = np.cumsum(cost) <= sum(cost) / 2
    return min(max(int(half.sum()), 1), len(jobs) - 1)


class _SecondWriter:
    """A forked child that writes the packets of some sequences to a temp file beside the
    output while this process writes the others; `append_to` then appends that file to the
    output (concatenated `Trace` messages are one `Trace`; every sequence, its interning
    and its flow ids are the same whichever process writes it, so the file is byte for byte
    the one a single process writes).

    The child reports back through a pipe (its clipped slices, or the exception it failed
    with, pickled) and always ends with `os._exit`, never returning into the caller's code.
    A child that fails or dies raises `ProfileWriteError` here; the temp file is removed in
    every case, and a child still running when this process fails is killed and reaped.

    Gain (100k bench timeline written to a file, with and without, alternating, 4 each, load
    average 1-3 on the 2 cores): 3.69-4.74 s against 5.33-7.18 s wall (0.64x the median) for
    about 10% more CPU in all (6.2-7.6 s against 5.2-7.1 s, parent and child). On a machine
    whose other work takes the second core the gain shrinks toward none.
    """

    def __init__(self, path: str | os.PathLike, work) -> None:
        self._path, self._work = path, work
        self._pid: int | None = None
        self._reader: int | None = None
        self._tmp = ""

    def __enter__(self) -> Self:
        fd, self._tmp = temp_beside(self._path)
        try:
            read_end, write_end = os.pipe()
        except OSError:
            os.close(fd)
            os.unlink(self._tmp)
            raise
        try:
            self._pid = os.fork()
        except OSError:
            for f in (fd, read_end, write_end):
                os.close(f)
            os.unlink(self._tmp)
            raise
        if self._pid == 0:  # the child
            os.close(read_end)
            self._child(fd, write_end)  # never returns
        os.close(fd)
        os.close(write_end)
        self._reader = read_end
        return self

    def _child(self, fd: int, report: int) -> None:
        code = 1
        try:
            gc.disable()  # a collection would touch (and so copy) every page of the heap
            try:
                with os.fdopen(fd, "wb") as f:
                    stream = PacketStream(f)
                    result = ("ok", self._work(stream), stream.bytes_written)
                code = 0
            except BaseException as e:  # noqa: BLE001 - reported to the parent, whatever it is
                try:
                    result = ("error", pickle.dumps(e))
                except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                    result = ("error", f"{type(e).__name__}: {e}")
            data = pickle.dumps(result)
            while data:
                data = data[os.write(report, data):]
        finally:
            os._exit(code)

    def append_to(self, out: BinaryIO, stream: PacketStream) -> int:
        """Wait for the child, append its file to `out` (counted in `stream.bytes_written`);
        return its clipped slices."""
        chunks = []
        while chunk := os.read(self._reader, 1 << 16):
            chunks.append(chunk)
        os.close(self._reader)
        self._reader = None
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        result = None
        with contextlib.suppress(Exception):  # none: the child died before reporting
            result = pickle.loads(b"".join(chunks))
        if result is not None and result[0] == "error":
            error = result[1]
            if isinstance(error, bytes):
                error = pickle.loads(error)
            if isinstance(error, ProfileWriteError):
                raise error
            raise ProfileWriteError(f"{self._path}: the second writer process failed: "
                                    f"{error if isinstance(error, str) else repr(error)}")
        if result is None or status != 0:
            reason = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                      else f"exit status {os.waitstatus_to_exitcode(status)}")
            raise ProfileWriteError(f"{self._path}: the second writer process failed "
                                    f"({reason}) without a report")
        _, clipped, size = result
        out.flush()
        with open(self._tmp, "rb") as part:
            _copy(part, out, size)
        stream.bytes_written += size
        return clipped

    def __exit__(self, *exc) -> None:
        if self._pid is not None:  # this process failed first: the child's work is not wanted
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self._pid, 0)
            self._pid = None
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)


def _copy(src: BinaryIO, dst: BinaryIO, size: int) -> None:
    """Append `size` bytes of `src` to `dst` (flushed): in the kernel where it can."""
    try:
        while size > 0:
            n = os.copy_file_range(src.fileno(), dst.fileno(), size)
            if n == 0:
                break
            size -= n
    except (AttributeError, OSError):
        shutil.copyfileobj(src, dst, 1 << 20)
        return
    if size:
        raise ProfileWriteError(f"{src.name}: {size} bytes short")


def write_perfetto_trace(timeline: Timeline, out: str | os.PathLike | BinaryIO, *,
                         shard: int = 0, metadata: bool = True) -> int:
    """Write `timeline` as a Perfetto protobuf trace to `out`; return the bytes written.

    `out` is a path (written atomically: a temp file beside it, renamed when complete) or a
    binary stream (e.g. `sys.stdout.buffer`), which is written to and not closed. A slice
    before time 0 raises `ProfileWriteError` (protobuf timestamps are unsigned).

    `shard` (> 0: one part of a trace written in parts, e.g. one rank each): its track uuids,
    packet sequence ids and flow ids come from that shard's range, so the parts concatenate
    byte for byte into one valid trace; `metadata=False` writes no metadata packet (one part
    carries it). Shard 0 with metadata is the plain single trace, byte for byte.
    """
    if hasattr(out, "write"):
        try:
            return _write(timeline, out, None, shard, metadata)
        except OSError as e:
            raise ProfileWriteError(f"{getattr(out, 'name', '<stream>')}: cannot write: "
                                    f"{e.strerror or e}") from e
    with atomic_writer(out, "wb") as f:
        return _write(timeline, f, out, shard, metadata)
