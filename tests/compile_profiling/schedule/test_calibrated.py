"""The calibrated replay (`schedule.calibrated`) on captures small enough to follow by hand:
it reads each block's delay, launch, poll and slack off the capture, replays it exactly, and
moves only what an edit changes."""

from __future__ import annotations

import numpy as np
import pytest
from calibration_reference import calibrate_by_walking
from hypothesis import given, settings
from hypothesis import strategies as st
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling.schedule.calibrated import (
    Blocks,
    Edited,
    calibrate,
    replay,
    replayed_makespan,
)


def _blocks(rows, preds, device, owners, send, depth=0):
    """rows: (task, core, dispatch, start, end, finish), one block a task here."""
    a = np.array(rows, np.int64)
    n = max(preds) + 1 if preds else int(a[:, 0].max()) + 1
    ptr = np.zeros(n + 1, np.int64)
    idx = []
    for t in range(n):
        idx += preds.get(t, [])
        ptr[t + 1] = len(idx)
    return Blocks(a[:, 0], np.zeros(len(a), np.int64), a[:, 1], a[:, 2], a[:, 3], a[:, 4],
                  a[:, 5], np.lexsort((a[:, 1], a[:, 2])), ptr, np.array(idx, np.int64),
                  device, owners, depth, send)


# a chain t0 -> t1 on core 0 of two, both owned by one thread (sends cost 10)
CHAIN = {"rows": [(0, 0, 0, 40, 140, 155), (1, 0, 163, 203, 303, 318)], "preds": {1: [0]},
         "device": [0, 0], "owners": [0, 0], "send": [10]}


def test_calibration_reads_each_blocks_latencies_off_the_capture():
    cal = calibrate(_blocks(**CHAIN))
    assert cal.delay == [0, 8]          # t1: ready at t0's finish (155), sent at 163
    assert cal.launch == [40, 40] and cal.poll == [15, 15] and cal.duration == [100, 100]
    assert cal.slack == [0, 0] and cal.send == [10] and cal.origin == 0
    assert cal.violations == 0


def test_unedited_it_reproduces_the_capture_block_by_block():
    b = _blocks(**CHAIN)
    d, s, e, f, core = replay(b, calibrate(b))
    assert d.tolist() == [0, 163] and s.tolist() == [40, 203] and e.tolist() == [140, 303]
    assert f.tolist() == [155, 318] and core.tolist() == [0, 0]


def test_without_dependencies_the_second_task_takes_the_idle_core_after_one_send():
    b = _blocks(**CHAIN)
    d, s, e, _, core = replay(b, calibrate(b), Edited(no_deps=True))
    assert core.tolist() == [0, 1]
    assert d.tolist() == [0, 10 + 8]    # the thread is free after its first send, + delay
    assert s.tolist() == [40, 58] and e.tolist() == [140, 158]


def test_faster_kernels_end_sooner_and_release_their_consumers_sooner():
    b = _blocks(**CHAIN)
    _d, _s, e, _f, core = replay(b, calibrate(b), Edited(duration_factor=np.array([0.5, 0.5])))
    assert e.tolist() == [90, 105 + 8 + 40 + 50]
    assert core.tolist() == [0, 0]      # core 0 is as early as core 1: the capture's choice


def test_latency_factors_scale_each_piece():
    b = _blocks(**CHAIN)
    d, s, _e, f, _ = replay(b, calibrate(b), Edited(delay=0.0, launch=0.5, poll=0.0))
    assert d.tolist() == [0, 120] and s.tolist() == [20, 140] and f.tolist() == [120, 240]


# two threads, one core each; t1 ran on core 0 (thread 0) although core 1 (thread 1) was
# free: its slack is how much later it decided there
SLACK = {"rows": [(0, 0, 0, 10, 110, 120), (1, 0, 130, 140, 240, 250), (2, 1, 0, 10, 20, 30)],
         "preds": {1: [], 2: []}, "device": [0, 0], "owners": [0, 1], "send": [0, 0]}


def test_a_block_keeps_its_core_within_its_slack_and_moves_beyond_it():
    b = _blocks(**SLACK)
    cal = calibrate(b)
    assert cal.slack == [0, 120 - 30, 0]      # core 0 free at 120, core 1 at 30
    assert cal.delay == [0, 10, 0]
    # core 1 busy until 120 (t2 ten times longer): core 0 at 120 is within 120 + 90
    _, _, _, _, core = replay(b, cal, Edited(duration_factor=np.array([1, 1, 10])))
    assert core.tolist() == [0, 0, 1]
    # t0 half as long again: core 0 at 170, beyond 30 + 90: t1 moves to core 1
    _, _, _, _, core = replay(b, cal, Edited(duration_factor=np.array([1.5, 1, 1])))
    assert core.tolist() == [0, 1, 1]


def test_more_cores_take_the_blocks_that_waited_for_a_core():
    """Three independent tasks on one core, one after another: with three cores they run
    side by side, each a launch after its own dispatch."""
    rows = [(0, 0, 0, 10, 110, 115), (1, 0, 115, 125, 225, 230), (2, 0, 230, 240, 340, 345)]
    b = _blocks(rows, {2: []}, [0], [0], [0])
    cal = calibrate(b)
    assert cal.delay == [0, 0, 0] and cal.slack == [0, 0, 0]
    _d, _s, e, _, core = replay(b, cal, Edited(device=([0, 0, 0], [0, 0, 0])))
    assert sorted(core.tolist()) == [0, 1, 2] and e.max() == 110


