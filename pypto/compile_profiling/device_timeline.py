"""Put one Simpler device capture (and Simpler's host spans) onto a `Timeline`.

Call sequence (the merge step does this once per capture leaf):

    from pypto.compile_profiling import simpler_readers as sr
    from pypto.compile_profiling.device_timeline import (
        Placement, add_device_capture, add_host_log, add_merged_swimlane)

    for files in sr.discover_captures(work_dir):          # flat or rank<r>/d<k>/ leaves
        cap = sr.load_capture(files)                       # strict: raises TraceInputError
        if cap.records is not None:
            res = add_device_capture(
                timeline, cap, rank_label=files.label,     # "r0", "r1d0", or the dir name
                placement=Placement.auto(origin_host_ns, "start of device_execution"))
            # res.alignment_method / res.uncertainty_ns / res.estimated -> summary, otherData
            # res.first_task_slice_by_kernel_name["QK"] -> flow from kernel_codegen:QK
        elif files.merged_swimlanes:                       # only Simpler's converted trace
            add_merged_swimlane(timeline, sr.read_merged_swimlane(files.merged_swimlanes[0]),
                                rank_label=files.label, origin_host_ns=..., reason=...)
        if cap.host_log is not None:
            add_host_log(timeline, cap.host_log)           # [STRACE] spans, real pid/tid

Placement:
- `Placement.calibrated()`: map cycles through the capture's own clock anchors
  (clock_alignment, formats.md §2.2); raises TraceInputError if it cannot.
- `Placement.estimated(origin_host_ns, reason)`: the earliest device record is put at
  `origin_host_ns`, cycles converted at the nominal frequency; every device process gets
  " (estimated)" in its name, `estimated=True`, the reason in its args, and a warning.
- `Placement.auto(origin_host_ns, reason)`: calibrated when the anchors allow it, else
  estimated (the reason then also says why the anchors could not be used).
Host-clock streams (`host_orchestrator_phases`, `host_device_uploads`, `[STRACE]`) are
CLOCK_MONOTONIC ns and are placed exactly whatever the placement.

Layout per device/rank (names as Simpler's own converter uses them):
- "Device r0 · AICore": lanes `AIC_<core id>` / `AIV_<core id>` (Simpler numbers lanes by
  core id: with 8 AIC + 16 AIV cores the AIV lanes are AIV_8..AIV_23); a slice per AICore
  row from kernel start to end, labelled `QK(t3)` / `task(r1t7)` / `func_0_a(t0)`, with
  `_spmd` for SPMD tasks; args: task id, core, kernel id, cycles, AICPU dispatch/finish.
- "Device r0 · AICPU scheduler": lane `Sched_<thread>` per scheduler thread, one slice per
  phase, `kind(tasks_processed)`; args are the phase record itself (a compact
  `PhaseRecord` mapping for big files read in pieces: same keys and values).
- "Device r0 · Orchestrator": `Orch_<thread>` (AICPU orchestrator, device cycles) or
  `Host_<thread>` + `H2D` (host orchestrator + host_device_uploads, host ns).
- dependency flows from deps.json between the first slice of each task.
Overlapping slices on one lane (should not happen; real data is messy) are moved to a
sub-lane named `<lane> (overlap <k>)`, and a warning says how many.
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.clock_alignment import (
    ClockAnchorsUnusable,
    build_clock_mapping,
)
from pypto.compile_profiling.simpler_readers import (
    AIC_CORE,
    AIC_END,
    AIC_R2S,
    AIC_REG,
    AIC_START,
    AIC_TOKEN,
    CPU_CORE,
    CPU_DISPATCH,
    CPU_FINISH,
    CPU_REG,
    Capture,
    HostLog,
    MergedSwimlane,
    PhaseStream,
)
from pypto.compile_profiling.timeline import Process, Slice, Timeline, Track
from pypto.errors import TraceInputError

log = logging.getLogger(__name__)

SEP = " · "
ESTIMATED_SUFFIX = " (estimated)"


# --------------------------------------------------------------------------- placement

@dataclass(frozen=True, slots=True)
class Placement:
    """How device time is put on the host axis (see the module docstring)."""

    mode: str                          # "calibrated" | "estimated" | "auto"
    origin_host_ns: float | None = None
    reason: str = ""

    @classmethod
    def calibrated(cls) -> Placement:
        return cls("calibrated")

    @classmethod
    def estimated(cls, origin_host_ns: float, reason: str) -> Placement:
        return cls("estimated", float(origin_host_ns), reason)

    @classmethod
    def auto(cls, origin_host_ns: float, reason: str) -> Placement:
        return cls("auto", float(origin_host_ns), reason)


@dataclass(slots=True)
class DeviceCaptureResult:
    """What `add_device_capture` did, for the merge summary and codegen->device flows."""

    rank_label: str
    processes: list[Process]
    alignment_method: str              # e.g. "nominal_frequency_offset_interp_v1" / "estimated"
    estimated: bool
    uncertainty_ns: float | None       # None when estimated (unknown)
    alignment: dict                    # what is recorded on the process args
    counts: dict[str, int]
    first_task_slice_by_kernel_name: dict[str, Slice]
    device_window_ns: tuple[float, float] | None   # earliest start / latest end, device streams
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- labels

def task_display(task_id: int) -> str:
    """Simpler's task label: `t<local>` on ring 0, else `r<ring>t<local>`."""
    ring = (task_id >> 32) & 0xFF
    local = task_id & 0xFFFFFFFF
    return f"t{local}" if ring == 0 else f"r{ring}t{local}"


