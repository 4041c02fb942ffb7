"""The scheduler's rules (`schedule.rules.simulate`), each pinned by a schedule computed by
hand: changing any one rule alone fails a test here. The simulated device runs these rules in
modelled time, and a capture of it is replayed with them, so they are the oracle every
what-if prediction is checked against.

Costs in every test: dispatch 10, launch 40, poll 15, complete 8, submit 20 ticks. (One single
change passes: a slot's finish taken as the last one seen rather than the latest; a thread
sees its finishes in time order, so the two are the same.)"""

from __future__ import annotations

from types import SimpleNamespace

from pypto.compile_profiling.schedule.rules import ScheduleCosts, simulate

COSTS = ScheduleCosts(dispatch=10, launch=40, poll=15, complete=8, submit=20)


def _task(index, core_type="aiv", succs=(), pending=0, slot=None):
    return SimpleNamespace(index=index, task_id=index, core_type=core_type, succs=list(succs),
                           pending=pending, timing_slot=slot)


def _starts(s) -> dict[int, tuple[int, int, int]]:
    """task -> (core, start, end)."""
    return {row[0]: (core, row[3], row[4]) for core, rows in enumerate(s.core_rows)
            for row in rows}


def test_a_chain_on_one_core_costs_exactly_the_scheduler_round_trip():
    tasks = [_task(0, succs=[1]), _task(1, pending=1)]
    s = simulate(["aiv"], [0], 1, tasks, [100, 50], COSTS, device_orchestrator=False)
    (first, second), = [s.core_rows[0]]
    assert first == (0, 1, 40, 40, 140)                 # dispatched at 0, launch 40
    seen = 140 + 15                                     # the end, polled
    dispatch = seen + 8                                 # one completion handled
    assert second == (1, 2, dispatch + 40, dispatch + 40, dispatch + 40 + 50)
    assert s.aicpu_rows[0] == [(1, 0, seen), (2, dispatch, dispatch + 40 + 50 + 15)]
    assert s.end == dispatch + 40 + 50 + 15 + 8


def test_one_thread_sends_one_task_at_a_time():
    """Dispatch serialisation: three ready tasks, three idle cores of one thread: sent at
    0, 10 and 20, started 40 later each."""
    s = simulate(["aiv"] * 3, [0, 0, 0], 1, [_task(i) for i in range(3)], [100] * 3, COSTS,
                 device_orchestrator=False)
    assert _starts(s) == {0: (0, 40, 140), 1: (1, 50, 150), 2: (2, 60, 160)}
    assert [row[1] for rows in s.aicpu_rows for row in rows] == [0, 10, 20]
    assert s.sched_phases[0][0][:5] == ("dispatch", 0, 30, 1, 3)


def test_handling_completions_costs_per_finished_task_before_anything_is_sent():
    """Two tasks end together (110 and 100 ticks, sent 10 apart): one thread sees both at
    150 + 15 = 165, handles them (2 x 8), then sends their successor at 181, to the core
    freed last (core 1: a freed core goes on top of its thread's idle stack)."""
    tasks = [_task(0, succs=[2]), _task(1, succs=[2]), _task(2, pending=2)]
    s = simulate(["aiv", "aiv"], [0, 0], 1, tasks, [110, 100, 100], COSTS,
                 device_orchestrator=False)
    assert _starts(s)[0][2] == _starts(s)[1][2] == 150
    assert _starts(s)[2] == (1, 181 + 40, 181 + 40 + 100)
    complete = [p for p in s.sched_phases[0] if p[0] == "complete"]
    assert complete[0][:5] == ("complete", 165, 181, 2, 2)
    assert sorted(r[2] for rows in s.aicpu_rows for r in rows)[:2] == [165, 165]


def test_a_completion_is_seen_a_poll_after_the_end_and_only_then_releases():
    tasks = [_task(0, succs=[1]), _task(1, pending=1)]
    s = simulate(["aiv", "aiv"], [0, 0], 1, tasks, [100, 100], COSTS,
                 device_orchestrator=False)
    # task 1 waits for task 0 although core 1 is idle all along: 140 + 15 + 8
    assert _starts(s)[1] == (0, 163 + 40, 163 + 40 + 100)


def test_a_task_is_ready_only_once_submitted_even_when_its_producer_is_done():
    """Device orchestrator, 200 ticks a submission: task 0 is submitted at 200 and done at
    250 (seen at 265); task 1, submitted at 400, waits for its submission."""
    costs = ScheduleCosts(dispatch=10, launch=40, poll=15, complete=8, submit=200)
    tasks = [_task(0, succs=[1]), _task(1, pending=1)]
    s = simulate(["aiv", "aiv"], [0, 0], 1, tasks, [10, 10], costs, device_orchestrator=True)
    assert s.orch_phases == [(0, 0, 0, 200), (1, 1, 200, 400)]
    assert _starts(s)[0] == (0, 240, 250)
    assert _starts(s)[1] == (0, 440, 450)


