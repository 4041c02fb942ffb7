"""The compile profiler: nested, thread- and task-aware stages on the host CLOCK_MONOTONIC clock.

Recording is kept small. Each stage is six plain items in a flat log of its thread (found
through a thread-local, so the hot path takes no lock; see `ThreadLog`) and a short-lived
`LiveStage`, the handle `stage()` yields and `_begin_stage` returns. Which stage a new one
nests under is the innermost open stage *of the running context*, kept in a `ContextVar`:
each asyncio task (and anything else run with its own `contextvars.Context`) has its own
chain, so tasks that interleave on one thread never nest inside each other. The stage tree, with process and thread ids, is built only when
somebody asks for it (report, trace, summary): see `stage_tree.py`.

Per thread the log also tracks its innermost open stage in thread order (`log.top`). A stage
whose context chain disagrees with it when it opens or closes has interleaved with another
context; only then is the asyncio task looked up (it costs more than a stage), and the stage
is given that task's lane (`LiveStage.lane`): trace exporters draw it on a lane of its own
under the thread.
"""

from __future__ import annotations

import atexit
import contextvars
import itertools
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pypto.compile_profiling.live_stage import (
    BOUND_ROOT,
    LiveStage,
    note_interleaving,
    open_ancestor,
    open_get,
    open_set,
    open_stage,
    parent_ref,
)
from pypto.compile_profiling.stage_log import (
    ARGS,
    END,
    GLOBAL_REF,
    NO_PARENT,
    Inserted,
    Recording,
    ThreadLog,
)
from pypto.compile_profiling.stage_record import StageRecord
from pypto.compile_profiling.stage_tree import build_stage_tree

if TYPE_CHECKING:
    from typing_extensions import Self

_pc = time.perf_counter_ns

ENV_VAR = "PYPTO_COMPILE_PROFILING"
ENV_DIR_VAR = "PYPTO_COMPILE_PROFILING_DIR"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}

F = TypeVar("F", bound=Callable[..., Any])


class _ProfilerTLS(threading.local):
    log: ThreadLog | None = None


_log_ids = itertools.count(1)


_profilers: weakref.WeakSet = weakref.WeakSet()


class _ThreadsAndForks:
    """A profiler across threads and processes: `bind` carries it onto pool workers, and a
    forked child's copy starts logs of its own (a part of `CompileProfiler`)."""

    def bind(self, fn: F) -> F:
        """Wrap `fn` so that, on any thread, this profiler is current and its stages nest
        under the stage open here and now (use for thread-pool workers)."""
        parent = open_ancestor(open_get())
        anchor = BOUND_ROOT if parent is None else parent
        prof = self

        def bound(*a: Any, **kw: Any) -> Any:
            active_token = _active.set(prof)
            stage_token = open_set(anchor)
            try:
                return fn(*a, **kw)
            finally:
                try:
                    open_stage.reset(stage_token)
                except (ValueError, RuntimeError):
                    open_set(None)
                _active.reset(active_token)

        bound.__wrapped__ = fn  # type: ignore[attr-defined]
        bound.__name__ = getattr(fn, "__name__", "bound")
        return bound  # type: ignore[return-value]

    # -- fork ------------------------------------------------------------------------------
    def _after_fork_in_child(self) -> None:
        """The child's copy records under the child's pid, into logs of its own: none of the
        parent's stages (finished, or open at the fork and never closed here) is the child's
        to report, and a running profile's span starts again at the fork."""
        parent_pid = self.pid
        self.pid = os.getpid()
        self._logs_lock = threading.Lock()
        self._logs = []
        self._tls.log = None
        if self._total_end > 0:  # the parent's profile had ended: the child's is unentered
            self._total_start = self._total_end = 0.0
        elif self._total_start > 0:
            self._total_start = time.perf_counter()
        self._entry_tid = threading.get_native_id()
        self.process_names.setdefault(self.pid, f"PyPTO compile (fork of {parent_pid})")


