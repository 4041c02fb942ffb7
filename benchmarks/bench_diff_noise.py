"""How `pypto-profile diff`'s rule fares on this host's noise: false regressions between
identical runs, and how often a real 2x slowdown of one pass is caught.

    python3 benchmarks/bench_diff_noise.py [--triples 36] [--runs 8 10 12] [--alpha 0.05 0.01]

Makes TRIPLES triples of runs of the README's 64-kernel program's pass pipeline, in the order
a_i b_i s_i (a, b: identical; s: ConstantFolding doing its work twice), at SCHED_FIFO when
allowed, then for each window of K consecutive triples and 20 splits of its (a_i, b_i) pairs,
one to each side, counts stages flagged between identical sides and comparisons in which the
slowed pass was missed. Prints the load, the disturbed runs (the thread got < 95% of a CPU)
and one line per (K, alpha).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples import many_kernels
from pypto.compile_profiling import CompileProfiler
from pypto.compile_profiling.profile_data.model import Profile, stages_from_records
from pypto.compile_profiling.profile_data.view import view_rows
from pypto.compile_profiling.profile_tool.diff import regression_of
from pypto.ir import PassManager, ProfilingInstrument
from pypto.ir_core.passes import ConstantFolding, default_pipeline

SLOWED = "passes/ConstantFolding"


class Twice(ConstantFolding):
    def run(self, program):
        super().run(program)
        return super().run(program)


def one_run(slow: bool) -> tuple[dict[str, int], bool]:
    passes = [Twice() if slow and type(p) is ConstantFolding else p for p in default_pipeline()]
    with CompileProfiler() as prof:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        PassManager(passes, [ProfilingInstrument(prof)]).run(many_kernels.ManyKernels)
        cpu, wall = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    profile = Profile("", stages_from_records(prof.stages, time.perf_counter_ns()), 0)
    return {r.key: r.total_ns for r in view_rows(profile.stages)}, cpu < 0.95 * wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=36)
    ap.add_argument("--runs", type=int, nargs="+", default=[8, 10, 12])
    ap.add_argument("--alpha", type=float, nargs="+", default=[0.05, 0.01])
    args = ap.parse_args()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        fifo = True
    except (AttributeError, OSError):
        fifo = False
    one_run(False)  # warm-up
    a, b, s, disturbed = [], [], [], 0
    while len(s) < args.triples:
        triple = []
        for slow in (False, False, True):
            times, bad = one_run(slow)
            while bad:
                disturbed += 1
                times, bad = one_run(slow)
            triple.append(times)
        a.append(triple[0])
        b.append(triple[1])
        s.append(triple[2])
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, SCHED_FIFO {fifo}, "
          f"{disturbed} disturbed runs made again")
    for k in args.runs:
        masks = [m for m in range(1, 2 ** k) if m.bit_count() == k // 2][:20]
        for alpha in args.alpha:
            false = missed = comparisons = 0
            for start in range(0, len(a) - k + 1, 2):
                aa, bb, ss = a[start:start + k], b[start:start + k], s[start:start + k]
                for m in masks:
                    base = [aa[i] if m >> i & 1 else bb[i] for i in range(k)]
                    other = [bb[i] if m >> i & 1 else aa[i] for i in range(k)]
                    false += sum(regression_of([r[key] for r in base], [r[key] for r in other],
                                               10.0, 1.0, alpha)[0] for key in base[0])
                    missed += not regression_of([r[SLOWED] for r in base],
                                                [r[SLOWED] for r in ss], 10.0, 1.0, alpha)[0]
                    comparisons += 1
            print(f"K={k:2d} alpha={alpha:g}: {comparisons} comparisons, {false} false "
                  f"regression(s), slowed pass missed {missed} time(s)")


if __name__ == "__main__":
    main()
