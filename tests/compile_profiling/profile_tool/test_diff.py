"""`pypto-profile diff`'s rule: a regression is a stage slower, with 1 - alpha confidence from
the runs' own spread, by more than the noise floor; one run per side decides nothing.

The rank bound is checked exactly against brute force, and the rule at its boundaries. How it
fares on a real host's noise (identical runs never flagged, a real 2x slowdown of one pass
caught) is a timing figure, so it is measured by `benchmarks/bench_diff_noise.py`, not here.
"""

from __future__ import annotations

import json
from itertools import combinations
from math import comb

import pytest

from pypto.compile_profiling.profile_data.model import Profile, Stage
from pypto.compile_profiling.profile_tool.diff import (
    diff_dict,
    diff_profiles,
    format_diff,
    format_markdown,
    format_text,
    regression_of,
    verdict,
)
from pypto.compile_profiling.profile_tool.rank_bound import (
    bound_rank,
    lower_bound,
    min_runs,
    u_counts,
)


def brute_u_counts(m: int, n: int) -> list[int]:
    """Every placement of the m base runs among the m + n sorted runs, counted by U."""
    counts = [0] * (m * n + 1)
    for base_at in combinations(range(m + n), m):
        taken, u = set(base_at), 0
        seen_base = 0
        for k in range(m + n):
            if k in taken:
                seen_base += 1
            else:
                u += seen_base   # this new run is above every base run below it
        counts[u] += 1
    return counts


@pytest.mark.parametrize("m", range(7))
@pytest.mark.parametrize("n", range(7))
def test_u_counts_are_the_exact_null_distribution(m, n):
    counts = u_counts(m, n)
    assert counts == brute_u_counts(m, n)
    assert sum(counts) == comb(m + n, m) and counts == counts[::-1]


def test_bound_rank_is_the_largest_rank_within_alpha():
    # 5 and 5 runs: P(U <= 1) = 2/252 <= 0.01 < P(U <= 2) = 4/252
    assert bound_rank(5, 5, 0.01) == 2
    # P(U <= 4) = 12/252 = 0.0476 <= 0.05 < P(U <= 5) = 19/252
    assert bound_rank(5, 5, 0.05) == 5
    # 3 and 3: P(U = 0) = 1/20 = 0.05 exactly is within alpha 0.05
    assert bound_rank(3, 3, 0.05) == 1
    assert bound_rank(3, 3, 0.0499) is None
    assert bound_rank(1, 1, 0.05) is None and bound_rank(0, 5, 0.05) is None
    assert bound_rank(1, 19, 0.05) == 1 and bound_rank(1, 18, 0.05) is None
    assert min_runs(0.05) == 3 and min_runs(0.01) == 5 and min_runs(0.001) == 7
    with pytest.raises(ValueError):
        bound_rank(3, 3, 1.0)


def test_lower_bound_is_the_ranked_difference_and_survives_one_wild_run_from_6_runs():
    base, new = [10.0, 11.0, 12.0], [20.0, 21.0, 22.0]
    assert lower_bound(base, new, 0.05) == 8.0          # c = 1: the smallest of 9 differences
    assert lower_bound([10.0], [20.0], 0.05) is None     # one run per side: never decided
    base6, new6 = [10.0, 11, 12, 13, 14, 15], [20.0, 21, 22, 23, 24, 25]
    diffs = sorted(y - x for y in new6 for x in base6)
    assert bound_rank(6, 6, 0.05) == 8 and lower_bound(base6, new6, 0.05) == diffs[7] == 8.0
    # one run hit by a huge stall spoils its 6 differences; the 8th smallest is still real
    wild6 = [10.0, 11, 12, 13, 14, 1000]
    assert lower_bound(wild6, new6, 0.05) == 7.0
    # with 5 runs per side (c = 5 = the spoiled row) the same stall hides the change
    assert lower_bound([10.0, 11, 12, 13, 1000], new6[:5], 0.05) < 0


def test_regression_needs_the_bound_strictly_above_the_floor():
    base = [100e6, 100e6, 100e6]                         # 100 ms, three identical runs
    # floor = max(1 ms, 10% of 100 ms) = 10 ms; identical runs: the bound is the change itself
    assert regression_of(base, [110e6] * 3, 10.0, 1.0, 0.05) == (False, 10e6, 10e6)
    assert regression_of(base, [110.001e6] * 3, 10.0, 1.0, 0.05)[0]
    # the floor is min_ms when that is larger
    assert regression_of(base, [120e6] * 3, 10.0, 25.0, 0.05)[:2] == (False, 25e6)
    # too few runs: never a regression, and the bound says so
    assert regression_of(base[:1], [500e6], 10.0, 1.0, 0.05) == (False, 10e6, None)
    # one slow new run of three: "at least" is no change
    assert regression_of(base, [100e6, 100e6, 300e6], 10.0, 1.0, 0.05)[::2] == (False, 0.0)


