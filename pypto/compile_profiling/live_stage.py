"""A stage while it is recorded: the short-lived `LiveStage` handle that `stage()` yields
(a `StageRecord`-compatible view of its six slots in the thread log), the chain of open
stages of the running context (a `ContextVar`, so asyncio tasks never nest in each other),
and the asyncio task lane given to a stage that interleaved with another context."""

from __future__ import annotations

import contextvars
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any

from pypto.compile_profiling.stage_log import (
    ARGS,
    CAT,
    END,
    NO_PARENT,
    START,
    TOP_LEVEL,
    ThreadLog,
)
from pypto.compile_profiling.stage_record import StageRecord

if TYPE_CHECKING:
    from typing_extensions import Self

_pc = time.perf_counter_ns


class LiveStage:
    """One stage as it is recorded: what `with prof.stage(...) as rec` yields and what
    `_begin_stage` returns. It answers like a `StageRecord` (`name`, `start`, `end`,
    `duration`, `children`, `to_dict()`, ...); what needs the whole profile (`children`,
    `to_dict`) is computed on access.

    The handle itself is short-lived: the thread log keeps plain values (which the garbage
    collector never tracks), so a long profile does not fill the collector's generations
    with live objects: recording 200,000 stages cost 8.3x the floor per stage with the
    handles kept in the log, 5.5x with tuples (one run of the same loop, loaded host).
    `ref` is the stage's position in its log (see `ThreadLog`), `parent` the innermost open
    stage of the same context when this one opened; name, args, start time and error are read
    from the log.
    """

    __slots__ = ("end_ns", "log", "parent", "ref")

    # -- the `with` protocol (hot path) ----------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, et, ev, tb) -> None:
        end = _pc()
        self.end_ns = end
        log = self.log
        log[self.ref + END] = end
        if et is not None:
            log.errors[self.ref] = et.__name__
        if log.top is self:
            log.top = self.parent
            if log.pending and self.ref in log.pending:
                note_interleaving(self)
        else:  # another context's stage opened on this thread meanwhile
            log.tangled = True
            note_interleaving(self)

    # -- StageRecord-compatible view ---------------------------------------------------------
    @property
    def name(self) -> str:
        return self.log[self.ref]

    @property
    def args(self) -> dict | None:
        return self.log[self.ref + ARGS]

    @property
    def cat(self) -> str:
        return self.log[self.ref + CAT] or ""

    @property
    def start_ns(self) -> int:
        return self.log[self.ref + START]

    @property
    def start(self) -> float:
        return self.start_ns / 1e9

    @property
    def end(self) -> float:
        return self.end_ns / 1e9

    @property
    def is_open(self) -> bool:
        return not self.end_ns

    @property
    def duration_ns(self) -> int:
        return max(0, (self.end_ns or _pc()) - self.start_ns)

    @property
    def duration(self) -> float:
        """Seconds; an open stage measures up to now; never negative."""
        return self.duration_ns / 1e9

    @property
    def error(self) -> str | None:
        return self.log.errors.get(self.ref)

    @property
    def pid(self) -> int:
        return self.log.pid

    @property
    def tid(self) -> int:
        return self.log.tid

    @property
    def thread_name(self) -> str:
        return self.log.thread_name

    @property
    def lane(self) -> tuple[str, str] | None:
        """(lane key, task label) when this stage ran in an asyncio task that interleaved."""
        return self.log.lanes.get(self.ref)

    def record(self) -> StageRecord:
        """This stage as a `StageRecord`, with its children (builds the profile's tree)."""
        return self.log.prof._record_of(self)

    @property
    def children(self) -> list[StageRecord]:
        return self.record().children

    def to_dict(self) -> dict[str, Any]:
        return self.record().to_dict()

    def __repr__(self) -> str:
        if self.log.prof is None:
            return "<LiveStage (bound root)>"
        state = "open" if self.is_open else f"{self.duration * 1e3:.3f} ms"
        return f"<LiveStage {self.name!r} {state}>"


# The innermost stage of the running context (any profiler's), or None. Module-level, as the
# contextvars documentation asks. A closed stage may linger there: the next stage skips up
# to the nearest open ancestor (cheaper than restoring the variable at every close).
open_stage: contextvars.ContextVar[LiveStage | None] = contextvars.ContextVar(
    "pypto_open_stage", default=None)
open_get, open_set = open_stage.get, open_stage.set

_ROOT_LOG = ThreadLog(("(bound root)", None, None, 0, NO_PARENT, 0))
_ROOT_LOG.base, _ROOT_LOG.prof, _ROOT_LOG.lanes, _ROOT_LOG.errors = 0, None, {}, {}
BOUND_ROOT = LiveStage()  # what work bound where nothing was open sees as its parent
BOUND_ROOT.log, BOUND_ROOT.parent, BOUND_ROOT.end_ns, BOUND_ROOT.ref = _ROOT_LOG, None, 0, 0


def open_ancestor(stage: LiveStage | None) -> LiveStage | None:
    """`stage` or its nearest ancestor that is still open."""
    while stage is not None and stage.end_ns:
        stage = stage.parent
    return stage


def parent_ref(prof: object, parent: LiveStage) -> int:
    """The global ref of `parent` or of its nearest ancestor in `prof`'s profile, else
    TOP_LEVEL."""
    while parent is not None:
        if parent.log.prof is prof and not parent.end_ns:
            return parent.log.base + parent.ref
        parent = parent.parent
    return TOP_LEVEL


_task_lanes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def note_interleaving(stage: LiveStage) -> None:
    """Give `stage` the lane of the asyncio task it runs in, if any (the rare path)."""
    log = stage.log
    if log.pending:
        log.pending.discard(stage.ref)
    if stage.ref in log.lanes:
        return
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop in this thread
        return
    if task is None:
        return
    lane = _task_lanes.get(task)
    if lane is None:
        coro = task.get_coro()
        coro_name = getattr(coro, "__qualname__", None) or type(coro).__name__
        label = task.get_name()
        if coro_name and coro_name != label:
            label = f"{label} ({coro_name})"
        lane = _task_lanes[task] = (f"task:{len(_task_lanes) + 1}:{id(task):x}", label)
    log.lanes[stage.ref] = lane
