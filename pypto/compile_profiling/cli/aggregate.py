"""`pypto-profile aggregate`: per stage, pass and kernel statistics over many runs."""

from __future__ import annotations

import sys
import time

from pypto.compile_profiling.cli.arguments import EXIT_OK, add_output_option, count
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
    g = sub.add_parser("aggregate", help="per stage, pass and kernel over many runs",
                       description="Count, total, mean, P50, P95 and max of every stage, pass "
                                   "and kernel over many runs (profiles, work dirs, capture "
                                   "directories, Parquet datasets, or directory trees of "
                                   "them), sorted by total. Needs the scale extra.")
    g.add_argument("paths", nargs="+", metavar="PATH")
    g.add_argument("--format", choices=("text", "csv", "json"), default="text")
    g.add_argument("--limit", type=count, metavar="N", help="at most N rows")
    add_output_option(g, "the table")


def run(args) -> int:
    from pypto.compile_profiling.foundation.terminal import COLUMNS
    from pypto.compile_profiling.query.aggregate import PROGRESS_S, Search, aggregate
    from pypto.compile_profiling.query.run import QueryResult, fit_text, format_result

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
    if args.format == "text" and args.output in (None, "-"):     # a terminal's width
        result, shortened = fit_text(result, COLUMNS)
        if shortened:
            print(f"note: names shortened from the left (…) to fit {COLUMNS} columns; "
                  "--format csv or -o FILE has them whole", file=sys.stderr)
    write_output(args.output, format_result(result, args.format), args.paths)
    return EXIT_OK
