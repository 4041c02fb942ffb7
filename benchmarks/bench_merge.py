#!/usr/bin/env python3
"""Merge benchmark: a big level-4 capture made by repeating a real one in time.

    python3 benchmarks/bench_merge.py                  # 100,000 AICore tasks (~545,000 records)
    python3 benchmarks/bench_merge.py --tasks 1000000  # the 1M case
    python3 benchmarks/bench_merge.py --keep DIR       # keep the generated capture and outputs
    python3 benchmarks/bench_merge.py --capture DIR/dfx_outputs   # merge a kept capture again
    python3 benchmarks/bench_merge.py --layout both    # August and today's layout, alternated

`--layout today` writes the capture in today's Simpler records layout (scheduler_tasks,
scheduler_records streams with metrics, run_epoch: tests/support/simpler_today.py's rewrite of the
same records); `--layout both` builds both from the same records and merges them alternately
(`--repeat` rounds), printing each and today's / August's ratio (target: <= 1.10x).

The source is a real Simpler capture (`tmr_bgemm_case0_l4_depgen`: 1,000 tasks, level 4, with
deps.json and a name map). Copy k gets fresh task ids (local id + k * stride, ring kept), fresh
per-core `reg_task_id`s, and every cycle value shifted by k * (capture span + 1 ms), so the copies
follow one another like consecutive runs of one long session. deps.json is repeated the same
way (tasks and edges, tensor list once).

Each merge runs `tools/merge_traces.py` in a child process (the real CLI, JSON then protobuf)
under a small wrapper that reports `resource.getrusage(RUSAGE_CHILDREN)`: the CPU time is all
of the merge's work, the protobuf writer's forked second process included (it is waited for),
and `ru_maxrss` the peak RSS of the biggest of them.

The baseline, run the same way in the same session: a plain program that `orjson.loads` the
records file and `orjson.dumps` as many Chrome events as the merge writes (its slices, two
events per arrow and its counter samples: one dict per record, its fields as args, the records
repeated as often as needed), in chunks, to a file. Printed: wall time, CPU time
(user+sys), peak RSS and output size of each, the merge/baseline ratios and the targets:
merge CPU <= 1.0x and peak RSS <= 1.0x the baseline's; at 1M tasks JSON <= 20 s wall and
< 2 GB peak; protobuf <= 1.5x the JSON wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "support"))
from simpler_fixtures import FIXTURES  # where the real captures are (worktrees too)
from simpler_today import to_today  # the documented rewrite into today's layout, reused

SOURCE = FIXTURES / "tmr_bgemm_case0_l4_depgen"
GAP_NS = 1_000_000

TARGETS = {1_000_000: (20.0, 2000)}      # JSON wall s, peak MB
LAYOUT_TARGET = 1.10                      # today's layout / August's, merge wall and CPU
RATIO_TARGET = 1.0                        # merge CPU and peak RSS / the baseline's
PROTO_TARGET = 1.5                        # protobuf wall / JSON wall

_BASELINE = """
import sys, orjson
records, out, n_events = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(records, "rb") as f:
    doc = orjson.loads(f.read())
def events():
    for i, r in enumerate(doc["aicore_tasks"]):
        yield {"ph": "X", "pid": 1, "tid": r[0], "ts": r[3] / 50, "dur": (r[4] - r[3]) / 50,
               "name": f"task({r[1]})", "cat": "aicore",
               "args": {"core_id": r[0], "task_id": r[1], "reg_task_id": r[2],
                        "start_cycles": r[3], "end_cycles": r[4], "receive_to_start_cycles": r[5]}}
    for key in ("aicpu_scheduler_phases", "aicpu_orchestrator_phases"):
        for t, thread in enumerate(doc.get(key, [])):
            for ph in thread:
                yield {"ph": "X", "pid": 2, "tid": t, "ts": ph["start_cycles"] / 50,
                       "dur": (ph["end_cycles"] - ph["start_cycles"]) / 50,
                       "name": ph.get("kind", "submit"), "cat": key, "args": ph}
def repeated():
    while True:
        yield from events()
