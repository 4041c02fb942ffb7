"""A capture's AICore rows joined with their AICPU rows (on (core, reg_task_id), the last
duplicate wins) and their kernels, every time point on the reference axis: `DeviceRows`,
what the layout draws and the arrows, counters and analysis are built from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.timeline.model import Process, SliceBlock
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan


@dataclass(slots=True, eq=False)
class PhaseRows:
    """One phase stream (a scheduler thread, an orchestrator) on the reference axis; `block`
    is its drawn slices (row-aligned), None when its view is off."""

    thread: int
    block: SliceBlock | None
    start: np.ndarray          # int64 ns
    end: np.ndarray            # int64 ns
    kind: np.ndarray           # int32 index into kinds
    kinds: list[str]
    columns: object            # the reader's PhaseColumns (for args such as task_id)
    role: str = "scheduler"    # scheduler threads: "scheduler" | "resolution"

    def rows_of_kind(self, name: str) -> np.ndarray:
        k = self.kinds.index(name) if name in self.kinds else -1
        return np.flatnonzero(self.kind == k)


@dataclass(slots=True, eq=False)
class DeviceRows:
    """A capture's AICore rows (file order) with their AICPU join, in reference-axis ns,
    and the blocks that drew them: what the arrows and counters are built from."""

    label: str
    core_types: list[str]
    core_to_thread: list[int] | None
    task: np.ndarray
    core: np.ndarray
    func: np.ndarray               # kernel id (-1 unknown)
    spmd: np.ndarray               # bool
    start: np.ndarray
    end: np.ndarray
    receive: np.ndarray
    has_cpu: np.ndarray            # bool: an AICPU row joined
    dispatch: np.ndarray
    finish: np.ndarray
    worker: SliceBlock | None = None
    sched_view: SliceBlock | None = None
    sched_view_row: np.ndarray | None = None    # per AICore row: its scheduler view row, -1
    worker_proc: Process | None = None
    sched_proc: Process | None = None          # the Scheduler view
    scheduler_proc: Process | None = None      # the AICPU scheduler's phases
    scheduler: list[PhaseRows] = field(default_factory=list)
    submits: list[PhaseRows] = field(default_factory=list)   # streams with task ids
    names: dict[int, str] | None = None   # kernel names (the name map)
    labels: tuple | None = None           # layout_device's task labels, made once
    joined: np.ndarray | None = None   # per AICore row: its AICPU row, -1
    used_cpu_rows: int = 0


def row_kernels(cap) -> tuple[np.ndarray, np.ndarray]:
    """Kernel id of each AICore row (-1: unknown) and whether its task is SPMD.

    deps.json's `kernel_ids` are (aic, aiv0, aiv1): AIC cores run the first. An AIV core is
    its cluster's AIV0 or AIV1 by its place among the AIV cores in core order (the runtime
    pairs them so: cluster c gets the 2c-th and (2c+1)-th), so a MIX task whose two AIV
    subtasks run different kernels names each block after its own; where only one AIV slot is
    set, every AIV block ran that one. (Simpler's converter names them all after AIV0's.)
    SPMD: `block_num > 1`; without deps.json, Simpler's rule: a task with several rows, all
    on one core type."""
    a = cap.records.aicore
    task = a["task_id"]
    n = len(task)
    core_is_aic = np.array([t == "aic" for t in cap.records.core_types], dtype=bool)
    is_aic = core_is_aic[a["core_id"]]
    aiv1_core = (np.cumsum(~core_is_aic) - 1) % 2 == 1      # odd place among the AIV cores
    deps = cap.deps
    if deps is not None and len(deps.task_id):
        order = np.argsort(deps.task_id, kind="stable")
        sorted_ids = deps.task_id[order]
        pos = np.minimum(np.searchsorted(sorted_ids, task), len(sorted_ids) - 1)
        found = sorted_ids[pos] == task
        k = deps.kernel_ids[order[pos]]
        own, other = ((np.where(aiv1_core[a["core_id"]], k[:, i], k[:, j]) for i, j in
                       ((2, 1), (1, 2))))
        aiv = np.where(own >= 0, own, other)
        func = np.where(found, np.where(is_aic, k[:, 0], aiv), -1)
        return np.where(func >= 0, func, -1), found & (deps.block_num[order[pos]] > 1)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    uniq, inv, cnt = np.unique(task, return_inverse=True, return_counts=True)
    types = np.zeros(len(uniq), dtype=np.int64)
    np.bitwise_or.at(types, inv.reshape(-1), np.where(is_aic, 1, 2))
    return np.full(n, -1, dtype=np.int64), ((cnt > 1) & (types != 3))[inv.reshape(-1)]


def device_rows(capture_plan: CapturePlan) -> DeviceRows | None:
    """The AICore rows with their AICPU row (joined on (core_id, reg_task_id), the last
    duplicate wins) and kernel, every time point on the reference axis."""
    cap, dev = capture_plan.capture, capture_plan.device
    rec = cap.records
    a, cpu = rec.aicore, rec.aicpu
    n = len(a["start_cycles"])
    if not n:
        return None
    start, end = dev.to_ns(a["start_cycles"]), dev.to_ns(a["end_cycles"])
    end = np.maximum(end, start)
    receive = np.minimum(dev.to_ns(a["start_cycles"] - a["receive_to_start_cycles"]), start)
    joined = _join_last(a["core_id"], a["reg_task_id"], cpu["core_id"], cpu["reg_task_id"])
    has = joined >= 0
    if has.any():
        jr = np.where(has, joined, 0)
        dispatch = dev.to_ns(cpu["dispatch_cycles"][jr])
        finish = np.maximum(dev.to_ns(cpu["finish_cycles"][jr]), dispatch)
    else:
        dispatch = finish = np.zeros(n, dtype=np.int64)
    func, spmd = row_kernels(cap)
    rows = DeviceRows(capture_plan.label, list(rec.core_types), rec.core_to_thread, a["task_id"],
                      a["core_id"], func, spmd, start, end, receive, has, dispatch, finish)
    used = np.zeros(len(cpu["core_id"]), dtype=bool)
    used[joined[has]] = True                  # 900k rows: 0.79 -> 0.003 s CPU (np.unique)
    rows.used_cpu_rows = int(np.count_nonzero(used))
    rows.names = cap.name_map.names if cap.name_map is not None else None
    rows.joined = joined
    return rows


def packable(*cols_bits: tuple[np.ndarray, int]) -> bool:
    """Whether non-negative columns fit their bit widths (then one int64 key holds a row)."""
    return all(not len(c) or (int(c.min()) >= 0 and int(c.max()) < (1 << bits))
               for c, bits in cols_bits)


def unique_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Unique (a, b, c) rows and each row's index into them. Packed into one int64 key when
    the values fit (a: 46 bits, b: 16, c: 1), else NumPy's row-wise unique. Measured (CPU,
    random rows): 100k 0.168 -> 0.013 s, 1M 3.05 -> 0.30 s."""
    if packable((a, 46), (b, 16), (c, 1)):
        keys, inv = np.unique((a << 17) | (b << 1) | c, return_inverse=True)
        return np.column_stack((keys >> 17, (keys >> 1) & 0xFFFF, keys & 1)), inv.reshape(-1)
    uniq, inv = np.unique(np.column_stack((a, b, c)), axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def _join_last(core: np.ndarray, reg: np.ndarray, cpu_core: np.ndarray, cpu_reg: np.ndarray
               ) -> np.ndarray:
    """For each AICore row, the AICPU row with the same (core_id, reg_task_id), the last one
    when there are several; -1 when none. Sorted keys and a binary search; measured (CPU,
    random rows) against a dict of tuple keys: 100k 0.14 -> 0.04 s, 1M 1.59 -> 0.78 s."""
    n = len(core)
    if not len(cpu_core) or not n:
        return np.full(n, -1, dtype=np.int64)
    if packable((core, 16), (reg, 47), (cpu_core, 16), (cpu_reg, 47)):
        left, right = (core << 47) | reg, (cpu_core << 47) | cpu_reg
    else:
        pairs = np.concatenate((np.column_stack((core, reg)), np.column_stack((cpu_core, cpu_reg))))
        _, codes = np.unique(pairs, axis=0, return_inverse=True)
        codes = codes.reshape(-1)
        left, right = codes[:n], codes[n:]
    rev = right[::-1]                       # the last duplicate wins
    keys, first_in_rev = np.unique(rev, return_index=True)
    rows = len(right) - 1 - first_in_rev
    pos = np.minimum(np.searchsorted(keys, left), len(keys) - 1)
    return np.where(keys[pos] == left, rows[pos], -1)
