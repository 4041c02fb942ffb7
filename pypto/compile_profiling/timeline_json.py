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
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import math
import os
from collections.abc import Iterator

from pypto.compile_profiling.atomic_io import atomic_writer
from pypto.compile_profiling.timeline import Timeline

__all__ = ["CHUNK_EVENTS", "chrome_json_chunks", "gc_paused", "other_data", "write_chrome_json"]

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


def chrome_json_chunks(timeline: Timeline) -> Iterator[str]:
    """Yield the Chrome JSON text of `timeline` in large pieces (concatenate them for the file)."""
    yield '{"displayTimeUnit":"ms","traceEvents":[\n'
    esc_cache: dict[str, str] = {}

    def esc(s: str) -> str:
        e = esc_cache.get(s)
        if e is None:
            e = _escape(s)
            if len(esc_cache) < 200_000:  # one-off task labels must not grow it forever
                esc_cache[s] = e
        return e

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
    if meta:
        yield ",\n".join(meta)
    first = not meta

    args_text = _make_args_text()
    c_make = getattr(json.encoder, "c_make_encoder", None)
    enc = c_make(None, str, _escape, None, ":", ",", False, False, False) if c_make else None
    join = "".join
    buf: list[str] = []
    append = buf.append
    prefixes: dict[tuple, str] = {}  # (track, cat) -> '{"ph":"X","pid":P,"tid":T,"cat":C,'
    big = 1 << 50  # beyond this, float division would lose the nanosecond digit
    for s in timeline.slices:
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
            yield ("\n" if first else ",\n") + ",\n".join(buf)
            first = False
            buf.clear()
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
            yield ("\n" if first else ",\n") + ",\n".join(buf)
            first = False
            buf.clear()
    if buf:
        yield ("\n" if first else ",\n") + ",\n".join(buf)
    other = _generic.encode(_json_safe(other_data(timeline)))
    yield f'\n],\n"otherData":{other}}}\n'


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


def write_chrome_json(timeline: Timeline, path: str | os.PathLike) -> None:
    """Write `timeline` to `path` as Chrome JSON, atomically (no partial file on failure)."""
    with gc_paused(), atomic_writer(path, "w") as f:
        for chunk in chrome_json_chunks(timeline):
            f.write(chunk)
    log.debug("wrote %d slices, %d flows to %s", len(timeline.slices), len(timeline.flows), path)
