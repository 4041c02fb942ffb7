#!/usr/bin/env python3
"""Reader benchmark: the trace_merge readers against `orjson.loads` of the same files.

    python3 benchmarks/bench_readers.py                  # 100,000 AICore tasks
    python3 benchmarks/bench_readers.py --tasks 1000000  # the 1M case
    python3 benchmarks/bench_readers.py --capture DIR    # a capture built before (--keep)

The capture is the real `tmr_bgemm_case0_l4_depgen` repeated in time (`bench_merge.build_capture`).
Each measurement runs in a fresh child process, so its peak RSS (VmHWM) is its own:
- `readers`: `read_records` + `read_deps` (checked columns, one process, no helpers, the
  cyclic GC paused as the merge does);
- `orjson`: `orjson.loads` of the records file and of deps.json (parse only, no checks,
  the whole text and all objects in memory), the baseline.
Printed: wall and CPU seconds and peak RSS of each, and their ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_merge import SOURCE, build_capture

_CHILD = """
import gc, json, sys, time
mode, records, deps = sys.argv[1:4]
gc.disable()      # as in the merge (stage_tree.gc_paused)
t, c = time.perf_counter(), time.process_time()
if mode == "readers":
    from pypto.compile_profiling.trace_merge.read.read_simpler import read_deps, read_records
    r = read_records(records)
    d = read_deps(deps)
    n = (len(r.aicore["task_id"]), len(d.task_id))
else:
    import orjson
    with open(records, "rb") as f:
        r = orjson.loads(f.read())
    with open(deps, "rb") as f:
        d = orjson.loads(f.read())
    n = (len(r["aicore_tasks"]), len(d["tasks"]))
wall, cpu = time.perf_counter() - t, time.process_time() - c
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork+exec from the parent (which may
# hold the generated capture), VmHWM is this program's own peak.
with open("/proc/self/status") as f:
    rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rss_mb": rss, "n": n}))
"""


def measure(mode: str, cap: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(cap / "chip_swimlane_records.json"),
                          str(cap / "deps.json")], capture_output=True, text=True, cwd=REPO,
                         check=False)
    if out.returncode:
        raise SystemExit(f"{mode} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--capture", type=Path, help="a capture dir built before")
    ap.add_argument("--keep", type=Path, help="directory to keep the generated capture in")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each (best is printed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_readers_") as tmp:
        cap = args.capture or (args.keep or Path(tmp)) / "dfx_outputs"
        if not args.capture:
            t = time.perf_counter()
            info = build_capture(SOURCE, cap, args.tasks)
            print(f"capture: {info['aicore_tasks']:,} AICore tasks, {info['records']:,} records,"
                  f" deps {info['deps_tasks']:,} tasks / {info['deps_edges']:,} edges "
                  f"(built in {time.perf_counter() - t:.1f} s)")
        sizes = {p.name: p.stat().st_size / 1e6 for p in cap.iterdir()}
        print("files: " + ", ".join(f"{k} {v:.0f} MB" for k, v in sorted(sizes.items())))
        res = {}
        for mode in ("readers", "orjson"):
            runs = [measure(mode, cap) for _ in range(args.repeat)]
            res[mode] = best = min(runs, key=lambda r: r["wall_s"])
            print(f"{mode:8s}: {best['wall_s']:6.2f} s wall, {best['cpu_s']:6.2f} s CPU, "
                  f"peak RSS {best['rss_mb']:6.0f} MB")
        r, o = res["readers"], res["orjson"]
        print(f"readers / orjson.loads: wall {r['wall_s'] / o['wall_s']:.2f}x, "
              f"CPU {r['cpu_s'] / o['cpu_s']:.2f}x, peak RSS {r['rss_mb'] / o['rss_mb']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