def test_a_block_sent_while_the_core_runs_waits_for_the_core_when_pending_is_allowed():
    """Simpler's a2a3 sends the next block once the core's block started (depth 1): the
    second block starts after the first ends, its launch counted from that end."""
    rows = [(0, 0, 0, 10, 110, 120), (1, 0, 20, 115, 215, 225)]
    b = _blocks(rows, {1: []}, [0], [0], [0], depth=1)
    cal = calibrate(b)
    assert cal.launch == [10, 5] and cal.delay == [0, 10]
    _d, s, e, _, _ = replay(b, cal, Edited(duration_factor=np.array([2.0, 1.0])))
    assert s.tolist() == [10, 215] and e.tolist() == [210, 315]


def test_a_dispatch_earlier_than_the_rules_allow_counts_as_a_violation():
    rows = [(0, 0, 0, 10, 110, 120), (1, 0, 50, 130, 230, 240)]   # sent before t0 finished
    cal = calibrate(_blocks(rows, {1: [0]}, [0], [0], [0]))
    assert cal.violations == 1 and cal.delay == [0, 0]


def test_a_device_without_a_core_of_a_blocks_type_is_refused():
    b = _blocks(**CHAIN)
    with pytest.raises(ValueError, match="no core of a block's type"):
        replay(b, calibrate(b), Edited(device=([1, 1], [0, 0])))


@st.composite
def captures(draw):
    """A device of two core types, 1-3 threads, and blocks in dispatch order: each task's
    blocks on cores of its type, producers among the tasks dispatched before, times drawn
    freely (dispatches earlier than the rules allow included: violations)."""
    types = draw(st.lists(st.integers(0, 1), min_size=1, max_size=6))
    threads = draw(st.integers(1, 3))
    owners = [draw(st.integers(0, threads - 1)) for _ in types]
    have = sorted(set(types))
    ntasks = draw(st.integers(1, 12))
    rows, preds = [], {}
    for t in range(ntasks):
        typ = draw(st.sampled_from(have))
        preds[t] = sorted(set(draw(st.lists(st.integers(0, t - 1), max_size=3)))) if t else []
        for _ in range(draw(st.integers(1, 3))):
            core = draw(st.sampled_from([c for c, k in enumerate(types) if k == typ]))
            d = draw(st.integers(0, 500))
            s = d + draw(st.integers(0, 50))
            e = s + draw(st.integers(0, 100))
            rows.append((t, core, typ, d, s, e, e + draw(st.integers(0, 30))))
    send = [draw(st.integers(0, 20)) for _ in range(threads)]
    a = np.array(rows, np.int64)
    ptr = np.zeros(ntasks + 1, np.int64)
    idx = []
    for t in range(ntasks):
        idx += preds[t]
        ptr[t + 1] = len(idx)
    return Blocks(a[:, 0], a[:, 2], a[:, 1], a[:, 3], a[:, 4], a[:, 5], a[:, 6],
                  np.arange(len(a)), ptr, np.array(idx, np.int64), types, owners,
                  draw(st.integers(0, 1)), send)


@settings(max_examples=300)
@given(captures())
def test_the_column_calibration_is_the_step_by_step_walk(b):
    """`calibrate` computes over whole columns what the walk finds step by step
    (tests/support/calibration_reference.py): every block's delay, launch, poll, duration
    and slack, the origin and the violations."""
    cal = calibrate(b)
    assert (cal.delay, cal.launch, cal.poll, cal.duration, cal.slack, cal.origin,
            cal.violations) == calibrate_by_walking(b)


@pytest.mark.parametrize("case", [c for c in CASES if not c.endswith("_l1")])
def test_the_column_calibration_is_the_walk_on_every_real_capture(case):
    from pypto.compile_profiling.analysis import analyze

    (rank,) = analyze([FIXTURES / case], with_overhead=False, with_verdict=False).ranks
    b = rank.replay.blocks
    cal = calibrate(b)
    assert (cal.delay, cal.launch, cal.poll, cal.duration, cal.slack, cal.origin,
            cal.violations) == calibrate_by_walking(b)


def test_a_producer_dispatched_after_its_consumer_is_refused_as_the_walk_refuses_it():
    rows = [(1, 0, 0, 10, 20, 30), (0, 0, 40, 50, 60, 70)]     # t1 (needs t0) sent first
    b = _blocks(rows, {1: [0]}, [0], [0], [0])
    b.order = np.arange(2)
    for f in (calibrate, calibrate_by_walking):
        with pytest.raises(ValueError, match="a producer is dispatched after its consumer"):
            f(b)


@settings(max_examples=200)
@given(captures(), st.sampled_from([Edited(), Edited(no_deps=True),
                                    Edited(delay=0.0, launch=0.5, poll=0.0)]))
def test_the_makespan_alone_is_the_replays_makespan(b, edit):
    """`replayed_makespan` walks as `replay` does without keeping every block's times:
    the same first start and last end."""
    cal = calibrate(b)
    _d, s, e, _f, _c = replay(b, cal, edit)
    assert replayed_makespan(b, cal, edit) == int(e.max() - s.min())
