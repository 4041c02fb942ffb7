"""Clock anchors -> device-cycle to host-ns mapping; host <-> host monotonic offsets."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from simpler_fixtures import FIXTURES

from pypto.compile_profiling.trace_merge.place import clock_alignment as ca
from pypto.compile_profiling.trace_merge.read import wall_anchor as wa
from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log
from pypto.compile_profiling.trace_merge.read.read_simpler import read_records

HBG = ["hbg_vector_example_l4_depgen", "hbg_bgemm_l4_depgen", "hbg_benchmark_bgemm_case0_l4_depgen"]


def _anchors(case):
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())["metadata"]


@pytest.mark.parametrize("case", HBG)
def test_fixture_anchors_calibrate_like_simplers_own_converter(case):
    rec = read_records(FIXTURES / case / "chip_swimlane_records.json")
    m = ca.build_clock_mapping(rec.clock_anchors, rec.freq_hz)
    merged = json.loads((FIXTURES / case / "merged_swimlane.json").read_text())["metadata"]
    simpler = merged["clock_alignment"]
    assert simpler["status"] == "calibrated" and m.method == simpler["method"]
    assert m.uncertainty_ns == simpler["max_uncertainty_ns"]
    assert {m.start.position: m.start.sample_idx, m.end.position: m.end.sample_idx} == simpler[
        "selected_sample_idx"
    ]
    # Both anchors map exactly onto their host midpoints.
    assert m.to_host_ns(m.start.device_cycles) == pytest.approx(m.start.host_mid_ns, abs=1e-3)
    assert m.to_host_ns(m.end.device_cycles) == pytest.approx(m.end.host_mid_ns, abs=1e-3)
    # Vectorised and scalar forms agree.
    cyc = rec.aicore["start_cycles"]
    vec = m.to_host_ns(cyc)
    assert vec.dtype == np.float64
    assert vec[:5].tolist() == pytest.approx([m.to_host_ns(int(c)) for c in cyc[:5]], abs=1e-3)
    assert not m.outside_window(cyc).any()


def test_smallest_rtt_valid_sample_wins_and_errors_are_skipped():
    meta = _anchors("hbg_vector_example_l4_depgen")
    anchors = copy.deepcopy(meta["clock_anchors"])
    pre = [s for s in anchors["samples"] if s["position"] == ca.PRE_POSITION]
    best = min(pre, key=lambda s: s["host_after_ns"] - s["host_before_ns"])
    m = ca.build_clock_mapping(anchors, 50_000_000)
    assert m.start.sample_idx == best["sample_idx"]
    assert (
        m.start.host_mid_ns
        == best["host_before_ns"] + (best["host_after_ns"] - best["host_before_ns"]) / 2
    )
    best["error"] = {"code": 5}
    m2 = ca.build_clock_mapping(anchors, 50_000_000)
    assert m2.start.sample_idx != best["sample_idx"]
    for s in pre:
        s["device_cycles"] = None
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(anchors, 50_000_000)
    assert info.value.reason == "no_valid_pre_host_orchestration_anchor"


def test_linear_map_with_measured_end_point_correction():
    samples = [
        {
            "position": ca.PRE_POSITION,
            "sample_idx": 0,
            "host_before_ns": 1_000,
            "device_cycles": 100,
            "host_after_ns": 1_020,
            "error": None,
        },
        {
            "position": ca.POST_POSITION,
            "sample_idx": 0,
            "host_before_ns": 1_000_990,
            "device_cycles": 100 + 1_000_000 // 20,
            "host_after_ns": 1_001_030,
            "error": None,
        },
    ]
    m = ca.build_clock_mapping(
        {"device_timestamp_unit": "syscnt_cycles", "samples": samples},
        50_000_000,
        host_quantization_ns=2,
    )
    # nominal: 50_000 cycles = 1_000_000 ns; measured 1_001_010 - 1_010 = 1_000_000 + 0 ...
    assert m.start.host_mid_ns == 1_010 and m.end.host_mid_ns == 1_001_010
    assert m.end_correction_ns == pytest.approx(0.0)
    assert m.to_host_ns(100 + 25_000) == pytest.approx(501_010)
    samples[1]["host_before_ns"] += 1_000  # device runs 0.1% slow vs host
    samples[1]["host_after_ns"] += 1_000
    m = ca.build_clock_mapping(
        {"device_timestamp_unit": "syscnt_cycles", "samples": samples}, 50_000_000
    )
    assert m.end_correction_ns == pytest.approx(1_000)
    assert m.to_host_ns(100 + 25_000) == pytest.approx(1_010 + 500_000 + 500)
    assert m.uncertainty_ns == 20  # max(rtt)/2
    mask = m.outside_window(np.array([99, 100, 50_100, 50_101]))
    assert mask.tolist() == [True, False, False, True]


@pytest.mark.parametrize(
    "change,reason",
    [
        (lambda a: a.pop("samples"), "missing_clock_anchor_samples"),
        (lambda a: a.update(device_timestamp_unit="ns"), "unsupported_device_timestamp_unit"),
        (
            lambda a: a.update(raw_device_timestamp_unit="ticks"),
            "unsupported_raw_device_timestamp_unit",
        ),
        (
            lambda a: [
                s.update(device_cycles=1) for s in a["samples"] if s["position"] == ca.POST_POSITION
            ],
            "device_anchor_order_invalid",
        ),
    ],
)
def test_unusable_anchors_give_a_reason(change, reason):
    anchors = copy.deepcopy(_anchors("hbg_bgemm_l4_depgen")["clock_anchors"])
    change(anchors)
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(anchors, 50_000_000)
    assert info.value.reason == reason
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(None, 50_000_000)
    assert (info.value.reason, str(info.value)) == (
        "missing_clock_anchors", "clock anchors unusable: missing_clock_anchors")


def test_device_uptime_us_raw_unit_adds_a_microsecond_of_uncertainty():
    anchors = copy.deepcopy(_anchors("hbg_vector_example_l4_depgen")["clock_anchors"])
    base = ca.build_clock_mapping(anchors, 50_000_000).uncertainty_ns
    anchors["raw_device_timestamp_unit"] = "device_uptime_us"
    assert ca.build_clock_mapping(anchors, 50_000_000).uncertainty_ns == base + 1_000


def test_wall_clock_offsets_between_hosts():
    hl = read_run_log(FIXTURES / "hbg_vector_example_l4_depgen" / "host_log.txt")
    simpler = wa.wall_anchor_from_log(hl.clock_anchors[0])
    # Our trace on another host whose monotonic clock is 5 s behind for the same wall time.
    ours = wa.wall_anchor_from_other_data(
        {
            "clock_anchor": {
                "monotonic_ns": simpler.mono_ns - 5_000_000_000 + 10,
                "wall_ns": simpler.wall_ns + 10,
            }
        }
    )
    off = ca.monotonic_offset_ns(reference=ours, other=simpler)
    assert off == -5_000_000_000
    # A Simpler span at mono t is at t + off on our axis; same wall time either way.
    t = simpler.mono_ns + 123
    assert (t + off) + ours.wall_minus_mono_ns == t + simpler.wall_minus_mono_ns
    assert ca.monotonic_offset_ns(simpler, simpler) == 0
    assert wa.wall_anchor_from_other_data({"clock_anchor": {"monotonic_ns": "1"}}) is None
    assert wa.wall_anchor_from_other_data({}) is None


# ------------------------------------------------------------------ hostile anchor samples

def _sample(position=ca.PRE_POSITION, idx=0, before=1_000, after=1_020, cycles=100,
            error=None):
    return {"position": position, "sample_idx": idx, "host_before_ns": before,
            "host_after_ns": after, "device_cycles": cycles, "error": error}


GOOD_POST = _sample(ca.POST_POSITION, 0, 1_001_000, 1_001_040, 50_100)


def _anchors_of(*samples, **extra):
    return {"device_timestamp_unit": "syscnt_cycles", "samples": list(samples), **extra}


@pytest.mark.parametrize("bad, why", [
    ({"before": 0}, "host_before_ns 0: never stamped"),
    ({"before": -1}, "host_before_ns -1"),
    ({"cycles": 0}, "device_cycles 0: never stamped"),
    ({"cycles": -1}, "device_cycles -1"),
    ({"idx": -1}, "sample_idx -1"),
    ({"after": 999}, "host_after_ns before host_before_ns"),
    ({"before": 1_000.0}, "a float among ints"),
    ({"cycles": "100"}, "a string among ints"),
    ({"idx": True}, "a bool is not an int"),
    ({"after": None}, "a missing field"),
    ({"error": {"code": 5}}, "an error"),
    ({"error": 3}, "a non-zero error code"),
])
def test_a_hostile_sample_is_skipped_for_the_next_valid_one(bad, why):
    """Each bad sample has the smallest round trip (2 ns, idx 0): only its being skipped
    lets the valid one (idx 1, round trip 20 ns) be chosen."""
    hostile = _sample(idx=0, before=1_000, after=1_002, cycles=100)
    renamed = {"before": "host_before_ns", "after": "host_after_ns", "cycles": "device_cycles",
               "idx": "sample_idx", "error": "error"}
    hostile.update({renamed[k]: v for k, v in bad.items()})
    valid = _sample(idx=1, before=2_000, after=2_020, cycles=150)
    m = ca.build_clock_mapping(_anchors_of(hostile, valid, GOOD_POST), 50_000_000)
    assert (m.start.sample_idx, m.start.host_mid_ns, m.start.device_cycles) == (1, 2_010, 150), why
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(_anchors_of(hostile, GOOD_POST), 50_000_000)
    assert info.value.reason == "no_valid_pre_host_orchestration_anchor", why


@pytest.mark.parametrize("error", [None, 0, ""])
def test_no_error_is_none_zero_or_empty(error):
    m = ca.build_clock_mapping(_anchors_of(_sample(error=error), GOOD_POST), 50_000_000)
    assert m.start.sample_idx == 0


def test_a_zero_round_trip_sample_is_exact_and_wins():
    """host_after == host_before: a round trip of 0, the host time itself, no uncertainty
    but the quantization (here the raw unit's 1 us and the host's 3 ns)."""
    zero = _sample(idx=4, before=5_000, after=5_000, cycles=100)
    m = ca.build_clock_mapping(
        _anchors_of(_sample(idx=0), zero, GOOD_POST, raw_device_timestamp_unit="device_uptime_us"),
        50_000_000, host_quantization_ns=3)
    assert (m.start.sample_idx, m.start.rtt_ns, m.start.host_mid_ns) == (4, 0, 5_000)
    assert m.start.uncertainty_ns == 1_000                 # 0 / 2 + the raw unit's 1 us
    assert m.end.uncertainty_ns == 20 + 1_000              # 40 / 2 + 1 us
    assert m.uncertainty_ns == 20 + 1_000 + 3              # the larger, plus the host's 3 ns


def test_equal_round_trips_go_to_the_smaller_sample_index():
    a = _sample(idx=2, before=1_000, after=1_010, cycles=100)
    b = _sample(idx=1, before=3_000, after=3_010, cycles=200)
    m = ca.build_clock_mapping(_anchors_of(a, b, GOOD_POST), 50_000_000)
    assert (m.start.sample_idx, m.start.device_cycles) == (1, 200)
    c = _sample(idx=0, before=4_000, after=4_011, cycles=300)    # one ns more: loses
    m = ca.build_clock_mapping(_anchors_of(c, a, b, GOOD_POST), 50_000_000)
    assert m.start.sample_idx == 1


def test_samples_may_be_objects_with_attributes():
    class Sample:
        def __init__(self, d):
            self.__dict__.update(d)

    anchors = Sample({"device_timestamp_unit": "syscnt_cycles",
                      "samples": [Sample(_sample()), Sample(GOOD_POST)]})
    m = ca.build_clock_mapping(anchors, 50_000_000)
    assert (m.start.host_mid_ns, m.end.host_mid_ns) == (1_010, 1_001_020)


@pytest.mark.parametrize("freq", [0, -1, None])
def test_a_frequency_of_zero_or_less_is_refused(freq):
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(_anchors_of(_sample(), GOOD_POST), freq)
    assert info.value.reason == "invalid_device_frequency"
    assert str(info.value) == f"clock anchors unusable: invalid_device_frequency ({freq})"


@pytest.mark.parametrize("post, reason", [
    ({"before": 1_000, "after": 1_020}, "host_anchor_order_invalid"),      # same host midpoint
    ({"before": 900, "after": 920}, "host_anchor_order_invalid"),          # before the pre anchor
    ({"cycles": 100}, "device_anchor_order_invalid"),                   # equal device cycles
    ({"cycles": 99}, "device_anchor_order_invalid"),
])
def test_anchors_out_of_order_are_refused(post, reason):
    """Equal device cycles would divide by zero in the mapping's slope: refused first."""
    p = _sample(ca.POST_POSITION, 0, **{"before": 1_001_000, "after": 1_001_040,
                                         "cycles": 50_100, **post})
    with pytest.raises(ca.ClockAnchorsUnusable) as info:
        ca.build_clock_mapping(_anchors_of(_sample(), p), 50_000_000)
    assert info.value.reason == reason
    assert str(info.value) == f"clock anchors unusable: {reason}"


