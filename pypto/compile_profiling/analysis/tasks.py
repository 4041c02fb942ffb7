"""A capture's tasks as columns: what both analyses start from.

One task per distinct AICore task token, numbered in the order of its first record (the
order Simpler's tools meet tasks in, which their tie rules depend on). A task's span is
its first block's start to its last block's end, over every core an SPMD or MIX task ran
on, in device cycles as recorded (no clock mapping: the analyses are exact to the cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pypto.compile_profiling.trace_merge.lay_out.device_labels import kernel_name
from pypto.compile_profiling.trace_merge.lay_out.device_rows import DeviceRows

__all__ = ["TaskTable", "decimal_string_rank", "engine_name", "task_dispatch_finish",
           "task_submission", "task_table"]

_ENGINE = {"aic": "AIC", "aiv": "AIV", "aicpu": "AICPU"}


def engine_name(core_type: str) -> str:
    """An engine as reports name it: a capture's core type `aic` is `AIC`."""
    return _ENGINE.get(core_type, core_type.upper())


_POW10 = np.array([10 ** k for k in range(1, 20)], dtype=np.uint64)


def decimal_string_rank(ids: np.ndarray) -> np.ndarray:
    """Each id's rank when the ids are compared as decimal strings ("10" < "9"), the order
    Simpler's critical_path breaks ties in (it keys tasks by `str(task_id)`). Numerically:
    pad every id to 19 digits on the right, shorter ids first on a tie."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    if int(ids.min()) < 0:          # a minus sign: let NumPy compare the strings
        order = np.argsort(ids.astype(str), kind="stable")
    else:
        u = ids.astype(np.uint64)
        digits = np.searchsorted(_POW10, u, side="right") + 1
        padded = u * (np.uint64(10) ** (19 - digits).astype(np.uint64))
        order = np.lexsort((digits, padded))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


@dataclass(slots=True, eq=False)
class TaskTable:
    """Per task (index = order of first record): token, span in cycles, blocks; per AICore
    row: its task. `types` is a bit mask of the core types the task ran on (bit i: the i-th
    name of `core_types`), so a MIX task has two bits."""

    ids: np.ndarray            # int64 task token (`(ring << 32) | local`)
    start: np.ndarray          # int64 cycles: first block start
    end: np.ndarray            # int64 cycles: last block end
    first_row: np.ndarray      # int64: its first AICore row (file order)
    blocks: np.ndarray         # int64: its AICore rows
    types: np.ndarray          # int64 bit mask of core types
    str_rank: np.ndarray       # int64: rank of str(task id) (tie rule)
    row_task: np.ndarray       # per AICore row: its task index
    row_start: np.ndarray      # per AICore row, cycles
    row_end: np.ndarray
    row_core: np.ndarray
    row_type: np.ndarray       # per AICore row: index into core_types
    core_types: list[str]      # distinct core type names, in core-id order ("aic", "aiv")
    kernel: np.ndarray         # per task: kernel id of its first row (-1 unknown)
    freq_hz: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    def ns(self, cycles) -> np.ndarray | float:
        """A duration in cycles as ns of device time (the capture's nominal frequency)."""
        return np.asarray(cycles) * (1e9 / self.freq_hz)

    def kernel_names(self, tasks: np.ndarray, names: dict[int, str] | None) -> list[str]:
        """The kernel name of each task in `tasks` ("unknown" without one), once per kernel."""
        ks = self.kernel[tasks]
        uniq, inv = np.unique(ks, return_inverse=True)
        table = [kernel_name(int(k), names) or "unknown" for k in uniq.tolist()]
        return [table[i] for i in inv.reshape(-1).tolist()]


def task_table(rows: DeviceRows, rec) -> TaskTable:
    """The tasks of one capture from its AICore rows (`rows`: the merge's `DeviceRows`, for
    the kernel of each row; `rec`: its `SwimlaneRecords`, for the cycles)."""
    a = rec.aicore
    token = a["task_id"]
    n = len(token)
    uniq, first, inv = np.unique(token, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.argsort(first, kind="stable")          # tasks by their first record
    new_of_sorted = np.empty(len(uniq), dtype=np.int64)
    new_of_sorted[order] = np.arange(len(uniq))
    row_task = new_of_sorted[inv].astype(np.int32)     # int32: one per block, 1M of them
    ids = uniq[order]
    by_task = np.argsort(row_task, kind="stable")
    blocks = np.bincount(row_task, minlength=len(ids)).astype(np.int64)
    heads = np.concatenate(([0], np.cumsum(blocks)[:-1])) if len(ids) else blocks
    row_start = a["start_cycles"]
    row_end = a["end_cycles"]
    start = np.minimum.reduceat(row_start[by_task], heads) if n else row_start[:0]
    end = np.maximum.reduceat(row_end[by_task], heads) if n else row_end[:0]
    names = list(dict.fromkeys(rec.core_types)) or ["core"]
    type_of_core = np.array([names.index(t) for t in rec.core_types] or [0], dtype=np.int8)
    core = a["core_id"]
    row_type = type_of_core[np.minimum(core, len(type_of_core) - 1)]
    bits = np.left_shift(np.int64(1), row_type)[by_task]
    types = np.bitwise_or.reduceat(bits, heads) if n else np.zeros(0, np.int64)
    first_row = first[order]
    return TaskTable(ids, start, end, first_row, blocks, types, decimal_string_rank(ids),
                     row_task, row_start, row_end, core, row_type, names,
                     rows.func[first_row] if n else np.zeros(0, np.int64), rec.freq_hz)


def task_dispatch_finish(tt: TaskTable, row_dispatch: np.ndarray, row_finish: np.ndarray,
                         has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per task, its dispatch (the earliest AICPU dispatch of its blocks) and its finish (the
    latest AICPU finish), in cycles; -1 for a task with a block that has no AICPU record
    (a level-1 capture has none), whose earliest dispatch and latest finish are unknown."""
    n = len(tt)
    if not n or not has.any():
        return np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    big = np.iinfo(np.int64).max
    dispatch = np.full(n, big, dtype=np.int64)
    finish = np.full(n, -1, dtype=np.int64)
    np.minimum.at(dispatch, tt.row_task[has], row_dispatch[has])
    np.maximum.at(finish, tt.row_task[has], row_finish[has])
    complete = np.bincount(tt.row_task[has], minlength=n) == tt.blocks
    return np.where(complete, dispatch, -1), np.where(complete, finish, -1)


def task_submission(tt: TaskTable, rec, task_dispatch: np.ndarray) -> np.ndarray | None:
    """Per task, when it was submitted (cycles; -1 unknown), or None when no task's is known.

    A graph built on the host (Simpler's host_build_graph: `orchestrator_source` "host") is
    submitted whole before the device starts: every task from the run's first dispatch. A
    device orchestrator's submissions are its `submit` phases (swimlane level 4), by task
    id; a task without one is unknown. Without either, the submissions are unknown."""
    n = len(tt)
    if not n:
        return None
    known = task_dispatch[task_dispatch >= 0]
    if (rec.orchestrator_source == "host" or rec.host_orchestrator) and len(known):
        return np.full(n, int(known.min()), dtype=np.int64)
    out = np.full(n, -1, dtype=np.int64)
    order = np.argsort(tt.ids, kind="stable")
    sorted_ids = tt.ids[order]
    for ph in rec.orchestrator:
        ids = next((a.values for a in ph.args if a.key == "task_id"), None)
        if "submit" not in ph.kinds or not isinstance(ids, np.ndarray):
            continue
        sel = ph.kind == ph.kinds.index("submit")
        tid, end = ids[sel], ph.end[sel]
        pos = np.minimum(np.searchsorted(sorted_ids, tid), n - 1)
        hit = sorted_ids[pos] == tid
        out[order[pos[hit]]] = end[hit]
    return out if (out >= 0).any() else None
