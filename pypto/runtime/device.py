"""The simulated device: AICore threads, AICPU scheduler threads, and an orchestrator.

Shaped like Simpler's runtime so its records mean the same things:
- cores (`aic` first, then `aiv`) are threads; each runs one task at a time;
- scheduler threads each own a fixed set of cores (`core_to_thread`); they take completions
  from their cores, release successors (a task is ready once every predecessor finished),
  and dispatch ready tasks, FIFO per core type, to their idle cores;
- the orchestrator submits tasks in program order: on the host before the device starts
  (`host_build_graph`), or on a device thread while the schedulers already run
  (`tensormap_and_ringbuffer`).

Recording is level-gated and costs a few clock reads and tuple appends per task: threads
stamp events with `time.perf_counter_ns()` into their own lists (no lock); the writer turns
the stamps into device-counter cycles afterwards (`DeviceCounter.cycles_at`).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.compile_profiling.schedule.rules import DEFAULT_STEP_NS, core_layout
from pypto.runtime.device_clock import ANCHOR_POSITIONS, DeviceCounter, sample_anchors
from pypto.runtime.device_threads import (
    DeviceExecutionError,
    DeviceOrchestration,
    DeviceThreads,
    _pc,
)
from pypto.runtime.modelled_time import MAX_HOLD_S, ScheduleCosts, simulate, task_ticks
from pypto.runtime.task_graph import TaskGraph

log = logging.getLogger(__name__)
_RUN_EPOCHS = itertools.count(1)   # Simpler's run identity: one per run, process-local


@dataclass(slots=True)
class DeviceLayout:
    """Core ids, their types, and which scheduler thread owns each core."""

    core_types: list[str]
    core_to_thread: list[int]
    num_sched_threads: int

    @classmethod
    def build(cls, num_aic: int, num_aiv: int, num_sched: int) -> DeviceLayout:
        """AIC cores round-robin over the schedulers, AIV cores in pairs (one cluster = 1 AIC +
        2 AIV), as in Simpler's a2a3 captures (`schedule.rules.core_layout`)."""
        types, owner = core_layout(num_aic, num_aiv, num_sched)
        return cls(types, owner, num_sched)

    @property
    def num_cores(self) -> int:
        return len(self.core_types)


@dataclass
class DeviceRecords:
    """Raw records of one execution, host ns stamps (see module doc); level-gated."""

    level: int
    orchestrator: str                                   # "host" | "device"
    core_rows: list[list[tuple]]                        # per core: (task_id, reg, recv, start, end)
    aicpu_rows: list[list[tuple]]                       # per core: (reg, dispatch, finish)
    sched_phases: list[list[tuple]]                     # per scheduler thread, see _sched_main
    orch_phases: list[tuple] = field(default_factory=list)   # (submit_idx, task_id, start, end)
    host_phases: list[tuple] = field(default_factory=list)   # (phase, start, end, detail)
    anchors: list[dict] = field(default_factory=list)


@dataclass
class DeviceRun:
    """What one execution produced: the graph, records, timings and any kernel failure."""

    graph: TaskGraph
    records: DeviceRecords
    counter: DeviceCounter
    layout: DeviceLayout
    start_ns: int
    end_ns: int
    error: str | None = None
    host_orch_start_ns: int = 0
    # host CLOCK_MONOTONIC windows of the run, for the host log: "bind" (arena, host
    # orchestration, uploads), "runner_run" (the device threads started to all joined)
    host_spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # what the AICPU threads stamp for Simpler's device_wall: each scheduler thread's loop
    # ("sched") and the device orchestrator's ("orch"), host ns
    aicpu_windows: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    pid: int = 0
    tid: int = 0                   # native id of the thread that ran the execution
    run_epoch: int = field(default_factory=lambda: next(_RUN_EPOCHS))
    # Simpler's task-timing slots: slot -> (earliest dispatch, latest finish), host ns, of
    # the tasks tagged with it (complete slots only), stamped at any swimlane level
    task_slots: dict[int, tuple[int, int]] = field(default_factory=dict)
    # where the durations came from, as the capture's metadata states it (`device_timing`)
    timing: dict = field(default_factory=lambda: {"mode": "measured"})


def _fold_slots(per_thread: list[dict[int, list[int]]]) -> dict[int, tuple[int, int]]:
    """Simpler's reduction: per slot min(dispatch) / max(finish) over the scheduler threads;
    a slot is kept only when complete (dispatched, and finished after)."""
    out: dict[int, tuple[int, int]] = {}
    for stamps in per_thread:
        for slot, (d, f) in stamps.items():
            if slot in out:
                d0, f0 = out[slot]
                d = min(x for x in (d, d0) if x) if (d or d0) else 0
                f = max(f, f0)
            out[slot] = (d, f)
    return {k: v for k, v in sorted(out.items()) if v[0] and v[1] > v[0]}