class _ProfileResults:
    """What a profiler recorded, read back: the stage records, totals, and the reports and
    traces written from them (a part of `CompileProfiler`)."""

    def recording(self) -> Recording:
        """Every thread's log as it is now, with what the tree builder needs besides."""
        with self._logs_lock:
            logs = list(self._logs)
        end_ns = round(self._total_end * 1e9) if self._total_end > 0 else None
        return Recording(logs, self.pid, self._entry_tid, end_ns)

    @property
    def stages(self) -> list[StageRecord]:
        """The top-level stages, with children, built from all threads' logs."""
        return build_stage_tree(self.recording())

    def _record_of(self, stage: LiveStage) -> StageRecord:
        found: dict[int, StageRecord] = {}
        build_stage_tree(self.recording(), records=found)
        return found[stage.log.base + stage.ref]  # keyed by global ref

    @property
    def total_seconds(self) -> float:
        return self.total_seconds_of(None)

    def total_seconds_of(self, stages: list[StageRecord] | None) -> float:
        """`total_seconds`, given the stage tree when the caller has already built it (a
        profiler that was never entered sums its top-level stages)."""
        if self._total_end > 0:
            return self._total_end - self._total_start
        if self._total_start > 0:
            return time.perf_counter() - self._total_start
        return sum(s.duration for s in (self.stages if stages is None else stages))

    def to_dict(self) -> dict[str, Any]:
        """The profile as a dict: `total_seconds` and nested `stages` (name/seconds/children)."""
        from pypto.compile_profiling.report import profile_dict

        return profile_dict(self, self.stages)

    def to_json(self, path: str | os.PathLike | None = None, indent: int | None = 2) -> str:
        """The profile as JSON text; also written (atomically) to `path` when given."""
        from pypto.compile_profiling.foundation.atomic_io import atomic_write_text
        from pypto.compile_profiling.report import json_text

        text = json_text(self.to_dict(), indent=indent)
        if path is not None:
            atomic_write_text(path, text + "\n")
        return text

    def summary(self) -> str:
        """Human-readable hierarchical summary (the `pipeline_profile.txt` layout)."""
        from pypto.compile_profiling.report import format_summary

        stages = self.stages
        return format_summary(stages, self.total_seconds_of(stages))

    def to_chrome_trace(self, path: str | os.PathLike | None = None) -> dict:
        """The profile as a Chrome-trace dict; also written (atomically) to `path` when given."""
        from pypto.compile_profiling.chrome_trace import profile_trace, write_chrome_trace

        if path is not None:
            return write_chrome_trace(self, path)
        return profile_trace(self)

    def to_perfetto(self, path: str | os.PathLike) -> None:
        """Write the profile as a native Perfetto protobuf trace (`.pftrace`)."""
        from pypto.compile_profiling.profile_timeline import write_profile_perfetto

        write_profile_perfetto(self, path)

    def write_report(self, report_dir: str | os.PathLike) -> None:
        """Write `pipeline_profile.txt`, `pipeline_profile.json` and `trace.json` to
        `report_dir`, all or nothing (see `report.write_report`)."""
        from pypto.compile_profiling.report import write_report

        write_report(self, report_dir)