# ---------------------------------------------------------------- the diff on synthetic runs

MS = 1_000_000


def _run(source: str, total_ms: float | None = None, **stages_ms) -> Profile:
    """A profile whose top-level stages (name -> ms; a list: a family of that name) lie end
    to end; `total_ms` defaults to their sum."""
    stages, t = [], 0
    for name, ms in stages_ms.items():
        for one in ms if isinstance(ms, list) else [ms]:
            stages.append(Stage(name, t, t + round(one * MS)))
            t += round(one * MS)
    return Profile(source, stages, t if total_ms is None else round(total_ms * MS))


def _runs(side: str, **per_stage) -> list[Profile]:
    """Runs i = 0.. of one side: per stage the list of its ms in each run."""
    n = len(next(iter(per_stage.values())))
    return [_run(f"{side}{i}", **{k: v[i] for k, v in per_stage.items()}) for i in range(n)]


def _change(d, key):
    return next(c for c in d.changes if c.key == key)


def test_noisy_base_runs_against_steady_new_runs_and_the_reverse():
    """5 runs per side at alpha 0.01: c = 2, so "at least" is the 2nd smallest of the 25
    differences. The medians are the middle runs (not the mean, not the max)."""
    noisy = [100.0, 130.0, 90.0, 104.0, 96.0]            # median 100, max 130, mean 104
    steady = [150.0, 151.0, 149.0, 150.5, 149.5]          # median 150
    d = diff_profiles(_runs("b", a=noisy), _runs("n", a=steady))
    c = _change(d, "a")
    diffs = sorted(y - x for y in steady for x in noisy)
    assert (c.base_ns, c.new_ns) == (100 * MS, 150 * MS)
    assert c.bound_ns == pytest.approx(diffs[1] * MS) == pytest.approx(149.5e6 - 130e6)
    assert c.floor_ns == 10 * MS and c.regression and c.status == "regression"
    assert (c.base_runs, c.new_runs, c.pct) == (5, 5, 50.0)
    # the reverse: steady base, noisy new; the slowdown's bound is 90 - 151 < 0: no regression
    d = diff_profiles(_runs("b", a=steady), _runs("n", a=noisy))
    c = _change(d, "a")
    assert (c.base_ns, c.new_ns, c.regression, c.status) == (150 * MS, 100 * MS, False, "faster")
    assert c.bound_ns == pytest.approx(sorted(y - x for y in noisy for x in steady)[1] * MS)
    # noisy on both sides, overlapping: slower by the medians, not a regression
    d = diff_profiles(_runs("b", a=noisy), _runs("n", a=[v + 20 for v in noisy]))
    c = _change(d, "a")
    assert c.delta_ns == pytest.approx(20 * MS) and not c.regression and c.status == "slower"
    assert d.regressions == [] and d.undecided == []


def test_a_family_is_compared_by_its_summed_time_and_its_median_size():
    base = [_run("b0", k=[1.0, 2.0]), _run("b1", k=[1.0, 2.0, 3.0]), _run("b2", k=[4.0])]
    new = [_run("n0", k=[5.0])]
    c = _change(diff_profiles(base, new), "k")
    assert (c.base_ns, c.new_ns, c.base_count, c.new_count) == (4 * MS, 5 * MS, 2, 1)


def test_the_cause_first_then_by_percent_then_by_name():
    base = _runs("b", big=[100.0], small=[10.0], same_a=[50.0], same_b=[50.0], fast=[30.0],
                 flat=[5.0])
    new = _runs("n", big=[140.0], small=[50.0], same_a=[60.0], same_b=[60.0], fast=[20.0],
                flat=[5.0])
    d = diff_profiles(base, new)
    # big and small both +40 ms: small's +400% first; same_a/same_b: equal, by name
    assert [c.key for c in d.changes] == ["small", "big", "same_a", "same_b", "flat", "fast"]
    assert [c.status for c in d.changes] == ["slower"] * 4 + ["same", "faster"]


