"""Span containment (Simpler's `span_containment_v1`): the interval rules of the join and
the placement, on small made-up windows."""

from __future__ import annotations

import pytest

from pypto.compile_profiling.trace_merge.containment import (
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
    join_origin,
)
from pypto.compile_profiling.trace_merge.read_run_log import RunLog


def window(phases=None, wall=1000, start=10_000, dur=5000, launch=None) -> HostWindow:
    return HostWindow(RunLog("log"), 7, 1, "chip.run", start, dur, wall, phases or {}, None,
                      None, launch, None)


def capture(extent, **windows) -> CaptureWindows:
    return CaptureWindows("rec", 1_000_000_000, extent, windows)   # 1 GHz: a cycle is a ns


def test_join_brackets_nested_touching_disjoint_and_inverted():
    # nested: the sched bracket [400, 420] inside device_wall's [120, 420]
    j = join_origin(window({"sched": (80, 600)}), capture((420, 1120), sched=(500, 1080)))
    assert (j.lo, j.hi, j.origin) == (400, 420, 410) and j.sources == ("sched", "device_wall")
    # touching: the brackets share one cycle, the origin is exact
    j = join_origin(window({"sched": (0, 500)}, wall=1000), capture((400, 1400), sched=(400, 900)))
    assert j.lo == j.hi == 400
    # disjoint: sched says [500, 600], device_wall [0, 100]: not one run
    with pytest.raises(NotOneRun, match="do not overlap"):
        join_origin(window({"sched": (0, 100)}, wall=1000), capture((100, 1100), sched=(600, 700)))
    # inverted: the records are longer than the window that must hold them
    with pytest.raises(NotOneRun, match="do not overlap"):
        join_origin(window(wall=100), capture((0, 500)))


def test_placement_inside_runner_run_after_the_launch_and_inside_a_stage():
    w, cap = window(wall=1000, start=10_000, dur=5000), capture((1000, 1500))
    c = contain(w, cap)
    # origin 750 (device_wall brackets [500, 1000]); the block [0, 1000] in [10000, 15000]
    assert (c.join.origin, c.head_ns, c.extent_ns) == (750, 0, 1000)
    assert (c.place_lo_ns, c.slack_ns, c.cycle_offset_ns()) == (10_000, 4000, 9250)
    c = contain(window(wall=1000, start=10_000, dur=5000, launch=12_000), cap)
    assert (c.place_lo_ns, c.slack_ns) == (12_000, 2000)
    # a stage: nested narrows, touching leaves no slack, disjoint is dropped and named
    records_at = 250                       # the records start 250 ns into the block
    c = contain(w, cap, [(11_000 + records_at, 20_000, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns, c.dropped) == (11_000, 3000, [])
    c = contain(w, cap, [(14_000 + records_at, 14_000 + records_at + 500, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns) == (14_000, 0)
    c = contain(w, cap, [(0, 5000, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns) == (10_000, 4000)
    assert c.dropped and c.dropped[0].startswith("inside its stage: it excludes")


def test_a_conflicting_launch_marker_or_device_wall_is_dropped_and_named():
    cap = capture((1000, 1500))
    c = contain(window(wall=1000, start=10_000, dur=5000, launch=14_500), cap)
    assert c.place_lo_ns == 10_000 and "aicpu_launch marker at 14500" in c.dropped[0]
    # device_wall longer than runner_run: the records and sub-phases still fit
    c = contain(window(wall=9000, start=10_000, dur=5000), capture((5000, 5500)))
    assert "device_wall" in c.dropped[0] and c.extent_ns <= 5000
    with pytest.raises(NotOneRun, match="does not fit"):
        contain(window(wall=9000, start=10_000, dur=5000), capture((0, 9000)))
