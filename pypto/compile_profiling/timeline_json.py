"""Render a `Timeline` as Chrome trace JSON, streamed in large chunks.

Why hand-built text: `json.dumps` per event costs several microseconds, which is seconds for
half a million slices. Each event is one f-string around a cached per-(lane, category) prefix
and a cached escaped name; `args` go through the stdlib's C encoder object directly (about
1 us a dict). All escaping is the stdlib's, so quotes, newlines and non-ASCII come out as
valid JSON. The cyclic GC is paused while writing (see `gc_paused`).

Times: the model holds nanoseconds; Chrome JSON wants microseconds. Time points (start and
end) are rounded to whole nanoseconds and `dur` is their difference, so a child never sticks
out of its parent through rounding. Values are written with three decimals (ns precision).

Flows are `s` on the source slice's track at the source's start (binding to the slice open
there) and `f` with `bp: "e"` on the destination's track at its start; both are written after
all slices so that, at equal timestamps, the slice is already open when the flow binds.

Measured floor: the C encoder is as fast as CPython gets for args (per-shape `%` templates
with cached key fragments measured no faster: int-to-text is the cost), so a big timeline
is rendered by two processes instead (`ForkedPart`, also used by the protobuf exporter):
a forked child renders the slices after a cost-balanced split point into a temp file that
is appended in place, so the output is byte for byte the sequential one.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import logging
import math
import os
import threading
from collections.abc import Iterator
from typing import BinaryIO

from pypto.compile_profiling.atomic_io import atomic_writer
from pypto.compile_profiling.forked import ForkedPart
from pypto.compile_profiling.timeline import Slice, Timeline

__all__ = ["CHUNK_EVENTS", "PARALLEL_MIN_SLICES", "ForkedPart", "chrome_json_chunks", "gc_paused",
           "other_data", "parallel_parts_possible", "write_chrome_json"]

log = logging.getLogger(__name__)

CHUNK_EVENTS = 20000  # events joined into one string before it is handed to the writer

_escape = json.encoder.encode_basestring  # C implementation; keeps non-ASCII as is
_generic = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str,
                            allow_nan=False)


def _json_safe(v):
    """Replace non-finite floats (rejected by JSON) inside nested values."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k if isinstance(k, (str, int, float, bool)) else str(k): _json_safe(x)
                for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _make_args_text():
    """Return a function args-dict -> JSON text: the C encoder when available (1 us a dict)."""
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is None:
        return lambda args: _generic.encode(_json_safe(dict(args.items())))
    enc = c_make(None, str, _escape, None, ":", ",", False, False, False)

    def args_text(args: dict) -> str:
        if type(args) is not dict:  # any Mapping (e.g. args built lazily) is accepted
            args = dict(args.items())
        try:
            return "".join(enc(args, 0))
        except (ValueError, TypeError):  # NaN/inf, or keys JSON cannot hold
            return _generic.encode(_json_safe(args))

    return args_text


def _us(ns: int) -> str:
    """Integer nanoseconds -> microseconds text with exactly three decimals."""
    if -(1 << 50) < ns < (1 << 50):  # float division is exact to the digit here
        return f"{ns / 1000:.3f}"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


