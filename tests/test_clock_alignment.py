"""Clock anchors -> device-cycle to host-ns mapping; host <-> host monotonic offsets."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from simpler_fixtures import FIXTURES

from pypto.compile_profiling.trace_merge import clock_alignment as ca
from pypto.compile_profiling.trace_merge.read_run_log import read_run_log
from pypto.compile_profiling.trace_merge.read_simpler import read_records

HBG = ["hbg_vector_example_l4_depgen", "hbg_bgemm_l4_depgen", "hbg_benchmark_bgemm_case0_l4_depgen"]
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="Simpler fixtures not present")


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
    with pytest.raises(ca.ClockAnchorsUnusable, match="missing_clock_anchors"):
        ca.build_clock_mapping(None, 50_000_000)


def test_device_uptime_us_raw_unit_adds_a_microsecond_of_uncertainty():
    anchors = copy.deepcopy(_anchors("hbg_vector_example_l4_depgen")["clock_anchors"])
    base = ca.build_clock_mapping(anchors, 50_000_000).uncertainty_ns
    anchors["raw_device_timestamp_unit"] = "device_uptime_us"
    assert ca.build_clock_mapping(anchors, 50_000_000).uncertainty_ns == base + 1_000


def test_wall_clock_offsets_between_hosts():
    hl = read_run_log(FIXTURES / "hbg_vector_example_l4_depgen" / "host_log.txt")
    simpler = ca.wall_anchor_from_log(hl.clock_anchors[0])
    # Our trace on another host whose monotonic clock is 5 s behind for the same wall time.
    ours = ca.wall_anchor_from_other_data(
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
    assert ca.wall_anchor_from_other_data({"clock_anchor": {"monotonic_ns": "1"}}) is None
    assert ca.wall_anchor_from_other_data({}) is None
