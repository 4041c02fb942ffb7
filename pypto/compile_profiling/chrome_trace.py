"""The compile profile as a Chrome-trace JSON file (`trace.json`), for Perfetto and chrome://tracing.

One complete event (`ph: "X"`) per stage on its real pid/tid. `ts` is the absolute
CLOCK_MONOTONIC time in microseconds written with exact nanosecond decimals (time points
are converted, never durations rounded, so a child never sticks out of its parent), which
lets traces of several processes on one host line up as they are. `otherData` pairs one
monotonic reading with one wall-clock reading so other tools can align other hosts.
"""

from __future__ import annotations

import json
import operator
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import TYPE_CHECKING

import pypto
from pypto.compile_profiling.foundation.atomic_io import atomic_writer
from pypto.compile_profiling.foundation.safe_json import dumps

if TYPE_CHECKING:
    from pypto.compile_profiling.stage_log import ProfileSource
    from pypto.compile_profiling.stage_record import StageRecord
    from pypto.compile_profiling.stage_tree import PlainProfile

CLOCK_NAME = "CLOCK_MONOTONIC"
_dumps = dumps


def clock_anchor() -> dict[str, int]:
    """One CLOCK_MONOTONIC reading paired with one wall-clock reading, taken together."""
    best = None
    for _ in range(3):  # keep the tightest of three brackets
        before = time.perf_counter_ns()
        wall = time.time_ns()
        after = time.perf_counter_ns()
        if best is None or after - before < best[2] - best[0]:
            best = (before, wall, after)
    before, wall, after = best
    return {"monotonic_ns": (before + after) // 2, "wall_ns": wall,
            "uncertainty_ns": (after - before + 1) // 2}


def us(ns: int) -> str:
    """Exact microseconds text of an integer nanosecond time point."""
    if ns < 0:
        return "-" + us(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


def _settle(prof: ProfileSource, stages: list[StageRecord] | None):
    """-> (plain profile or None, stages or None, total seconds). Without `stages`, a profile
    with nothing to settle is read as columns from the thread logs
    (`stage_tree.plain_profile`); otherwise the stage tree is built."""
    from pypto.compile_profiling.foundation.gc_pause import gc_paused
    from pypto.compile_profiling.stage_tree import plain_profile

    plain = None
    if stages is None:
        with gc_paused():
            plain = plain_profile(prof.recording())
        if plain is None:
            stages = prof.stages
    if plain is not None:
        return plain, None, prof.total_seconds_of(plain.root_records())
    return None, stages, prof.total_seconds_of(stages)


def _other_data(prof: ProfileSource, total: float, emitter: _EventEmitter) -> dict:
    """`otherData`: the clock, one monotonic/wall anchor, the host, and the lanes' owners."""
    other = {
        "clock": CLOCK_NAME,
        "clock_anchor": clock_anchor(),
        "pid": prof.pid,
        "host": socket.gethostname(),
        "pypto_version": pypto.__version__,
        "total_seconds": round(total, 6),
        "producer": "pypto.compile_profiling",
    }
    if emitter.lane_tids:
        other["lanes"] = {str(t): {"pid": pid, "tid": tid, "lane": lane}
                          for (pid, tid, lane), t in emitter.lane_tids.items()}
    return other


def _write_trace(prof: ProfileSource, stages: list[StageRecord] | None, write) -> None:
    """Write the JSON text of the trace through `write(str)` in large pieces."""
    plain, stages, total = _settle(prof, stages)
    emitter = _EventEmitter(write, time.perf_counter_ns(), total)
    write('{"displayTimeUnit":"ms","traceEvents":[\n')
    if plain is not None:
        emitter.emit_plain(plain)
    else:
        emitter.emit(stages)
    emitter.flush()
    write((",\n" if emitter.any_written else "") + _metadata_text(prof, emitter))
    write('\n],"otherData":' + _dumps(_other_data(prof, total, emitter)) + "}\n")


# Lanes under a thread (an asyncio task's, or stages that overlap without nesting) get tids of
# their own, above any real Linux thread id (pid_max is at most 2**22).
LANE_TID_BASE = 1 << 30
_OVERLAP = "overlap"


class _EventEmitter:
    """Turns the stage tree into `X` events, without recursion (any depth). Names, categories
    and paths repeat a lot, so each is JSON-encoded once (paths per parent). A frame is an
    iterator over siblings and each event is one `%` (share_pct inside it): 200,000 events
    took 0.77 s of CPU with index-kept frames and share_pct appended, 0.58 s so (same text,
    the two alternated in one process, best of five)."""

    def __init__(self, write, now_ns: int, total: float) -> None:
        self.write = write
        self.now_ns = now_ns
        self.share_base = total * 1e9 / 100 if total > 0 else 0.0
        self.events: list[str] = []
        self.threads: dict[tuple[int, int], tuple[str, int]] = {}  # -> (name, first start)
        self.lane_tids: dict[tuple[int, int, str], int] = {}
        self.lane_names: dict[int, tuple[int, int, str, int]] = {}  # tid -> (pid, thread, name, start)
        self.cats: dict[str, str] = {}
        self.any_written = False

    def flush(self) -> None:
        """Write the pending events, separated from whatever was written before."""
        if self.events:
            self.write((",\n" if self.any_written else "") + ",\n".join(self.events))
            self.any_written = True
            self.events.clear()

    def _lane_tid(self, pid: int, tid: int, lane: str, name: str, start: int) -> int:
        key = (pid, tid, lane)
        t = self.lane_tids.get(key)
        if t is None:
            t = self.lane_tids[key] = LANE_TID_BASE + len(self.lane_tids)
            self.lane_names[t] = (pid, tid, name, start)
        return t

    def placed(self, roots: list[StageRecord]) -> Iterator[tuple]:
        """Walk the stage tree without recursion (any depth) and place each stage: yields
        `(rec, entry, cat, pid, tid, start, end, is_open)`, `tid` the written one (a lane's
        above `LANE_TID_BASE`), start/end clamped into the parent, `entry` the cached
        `(name JSON, path, '{"path":' + path JSON, children's cache)`."""
        # frame: (iterator over siblings, path prefix, clamp window, name cache, track
        # busy-until); a record with children pushes their frame and its own resumes after.
        stack: list[tuple] = [(iter(roots), "", None, {}, {})]
        threads, now_ns = self.threads, self.now_ns
        while stack:
            siblings, prefix, window, names, busy = stack[-1]
            for rec in siblings:
                pid, tid = rec.pid, rec.tid
                start = rec.start_ns
                is_open = rec.end <= 0
                end = now_ns if is_open else rec.end_ns
                # Clamps as `if`s, not min()/max(): 22 ns against 124 ns each (CPython 3.11,
                # timeit), four per stage in this loop.
                if end < start:  # noqa: PLR1730
                    end = start
                lane, lane_name = rec.lane, rec.lane_name
                if (window is not None and window[0] == pid and window[1] == tid
                        and window[4] == lane):
                    lane = window[5]  # a parent moved to an overlap lane takes its subtree
                    lane_name = window[6]
                    if start < window[2]:  # noqa: PLR1730
                        start = window[2]
                    if end > window[3]:  # noqa: PLR1730
                        end = window[3]
                    if start > end:  # noqa: PLR1730
                        start = end
                track = (pid, tid, lane)
                busy_until = busy.get(track)
                if busy_until is not None and busy_until > start:
                    # overlaps an earlier sibling on its track: a lane of its own
                    n = 1
                    while busy.get((pid, tid, f"{lane}|{_OVERLAP}{n}"), -1) > start:
                        n += 1
                    lane = f"{lane}|{_OVERLAP}{n}"
                    base = lane_name or rec.thread_name or f"thread {tid}"
                    lane_name = f"{base} · {_OVERLAP} {n}"
                    track = (pid, tid, lane)
                    busy_until = busy.get(track)
                if busy_until is None or busy_until < end:
                    busy[track] = end
                if lane:
                    out_tid = self._lane_tid(pid, tid, lane, lane_name, start)
                else:
                    out_tid = tid
                    known = threads.get((pid, tid))
                    if known is None or start < known[1]:
                        threads[(pid, tid)] = (rec.thread_name or (known[0] if known else ""),
                                               start)
                name = rec.name
                entry = names.get(name)
                if entry is None:
                    path = f"{prefix}/{name}" if prefix else name
                    entry = names[name] = (_dumps(name), path, '{"path":' + _dumps(path), {})
                yield rec, entry, rec.cat or "user", pid, out_tid, start, end, is_open
                if rec.children:
                    stack.append((iter(rec.children), entry[1],
                                  (pid, tid, start, end, rec.lane, lane, lane_name), entry[3], {}))
                    break
            else:
                stack.pop()

    def emit(self, roots: list[StageRecord]) -> None:
        """The `X` events of the stage tree, as `placed` places them."""
        events, append, cats = self.events, self.events.append, self.cats
        share_base = self.share_base
        event = _EVENT_SHARE if share_base else _EVENT
        share_base = share_base or 1.0
        frac = _FRAC
        ids: dict[tuple[int, int], str] = {}  # (pid, written tid) -> '"pid":..,"tid":..'
        for rec, entry, cat, pid, out_tid, start, end, is_open in self.placed(roots):
            id_text = ids.get((pid, out_tid))
            if id_text is None:
                id_text = ids[(pid, out_tid)] = f'"pid":{pid},"tid":{out_tid}'
            cat_json = cats.get(cat)
            if cat_json is None:
                cat_json = cats[cat] = _dumps(cat)
            extra = ""
            if rec.args:
                text = _dumps(rec.args)
                if text.startswith("{") and len(text) > 2:
                    extra = "," + text[1:-1]
            if rec.error is not None:
                extra += ',"failed":true,"error":' + _dumps(rec.error)
            if is_open:
                extra += ',"open":true'
            if rec.out_of_order:
                extra += ',"out_of_order":true'
            if rec.interrupted:
                extra += ',"interrupted":true'
            dur = end - start
            append(event % (entry[0], cat_json, start // 1000, frac[start % 1000],
                            dur // 1000, frac[dur % 1000], id_text, entry[2],
                            dur / share_base, extra))
            if len(events) >= 8192:
                self.flush()

    def plain_entries(self, plain: PlainProfile) -> tuple[list[tuple], list[str]]:
        """Per stage of `plain`: its `(name JSON, path, args prefix, children's cache,
        inferred category)` and its category; notes each thread's name and first start."""
        from pypto.compile_profiling.stage_tree import infer_category

        names, parents, n = plain.names, plain.parents, len(plain.names)
        entries: list = [None] * n
        top: dict = {}
        for i, name in enumerate(names):  # pre-order: a parent's entry exists already
            p = parents[i]
            cache = top if p < 0 else entries[p][3]
            entry = cache.get(name)
            if entry is None:
                prefix = entries[p][1] if p >= 0 else ""
                path = f"{prefix}/{name}" if prefix else name
                cat = infer_category(name, _Named(names[p]) if p >= 0 else None)
                entry = cache[name] = (_dumps(name), path, '{"path":' + _dumps(path), {}, cat)
            entries[i] = entry
        threads = self.threads
        for i in plain.roots:
            key, start = (plain.pids[i], plain.tids[i]), plain.starts[i]
            known = threads.get(key)
            if known is None or start < known[1]:
                threads[key] = (plain.thread_names[i] or (known[0] if known else ""), start)
        return entries, [c or e[4] for c, e in zip(plain.cats, entries)]

    def emit_plain(self, plain: PlainProfile) -> None:
        """The events of a `PlainProfile`, the same text `emit` writes for its stage tree:
        nothing to clamp or move to a lane, so each event is one `%` over columns."""
        n = len(plain.names)
        entries, stage_cats = self.plain_entries(plain)
        cats = self.cats
        for cat in set(stage_cats):
            if cat not in cats:
                cats[cat] = _dumps(cat)
        ids = {key: f'"pid":{key[0]},"tid":{key[1]}' for key in set(zip(plain.pids, plain.tids))}
        extras = [""] * n
        for i in compress(range(n), plain.args):
            text = _dumps(dict(plain.args[i]))
            if text.startswith("{") and len(text) > 2:
                extras[i] = "," + text[1:-1]
        for i, error in plain.errors.items():
            extras[i] += ',"failed":true,"error":' + _dumps(error)
        share_base = self.share_base
        event = (_EVENT_SHARE if share_base else _EVENT).__mod__
        share_base = share_base or 1.0
        starts, ends, frac = plain.starts, plain.ends, _FRAC.__getitem__
        for a in range(0, n, 8192):
            b = min(n, a + 8192)
            s, e = starts[a:b], ends[a:b]
            d = list(map(operator.sub, e, s))
            k = [1000] * (b - a)
            self.events += map(event, zip(
                [entry[0] for entry in entries[a:b]], map(cats.__getitem__, stage_cats[a:b]),
                map(operator.floordiv, s, k), map(frac, map(operator.mod, s, k)),
                map(operator.floordiv, d, k), map(frac, map(operator.mod, d, k)),
                map(ids.__getitem__, zip(plain.pids[a:b], plain.tids[a:b])),
                [entry[2] for entry in entries[a:b]],
                map(operator.truediv, d, repeat(share_base, b - a)), extras[a:b]))
            self.flush()


class _Named:
    """What `infer_category` reads of a parent: its name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


# One complete event; `share_pct` (the stage's share of the profile) only when the profile
# has a total time (`_EVENT` drops that value: `%.0s`). Formatted with one `%` per event;
# the pid/tid text is made once per track and the three decimals of ts/dur are looked up
# (`_FRAC`), not formatted: 0.62-0.65 -> 0.54-0.58 s CPU for 200,000 events (same text;
# the two alternated, seven rounds each, best round).
_EVENT_SHARE = ('{"ph":"X","name":%s,"cat":%s,"ts":%d.%s,"dur":%d.%s,%s,'
                '"args":%s,"share_pct":%.3f%s}}')
_EVENT = '{"ph":"X","name":%s,"cat":%s,"ts":%d.%s,"dur":%d.%s,%s,"args":%s%.0s%s}}'
_FRAC = [f"{i:03d}" for i in range(1000)]


def _display_order(prof: ProfileSource, emitter: _EventEmitter
                   ) -> tuple[list[tuple[int, str]], list[tuple[int, int, str, bool]]]:
    """-> (processes as (pid, name), threads and lanes as (pid, tid, name, is_lane)), each in
    display order: the profiler's process first, the main thread first, each lane right
    after its thread."""
    threads = emitter.threads
    lanes = emitter.lane_names
    pids = sorted({pid for pid, _ in threads} | {p for p, _, _, _ in lanes.values()} | {prof.pid},
                  key=lambda p: (p != prof.pid, p))
    processes = [(pid, prof.process_names.get(pid, "PyPTO process")) for pid in pids]
    main_tid = threading.main_thread().native_id
    rows = {key: (key[1], name, start, 0, "") for key, (name, start) in threads.items()}
    for out_tid, (pid, tid, name, start) in lanes.items():
        rows[(pid, out_tid)] = (tid, name, start, 1, name)
    firsts = {(pid, owner): start for (pid, _t), (owner, _n, start, lane, _) in rows.items()
              if not lane}
    ordered = sorted(rows.items(), key=lambda kv: (
        kv[0][0], kv[1][0] not in (kv[0][0], main_tid),
        firsts.get((kv[0][0], kv[1][0]), kv[1][2]), kv[1][0], kv[1][3], kv[1][2]))
    return processes, [(pid, tid, name or f"thread {tid}", bool(lane))
                       for (pid, tid), (_owner, name, _start, lane, _) in ordered]


def _metadata_text(prof: ProfileSource, emitter: _EventEmitter) -> str:
    """`M` events naming the processes and threads, in display order."""
    processes, threads = _display_order(prof, emitter)
    meta: list[dict] = []
    for index, (pid, name) in enumerate(processes):
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                     "args": {"name": name}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                     "args": {"sort_index": index}})
    for index, (pid, tid, name, _lane) in enumerate(threads):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                     "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                     "args": {"sort_index": index}})
    return ",\n".join(_dumps(m) for m in meta)


@dataclass(slots=True)
class PlacedStages:
    """The profile's stages exactly as `trace.json` places them, as columns, without the
    text: what `profile_timeline` draws as a `Timeline`. `tid` is the written one (a lane's
    is above `LANE_TID_BASE`); `args` as in the trace (path, share_pct, the stage's args,
    failed/error/open/out_of_order/interrupted)."""

    pid: list[int] = field(default_factory=list)
    tid: list[int] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)
    end_ns: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    args: list[dict] = field(default_factory=list)
    processes: list[tuple[int, str]] = field(default_factory=list)
    threads: list[tuple[int, int, str, bool]] = field(default_factory=list)
    other: dict = field(default_factory=dict)


def _trace_args(path: str, dur: int, share_base: float, args, error: str | None,
                **flags: bool) -> dict:
    """A stage's `args` as `emit` writes them into trace.json, as a dict: path, share_pct
    (when the profile has a total), the stage's own args, failed/error, then the flags set."""
    out = {"path": path}
    if share_base:
        out["share_pct"] = round(dur / share_base, 3)
    if args:
        out.update(args)
    if error is not None:
        out["failed"], out["error"] = True, error
    out.update((flag, True) for flag, on in flags.items() if on)
    return out


def placed_stages(prof: ProfileSource) -> PlacedStages:
    """The stages of `prof` placed as in its `trace.json` (same lanes, clamps and args)."""
    plain, stages, total = _settle(prof, None)
    emitter = _EventEmitter(None, time.perf_counter_ns(), total)
    share_base = emitter.share_base
    out = PlacedStages()
    if plain is not None:
        entries, cats = emitter.plain_entries(plain)
        out.pid, out.tid, out.cat = list(plain.pids), list(plain.tids), cats
        out.start_ns, out.end_ns = list(plain.starts), list(plain.ends)
        out.name = list(plain.names)
        out.args = [_trace_args(entry[1], plain.ends[i] - plain.starts[i], share_base,
                                plain.args[i], plain.errors.get(i))
                    for i, entry in enumerate(entries)]
    else:
        for rec, entry, cat, pid, tid, start, end, is_open in emitter.placed(stages):
            out.pid.append(pid)
            out.tid.append(tid)
            out.start_ns.append(start)
            out.end_ns.append(end)
            out.name.append(rec.name)
            out.cat.append(cat)
            out.args.append(_trace_args(entry[1], end - start, share_base, rec.args, rec.error,
                                        open=is_open, out_of_order=rec.out_of_order,
                                        interrupted=rec.interrupted))
    out.processes, out.threads = _display_order(prof, emitter)
    out.other = _other_data(prof, total, emitter)
    return out


def trace_text(prof: ProfileSource, stages: list[StageRecord] | None = None) -> str:
    """The whole trace as one JSON string."""
    pieces: list[str] = []
    _write_trace(prof, stages, pieces.append)
    return "".join(pieces)


def profile_trace(prof: ProfileSource) -> dict:
    """The trace as a dict (`traceEvents`, `displayTimeUnit`, `otherData`)."""
    return json.loads(trace_text(prof))


def write_chrome_trace(prof: ProfileSource, path: str | os.PathLike,
                       stages: list[StageRecord] | None = None) -> None:
    """Stream the trace to `path` atomically (temp file beside it, then rename)."""
    from pypto.compile_profiling.foundation.gc_pause import gc_paused

    with gc_paused(), atomic_writer(path, "w", errors="backslashreplace") as f:
        write_trace_to(f, prof, stages)


def write_trace_to(f, prof: ProfileSource, stages: list[StageRecord] | None = None) -> None:
    """Write the trace's text to the open text file `f`."""
    _write_trace(prof, stages, f.write)
