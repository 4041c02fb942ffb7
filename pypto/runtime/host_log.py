"""The simulated device's host log, as a Simpler run writes it (`host.<pid>.log`).

One `[CLOCK_ANCHOR]` line (this process's CLOCK_MONOTONIC and wall clock, read together)
and the `[STRACE]` spans of the run with today's names, emitted as Simpler does on scope
exit, children first:

    chip.run                       the execution; dispatch identity attrs (direct-chip lane:
                                   run_id=0 dispatch_id=0, run_epoch counts runs per process)
    chip.run.bind                  arena, host orchestration, uploads (HBG), input copies
    chip.run.runner_run            the device threads started to all joined
    chip.run.runner_run.device_wall          clk=dev, ts=0: the AICPU threads' wall, with
                                             the device counter's absolute bounds as Simpler's
                                             newer writer adds them: dev_id, dev_start_cycle,
                                             dev_end_cycle, dev_cnt_hz
    chip.run.runner_run.device_wall.orch     clk=dev (tensormap_and_ringbuffer only): the
    chip.run.runner_run.device_wall.sched    device orchestrator's and the schedulers' windows
    chip.run.runner_run.device_wall.task_slot_<N>   clk=dev: dispatch -> finish of the tasks
                                             tagged `timing_slot=N` (min/max over them)

Device spans are ns on the device-phase timeline (0 = the earliest sub-phase start, or the
wall's start without sub-phases: the cycle `dev_start_cycle`), converted from the device
counter as Simpler's host does from the AICPU's cycle stamps, so they agree with the
capture's records cycle for cycle. No `aicpu_launch` marker (a sim platform has none).

The log's records pass through a queue of `queue` records, as Simpler's host logger's
(4096): a run that emits more loses the rest, and the log then says so in Simpler's
`[HOSTLOG_DROPS]` line (per process: this run's `new` losses and the running `total`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from fractions import Fraction
from pathlib import Path

from pypto.compile_profiling.foundation.atomic_io import atomic_writer, ensure_dir
from pypto.runtime.device import DeviceRun

__all__ = ["host_log_lines", "write_host_log"]

_RUN_EPOCH = itertools.count(1)        # Simpler's per-process run counter


def _hid(program_name: str) -> str:
    """A stable 64-bit callable hash (Simpler: the ELF build id), as hex."""
    return hashlib.blake2b(program_name.encode(), digest_size=8).hexdigest()


QUEUE_RECORDS = 4096                   # Simpler's host logger queue
_dropped_total = 0                     # this process's lost records, as Simpler counts them


def host_log_lines(run: DeviceRun, program_name: str, *, run_epoch: int | None = None,
                   anchor: tuple[int, int] | None = None, device_id: int = 0,
                   queue: int = QUEUE_RECORDS) -> list[str]:
    """The log's lines; `anchor`: (monotonic ns, wall ns) read together (default: now)."""
    global _dropped_total
    pid, tid = run.pid or os.getpid(), run.tid or threading.get_native_id()
    thread = f"T0x{threading.get_ident():x}"
    hid = _hid(program_name)
    epoch = next(_RUN_EPOCH) if run_epoch is None else run_epoch
    mono, wall = anchor if anchor is not None else (time.perf_counter_ns(), time.time_ns())
    lines = [(f"[mono_ns={mono}][{thread}][TIMING] clock_anchor: [CLOCK_ANCHOR] v=1 pid={pid} "
             f"mono_ns={mono} wall_ns={wall}")]

    def span(depth: int, name: str, ts: int, dur: int, emitted: int, attrs: str = "") -> None:
        lines.append(f"[mono_ns={emitted}][{thread}][TIMING] emit_host_span: [STRACE] v=1 "
                     f"pid={pid} tid={tid} inv=1 hid={hid} depth={depth} name={name} ts={ts} "
                     f"dur={dur} {attrs}")

    bind, runner = run.host_spans["bind"], run.host_spans["runner_run"]
    span(1, "chip.run.bind", bind[0], bind[1] - bind[0], bind[1])
    span(1, "chip.run.runner_run", runner[0], runner[1] - runner[0], runner[1])
    for depth, name, ts, dur, attrs in _device_spans(run, device_id):
        span(depth, name, ts, dur, runner[1], attrs)
    span(0, "chip.run", run.start_ns, run.end_ns - run.start_ns, run.end_ns,
         f"run_id=0 dispatch_id=0 run_epoch={epoch} slot_id=0 generation=0")
    kept = lines[:1 + queue]               # the anchor, then as many records as the queue held
    lost = len(lines) - len(kept)
    if lost:
        _dropped_total += lost
        kept.append(f"[mono_ns={run.end_ns}][{thread}][ERROR] host_log_drops: [HOSTLOG_DROPS] "
                    f"v=1 pid={pid} new={lost} total={_dropped_total} queue_full={_dropped_total} "
                    "claim_exhausted=0 output_failed=0 not_admitted=0")
    return kept


def _device_spans(run: DeviceRun, device_id: int = 0) -> list[tuple[int, str, int, int, str]]:
    """device_wall (with its absolute cycles), its sub-phases and the complete task-timing
    slots: (depth, name, ts, dur, attrs), device-phase ns from the counter's cycles."""
    cyc = run.counter.cycles_at
    ns = Fraction(10**9, run.counter.freq_hz)
    windows = run.aicpu_windows
    phases = {k: (min(s for s, _ in v), max(e for _, e in v))
              for k, v in windows.items() if v}
    if not phases:
        return []
    wall = (min(s for s, _ in phases.values()), max(e for _, e in phases.values()))
    sub = phases if "orch" in phases else {}     # HBG: the wall alone, as Simpler emits it
    zero = cyc(min(s for s, _ in sub.values()) if sub else wall[0])

    def at(t: int) -> int:
        return round((cyc(t) - zero) * ns)

    bounds = (f"clk=dev dev_id={device_id} dev_start_cycle={cyc(wall[0])} "
              f"dev_end_cycle={cyc(wall[1])} dev_cnt_hz={run.counter.freq_hz}")
    out = [(2, "chip.run.runner_run.device_wall", 0, at(wall[1]), bounds)]
    for name in ("orch", "sched"):            # TMR: the device orchestrator's run has both
        if name in sub:
            s, e = sub[name]
            out.append((3, f"chip.run.runner_run.device_wall.{name}", at(s), at(e) - at(s),
                        "clk=dev"))
    for slot, (d, f) in run.task_slots.items():
        if at(f) > at(d):                     # complete, as Simpler emits them
            out.append((3, f"chip.run.runner_run.device_wall.task_slot_{slot}", at(d),
                        at(f) - at(d), "clk=dev"))
    return out


def write_host_log(run: DeviceRun, dfx_dir: str | os.PathLike, program_name: str, *,
                   device_id: int = 0, queue: int = QUEUE_RECORDS) -> Path:
    """Write `host.<pid>.log` into `dfx_dir`; returns its path."""
    path = ensure_dir(dfx_dir) / f"host.{run.pid or os.getpid()}.log"
    lines = host_log_lines(run, program_name, device_id=device_id, queue=queue)
    with atomic_writer(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
