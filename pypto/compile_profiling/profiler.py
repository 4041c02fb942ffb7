"""The compile profiler: nested, thread-aware stages on the host CLOCK_MONOTONIC clock.

Recording is kept to the bone, in the manner of LLVM's time-trace profiler: each thread
appends begin/end events to a log of its own (found through a thread-local), so the hot
path takes no lock and does one clock read per boundary. The stage tree, with process and
thread ids, is built only when somebody asks for it (report, trace, summary).

Event log entries (one list per thread and profiler):
  begin:  (name, args, cat, start_ns)          a 4-tuple
  end:    end_ns                                an int (normal end)
          (end_ns, error, args)                 a 3-tuple (failed, or end with extra args)
  other:  _Marker instances (parent binding for pool workers, inserted finished records)
"""

from __future__ import annotations

import atexit
import contextvars
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Self

_pc = time.perf_counter_ns

ENV_VAR = "PYPTO_COMPILE_PROFILING"
ENV_DIR_VAR = "PYPTO_COMPILE_PROFILING_DIR"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class StageRecord:
    """One timed stage. `start`/`end` are `time.perf_counter()` seconds; `end == 0` means open.

    The fields after `children` say who ran the stage and on which clock: `start_ns`/`end_ns`
    are `time.perf_counter_ns()` (Linux CLOCK_MONOTONIC), `pid`/`tid` the OS process and
    native thread id.
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
        d: dict[str, Any] = {
            "name": self.name,
            "seconds": round(self.duration, 6),
            "children": [c.to_dict() for c in self.children],
            "start_ns": self.start_ns,
            "end_ns": self.end_ns if not self.is_open else None,
            "pid": self.pid,
            "tid": self.tid,
            "thread_name": self.thread_name,
            "cat": self.cat,
        }
        if self.args:
            d["args"] = self.args
        if self.error is not None:
            d["error"] = self.error
        if self.is_open:
            d["open"] = True
        return d


class _Marker:
    """A non-timing entry in a thread log."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.kind, self.value = kind, value


class _ThreadLog(list):
    """One thread's event log for one profiler; also the `with prof.stage()` closer."""

    __slots__ = ("order", "pid", "thread_name", "tid")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et, ev, tb) -> None:
        if et is None:
            self.append(_pc())
        else:
            self.append((_pc(), et.__name__, None))


class _ProfilerTLS(threading.local):
    log: _ThreadLog | None = None


# The active profiler of this thread (each thread runs in a context of its own), created
# at the end of this module once the environment has been read: see `_active`.
_active: contextvars.ContextVar


def _set_active(prof: CompileProfiler | None) -> contextvars.Token:
    return _active.set(prof)


def _restore_active(token: contextvars.Token, previous: CompileProfiler | None) -> None:
    try:
        _active.reset(token)
    except ValueError:  # closed on another thread/context than it was opened on
        _active.set(previous)


class CompileProfiler:
    """Hierarchical wall-clock profiler for the PyPTO pipeline (upstream-compatible API).

    `CompileProfiler.current()` is the innermost active profiler of this thread.
    """

    def __init__(self) -> None:
        self._tls = _ProfilerTLS()
        self._logs: list[_ThreadLog] = []
        self._logs_lock = threading.Lock()
        self._tokens: list[tuple[contextvars.Token, CompileProfiler | None]] = []
        self._total_start: float = 0.0
        self._total_end: float = 0.0
        self.pid = os.getpid()
        self.process_names: dict[int, str] = {self.pid: "PyPTO compile"}

    # -- activation ----------------------------------------------------------------------
    def __enter__(self) -> Self:
        previous = _active.get()
        self._tokens.append((_set_active(self), previous))
        self._total_start = time.perf_counter()
        self._total_end = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self._total_end = time.perf_counter()
        if self._tokens:
            _restore_active(*self._tokens.pop())

    # current() -> CompileProfiler | None: the innermost active profiler of this thread, or
    # None. Bound at the end of the module to `_active.get` (C-level; see there).
    current: Callable[[], CompileProfiler | None]

    # -- recording (hot path) ---------------------------------------------------------------
    def stage(self, name: str, args: dict | None = None, cat: str | None = None) -> _ThreadLog:
        """Context manager timing one stage; stages nest. The stage opens at this call."""
        log = self._tls.log
        if log is None:
            log = self._register_thread()
        log.append((name, args, cat, _pc()))
        return log

    def _begin_stage(self, name: str, args: dict | None = None, cat: str | None = None) -> None:
        """Open a stage (for split before/after callbacks such as a pass instrument)."""
        log = self._tls.log
        if log is None:
            log = self._register_thread()
        log.append((name, args, cat, _pc()))

    def _end_stage(self, args: dict | None = None, error: str | None = None) -> None:
        """Close the innermost open stage of this thread; `args` are merged into its args."""
        log = self._tls.log
        if log is None:
            return
        if args is None and error is None:
            log.append(_pc())
        else:
            log.append((_pc(), error, args))

    def add_stage_record(self, record: StageRecord) -> None:
        """Insert a finished record (e.g. timed elsewhere) at this thread's current nesting level."""
        log = self._tls.log
        if log is None:
            log = self._register_thread()
        log.append(_Marker("record", record))

    def set_process_name(self, pid: int, name: str) -> None:
        """Name a process whose stages appear in this profile (e.g. a device child process)."""
        self.process_names[pid] = name

    def _register_thread(self) -> _ThreadLog:
        log = _ThreadLog()
        log.pid = os.getpid()
        log.tid = threading.get_native_id()
        log.thread_name = threading.current_thread().name
        with self._logs_lock:
            log.order = len(self._logs)
            self._logs.append(log)
        self._tls.log = log
        return log

    def _open_stage_ref(self) -> tuple[_ThreadLog, int] | None:
        """Identity of this thread's innermost open stage (or of the stage it is bound under)."""
        log = self._tls.log
        if log is None:
            return None
        depth = 0  # stages closed after the point being scanned
        skip = 0  # finished bound calls being skipped over
        for i in range(len(log) - 1, -1, -1):
            e = log[i]
            t = type(e)
            if t is tuple and len(e) == 4:
                if depth == 0 and skip == 0:
                    return (log, i)
                depth -= 1
            elif t is int or t is tuple:
                depth += 1
            elif e.kind == "parent":
                if e.value is None:
                    skip += 1
                elif skip:
                    skip -= 1
                elif depth == 0:
                    return e.value
        return None

    def bind(self, fn: F) -> F:
        """Wrap `fn` so that, on any thread, this profiler is current and its stages nest
        under the stage open here and now (use for thread-pool workers)."""
        parent = self._open_stage_ref()
        prof = self

        def bound(*a: Any, **kw: Any) -> Any:
            previous = _active.get()
            token = _set_active(prof)
            log = prof._tls.log
            if log is None:
                log = prof._register_thread()
            log.append(_Marker("parent", parent))
            try:
                return fn(*a, **kw)
            finally:
                log.append(_Marker("parent", None))
                _restore_active(token, previous)

        bound.__wrapped__ = fn  # type: ignore[attr-defined]
        bound.__name__ = getattr(fn, "__name__", "bound")
        return bound  # type: ignore[return-value]

    # -- results ---------------------------------------------------------------------------
    @property
    def stages(self) -> list[StageRecord]:
        """The top-level stages, with children, built from all threads' logs."""
        from pypto.compile_profiling.stage_tree import build_stage_tree

        with self._logs_lock:
            logs = list(self._logs)
        return build_stage_tree(logs)

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
        import json

        from pypto.compile_profiling.atomic_io import atomic_write_text

        text = json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)
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
        from pypto.compile_profiling.merge import write_profile_perfetto

        write_profile_perfetto(self, path)

    def write_report(self, report_dir: str | os.PathLike) -> None:
        """Write `pipeline_profile.txt`, `pipeline_profile.json` and `trace.json` to `report_dir`."""
        from pypto.compile_profiling.report import write_report

        write_report(self, report_dir)


