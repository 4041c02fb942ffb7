#!/usr/bin/env python3
"""Exporter benchmark: both writers of the columnar timeline against a plain orjson baseline.

    python3 benchmarks/bench_exporters.py                    # 200,000 slices
    python3 benchmarks/bench_exporters.py --slices 5500000   # the 1M-task merge's slice count
    python3 benchmarks/bench_exporters.py --gc               # leave the cyclic GC running

The synthetic timeline is shaped like device tasks: one block of N slices with 10 int64 arg
columns (ids, a core id fixed per lane, a ring id always 0, small fan-in/out counts, one of
them present on every other row only, and random 40-bit cycle counts), unique task names,
spread over
`--lanes` lanes of one device process (tasks one after another on each lane), and one
dependency flow per task to an earlier task.

Baseline: `orjson.dumps` of N Chrome X-event dicts with the same fields (10 int args), in
chunks of the JSON writer's chunk size; only dumping and writing each chunk is timed, not
building it: the encoding floor, with nothing left to do but serialise.

Each measurement runs in a fresh child process (this script with `--one`), so its peak RSS
(`ru_maxrss`) is its own: printed as the rise over the RSS after the timeline (or the
baseline's dicts) was built. Each is run `--repeat` times, interleaved, and the fastest run
is kept (the machine is shared). Printed: wall and CPU seconds, µs per slice, peak RSS rise, output size,
and the ratios to the baseline measured in the same run. The writers run with
the cyclic GC paused, as `timeline.write_timeline` runs them (`--gc`: not paused).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pypto.compile_profiling.timeline import write_json
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    FlowBlock,
    Process,
    SliceBlock,
    Timeline,
    Track,
)
from pypto.compile_profiling.timeline.write_json import write_chrome_json
from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace

ARG_KEYS = ["task_id", "func_id", "core_id", "ring_id", "fanin", "fanout", "kernel_id",
            "start_cycle", "end_cycle", "dispatch_cycle"]
T0_NS = 3_000_000_000_123  # ~50 min of uptime, not a whole µs


def build_timeline(n: int, lanes: int) -> Timeline:
    dev = Process(90001, "Device r0 · AICore", 1)
    tracks = [Track(90002 + i, dev, f"AIC_{i}", i) for i in range(lanes)]
    i = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(1)
    cols = [ArgColumn(k, rng.integers(0, 1 << 40, n)) for k in ARG_KEYS]
    cols[0].values = i.copy()                   # task_id
    cols[1].values = cols[6].values = i % 7     # func_id, kernel_id
    cols[2].values = i % lanes                  # core_id: one per lane
    cols[3].values = np.zeros(n, np.int64)      # ring_id
    cols[4].values = rng.integers(0, 4, n)      # fanin
    cols[5].values = rng.integers(0, 4, n)      # fanout, on every other task only
    cols[5].present = i % 2 == 0
    block = SliceBlock("aicore", tracks, (i % lanes).astype(np.int32),
                       T0_NS + (i // lanes) * 1000, rng.integers(100, 900, n),
                       [f"QK_{k % 7}(t{k})" for k in range(n)], i.astype(np.int32), cols)
    src = np.maximum(i - 1 - rng.integers(0, 64, n), 0)[1:]
    flow = FlowBlock("dependency", "dep", block, src, block, i[1:])
    return Timeline([dev], tracks, [block], [flow], [], {"clock": "CLOCK_MONOTONIC"})


def baseline_chunks(n: int, lanes: int):
    """The X events of the same slices, as dicts, in the JSON writer's chunks."""
    rng = np.random.default_rng(1)
    for lo in range(0, n, write_json.CHUNK_ROWS):
        hi = min(n, lo + write_json.CHUNK_ROWS)
        vals = rng.integers(0, 1 << 40, (hi - lo, len(ARG_KEYS))).tolist()
        yield [{"ph": "X", "pid": 90001, "tid": 90002 + k % lanes,
                "ts": (T0_NS + (k // lanes) * 1000) / 1000, "dur": 0.5,
                "name": f"QK_{k % 7}(t{k})", "cat": "aicore",
                "args": dict(zip(ARG_KEYS, v))}
               for k, v in zip(range(lo, hi), vals)]


def run_baseline(n: int, lanes: int, out: str) -> tuple[float, float]:
    """Wall and CPU seconds of dumping (and writing) the chunks; building them is not timed."""
    wall = cpu = 0.0
    with open(out, "wb") as f:
        for chunk in baseline_chunks(n, lanes):
            c0, t0 = time.process_time(), time.perf_counter()
            f.write(orjson.dumps(chunk))
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    return wall, cpu


def run_one(what: str, n: int, lanes: int, out: str, keep_gc: bool) -> dict:
    """Build the input untimed, then time one writer (or the baseline) writing `out`."""
    timeline = None if what == "baseline" else build_timeline(n, lanes)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if not keep_gc:
        gc.disable()
    c0, t0 = time.process_time(), time.perf_counter()
    if what == "baseline":
        wall, cpu = run_baseline(n, lanes, out)
    else:
        if what == "json":
            write_chrome_json(timeline, out)
        else:
            write_perfetto_trace(timeline, out)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall": wall, "cpu": cpu, "rss_rise_mb": (rss1 - rss0) / 1024,
            "size_mb": os.path.getsize(out) / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slices", type=int, default=200_000)
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--gc", action="store_true", help="leave the cyclic GC running")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each measurement; the fastest is printed (default 3)")
    ap.add_argument("--one", choices=["baseline", "json", "json.gz", "proto"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one.split(".")[0] if args.one != "json.gz" else "json",
                                 args.slices, args.lanes, args.out, args.gc)))
        return
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):  # interleaved, so a busy spell hits every writer
            for what, name in (("baseline", "b.json"), ("json", "t.json"),
                               ("json.gz", "t.json.gz"), ("proto", "t.pftrace")):
                cmd = [sys.executable, __file__, "--one", what, "--slices", str(args.slices),
                       "--lanes", str(args.lanes), "--out", os.path.join(tmp, name)]
                if args.gc:
                    cmd.append("--gc")
                r = subprocess.run(cmd, capture_output=True, text=True, check=True)
                runs.setdefault(what, []).append(json.loads(r.stdout))
    results = {what: {k: min(r[k] for r in rs) for k in rs[0]} for what, rs in runs.items()}
    base = results["baseline"]
    print(f"{args.slices:,} slices (10 int args, {args.lanes} lanes, one flow each), "
          f"GC {'running' if args.gc else 'paused'}")
    print(f"{'':10s} {'wall s':>8s} {'cpu s':>8s} {'us/slice':>9s} {'RSS rise MB':>12s} "
          f"{'size MB':>8s} {'wall/base':>10s} {'cpu/base':>9s}")
    for what, r in results.items():
        print(f"{what:10s} {r['wall']:8.2f} {r['cpu']:8.2f} {r['wall'] / args.slices * 1e6:9.2f} "
              f"{r['rss_rise_mb']:12.0f} {r['size_mb']:8.1f} {r['wall'] / base['wall']:10.2f} "
              f"{r['cpu'] / base['cpu']:9.2f}")
    print(f"protobuf / JSON wall: {results['proto']['wall'] / results['json']['wall']:.2f} "
          "(issue 8 target: <= 1.5)")


if __name__ == "__main__":
    main()