def test_one_nanosecond_and_one_cycle_of_order_suffice():
    p = _sample(ca.POST_POSITION, 0, before=1_001, after=1_039, cycles=101)
    m = ca.build_clock_mapping(_anchors_of(_sample(), p), 50_000_000)
    assert (m.start.host_mid_ns, m.end.host_mid_ns) == (1_010, 1_020)
    assert m.window_cycles == (100, 101)
    # the smallest valid fields: 1 ns, 1 cycle, index 0
    m = ca.build_clock_mapping(_anchors_of(_sample(before=1, after=1, cycles=1), p), 50_000_000)
    assert (m.start.host_mid_ns, m.start.device_cycles, m.start.sample_idx) == (1, 1, 0)


def test_of_two_samples_alike_in_round_trip_and_index_the_first_is_kept():
    first = _sample(idx=3, before=1_000, after=1_010, cycles=100)
    again = _sample(idx=3, before=2_000, after=2_010, cycles=200)
    m = ca.build_clock_mapping(_anchors_of(first, again, GOOD_POST), 50_000_000)
    assert m.start.device_cycles == 100


def test_a_missing_post_anchor_and_the_unit_checks_name_their_reason():
    cases = [
        (_anchors_of(_sample()), 50_000_000, "no_valid_post_device_execution_anchor", ""),
        ({"samples": []}, 1, "unsupported_device_timestamp_unit", "None"),
        ({"samples": [], "device_timestamp_unit": "ns"}, 1, "unsupported_device_timestamp_unit",
         "'ns'"),
        ({"device_timestamp_unit": "syscnt_cycles", "samples": "x"}, 1,
         "missing_clock_anchor_samples", ""),
        (_anchors_of(raw_device_timestamp_unit="ticks"), 1,
         "unsupported_raw_device_timestamp_unit", "'ticks'"),
    ]
    for anchors, freq, reason, detail in cases:
        with pytest.raises(ca.ClockAnchorsUnusable) as info:
            ca.build_clock_mapping(anchors, freq)
        assert info.value.reason == reason
        assert str(info.value) == f"clock anchors unusable: {reason}" + (
            f" ({detail})" if detail else "")