class CompileProfiler(_ThreadsAndForks, _ProfileResults):
    """Hierarchical wall-clock profiler for the PyPTO pipeline (upstream-compatible API).

    `CompileProfiler.current()` is the innermost active profiler of this thread.
    """

    def __init__(self) -> None:
        self._tls = _ProfilerTLS()
        self._logs: list[ThreadLog] = []
        self._logs_lock = threading.Lock()
        self._tokens: list[contextvars.Token] = []
        self._total_start: float = 0.0
        self._total_end: float = 0.0
        self.pid = os.getpid()
        self._from_environment = False     # the process-wide profiler of PYPTO_COMPILE_PROFILING
        self.process_names: dict[int, str] = {self.pid: "PyPTO compile"}
        # Stages opened on a thread with no open stage of its own (an unwrapped pool worker)
        # nest under the innermost open stage of this thread, the one that entered.
        self._entry_tid = threading.get_native_id()
        _profilers.add(self)
        from pypto.compile_profiling.import_stages import install

        install(get_active_profiler)  # imports while profiling: stages (import_stages)

    # -- activation ----------------------------------------------------------------------
    def __enter__(self) -> Self:
        self._tokens.append(_active.set(self))
        self._entry_tid = threading.get_native_id()
        self._total_start = time.perf_counter()
        self._total_end = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self._total_end = time.perf_counter()
        # Stages of this profile still in this context's chain (abandoned by an interrupt)
        # must not become the parents of later stages elsewhere.
        top = open_get()
        while top is not None and (top.end_ns or top.log.prof is self):
            top = top.parent
        if top is not open_get():
            open_set(top)
        if self._tokens:
            token = self._tokens.pop()
            try:
                _active.reset(token)
            except ValueError:  # closed on another thread/context than it was opened on
                _active.set(token.old_value if token.old_value is not token.MISSING else None)

    # The profiler this thread (context) has: what `with CompileProfiler()` or `bind` set, or
    # the environment's once `get_active_profiler()` bound it here. Upstream keeps it in a
    # `threading.local` named `_local` (`_local.current`); code and tests that read or reset
    # that attribute see this one (`_CurrentSlot`, bound at the end of the module).
    _local: _CurrentSlot

    @staticmethod
    def current() -> CompileProfiler | None:
        """The innermost active profiler of this thread, or None (as upstream: the process-wide
        profiler counts once `get_active_profiler()` has bound it to this thread, and no
        longer once it was dropped: `refresh_from_environment()` with the variable off)."""
        prof = _active_get()
        if prof is not None and prof._from_environment and prof is not _process_profiler:
            return None
        return prof

    # -- recording (hot path) ---------------------------------------------------------------
    def stage(self, name: str, args: dict | None = None, cat: str | None = None) -> LiveStage:
        """Context manager timing one stage; stages nest. The stage opens at this call and
        `with ... as rec` gives its `LiveStage` (a `StageRecord`-compatible view)."""
        log = self._tls.log
        if log is None:
            log = self._register_thread()
        parent = open_get()
        while parent is not None and parent.end_ns:  # a closed stage lingers: skip up
            parent = parent.parent
        st = LiveStage()
        st.log = log
        st.parent = parent
        st.end_ns = 0
        st.ref = len(log)
        if parent is None:
            log += (name, args, cat, _pc(), NO_PARENT, 0)
        elif parent.log is log:
            log += (name, args, cat, _pc(), parent.ref, 0)
        else:  # another thread's (bound work) or another profiler's stage
            log += (name, args, cat, _pc(), parent_ref(self, parent), 0)
        top = log.top
        if parent is not top:  # `top` is open in another context: both get task lanes
            self._interleaved(st, top)
        log.top = st
        open_set(st)
        return st

    def _interleaved(self, stage: LiveStage, top: LiveStage | None) -> None:
        """`stage` opened while `top`, open in another context, was the thread's innermost:
        `stage` gets its task's lane now, and every open stage of `top`'s chain on this
        thread gets its own when it closes (each closes in its own task)."""
        note_interleaving(stage)
        log = stage.log
        if top is not None:
            log.tangled = True
        while top is not None and top.log is log and not top.end_ns:
            if top.ref not in log.lanes:
                if log.pending is None:
                    log.pending = set()
                log.pending.add(top.ref)
            top = top.parent

    # _begin_stage(name, args=None, cat=None) -> LiveStage: open a stage without `with` (for
    # split before/after callbacks such as a pass instrument). The same function as `stage`
    # (an alias, not a call: one Python call less per stage).
    _begin_stage = stage

    def _end_stage(self, args: dict | None = None, error: str | None = None, *,
                   stage: LiveStage | None = None) -> LiveStage | None:
        """Close `stage`, else this context's innermost open stage of this profiler; `args`
        are merged into its args. Without an open stage it does nothing (as upstream)."""
        if stage is None:
            stage = open_get()
            while stage is not None and (stage.end_ns or stage.log.prof is not self):
                stage = stage.parent
            if stage is None:
                return None
        elif stage.end_ns:
            return stage
        end = _pc()
        stage.end_ns = end
        log = stage.log
        ref = stage.ref
        if args:
            log[ref + ARGS] = {**log[ref + ARGS], **args} if log[ref + ARGS] else args
        log[ref + END] = end
        if error is not None:
            log.errors[ref] = error
        if log.top is stage:
            log.top = stage.parent
            if log.pending and stage.ref in log.pending:
                note_interleaving(stage)
        else:
            log.tangled = True
            note_interleaving(stage)
        return stage

    def add_stage_record(self, record: StageRecord) -> None:
        """Insert a finished record (e.g. timed elsewhere) at this context's current nesting level."""
        log = self._tls.log
        if log is None:
            log = self._register_thread()
        parent = open_ancestor(open_get())
        log.inserted.append(
            Inserted(record, NO_PARENT if parent is None else parent_ref(self, parent)))

    def set_process_name(self, pid: int, name: str) -> None:
        """Name a process whose stages appear in this profile (e.g. a device child process)."""
        self.process_names[pid] = name

    def _register_thread(self) -> ThreadLog:
        log = ThreadLog()
        log.pid = os.getpid()
        log.tid = threading.get_native_id()
        log.thread_name = threading.current_thread().name
        log.prof = self
        log.top = None
        log.pending = None
        log.tangled = False
        log.lanes = {}
        log.errors = {}
        log.inserted = []
        log.base = next(_log_ids) * GLOBAL_REF
        with self._logs_lock:
            log.order = len(self._logs)
            self._logs.append(log)
        self._tls.log = log
        return log