def func_letter_name(func_id: int) -> str:
    """Simpler's name for a kernel without a name-map entry: 0 -> func_0_a, 26 -> func_26_aa."""
    letters = []
    m = func_id + 1
    while m > 0:
        m, rem = divmod(m - 1, 26)
        letters.append(chr(ord("a") + rem))
    return f"func_{func_id}_{''.join(reversed(letters))}"


def kernel_base_name(func_id: int, names: dict[int, str] | None) -> str | None:
    if func_id < 0:
        return None
    if names and func_id in names:
        return names[func_id]
    return func_letter_name(func_id)


def task_label(task_id: int, func_id: int, names: dict[int, str] | None, spmd: bool) -> str:
    """`QK(t3)`, `task(r1t7)` (kernel unknown), `func_0_a(t0)`; SPMD adds `_spmd`."""
    base = kernel_base_name(func_id, names)
    if base is None:
        return f"task({task_display(task_id)})"
    if spmd and "spmd" not in base.lower():
        base += "_spmd"
    return f"{base}({task_display(task_id)})"


def resolve_func_id(kernel_ids: tuple[int, ...] | None, core_type: str) -> int:
    """deps.json kernel_ids = (aic, aiv0, aiv1): AIC cores run [0], AIV cores [1] else [2]."""
    if not kernel_ids:
        return -1
    if core_type == "aic":
        return kernel_ids[0] if kernel_ids[0] >= 0 else -1
    for k in kernel_ids[1:3]:
        if k >= 0:
            return k
    return -1


# --------------------------------------------------------------------------- lanes