def test_the_mapping_by_hand():
    """pre: host 1010 at cycle 100; post: host 1001020 at cycle 50100 (50 MHz: 20 ns a
    cycle, 1000000 ns nominal): the correction is +10 ns over the window, so the slope is
    20 + 10/50000 ns per cycle; describe() says all of it."""
    m = ca.build_clock_mapping(_anchors_of(_sample(), GOOD_POST), 50_000_000,
                               host_quantization_ns=7)
    assert m.end_correction_ns == 10.0
    slope = 20 + 10 / 50_000
    for c in (100, 101, 25_100, 50_100, 60_000):
        assert m.to_host_ns(c) == pytest.approx(1_010 + (c - 100) * slope, abs=1e-9)
    arr = m.to_host_ns(np.array([100, 25_100, 50_100], dtype=np.int64))
    assert arr.tolist() == pytest.approx([1_010, 1_010 + 25_000 * slope, 1_001_020], abs=1e-6)
    assert m.uncertainty_ns == 20 + 7
    assert m.outside_window(np.array([99, 100, 50_100, 50_101])).tolist() == [
        True, False, False, True]
    assert m.describe() == {
        "status": "calibrated", "method": "nominal_frequency_offset_interp_v1",
        "uncertainty_ns": 27.0, "frequency_hz": 50_000_000, "end_correction_ns": 10.0,
        "selected_sample_idx": {"pre_host_orchestration": 0, "post_device_execution": 0},
        "anchor_window_host_ns": [1_010.0, 1_001_020.0]}