def bind_to_current(fn: F) -> F:
    """`fn` bound to this thread's active profiler and open stage; `fn` itself when none."""
    prof = get_active_profiler()
    if prof is None:
        return fn
    return prof.bind(fn)


# -- the process-wide profiler driven by the environment --------------------------------------

# Upstream's `_env_profiler`, also reachable under that name on the package
# (`pypto.compile_profiling._env_profiler`, which upstream's tests reset to None).
_process_profiler: CompileProfiler | None = None
_process_lock = threading.Lock()
_warned_values: set[str] = set()


def _env_enabled() -> bool:
    raw = os.environ.get(ENV_VAR, "")
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value not in _FALSE and raw not in _warned_values:
        _warned_values.add(raw)
        # Attributed to the variable itself, not to a line of ours: one self-explaining line.
        warnings.warn_explicit(
            f"{ENV_VAR}={raw!r} is not one of 1/true/yes/on or 0/false/no/off; "
            "compile profiling stays off", RuntimeWarning, filename=ENV_VAR, lineno=0)
    return False


def set_process_profiler(prof: CompileProfiler | None) -> None:
    """Make `prof` the process-wide profiler (None: none until the environment is read again).
    What assigning upstream's `pypto.compile_profiling._env_profiler` does: threads that had
    bound the previous one drop it at their next `get_active_profiler()`."""
    global _process_profiler
    if prof is not None:
        prof._from_environment = True
    _process_profiler = prof


def _process_profiler_from_environment() -> CompileProfiler | None:
    """Create (once) or drop the process-wide profiler as PYPTO_COMPILE_PROFILING says now."""
    global _process_profiler
    with _process_lock:
        if _env_enabled():
            if _process_profiler is None:
                prof = CompileProfiler()
                prof._from_environment = True
                prof._total_start = time.perf_counter()
                atexit.register(_write_process_profile, prof)
                _process_profiler = prof
        else:
            _process_profiler = None
        return _process_profiler


def refresh_from_environment() -> CompileProfiler | None:
    """Apply PYPTO_COMPILE_PROFILING as it is now to every thread at once.

    `get_active_profiler()` reads the variable whenever no profiler is bound to the calling
    thread (as upstream); a thread that already has the process-wide profiler keeps it. This
    reaches those threads too: turning it off stops them all recording into it (and nothing
    is written at exit), turning it on creates it. An explicit `with CompileProfiler()` still
    takes precedence.
    """
    return _process_profiler_from_environment()