class _Lanes:
    """Sub-lane assignment that keeps every track properly nested.

    Items must be offered in (start, -end) order. With `allow_nesting` a slice may sit
    inside the one before it (host spans); without, any overlap moves it (device tasks).
    """

    __slots__ = ("allow_nesting", "stacks")

    def __init__(self, allow_nesting: bool):
        self.allow_nesting = allow_nesting
        self.stacks: list[list[float]] = [[]]

    def assign(self, start: float, end: float) -> int:
        for k, stack in enumerate(self.stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or (self.allow_nesting and end <= stack[-1]):
                stack.append(end)
                return k
        self.stacks.append([end])
        return len(self.stacks) - 1


class _LaneSet:
    """A named lane plus its overlap sub-lanes, created on demand."""

    __slots__ = (
        "lanes",
        "moved",
        "name",
        "os_tid",
        "process",
        "sort_index",
        "timeline",
        "tracks",
    )

    def __init__(self, timeline: Timeline, process: Process, name: str, sort_index: int,
                 allow_nesting: bool, os_tid: int | None = None):
        self.timeline, self.process, self.name = timeline, process, name
        self.sort_index, self.os_tid = sort_index, os_tid
        self.tracks: list[Track] = []
        self.lanes = _Lanes(allow_nesting)
        self.moved = 0

    def track_for(self, start: float, end: float) -> Track:
        stack = self.lanes.stacks[0]
        if self.tracks and (not stack or stack[0] <= start):
            # Fast path: lane 0 is free (everything on it ended): the common case.
            stack.clear()
            stack.append(end)
            return self.tracks[0]
        k = self.lanes.assign(start, end)
        while len(self.tracks) <= k:
            i = len(self.tracks)
            name = self.name if i == 0 else f"{self.name} (overlap {i})"
            self.tracks.append(self.timeline.add_track(
                self.process, name, sort_index=self.sort_index * 100 + i,
                os_tid=self.os_tid if i == 0 else None))
        if k:
            self.moved += 1
        return self.tracks[k]


# --------------------------------------------------------------------------- device capture

def _alignment(capture: Capture, placement: Placement):
    """-> (to_ns(np.ndarray) -> np.ndarray, estimated, method, uncertainty, info, mapping)."""
    rec = capture.records
    meta = rec.metadata
    freq = meta.clock_freq_hz
    fallback_reason = ""
    if placement.mode in ("calibrated", "auto"):
        try:
            mapping = build_clock_mapping(meta.clock_anchors, freq,
                                          host_quantization_ns=meta.host_timestamp_quantization_ns)
        except ClockAnchorsUnusable as exc:
            if placement.mode == "calibrated":
                raise TraceInputError(rec.path, f"cannot calibrate device time: {exc.reason}") \
                    from None
            fallback_reason = f"clock anchors unusable: {exc.reason}"
        else:
            info = mapping.describe()
            return mapping.to_host_ns, False, mapping.method, mapping.uncertainty_ns, info, mapping
    elif placement.mode != "estimated":
        raise ValueError(f"unknown placement mode {placement.mode!r}")
    if placement.origin_host_ns is None:
        raise ValueError("estimated placement needs origin_host_ns")
    bounds = rec.device_cycle_bounds()
    d0 = bounds[0] if bounds else 0
    origin = placement.origin_host_ns
    scale = 1e9 / freq

    def to_ns(cycles):
        return origin + (cycles - d0).astype(np.float64) * scale

    reason = "; ".join(r for r in (placement.reason, fallback_reason) if r)
    info = {"status": "estimated", "method": "estimated_origin", "reason": reason,
            "origin_host_ns": origin, "device_origin_cycles": int(d0), "frequency_hz": freq}
    return to_ns, True, "estimated", None, info, None


def add_device_capture(timeline: Timeline, capture: Capture, *, rank_label: str,
                       placement: Placement, sort_index: int | None = None
                       ) -> DeviceCaptureResult:
    """Add one capture's AICore / scheduler / orchestrator streams and dependency flows."""
    rec = capture.records
    if rec is None:
        raise TraceInputError(capture.files.directory, "no chip_swimlane_records.json / "
                                                       "l2_swimlane_records.json to place")
    to_ns, estimated, method, uncertainty, info, mapping = _alignment(capture, placement)
    meta = rec.metadata
    warnings: list[str] = []
    counts: dict[str, int] = {}
    dev_suffix = ESTIMATED_SUFFIX if estimated else ""
    base = len(timeline.processes) if sort_index is None else sort_index
    device_args = {"alignment": info, "source": rec.path, "chip_swimlane_level": rec.level,
                   "clock_freq_hz": meta.clock_freq_hz}
    if capture.dispatch_program is not None:
        device_args["program"] = capture.dispatch_program.program
    if estimated:
        device_args["estimated"] = True
        w = (f"{rec.path}: device time of {rank_label} is ESTIMATED ({info['reason']}), "
             "not calibrated")
        warnings.append(w)
    processes: list[Process] = []

    # Anchor window check: timestamps outside it are extrapolated, not calibrated.
    if mapping is not None:
        outside = 0
        if len(rec.aicore):
            outside += int(mapping.outside_window(rec.aicore[:, AIC_START]).sum())
            outside += int(mapping.outside_window(rec.aicore[:, AIC_END]).sum())
        if len(rec.aicpu):
            outside += int(mapping.outside_window(rec.aicpu[:, CPU_DISPATCH:CPU_FINISH + 1]).sum())
        for s in (*rec.scheduler_phases, *rec.orchestrator_phases):
            if len(s):
                outside += int(mapping.outside_window(s.starts).sum())
                outside += int(mapping.outside_window(s.ends).sum())
        counts["outside_anchor_window"] = outside
        if outside:
            device_args["timestamps_outside_anchor_window"] = outside
            warnings.append(f"{rec.path}: {outside} device timestamps lie outside the clock-"
                            "anchor window; they are extrapolated, not calibrated")

    window: list[float] = []

    # ---- AICore process first (process order), its slices after the phase streams: those
    # do not need deps.json, which may still be being read by a child (`load_capture`).
    aic_proc = timeline.add_process(f"Device {rank_label}{SEP}AICore{dev_suffix}",
                                    sort_index=base, args=dict(device_args), estimated=estimated)
    processes.append(aic_proc)
    moved = 0

    # ---- AICPU scheduler
    n_sched = 0
    if any(len(s) for s in rec.scheduler_phases):
        proc = timeline.add_process(f"Device {rank_label}{SEP}AICPU scheduler{dev_suffix}",
                                    sort_index=base + 1, args=dict(device_args),
                                    estimated=estimated)
        processes.append(proc)
        for s in rec.scheduler_phases:
            if len(s):
                n_sched += len(s)
                moved += _add_phase_stream(timeline, proc, f"Sched_{s.thread}", s.thread, s,
                                           to_ns, "scheduler", _scheduler_names, window)
    counts["scheduler_phases"] = n_sched

    # ---- orchestrator (device cycles and/or host ns)
    n_orch = n_host = n_up = 0
    has_dev_orch = any(len(s) for s in rec.orchestrator_phases)
    has_host = any(len(s) for s in rec.host_orchestrator_phases) or bool(
        rec.host_device_uploads and len(rec.host_device_uploads))
    if has_dev_orch or has_host:
        args = dict(device_args) if has_dev_orch else {
            "alignment": {"status": "exact", "method": "host_monotonic_ns"}, "source": rec.path}
        if has_host and has_dev_orch:
            args["host_streams"] = "exact (host CLOCK_MONOTONIC ns)"
        proc = timeline.add_process(
            f"Device {rank_label}{SEP}Orchestrator{dev_suffix if has_dev_orch else ''}",
            sort_index=base + 2, args=args, estimated=estimated and has_dev_orch)
        processes.append(proc)
        for s in rec.orchestrator_phases:
            if len(s):
                n_orch += len(s)
                moved += _add_phase_stream(timeline, proc, f"Orch_{s.thread}", s.thread, s,
                                           to_ns, "orchestrator", _submit_names, window)
        host_ns = _host_ns
        for s in rec.host_orchestrator_phases:
            if len(s):
                n_host += len(s)
                moved += _add_phase_stream(timeline, proc, f"Host_{s.thread}", 50 + s.thread, s,
                                           host_ns, "host_orchestrator", _submit_names, None)
        up = rec.host_device_uploads
        if up is not None and len(up):
            n_up = len(up)
            moved += _add_phase_stream(timeline, proc, "H2D", 99, up, host_ns, "host_h2d",
                                       None, None)
    # ---- AICore slices
    first_by_task, first_by_kernel, n_aic, joined, unmatched, aic_moved = _add_aicore(
        timeline, aic_proc, capture, to_ns, window)
    moved += aic_moved
    counts.update(aicore_tasks=n_aic, aicpu_joined=joined, aicpu_unmatched=unmatched)
    if unmatched:
        warnings.append(f"{rec.path}: {unmatched} aicpu_tasks rows have no AICore row "
                        "(joined on core_id, reg_task_id)")

    # ---- dependency flows
    n_flows = missing = 0
    if capture.deps is not None:
        for pred, succ in capture.deps.edges:
            a, b = first_by_task.get(pred), first_by_task.get(succ)
            if a is None or b is None:
                missing += 1
                continue
            timeline.add_flow(a, b, "dependency")
            n_flows += 1
    counts["dependency_flows"] = n_flows
    counts["dependency_edges_without_slices"] = missing

    counts.update(orchestrator_phases=n_orch, host_orchestrator_phases=n_host,
                  host_device_uploads=n_up, overlaps_moved=moved)
    if moved:
        warnings.append(f"{rec.path}: {moved} overlapping slices of {rank_label} were moved "
                        "to '(overlap k)' sub-lanes")
    for w in warnings:
        timeline.warn(w)
        log.warning("%s", w)
    return DeviceCaptureResult(
        rank_label, processes, method, estimated, uncertainty, info, counts, first_by_kernel,
        (min(window[0::2]), max(window[1::2])) if window else None, warnings)


def _host_ns(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64)


def _scheduler_names(stream: PhaseStream) -> list[str]:
    """`kind(tasks_processed)`, or the kind alone; one shared string per distinct label."""
    cache: dict = {}
    out = []
    append = out.append
    for name, tp in zip(stream.names, stream.values("tasks_processed")):
        key = (name, tp)
        lab = cache.get(key)
        if lab is None:
            lab = cache[key] = f"{name}({tp})" if tp is not None else name
        append(lab)
    return out


def _submit_names(stream: PhaseStream) -> list[str]:
    """`submit(t3)` for records with a task id, else the stream's name."""
    return [f"submit({task_display(tid)})" if type(tid) is int and tid >= 0 else name
            for name, tid in zip(stream.names, stream.values("task_id"))]


def _add_phase_stream(timeline: Timeline, proc: Process, lane: str, sort_index: int,
                      stream: PhaseStream, to_ns, cat: str, namer, window) -> int:
    starts = to_ns(stream.starts)
    ends = to_ns(stream.ends)
    order = np.lexsort((-ends, starts)).tolist()
    s_l, e_l = starts.tolist(), ends.tolist()
    # Phases may contain sub-phases (a scheduler `resolve` inside `complete`): nesting is
    # kept on one lane; only partial overlaps move to a sub-lane.
    lanes = _LaneSet(timeline, proc, lane, sort_index, allow_nesting=True)
    names = namer(stream) if namer else stream.names
    recs = stream.records
    track_for = lanes.track_for
    out = []
    append = out.append
    lane0 = lanes.lanes.stacks[0]
    track0 = None
    for i in order:
        s, e = s_l[i], e_l[i]
        if track0 is not None and (not lane0 or lane0[0] <= s):
            lane0.clear()           # `_LaneSet.track_for`'s fast path, inlined
            lane0.append(e)
            track = track0
        else:
            track = track_for(s, e)
            track0 = lanes.tracks[0]
        append(Slice(track, names[i], s, e - s, cat, recs[i]))
    timeline.slices.extend(out)
    if window is not None and len(starts):
        window.extend((float(starts.min()), float(ends.max())))
    return lanes.moved


def _spmd_tasks(capture: Capture, tokens: list[int], core_types: list[str]) -> set[int]:
    """Simpler's rule: block_num > 1 in deps.json; without deps, a task with several rows
    all on one core type."""
    deps = capture.deps
    spmd = {t for t, b in deps.block_num.items() if b > 1} if deps is not None else set()
    if deps is None:
        seen: dict[int, set] = {}
        count: dict[int, int] = {}
        for tok, ct in zip(tokens, core_types):
            seen.setdefault(tok, set()).add(ct)
            count[tok] = count.get(tok, 0) + 1
        spmd |= {t for t, n in count.items() if n > 1 and len(seen[t]) == 1}
    return spmd


class _AicoreTable:
    """What the args of a capture's AICore slices are read from (see `AicoreArgs`).

    `rows[i]`: core, task id, reg_task_id, start, end, receive_to_start cycles, kernel id,
    joined AICPU row (-1: none), its dispatch and finish cycles; `ns[i]`: those two in
    host ns. One `tolist()` per slice reads them all.
    """

    __slots__ = ("core_types", "ns", "rows")

    def __init__(self, core_types: list[str]):
        self.core_types = core_types
        self.rows = np.zeros((0, 10), dtype=np.int64)
        self.ns = np.zeros((0, 2), dtype=np.float64)

    def fill(self, aicore: np.ndarray, kernel_ids: list[int], cpu_rows: list[int],
             cpu: np.ndarray, cpu_ns: np.ndarray) -> None:
        n = len(aicore)
        j = np.array(cpu_rows, dtype=np.int64)
        joined = j >= 0
        cyc = np.zeros((n, 2), dtype=np.int64)
        self.ns = np.zeros((n, 2), dtype=np.float64)
        if joined.any():
            cyc[joined] = cpu[j[joined]][:, CPU_DISPATCH:CPU_FINISH + 1]
            self.ns[joined] = cpu_ns[j[joined]]
        self.rows = np.column_stack((aicore[:, :6], np.array(kernel_ids, dtype=np.int64), j,
                                     cyc))


_AICORE_KEYS = ("task_id", "task", "core_id", "core_type", "kernel_id", "reg_task_id",
                "start_cycles", "end_cycles", "receive_to_start_cycles")
_AICPU_KEYS = ("dispatch_cycles", "finish_cycles", "dispatch_ts_ns", "finish_ts_ns")


class AicoreArgs(Mapping):
    """The args of one AICore slice, read from the capture's arrays when a trace is written.

    One dict per device task is the biggest memory item of a large merge; this holds two
    references. Keys: task id, task label, core, core type, kernel id, reg_task_id, cycles,
    and (when the AICPU row joined) dispatch/finish cycles and their host ns.
    """

    __slots__ = ("_i", "_t")

    def __init__(self, table: _AicoreTable, i: int):
        self._t, self._i = table, i

    def _joined(self) -> int:
        return int(self._t.rows[self._i, 7])

    def items(self):
        t, i = self._t, self._i
        core, tok, reg, sc, ec, r2s, kid, j, d, f = t.rows[i].tolist()
        out = [("task_id", tok), ("task", task_display(tok)), ("core_id", core),
               ("core_type", t.core_types[core]), ("kernel_id", kid),
               ("reg_task_id", reg), ("start_cycles", sc), ("end_cycles", ec),
               ("receive_to_start_cycles", r2s)]
        if j >= 0:
            dn, fn = t.ns[i].tolist()
            out += (("dispatch_cycles", d), ("finish_cycles", f), ("dispatch_ts_ns", dn),
                    ("finish_ts_ns", fn))
        return out

    def __getitem__(self, key: str):
        for k, v in self.items():
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self):
        return iter(_AICORE_KEYS + _AICPU_KEYS if self._joined() >= 0 else _AICORE_KEYS)

    def __len__(self) -> int:
        return len(_AICORE_KEYS) + (len(_AICPU_KEYS) if self._joined() >= 0 else 0)

    def __contains__(self, key: object) -> bool:
        return key in _AICORE_KEYS or (key in _AICPU_KEYS and self._joined() >= 0)

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"AicoreArgs({dict(self.items())!r})"


