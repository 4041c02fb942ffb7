"""`pypto-profile analyze`: why the run took as long as it did, the answer first."""

from __future__ import annotations

import sys

from pypto.compile_profiling.cli.arguments import EXIT_OK, Refused, add_output_option, count
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
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
    a.add_argument("--top", type=count, default=None, metavar="N",
                   help="rows of every long list in text and markdown: families, path tasks, "
                        "segments, threads, warnings (default 10; 0: all; JSON holds every "
                        "row)")
    a.add_argument("--tolerance-cycles", type=count, default=2, metavar="N",
                   help="a producer counts as finished before its consumer started when it "
                        "ended at most N device cycles after (default 2, as Simpler's tool)")
    add_output_option(a, "the report")


def run(args) -> int:
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.analysis.report import format_analysis

    if args.top is not None and args.format == "json":
        raise Refused("--top cuts the text and markdown reports; --format json holds every "
                       "row: leave --top out")
    result = analyze(args.paths, tolerance_cycles=args.tolerance_cycles)
    top = 10 if args.top is None else args.top
    write_output(args.output, format_analysis(result, args.format, top=top), args.paths)
    if args.output not in (None, "-"):
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
    return EXIT_OK
