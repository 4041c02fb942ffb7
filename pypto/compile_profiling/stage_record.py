"""What a recorded stage is once the tree is built: `StageRecord`, upstream's type, on the
floor the profiler, its tree builder, reports and traces share, so none of them imports the
profiler."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

_pc = time.perf_counter_ns


@dataclass(slots=True)
class StageRecord:
    """One timed stage. `start`/`end` are `time.perf_counter()` seconds; `end == 0` means open.

    The fields after `children` say who ran the stage and on which clock: `start_ns`/`end_ns`
    are `time.perf_counter_ns()` (Linux CLOCK_MONOTONIC), `pid`/`tid` the OS process and
    native thread id. `lane` is "" for the thread itself, else the key of a lane under the
    thread (e.g. "task:3" for an asyncio task) named `lane_name` ("MainThread · Task-3 (main)").
    `out_of_order`: closed while a stage opened after it in the same context was still open
    (e.g. by a generator resumed later); `interrupted`: never closed by its own code (an
    interrupt hit the profiler's bookkeeping, or the code abandoned it), closed by the profiler
    when its parent or the profile ended.
    """

    name: str
    start: float
    end: float = 0.0
    children: list[StageRecord] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0
    pid: int = 0
    tid: int = 0
    thread_name: str = ""
    cat: str = ""
    args: dict | None = None
    error: str | None = None
    out_of_order: bool = False
    interrupted: bool = False
    lane: str = ""
    lane_name: str = ""

    def __post_init__(self) -> None:
        if not self.start_ns and self.start:
            self.start_ns = round(self.start * 1e9)
        if not self.end_ns and self.end:
            self.end_ns = round(self.end * 1e9)
        if not self.pid:
            self.pid = os.getpid()
        if not self.tid:
            self.tid = threading.get_native_id()
            self.thread_name = self.thread_name or threading.current_thread().name

    @property
    def is_open(self) -> bool:
        return self.end <= 0

    @property
    def duration(self) -> float:
        """Seconds; an open stage measures up to now; never negative."""
        end = self.end if self.end > 0 else time.perf_counter()
        return max(0.0, end - self.start)

    @property
    def duration_ns(self) -> int:
        end = self.end_ns if self.end > 0 else _pc()
        return max(0, end - self.start_ns)

    def to_dict(self) -> dict[str, Any]:
        """`{"name", "seconds", "children", ...}`; built without recursion (any depth)."""
        root = _record_fields(self)
        stack = [(self, root)]
        while stack:
            rec, out = stack.pop()
            kids = out["children"]
            for child in rec.children:
                d = _record_fields(child)
                kids.append(d)
                if child.children:
                    stack.append((child, d))
        return root


def _record_fields(rec: StageRecord) -> dict[str, Any]:
    is_open = rec.is_open
    d: dict[str, Any] = {
        "name": rec.name,
        "seconds": round(rec.duration, 6),
        "children": [],
        "start_ns": rec.start_ns,
        "end_ns": None if is_open else rec.end_ns,
        "pid": rec.pid,
        "tid": rec.tid,
        "thread_name": rec.thread_name,
        "cat": rec.cat,
    }
    if rec.args:
        d["args"] = rec.args
    if rec.error is not None:
        d["error"] = rec.error
    if is_open:
        d["open"] = True
    if rec.out_of_order:
        d["out_of_order"] = True
    if rec.interrupted:
        d["interrupted"] = True
    if rec.lane:
        d["lane"] = rec.lane
        d["lane_name"] = rec.lane_name
    return d


def lane_display_name(thread_name: str, lane_label: str) -> str:
    """How a lane under a thread is named in traces: "MainThread · Task-3 (main)"."""
    return f"{thread_name} · {lane_label}"