def _add_aicore(timeline: Timeline, proc: Process, capture: Capture, to_ns, window):
    rec = capture.records
    a = rec.aicore
    n = len(a)
    if not n:
        return {}, {}, 0, 0, len(rec.aicpu), 0
    core_types_meta = rec.metadata.core_types
    names = capture.name_map.names if capture.name_map is not None else None
    kmap = capture.deps.kernel_ids if capture.deps is not None else {}

    starts = to_ns(a[:, AIC_START])
    ends = to_ns(a[:, AIC_END])
    order = np.lexsort((-ends, starts, a[:, AIC_CORE])).tolist()
    cores = a[:, AIC_CORE].tolist()
    tokens = a[:, AIC_TOKEN].tolist()
    s_l, e_l = starts.tolist(), ends.tolist()
    ctypes = [core_types_meta[c] for c in cores]
    spmd = _spmd_tasks(capture, tokens, ctypes)

    # AICPU rows join AICore rows on (core_id, reg_task_id); the last duplicate wins.
    cpu = rec.aicpu
    cpu_ns = np.zeros((0, 2), dtype=np.float64)
    cpu_of_row = [-1] * n
    if len(cpu):
        keys = ((cpu[:, CPU_CORE] << 32) | cpu[:, CPU_REG]).tolist()
        cpu_index = dict(zip(keys, range(len(keys))))
        cpu_ns = np.column_stack((to_ns(cpu[:, CPU_DISPATCH]), to_ns(cpu[:, CPU_FINISH])))
        row_keys = ((a[:, AIC_CORE] << 32) | a[:, AIC_REG]).tolist()
        cpu_of_row = list(map(cpu_index.get, row_keys, itertools.repeat(-1)))
    matched = n - cpu_of_row.count(-1)
    kernel_of_row = [0] * n
    table = _AicoreTable(core_types_meta)
    # Big captures (read compactly) get lazy args; others plain dicts: faster to write.
    lazy = rec.compact
    if not lazy:
        regs = a[:, AIC_REG].tolist()
        sc, ec, r2s = a[:, AIC_START].tolist(), a[:, AIC_END].tolist(), a[:, AIC_R2S].tolist()
        disp_c = cpu[:, CPU_DISPATCH].tolist() if len(cpu) else []
        fin_c = cpu[:, CPU_FINISH].tolist() if len(cpu) else []
        disp_ns, fin_ns = cpu_ns[:, 0].tolist(), cpu_ns[:, 1].tolist()

    lane_sets: dict[int, _LaneSet] = {}
    # (task, core type) -> label, kernel id, kernel name; keyed by one int (no tuple per
    # task: a million tasks make a million keys).
    label_cache: dict[int, tuple[str, int, str | None]] = {}
    ct_code = {ct: k for k, ct in enumerate(dict.fromkeys(core_types_meta))}
    n_ct = max(len(ct_code), 1)
    first_by_task: dict[int, Slice] = {}
    first_by_kernel: dict[str, Slice] = {}
    out = []
    append = out.append
    last_core = lanes = lane0 = track0 = None
    for i in order:
        core = cores[i]
        ct = ctypes[i]
        if core != last_core:       # rows come sorted by core: one lane set at a time
            lanes = lane_sets.get(core)
            if lanes is None:
                lane_name = f"{ct.upper()}_{core}"
                lanes = lane_sets[core] = _LaneSet(timeline, proc, lane_name, core,
                                                   allow_nesting=False)
            last_core, lane0, track0 = core, lanes.lanes.stacks[0], None
        tok = tokens[i]
        key = tok * n_ct + ct_code[ct]
        lab = label_cache.get(key)
        if lab is None:
            fid = resolve_func_id(kmap.get(tok), ct)
            lab = label_cache[key] = (task_label(tok, fid, names, tok in spmd), fid,
                                      kernel_base_name(fid, names))
        s, e = s_l[i], e_l[i]
        kernel_of_row[i] = lab[1]
        if track0 is not None and (not lane0 or lane0[0] <= s):
            lane0.clear()           # `_LaneSet.track_for`'s fast path, inlined
            lane0.append(e)
            track = track0
        else:
            track = lanes.track_for(s, e)
            if lanes.tracks:
                track0 = lanes.tracks[0]
        if lazy:
            args = AicoreArgs(table, i)
        else:
            args = {"task_id": tok, "task": lab[0][lab[0].rfind("(") + 1:-1], "core_id": core,
                    "core_type": ct, "kernel_id": lab[1], "reg_task_id": regs[i],
                    "start_cycles": sc[i], "end_cycles": ec[i],
                    "receive_to_start_cycles": r2s[i]}
            j = cpu_of_row[i]
            if j >= 0:
                args["dispatch_cycles"] = disp_c[j]
                args["finish_cycles"] = fin_c[j]
                args["dispatch_ts_ns"] = disp_ns[j]
                args["finish_ts_ns"] = fin_ns[j]
        sl = Slice(track, lab[0], s, e - s, "aicore", args)
        append(sl)
        prev = first_by_task.get(tok)
        if prev is None or s < prev.ts_ns:
            first_by_task[tok] = sl
        kname = lab[2]
        if kname is not None:
            prev = first_by_kernel.get(kname)
            if prev is None or s < prev.ts_ns:
                first_by_kernel[kname] = sl
    if lazy:
        table.fill(a, kernel_of_row, cpu_of_row, cpu, cpu_ns)
    timeline.slices.extend(out)
    window.extend((float(starts.min()), float(ends.max())))
    if len(cpu_ns):
        window.extend((float(cpu_ns[:, 0].min()), float(cpu_ns[:, 1].max())))
    moved = sum(ls.moved for ls in lane_sets.values())
    return first_by_task, first_by_kernel, n, matched, len(cpu) - matched, moved


