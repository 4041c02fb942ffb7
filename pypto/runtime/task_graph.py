"""Task graph of one run: tasks in submission order and their dependencies.

Dependencies come from the memory the task arguments touch (docs/internals.md: array identity,
extended to views): a task reads its `in`/`inout` arrays and writes its `out`/`inout` ones;
two accesses to overlapping bytes of one buffer order the tasks (RAW, WAR, WAW). Whole arrays
are the common case and cost one dict lookup each.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.errors import CompileError

try:  # NumPy >= 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # pragma: no cover - NumPy 1.x
    _byte_bounds = np.byte_bounds

RING_SHIFT = 32
CORE_TYPES = ("aic", "aiv")
READ_DIRS = ("in", "inout")
WRITE_DIRS = ("out", "inout")


def task_id_of(local_id: int, ring: int = 0) -> int:
    """Simpler's 64-bit task id: `(ring << 32) | local`."""
    return (ring << RING_SHIFT) | local_id


def kernel_ids_slots(func_id: int, core_type: str) -> list[int]:
    """Simpler's 3-slot `kernel_ids` ([aic, aiv0, aiv1]); unused slots are -1."""
    return [func_id, -1, -1] if core_type == "aic" else [-1, func_id, -1]


@dataclass(slots=True)
class DeviceTask:
    """One submitted task: what to run, where (core type), and its place in the graph."""

    index: int                      # submission index = local task id
    task_id: int                    # (ring << 32) | local
    kernel_name: str
    func_id: int
    core_type: str
    fn: Callable[..., None]
    args: list
    preds: list[int] = field(default_factory=list)
    succs: list[int] = field(default_factory=list)
    pending: int = 0
    done: bool = False
    timing_slot: int | None = None  # Simpler's task-timing slot, when the call was tagged


@dataclass(slots=True)
class _Region:
    lo: int
    hi: int
    writer: int          # task index of the last writer, -1 if none
    created: bool        # the writer created the buffer (Simpler's OUTPUT, edge source "creator")
    readers: list[int]


@dataclass(slots=True)
class DepEdge:
    """One dependency for `deps.json`: `pred` must finish before `succ` (consumer arg `arg`)."""

    pred: int
    succ: int
    arg: int
    kind: str            # "raw" | "war" | "waw"
    source: str          # "creator" | "tensormap"
    tensor: int          # index into TaskGraph.tensors
    producer_tensor: int
    covered: bool


@dataclass(slots=True)
class TensorInfo:
    """One distinct memory region seen in task arguments (a Simpler `tensors[]` entry)."""

    tensor_id: int
    addr: int
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    start_offset: int
    numel: int