def test_describe_rounds_the_end_correction_to_a_thousandth_of_a_ns():
    post = _sample(ca.POST_POSITION, 0, 1_001_000, 1_001_041, 50_100)   # mid 1001020.5
    m = ca.build_clock_mapping(_anchors_of(_sample(after=1_021), post), 50_000_000)
    # pre mid 1010.5; 50000 cycles nominal 1e6 ns: 1001020.5 - 1001010.5 = 10 ns
    assert m.end_correction_ns == 10.0
    post = _sample(ca.POST_POSITION, 0, 1_001_000, 1_001_041, 50_100)
    m = ca.build_clock_mapping(_anchors_of(_sample(), post), 48_000_000)
    # 50000 cycles at 48 MHz: 1041666.67 ns; correction 1001020.5 - 1010 - that
    want = 1_001_020.5 - (1_010 + 50_000 * 1e9 / 48_000_000)
    assert m.end_correction_ns == pytest.approx(want, abs=1e-9)
    assert m.describe()["end_correction_ns"] == round(want, 3) != round(want, 4)


def test_wall_anchors_from_a_trace_and_a_log():
    a = wa.wall_anchor_from_other_data(
        {"clock_anchor": {"monotonic_ns": 5, "wall_ns": 1_005, "pid": 42}}, "t.json")
    assert a == wa.WallClockAnchor(5, 1_005, 42, "t.json") and a.wall_minus_mono_ns == 1_000
    b = wa.wall_anchor_from_other_data({"clock_anchor": {"monotonic_ns": 5, "wall_ns": 7,
                                                         "pid": "42"}})
    assert b == wa.WallClockAnchor(5, 7, None, "")
    for bad in (None, [], {"clock_anchor": []}, {"clock_anchor": {"monotonic_ns": 5}},
                {"clock_anchor": {"monotonic_ns": 5, "wall_ns": 7.0}},
                {"clock_anchor": {"monotonic_ns": True, "wall_ns": 7}}):
        assert wa.wall_anchor_from_other_data(bad) is None

    class LogAnchor:
        mono_ns, wall_ns, pid = 10, 30, 9

    c = wa.wall_anchor_from_log(LogAnchor())
    assert c == wa.WallClockAnchor(10, 30, 9, "[CLOCK_ANCHOR]")
    # wall - mono is 1000 on a's host and 20 on c's: c's monotonic times + (20 - 1000)
    # are on a's axis, and the other way round + 980
    assert ca.monotonic_offset_ns(a, c) == 20 - 1_000 and ca.monotonic_offset_ns(c, a) == 980