# --------------------------------------------------------------------------- host log

@dataclass(slots=True)
class HostLogResult:
    processes: list[Process]
    spans_added: int
    device_clock_spans_skipped: int
    overlaps_moved: int
    warnings: list[str] = field(default_factory=list)


def _find_or_add_process(timeline: Timeline, os_pid: int, name: str) -> Process:
    for p in timeline.processes:
        if p.os_pid == os_pid and not p.estimated:
            return p
    return timeline.add_process(name, os_pid=os_pid, args={"os_pid": os_pid})


def add_host_log(timeline: Timeline, host_log: HostLog, *, offset_ns: float = 0.0,
                 process_name: str = "Simpler host") -> HostLogResult:
    """Add `[STRACE]` host spans on their real pid/tid (host CLOCK_MONOTONIC ns).

    A process already in the timeline with the same OS pid (e.g. our own compile trace
    of the same run) is reused, and so is a track with the same OS tid. `offset_ns` shifts
    the spans onto another host's axis (see `clock_alignment.monotonic_offset_ns`).
    Spans tagged `clk=dev` are on a device origin, not the host clock: skipped here.
    """
    by_thread: dict[tuple[int, int], list] = {}
    skipped = 0
    for sp in host_log.spans:
        if sp.device_clock:
            skipped += 1
            continue
        by_thread.setdefault((sp.pid, sp.tid), []).append(sp)
    processes: list[Process] = []
    moved = added = 0
    for (pid, tid), spans in sorted(by_thread.items()):
        proc = _find_or_add_process(timeline, pid, f"{process_name} (pid {pid})")
        if proc not in processes:
            processes.append(proc)
        existing = next((t for t in timeline.tracks if t.process is proc and t.os_tid == tid),
                        None)
        lanes = _LaneSet(timeline, proc, existing.name if existing else f"thread {tid}",
                         existing.sort_index if existing else 0, allow_nesting=True, os_tid=tid)
        if existing is not None:
            # Respect what is already on that track so nesting holds across sources.
            lanes.tracks.append(existing)
            own = sorted(((s.ts_ns, s.ts_ns + s.dur_ns) for s in timeline.slices
                          if s.track is existing), key=lambda x: (x[0], -x[1]))
            merged = sorted([(sp.ts_ns + offset_ns, sp.ts_ns + offset_ns + sp.dur_ns, sp)
                             for sp in spans] + [(s, e, None) for s, e in own],
                            key=lambda x: (x[0], -x[1]))
        else:
            merged = sorted([(sp.ts_ns + offset_ns, sp.ts_ns + offset_ns + sp.dur_ns, sp)
                             for sp in spans], key=lambda x: (x[0], -x[1]))
        for s, e, sp in merged:
            if sp is None:
                lanes.lanes.assign(s, e)      # existing slice: occupies its place only
                continue
            args = {"pid": sp.pid, "tid": sp.tid, "depth": sp.depth, "log_line": sp.line}
            if sp.inv is not None:
                args["inv"] = sp.inv
            if sp.hid is not None:
                args["hid"] = sp.hid
            args.update(sp.attrs)
            timeline.add_slice(lanes.track_for(s, e), sp.name, s, e - s, "simpler_host", args)
            added += 1
        moved += lanes.moved
    warnings = []
    if moved:
        warnings.append(f"{host_log.path}: {moved} [STRACE] spans did not nest and were moved "
                        "to sub-lanes")
    for w in warnings:
        timeline.warn(w)
    if host_log.clock_anchors:
        timeline.metadata.setdefault("simpler_clock_anchors", []).extend(
            {"pid": a.pid, "mono_ns": a.mono_ns, "wall_ns": a.wall_ns, "source": host_log.path}
            for a in host_log.clock_anchors)
    return HostLogResult(processes, added, skipped, moved, warnings)


