#!/usr/bin/env python3
"""Scale benchmark: many ranks merged per rank on Dask, SQL over Parquet vs JSON, sizes.

    python3 benchmarks/bench_scale.py                     # 16 ranks x 100K, query at 1M
    python3 benchmarks/bench_scale.py --ranks 4 --tasks 20000 --query-tasks 100000
    python3 benchmarks/bench_scale.py --keep DIR          # keep the captures and outputs

Printed, measured in one run:

1. `--ranks` ranks of `--tasks` AICore tasks each (`rank<r>/d0/`, each the real capture
   `tmr_bgemm_case0_l4_depgen` repeated in time with its deps.json, as `bench_merge.py`
   builds it; hard links, so every rank is the same capture), merged by the single-process
   merge (`pypto-merge-traces dfx_outputs -o merged.pftrace`) and by `--per-rank OUTDIR` on
   the local Dask cluster (one worker process per usable CPU): wall, CPU (all processes) and
   the peak RSS of each process (the merge's; the driver's and each worker's).
2. The sizes of a `--query-tasks` run (all views, the merge's default) as Parquet tables,
   Chrome JSON and Perfetto protobuf, and the preset on those tables.
3. The preset "kernels by device time" over `--query-tasks` tasks: `pypto-profile query
   --preset kernels` on the Parquet dataset, against a plain program that reads our merged
   JSON with `orjson.loads` and computes the same table (both checked to agree), both of
   the merge with `--views` `--query-views` (default `worker`: orjson holds a JSON at about
   9x its size in memory, and the all-views JSON of 1M tasks is 3.7 GB).
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_merge import SOURCE, build_capture


def _source() -> Path:
    """The real capture: beside the checkout, else where the tests find the fixtures."""
    if SOURCE.is_dir():
        return SOURCE
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from simpler_fixtures import FIXTURES

    return FIXTURES / SOURCE.name

_WRAPPER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": r.returncode, "wall_s": wall, "cpu_s": u.ru_utime + u.ru_stime,
                  "peak_rss_mb": u.ru_maxrss / 1024, "stdout": r.stdout, "stderr": r.stderr}))
"""

# the per-rank merge in a process of its own: the driver's own peak RSS, each worker's
_PER_RANK = """
import json, resource, sys
from pypto.compile_profiling.query.per_rank import merge_per_rank
if __name__ == "__main__":
    r = merge_per_rank([sys.argv[1]], sys.argv[2], merge_shards=False)
    me = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"driver_rss_mb": me.ru_maxrss / 1024,
                      "driver_cpu_s": me.ru_utime + me.ru_stime,
                      "workers_rss_mb": [v / 2**20 for v in r.workers["workers_peak_rss"].values()],
                      "tasks": r.workers["tasks"], "counts": r.counts,
                      "summary": r.summary_lines[-4:]}))
"""

# our merged JSON read with orjson, the kernels table computed from its AICore events
_JSON_KERNELS = """
import json, sys, orjson
doc = orjson.loads(open(sys.argv[1], "rb").read())
caps = doc["otherData"]["captures"]
names = {int(k): v for k, v in caps[0]["kernels"].items()}
freq = caps[0]["clock_freq_hz"]
acc = {}
for ev in doc["traceEvents"]:
    if ev.get("cat") != "aicore" or ev.get("ph") != "X":
        continue
    a = ev["args"]
    k = names.get(a["kernel_id"], "(unknown kernel)")
    ns = (a["end_cycles"] - a["start_cycles"]) * 1e9 / freq
    r = acc.setdefault(k, [set(), 0, 0.0, 0.0, set()])
    r[0].add(a["task_id"]); r[1] += 1; r[2] += ns; r[3] = max(r[3], ns); r[4].add(a["core_type"])
rows = [{"kernel": k, "tasks": len(r[0]), "runs": r[1], "core_type": "+".join(sorted(r[4])),
         "device_total_us": r[2] / 1e3, "device_mean_us": r[2] / r[1] / 1e3,
         "device_max_us": r[3] / 1e3} for k, r in acc.items()]
rows.sort(key=lambda r: (-r["device_total_us"], r["kernel"]))
print(json.dumps(rows))
"""