class TaskGraph:
    """Builds tasks one submission at a time (host or device orchestrator), tracking deps.

    `record_details=True` keeps per-argument info and every edge for `deps.json`.
    """

    def __init__(self, kernels: dict[str, Any], external: list[np.ndarray] = (),
                 record_details: bool = False, ring: int = 0) -> None:
        self.kernels = kernels
        self.tasks: list[DeviceTask] = []
        self.ring = ring
        self.record_details = record_details
        # keyed by id() of each buffer's root array: an ndarray is unhashable, and the roots
        # stay alive (the tensors hold them) for as long as the graph is being built
        self._regions: dict[int, list[_Region]] = {}
        self._external_roots = {id(_root(a)) for a in external if isinstance(a, np.ndarray)}
        # deps.json detail (only filled when record_details)
        self.edges: list[DepEdge] = []
        self.task_args: list[list[dict]] = []
        self.tensors: list[TensorInfo] = []
        self._tensor_index: dict[tuple, int] = {}
        self._id_seed = random.getrandbits(64)

    def submit(self, call: Any) -> DeviceTask:
        """Add one `TaskCall`; returns the task with its predecessors resolved."""
        idx = len(self.tasks)
        kernel = self.kernels.get(call.kernel)
        if kernel is None:
            raise CompileError(f"task {idx} calls unknown kernel {call.kernel!r}")
        params = kernel.params
        args = list(call.args)
        if len(args) != len(params):
            raise CompileError(f"task {idx} calls kernel {kernel.name!r} with {len(args)} "
                               f"arguments; it takes {len(params)}")
        if kernel.core_type not in CORE_TYPES:
            raise CompileError(f"kernel {kernel.name!r} has core type {kernel.core_type!r}; "
                               f"expected one of {CORE_TYPES}")
        task = DeviceTask(idx, task_id_of(idx, self.ring), kernel.name, kernel.func_id,
                          kernel.core_type, kernel.fn, args,
                          timing_slot=getattr(call, "timing_slot", None))
        preds: dict[int, None] = {}
        details = [] if self.record_details else None
        for i, (arg, p) in enumerate(zip(args, params)):
            d = p.direction
            if d == "scalar":
                if isinstance(arg, np.ndarray):
                    raise CompileError(f"task {idx} ({kernel.name}): argument {i} ({p.name}) is "
                                       "a scalar parameter but got an array")
                continue
            if not isinstance(arg, np.ndarray):
                raise CompileError(f"task {idx} ({kernel.name}): argument {i} ({p.name}) must "
                                   f"be an array, got {type(arg).__name__}")
            self._access(idx, i, arg, d in READ_DIRS, d in WRITE_DIRS, preds, details)
        for pr in preds:
            task.preds.append(pr)
        self.tasks.append(task)
        if details is not None:
            self.task_args.append(details)
        return task

    # -- dependency tracking ---------------------------------------------------------------
    def _access(self, idx: int, argi: int, arr: np.ndarray, reads: bool, writes: bool,
                preds: dict[int, None], details: list | None) -> None:
        root = _root(arr)
        if arr.flags.c_contiguous:
            lo = arr.__array_interface__["data"][0]
            hi = lo + arr.nbytes
        else:
            lo, hi = _byte_bounds(arr)
        regions = self._regions.get(id(root))
        if regions is None:
            regions = self._regions[id(root)] = []
        created = writes and not reads and not regions and id(root) not in self._external_roots
        exact = None
        touched: list[_Region] = []
        for r in regions:
            if r.lo < hi and lo < r.hi:
                touched.append(r)
                if r.lo == lo and r.hi == hi:
                    exact = r
        for r in touched:
            if reads and r.writer >= 0 and r.writer != idx:
                preds[r.writer] = None
                if details is not None:
                    self._edge(r.writer, idx, argi, "raw", r, arr, lo, hi)
            if writes:
                if r.writer >= 0 and r.writer != idx and r.writer not in preds:
                    preds[r.writer] = None
                    if details is not None:
                        self._edge(r.writer, idx, argi, "waw", r, arr, lo, hi)
                for rd in r.readers:
                    if rd != idx and rd not in preds:
                        preds[rd] = None
                        if details is not None:
                            self._edge(rd, idx, argi, "war", r, arr, lo, hi)
        if writes:
            regions[:] = [r for r in regions if not (lo <= r.lo and r.hi <= hi)]
            regions.append(_Region(lo, hi, idx, created, []))
        elif exact is not None:
            exact.readers.append(idx)
        else:
            regions.append(_Region(lo, hi, -1, False, [idx]))
        if details is not None:
            if reads and writes:
                kind = "INOUT"
            elif reads:
                kind = "INPUT"
            else:
                kind = "OUTPUT" if created else "OUTPUT_EXISTING"
            entry: dict[str, Any] = {"idx": argi, "type": kind}
            t = self._tensor(arr, root, lo, hi)
            if kind != "OUTPUT":
                info = self.tensors[t]
                entry.update({"tensor_id": str(info.tensor_id), "dtype": simpler_dtype(info.dtype),
                              "shape": list(info.shape), "start_offset": str(info.start_offset),
                              "strides": list(info.strides)})
            entry["_tensor"] = t
            details.append(entry)

    def _edge(self, pred: int, succ: int, argi: int, kind: str, region: _Region,
              arr: np.ndarray, lo: int, hi: int) -> None:
        source = "creator" if (kind == "raw" and region.created
                               and region.lo == lo and region.hi == hi) else "tensormap"
        t = self._tensor(arr, _root(arr), lo, hi)
        prod = self._tensor_index.get((region.lo, region.hi, self.tensors[t].dtype), t)
        covered = region.lo <= lo and hi <= region.hi
        self.edges.append(DepEdge(pred, succ, argi, kind, source, t, prod, covered))

    def _tensor(self, arr: np.ndarray, root: np.ndarray, lo: int, hi: int) -> int:
        key = (lo, hi, arr.dtype.name)
        t = self._tensor_index.get(key)
        if t is None:
            t = len(self.tensors)
            item = arr.itemsize
            root_lo = root.__array_interface__["data"][0]
            self.tensors.append(TensorInfo(
                _mix64(self._id_seed + t), lo, arr.dtype.name, tuple(arr.shape),
                tuple(s // item for s in arr.strides), (lo - root_lo) // item, int(arr.size)))
            self._tensor_index[key] = t
        return t

    def link_successors(self, task: DeviceTask) -> int:
        """Register `task` as successor of its unfinished preds; returns how many it waits on.

        Call with the device lock held when tasks may be finishing concurrently."""
        n = 0
        tasks = self.tasks
        for p in task.preds:
            pt = tasks[p]
            if not pt.done:
                pt.succs.append(task.index)
                n += 1
        task.pending = n
        return n


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


_SIMPLER_DTYPES = {"float32": "FLOAT32", "float16": "FLOAT16", "float64": "FLOAT64",
                   "int32": "INT32", "int64": "INT64", "int16": "INT16", "int8": "INT8",
                   "uint8": "UINT8", "bool": "BOOL"}


def simpler_dtype(name: str) -> str:
    return _SIMPLER_DTYPES.get(name, name.upper())


def _mix64(x: int) -> int:
    """splitmix64: well-spread 64-bit tensor ids, like Simpler's."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)
