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
import contextlib
import gc
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pypto.compile_profiling.profiler import (
    NO_PARENT,
    StageRecord,
    _ThreadLog,
    lane_display_name,
)

if TYPE_CHECKING:
    from pypto.compile_profiling.profiler import CompileProfiler

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


def build_stage_tree(prof: CompileProfiler, logs: list[_ThreadLog],
                     records: dict[int, StageRecord] | None = None) -> list[StageRecord]:
    """Top-level StageRecords (with children) from every thread's log; `records` (when
    given) receives `id(recorded stage) -> StageRecord`."""
    with gc_paused():
        return _TreeBuilder(prof, logs).build(records)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector while stage trees, reports and traces are built.

    What they allocate is acyclic, so the collector has nothing to find there, but hundreds
    of thousands of new records and event strings trigger many full passes over them:
    building and writing the trace of 200,000 stages took 5.3-6.3 s with the collector
    running and 3.4-4.8 s held (same host; the workload of bench_overhead.py's export).
    For the ~80 stages of a 64-kernel compile it makes no measurable difference.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_TOP = -2  # parent index: top-level (bound where nothing was open, or another profiler's)


class _TreeBuilder:
    """Works on parallel lists indexed by opening order (records, parent index), so that
    200,000 stages cost a few passes over lists rather than dictionaries keyed by id()."""

    def __init__(self, prof: CompileProfiler, logs: list[_ThreadLog]) -> None:
        self.prof = prof
        self.logs = logs
        self.end_ns = prof._end_ns()

    def build(self, records: dict[int, StageRecord] | None) -> list[StageRecord]:
        recs, parent_ix, inserted, by_ref = self._records()
        if records is not None:
            records.update((ref, recs[i]) for ref, i in by_ref.items())
        self._adopt_unbound(recs, parent_ix, inserted)
        roots = self._settle(recs, parent_ix, inserted)
        _finish(roots)
        return roots

    # -- 1. records and their recorded parents -------------------------------------------
    def _records(self):
        by_ref: dict[int, int] = {}  # ref -> index
        recs: list[StageRecord] = []
        refs: list[int] = []  # recorded parent ref of each record
        inserted: set[int] = set()  # records timed elsewhere: kept where inserted
        new = StageRecord
        append, ref_append = recs.append, refs.append
        for log in self.logs:
            pid, tid, tname, base, lanes = log.pid, log.tid, log.thread_name, log.base, log.lanes
            for i, e in enumerate(list(log)):
                if type(e) is tuple:
                    if len(e) == 5:
                        name, args, cat, start_ns, parent_ref = e
                        lane = lanes.get(base + i) if lanes else None
                        by_ref[base + i] = len(recs)
                        append(new(name, start_ns / 1e9, 0.0, [], start_ns, 0, pid, tid, tname,
                                   cat or "", dict(args) if args else None, None, False, False,
                                   lane[0] if lane else "", lane[1] if lane else ""))
                        ref_append(parent_ref)
                    else:
                        rec = recs[by_ref[e[0]]]
                        rec.end_ns, rec.end = e[1], e[1] / 1e9
                        if len(e) > 2:
                            if e[2] is not None:
                                rec.error = e[2]
                            if len(e) > 3 and e[3]:
                                rec.args = {**(rec.args or {}), **e[3]}
                else:  # _Inserted
                    inserted.add(len(recs))
                    append(e.record)
                    ref_append(e.parent_ref)
        get = by_ref.get
        parent_ix = [NO_PARENT if ref == NO_PARENT else get(ref, _TOP) for ref in refs]
        return recs, parent_ix, inserted, by_ref

    def _adopt_unbound(self, recs, parent_ix, inserted) -> None:
        """Top-level stages of threads other than the entering one go under the innermost
        stage of the entering thread open when they started (upstream's nesting)."""
        entry_tid, pid = self.prof._entry_tid, self.prof.pid
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