def measured(cmd: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                       check=False, cwd=REPO)
    res = json.loads(r.stdout)
    if res["code"] != 0:
        raise SystemExit(f"{cmd[:3]} failed ({res['code']}):\n{res['stderr'][-3000:]}")
    return res


def merge_cmd(*args) -> list[str]:
    return [sys.executable, str(REPO / "tools" / "merge_traces.py"), *map(str, args)]


def build_ranks(base: Path, ranks: int, tasks: int) -> Path:
    root = base / "dfx_outputs"
    first = root / "rank0" / "d0"
    info = build_capture(_source(), first, tasks, with_deps=True)
    for r in range(1, ranks):
        d = root / f"rank{r}" / "d0"
        d.mkdir(parents=True)
        for f in first.iterdir():
            os.link(f, d / f.name)
    size = sum(f.stat().st_size for f in first.iterdir()) / 1e6
    print(f"{ranks} ranks x {info['aicore_tasks']:,} AICore tasks ({info['records']:,} records, "
          f"deps {info['deps_tasks']:,} tasks / {info['deps_edges']:,} edges; {size:.0f} MB "
          "a rank, hard links)")
    return root


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


_READS = """
import sys, time
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.query.placement_read import placement_capture
files = rs.discover_captures(sys.argv[1])[0]
for _ in range(2):
    for name, read in (("placement", placement_capture), ("whole", rs.read_capture)):
        t = time.process_time()
        read(files)
        print(name, time.process_time() - t)
"""


def section_ranks(base: Path, ranks: int, tasks: int) -> None:
    root = build_ranks(base, ranks, tasks)
    r = subprocess.run([sys.executable, "-c", _READS, str(root / "rank0" / "d0")],
                       capture_output=True, text=True, check=True, cwd=REPO)
    best: dict = {}
    for line in r.stdout.split("\n"):
        if line:
            name, cpu = line.split()
            best[name] = min(best.get(name, 1e9), float(cpu))
    print(f"one rank read for placement {best['placement']:.2f} s CPU, whole "
          f"{best['whole']:.2f} s ({best['placement'] / best['whole']:.2f}x; min of 2)")
    print(f"  before: {_load()}")
    single = measured(merge_cmd(root, "-o", base / "merged.pftrace"))
    size = (base / "merged.pftrace").stat().st_size / 1e6
    print(f"single process : {single['wall_s']:7.1f} s wall, {single['cpu_s']:7.1f} s CPU, "
          f"peak RSS {single['peak_rss_mb']:6.0f} MB (one process; protobuf {size:.0f} MB)")
    print(f"  between: {_load()}")
    res = measured([sys.executable, "-c", _PER_RANK, str(root), str(base / "per_rank")])
    info = json.loads(res["stdout"])
    pf = info["counts"]["pftrace_bytes"] / 1e6
    pq = info["counts"]["parquet_bytes"] / 1e6
    workers = ", ".join(f"{v:.0f}" for v in info["workers_rss_mb"])
    print(f"--per-rank     : {res['wall_s']:7.1f} s wall, {res['cpu_s']:7.1f} s CPU (driver "
          f"{info['driver_cpu_s']:.1f} s), peak RSS driver {info['driver_rss_mb']:.0f} MB, "
          f"workers {workers} MB ({len(info['workers_rss_mb'])} workers; shards {pf:.0f} MB "
          f"protobuf + {pq:.0f} MB Parquet)")
    walls = [t["wall_s"] for t in info["tasks"]]
    cpus = [t["cpu_s"] for t in info["tasks"]]
    print(f"  rank tasks: {len(walls)}, each {min(walls):.1f}-{max(walls):.1f} s wall, "
          f"{min(cpus):.1f}-{max(cpus):.1f} s CPU")
    print(f"  per-rank / single: {res['wall_s'] / single['wall_s']:.2f}x wall, "
          f"{res['cpu_s'] / single['cpu_s']:.2f}x CPU")
    print(f"  after: {_load()}")


def _merges(cap: Path, out: Path, views: str | None, formats) -> dict:
    extra = ["--views", views] if views else []
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for fmt, name in formats:
        r = measured(merge_cmd(cap, "-o", out / name, *extra))
        path = out / name
        sizes[fmt] = (sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
                      if path.is_dir() else path.stat().st_size)
        print(f"  merge to {fmt:8s}: {r['wall_s']:6.1f} s wall, {r['cpu_s']:6.1f} s CPU, peak "
              f"RSS {r['peak_rss_mb']:6.0f} MB, {sizes[fmt] / 1e6:8.1f} MB")
    return sizes


