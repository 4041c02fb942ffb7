"""What the layout steps share: a `TimelineBuilder` that creates processes and tracks once,
with their final ids (the real OS pid / native tid where free, else a fresh id that collides
with no real one; all sources are read before layout, so every real id is known), and the
host rows collected from every host-clock source before they become blocks."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.timeline.model import Process, SliceBlock, Timeline, Track
from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.place.plan import CapturePlan, DeviceClock, Plan

SEP = " · "
# a capture's processes in the order the work flows: the host's submits and uploads, the
# cores, the schedulers, the device orchestrator, then views made from them
FLOW_PARTS = ("host", "AICore", "AICPU scheduler", "AICore scheduler", "Orchestrator",
              "Scheduler view", "AICPU lifecycle", "Simpler", "Critical path")
KERNEL_CODEGEN_PREFIX = "kernel_codegen:"
CLOCK = "CLOCK_MONOTONIC"


# --------------------------------------------------------------------------- ids and rows

class _Ids:
    """Process and thread ids: real ones where they are free, fresh ones never colliding
    with any real id of any source (all sources are read before layout)."""

    def __init__(self, real: set[int]):
        self.real = real
        self.taken: set[int] = set()
        self.next = 1

    def fresh(self) -> int:
        while self.next in self.real or self.next in self.taken:
            self.next += 1
        self.taken.add(self.next)
        return self.next

    def claim(self, real_id: int) -> int | None:
        """`real_id` if no other process/thread has it yet, else None."""
        if real_id in self.taken:
            return None
        self.taken.add(real_id)
        return real_id


@dataclass(slots=True)
class _HostRows:
    """Slices bound for real threads, collected from every host-clock source, so that
    nesting is checked across sources (a run log's spans on the compile thread)."""

    track: list[Track] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    args: list[dict | None] = field(default_factory=list)

    def add(self, track: Track, start: int, end: int, name: str, cat: str,
            args: dict | None) -> None:
        self.track.append(track)
        self.start.append(start)
        self.end.append(end)
        self.name.append(name)
        self.cat.append(cat)
        self.args.append(args)


class TimelineBuilder:
    """Processes and tracks with final ids and names, in display order."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.tl = Timeline()
        real: set[int] = set()
        for trace, _ in plan.traces:
            real.update(trace.pid)
            real.update(trace.tid)
        for capture_plan in plan.captures:
            log = capture_plan.capture.run_log
            if log is not None:
                real.update(np.unique(np.concatenate([log.pid, log.tid])).tolist())
            for batch in capture_plan.capture.host_phases:
                real.add(batch.pid)
                real.update(batch.tid[batch.tid >= 0].tolist())
        self.ids = _Ids(real)
        self.host_rows = _HostRows()
        self.host_procs: dict[tuple[str | None, int], Process] = {}   # (host, os pid)
        self.threads: dict[tuple[int, int], Track] = {}               # (process pid, os tid)
        self.summary: list[str] = []
        self.kernel_lines: list[str] = []   # a line per kernel of every capture
        self.sources: list[dict] = []
        self.codegen_rows: list[int] = []          # host rows of kernel_codegen:* stages
        self.host_index: dict[int, tuple[SliceBlock, int]] = {}   # host row -> block, row
        # per kernel of each capture: (kernel, its worker block, the row of each of its tasks)
        self.kernel_tasks: list[tuple[str, SliceBlock, np.ndarray]] = []
        self.order: list[Process] = []
        self._flow: dict[int, tuple[int, str]] = {}     # pid -> (capture index, part)
        self._capture_index = {c: i for i, c in enumerate(plan.captures)}

    # ---- processes and threads
    def flow_key(self, proc: Process, made: int) -> tuple[int, ...]:
        """Where `proc` goes in the display: as the work flows, host processes (the compile,
        run logs) first, then each capture in input order: its host orchestrator, then the
        device (`FLOW_PARTS`); otherwise in the order made."""
        place = self._flow.get(proc.pid)
        if place is None:
            return (0, 0, 0, made)
        capture, part = place
        return (1, capture, FLOW_PARTS.index(part), made)

    def process(self, name: str, *, os_pid: int | None = None, host: str | None = None,
                args: dict | None = None, estimated: bool = False,
                capture=None, part: str | None = None) -> Process:
        """A process named `name` (a host's real `os_pid` kept where it is free); `capture`
        (its `CapturePlan`) and `part` (one of `FLOW_PARTS`) place it in the display."""
        if os_pid is not None:
            key = (host, os_pid)
            proc = self.host_procs.get(key)
            if proc is not None:
                return proc
            pid = self.ids.claim(os_pid)
            if pid is None:           # the same pid from another host: keep them apart
                pid = self.ids.fresh()
                name = f"{name} (pid {os_pid} on {host or 'another host'})"
            proc = Process(pid, name, 0, os_pid, dict(args or {}), estimated)
            self.host_procs[key] = proc
        else:
            proc = Process(self.ids.fresh(), name, 0, None, dict(args or {}), estimated)
        self.tl.processes.append(proc)
        self.order.append(proc)
        index = self._capture_index.get(capture) if capture is not None else None
        if index is not None:
            self._flow[proc.pid] = (index, part)
        return proc

    def thread(self, proc: Process, os_tid: int, name: str, sort_index: int) -> Track:
        key = (proc.pid, os_tid)
        tr = self.threads.get(key)
        if tr is None:
            if os_tid == proc.os_pid == proc.pid:
                tid = os_tid  # a main thread: its tid is its process's pid, as on Linux
            else:
                tid = self.ids.claim(os_tid)
                if tid is None:
                    tid = self.ids.fresh()
            tr = self.threads[key] = Track(tid, proc, name, sort_index, os_tid)
            self.tl.tracks.append(tr)
        return tr

    def lane(self, proc: Process, name: str, sort_index: int) -> Track:
        tr = Track(self.ids.fresh(), proc, name, sort_index, None)
        self.tl.tracks.append(tr)
        return tr


def device_args(capture_plan: CapturePlan, dev: DeviceClock, source: str) -> dict:
    """Process args of a device view: how it was aligned, and from which file."""
    args = {"alignment": dev.describe(), "source": source}
    if capture_plan.capture.dispatch_program is not None:
        args["program"] = capture_plan.capture.dispatch_program.program
    if dev.status is not PlacementStatus.CALIBRATED:
        args["estimated"] = True
    return args
