"""Build the stage tree from the per-thread logs, only when a result is asked for.

Each recorded stage names its parent: the innermost open stage of its own context when it
opened (see `profiler.py`). Here that becomes the tree, and the cases where the recording
alone is not the truth are settled, each visibly:

- a parent from another profiler is skipped over (nearest ancestor of this profile);
- a stage opened on a thread with no open stage of its own (a pool worker not wrapped with
  `bind_to_current`) nests under the innermost stage of the thread that entered the profiler
  open at that moment, as upstream; work bound where no stage was open stays top-level;
- a stage never closed whose parent has closed, or whose profile has ended, is closed there
  and flagged `interrupted`;
- a stage that starts after its parent ended, or ends after it on the same thread, does not
  belong inside it: it moves up to the nearest ancestor that holds it, and a parent that a
  stage of its own context outlived is flagged `out_of_order`;
- a stage keeps the lane (asyncio task) it was recorded on, else its parent's on the same
  thread.

Siblings are ordered by start time, whatever thread ran them; categories are inferred from
well-known stage names when the caller gave none. Nothing here recurses, so any depth works.
"""

from __future__ import annotations

import bisect
import operator
from collections import deque
from itertools import compress, pairwise, repeat

from pypto.compile_profiling.foundation.gc_pause import gc_paused
from pypto.compile_profiling.stage_log import (
    ARGS,
    CAT,
    END,
    GLOBAL_REF,
    NAME,
    NO_PARENT,
    PARENT,
    START,
    WIDTH,
    Recording,
    ThreadLog,
)
from pypto.compile_profiling.stage_record import StageRecord, lane_display_name

_FIXED_CATS = {
    "compile": "compile",
    "parse": "parse",
    "passes": "pass",
    "codegen": "codegen",
    "orchestration_codegen": "codegen",
    "golden_write": "runtime",
    "device_execution": "device",
}


def infer_category(name: str, parent: StageRecord | None) -> str:
    """`cat` of a stage from its name and its parent's (passes' children are passes)."""
    cat = _FIXED_CATS.get(name)
    if cat is not None:
        return cat
    if name.startswith("kernel_codegen:") or name.endswith("codegen"):
        return "codegen"
    if parent is not None and parent.name == "passes":
        return "pass"
    return "user"


def build_stage_tree(recording: Recording,
                     records: dict[int, StageRecord] | None = None) -> list[StageRecord]:
    """Top-level StageRecords (with children) from every thread's log; `records` (when
    given) receives `global ref (log.base + position) -> StageRecord`."""
    with gc_paused():
        return _TreeBuilder(recording).build(records)


_TOP = -2  # parent index: top-level (bound where nothing was open, or another profiler's)