def _preset(dataset: Path) -> tuple[dict, list]:
    r = measured([sys.executable, "-m", "pypto.compile_profiling", "query", "--preset",
                  "kernels", str(dataset), "--format", "json"])
    return r, json.loads(r["stdout"])


def section_query(base: Path, tasks: int, views: str) -> None:
    cap = base / "query" / "dfx_outputs"
    info = build_capture(_source(), cap, tasks, with_deps=True)
    print(f"query run: {info['aicore_tasks']:,} AICore tasks")
    print(f"  all views (the merge's default), {_load()}:")
    sizes = _merges(cap, base / "query" / "all", None, (
        ("parquet", "run.parquet"), ("json", "merged.json"), ("perfetto", "merged.pftrace")))
    print(f"sizes: Parquet {sizes['parquet'] / 1e6:.1f} MB = "
          f"{sizes['parquet'] / sizes['json']:.3f}x the JSON ({sizes['json'] / 1e6:.0f} MB), "
          f"{sizes['parquet'] / sizes['perfetto']:.3f}x the protobuf "
          f"({sizes['perfetto'] / 1e6:.0f} MB)")
    full, _ = _preset(base / "query" / "all" / "run.parquet")
    print(f"preset kernels on the all-views Parquet: {full['wall_s']:6.2f} s wall, "
          f"{full['cpu_s']:6.2f} s CPU, peak RSS {full['peak_rss_mb']:6.0f} MB")
    for f in (base / "query" / "all").glob("merged.*"):
        f.unlink()
    # orjson holds a merged JSON as Python objects at about 9x its size: the all-views JSON
    # of 1M tasks (3.7 GB) would need more memory than this machine has, so the comparison
    # is made on the views `views` of the same capture, in both formats
    print(f"  views {views}, {_load()}:")
    _merges(cap, base / "query" / "some", views, (("parquet", "run.parquet"),
                                                  ("json", "merged.json")))
    pq, a = _preset(base / "query" / "some" / "run.parquet")
    js = measured([sys.executable, "-c", _JSON_KERNELS, str(base / "query" / "some" /
                                                           "merged.json")])
    b = json.loads(js["stdout"])
    same = [r["kernel"] for r in a] == [r["kernel"] for r in b] and all(
        (x["tasks"], x["runs"]) == (y["tasks"], y["runs"])
        and abs(x["device_total_us"] - y["device_total_us"]) <= 1e-9 * y["device_total_us"]
        for x, y in zip(a, b))
    print(f"preset kernels, Parquet + DuckDB: {pq['wall_s']:6.2f} s wall, {pq['cpu_s']:6.2f} s "
          f"CPU, peak RSS {pq['peak_rss_mb']:6.0f} MB")
    print(f"same table, JSON + orjson       : {js['wall_s']:6.2f} s wall, {js['cpu_s']:6.2f} s "
          f"CPU, peak RSS {js['peak_rss_mb']:6.0f} MB")
    print(f"  Parquet / JSON: {pq['wall_s'] / js['wall_s']:.3f}x wall, "
          f"{pq['cpu_s'] / js['cpu_s']:.3f}x CPU, {pq['peak_rss_mb'] / js['peak_rss_mb']:.3f}x "
          f"peak RSS; tables agree: {same}")
    print(f"  after: {_load()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--tasks", type=int, default=100_000, help="AICore tasks per rank")
    ap.add_argument("--query-tasks", type=int, default=1_000_000)
    ap.add_argument("--query-views", default="worker",
                    help="--views of the merges read by orjson and DuckDB (default worker)")
    ap.add_argument("--skip", default="", help="ranks,query: sections to leave out")
    ap.add_argument("--keep", type=Path, help="keep the captures and outputs here")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print(f"{len(os.sched_getaffinity(0))} usable CPUs, {_load()}")
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        if "ranks" not in skip:
            section_ranks(base, args.ranks, args.tasks)
        if "query" not in skip:
            section_query(base, args.query_tasks, args.query_views)
        print(f"({time.perf_counter() - t:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
