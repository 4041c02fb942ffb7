"""How stages are recorded: one flat log per thread (`ThreadLog`), the refs that tie a
stage to its parent across logs, a `Recording` (every log of a profile with the facts the
tree builder needs), and what an exporter reads of a profile (`ProfileSource`). Written by
`profiler`, read by `stage_tree` and the exporters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pypto.compile_profiling.stage_record import StageRecord

GLOBAL_REF = 1 << 40  # refs of other logs are `log.base + position`, never below this
NO_PARENT = -1  # parent: no stage open in this context (an unwrapped pool worker)
TOP_LEVEL = -2  # parent: bound where nothing was open, or inside another profiler only

# A stage's six slots in a `ThreadLog`, as offsets from its ref; `WIDTH` slots per stage
NAME, ARGS, CAT, START, PARENT, END = range(6)
WIDTH = 6


class Inserted:
    """A finished `StageRecord` put into a thread log by `add_stage_record`."""

    __slots__ = ("parent_ref", "record")

    def __init__(self, record: StageRecord, parent_ref: int) -> None:
        self.record, self.parent_ref = record, parent_ref


class ThreadLog(list):
    """One thread's stages for one profiler, flat: six consecutive items per stage, in the
    order the stages opened: `name, args, cat, start_ns, parent, end_ns` (at the offsets
    `NAME` ... `END`; `WIDTH` = 6).

    A stage's `ref` is the position of its name. `parent` is the parent's position in this
    log, or its global ref (`log.base + position`, at least `GLOBAL_REF`) in another log, or
    NO_PARENT/TOP_LEVEL. `end_ns` is 0 until the stage closes, when it is written in place
    (args given at the close are merged into `args` there). Failures are kept apart in
    `errors` (ref -> exception type name), records inserted by `add_stage_record` in
    `inserted`. `tangled` says a stage opened or closed out of this thread's order (while
    another context's stage was the thread's innermost open one): until then the log nests
    as a stack, in opening order (what `stage_tree.plain_profile` relies on).

    Plain values, added with one `+=` of a temporary tuple and the end written in place: a
    kept begin tuple and end tuple per stage (the previous layout) cost more, each tracked by
    the garbage collector until its first collection: `with prof.stage()` cost 4.0-4.4x the
    floor with them, 2.9-3.2x with this layout (bench_overhead.py, the two alternated, four
    runs each, loaded 2-core host).
    """

    __slots__ = ("base", "errors", "inserted", "lanes", "order", "pending", "pid", "prof",
                 "tangled", "thread_name", "tid", "top")


@dataclass(frozen=True, slots=True)
class Recording:
    """A profile's thread logs as they are now, with what the tree builder needs besides:
    the profiler's pid, the thread that entered it (unbound pool work nests under that
    thread's open stage) and when the profile ended (None while it runs)."""

    logs: list[ThreadLog]
    pid: int
    entry_tid: int
    end_ns: int | None


class ProfileSource(Protocol):
    """What the exporters (`report`, `chrome_trace`, `profile_timeline`) read of a profile;
    `CompileProfiler` is one."""

    pid: int
    process_names: dict[int, str]

    @property
    def stages(self) -> list[StageRecord]: ...

    def total_seconds_of(self, stages: list[StageRecord] | None) -> float: ...

    def recording(self) -> Recording: ...
