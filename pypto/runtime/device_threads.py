"""The simulated device's moving parts, over its shared state (`SimulatedDevice` holds the
state and runs them): the orchestrator that submits tasks (`DeviceOrchestration`) and the
threads that run them in real time (`DeviceThreads`): a thread per AICore, and the AICPU
scheduler threads that take completions from their cores, release successors and dispatch
ready tasks. See `device` for what their records mean."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pypto.errors import PyptoError
from pypto.runtime.task_graph import CORE_TYPES, TaskGraph

__all__ = ["DeviceExecutionError", "DeviceOrchestration", "DeviceThreads", "SchedulerLoop"]

_pc = time.perf_counter_ns
_NUDGE = object()
log = logging.getLogger("pypto.runtime.device")


class DeviceExecutionError(Exception):
    """A kernel raised on a simulated core; carries the task for the message."""


class DeviceOrchestration:
    """Submitting the program's calls: on the host before the device starts, or on a
    device thread while the schedulers already run (a mixin of `SimulatedDevice`)."""

    def _orchestrate(self, program: Any, dev_tensors: dict, graph: TaskGraph) -> int:
        """Run the orchestration on this thread and submit every call (`_submit_all`); a
        broken orchestration is one line, not a traceback. -> the calls submitted."""
        try:
            calls = program.build_tasks(dev_tensors)
            self._submit_all(calls, graph)
        except PyptoError:
            raise
        except Exception as e:
            raise DeviceExecutionError(f"orchestration failed: {type(e).__name__}: {e}") from e
        return len(calls)

    def _submit_all(self, calls: list, graph: TaskGraph) -> None:
        """Host orchestration: submit every call (graph built before the device starts)."""
        phases = self._rec.orch_phases if self.level >= 4 else None
        for i, call in enumerate(calls):
            t0 = _pc() if phases is not None else 0
            task = graph.submit(call)
            graph.link_successors(task)
            if phases is not None:
                phases.append((i, task.task_id, t0, _pc()))
        self._total = len(graph.tasks)
        self._orch_done = True

    def _device_orchestrator(self, program: Any, dev_tensors: dict, graph: TaskGraph) -> None:
        """Device orchestration: submit tasks while the schedulers already run them."""
        phases = self._rec.orch_phases if self.level >= 4 else None
        lock = self._lock
        try:
            calls = program.build_tasks(dev_tensors)
            for i, call in enumerate(calls):
                t0 = _pc() if phases is not None else 0
                with lock:
                    task = graph.submit(call)
                    ready = graph.link_successors(task) == 0
                    if ready:
                        self._ready[task.core_type].append(task)
                        targets = self._nudge_targets(task.core_type, -1)
                if phases is not None:
                    phases.append((i, task.task_id, t0, _pc()))
                if ready:
                    for t in targets:
                        self._sched_queues[t].put(_NUDGE)
        except BaseException as e:  # noqa: BLE001 - reported as the run's error
            self._fail(f"orchestration failed: {type(e).__name__}: {e}", e)
            return
        with lock:
            self._total = len(graph.tasks)
            self._orch_done = True
            finished = self._completed == self._total
        if finished:
            self._stop_all()

    def _ready_initial(self) -> None:
        for task in self._graph.tasks:
            if task.pending == 0:
                self._ready[task.core_type].append(task)


@dataclass
class _SchedThread:
    """What one scheduler thread keeps between its loops."""

    me: int
    phases: list                                   # its phase records
    slots: dict                                    # timing slot -> [first dispatch, last finish]
    reg_of: dict = field(default_factory=dict)     # core -> registers used so far
    inflight: dict = field(default_factory=dict)   # core -> (reg, dispatch_ns)
    loop_iter: int = 0


class SchedulerLoop:
    """An AICPU scheduler thread's loop: completions from its cores, successors released,
    ready tasks dispatched to its idle cores (a mixin of `SimulatedDevice`)."""

    def _sched_main(self, me: int) -> None:
        """Scheduler loop: wait for an event, handle completions, dispatch to idle cores.

        Phase records: (kind, start, end, loop_iter, tasks_processed, pop_hit, pop_miss,
        shared_at_start, shared_at_end); shared_* are the ready-queue lengths [aic, aiv, mix].
        """
        q = self._sched_queues[me]
        st = _SchedThread(me, self._rec.sched_phases[me], self._slot_stamps[me])
        get_nowait = q.get_nowait
        while True:
            batch = [q.get()]
            while True:
                try:
                    batch.append(get_nowait())
                except queue.Empty:
                    break
            st.loop_iter += 1
            stop = False
            completions = []
            for it in batch:
                if it is None:
                    stop = True
                elif it is not _NUDGE:
                    completions.append(it)
            if completions and self._complete(st, completions):
                stop = True
            if stop:
                return
            self._dispatch(st)

    def _complete(self, st: _SchedThread, completions: list) -> bool:
        """One batch of finished tasks: their cores idle again, their successors ready;
        -> True when the thread must stop (a kernel failed)."""
        rec2, rec3 = self.level >= 2, self.level >= 3
        ready, tasks, aicpu_rows = self._ready, self._graph.tasks, self._rec.aicpu_rows
        my_idle = self._idle[st.me]
        t0 = _pc() if rec3 else 0
        finish = _pc() if rec2 else 0
        failed = None
        finished = False
        with self._lock:
            s0 = (len(ready["aic"]), len(ready["aiv"]), 0) if rec3 else None
            for core, task, err in completions:
                my_idle[task.core_type].append(core)
                if rec2:
                    reg, disp = st.inflight.pop(core)
                    aicpu_rows[core].append((reg, disp, finish))
                if task.timing_slot is not None:       # a tagged task's finish
                    window = st.slots.setdefault(task.timing_slot, [0, 0])
                    window[1] = max(window[1], finish or _pc())
                if err is not None:
                    failed = (task, err)
                    continue
                task.done = True
                for s in task.succs:
                    succ = tasks[s]
                    succ.pending -= 1
                    if succ.pending == 0:
                        ready[succ.core_type].append(succ)
                self._completed += 1
            if self._orch_done and self._completed == self._total:
                finished = True
            s1 = (len(ready["aic"]), len(ready["aiv"]), 0) if rec3 else None
        if rec3:
            st.phases.append(("complete", t0, _pc(), st.loop_iter, len(completions), 0, 0,
                              s0, s1))
        if failed is not None:
            task, err = failed
            self._fail(f"kernel {task.kernel_name!r} (task t{task.index}) raised "
                       f"{type(err).__name__}: {err}", err)
            return True
        if finished:
            self._stop_all()
        return False

    def _dispatch(self, st: _SchedThread) -> None:
        """Ready tasks to this thread's idle cores; the other threads nudged when ready work
        of a type is left that their cores could take."""
        rec2, rec3 = self.level >= 2, self.level >= 3
        ready, me = self._ready, st.me
        t0 = _pc() if rec3 else 0
        sends = []
        misses = 0
        with self._lock:
            s0 = (len(ready["aic"]), len(ready["aiv"]), 0) if rec3 else None
            for ctype in CORE_TYPES:
                idle = self._idle[me][ctype]
                rq = ready[ctype]
                while idle and rq:
                    sends.append((idle.pop(), rq.popleft()))
                if idle and not rq:
                    misses += 1
            targets = set()
            for ctype in CORE_TYPES:
                if ready[ctype]:
                    targets.update(self._nudge_targets(ctype, me))
            s1 = (len(ready["aic"]), len(ready["aiv"]), 0) if rec3 else None
        for core, task in sends:
            reg = st.reg_of.get(core, 0) + 1
            st.reg_of[core] = reg
            if rec2:
                st.inflight[core] = (reg, _pc())
            if task.timing_slot is not None:               # a tagged task's dispatch
                window = st.slots.setdefault(task.timing_slot, [0, 0])
                d = st.inflight[core][1] if rec2 else _pc()
                window[0] = d if not window[0] else min(window[0], d)
            self._boxes[core].put((task, reg))
        for t in targets:
            self._sched_queues[t].put(_NUDGE)
        if rec3:
            st.phases.append(("dispatch", t0, _pc(), st.loop_iter, len(sends), len(sends),
                              misses, s0, s1))


class DeviceThreads(SchedulerLoop):
    """The AICore threads and the AICPU scheduler threads, started, nudged, stopped, and the
    state they share under the device's lock (a mixin of `SimulatedDevice`)."""

    def _init_runtime_state(self) -> None:
        layout = self.layout
        self._lock = threading.Lock()
        self._ready: dict[str, deque] = {t: deque() for t in CORE_TYPES}
        self._sched_queues = [queue.SimpleQueue() for _ in range(layout.num_sched_threads)]
        self._boxes = [queue.SimpleQueue() for _ in range(layout.num_cores)]
        self._idle = [{t: [] for t in CORE_TYPES} for _ in range(layout.num_sched_threads)]
        for core in range(layout.num_cores - 1, -1, -1):  # pop() hands out low ids first
            self._idle[layout.core_to_thread[core]][layout.core_types[core]].append(core)
        self._completed = 0
        self._total = -1
        self._orch_done = False
        self._stopped = False
        self._error: str | None = None
        self._timing_meta: dict = {"mode": "measured"}

    def _aicpu_timed(self, kind: str, fn):
        """`fn` stamping its thread's first and last instant (an AICPU thread's part of
        Simpler's device_wall)."""
        windows = self._aicpu_windows[kind]

        def run(*args):
            t0 = _pc()
            try:
                fn(*args)
            finally:
                windows.append((t0, _pc()))
        return run

    def _start_threads(self) -> list[threading.Thread]:
        threads = []
        for core in range(self.layout.num_cores):
            threads.append(threading.Thread(
                target=self._core_main, args=(core,), daemon=True,
                name=f"{self.layout.core_types[core].upper()}_{core}"))
        for t in range(self.layout.num_sched_threads):
            threads.append(threading.Thread(target=self._aicpu_timed("sched", self._sched_main),
                                            args=(t,), daemon=True, name=f"Sched_{t}"))
        for th in threads:
            th.start()
        return threads

    def _nudge_all(self) -> None:
        for q in self._sched_queues:
            q.put(_NUDGE)

    def _nudge_targets(self, core_type: str, me: int) -> list[int]:
        """Schedulers (other than `me`) with an idle core of `core_type`; call under the lock."""
        return [t for t, idle in enumerate(self._idle) if t != me and idle[core_type]]

    def _stop_all(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        for q in self._sched_queues:
            q.put(None)
        for b in self._boxes:
            b.put(None)

    def _fail(self, message: str, exc: BaseException | None = None) -> None:
        with self._lock:
            if self._error is None:
                self._error = message
        log.debug("device failure: %s", message, exc_info=exc)
        self._stop_all()

    # -- threads ---------------------------------------------------------------------------
    def _core_main(self, core: int) -> None:
        box = self._boxes[core]
        out = self._sched_queues[self.layout.core_to_thread[core]]
        rows = self._rec.core_rows[core]
        rec = self.level >= 1
        get, put, append = box.get, out.put, rows.append
        while True:
            item = get()
            if item is None:
                return
            task, reg = item
            err = None
            if rec:
                recv = _pc()
                start = _pc()
                try:
                    task.fn(*task.args)
                except BaseException as e:  # noqa: BLE001 - reported as the run's error
                    err = e
                append((task.task_id, reg, recv, start, _pc()))
            else:
                try:
                    task.fn(*task.args)
                except BaseException as e:  # noqa: BLE001
                    err = e
            put((core, task, err))