def test_new_and_vanished_stages_largest_first_then_by_name():
    d = diff_profiles([_run("b", keep=1.0, gone_a=2.0, gone_b=2.0, gone_c=3.0)],
                      [_run("n", keep=1.0, new_a=1.0, new_b=5.0, new_c=1.0)])
    assert [c.key for c in d.added] == ["new_b", "new_a", "new_c"]
    assert [c.key for c in d.vanished] == ["gone_c", "gone_a", "gone_b"]
    assert [(c.status, c.base_ns, c.new_ns, c.new_runs) for c in d.added][:1] == [
        ("new", None, 5 * MS, 1)]
    assert [(c.status, c.base_ns, c.new_ns, c.base_runs) for c in d.vanished][:1] == [
        ("vanished", 3 * MS, None, 1)]
    assert d.added[0].delta_ns == 5 * MS and d.vanished[0].delta_ns == -3 * MS
    assert d.regressions == [] and d.added[0].pct is None


def test_threshold_and_min_ms_at_their_boundaries():
    """floor = max(min_ms, threshold % of the base median); a regression needs the bound
    strictly above it. Identical runs per side: the bound is the change itself."""
    base = _runs("b", a=[100.0] * 5)

    def regression(new_ms, **kw):
        return _change(diff_profiles(base, _runs("n", a=[new_ms] * 5), **kw), "a")

    assert not regression(110.0).regression and regression(110.0).floor_ns == 10 * MS
    assert regression(110.5).regression
    assert not regression(125.0, threshold_pct=25.0).regression
    assert regression(125.5, threshold_pct=25.0).regression
    c = regression(105.0, threshold_pct=1.0, min_ms=5.0)
    assert (c.floor_ns, c.regression) == (5 * MS, False)
    assert regression(105.5, threshold_pct=1.0, min_ms=5.0).regression
    assert regression(101.5, threshold_pct=1.0, min_ms=0.0).floor_ns == 1 * MS


def test_changes_below_min_ms_are_counted_not_listed_and_regressions_always_listed():
    base = _runs("b", at=[10.0] * 5, below=[10.0] * 5, down=[10.0] * 5)
    new = _runs("n", at=[11.0] * 5, below=[10.999] * 5, down=[9.0] * 5)
    d = diff_profiles(base, new, min_ms=1.0, threshold_pct=0.0)
    rows = format_text(d).splitlines()
    assert [r.split()[-1] for r in rows[6:8]] == ["at", "down"]
    assert rows[6].split()[0] == "+1.0ms" and rows[7].split()[0] == "-1.0ms"
    assert not any("below" in r for r in rows)
    text = format_text(d)
    assert "(1 matched stage(s) changed by less than 1 ms)" in text
    # a regression under min_ms is listed anyway (min_ms 0.5 for the rule, 2 for listing)
    d = diff_profiles(base, new, min_ms=0.5, threshold_pct=0.0)
    d.min_ms = 2.0
    assert [c.key for c in d.regressions] == ["at", "below"]
    md = format_markdown(d)
    assert "| `at` |" in md and "| `below` |" in md and "`down`" not in md


def test_a_zero_duration_base_stage_and_an_empty_base_profile_divide_by_nothing():
    base = _runs("b", zero=[0.0] * 5, a=[1.0] * 5)
    new = _runs("n", zero=[2.0] * 5, a=[1.0] * 5)
    d = diff_profiles(base, new)
    c = _change(d, "zero")
    assert (c.base_ns, c.pct, c.floor_ns, c.regression) == (0, None, 1 * MS, True)
    assert "+2.0ms" in format_text(d) and "| `zero` | 0us | 2.0ms | +2.0ms () |" in \
        format_markdown(d)
    assert diff_dict(d)["stages"][0]["change_pct"] is None
    empty = diff_profiles([Profile("empty", [], 0)], [_run("n", a=3.0)])
    assert (empty.base_total_ns, empty.changes, [c.key for c in empty.added]) == (0, [], ["a"])
    text = format_text(empty)
    assert "Total: 0us -> 3.0ms ()\n" in text
    assert "\n0 regression(s) (slower, with 99% confidence" in text
    assert "Total: **0us → 3.0ms** ()" in format_markdown(empty)
    assert diff_dict(empty)["base_total_ms"] == 0


def test_the_text_report_in_full():
    base = _runs("b", parse=[10.0] * 5, passes=[100.0] * 5, gone=[3.0] * 5)
    new = _runs("n", parse=[9.0] * 5, passes=[150.0] * 5, fresh=[2.0] * 5)
    d = diff_profiles(base, new)
    assert format_text(d) == (
        "base: median of 5 runs\n"
        "new:  median of 5 runs\n"
        "Total: 113.0ms -> 161.0ms (+42.5%)\n"
        "1 regression(s) (slower, with 99% confidence, by more than 10% and 1 ms)\n"
        "\n"
        " change               base      new  at least  stage\n"
        "+50.0ms    +50.0%  100.0ms  150.0ms   +50.0ms  passes  REGRESSION\n"
        " -1.0ms    -10.0%   10.0ms    9.0ms    -1.0ms  parse\n"
        " +2.0ms       new        -    2.0ms            fresh\n"
        " -3.0ms  vanished    3.0ms        -            gone\n"
        "(at least: the slowdown with 99% confidence, from the runs' spread; '-': too few runs)\n")