class SimulatedDevice(DeviceOrchestration, DeviceThreads):
    """One device; `execute()` runs one compiled program on it."""

    def __init__(self, layout: DeviceLayout, clock_freq_hz: int = 50_000_000,
                 level: int = 0, runtime: str = "host_build_graph", dep_gen: bool = False,
                 drift_ppm: float = 0.0,
                 timing: tuple = ("measured", 0.0, None, None)) -> None:
        self.layout = layout
        self.timing = timing
        self.level = level
        self.runtime = runtime
        self.dep_gen = dep_gen
        self.counter = DeviceCounter.start(clock_freq_hz, drift_ppm)

    # -- public ----------------------------------------------------------------------------
    def execute(self, program: Any, host_tensors: dict[str, Any]) -> DeviceRun:
        """Copy inputs in, orchestrate and run all tasks, copy outputs back into `host_tensors`.

        Arrays of `out`/`inout` parameters are written back in place."""
        host_mode = self.runtime == "host_build_graph"
        level = self.level
        layout = self.layout
        n_cores = layout.num_cores
        missing = [t for t in {k.core_type for k in program.kernels.values()}
                   if t not in [c for c in layout.core_types]]
        if missing:
            raise DeviceExecutionError(f"program has {'/'.join(sorted(missing))} kernels but the "
                                       f"device has no {'/'.join(sorted(missing))} cores")
        rec = DeviceRecords(level, "host" if host_mode else "device",
                            [[] for _ in range(n_cores)], [[] for _ in range(n_cores)],
                            [[] for _ in range(layout.num_sched_threads + 1)])
        self._rec = rec
        start_ns = _pc()
        if level >= 1 and host_mode:
            rec.anchors += sample_anchors(self.counter, ANCHOR_POSITIONS[0])

        # Device memory ("arena"): one device array per program tensor.
        t0 = _pc()
        dev_tensors = {k: (np.empty_like(v) if isinstance(v, np.ndarray) else v)
                       for k, v in host_tensors.items()}
        self._host_phase("arena_build", t0, 0)
        external = [v for v in dev_tensors.values() if isinstance(v, np.ndarray)]
        graph = TaskGraph(program.kernels, external, record_details=self.dep_gen)
        self._graph = graph
        self._init_runtime_state()

        orch_start = 0
        if host_mode:
            t0 = orch_start = _pc()
            n_calls = self._orchestrate(program, dev_tensors, graph)
            self._host_phase("host_orch", t0, n_calls)
            t0 = _pc()
            self._ready_initial()
            self._host_phase("graph_upload", t0, 0, upload=True)
        t0 = _pc()
        nbytes = 0
        for k, v in host_tensors.items():
            if isinstance(v, np.ndarray):
                np.copyto(dev_tensors[k], v)
                nbytes += v.nbytes
        self._host_phase("arena_h2d", t0, nbytes, upload=True)
        bind_end = runner_start = _pc()
        self._aicpu_windows: dict[str, list[tuple[int, int]]] = {"sched": [], "orch": []}
        # per scheduler thread: slot -> [earliest dispatch, latest finish], folded after
        self._slot_stamps: list[dict[int, list[int]]] = [
            {} for _ in range(layout.num_sched_threads)]

        if self.timing[0] == "modelled":
            runner_end = self._run_modelled(program, dev_tensors, graph, runner_start, host_mode)
        else:
            runner_end = self._run_threads(program, dev_tensors, graph, host_mode)
        if level >= 1 and host_mode:
            rec.anchors += sample_anchors(self.counter, ANCHOR_POSITIONS[1])
        error = self._error
        if error is None:
            t0 = _pc()
            for k, v in host_tensors.items():
                if isinstance(v, np.ndarray):
                    np.copyto(v, dev_tensors[k])
            self._host_phase("arena_d2h", t0, 0)
        end_ns = _pc()
        run = DeviceRun(graph, rec, self.counter, layout, start_ns, end_ns, error, orch_start,
                        {"bind": (start_ns, bind_end), "runner_run": (runner_start, runner_end)},
                        self._aicpu_windows, os.getpid(), threading.get_native_id())
        run.task_slots = _fold_slots(self._slot_stamps)
        run.timing = self._timing_meta
        return run

    def _run_threads(self, program: Any, dev_tensors: dict, graph: TaskGraph,
                     host_mode: bool) -> int:
        """Measured time: the cores, schedulers (and orchestrator) as threads; returns when
        all joined."""
        threads = self._start_threads()
        if host_mode:
            if self._total == 0:
                self._stop_all()
            self._nudge_all()
        else:
            orch = threading.Thread(target=self._aicpu_timed("orch", self._device_orchestrator),
                                    args=(program, dev_tensors, graph),
                                    name="aicpu_orchestrator", daemon=True)
            orch.start()
            threads.append(orch)
        for th in threads:
            th.join()
        return _pc()

    def _run_modelled(self, program: Any, dev_tensors: dict, graph: TaskGraph,
                      runner_start: int, host_mode: bool) -> int:
        """Modelled time (`modelled_time`): run the kernels in submission order on this
        thread, then lay the simulated schedule from the first counter tick at or after
        `runner_start`; returns once the host clock has passed the schedule's end (the
        device holds the host as long as it would have run)."""
        mode, jitter, seed, step_ns = (*self.timing, None)[:4]
        if not host_mode:        # its submissions are timed by the simulated schedule
            self._orchestrate(program, dev_tensors, graph)
        tasks = graph.tasks
        self._total = len(tasks)
        cycles = [program.kernels[t.kernel_name].modelled_cycles for t in tasks]
        if None in cycles:
            name = tasks[cycles.index(None)].kernel_name
            raise DeviceExecutionError(f"kernel {name!r} has no modelled cycles, which "
                                       "device_timing='modelled' needs: compile the program "
                                       "again with this pypto")
        freq = self.counter.freq_hz
        if 1_000_000_000 % freq:
            raise DeviceExecutionError(f"modelled time needs a counter tick of whole ns; "
                                       f"{freq} Hz has none")
        for task in tasks:
            try:
                task.fn(*task.args)
            except Exception as e:  # noqa: BLE001 - the run's error, as a core thread's
                self._error = (f"kernel {task.kernel_name!r} (task t{task.index}) raised "
                               f"{type(e).__name__}: {e}")
                return _pc()
        self._completed = len(tasks)
        from pypto.codegen.cost_model import AICORE_HZ  # the clock kernel cycles count in

        layout = self.layout
        ticks = task_ticks(cycles, AICORE_HZ, freq, jitter, seed)
        costs = ScheduleCosts.at(freq, step_ns)
        sched = simulate(layout.core_types, layout.core_to_thread, layout.num_sched_threads,
                         tasks, ticks, costs, device_orchestrator=not host_mode)
        period = 1_000_000_000 // freq
        if sched.end * period > MAX_HOLD_S * 1_000_000_000:
            longest = max(range(len(tasks)), key=lambda i: cycles[i])
            raise DeviceExecutionError(
                f"the modelled schedule lasts {sched.end * period / 1e9:.1f} s of device time, "
                f"and a modelled run holds the host that long, at most {MAX_HOLD_S} s: lower "
                f"the kernels' modelled cycles (the longest: {tasks[longest].kernel_name!r}, "
                f"{cycles[longest]} cycles)")
        epoch = self.counter.epoch_ns
        base = epoch + -(-(runner_start - epoch) // period) * period

        def at(tick: int) -> int:
            return base + tick * period

        rec, level = self._rec, self.level
        if level >= 1:
            rec.core_rows = [[(tid, reg, at(r), at(s), at(e)) for tid, reg, r, s, e in rows]
                             for rows in sched.core_rows]
        if level >= 2:
            rec.aicpu_rows = [[(reg, at(d), at(f)) for reg, d, f in rows]
                              for rows in sched.aicpu_rows]
        if level >= 3:
            rec.sched_phases = [[(k, at(s), at(e), *rest) for k, s, e, *rest in phases]
                                for phases in sched.sched_phases]
        if level >= 4 and not host_mode:
            rec.orch_phases = [(i, tid, at(s), at(e)) for i, tid, s, e in sched.orch_phases]
        self._aicpu_windows["sched"] = [(base, at(sched.end))] * layout.num_sched_threads
        if not host_mode:
            self._aicpu_windows["orch"] = [(base, at(sched.orch_end))]
        self._slot_stamps = [{slot: [at(d) if d is not None else 0, at(f) if f else 0]
                              for slot, (d, f) in stamps.items()}
                             for stamps in sched.slot_stamps]
        # what a replay of this capture needs to follow its rules exactly (`schedule.rules`)
        self._timing_meta = {"mode": mode, "jitter": jitter, "seed": seed,
                             "cost_model": "pypto.codegen.cost_model",
                             "schedule_rules": "pypto.compile_profiling.schedule.rules",
                             "schedule_ticks": costs.as_dict(),
                             "schedule_ns": {**DEFAULT_STEP_NS, **(step_ns or {})}}
        end = at(sched.end)
        wait = end - _pc()
        if wait > 0:
            time.sleep(wait / 1e9)
        return max(_pc(), end)

    def _host_phase(self, name: str, t0: int, detail: int, upload: bool = False) -> None:
        if self.level >= 4:
            self._rec.host_phases.append((name, t0, _pc(), detail, upload))
