"""Cost of reading and viewing a big profile, measured in one run, as ratios against writing
its `trace.json`.

A profile of N stages (default 200,000: 200 passes, half of them with 999 distinct children,
half with a 999-member `kernel_codegen:*` family) is built once; then, best of R rounds each:
- `trace.json` export (the reference: the profiler's own cheapest full write);
- `pipeline_profile.txt` text (`prof.summary()`: self times, folded families, unaccounted);
- `pypto-profile show` of its `pipeline_profile.json` (load + view + text);
- `pypto-profile diff` of that file with itself (two loads + compare).

Targets: summary <= 3x the trace export; show <= 6x; diff <= 10x.

    python3 benchmarks/bench_profile_view.py [--stages N] [--rounds R]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.pop("PYPTO_COMPILE_PROFILING", None)

from pypto.compile_profiling import CompileProfiler
from pypto.compile_profiling.cli.profile import main as profile_cli


def build(stage_count: int) -> CompileProfiler:
    per_parent = 999
    parents = max(1, stage_count // (per_parent + 1))
    with CompileProfiler() as prof:
        for i in range(parents):
            with prof.stage(f"pass_{i}"):
                for j in range(per_parent):
                    with prof.stage(f"kernel_codegen:k{j}" if i % 2 else f"step_{j}"):
                        pass
    return prof


def best(fn, rounds: int) -> float:
    b = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


def quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        profile_cli(argv)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    prof = build(a.stages)
    stages = prof.stages
    n = sum(1 + len(s.children) for s in stages)
    with tempfile.TemporaryDirectory() as d:
        prof.write_report(d)
        profile = os.path.join(d, "pipeline_profile.json")
        trace = os.path.join(d, "t.json")
        figures = {
            "trace.json export": best(lambda: prof.to_chrome_trace(trace), a.rounds),
            "pipeline_profile.txt (summary)": best(prof.summary, a.rounds),
            "pypto-profile show": best(lambda: quiet(["show", profile]), a.rounds),
            "pypto-profile diff (same file)": best(lambda: quiet(["diff", profile, profile]),
                                                   a.rounds),
        }
    ref = figures["trace.json export"]
    targets = {"pipeline_profile.txt (summary)": 3, "pypto-profile show": 6,
               "pypto-profile diff (same file)": 10}
    print(f"{n:,} stages, best of {a.rounds} rounds")
    for label, seconds in figures.items():
        line = f"{label:<34}{seconds:8.3f} s  {seconds / ref:5.2f}x trace export"
        if label in targets:
            ok = "OK" if seconds / ref <= targets[label] else "OVER"
            line += f" (target <= {targets[label]}x: {ok})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
