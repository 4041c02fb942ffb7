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

import os
import shlex
import sys
import time

from pypto.about import tool_command
from pypto.compile_profiling.cli.merge_arguments import check_compare
from pypto.compile_profiling.cli.merge_arguments import parser as merge_parser
from pypto.compile_profiling.cli.merge_output import (
    EXIT_INPUT,
    EXIT_WRITE,
    identity,
    interrupted_line,
    log_setup,
    merge_error,
    size_text,
    where,
    write_to_stream,
)
from pypto.compile_profiling.cli.merge_per_rank import run_per_rank
from pypto.compile_profiling.cli.process import Terminated, sigterm_raises, stopped_by
from pypto.compile_profiling.cli.progress import StepProgress
from pypto.compile_profiling.cli.stdout import (
    check_open,
    reader_gone,
)
from pypto.compile_profiling.foundation.input_files import guarding_inputs, note_input_dirs
from pypto.compile_profiling.foundation.terminal import printable, wrap
from pypto.compile_profiling.viewer.perfetto_ui import (
    DEFAULT_PORT,
)
from pypto.errors import (
    MissingDependencyError,
    OutputPathError,
    ProfileWriteError,
    PyptoError,
    TraceInputError,
)

BRIEF_WARNING_LINES = 3    # of the first warning in the short summary (-v: every one whole)


def _derived_views(views: frozenset[str] | None):
    """The analysis's `TIMELINE_VIEWS` when `views` asks for one of its views, else None:
    a merge without them does not load the analysis (about 1,500 lines)."""
    from pypto.compile_profiling.trace_merge.views import DERIVED_VIEWS

    if views is None or views.isdisjoint(DERIVED_VIEWS):
        return None
    from pypto.compile_profiling.analysis import TIMELINE_VIEWS

    return TIMELINE_VIEWS


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit status.

    SIGINT (Ctrl-C) and SIGTERM stop it with one line and status 130 / 143; the output is
    then either not written at all (its temp file removed) or, once renamed, complete, and
    the line says which. A reader of `-o -` that goes away (`| head`) ends it quietly with
    141, as SIGPIPE ends a Unix tool.
    """
    state = {"output": None, "before": None, "stdout_started": False}
    try:
        with sigterm_raises(), guarding_inputs():   # no output replaces a file it read
            return _main(argv, state)
    except (KeyboardInterrupt, Terminated) as e:
        name, code = stopped_by(e)
        print(interrupted_line(state, name), file=sys.stderr)
        return code
    except BrokenPipeError:
        return reader_gone()


def _main(argv: list[str] | None, state: dict) -> int:
    parser = merge_parser()
    args = parser.parse_args(argv)
    check_compare(parser, args)
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
        state["before"] = identity(args.per_rank)
        return run_per_rank(args, state)
    from pypto.compile_profiling.foundation.streams import stream_of

    if args.output != "-" and stream_of(args.output) == 1:   # /dev/stdout: as `-o -`
        args.output = "-"
    to_stdout = args.output == "-"
    state["before"] = None if to_stdout else identity(args.output)
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


class _Stop(Exception):
    """A step of `_merge` ended the command: `code` is its exit status (its line printed)."""

    def __init__(self, code: int) -> None:
        self.code = code


def _merge(args, state: dict, server) -> int:
    """Check the outputs, merge, write, say what was written, then serve or hint."""
    from pypto.compile_profiling.foundation.streams import stream_of

    # `-o -` or another stream (`/dev/stderr`, `/dev/fd/N`, a device): written through
    to_stdout = args.output == "-" or stream_of(args.output) is not None
    log_setup()
    err = sys.stderr
    try:
        fmt = _output_format(args, to_stdout, err)
        _check_outputs(args, fmt, to_stdout, err)
    except _Stop as stop:
        return stop.code
    t0 = time.perf_counter()
    try:
        result, size = _merge_and_write(args, state, fmt, to_stdout, err)
    except PyptoError as e:
        return merge_error(e, args.output, err)
    _say_written(args, result, fmt, size, time.perf_counter() - t0, to_stdout, err)
    return _serve_or_hint(args, server, fmt, to_stdout, err)


def _output_format(args, to_stdout: bool, err) -> str:
    """"json", "perfetto", "parquet" or "archive" (a --compare ZIP); `_Stop` when the output
    cannot be one (a format the path refuses, Parquet without its extra or to a stream)."""
    from pypto.compile_profiling.timeline import format_for_path

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
        raise _Stop(EXIT_INPUT) from None
    if fmt == "parquet":
        from pypto.compile_profiling.query import require

        try:
            require("pyarrow", "duckdb")
        except MissingDependencyError as e:
            print(str(e), file=err)
            raise _Stop(EXIT_INPUT) from None
        if to_stdout:
            print("-: Parquet tables are a directory, not a stream (give -o DIR)", file=err)
            raise _Stop(EXIT_INPUT)
    return fmt


def _check_outputs(args, fmt: str, to_stdout: bool, err) -> None:
    """OUT and --analyze's REPORT checked before anything is read (a FIFO, a directory, the
    one over the other); `_Stop` with the one line said."""
    from pypto.compile_profiling.foundation.atomic_io import check_output_path
    from pypto.compile_profiling.foundation.streams import stream_of

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
        raise _Stop(EXIT_INPUT if isinstance(e, OutputPathError) else EXIT_WRITE) from None


def _merge_and_write(args, state: dict, fmt: str, to_stdout: bool, err):
    """The merge (or the two runs of --compare), written, and --analyze's report; -> (the
    result, bytes written). Progress on a terminal only."""
    from pypto.compile_profiling.timeline import write_timeline
    from pypto.compile_profiling.trace_merge import merge_traces

    progress = StepProgress(err if err.isatty() else None)
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
            from pypto.compile_profiling.trace_merge.compare import compare_runs

            result = compare_runs(*args.compare, at=args.align, progress=progress, **options)
        else:
            result = merge_traces(args.inputs, progress=progress, align=args.align,
                                  keep_for_analysis=bool(args.analyze), **options)
        progress(f"writing {where(args.output, to_stdout)}")
        if to_stdout:
            size = write_to_stream(result.timeline, fmt, write_timeline, state, args.output)
        elif fmt == "archive":
            from pypto.compile_profiling.timeline.write_archive import write_trace_archive

            size = write_trace_archive(result.parts, args.output)
        else:
            size = write_timeline(result.timeline, args.output, fmt)
        if args.analyze:
            progress(f"analysing into {args.analyze}")
            _write_analysis(result, args)
    finally:
        progress.stop()
    return result, size


def _say_written(args, result, fmt: str, size: int, elapsed: float, to_stdout: bool,
                 err) -> None:
    """The summary (brief, or -v's whole), what was written, the UI's size limit, the
    warnings."""
    tl = result.timeline
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
        print(f"wrote {where(args.output, to_stdout)} ({kind}, "
              f"{size_text(size)}) in {elapsed:.1f} s", file=err)
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


def _serve_or_hint(args, server, fmt: str, to_stdout: bool, err) -> int:
    """--open: serve OUT as `pypto-profile open` does; else the line saying how to open or
    query it."""
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


if __name__ == "__main__":
    sys.exit(main())