# --------------------------------------------------------------------------- merged swimlane

@dataclass(slots=True)
class MergedSwimlaneResult:
    processes: list[Process]
    slices: int
    flows: int
    counters_skipped: int
    flows_unbound: int
    warnings: list[str] = field(default_factory=list)


def add_merged_swimlane(timeline: Timeline, merged: MergedSwimlane, *, rank_label: str,
                        origin_host_ns: float, reason: str,
                        sort_index: int | None = None) -> MergedSwimlaneResult:
    """Add Simpler's converted trace as an ESTIMATED source, keeping its views and lanes.

    Its timestamps are µs from the capture's own origin: origin -> `origin_host_ns`. Its
    small fixed pids are views; each becomes "Device <rank> · Simpler <view> (estimated)".
    Counter events have no place in the timeline model and are skipped (counted).
    """
    proc_names: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    xs: dict[tuple[int, int], list] = {}
    flow_events: list[dict] = []
    counters = 0
    for ev in merged.events:
        ph = ev["ph"]
        if ph == "X":
            xs.setdefault((ev.get("pid", 0), ev.get("tid", 0)), []).append(ev)
        elif ph in ("s", "f", "t"):
            flow_events.append(ev)
        elif ph == "M":
            args = ev.get("args") or {}
            key = (ev.get("pid", 0), ev.get("tid", 0))
            if ev.get("name") == "process_name":
                proc_names[key[0]] = str(args.get("name", ""))
            elif ev.get("name") == "thread_name":
                thread_names[key] = str(args.get("name", ""))
            elif ev.get("name") == "thread_sort_index" and type(args.get("sort_index")) is int:
                thread_sort[key] = args["sort_index"]
        elif ph == "C":
            counters += 1
    base = len(timeline.processes) if sort_index is None else sort_index
    args = {"source": merged.path, "estimated": True, "reason": reason,
            "alignment": {"status": "estimated", "method": "estimated_origin",
                          "origin_host_ns": origin_host_ns, "reason": reason}}
    if merged.metadata:
        args["simpler_metadata"] = merged.metadata
    procs: dict[int, Process] = {}
    processes = []
    for pid in sorted({k[0] for k in xs} | set(proc_names)):
        view = proc_names.get(pid) or f"view {pid}"
        procs[pid] = timeline.add_process(
            f"Device {rank_label}{SEP}Simpler {view}{ESTIMATED_SUFFIX}",
            sort_index=base + pid, args=dict(args, simpler_pid=pid), estimated=True)
        processes.append(procs[pid])
    by_event_id: dict[int, Slice] = {}
    per_track: dict[tuple[int, int], tuple[list[float], list[Slice]]] = {}
    moved = n = 0
    for key in sorted(xs):
        pid, tid = key
        evs = sorted(xs[key], key=lambda ev: (ev["ts"], -ev.get("dur", 0)))
        name = thread_names.get(key) or f"tid {tid}"
        lanes = _LaneSet(timeline, procs[pid], name, thread_sort.get(key, tid),
                         allow_nesting=True)
        starts, slices = [], []
        for ev in evs:
            s = origin_host_ns + ev["ts"] * 1000.0
            d = ev.get("dur", 0) * 1000.0
            sl = timeline.add_slice(lanes.track_for(s, s + d), str(ev.get("name", "")), s, d,
                                    str(ev.get("cat", "")), ev.get("args"))
            starts.append(s)
            slices.append(sl)
            if type(ev.get("id")) is int:
                by_event_id[ev["id"]] = sl
            n += 1
        per_track[key] = (starts, slices)
        moved += lanes.moved

    def bound(ev) -> Slice | None:
        b = ev.get("bind_id")
        if type(b) is int and b in by_event_id:
            return by_event_id[b]
        starts, slices = per_track.get((ev.get("pid", 0), ev.get("tid", 0)), ([], []))
        ts = origin_host_ns + ev["ts"] * 1000.0
        i = bisect.bisect_right(starts, ts + 1e-3) - 1
        while i >= 0:
            sl = slices[i]
            if sl.ts_ns <= ts + 1e-3 and ts <= sl.ts_ns + sl.dur_ns + 1e-3:
                return sl
            i -= 1
            if i >= 0 and starts[i] + 1e12 < ts:  # far enough back: give up
                break
        return None

    ends: dict[object, list] = {}
    for ev in flow_events:
        ends.setdefault((ev.get("id"), ev.get("cat"), ev.get("name")), [None, None])[
            0 if ev["ph"] == "s" else 1] = ev
    flows = unbound = 0
    for (fid, _cat, fname), (s_ev, f_ev) in ends.items():
        if s_ev is None or f_ev is None:
            unbound += 1
            continue
        a, b = bound(s_ev), bound(f_ev)
        if a is None or b is None:
            unbound += 1
            continue
        timeline.add_flow(a, b, str(fname or "flow"))
        flows += 1
    warnings = [(f"{merged.path}: Simpler's converted trace placed at an ESTIMATED origin "
                 f"({reason})")]
    if moved:
        warnings.append(f"{merged.path}: {moved} slices did not nest and were moved to "
                        "sub-lanes")
    if unbound:
        warnings.append(f"{merged.path}: {unbound} flow events could not be bound to a slice")
    for w in warnings:
        timeline.warn(w)
    return MergedSwimlaneResult(processes, n, flows, counters, unbound, warnings)
