#!/usr/bin/env python3
"""Run-log reader benchmark: `read_run_log` on a generated Simpler run log.

    python3 benchmarks/bench_run_log.py                       # 1,000,000 [STRACE] lines
    python3 benchmarks/bench_run_log.py --lines 100000
    python3 benchmarks/bench_run_log.py --against /work/other/checkout --repeat 3

The log is the real `tmr_bgemm_case0_l4_depgen` host log's invocation (13 `[STRACE]` lines,
6 of them `clk=dev`, and its noise lines) repeated with the invocation number counted up
and the host times moved on, so every line is a valid span of its own invocation. Each
read runs in a fresh child process, so its peak RSS (VmHWM) is its own; `--against DIR`
reads the same file with the checkout at DIR too (another version of the reader),
alternated with this one, so the ratios come from one run. Printed: the file's size, and
wall / CPU seconds and peak RSS of each read (the best of `--repeat`), and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "support"))

from simpler_fixtures import FIXTURES  # where the real captures are (worktrees too)

SOURCE = FIXTURES / "tmr_bgemm_case0_l4_depgen" / "host_log.txt"

_CHILD = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[2])
gc.disable()      # as in the merge (gc_paused)
from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log
t, c = time.perf_counter(), time.process_time()
log = read_run_log(sys.argv[1])
wall, cpu = time.perf_counter() - t, time.process_time() - c
with open("/proc/self/status") as f:      # VmHWM: this program's own peak (see bench_readers)
    rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rss_mb": rss, "spans": len(log.spans)}))
"""
_BASE = """
import json, sys
with open("/proc/self/status") as f:
    rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
sys.path.insert(0, sys.argv[1])
import numpy, pypto.compile_profiling.trace_merge.read.read_run_log  # what the reader loads
with open("/proc/self/status") as f:
    loaded = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
print(json.dumps({"rss_mb": loaded}))
"""

_INV = re.compile(r"( inv=)(\d+)")
_TS = re.compile(r"( ts=)(\d+)")


def build_log(path: Path, lines: int) -> int:
    """`path`: the source invocation repeated until `lines` [STRACE] lines; -> its bytes."""
    text = SOURCE.read_text().splitlines()
    strace = [ln for ln in text if "[STRACE] " in ln]
    host_ts = [int(_TS.search(ln).group(2)) for ln in strace if "clk=dev" not in ln]
    step = max(host_ts) - min(host_ts) + 1_000_000
    with open(path, "w") as f:
        written, inv = 0, 0
        while written < lines:
            inv += 1
            shift = (inv - 1) * step
            for ln in text:
                if "[STRACE] " not in ln:
                    if "[CLOCK_ANCHOR]" not in ln or inv == 1:
                        f.write(ln + "\n")
                    continue
                if written == lines:
                    break
                ln = _INV.sub(lambda m, i=inv: f"{m.group(1)}{i}", ln, count=1)
                if "clk=dev" not in ln:
                    ln = _TS.sub(lambda m, s=shift: f"{m.group(1)}{int(m.group(2)) + s}", ln,
                                 count=1)
                f.write(ln + "\n")
                written += 1
    return path.stat().st_size


def measure(log: Path, repo: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(log), str(repo)],
                         capture_output=True, text=True, check=False,
                         env=dict(os.environ, PYTHONPATH=str(repo)))
    if out.returncode:
        raise SystemExit(f"read with {repo} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def baseline_rss(repo: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _BASE, str(repo)], capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(repo)))
    return json.loads(out.stdout)["rss_mb"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--against", type=Path, help="another checkout to read the same log with")
    ap.add_argument("--repeat", type=int, default=1, help="reads of each (best is printed)")
    ap.add_argument("--log", type=Path, help="read this log instead of generating one")
    args = ap.parse_args()
    repos = [REPO] + ([args.against.resolve()] if args.against else [])
    with tempfile.TemporaryDirectory(prefix="bench_run_log_") as tmp:
        log = args.log or Path(tmp) / "host_log.txt"
        size = log.stat().st_size if args.log else build_log(log, args.lines)
        print(f"log: {size / 1e6:.1f} MB ({log})")
        best: dict[Path, dict] = {}
        for _ in range(args.repeat):
            for repo in repos:
                r = measure(log, repo)
                b = best.setdefault(repo, r)
                for k in ("wall_s", "cpu_s", "rss_mb"):
                    b[k] = min(b[k], r[k])
        for repo in repos:
            b = best[repo]
            base = baseline_rss(repo)
            print(f"{repo}: {b['spans']:,} spans in {b['wall_s']:.2f} s wall, {b['cpu_s']:.2f} s "
                  f"CPU, peak RSS {b['rss_mb']:.0f} MB ({b['rss_mb'] - base:.0f} MB above the "
                  f"{base:.0f} MB of the reader's imports; {b['rss_mb'] * 1e6 / size:.2f}x "
                  "the log's size in all)")
        if len(repos) == 2:
            a, o = best[repos[0]], best[repos[1]]
            print(f"this / other: wall {a['wall_s'] / o['wall_s']:.2f}x, CPU "
                  f"{a['cpu_s'] / o['cpu_s']:.2f}x, peak RSS {a['rss_mb'] / o['rss_mb']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
