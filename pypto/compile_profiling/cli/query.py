"""`pypto-profile query`: SQL (DuckDB) over a run's tables, read-only."""

from __future__ import annotations

from pypto.compile_profiling.cli.arguments import (
    EXIT_OK,
    Usage,
    add_output_option,
    count,
    positive_seconds,
)
from pypto.compile_profiling.cli.output import output_stream, write_output


def add_parser(sub) -> None:
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
    q.add_argument("--limit", type=count, metavar="N", help="at most N rows")
    q.add_argument("--timeout", type=positive_seconds, metavar="S",
                   help="stop the query after S seconds (exit 124, as timeout(1))")
    add_output_option(q, "the result")


def run(args) -> int:
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
            raise Usage("query needs SQL and the run's PATH (or --preset NAME PATH)")
        sql, paths = words[0], words[1:]
    else:
        if args.preset not in PRESETS:
            raise Usage(f"unknown preset {args.preset!r} (--preset list names them)")
        sql, paths = None, words
    if not paths:
        raise Usage("query needs the run's PATH (a Parquet dataset, work dir, dfx_outputs/, "
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