def bind_to_current(fn: F) -> F:
    """`fn` bound to this thread's active profiler and open stage; `fn` itself when none."""
    prof = _active.get()
    if prof is None:
        return fn
    return prof.bind(fn)


# -- the process-wide profiler driven by the environment --------------------------------------

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


def _process_profiler_from_environment() -> CompileProfiler | None:
    """Create (once) or drop the process-wide profiler as PYPTO_COMPILE_PROFILING says."""
    global _process_profiler
    with _process_lock:
        if _env_enabled():
            if _process_profiler is None:
                _process_profiler = CompileProfiler()
                _process_profiler._total_start = time.perf_counter()
                atexit.register(_write_process_profile, _process_profiler)
        else:
            _process_profiler = None
        return _process_profiler


def refresh_from_environment() -> CompileProfiler | None:
    """Read PYPTO_COMPILE_PROFILING again (it is read once, at import).

    Turning it on creates the process-wide profiler and makes it current on the calling
    thread (worker threads see it through `bind_to_current`); turning it off drops it there.
    """
    before = _process_profiler
    prof = _process_profiler_from_environment()
    current = _active.get()
    if prof is not None and current is None:
        _active.set(prof)
    elif prof is None and current is not None and current is before:
        _active.set(None)
    return prof


def default_profile_dir(pid: int | None = None) -> str:
    """`$PYPTO_COMPILE_PROFILING_DIR`, else `./pypto_profile/<time>_<pid>/`."""
    configured = os.environ.get(ENV_DIR_VAR, "").strip()
    if configured:
        return configured
    stamp = time.strftime("%Y%m%d_%H%M%S")
    return os.path.join("pypto_profile", f"{stamp}_{pid or os.getpid()}")


def _write_process_profile(prof: CompileProfiler) -> None:
    if prof is not _process_profiler or prof.pid != os.getpid():
        return  # disabled since, or a forked child: the parent writes its own
    prof._total_end = time.perf_counter()
    out = default_profile_dir(prof.pid)
    try:
        prof.write_report(out)
    except Exception as e:  # noqa: BLE001 - at exit, one line beats a traceback
        print(f"pypto: compile profile not written: {e}", file=sys.stderr)
        return
    print(f"pypto: compile profile written to {os.path.abspath(out)}/ "
          "(pipeline_profile.txt, pipeline_profile.json, trace.json)", file=sys.stderr)


# "Is profiling on?" is asked at every stage boundary, so it is one C-level
# `ContextVar.get()` (cheaper than a thread-local attribute read) and nothing else. The
# variable's default is the process-wide profiler when PYPTO_COMPILE_PROFILING was on at
# import, so every thread sees it; an explicit `with CompileProfiler()` overrides it.
_active = contextvars.ContextVar("pypto_compile_profiler",
                                 default=_process_profiler_from_environment())  # noqa: B039
CompileProfiler.current = staticmethod(_active.get)  # type: ignore[assignment]

#: get_active_profiler() -> CompileProfiler | None: the explicit profiler of this thread if
#: any, else the process-wide one (PYPTO_COMPILE_PROFILING on), else None.
get_active_profiler: Callable[[], CompileProfiler | None] = _active.get