def default_profile_dir(pid: int | None = None) -> str:
    """`$PYPTO_COMPILE_PROFILING_DIR`, else `./pypto_profile/<time>_<pid>/`."""
    configured = os.environ.get(ENV_DIR_VAR, "").strip()
    if configured:
        return configured
    stamp = time.strftime("%Y%m%d_%H%M%S")
    return os.path.join("pypto_profile", f"{stamp}_{pid or os.getpid()}")


def forked_profile_dir(pid: int) -> str:
    """Where a forked child writes its own profile: `$PYPTO_COMPILE_PROFILING_DIR_<pid>` when
    the directory is configured (a sibling, never inside the parent's report directory),
    else `./pypto_profile/<time>_<pid>/`."""
    configured = os.environ.get(ENV_DIR_VAR, "").strip()
    if configured:
        return f"{configured.rstrip(os.sep) or os.sep}_{pid}"
    return default_profile_dir(pid)


def _write_process_profile(prof: CompileProfiler) -> None:
    if prof is not _process_profiler or prof.pid != os.getpid():
        return  # disabled since, or a forked child: the parent writes its own
    prof._total_end = time.perf_counter()
    out = forked_profile_dir(prof.pid) if _forked_from is not None else default_profile_dir(prof.pid)
    try:
        prof.write_report(out)
    except Exception as e:  # noqa: BLE001 - at exit, one line beats a traceback
        print(f"pypto: compile profile not written: {e}", file=sys.stderr)
        return
    from pypto.compile_profiling.report_location import log_report_location

    log_report_location(out)


_forked_from: int | None = None  # the parent's pid in a forked child


def _after_fork_in_child() -> None:
    """The child of `os.fork()` records under its own pid: every profiler's copy gets fresh
    logs, and the process-wide profiler (environment on) is replaced by the child's own,
    written at the child's exit to `forked_profile_dir()`. The parent is untouched."""
    global _process_lock, _process_profiler, _forked_from
    _process_lock = threading.Lock()
    parent_profiler = _process_profiler
    # Even a parent that had not read the environment yet: a child that reads it later
    # writes beside the parent's directory, never into it.
    _forked_from = os.getppid()
    for prof in list(_profilers):
        prof._after_fork_in_child()
    if parent_profiler is not None:
        _process_profiler = None
        _process_profiler_from_environment()
    open_set(None)  # the parent's open stages are not the child's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# The profiler of this context: explicit (`with CompileProfiler()`, `bind`, `_local.current = p`)
# or the process-wide one bound by `get_active_profiler()`; else None.
_active: contextvars.ContextVar[CompileProfiler | None] = contextvars.ContextVar(
    "pypto_compile_profiler", default=None)
_active_get = _active.get


def get_active_profiler() -> CompileProfiler | None:
    """The profiler this thread records into, or None (profiling off).

    As upstream: the thread's own (`CompileProfiler.current()`) if it has one, else, when
    PYPTO_COMPILE_PROFILING is on (read at every such call: setting it mid-process takes
    effect), the process-wide profiler, created at the first call and bound to the calling
    thread, so that `CompileProfiler.current()` returns it there from now on. A thread bound
    to a process-wide profiler that has since been dropped (`refresh_from_environment()`, or
    `_env_profiler` reset) reads the variable again.

    Asked once per compile entry point (parse, `ir.compile`, codegen, `run`), never per stage:
    with nothing bound it costs one environment lookup.
    """
    prof = _active_get()
    if prof is not None and (not prof._from_environment or prof is _process_profiler):
        return prof
    if not _env_enabled():
        if prof is not None:
            _active.set(None)       # a dropped process-wide profiler: unbound
        return None
    prof = _process_profiler or _process_profiler_from_environment()
    _active.set(prof)
    return prof


class _CurrentSlot:
    """`CompileProfiler._local`: upstream's thread-local slot, whose `current` attribute is
    the thread's profiler. Reading and assigning it reads and sets this context's profiler
    (a new thread starts with none, as with `threading.local`)."""

    __slots__ = ()

    @property
    def current(self) -> CompileProfiler | None:
        return CompileProfiler.current()

    @current.setter
    def current(self, prof: CompileProfiler | None) -> None:
        _active.set(prof)


CompileProfiler._local = _CurrentSlot()
