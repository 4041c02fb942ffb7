"""`pypto-profile whatif`: what a change would do to a run, predicted by replaying it."""

from __future__ import annotations

from pathlib import Path

from pypto.compile_profiling.cli.arguments import EXIT_OK, Refused, add_output_option
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
    w = sub.add_parser("whatif", help="what a change would do: the run replayed with it",
                       description="Replay each capture (rank) of RUN with the change asked "
                                   "for and print the predicted makespan, its change, its "
                                   "interval (the runs' spread and the replay error) and the "
                                   "predicted critical path. RUN: a run() work dir, "
                                   "dfx_outputs/, a capture directory, or a directory of runs "
                                   "(several runs: medians, and their spread). Needs AICPU "
                                   "records (swimlane level 2 and up) and, for dependencies, "
                                   "deps.json. How it works and how well it predicts: "
                                   "docs/whatif.md.")
    w.add_argument("runs", nargs="+", metavar="RUN")
    w.add_argument("--cores", action="append", default=[], metavar="ENGINE=N",
                   help="N cores of ENGINE (AIC, AIV); repeatable")
    w.add_argument("--faster", action="append", default=[], metavar="FAMILY=K",
                   help="the kernel family FAMILY K times as fast (0: taking no time; the "
                        "families are analyze's); repeatable")
    w.add_argument("--sched-latency", action="append", default=[], metavar="K|PIECE=K",
                   help="the scheduler's latency times K (0: none), or one piece's "
                        "(completion, dispatch, launch); repeatable")
    w.add_argument("--no-deps", action="store_true",
                   help="the same tasks without their dependencies")
    w.add_argument("--format", choices=("text", "json"), default="text")
    add_output_option(w, "the prediction")


def run(args) -> int:
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.analysis.whatif import format_whatif, parse_edit, predict
    from pypto.compile_profiling.profile_tool.run_figures import runs_in

    try:
        edit = parse_edit(args.cores, args.faster, args.sched_latency, args.no_deps)
    except ValueError as e:
        raise Refused(str(e)) from None
    paths = []
    for p in args.runs:
        inner = runs_in(Path(p))
        paths += [str(r) for r in inner] if inner else [p]
    runs = [(p, analyze([p], with_overhead=False, with_verdict=False).ranks) for p in paths]
    try:
        preds = predict(runs, edit)
    except ValueError as e:              # an edit that does not fit the capture
        raise Refused(str(e)) from None
    write_output(args.output, format_whatif(preds, edit, args.format), args.runs)
    return EXIT_OK
