#!/usr/bin/env python3
"""Every output format against the byte floor and against JSON, and analyze against the merge.

    python3 benchmarks/bench_formats.py                   # 100,000 and 1,000,000 tasks
    python3 benchmarks/bench_formats.py --tasks 100000    # one size
    python3 benchmarks/bench_formats.py --rounds 5        # alternated rounds (medians)
    python3 benchmarks/bench_formats.py --smoke           # CI-sized: 2,000 tasks, 1 round

The capture is bench_merge.py's: the real `tmr_bgemm_case0_l4_depgen` (level 4, deps.json,
name map) repeated in time, built in a child in August's layout and again in today's (the
same records rewritten). Every measurement is a command in a child process under a wrapper
that reports `getrusage(RUSAGE_CHILDREN)`: CPU is user + system of all its processes (the
protobuf writer's forked helper included), peak RSS the biggest one's. Before each, its output
is removed and `os.sync()` writes the dirty pages back, so every command writes a new file to
a clean page cache. Per round, in turn:

- `pypto-merge-traces CAPTURE -o merged.json` and the same with `--analyze report.txt` (the
  analysis from what the merge read: its extra CPU over the JSON merge), side by side, their
  order swapped every other round;
- `-o merged.pftrace`, `-o merged.parquet`;
- the byte floor of each format: a child that reads the capture's files and writes as many
  bytes as that format's output, in 16 MB writes (no parsing, no encoding: the I/O alone),
  3 times;
- `pypto-profile analyze CAPTURE -o report.txt`;
- bench_merge.py's orjson baseline: `orjson.loads` of the records file and `orjson.dumps` of as
  many Chrome events as the JSON merge wrote (what parsing and printing cost with the fastest
  JSON library, with none of the merge's work).

Then once per layout, each in a fresh child: the per-rank driver's placement read
(`placement_read.placement_capture`) and the records file read whole (`read_records`, what
the placement read of today's layout was before), peak RSS and the pickled size of what a
Dask worker sends the driver.

Printed: per format its CPU (and user time apart: the system time of the same write wanders
here) and peak RSS (medians of the rounds), output size, CPU over its
byte floor (the least of its runs, as the floor is the least the machine needs) and CPU
over JSON's; analyze over the merge; the placement read's peak RSS and result in both
layouts next to the whole read's. The targets (issue 34): pftrace CPU <= 1.0x JSON; JSON
CPU <= 6x its byte floor at 100K tasks and <= 4x at 1M; the analysis inside a merge <= 0.3x
the merge.
`--smoke` runs the same steps at CI size, so the script itself never rots; its figures say
nothing about the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_analysis import build_in_child  # bench_merge's builder, in a child
from bench_merge import _BASELINE, SOURCE  # the real capture, the orjson baseline

FORMATS = {"json": "merged.json", "pftrace": "merged.pftrace", "parquet": "merged.parquet"}
PROTO_TARGET = 1.0                              # pftrace CPU / JSON CPU
FLOOR_TARGET = {100_000: 6.0, 1_000_000: 4.0}   # JSON CPU / its byte floor
ANALYZE_TARGET = 0.3                            # --analyze's extra CPU / the merge's
# the floor is taken 3 times a round, the least kept: right after a big write, the same write
# of 369 MB measured 0.16-1.96 s CPU here (the kernel still reclaiming pages), 0.12 s at best
FLOOR_TRIES = 3

_WRAPPER = """
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": r.returncode, "cpu_s": u.ru_utime + u.ru_stime, "user_s": u.ru_utime,
                  "peak_rss_mb": u.ru_maxrss / 1024, "stderr": r.stderr[-2000:]}))
"""

_FLOOR = """
import sys
out, n = sys.argv[1], int(sys.argv[2])
for p in sys.argv[3:]:
    with open(p, "rb") as f:
        while f.read(1 << 24):
            pass
block = bytes(1 << 24)
with open(out, "wb") as f:
    while n > 0:
        f.write(block[:n] if n < len(block) else block)
        n -= len(block)
"""

_READ = """
import json, pickle, resource, sys
from pypto.compile_profiling.foundation.gc_pause import gc_paused
from pypto.compile_profiling.trace_merge.read.read_records import read_records
from pypto.compile_profiling.trace_merge.read.read_simpler import discover_captures
from pypto.compile_profiling.query.placement_read import placement_capture
(files,) = discover_captures(sys.argv[2])
with gc_paused():
    got = placement_capture(files) if sys.argv[1] == "placement" else read_records(files.records)
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sent_mb": len(pickle.dumps(got)) / 1e6,
                  "layout": (got.records if sys.argv[1] == "placement" else got).layout}))
