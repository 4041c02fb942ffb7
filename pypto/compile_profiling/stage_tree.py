"""Build the stage tree from the per-thread event logs, only when a result is asked for.

Stages on pool workers hang under the stage that was open where the work was bound
(`CompileProfiler.bind`); siblings are ordered by start time, whatever thread ran them.
Categories are inferred from well-known stage names when the caller gave none.
"""

from __future__ import annotations

import gc

from pypto.compile_profiling.profiler import StageRecord, _Marker, _ThreadLog

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


def build_stage_tree(logs: list[_ThreadLog]) -> list[StageRecord]:
    """Top-level StageRecords (with children) from every thread's log."""
    # Hundreds of thousands of new records would trigger many full GC passes that find
    # nothing to collect (the records are acyclic); pause the collector while building.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(logs)
    finally:
        if was_enabled:
            gc.enable()


def _build(logs: list[_ThreadLog]) -> list[StageRecord]:
    snapshots = [(log, list(log)) for log in logs]
    wanted: set[tuple[int, int]] = set()
    for _log, entries in snapshots:
        for e in entries:
            if type(e) is _Marker and e.kind == "parent" and e.value is not None:
                wanted.add((id(e.value[0]), e.value[1]))

    by_ref: dict[tuple[int, int], StageRecord] = {}
    floating: list[tuple[object, StageRecord, bool]] = []  # (parent ref, record, cat inferred)
    new_record = StageRecord
    for log, entries in snapshots:
        pid, tid, tname, log_id = log.pid, log.tid, log.thread_name, id(log)
        stack: list[StageRecord] = []
        parent_ref = None
        for i, e in enumerate(entries):
            t = type(e)
            if t is tuple and len(e) == 4:
                name, args, cat, start_ns = e
                parent = stack[-1] if stack else None
                rec = new_record(name, start_ns / 1e9, 0.0, [], start_ns, 0, pid, tid, tname,
                                 cat or infer_category(name, parent),
                                 dict(args) if args else None, None)
                if parent is not None:
                    parent.children.append(rec)
                else:
                    floating.append((parent_ref, rec, not cat))
                stack.append(rec)
                if wanted and (log_id, i) in wanted:
                    by_ref[(log_id, i)] = rec
            elif t is int:
                if stack:
                    rec = stack.pop()
                    rec.end_ns, rec.end = e, e / 1e9
            elif t is tuple:
                if stack:
                    end_ns, error, args = e
                    rec = stack.pop()
                    rec.end_ns, rec.end = end_ns, end_ns / 1e9
                    if error is not None:
                        rec.error = error
                    if args:
                        rec.args = {**(rec.args or {}), **args}
            elif e.kind == "parent":
                parent_ref = e.value
            elif e.kind == "record":
                if stack:
                    stack[-1].children.append(e.value)
                else:
                    floating.append((parent_ref, e.value, not e.value.cat))

    roots: list[StageRecord] = []
    for ref, rec, inferred in floating:
        parent = by_ref.get((id(ref[0]), ref[1])) if ref is not None else None
        if inferred:
            rec.cat = infer_category(rec.name, parent)
        (parent.children if parent is not None else roots).append(rec)
    _finish(roots)
    return roots


def _finish(records: list[StageRecord]) -> None:
    """Order siblings by start (threads and inserted records interleave); name inserted
    records' categories."""
    if len(records) > 1:
        records.sort(key=_start_key)
    for rec in records:
        if rec.children:
            for child in rec.children:
                if not child.cat:
                    child.cat = infer_category(child.name, rec)
            _finish(rec.children)


def _start_key(rec: StageRecord) -> int:
    return rec.start_ns
