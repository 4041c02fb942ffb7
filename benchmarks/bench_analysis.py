#!/usr/bin/env python3
"""Analysis benchmark: `pypto-profile analyze` against our reader and against a merge, one run.

    python3 benchmarks/bench_analysis.py                   # 100,000 and 1,000,000 tasks
    python3 benchmarks/bench_analysis.py --tasks 100000    # one size
    python3 benchmarks/bench_analysis.py --pairs 3         # analyze/merge pairs per size

The capture is bench_merge.py's (the real `tmr_bgemm_case0_l4_depgen` repeated in time:
level 4, deps.json, name map). Per size, two child processes, GC paused as in the tools:
- read: `read_inputs` of the capture (records, deps.json, name map): CPU time, peak RSS;
- analyze: the same read, then `place` and the analysis (critical paths and overhead
  verdict: `analyze_plan`), each part's CPU time apart, and the process's peak RSS.
Printed: the read's CPU and peak RSS, the analysis's CPU (both parts; the end-to-end
tiling is included, it has no host source here) next to the read's from the same child,
and the targets: analysis CPU <= 1.0x the read's, peak RSS <= 1.5x the read-only child's.

Then the commands side by side, as users run them: `pypto-profile analyze CAPTURE -o
report.txt` (its verdict replays the run once per candidate cause), `pypto-profile whatif
CAPTURE --cores AIC=48 -o whatif.txt` (one edit: the unedited and the edited replay) and
`pypto-merge-traces CAPTURE -o merged.json`, each in a child under a wrapper reporting
`getrusage(RUSAGE_CHILDREN)`, alternated `--pairs` times. Printed: each command's CPU
(median) and the ratios of the medians, with the targets at 1M tasks: analyze CPU <= 1.0x
the merge's, whatif <= 0.5x.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_merge import SOURCE, _measured, run_merge

REPO = Path(__file__).resolve().parent.parent
CPU_TARGET, RSS_TARGET = 1.0, 1.5
MERGE_TARGET = {1_000_000: 1.0}          # analyze CPU / merge CPU, medians of the pairs
WHATIF_TARGET = {1_000_000: 0.5}         # whatif (one edit) CPU / merge CPU
WHATIF_EDIT = ["--cores", "AIC=48"]      # the capture's AIC engine has 24 cores

_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from pypto.compile_profiling.foundation.gc_pause import gc_paused
from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs
mode, capture = sys.argv[2], sys.argv[3]
out = {}
with gc_paused():
    t = time.process_time()
    found = read_inputs([capture])
    out["read_s"] = time.process_time() - t
    if mode == "analyze":
        from pypto.compile_profiling.analysis import analyze_plan
        from pypto.compile_profiling.trace_merge.place.placement import place
        t = time.process_time()
        plan = place(found)
        result = analyze_plan(plan)
        out["analysis_s"] = time.process_time() - t
        (r,) = result.ranks
        out["path"] = len(r.observed.tasks)
        out["exact"] = r.observed.exact
        out["static"] = len(r.static.tasks)
        out["verdict"] = str(r.verdict.kind)
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(mode: str, capture: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, str(REPO), mode, str(capture)],
                       capture_output=True, text=True, check=False)
    if r.returncode:
        raise SystemExit(f"{mode} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def build_in_child(source: Path, cap: Path, n: int, layout: str = "august") -> dict:
    """bench_merge's builder (records in `layout`), run in a child: Linux carries a
    process's peak RSS into the children it forks, so the measuring children must come
    from a small parent."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from bench_merge import "
            "build_capture; from pathlib import Path; print(json.dumps(build_capture("
            "Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), layout=sys.argv[5])))")
    r = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent),
                        str(source), str(cap), str(n), layout], capture_output=True,
                       text=True, check=False)
    if r.returncode:
        raise SystemExit(f"building the capture failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def run_analyze(capture: Path, output: Path) -> dict:
    return _measured([sys.executable, "-m", "pypto.compile_profiling", "analyze",
                      str(capture), "-o", str(output)], output)


def run_whatif(capture: Path, output: Path) -> dict:
    return _measured([sys.executable, "-m", "pypto.compile_profiling", "whatif",
                      str(capture), *WHATIF_EDIT, "-o", str(output)], output)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def side_by_side(cap: Path, n: int, pairs: int) -> None:
    """The analyze, whatif and merge commands alternated `pairs` times on one capture."""
    a_cpu, w_cpu, m_cpu = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench_analysis_out_") as out:
        for _ in range(pairs):
            a_cpu.append(run_analyze(cap, Path(out) / "report.txt")["cpu_s"])
            w_cpu.append(run_whatif(cap, Path(out) / "whatif.txt")["cpu_s"])
            m_cpu.append(run_merge(cap, Path(out) / "merged.json")["cpu_s"])
    merge = _median(m_cpu)

    def listed(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    print(f"  commands  : analyze {_median(a_cpu):6.2f} s CPU, whatif {_median(w_cpu):6.2f} s, "
          f"merge (JSON) {merge:6.2f} s (medians of {pairs} alternated rounds: analyze "
          f"{listed(a_cpu)}; whatif {listed(w_cpu)}; merge {listed(m_cpu)})")
    for name, cpu, targets in (("analyze", a_cpu, MERGE_TARGET), ("whatif", w_cpu,
                                                                  WHATIF_TARGET)):
        ratio, target = _median(cpu) / merge, targets.get(n)
        print(f"  {name}/merge: CPU {ratio:.2f}x"
              + ("" if target is None else f" ({_met(ratio <= target)} <= {target}x)"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, action="append",
                    help="AICore tasks to generate (repeatable; default 100000 and 1000000)")
    fixtures = os.environ.get("PYPTO_SIMPLER_FIXTURES")
    default = Path(fixtures) / SOURCE.name if fixtures else SOURCE
    ap.add_argument("--source", type=Path, default=default,
                    help="real capture to repeat (default: $PYPTO_SIMPLER_FIXTURES/"
                         f"{SOURCE.name}, else the one in tests/fixtures/simpler/)")
    ap.add_argument("--pairs", type=int, default=3,
                    help="analyze/merge command pairs per size (default 3; 0: skip)")
    args = ap.parse_args()
    for n in args.tasks or [100_000, 1_000_000]:
        with tempfile.TemporaryDirectory(prefix="bench_analysis_") as tmp:
            cap = Path(tmp) / "dfx_outputs"
            t = time.perf_counter()
            info = build_in_child(args.source, cap, n)
            size = sum(p.stat().st_size for p in cap.iterdir()) / 1e6
            print(f"{n:,} tasks: {info['records']:,} records, deps {info['deps_tasks']:,} "
                  f"tasks / {info['deps_edges']:,} edges, {size:.0f} MB (built in "
                  f"{time.perf_counter() - t:.1f} s)")
            read = child("read", cap)
            both = child("analyze", cap)
            cpu = both["analysis_s"] / both["read_s"]
            rss = both["peak_rss_mb"] / read["peak_rss_mb"]
            print(f"  read only : read {read['read_s']:6.2f} s CPU, peak RSS "
                  f"{read['peak_rss_mb']:6.0f} MB")
            print(f"  analyze   : read {both['read_s']:6.2f} s CPU, analysis (place + both "
                  f"parts) {both['analysis_s']:6.2f} s CPU, peak RSS "
                  f"{both['peak_rss_mb']:6.0f} MB; observed path {both['path']:,} tasks "
                  f"(tiling {'exact' if both['exact'] else 'INEXACT'}), static path "
                  f"{both['static']} tasks, verdict {both['verdict']}")
            print(f"  analysis/read: CPU {cpu:.2f}x ({_met(cpu <= CPU_TARGET)} <= {CPU_TARGET}x), "
                  f"peak RSS {rss:.2f}x ({_met(rss <= RSS_TARGET)} <= {RSS_TARGET}x)")
            if args.pairs:
                side_by_side(cap, n, args.pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
