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
import gc
from collections import deque
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
    # Hundreds of thousands of new records would trigger many full GC passes that find
    # nothing to collect (the records are acyclic); pause the collector while building.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _TreeBuilder(prof, logs).build(records)
    finally:
        if was_enabled:
            gc.enable()


_BOUND = object()  # parent marker: bound where no stage was open -> stays top-level


class _TreeBuilder:
    def __init__(self, prof: CompileProfiler, logs: list[_ThreadLog]) -> None:
        self.prof = prof
        self.logs = logs
        self.end_ns = prof._end_ns()
        self.inserted: set[int] = set()  # records timed elsewhere: kept where inserted

    def build(self, records: dict[int, StageRecord] | None) -> list[StageRecord]:
        recs, parents = self._records()
        if records is not None:
            records.update(self.by_ref)
        final = self._settle([r for _, r in recs], parents)
        roots: list[StageRecord] = []
        for rec in (r for _, r in recs):
            parent = final.get(id(rec))
            (parent.children if parent is not None else roots).append(rec)
        _finish(roots)
        return roots

    # -- 1. records and their recorded parents -------------------------------------------
    def _records(self) -> tuple[list[tuple[object, StageRecord]], dict[int, object]]:
        by_ref: dict[int, StageRecord] = {}
        entries: list[tuple[object, StageRecord]] = []  # (log, record) in opening order
        refs: list[int] = []  # parent ref of each entry
        new = StageRecord
        for log in self.logs:
            pid, tid, tname, base, lanes = log.pid, log.tid, log.thread_name, log.base, log.lanes
            for i, e in enumerate(list(log)):
                if type(e) is tuple:
                    if len(e) == 5:
                        name, args, cat, start_ns, parent_ref = e
                        lane = lanes.get(base + i)
                        rec = new(name, start_ns / 1e9, 0.0, [], start_ns, 0, pid, tid, tname,
                                  cat or "", dict(args) if args else None, None, False, False,
                                  lane[0] if lane else "", lane[1] if lane else "")
                        by_ref[base + i] = rec
                        entries.append((log, rec))
                        refs.append(parent_ref)
                    else:
                        rec = by_ref[e[0]]
                        rec.end_ns, rec.end = e[1], e[1] / 1e9
                        if len(e) > 2:
                            if e[2] is not None:
                                rec.error = e[2]
                            if len(e) > 3 and e[3]:
                                rec.args = {**(rec.args or {}), **e[3]}
                else:  # _Inserted
                    self.inserted.add(id(e.record))
                    entries.append((log, e.record))
                    refs.append(e.parent_ref)
        self.by_ref = by_ref
        parents: dict[int, object] = {}  # id(rec) -> parent record, _BOUND or absent
        for (_log, rec), ref in zip(entries, refs):
            if ref == NO_PARENT:
                continue
            parent = by_ref.get(ref)
            parents[id(rec)] = parent if parent is not None else _BOUND
        self._adopt_unbound(entries, parents)
        return entries, parents

    def _adopt_unbound(self, entries, parents: dict[int, object]) -> None:
        """Top-level stages of threads other than the entering one go under the innermost
        stage of the entering thread open when they started (upstream's nesting)."""
        entry_tid, pid = self.prof._entry_tid, self.prof.pid
        host = [rec for _log, rec in entries
                if id(rec) not in self.inserted and rec.tid == entry_tid and rec.pid == pid]
        if not host:
            return
        host.sort(key=_start_key)
        starts = [r.start_ns for r in host]
        for _log, rec in entries:
            if id(rec) in parents or rec.tid == entry_tid or rec.pid != pid:
                continue
            i = bisect.bisect_right(starts, rec.start_ns) - 1
            candidate = host[i] if i >= 0 else None
            while candidate is not None:
                if candidate.end_ns == 0 or candidate.end_ns >= rec.start_ns:
                    parents[id(rec)] = candidate
                    break
                up = parents.get(id(candidate))
                candidate = up if isinstance(up, StageRecord) else None

    # -- 2. interrupted, out of order, lanes ------------------------------------------------
    def _settle(self, recs: list[StageRecord],
                parents: dict[int, object]) -> dict[int, StageRecord | None]:
        children: dict[int, list[StageRecord]] = {}
        roots: list[StageRecord] = []
        for rec in recs:
            p = parents.get(id(rec))
            if isinstance(p, StageRecord):
                children.setdefault(id(p), []).append(rec)
            else:
                roots.append(rec)
        final: dict[int, StageRecord | None] = {}
        chain: dict[int, StageRecord | None] = {}  # parent in the final tree
        queue = deque(roots)
        for rec in roots:
            chain[id(rec)] = None
            self._close_abandoned(rec, None)
            rec.lane, rec.lane_name = _lane_of(rec, None)
        while queue:
            rec = queue.popleft()
            kids = children.get(id(rec))
            if not kids:
                continue
            for kid in kids:
                self._close_abandoned(kid, rec)
                home = rec if id(kid) in self.inserted else self._home(kid, rec, chain)
                final[id(kid)] = home
                chain[id(kid)] = home
                kid.lane, kid.lane_name = _lane_of(kid, home)
                queue.append(kid)
        return final

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
    def _home(rec: StageRecord, parent: StageRecord,
              chain: dict[int, StageRecord | None]) -> StageRecord | None:
        """`parent`, or its nearest ancestor on the same thread that holds `rec`."""
        home: StageRecord | None = parent
        while home is not None and _same_thread(rec, home) and home.end_ns:
            if rec.start_ns >= home.end_ns:
                pass  # started after it ended: not inside
            elif rec.end_ns > home.end_ns:
                if rec.lane == home.lane and not rec.interrupted:
                    home.out_of_order = True  # closed while this stage was still open
            else:
                break
            home = chain.get(id(home))
        return home


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