def test_one_run_per_side_in_text_markdown_and_json():
    d = diff_profiles([_run("base.json", a=10.0, b=1.0)], [_run("new.json", a=20.0, b=1.0)])
    verdict_line = ("no regression decided: 1 base and 1 new run(s) cannot tell a change "
                    "from noise at 99% confidence; give at least 5 runs per side (BASE1 "
                    "BASE2 ... -- NEW1 NEW2 ..., or a directory of runs)")
    text = format_text(d)
    lines = text.splitlines()
    assert lines[:3] == ["base: base.json", "new:  new.json", "Total: 11.0ms -> 21.0ms (+90.9%)"]
    # the verdict, wrapped to 100 columns under a hanging indent
    assert lines[3] + " " + lines[4].lstrip() == verdict_line
    assert len(lines[3]) <= 100 and lines[4].startswith("    ") and len(lines[4]) <= 100
    assert "+10.0ms  +100.0%  10.0ms  20.0ms         -  a\n" in text
    assert "(1 matched stage(s) changed by less than 1 ms)" in text
    assert format_markdown(d) == (
        "### Compile profile: no regression\n"
        "\n"
        f"Total: **11.0ms → 21.0ms** (+90.9%); base: base.json, new: new.json; {verdict_line}.\n"
        "\n"
        "| stage | base | new | change | at least (99%) | |\n"
        "|---|---:|---:|---:|---:|---|\n"
        "| `a` | 10.0ms | 20.0ms | +10.0ms (+100.0%) | - |  |\n")
    doc = json.loads(format_diff(d, "json"))
    assert doc == diff_dict(d)
    assert {k: doc[k] for k in ("base_runs", "new_runs", "threshold_pct", "min_ms", "alpha",
                                "min_runs_per_side", "verdict", "base_total_ms",
                                "new_total_ms", "regressions", "undecided")} == {
        "base_runs": ["base.json"], "new_runs": ["new.json"], "threshold_pct": 10.0,
        "min_ms": 1.0, "alpha": 0.01, "min_runs_per_side": 5, "verdict": verdict_line,
        "base_total_ms": 11.0, "new_total_ms": 21.0, "regressions": [],
        "undecided": ["a", "b"]}
    assert doc["stages"][0] == {
        "key": "a", "status": "slower", "base_ms": 10.0, "new_ms": 20.0, "delta_ms": 10.0,
        "change_pct": 100.0, "base_count": 1, "new_count": 1, "base_runs": 1, "new_runs": 1,
        "floor_ms": 1.0, "at_least_ms": None, "undecided": True}
    assert format_diff(d, "text") == text and format_diff(d, "markdown") == format_markdown(d)


def test_markdown_of_regressions_new_and_vanished_and_odd_names():
    base = _runs("b", **{"a|b": [10.0] * 5, "t`x": [10.0] * 5, "gone": [4.0] * 5})
    new = _runs("n", **{"a|b": [30.0] * 5, "t`x": [30.0] * 5, "fresh": [1.5] * 5})
    d = diff_profiles(base, new)
    md = format_markdown(d).splitlines()
    assert md[0] == "### Compile profile: 2 regressions"
    assert md[2].startswith("Total: **24.0ms → 61.5ms** (+156.2%); base: median of 5 runs, "
                            "new: median of 5 runs; 2 regression(s) (slower, with 99% ")
    assert md[6:] == [
        "| `a\\|b` | 10.0ms | 30.0ms | +20.0ms (+200.0%) | +20.0ms | ⚠️ regression |",
        "| `t'x` | 10.0ms | 30.0ms | +20.0ms (+200.0%) | +20.0ms | ⚠️ regression |",
        "| `fresh` | - | 1.5ms | +1.5ms | | new |",
        "| `gone` | 4.0ms | - | -4.0ms | | vanished |"]
    one = diff_profiles(_runs("b", a=[10.0] * 5), _runs("n", a=[30.0] * 5))
    assert format_markdown(one).startswith("### Compile profile: 1 regression\n")
    doc = diff_dict(d)
    assert doc["regressions"] == ["a|b", "t`x"]
    assert [(s["key"], s["status"], s["floor_ms"]) for s in doc["stages"]] == [
        ("a|b", "regression", 1.0), ("t`x", "regression", 1.0), ("fresh", "new", None),
        ("gone", "vanished", None)]


