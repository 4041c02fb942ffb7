#!/usr/bin/env python3
"""Whole-run comparison benchmark: `pypto-profile diff` of 5 + 5 runs against reading them.

    python3 benchmarks/bench_compare.py                    # 100,000 tasks, 5 + 5 runs
    python3 benchmarks/bench_compare.py --tasks 20000 --runs 2 --repeats 1   # a smoke run

The capture is bench_merge.py's (the real `tmr_bgemm_case0_l4_depgen` repeated in time:
level 4, deps.json, name map), linked as every run of both sides. Alternated `--repeats`
times, each in a child measured by `getrusage(RUSAGE_CHILDREN)`:
- read: the merge's readers (`read_inputs`) on each of the 2 x RUNS runs, what reading the
  runs once costs;
- analyze: `pypto-profile analyze` of each run, one process (the figures `diff` starts from);
- diff: `pypto-profile diff BASE1..BASEn -- NEW1..NEWn -o report.txt`, as a user runs it.
Printed: each one's CPU (median) and peak RSS, and the ratios diff/read (target <= 1.5x)
and diff/analyze.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis import build_in_child
from bench_merge import SOURCE, _measured

TARGET = 1.5          # diff CPU / reading the runs once

_READ = """
import sys
from pypto.compile_profiling.foundation.gc_pause import gc_paused
from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs
with gc_paused():
    for path in sys.argv[2:]:
        read_inputs([path])
open(sys.argv[1], "w").write("read\\n")
"""

_ANALYZE = """
import sys
from pypto.compile_profiling.analysis import analyze
for path in sys.argv[2:]:
    analyze([path])
open(sys.argv[1], "w").write("analyzed\\n")
"""


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000, help="AICore tasks per run")
    ap.add_argument("--runs", type=int, default=5, help="runs per side (default 5)")
    ap.add_argument("--repeats", type=int, default=3, help="alternated measurements")
    fixtures = os.environ.get("PYPTO_SIMPLER_FIXTURES")
    ap.add_argument("--source", type=Path,
                    default=Path(fixtures) / SOURCE.name if fixtures else SOURCE)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_compare_") as tmp:
        root = Path(tmp)
        cap = root / "capture" / "dfx_outputs"
        info = build_in_child(args.source, cap, args.tasks)
        base = [root / f"base{i}" for i in range(args.runs)]
        new = [root / f"new{i}" for i in range(args.runs)]
        for link in base + new:
            link.symlink_to(cap, target_is_directory=True)
        runs = [str(p) for p in base + new]
        py = sys.executable
        commands = {
            "read": [py, "-c", _READ, str(root / "read.txt"), *runs],
            "analyze": [py, "-c", _ANALYZE, str(root / "analyze.txt"), *runs],
            "diff": [py, "-m", "pypto.compile_profiling", "diff", *runs[:args.runs], "--",
                     *runs[args.runs:], "-o", str(root / "diff.txt")],
        }
        results: dict[str, list[dict]] = {k: [] for k in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                results[name].append(_measured(cmd, root / f"{name}.txt"))
        head = (root / "diff.txt").read_text().splitlines()[2]
    print(f"{args.tasks:,} tasks per run ({info['records']:,} records), {args.runs} + "
          f"{args.runs} runs, medians of {args.repeats} alternated measurements:")
    cpu = {k: _median([r["cpu_s"] for r in v]) for k, v in results.items()}
    for name in commands:
        rss = max(r["peak_rss_mb"] for r in results[name])
        print(f"  {name:8s}: {cpu[name]:6.2f} s CPU, peak RSS {rss:6.0f} MB")
    ratio = cpu["diff"] / cpu["read"]
    print(f"  diff/read   : {ratio:.2f}x ({'met' if ratio <= TARGET else 'MISSED'} "
          f"<= {TARGET}x)")
    print(f"  diff/analyze: {cpu['diff'] / cpu['analyze']:.2f}x")
    print(f"  the diff said: {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
