"""The neutral timeline model: every merge source is turned into this, every exporter renders it.

Times are nanoseconds on one axis (host CLOCK_MONOTONIC of the reference host, or an
explicit, labelled estimate). Uids are unique within one Timeline, so sources never collide.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Process:
    """One process track: a real OS process, or a device view such as "Device r0 · AICore"."""

    uid: int
    name: str
    sort_index: int
    os_pid: int | None = None
    args: dict = field(default_factory=dict)
    estimated: bool = False


@dataclass(slots=True, eq=False)
class Track:
    """One lane inside a process: a host thread (os_tid set) or a hardware lane (os_tid None)."""

    uid: int
    process: Process
    name: str
    sort_index: int
    os_tid: int | None = None


@dataclass(slots=True, eq=False)
class Slice:
    """A span of time on one track; slices of one track must nest properly."""

    track: Track
    name: str
    ts_ns: float
    dur_ns: float
    cat: str = ""
    args: dict | None = None


@dataclass(slots=True, eq=False)
class Flow:
    """An arrow from the end of `src` to the start of `dst`."""

    id: int
    src: Slice
    dst: Slice
    name: str = "flow"


class Timeline:
    """Processes, tracks, slices and flows of one merged view, plus metadata and warnings."""

    def __init__(self) -> None:
        self.processes: list[Process] = []
        self.tracks: list[Track] = []
        self.slices: list[Slice] = []
        self.flows: list[Flow] = []
        self.metadata: dict = {}
        self.warnings: list[str] = []
        self._uids = itertools.count(1)
        self._flow_ids = itertools.count(1)

    def add_process(self, name: str, *, sort_index: int | None = None, os_pid: int | None = None,
                    args: dict | None = None, estimated: bool = False) -> Process:
        proc = Process(next(self._uids), name,
                       len(self.processes) if sort_index is None else sort_index,
                       os_pid, dict(args or {}), estimated)
        self.processes.append(proc)
        return proc

    def add_track(self, process: Process, name: str, *, sort_index: int | None = None,
                  os_tid: int | None = None) -> Track:
        if sort_index is None:
            sort_index = sum(1 for t in self.tracks if t.process is process)
        track = Track(next(self._uids), process, name, sort_index, os_tid)
        self.tracks.append(track)
        return track

    def add_slice(self, track: Track, name: str, ts_ns: float, dur_ns: float, cat: str = "",
                  args: dict | None = None) -> Slice:
        s = Slice(track, name, ts_ns, dur_ns, cat, args)
        self.slices.append(s)
        return s

    def add_flow(self, src: Slice, dst: Slice, name: str = "flow") -> Flow:
        f = Flow(next(self._flow_ids), src, dst, name)
        self.flows.append(f)
        return f

    def warn(self, message: str) -> None:
        self.warnings.append(message)