with open(out, "wb") as f:
    f.write(b'{"traceEvents":[')
    chunk, first = [], True
    for k, ev in zip(range(n_events), repeated()):
        chunk.append(ev)
        if len(chunk) == 50000:
            f.write((b"" if first else b",") + orjson.dumps(chunk)[1:-1]); chunk, first = [], False
    if chunk:
        f.write((b"" if first else b",") + orjson.dumps(chunk)[1:-1])
    f.write(b"]}")
"""

_WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.returncode} {wall:.3f} {u.ru_maxrss} {u.ru_utime + u.ru_stime:.3f}")
sys.stderr.write(r.stderr)
"""


def _shift_id(task_id: int, k: int, stride: int) -> int:
    return (task_id & ~0xFFFFFFFF) | ((task_id & 0xFFFFFFFF) + k * stride)


def build_capture(source: Path, out_dir: Path, tasks: int, with_deps: bool = True,
                  layout: str = "august", deps_from: Path | None = None) -> dict:
    """Write chip_swimlane_records.json (in `layout`: "august" or "today"), deps.json and
    the name map for `tasks` AICore tasks (`deps_from`: a deps.json already built for the
    same records, hard-linked instead of written again)."""
    rec = json.loads((source / "chip_swimlane_records.json").read_text())
    deps = json.loads((source / "deps.json").read_text())
    n_src = len(rec["aicore_tasks"])
    copies = -(-tasks // n_src)
    freq = rec["metadata"]["clock_freq_hz"]
    cyc = []
    for row in rec["aicore_tasks"]:
        cyc += [row[3] - row[5], row[4]]
    for row in rec["aicpu_tasks"]:
        cyc += row[2:4]
    for stream in ("aicpu_scheduler_phases", "aicpu_orchestrator_phases"):
        for thread in rec.get(stream, []):
            for ph in thread:
                cyc += [ph["start_cycles"], ph["end_cycles"]]
    span = max(cyc) - min(cyc) + GAP_NS * freq // 1_000_000_000
    stride = max(t & 0xFFFFFFFF for t in (row[1] for row in rec["aicore_tasks"])) + 1
    stride = max(stride, max(int(t["task_id"]) & 0xFFFFFFFF for t in deps["tasks"]) + 1)
    reg_stride = max(row[2] for row in rec["aicore_tasks"]) + 1
    submits = max((ph["submit_idx"] for th in rec.get("aicpu_orchestrator_phases", []) for ph in th),
                  default=0) + 1

    out = {"chip_swimlane_level": rec["chip_swimlane_level"], "metadata": rec["metadata"],
           "aicore_tasks": [], "aicpu_tasks": [],
           "aicpu_scheduler_phases": [[] for _ in rec.get("aicpu_scheduler_phases", [])],
           "aicpu_orchestrator_phases": [[] for _ in rec.get("aicpu_orchestrator_phases", [])]}
    dep_tasks, dep_edges = [], []
    made = 0
    for k in range(copies):
        dc = k * span
        rows = rec["aicore_tasks"]
        if made + len(rows) > tasks:
            rows = rows[: tasks - made]
        keep_regs = {(r[0], r[2]) for r in rows}
        for r in rows:
            out["aicore_tasks"].append([r[0], _shift_id(r[1], k, stride), r[2] + k * reg_stride,
                                        r[3] + dc, r[4] + dc, *r[5:]])
        for r in rec["aicpu_tasks"]:
            if (r[0], r[1]) in keep_regs:
                out["aicpu_tasks"].append([r[0], r[1] + k * reg_stride, r[2] + dc, r[3] + dc])
        for i, thread in enumerate(rec.get("aicpu_scheduler_phases", [])):
            dst = out["aicpu_scheduler_phases"][i]
            for ph in thread:
                q = dict(ph)
                q["start_cycles"] += dc
                q["end_cycles"] += dc
                dst.append(q)
        for i, thread in enumerate(rec.get("aicpu_orchestrator_phases", [])):
            dst = out["aicpu_orchestrator_phases"][i]
            for ph in thread:
                q = dict(ph)
                q["start_cycles"] += dc
                q["end_cycles"] += dc
                q["task_id"] = _shift_id(ph["task_id"], k, stride)
                q["submit_idx"] = ph["submit_idx"] + k * submits
                dst.append(q)
        for t in deps["tasks"]:
            q = dict(t)
            q["task_id"] = str(_shift_id(int(t["task_id"]), k, stride))
            dep_tasks.append(q)
        for e in deps["edges"]:
            q = dict(e)
            q["pred"] = str(_shift_id(int(e["pred"]), k, stride))
            q["succ"] = str(_shift_id(int(e["succ"]), k, stride))
            dep_edges.append(q)
        made += len(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = (len(out["aicore_tasks"]) + len(out["aicpu_tasks"])
               + sum(map(len, out["aicpu_scheduler_phases"]))
               + sum(map(len, out["aicpu_orchestrator_phases"])))
    with open(out_dir / "chip_swimlane_records.json", "w") as f:
        json.dump(to_today(out) if layout == "today" else out, f, separators=(",", ":"))
    if with_deps and deps_from is not None:
        os.link(deps_from, out_dir / "deps.json")
    elif with_deps:
        with open(out_dir / "deps.json", "w") as f:
            json.dump({"tasks": dep_tasks, "tensors": deps.get("tensors", []),
                       "edges": dep_edges}, f, separators=(",", ":"))
    for nm in source.glob("name_map_*.json"):
        (out_dir / nm.name).write_text(nm.read_text())
    return {"aicore_tasks": len(out["aicore_tasks"]), "records": records,
            "deps_tasks": len(dep_tasks), "deps_edges": len(dep_edges)}


def run_merge(capture: Path, output: Path) -> dict:
    return _measured([sys.executable, str(REPO / "tools" / "merge_traces.py"), str(capture),
                      "-o", str(output)], output)


def run_baseline(capture: Path, output: Path, n_events: int) -> dict:
    return _measured([sys.executable, "-c", _BASELINE, str(capture / "chip_swimlane_records.json"),
                      str(output), str(n_events)], output)


def _measured(command: list[str], output: Path) -> dict:
    cmd = [sys.executable, "-c", _WRAPPER, *command]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    code, wall, rss_kb, cpu = r.stdout.split()
    if code != "0":
        raise SystemExit(f"{command[1]} failed ({code}):\n{r.stderr}")
    summary = [ln for ln in r.stderr.splitlines() if ln.startswith("wrote ")]
    return {"wall_s": float(wall), "cpu_s": float(cpu), "peak_rss_mb": int(rss_kb) / 1024,
            "size_mb": output.stat().st_size / 1e6, "summary": summary[0] if summary else ""}


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _print(what: str, res: dict) -> None:
    print(f"{what:8s}: {res['wall_s']:6.2f} s wall ({res['cpu_s']:.2f} s CPU), "
          f"peak RSS {res['peak_rss_mb']:7.0f} MB, output {res['size_mb']:8.1f} MB")


def _layout_ratios(results: dict, formats: list[str]) -> None:
    """Today's layout against August's, per format: the ratio of the fastest of each."""
    for fmt in formats:
        a, t = results[("august", fmt)], results[("today", fmt)]
        wall = min(r["wall_s"] for r in t) / min(r["wall_s"] for r in a)
        cpu = min(r["cpu_s"] for r in t) / min(r["cpu_s"] for r in a)
        rss = max(r["peak_rss_mb"] for r in t) / max(r["peak_rss_mb"] for r in a)
        print(f"today/august {fmt:8s}: wall {wall:.3f}x, CPU {cpu:.3f}x "
              f"({_met(max(wall, cpu) <= LAYOUT_TARGET)} <= {LAYOUT_TARGET}x), peak RSS "
              f"{rss:.2f}x (min of {len(a)} runs each)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000, help="AICore tasks to generate")
    ap.add_argument("--source", type=Path, default=SOURCE, help="real capture to repeat")
    ap.add_argument("--keep", type=Path, help="directory to keep the capture and outputs in")
    ap.add_argument("--formats", default="json,perfetto", help="json,perfetto (default both)")
    ap.add_argument("--capture", type=Path,
                    help="merge this already built capture dir (e.g. a --keep DIR/dfx_outputs)")
    ap.add_argument("--no-deps", action="store_true",
                    help="leave deps.json out (swimlane records and name map only)")
    ap.add_argument("--layout", choices=["august", "today", "both"], default="august",
                    help="Simpler records layout of the generated capture (default: august)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --layout both: rounds of alternated merges (min reported)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: merge the captures a previous run kept there")
    args = ap.parse_args()
    formats = args.formats.split(",")
    layouts = ["august", "today"] if args.layout == "both" else [args.layout]
    with tempfile.TemporaryDirectory(prefix="bench_merge_") as tmp:
        base = args.keep or Path(tmp)
        caps = {}
        if args.capture:
            caps[layouts[0]] = args.capture
            size = sum(p.stat().st_size for p in args.capture.iterdir()) / 1e6
            print(f"capture: {args.capture} as built before ({size:.0f} MB on disk; --tasks "
                  f"{args.tasks:,} assumed for the target)")
            layouts = layouts[:1]
        else:
            for layout in layouts:
                cap = caps[layout] = base / "dfx_outputs" if len(layouts) == 1 \
                    else base / layout / "dfx_outputs"
                if args.reuse and (cap / "chip_swimlane_records.json").exists():
                    size = sum(p.stat().st_size for p in cap.iterdir()) / 1e6
                    print(f"capture ({layout} layout): {cap} kept before ({size:.0f} MB)")
                    continue
                t = time.perf_counter()
                deps_from = None if layout == layouts[0] or args.no_deps \
                    else caps[layouts[0]] / "deps.json"
                info = build_capture(args.source, cap, args.tasks, with_deps=not args.no_deps,
                                     layout=layout, deps_from=deps_from)
                size = sum(p.stat().st_size for p in cap.iterdir()) / 1e6
                print(f"capture ({layout} layout): {info['aicore_tasks']:,} AICore tasks, "
                      f"{info['records']:,} records, "
                      + (f"deps {info['deps_tasks']:,} tasks / {info['deps_edges']:,} edges, "
                         if not args.no_deps else "no deps.json, ")
                      + f"{size:.0f} MB on disk (built in {time.perf_counter() - t:.1f} s)")
        runs: dict[tuple[str, str], list[dict]] = {}
        rounds = args.repeat if len(layouts) > 1 else 1
        for _ in range(rounds):
            for layout in layouts:
                for fmt in formats:
                    out = caps[layout].parent / ("merged.json" if fmt == "json"
                                                 else "merged.pftrace")
                    res = run_merge(caps[layout], out)
                    runs.setdefault((layout, fmt), []).append(res)
                    _print(f"{layout[:6]} {fmt}" if len(layouts) > 1 else fmt, res)
                    print(f"          {res['summary']}")
        first = layouts[0]
        results = {fmt: min(runs[(first, fmt)], key=lambda r: r["wall_s"]) for fmt in formats}
        if "json" in results and first == "august":
            m = re.search(r"(\d+) slices, (\d+) flows, (\d+) counter samples",
                          results["json"]["summary"])
            n_events = int(m.group(1)) + 2 * int(m.group(2)) + int(m.group(3)) if m else 0
            base_res = run_baseline(caps[first], caps[first].parent / "baseline.json", n_events)
            _print("baseline", base_res)
            print(f"          orjson.loads of the records file + orjson.dumps of {n_events:,} "
                  "Chrome events (the merge's slices, 2 per arrow, counter samples)")
            j = results["json"]
            cpu_r = j["cpu_s"] / base_res["cpu_s"]
            rss_r = j["peak_rss_mb"] / base_res["peak_rss_mb"]
            print(f"merge/baseline: CPU {cpu_r:.2f}x ({_met(cpu_r <= RATIO_TARGET)} <= "
                  f"{RATIO_TARGET}x), peak RSS {rss_r:.2f}x ({_met(rss_r <= RATIO_TARGET)} <= "
                  f"{RATIO_TARGET}x)")
        if "json" in results:
            j = results["json"]
            target = TARGETS.get(args.tasks)
            if target:
                print(f"target JSON <= {target[0]:g} s wall: {_met(j['wall_s'] <= target[0])}; "
                      f"< {target[1]} MB peak: {_met(j['peak_rss_mb'] < target[1])}")
        if "json" in results and "perfetto" in results:
            j, p = results["json"], results["perfetto"]
            ratio = p["wall_s"] / j["wall_s"]
            print(f"protobuf vs JSON: {p['size_mb'] / j['size_mb']:.2f}x the size, "
                  f"{ratio:.2f}x the wall time ({_met(ratio <= PROTO_TARGET)} <= "
                  f"{PROTO_TARGET}x)")
        if len(layouts) > 1:
            _layout_ratios(runs, formats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