"""


def measured(command: list[str], output: Path) -> dict:
    """`command`'s CPU and peak RSS, run after `output` (the file or directory it writes) is
    removed and the page cache's dirty pages are written back: each command starts from the
    same state of the file system (writing over a file just written, or while the kernel
    flushes the one before, cost this machine up to 3x the CPU of the same write)."""
    if output.is_dir():
        shutil.rmtree(output)
    elif output.exists():
        output.unlink()
    os.sync()
    r = subprocess.run([sys.executable, "-c", _WRAPPER, *command], capture_output=True,
                       text=True, check=False)
    res = json.loads(r.stdout)
    if res["code"]:
        raise SystemExit(f"{' '.join(command[:4])} ... failed ({res['code']}):\n"
                         f"{res['stderr']}")
    return res


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def merge_cmd(cap: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "tools" / "merge_traces.py"), str(cap), "-o", str(out),
            *extra]


def one_round(cap: Path, work: Path, runs: dict, turn: int) -> None:
    """One round: the JSON merge and the same with --analyze side by side (their order
    swapped every other round: what runs first after a big write pays for the kernel's
    clean-up), the other formats, each format's byte floor, then analyze alone."""
    inputs = [str(p) for p in sorted(cap.iterdir())]
    report = work / "report.txt"
    for what in ("json", "json + analyze")[::1 if turn % 2 == 0 else -1]:
        out = work / FORMATS["json"]
        extra = ("--analyze", str(report)) if what != "json" else ()
        res = measured(merge_cmd(cap, out, *extra), out)
        res["bytes"] = size_of(out)
        runs.setdefault(what, []).append(res)
    for fmt, name in FORMATS.items():
        if fmt != "json":
            out = work / name
            res = measured(merge_cmd(cap, out), out)
            res["bytes"] = size_of(out)
            runs.setdefault(fmt, []).append(res)
    for fmt in FORMATS:
        for _ in range(FLOOR_TRIES):
            floor = measured([sys.executable, "-c", _FLOOR, str(work / "floor.bin"),
                              str(runs[fmt][-1]["bytes"]), *inputs], work / "floor.bin")
            runs.setdefault(f"floor {fmt}", []).append(floor)
    runs.setdefault("analyze", []).append(measured(
        [sys.executable, "-m", "pypto.compile_profiling", "analyze", str(cap), "-o",
         str(report)], report))
    counts = re.search(r"(\d+) slices, (\d+) flows, (\d+) counter samples",
                       runs["json"][-1]["stderr"])
    events = int(counts[1]) + 2 * int(counts[2]) + int(counts[3])
    out = work / "baseline.json"
    runs.setdefault("orjson", []).append(measured(
        [sys.executable, "-c", _BASELINE, str(cap / "chip_swimlane_records.json"), str(out),
         str(events)], out))


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(n: int, runs: dict, smoke: bool) -> None:
    json_cpu, json_user = median(runs["json"], "cpu_s"), median(runs["json"], "user_s")
    print(f"  {'format':8s} {'CPU s':>7s} {'user s':>7s} {'peak MB':>8s} {'out MB':>8s} "
          f"{'floor s':>8s} {'x floor':>8s} {'x JSON':>7s} {'(user)':>7s}")
    for fmt in FORMATS:
        cpu, user = median(runs[fmt], "cpu_s"), median(runs[fmt], "user_s")
        floor = min(r["cpu_s"] for r in runs[f"floor {fmt}"])
        print(f"  {fmt:8s} {cpu:7.2f} {user:7.2f} {median(runs[fmt], 'peak_rss_mb'):8.0f} "
              f"{runs[fmt][-1]['bytes'] / 1e6:8.1f} {floor:8.3f} {cpu / floor:8.2f} "
              f"{cpu / json_cpu:7.2f} {user / json_user:7.2f}")
    rounds = len(runs["json"])
    print(f"  (CPU = user + system, and peak RSS: medians of {rounds} alternated round(s); "
          f"floor: the least of {FLOOR_TRIES * rounds} runs reading the inputs and writing as "
          "many bytes)")
    base = median(runs["orjson"], "cpu_s")
    json_floor = min(r["cpu_s"] for r in runs["floor json"])
    print(f"  orjson baseline (loads of the records file, dumps of as many events): {base:.2f} s "
          f"CPU = {base / json_floor:.2f}x the JSON floor; the JSON merge is {json_cpu / base:.2f}x "
          "it")
    analyze = median(runs["analyze"], "cpu_s")
    inside = median(runs["json + analyze"], "cpu_s") - json_cpu
    inside_user = median(runs["json + analyze"], "user_s") - json_user
    print(f"  analyze alone {analyze:.2f} s CPU = {analyze / json_cpu:.2f}x the JSON merge; "
          f"inside the merge (--analyze) {inside:+.2f} s = {inside / json_cpu:+.2f}x "
          f"(user time alone: {inside_user:+.2f} s = {inside_user / json_user:+.2f}x)")
    if smoke:
        print("  (smoke run: CI-sized, the targets are not judged)")
        return
    proto = median(runs["pftrace"], "cpu_s") / json_cpu
    floor_x = json_cpu / json_floor
    print(f"  targets: pftrace {proto:.2f}x JSON ({_met(proto <= PROTO_TARGET)} <= "
          f"{PROTO_TARGET}x); analyze in the merge {inside / json_cpu:.2f}x "
          f"({_met(inside / json_cpu <= ANALYZE_TARGET)} <= {ANALYZE_TARGET}x)"
          + (f"; JSON {floor_x:.2f}x its floor ({_met(floor_x <= FLOOR_TARGET[n])} <= "
             f"{FLOOR_TARGET[n]}x)" if n in FLOOR_TARGET else ""))


