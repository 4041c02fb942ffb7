"""`pypto-profile diff`: compare runs (device makespan, families, critical path, compile
stages) or compile profiles; exit 1 on a regression beyond the runs' noise."""

from __future__ import annotations

import argparse

from pypto.compile_profiling.cli.arguments import (
    EXIT_OK,
    EXIT_REGRESSION,
    Refused,
    Usage,
    add_output_option,
    count,
    non_negative,
    probability,
)
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
    from pypto.compile_profiling.profile_tool.diff import (
        DEFAULT_ALPHA,
        DEFAULT_FAIL_ABOVE_PCT,
        DEFAULT_MIN_MS,
        DEFAULT_THRESHOLD_PCT,
    )

    d = sub.add_parser("diff", help="compare runs or profiles; exit 1 on a regression",
                       description="Compare whole runs (work dirs, dfx_outputs/, captures): "
                                   "per rank the device makespan, kernel families, the "
                                   "critical path's composition, the verdict and the tasks "
                                   "that changed most (on or off the critical path), then "
                                   "the compile stages (matched by path, families by "
                                   "family). A regression is a figure worse, with 1 - ALPHA "
                                   "confidence judged from the runs' own spread, by more "
                                   "than its threshold: that needs several runs per side "
                                   "(BASE... -- NEW..., or a directory of runs); one run per "
                                   "side decides nothing. Definitions: docs/comparing.md.")
    d.add_argument("runs", nargs="+", metavar="PATH",
                   help="BASE NEW, or BASE... -- NEW...")
    d.add_argument("--fail-above", action="append", default=None, metavar="[FIGURE=]PCT",
                   type=_fail_above,
                   help="device figures that fail the comparison when worse by more than "
                        "PCT percent (beyond the noise): a bare PCT is the makespan's "
                        f"(default {DEFAULT_FAIL_ABOVE_PCT:g}); FIGURE=PCT gates others "
                        "by name or glob (family:gemm, family:*, path:stall dispatch, "
                        "e2e:launch, task:gemm#3); repeatable, the last match wins")
    d.add_argument("--top", type=count, default=10, metavar="N",
                   help="rows of the families and tasks lists in text and markdown "
                        "(default %(default)s; 0: all)")
    d.add_argument("--threshold", type=non_negative, default=DEFAULT_THRESHOLD_PCT,
                   metavar="PCT", help="a compile stage regresses when slower by more than "
                                       "PCT percent of the base median (default "
                                       f"{DEFAULT_THRESHOLD_PCT:g})")
    d.add_argument("--min-ms", type=non_negative, default=DEFAULT_MIN_MS, metavar="MS",
                   help=f"... and by more than MS milliseconds (default {DEFAULT_MIN_MS:g})")
    d.add_argument("--alpha", type=probability, default=DEFAULT_ALPHA, metavar="A",
                   help="... with confidence 1 - A (default %(default)g: 5 runs per side "
                        "are the fewest that can decide, 8 or more make one stalled run "
                        "harmless)")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    add_output_option(d, "the comparison")


def _fail_above(text: str) -> tuple[str, float]:
    name, _, pct = text.rpartition("=")
    try:
        value = non_negative(pct)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"--fail-above {text!r}: {e}") from None
    if "=" in text and not name:
        raise argparse.ArgumentTypeError(f"--fail-above {text!r}: no figure before '='")
    return name or "makespan", value


def split_diff_runs(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`diff ... BASE... -- NEW... [OPTIONS]`: the other arguments and the NEW paths, which
    run from after `--` up to the first argument starting with `-` (options may follow)."""
    if argv.count("--") > 1:
        raise Usage("diff takes one `--` (BASE... -- NEW...); a second one would move "
                    "paths to the other side")
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
    from pypto.compile_profiling.profile_tool.run_figures import is_whole_run

    whole = [is_whole_run(p) for p in base_paths + new_paths]
    if all(whole):
        return _whole_runs(args, base_paths, new_paths)
    if any(whole):                      # the device gate cannot compare them: fail closed
        lacking = [p for p, w in zip(base_paths + new_paths, whole) if not w]
        raise Refused(f"{lacking[0]}: no device capture (dfx_outputs/), while other runs have "
                      "one: the device gate cannot compare it (compare the runs' compile "
                      "profiles, their report/ dirs, for the compile stages alone)")
    if args.fail_above:
        raise Refused("--fail-above gates device figures; these are compile profiles only "
                      "(no device capture): use --threshold")
    base = [p for path in base_paths for p in load_runs(path)]
    new = [p for path in new_paths for p in load_runs(path)]
    result = diff_profiles(base, new, args.threshold, args.min_ms, args.alpha)
    write_output(args.output, format_diff(result, args.format), base_paths + new_paths)
    return EXIT_REGRESSION if result.regressions else EXIT_OK


def _whole_runs(args, base_paths: list[str], new_paths: list[str]) -> int:
    from pypto.compile_profiling.profile_tool.run_diff import Thresholds, diff_runs
    from pypto.compile_profiling.profile_tool.run_diff_report import format_run_diff
    from pypto.compile_profiling.profile_tool.run_figures import load_runs_figures

    thresholds = Thresholds()
    for name, pct in args.fail_above or []:
        if name == "makespan":
            thresholds.makespan_pct = pct
        else:
            thresholds.rules.append((name, pct))
    base, new = load_runs_figures(base_paths), load_runs_figures(new_paths)
    result = diff_runs(base, new, thresholds=thresholds, alpha=args.alpha,
                       threshold_pct=args.threshold, min_ms=args.min_ms, top=args.top)
    write_output(args.output, format_run_diff(result, args.format, args.top),
                 base_paths + new_paths)
    return EXIT_REGRESSION if result.failed else EXIT_OK