def test_a_device_orchestrator_submits_before_anything_runs():
    tasks = [_task(0), _task(1)]
    s = simulate(["aiv", "aiv"], [0, 0], 1, tasks, [100, 100], COSTS, device_orchestrator=True)
    assert s.orch_phases == [(0, 0, 0, 20), (1, 1, 20, 40)]
    starts = sorted(r[3] for rows in s.core_rows for r in rows)
    assert starts == [20 + 40, 40 + 40]


def test_each_thread_sends_to_its_own_idle_cores_lowest_id_first():
    """Cores 0, 1 belong to thread 0 and cores 2, 3 to thread 1; three ready tasks: thread 0
    (woken first) sends two to cores 0 and 1, thread 1 the third to core 2, each thread one
    send at a time from 0. (At the start the idle stack holds a thread's cores lowest id on
    top.)"""
    s = simulate(["aiv"] * 4, [0, 0, 1, 1], 2, [_task(i) for i in range(3)], [100] * 3, COSTS,
                 device_orchestrator=False)
    assert _starts(s) == {0: (0, 40, 140), 1: (1, 50, 150), 2: (2, 40, 140)}


def test_a_thread_with_idle_cores_is_woken_when_work_is_released_for_them():
    """Task 0 on core 0 (thread 0) releases tasks 1 and 2 at 155 + 8: thread 0 sends one to
    its core 0, and thread 1, woken for its idle core 1, sends the other at the same tick."""
    tasks = [_task(0, succs=[1, 2]), _task(1, pending=1), _task(2, pending=1)]
    s = simulate(["aiv", "aiv"], [0, 1], 2, tasks, [100, 100, 100], COSTS,
                 device_orchestrator=False)
    assert _starts(s)[1] == (0, 163 + 40, 163 + 140)
    assert _starts(s)[2] == (1, 163 + 40, 163 + 140)


def test_ready_work_waits_in_order_of_arrival_per_core_type():
    """One AIV core: the three ready tasks run in the order they became ready; an AIC task
    goes to the AIC core meanwhile, from the AIC queue."""
    tasks = [_task(0), _task(1), _task(2), _task(3, core_type="aic")]
    s = simulate(["aic", "aiv"], [0, 0], 1, tasks, [100, 100, 100, 30], COSTS,
                 device_orchestrator=False)
    st = _starts(s)
    assert [st[i][0] for i in range(4)] == [1, 1, 1, 0]
    assert st[0][1] < st[1][1] < st[2][1]
    assert st[3] == (0, 40, 70)          # AIC queue first, then AIV: sent at 0 and 10
    assert st[0] == (1, 50, 150)


def test_a_timing_slot_spans_its_first_dispatch_to_its_last_finish():
    tasks = [_task(0, slot=3), _task(1, slot=3), _task(2)]
    s = simulate(["aiv"] * 3, [0, 0, 0], 1, tasks, [100, 200, 50], COSTS,
                 device_orchestrator=False)
    # sent at 0 and 10; the second ends at 10 + 40 + 200 = 250, seen at 265
    assert s.slot_stamps[0] == {3: [0, 265]}


def test_work_released_by_several_completions_wakes_another_thread_after_all_are_handled():
    """Thread 0 (two AIC cores) sees AIC tasks 0 and 1 end together and handles both (2 x 8)
    before AIV task 2 is ready; thread 1, whose AIV core is idle, is woken then: 165 + 16."""
    tasks = [_task(0, "aic", succs=[2]), _task(1, "aic", succs=[2]), _task(2, pending=2)]
    s = simulate(["aic", "aic", "aiv"], [0, 0, 1], 2, tasks, [110, 100, 100], COSTS,
                 device_orchestrator=False)
    assert _starts(s)[2] == (2, 181 + 40, 181 + 40 + 100)


def test_an_end_not_yet_polled_is_not_seen_by_a_thread_awake_for_another():
    """Task 0 ends at 140 (seen at 155), task 1 at 150 (seen at 165): awake at 155, the thread
    handles task 0 alone; task 1 is handled at 165."""
    s = simulate(["aiv", "aiv"], [0, 0], 1, [_task(0), _task(1)], [100, 100], COSTS,
                 device_orchestrator=False)
    complete = [p[:5] for p in s.sched_phases[0] if p[0] == "complete"]
    assert complete == [("complete", 155, 163, 2, 1), ("complete", 165, 173, 3, 1)]


def test_a_thread_busy_sending_takes_new_work_only_when_its_sends_are_done():
    """Sends cost 30 here and submissions 20: task 0 is submitted at 20 and sent by 50;
    task 1, submitted at 40, is sent when the thread is free again, at 50."""
    costs = ScheduleCosts(dispatch=30, launch=40, poll=15, complete=8, submit=20)
    s = simulate(["aiv", "aiv"], [0, 0], 1, [_task(0), _task(1)], [100, 100], costs,
                 device_orchestrator=True)
    assert [row[1] for rows in s.aicpu_rows for row in rows] == [20, 50]