class _Escaper:
    """`encode_basestring` with a bounded cache (names repeat a lot; one-off labels don't).

    Hot loops read `cache` inline and call the object only on a miss."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        self.cache: dict[str, str] = {}

    def __call__(self, s: str) -> str:
        e = self.cache.get(s)
        if e is None:
            e = _escape(s)
            if len(self.cache) < 200_000:  # one-off task labels must not grow it forever
                self.cache[s] = e
        return e


_OPENING = '{"displayTimeUnit":"ms","traceEvents":[\n'


def _metadata_text(timeline: Timeline) -> str:
    """The process/thread name and sort-index events, joined ("" when there are none)."""
    meta = []
    for p in timeline.processes:
        meta.append(f'{{"ph":"M","name":"process_name","pid":{p.uid},"tid":0,'
                    f'"args":{{"name":{_escape(p.name)}}}}}')
        meta.append(f'{{"ph":"M","name":"process_sort_index","pid":{p.uid},"tid":0,'
                    f'"args":{{"sort_index":{int(p.sort_index)}}}}}')
    for t in timeline.tracks:
        meta.append(f'{{"ph":"M","name":"thread_name","pid":{t.process.uid},"tid":{t.uid},'
                    f'"args":{{"name":{_escape(t.name)}}}}}')
        meta.append(f'{{"ph":"M","name":"thread_sort_index","pid":{t.process.uid},'
                    f'"tid":{t.uid},"args":{{"sort_index":{int(t.sort_index)}}}}}')
    return ",\n".join(meta)


def _slice_chunks(slices: list[Slice], esc: _Escaper) -> Iterator[str]:
    """The `X` events of `slices`, each chunk starting with the ",\n" that separates it."""
    args_text = _make_args_text()
    c_make = getattr(json.encoder, "c_make_encoder", None)
    enc = c_make(None, str, _escape, None, ":", ",", False, False, False) if c_make else None
    join = "".join
    buf: list[str] = []
    append = buf.append
    prefixes: dict[tuple, str] = {}  # (track, cat) -> '{"ph":"X","pid":P,"tid":T,"cat":C,'
    big = 1 << 50  # beyond this, float division would lose the nanosecond digit
    esc_cache = esc.cache
    for s in slices:
        tr, cat = s.track, s.cat
        pre = prefixes.get((tr, cat))
        if pre is None:
            pre = prefixes[(tr, cat)] = (f'{{"ph":"X","pid":{tr.process.uid},"tid":{tr.uid},'
                                         f'"cat":{esc(cat)},')
        ts = s.ts_ns
        start = round(ts)
        dur = round(ts + s.dur_ns) - start
        dur = max(dur, 0)
        name = s.name
        en = esc_cache.get(name)
        if en is None:
            en = esc(name)
        args = s.args
        if args:
            if enc is not None and type(args) is dict:
                try:
                    at = join(enc(args, 0))
                except (ValueError, TypeError):  # NaN/inf, or keys JSON cannot hold
                    at = args_text(args)
            else:
                at = args_text(args)
            if -big < start < big and dur < big:
                append(f'{pre}"ts":{start / 1000:.3f},"dur":{dur / 1000:.3f},"name":{en},'
                       f'"args":{at}}}')
            else:
                append(f'{pre}"ts":{_us(start)},"dur":{_us(dur)},"name":{en},"args":{at}}}')
        elif -big < start < big and dur < big:
            append(f'{pre}"ts":{start / 1000:.3f},"dur":{dur / 1000:.3f},"name":{en}}}')
        else:
            append(f'{pre}"ts":{_us(start)},"dur":{_us(dur)},"name":{en}}}')
        if len(buf) >= CHUNK_EVENTS:
            yield ",\n" + ",\n".join(buf)
            buf.clear()
    if buf:
        yield ",\n" + ",\n".join(buf)


def _flow_chunks(timeline: Timeline, esc: _Escaper) -> Iterator[str]:
    """The `s`/`f` pairs of every flow, each chunk starting with ",\n"."""
    buf: list[str] = []
    for f in timeline.flows:
        src, dst = f.src, f.dst
        name = esc(f.name)
        buf.append(f'{{"ph":"s","id":{f.id},"pid":{src.track.process.uid},'
                   f'"tid":{src.track.uid},"ts":{_us(round(src.ts_ns))},'
                   f'"name":{name},"cat":"flow"}}')
        buf.append(f'{{"ph":"f","bp":"e","id":{f.id},"pid":{dst.track.process.uid},'
                   f'"tid":{dst.track.uid},"ts":{_us(round(dst.ts_ns))},'
                   f'"name":{name},"cat":"flow"}}')
        if len(buf) >= CHUNK_EVENTS:
            yield ",\n" + ",\n".join(buf)
            buf.clear()
    if buf:
        yield ",\n" + ",\n".join(buf)


def _tail_chunk(timeline: Timeline) -> str:
    other = _generic.encode(_json_safe(other_data(timeline)))
    return f'\n],\n"otherData":{other}}}\n'


def chrome_json_chunks(timeline: Timeline) -> Iterator[str]:
    """Yield the Chrome JSON text of `timeline` in large pieces (concatenate them for the file)."""
    yield _OPENING
    meta = _metadata_text(timeline)
    if meta:
        yield meta
    first = not meta
    esc = _Escaper()
    for chunk in itertools.chain(_slice_chunks(timeline.slices, esc),
                                 _flow_chunks(timeline, esc)):
        yield "\n" + chunk[2:] if first else chunk  # no separator before the first event
        first = False
    yield _tail_chunk(timeline)


def other_data(timeline: Timeline) -> dict:
    """`timeline.metadata` plus what each process is (real pid, alignment, estimated)."""
    other = dict(timeline.metadata)
    procs = []
    for p in timeline.processes:
        entry: dict = {"pid": p.uid, "name": p.name}
        if p.os_pid is not None:
            entry["os_pid"] = p.os_pid
        if p.estimated:
            entry["estimated"] = True
        if p.args:
            entry["args"] = p.args
        procs.append(entry)
    other.setdefault("processes", procs)
    return other


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: exporting allocates millions of short-lived objects, and each
    full collection would rescan every slice of a big timeline (seconds, for nothing)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def write_chrome_json(timeline: Timeline, path: str | os.PathLike, *,
                      parallel: bool | None = None) -> None:
    """Write `timeline` to `path` as Chrome JSON, atomically (no partial file on failure).

    A big timeline is rendered by two processes: a forked child renders the slices after a
    split point while this process renders those before it (see `ForkedPart`); the child's
    text is appended in place, so the file is byte for byte the sequential one.
    `parallel`: see `parallel_parts_possible` (None: automatic, when single-threaded).
    """
    with gc_paused(), atomic_writer(path, "w") as f:
        slices = timeline.slices
        if len(slices) < 2 or not parallel_parts_possible(len(slices), parallel):
            for chunk in chrome_json_chunks(timeline):
                f.write(chunk)
        else:
            mid = _balanced_split(slices)
            directory = os.path.dirname(os.path.abspath(path))

            def second_half(out: BinaryIO) -> None:
                esc = _Escaper()
                for chunk in _slice_chunks(slices[mid:], esc):
                    out.write(chunk.encode("utf-8"))

            with ForkedPart(second_half, directory) as child:
                esc = _Escaper()
                f.write(_OPENING)
                meta = _metadata_text(timeline)
                f.write(meta)
                first = not meta
                for chunk in _slice_chunks(slices[:mid], esc):  # mid > 0: a chunk comes
                    f.write("\n" + chunk[2:] if first else chunk)
                    first = False
                child.copy_into(f)
            for chunk in _flow_chunks(timeline, esc):
                f.write(chunk)
            f.write(_tail_chunk(timeline))
    log.debug("wrote %d slices, %d flows to %s", len(timeline.slices), len(timeline.flows), path)


# ------------------------------------------------------------------ writing in two processes

def _balanced_split(slices: list[Slice], samples: int = 1024) -> int:
    """An index that splits `slices` into two parts of about equal rendering cost.

    Slices with many args cost several times more than bare ones, and sources come in runs
    (all AICore tasks, then all scheduler phases...), so half the count is not half the work.
    The cost is estimated as 2 + len(args) on evenly spaced samples (a cheap model; lazy
    Mappings only answer `len`), each sample standing for the slices up to the next one.
    """
    n = len(slices)
    step = max(1, n // samples)
    points = range(0, n, step)
    weights = [2 + (len(a) if (a := slices[i].args) else 0) for i in points]
    half = sum(weights) / 2
    acc = 0
    for i, w in zip(points, weights):
        acc += w
        if acc >= half:
            return min(max(i + step, 1), n - 1)
    return n // 2


PARALLEL_MIN_SLICES = 200_000  # below this a second process costs more than it saves


def parallel_parts_possible(n_slices: int, parallel: bool | None = None) -> bool:
    """Whether to write part of a timeline of `n_slices` slices in a forked child.

    `parallel=False`: never. Otherwise only for big timelines (`PARALLEL_MIN_SLICES`), with
    fork available and a second core. `None` (automatic) also requires a single-threaded
    process, since a forked child could find a lock held by a thread that does not exist
    there; `True` is the caller vouching that its other threads (e.g. a progress timer)
    hold nothing the child needs (the child only renders and writes its own temp file).
    """
    if parallel is False or n_slices < PARALLEL_MIN_SLICES or not hasattr(os, "fork"):
        return False
    if (os.cpu_count() or 1) < 2:
        return False
    return parallel is True or threading.active_count() == 1
