"""Inputs shared by the merge tests (a helper module, no tests): the real Simpler captures and
compile traces made to fit them.

`compile_trace_around(capture_dir)` writes a trace.json in the format of
`pypto/compile_profiling/chrome_trace.py` whose `device_execution` stage brackets the
capture's host-side span (its `[STRACE] chip.run` span, or its clock anchors), on the same
pid as the Simpler run, as happens when `pypto.runtime.run` drives Simpler in-process.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from simpler_fixtures import CASES, FIXTURES

__all__ = ["CALIBRATED", "CASES", "ESTIMATED", "FIXTURES", "capture_host_facts",
           "compile_trace_around", "kernel_names"]

CALIBRATED = [c for c in CASES if c.startswith("hbg_")]
ESTIMATED = [c for c in CASES if c.startswith("tmr_")]

_ANCHOR = re.compile(r"\[CLOCK_ANCHOR\] v=1 pid=(\d+) mono_ns=(\d+) wall_ns=(\d+)")
_RUN = re.compile(r"\[STRACE\] .*?pid=(\d+) tid=(\d+) .*?name=chip\.run ts=(\d+) dur=(\d+)")


def capture_host_facts(capture_dir: Path) -> dict:
    """pid, clock anchor and the host span of the Simpler run, from its log."""
    text = (capture_dir / "host_log.txt").read_text()
    anchor = _ANCHOR.search(text)
    if anchor is None:
        raise AssertionError(f"{capture_dir}/host_log.txt: no [CLOCK_ANCHOR] line")
    pid, mono, wall = map(int, anchor.groups())
    run = _RUN.search(text)
    facts = {"pid": pid, "mono_ns": mono, "wall_ns": wall}
    if run:
        facts.update(tid=int(run.group(2)), run_start=int(run.group(3)),
                     run_end=int(run.group(3)) + int(run.group(4)))
    return facts


def kernel_names(capture_dir: Path) -> list[str]:
    for p in capture_dir.glob("name_map_*.json"):
        return sorted(json.loads(p.read_text())["callable_id_to_name"].values())
    return []


def _x(name, cat, start_ns, end_ns, pid, tid, args=None):
    return {"ph": "X", "name": name, "cat": cat, "ts": start_ns / 1000,
            "dur": (end_ns - start_ns) / 1000, "pid": pid, "tid": tid, "args": args or {}}


def compile_trace_around(capture_dir: Path, out: Path, *, host: str = "testhost",
                         pid: int | None = None, worker_tid: int = 777001) -> dict:
    """Write a compile trace.json around the capture; return its key times (ns)."""
    f = capture_host_facts(capture_dir)
    pid = f["pid"] if pid is None else pid
    tid = f.get("tid", pid)
    run_start = f.get("run_start", f["mono_ns"] + 10_000_000)
    run_end = f.get("run_end", run_start + 50_000_000)
    exec_start, exec_end = run_start - 1_000_000, run_end + 1_000_000
    t0 = exec_start - 40_000_000
    names = kernel_names(capture_dir) or ["kernel_a"]
    ev = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "PyPTO compile"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "MainThread"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": worker_tid,
         "args": {"name": "codegen_0"}},
        _x("parse", "parse", t0, t0 + 2_000_000, pid, tid),
        _x("compile", "compile", t0 + 2_000_000, exec_start - 1_000_000, pid, tid),
        _x("passes", "pass", t0 + 2_500_000, t0 + 10_000_000, pid, tid),
        _x("codegen", "codegen", t0 + 10_000_000, exec_start - 2_000_000, pid, tid),
        _x("device_execution", "device", exec_start, exec_end, pid, tid),
    ]
    step = (exec_start - 3_000_000 - (t0 + 11_000_000)) // max(1, len(names))
    for i, name in enumerate(names):
        s = t0 + 11_000_000 + i * step
        ev.append(_x(f"kernel_codegen:{name}", "codegen", s, s + step - 1000, pid, worker_tid,
                     {"kernel": name}))
    doc = {"displayTimeUnit": "ms",
           "otherData": {"clock": "CLOCK_MONOTONIC", "host": host, "pid": pid,
                         "clock_anchor": {"monotonic_ns": f["mono_ns"], "wall_ns": f["wall_ns"],
                                          "uncertainty_ns": 50},
                         "pypto_version": "0.1.0", "total_seconds": (exec_end - t0) / 1e9,
                         "producer": "pypto.compile_profiling"},
           "traceEvents": ev}
    out.write_text(json.dumps(doc))
    return {"exec_start": exec_start, "exec_end": exec_end, "kernels": names, "pid": pid}
