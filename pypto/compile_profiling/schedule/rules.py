"""The AICPU scheduler's rules with fixed costs per step, simulated event by event.

Rules (the simulated device's, docs/modelled_time.md): FIFO ready queues per core type; each
scheduler thread owns a fixed set of cores; a thread first handles its cores' completions
(releasing successors), then dispatches ready work to its idle cores, lowest id first, one
send at a time; one step at a time per thread; the other threads are woken when work is
ready for their idle cores. A device orchestrator submits one task at a time. Everything is
counted in whole device-counter ticks, so a schedule reproduces to the tick.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from math import ceil

__all__ = [
    "COMPLETE_NS",
    "DEFAULT_STEP_NS",
    "DISPATCH_NS",
    "LAUNCH_NS",
    "POLL_NS",
    "STEPS",
    "SUBMIT_NS",
    "Schedule",
    "ScheduleCosts",
    "core_layout",
    "simulate",
    "ticks_of",
]

SUBMIT, WAKE = 0, 1   # event kinds (a submission sorts before a wake at the same tick)

# What each scheduler step costs in modelled time (ns; rounded up to whole ticks).
DISPATCH_NS = 200     # a scheduler thread hands one task to a core
LAUNCH_NS = 800       # from that hand-over to the core starting the kernel
POLL_NS = 300         # from a core's end to its scheduler thread seeing it
COMPLETE_NS = 150     # handling one completion (releasing its successors)
SUBMIT_NS = 400       # the device orchestrator submitting one task
STEPS = ("dispatch", "launch", "poll", "complete", "submit")
DEFAULT_STEP_NS = dict(zip(STEPS, (DISPATCH_NS, LAUNCH_NS, POLL_NS, COMPLETE_NS, SUBMIT_NS)))


def core_layout(num_aic: int, num_aiv: int, threads: int) -> tuple[list[str], list[int]]:
    """Core types (AIC first, then AIV) and the scheduler thread that owns each core: AIC
    cores round-robin over the threads, AIV cores in pairs (one cluster = 1 AIC + 2 AIV), as
    in Simpler's a2a3 captures."""
    types = ["aic"] * num_aic + ["aiv"] * num_aiv
    owner = [i % threads for i in range(num_aic)] + [(j // 2) % threads for j in range(num_aiv)]
    return types, owner


def ticks_of(ns: float, freq_hz: int) -> int:
    """`ns` as whole device-counter ticks, rounded up, at least one."""
    return max(1, ceil(ns * freq_hz / 1e9))


@dataclass(frozen=True, slots=True)
class ScheduleCosts:
    """The fixed scheduler costs in device-counter ticks."""

    dispatch: int
    launch: int
    poll: int
    complete: int
    submit: int

    @classmethod
    def at(cls, freq_hz: int, step_ns: dict[str, float] | None = None) -> ScheduleCosts:
        """The costs at a counter of `freq_hz`: the default ns per step, or `step_ns`'s
        for the steps it names."""
        ns = {**DEFAULT_STEP_NS, **(step_ns or {})}
        return cls(*(ticks_of(ns[step], freq_hz) for step in STEPS))

    def as_dict(self) -> dict[str, int]:
        return {step: getattr(self, step) for step in STEPS}


@dataclass
class Schedule:
    """Records in the device's layouts (`DeviceRecords`), stamped in ticks from 0."""

    core_rows: list[list[tuple]]
    aicpu_rows: list[list[tuple]]
    sched_phases: list[list[tuple]]
    orch_phases: list[tuple] = field(default_factory=list)
    slot_stamps: list[dict[int, list[int]]] = field(default_factory=list)
    end: int = 0                      # the last completion handled
    orch_end: int = 0                 # the device orchestrator's last submission


def simulate(core_types: list[str], core_to_thread: list[int], num_threads: int,
             tasks: list, ticks: list[int], costs: ScheduleCosts,
             device_orchestrator: bool) -> Schedule:
    """Run the schedule of `tasks` (submitted, with `succs` and `pending` linked) whose
    durations are `ticks`. Rules as the threaded device: FIFO ready queues per core type;
    a scheduler thread handles its cores' completions (releasing successors), then
    dispatches ready work to its idle cores, lowest id first; one step at a time per
    thread; the others are woken when work is ready for their idle cores."""
    n_cores = len(core_types)
    sched = Schedule([[] for _ in range(n_cores)], [[] for _ in range(n_cores)],
                     [[] for _ in range(num_threads + 1)],
                     slot_stamps=[{} for _ in range(num_threads)])
    types = sorted(set(core_types), key=("aic", "aiv").index)
    idle = [{t: [] for t in types} for _ in range(num_threads)]
    for core in range(n_cores - 1, -1, -1):          # pop() hands out low ids first
        idle[core_to_thread[core]][core_types[core]].append(core)
    ready: dict[str, list] = {t: [] for t in types}
    heads = dict.fromkeys(types, 0)                  # ready[t][heads[t]:] is the queue
    pending = [t.pending for t in tasks]
    submitted = [not device_orchestrator] * len(tasks)
    free = [0] * num_threads
    inbox: list[list[tuple]] = [[] for _ in range(num_threads)]
    loops = [0] * num_threads
    regs = [0] * n_cores
    inflight: dict[int, tuple[int, int]] = {}
    heap: list[tuple] = []
    seq = 0
    done = 0

    def push(time: int, kind: int, arg: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (time, seq, kind, arg))

    def queue_lengths() -> tuple[int, int, int]:
        return (len(ready.get("aic", ())) - heads.get("aic", 0),
                len(ready.get("aiv", ())) - heads.get("aiv", 0), 0)

    def make_ready(task, now: int, me: int) -> None:
        ready[task.core_type].append(task)
        for th in range(num_threads):
            if th != me and idle[th][task.core_type]:
                push(max(now, free[th]), WAKE, th)

    if device_orchestrator:
        for i in range(len(tasks)):
            push((i + 1) * costs.submit, SUBMIT, i)
    else:
        for task in tasks:
            if task.pending == 0:
                ready[task.core_type].append(task)
        for th in range(num_threads):
            push(0, WAKE, th)

    while heap and done < len(tasks):
        now, _, kind, arg = heapq.heappop(heap)
        if kind == SUBMIT:
            task = tasks[arg]
            sched.orch_phases.append((arg, task.task_id, now - costs.submit, now))
            sched.orch_end = now
            submitted[arg] = True
            if pending[arg] == 0:
                make_ready(task, now, -1)
            continue
        me = arg
        if now < free[me]:
            push(free[me], WAKE, me)
            continue
        seen = [c for c in inbox[me] if c[0] <= now]
        if seen:
            inbox[me] = [c for c in inbox[me] if c[0] > now]
        sends_possible = any(idle[me][t] and len(ready[t]) > heads[t] for t in types)
        if not seen and not sends_possible:
            continue
        loops[me] += 1
        cur = now
        phases = sched.sched_phases[me]
        if seen:
            s0 = queue_lengths()
            finish = cur
            for _, core, index in seen:
                task = tasks[index]
                idle[me][task.core_type].append(core)
                reg, disp = inflight.pop(core)
                sched.aicpu_rows[core].append((reg, disp, finish))
                if task.timing_slot is not None:
                    window = sched.slot_stamps[me].setdefault(task.timing_slot, [None, 0])
                    window[1] = max(window[1], finish)
                for s in task.succs:
                    pending[s] -= 1
                    if pending[s] == 0 and submitted[s]:
                        make_ready(tasks[s], cur + costs.complete * len(seen), me)
                done += 1
            cur += costs.complete * len(seen)
            phases.append(("complete", now, cur, loops[me], len(seen), 0, 0, s0,
                           queue_lengths()))
            sched.end = cur
        start = cur
        s0 = queue_lengths()
        sends = misses = 0
        for t in types:
            cores, queue = idle[me][t], ready[t]
            while cores and len(queue) > heads[t]:
                core = cores.pop()
                task = queue[heads[t]]
                heads[t] += 1
                regs[core] += 1
                dispatch = cur + sends * costs.dispatch
                sends += 1
                inflight[core] = (regs[core], dispatch)
                run_start = dispatch + costs.launch
                run_end = run_start + ticks[task.index]
                sched.core_rows[core].append((task.task_id, regs[core], run_start, run_start,
                                              run_end))
                if task.timing_slot is not None:
                    window = sched.slot_stamps[me].setdefault(task.timing_slot, [None, 0])
                    window[0] = dispatch if window[0] is None else min(window[0], dispatch)
                inbox[me].append((run_end + costs.poll, core, task.index))
                push(run_end + costs.poll, WAKE, me)
            if cores and len(queue) == heads[t]:
                misses += 1
        cur += sends * costs.dispatch
        if sends or seen:
            phases.append(("dispatch", start, cur, loops[me], sends, sends, misses, s0,
                           queue_lengths()))
        free[me] = cur
    return sched
