"""Per kernel, what it cost on the device: how many tasks ran it, on which core type, and
their AICore time (sum, mean and max over the records; a multi-block task runs on several
cores and counts once per core). Kernels are named by the capture's name map."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pypto.compile_profiling.trace_merge.lay_out.device_labels import kernel_name
from pypto.compile_profiling.trace_merge.lay_out.device_rows import row_kernels
from pypto.compile_profiling.trace_merge.read.read_simpler import discover_captures, read_capture
from pypto.errors import TraceInputError

UNKNOWN_KERNEL = "(unknown kernel)"


@dataclass(slots=True)
class DeviceKernelCost:
    """One kernel's AICore records in one capture."""

    kernel: str
    core_types: set[str]
    tasks: int              # distinct task ids
    executions: int         # AICore records (blocks of a task on several cores count apart)
    total_ns: float
    max_ns: float


def device_kernel_costs(capture, func: np.ndarray | None = None) -> list[DeviceKernelCost]:
    """AICore time per kernel from one read capture (`trace_merge.read.read_simpler.Capture`),
    with the merge's own rule for which kernel a row ran (`device_rows.row_kernels`;
    `func`: its result when the caller has it already)."""
    rec = capture.records
    if rec is None or not len(rec.aicore["task_id"]):
        return []
    names = capture.name_map.names if capture.name_map is not None else None
    a = rec.aicore
    if func is None:
        func, _ = row_kernels(capture)
    durations = (a["end_cycles"] - a["start_cycles"]) * (1e9 / rec.freq_hz)
    core_types = np.array(rec.core_types, dtype=object)[a["core_id"]]
    out = []
    for f in np.unique(func).tolist():
        sel = func == f
        d = durations[sel]
        out.append(DeviceKernelCost(kernel_name(f, names) or UNKNOWN_KERNEL,
                                    set(core_types[sel].tolist()),
                                    len(np.unique(a["task_id"][sel])), int(sel.sum()),
                                    float(d.sum()), float(d.max())))
    return out


def work_dir_device_costs(work_dir: str) -> tuple[list[DeviceKernelCost], list[str]]:
    """Device costs of every capture under `work_dir` (summed by kernel name), and notes."""
    notes: list[str] = []
    merged: dict[str, DeviceKernelCost] = {}
    try:
        leaves = discover_captures(work_dir)
    except OSError as e:  # e.g. a symlink loop below the directory
        raise TraceInputError(e.filename or work_dir, f"cannot read: {e.strerror or e}") from None
    for files in leaves:
        if files.records is None:
            notes.append(f"{files.directory}: no swimlane records (run with "
                         "enable_chip_swimlane >= 1 for device times)")
            continue
        if files.deps is None:
            notes.append(f"{files.directory}: no deps.json (run with enable_dep_gen): tasks "
                         "cannot be tied to their kernels")
        for c in device_kernel_costs(read_capture(files, converted=False)):
            m = merged.get(c.kernel)
            if m is None:
                merged[c.kernel] = c
            else:
                m.core_types |= c.core_types
                m.tasks += c.tasks
                m.executions += c.executions
                m.total_ns += c.total_ns
                m.max_ns = max(m.max_ns, c.max_ns)
    return list(merged.values()), notes
