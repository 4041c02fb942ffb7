"""`foundation.units`: one unit per column, round ticks on an axis."""

from __future__ import annotations

import itertools

from pypto.compile_profiling.foundation.units import axis_ticks, duration, unit_for


def test_a_column_reads_in_the_unit_of_its_largest_value():
    unit = unit_for([980, 1_200, 36_500])
    assert unit.name == "us"
    assert [unit(v) for v in (980, 1_200, 36_500)] == ["1.0 us", "1.2 us", "36.5 us"]
    assert unit_for([5, 7]).name == "ns" and unit_for([5, 7])(5) == "5 ns"
    assert unit(None) == "-" and unit(-1_500, signed=True) == "-1.5 us"


def test_one_duration_gets_three_significant_digits():
    assert duration(7_020) == "7.02 us"
    assert duration(36_500) == "36.5 us"
    assert duration(1_210_000) == "1.21 ms"
    assert duration(-7_440, signed=True) == "-7.44 us"
    assert duration(5_710_000_000) == "5.71 s"


def test_axis_ticks_are_round_steps_in_one_unit():
    ticks, labels = axis_ticks(194_740_000)           # 194.74 ms
    assert labels[0] == "0 ms" and all(x.endswith(" ms") for x in labels)
    steps = {round(b - a) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1 and str(steps.pop() // 1_000_000)[0] in "125"
    assert ticks[-1] <= 194_740_000 and len(ticks) <= 6
