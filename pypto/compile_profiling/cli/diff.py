"""`pypto-profile diff`: compare profiles stage by stage; exit 1 on a regression."""

from __future__ import annotations

from pypto.compile_profiling.cli.arguments import (
    EXIT_OK,
    EXIT_REGRESSION,
    Usage,
    add_output_option,
    non_negative,
    probability,
)
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
    from pypto.compile_profiling.profile_tool.diff import (
        DEFAULT_ALPHA,
        DEFAULT_MIN_MS,
        DEFAULT_THRESHOLD_PCT,
    )

    d = sub.add_parser("diff", help="compare profiles; exit 1 on a regression",
                       description="Compare stages matched by path (families by family), "
                                   "sorted by change. A regression is a stage slower, with "
                                   "1 - ALPHA confidence judged from the runs' own spread, by "
                                   "more than PCT percent and MS milliseconds: that needs "
                                   "several runs per side (BASE... -- NEW..., or a directory "
                                   "of runs); one run per side decides nothing.")
    d.add_argument("runs", nargs="+", metavar="PATH",
                   help="BASE NEW, or BASE... -- NEW...")
    d.add_argument("--threshold", type=non_negative, default=DEFAULT_THRESHOLD_PCT,
                   metavar="PCT", help="a regression is slower by more than PCT percent of the "
                                       f"base median (default {DEFAULT_THRESHOLD_PCT:g})")
    d.add_argument("--min-ms", type=non_negative, default=DEFAULT_MIN_MS, metavar="MS",
                   help=f"... and by more than MS milliseconds (default {DEFAULT_MIN_MS:g})")
    d.add_argument("--alpha", type=probability, default=DEFAULT_ALPHA, metavar="A",
                   help="... with confidence 1 - A (default %(default)g: 5 runs per side "
                        "are the fewest that can decide, 8 or more make one stalled run "
                        "harmless)")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    add_output_option(d, "the comparison")


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


def run(args) -> int:
    new_paths = args.new_paths
    from pypto.compile_profiling.profile_data.load import load_runs
    from pypto.compile_profiling.profile_tool.diff import diff_profiles, format_diff

    if new_paths is None:
        if len(args.runs) != 2:
            raise Usage("diff takes BASE NEW, or BASE... -- NEW... for several runs per side")
        base_paths, new_paths = args.runs[:1], args.runs[1:]
    else:
        base_paths = args.runs
        if not new_paths:
            raise Usage("diff: no NEW path after --")
    base = [p for path in base_paths for p in load_runs(path)]
    new = [p for path in new_paths for p in load_runs(path)]
    result = diff_profiles(base, new, args.threshold, args.min_ms, args.alpha)
    write_output(args.output, format_diff(result, args.format), base_paths + new_paths)
    return EXIT_REGRESSION if result.regressions else EXIT_OK