def placement_rss(caps: dict[str, Path]) -> None:
    for layout, cap in caps.items():
        got = {}
        for mode in ("placement", "records"):
            r = subprocess.run([sys.executable, "-c", _READ, mode, str(cap)],
                               capture_output=True, text=True, check=False)
            if r.returncode:
                raise SystemExit(f"the {mode} read failed:\n{r.stderr}")
            got[mode] = json.loads(r.stdout)
            assert got[mode]["layout"] == layout, got[mode]
        p, w = got["placement"], got["records"]
        print(f"  per-rank placement read, {layout:6s} layout: peak RSS {p['peak_rss_mb']:5.0f} "
              f"MB, {p['sent_mb']:.3f} MB to the driver (the records file read whole: "
              f"{w['peak_rss_mb']:.0f} MB, {w['sent_mb']:.1f} MB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, action="append",
                    help="AICore tasks (repeatable; default 100000 and 1000000)")
    ap.add_argument("--rounds", type=int, help="alternated rounds per size (default: 3 at "
                                               "100K tasks or fewer, else 1)")
    ap.add_argument("--source", type=Path, default=SOURCE, help="real capture to repeat")
    ap.add_argument("--smoke", action="store_true",
                    help="CI-sized: 2,000 tasks, one round (seconds; the targets not judged)")
    args = ap.parse_args()
    sizes = [2000] if args.smoke else (args.tasks or [100_000, 1_000_000])
    if not (args.source / "chip_swimlane_records.json").is_file():
        print(f"{args.source}: no chip_swimlane_records.json (the real capture to repeat)",
              file=sys.stderr)
        return 2
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench_formats_") as tmp:
            tmp = Path(tmp)
            t = time.perf_counter()
            caps = {layout: tmp / layout / "dfx_outputs" for layout in ("august", "today")}
            info = {layout: build_in_child(args.source, cap, n, layout)
                    for layout, cap in caps.items()}
            size = sum(p.stat().st_size for p in caps["august"].iterdir()) / 1e6
            print(f"{info['august']['aicore_tasks']:,} tasks: {info['august']['records']:,} "
                  f"records, deps {info['august']['deps_edges']:,} edges, {size:.0f} MB "
                  f"input (both layouts built in {time.perf_counter() - t:.1f} s)")
            work = tmp / "out"
            work.mkdir()
            runs: dict[str, list[dict]] = {}
            rounds = 1 if args.smoke else args.rounds or (3 if n <= 100_000 else 1)
            for turn in range(rounds):
                one_round(caps["august"], work, runs, turn)
            report(n, runs, args.smoke)
            placement_rss(caps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