class _TreeBuilder:
    """Works on parallel lists indexed by opening order (records, parent index), so that
    200,000 stages cost a few passes over lists rather than dictionaries keyed by id()."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.logs = recording.logs
        self.end_ns = recording.end_ns

    def build(self, records: dict[int, StageRecord] | None) -> list[StageRecord]:
        recs, parent_ix, inserted = self._records(records)
        self._adopt_unbound(recs, parent_ix, inserted)
        roots = self._settle(recs, parent_ix, inserted)
        _finish(roots)
        return roots

    # -- 1. records and their recorded parents -------------------------------------------
    def _records(self, wanted: dict[int, StageRecord] | None):
        """Every log's stages as records, in log order, with their recorded parents as record
        indices (NO_PARENT / _TOP kept); `wanted` (when given) receives ref -> record."""
        recs: list[StageRecord] = []
        raw: list[int] = []  # parent of each record: an index, a global ref, or < 0
        inserted: set[int] = set()  # records timed elsewhere: kept where inserted
        spans: dict[int, tuple[int, int]] = {}  # log.base -> (first index, stage count)
        new = StageRecord
        append = recs.append
        for log in self.logs:
            pid, tid, tname, base = log.pid, log.tid, log.thread_name, log.base
            events = log[:]  # one C-level copy of whole stages (another thread may be adding)
            offset = len(recs)
            names, argss, cats = events[NAME::WIDTH], events[ARGS::WIDTH], events[CAT::WIDTH]
            starts, ends = events[START::WIDTH], events[END::WIDTH]
            spans[base] = (offset, len(names))
            count = len(names)
            for k in range(count):
                start_ns, end_ns, args = starts[k], ends[k], argss[k]
                append(new(names[k], start_ns / 1e9, end_ns / 1e9, [], start_ns, end_ns, pid,
                           tid, tname, cats[k] or "", dict(args) if args else None))
            raw += [offset + p // WIDTH if 0 <= p < GLOBAL_REF else p
                    for p in events[PARENT::WIDTH]]
            for pos, error in list(log.errors.items()):
                if pos // WIDTH < len(names):
                    recs[offset + pos // WIDTH].error = error
            for pos, (lane, lane_name) in list(log.lanes.items()):
                if pos // WIDTH < len(names):
                    rec = recs[offset + pos // WIDTH]
                    rec.lane, rec.lane_name = lane, lane_name
            if wanted is not None:
                wanted.update((base + WIDTH * k, recs[offset + k]) for k in range(len(names)))
            for e in list(log.inserted):
                inserted.add(len(recs))
                append(e.record)
                raw.append(e.parent_ref)
        parent_ix = [p if p < GLOBAL_REF else _resolve(p, spans) for p in raw]
        return recs, parent_ix, inserted

    def _adopt_unbound(self, recs, parent_ix, inserted) -> None:
        """Top-level stages of threads other than the entering one go under the innermost
        stage of the entering thread open when they started (upstream's nesting)."""
        entry_tid, pid = self.recording.entry_tid, self.recording.pid
        orphans = [i for i, p in enumerate(parent_ix)
                   if p == NO_PARENT and (recs[i].tid != entry_tid or recs[i].pid != pid)]
        for i in orphans:
            parent_ix[i] = _TOP
        orphans = [i for i in orphans if recs[i].pid == pid]
        if not orphans:
            return
        host = [i for i, r in enumerate(recs)
                if r.tid == entry_tid and r.pid == pid and i not in inserted]
        host.sort(key=lambda i: recs[i].start_ns)
        starts = [recs[i].start_ns for i in host]
        for i in orphans:
            t = recs[i].start_ns
            k = bisect.bisect_right(starts, t) - 1
            candidate = host[k] if k >= 0 else -1
            while candidate >= 0:
                end = recs[candidate].end_ns
                if end == 0 or end >= t:
                    parent_ix[i] = candidate
                    break
                candidate = parent_ix[candidate]

    # -- 2. interrupted, out of order, lanes ------------------------------------------------
    def _settle(self, recs, parent_ix, inserted) -> list[StageRecord]:
        kids: dict[int, list[int]] = {}
        roots: list[StageRecord] = []
        queue: deque[int] = deque()
        for i, p in enumerate(parent_ix):
            if p >= 0:
                kids.setdefault(p, []).append(i)
            else:
                parent_ix[i] = -1
                rec = recs[i]
                self._close_abandoned(rec, None)
                rec.lane, rec.lane_name = _lane_of(rec, None)
                roots.append(rec)
                queue.append(i)
        home_ix = parent_ix  # rewritten in place, top-down, into the final parent
        while queue:
            p = queue.popleft()
            children = kids.get(p)
            if not children:
                continue
            parent = recs[p]
            for i in children:
                kid = recs[i]
                self._close_abandoned(kid, parent)
                h = p if i in inserted else self._home(kid, p, recs, home_ix)
                home_ix[i] = h
                home = recs[h] if h >= 0 else None
                kid.lane, kid.lane_name = _lane_of(kid, home)
                (home.children if home is not None else roots).append(kid)
                queue.append(i)
        return roots

    def _close_abandoned(self, rec: StageRecord, parent: StageRecord | None) -> None:
        if rec.end_ns:
            return
        if (parent is not None and parent.end_ns and _same_thread(rec, parent)
                and rec.lane in ("", parent.lane)):  # not a task outliving its spawner
            end = parent.end_ns
        elif self.end_ns is not None:
            end = self.end_ns
        else:
            return  # still running: reported open, up to now
        end = max(end, rec.start_ns)
        rec.end_ns, rec.end, rec.interrupted = end, end / 1e9, True

    @staticmethod
    def _home(rec: StageRecord, h: int, recs, home_ix) -> int:
        """Index of the parent `h`, or of its nearest ancestor on the same thread that holds
        `rec` (-1: none, top-level)."""
        while h >= 0:
            home = recs[h]
            if not home.end_ns or not _same_thread(rec, home):
                break
            if rec.start_ns >= home.end_ns:
                pass  # started after it ended: not inside
            elif rec.end_ns > home.end_ns:
                if rec.lane == home.lane and not rec.interrupted:
                    home.out_of_order = True  # closed while this stage was still open
            else:
                break
            h = home_ix[h]
        return h


def _resolve(ref: int, spans: dict[int, tuple[int, int]]) -> int:
    """Record index of the stage with global ref `ref`; _TOP when its log (or the stage) is
    not in this snapshot."""
    k = (ref % GLOBAL_REF) // WIDTH
    first, count = spans.get(ref - ref % GLOBAL_REF, (0, 0))
    return first + k if k < count else _TOP


def _same_thread(a: StageRecord, b: StageRecord) -> bool:
    return a.tid == b.tid and a.pid == b.pid


def _lane_of(rec: StageRecord, parent: StageRecord | None) -> tuple[str, str]:
    """The lane a stage is drawn on: its own (asyncio task), else its parent's on this thread."""
    if rec.lane:
        return rec.lane, lane_display_name(rec.thread_name, rec.lane_name or rec.lane)
    if parent is not None and parent.lane and _same_thread(rec, parent):
        return parent.lane, parent.lane_name
    return "", ""


def _finish(roots: list[StageRecord]) -> None:
    """Order siblings by start (threads and inserted records interleave); name inserted
    records' categories. Iterative: any depth."""
    stack: list[tuple[list[StageRecord], StageRecord | None]] = [(roots, None)]
    while stack:
        records, parent = stack.pop()
        if len(records) > 1:
            records.sort(key=_start_key)
        for rec in records:
            if not rec.cat:
                rec.cat = infer_category(rec.name, parent)
            if rec.children:
                stack.append((rec.children, rec))


def _start_key(rec: StageRecord) -> int:
    return rec.start_ns


class PlainProfile:
    """The stages of a profile whose recording is already the whole truth, as columns in
    tree pre-order (siblings by start, as the stage tree orders them).

    "Already the truth": every stage closed, every thread's log nested as a stack in its
    own order (not `tangled`), no parent on another thread, no asyncio lanes, no records
    inserted with `add_stage_record`, no stage left for `_adopt_unbound` (the usual
    compile). Then the stage tree is the recorded tree, unchanged, and an exporter can read
    these columns straight from the thread logs instead of a `StageRecord` per stage: the
    trace of 200,000 stages took 1.2-1.9 s of CPU through the tree and 0.7-1.2 s this way
    (write_chrome_trace, the two alternated, two runs of five rounds each, loaded 2-core
    host, load average 2.5-3.5).
    `parents` are pre-order indices (-1: top-level); `cats` are as given (empty: inferred
    from the name, see `infer_category`); `errors` maps a pre-order index to its exception
    type name.
    """

    __slots__ = ("args", "cats", "ends", "errors", "names", "parents", "pids", "roots",
                 "starts", "thread_names", "tids")

    def root_records(self) -> list[_Span]:
        """The top-level stages' spans (what `CompileProfiler.total_seconds_of` sums)."""
        return [_Span(self.starts[i], self.ends[i]) for i in self.roots]


def plain_profile(recording: Recording) -> PlainProfile | None:
    """The profile as a `PlainProfile`, or None when the stage tree has anything to settle
    (then build it with `build_stage_tree`)."""
    logs, entry_tid, pid = recording.logs, recording.entry_tid, recording.pid
    segments: list[tuple[int, int, int, int, ThreadLog, list]] = []
    for order, log in enumerate(logs):
        if log.tangled or log.inserted or log.lanes:
            return None
        events = log[:]
        starts, parents, ends = events[START::WIDTH], events[PARENT::WIDTH], events[END::WIDTH]
        if not starts:
            continue
        if 0 in ends or max(parents) >= GLOBAL_REF:
            return None  # open stages, or work bound under another thread's stage
        if NO_PARENT in parents and (log.tid != entry_tid or log.pid != pid):
            return None  # an unbound pool worker's stages: adopted by the tree
        # Nested as a stack on one clock: only a child starting exactly when its parent
        # ended (a clock that did not advance) is not inside it.
        is_child = list(map((-1).__lt__, parents))
        parent_ends = map(ends.__getitem__, map(operator.floordiv, compress(parents, is_child),
                                                repeat(WIDTH)))
        if not (all(map(operator.le, starts, ends))
                and all(map(operator.lt, compress(starts, is_child), parent_ends))):
            return None
        roots = list(compress(range(len(parents)), map((0).__gt__, parents)))
        roots.append(len(parents))
        for first, end in pairwise(roots):
            segments.append((starts[first], order, first, end, log, events))
    segments.sort(key=operator.itemgetter(0, 1, 2))  # top-level stages by start, stably
    out = PlainProfile()
    out.names, out.args, out.cats, out.starts, out.ends, out.parents = [], [], [], [], [], []
    out.pids, out.tids, out.thread_names, out.errors, out.roots = [], [], [], {}, []
    for _start, _order, first, end, log, events in segments:
        offset = len(out.names)
        out.roots.append(offset)
        a, b = WIDTH * first, WIDTH * end
        out.names += events[a + NAME:b:WIDTH]
        out.args += events[a + ARGS:b:WIDTH]
        out.cats += events[a + CAT:b:WIDTH]
        out.starts += events[a + START:b:WIDTH]
        out.ends += events[a + END:b:WIDTH]
        shift = offset - first
        out.parents += [-1 if p < 0 else p // WIDTH + shift for p in events[a + PARENT:b:WIDTH]]
        count = end - first
        out.pids += repeat(log.pid, count)
        out.tids += repeat(log.tid, count)
        out.thread_names += repeat(log.thread_name, count)
        for pos, error in list(log.errors.items()):
            if first <= pos // WIDTH < end:
                out.errors[pos // WIDTH + shift] = error
    return out


class _Span:
    """A closed stage's `duration`, computed as `StageRecord.duration` computes it."""

    __slots__ = ("duration",)

    def __init__(self, start_ns: int, end_ns: int) -> None:
        self.duration = max(0.0, end_ns / 1e9 - start_ns / 1e9)
