"""`pypto-merge-traces --per-rank OUTDIR`: the per-rank merge on Dask
(`query.per_rank.merge_per_rank`), its summary and the cluster summary."""

from __future__ import annotations

import sys
import time

from pypto.compile_profiling.cli.merge_output import EXIT_INPUT, log_setup, merge_error, size_text
from pypto.compile_profiling.cli.process import stderr_kept_from_children
from pypto.compile_profiling.cli.progress import StepProgress
from pypto.errors import PyptoError

__all__ = ["run_per_rank"]


def run_per_rank(args, state: dict) -> int:
    """--per-rank: `query.per_rank.merge_per_rank`, its summary and the cluster summary."""
    with stderr_kept_from_children():
        return _per_rank_run(args, state)


def _per_rank_run(args, state: dict) -> int:
    log_setup()
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
        return merge_error(e, args.per_rank, err)
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
          f"shards ({size_text(c['pftrace_bytes'])} protobuf), tables {size_text(c['parquet_bytes'])}; "
          f"{c['slices']} slices, {c['flows']} flows, {c['counter_samples']} counter samples",
          file=err)
    for w in result.warnings:
        print(f"warning: {w}", file=err)
    if result.merged is not None:
        print(f"one trace: {result.merged}", file=err)
    return 0