def test_the_verdict_counts_the_undecided_stages_beside_the_decided_ones():
    base = _runs("b", a=[10.0] * 5) + [_run("b5", a=10.0, rare=1.0)]
    new = _runs("n", a=[10.0] * 5) + [_run("n5", a=10.0, rare=5.0)]
    d = diff_profiles(base, new)
    assert [c.key for c in d.undecided] == ["rare"]
    assert verdict(d) == ("0 regression(s) (slower, with 99% confidence, by more than 10% "
                          "and 1 ms); 1 stage(s) in too few runs to decide")
    d = diff_profiles(base, new, alpha=0.05, threshold_pct=25.0, min_ms=0.5)
    assert verdict(d).startswith("0 regression(s) (slower, with 95% confidence, by more "
                                 "than 25% and 0.5 ms)")


def test_signs_at_zero_and_below_a_nanosecond_and_a_second_in_seconds():
    """min_ms 0 lists everything: no change is "+0us", half a nanosecond (a median of
    two runs) too; a stage of exactly 1 s shows as seconds."""
    base = [_run("b0", same=1.0, half=0.000001, sec=1000.0),
            _run("b1", same=1.0, half=0.000002, sec=1000.0)]
    new = [_run("n0", same=1.0, half=0.000002, sec=1000.0),
           _run("n1", same=1.0, half=0.000002, sec=1000.0)]
    d = diff_profiles(base, new, min_ms=0.0)
    rows = {r.split()[-1]: r.split() for r in format_text(d).splitlines()
            if r.split() and r.split()[-1] in ("same", "half", "sec")}
    assert rows["same"][:2] == ["+0us", "+0.0%"] and rows["half"][:2] == ["+0us", "+33.3%"]
    assert rows["sec"][2:4] == ["1.000s", "1.000s"]
    assert _change(d, "half").delta_ns == 0.5


def test_a_total_of_one_nanosecond_has_a_percentage():
    d = diff_profiles([Profile("b", [], 1)], [Profile("n", [], 3)])
    assert "Total: 0us -> 0us (+200.0%)" in format_text(d)


def test_no_change_listed_prints_no_table_and_one_row_its_footnote():
    d = diff_profiles(_runs("b", a=[10.0] * 5), _runs("n", a=[10.1] * 5))
    assert format_text(d).splitlines()[4:] == [
        "", "(1 matched stage(s) changed by less than 1 ms)"]
    d = diff_profiles(_runs("b", a=[10.0] * 5), _runs("n", a=[12.0] * 5))
    lines = format_text(d).splitlines()
    assert len(lines) == 8 and lines[5].split() == ["change", "base", "new", "at", "least",
                                                    "stage"]
    assert lines[7].startswith("(at least: the slowdown")


def test_a_stage_from_nothing_sorts_as_no_percentage():
    """Equal slowdowns: the one with a percentage above 0 first, the one from 0 ns (no
    percentage) after it."""
    d = diff_profiles(_runs("b", zero=[0.0] * 5, big=[400.0] * 5),
                      _runs("n", zero=[2.0] * 5, big=[402.0] * 5))
    assert [c.key for c in d.changes] == ["big", "zero"]


def test_new_and_vanished_records_in_json_in_full():
    d = diff_profiles([_run("b", keep=1.0, gone=[1.0, 2.0])],
                      [_run("n", keep=1.0, fresh=[1.0, 2.0, 3.0])])
    doc = diff_dict(d)
    assert doc["stages"][1:] == [
        {"key": "fresh", "status": "new", "base_ms": None, "new_ms": 6.0, "delta_ms": 6.0,
         "change_pct": None, "base_count": 0, "new_count": 3, "base_runs": 0, "new_runs": 1,
         "floor_ms": None, "at_least_ms": None, "undecided": False},
        {"key": "gone", "status": "vanished", "base_ms": 3.0, "new_ms": None,
         "delta_ms": -3.0, "change_pct": None, "base_count": 2, "new_count": 0,
         "base_runs": 1, "new_runs": 0, "floor_ms": None, "at_least_ms": None,
         "undecided": False}]
    text = format_diff(d, "json")
    assert text.startswith('{\n "base_runs": [\n  "b"\n ],\n') and text.endswith("}\n")
    assert json.loads(text) == doc
    odd = diff_profiles([_run("b", **{"é→": 1.0})], [_run("n", **{"é→": 2.0})])
    assert '"key": "é→"' in format_diff(odd, "json")
