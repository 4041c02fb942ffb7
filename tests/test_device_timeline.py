"""Device side of the merged timeline, checked against every real Simpler capture."""

from __future__ import annotations

import collections
import json

import pytest
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling import simpler_readers as sr
from pypto.compile_profiling import simpler_records
from pypto.compile_profiling.device_timeline import (
    Placement,
    add_device_capture,
    add_host_log,
    add_merged_swimlane,
    func_letter_name,
    resolve_func_id,
    task_display,
)
from pypto.compile_profiling.timeline import Timeline
from pypto.errors import TraceInputError

pytestmark = pytest.mark.skipif(not CASES, reason="Simpler fixtures not present")
ORIGIN = 5e11


def _capture(case):
    return sr.load_capture(sr.discover_captures(FIXTURES / case)[0])


def _assert_tracks_nest(tl: Timeline):
    by_track = collections.defaultdict(list)
    for s in tl.slices:
        by_track[s.track.uid].append((s.ts_ns, s.ts_ns + s.dur_ns))
    for spans in by_track.values():
        spans.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for s, e in spans:
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or e <= stack[-1], "slices on one track overlap without nesting"
            stack.append(e)


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_counts_labels_lanes_and_flows(case):
    cap = _capture(case)
    tl = Timeline()
    res = add_device_capture(tl, cap, rank_label="r0", placement=Placement.auto(ORIGIN, "test"))
    rec = cap.records
    by_cat = collections.Counter(s.cat for s in tl.slices)
    assert by_cat["aicore"] == len(rec.aicore) == res.counts["aicore_tasks"]
    assert by_cat["scheduler"] == sum(len(s) for s in rec.scheduler_phases)
    assert by_cat["orchestrator"] == sum(len(s) for s in rec.orchestrator_phases)
    assert by_cat["host_orchestrator"] == sum(len(s) for s in rec.host_orchestrator_phases)
    assert by_cat["host_h2d"] == (len(rec.host_device_uploads) if rec.host_device_uploads else 0)
    assert res.counts["aicpu_joined"] == len(rec.aicpu)
    # Labels and lane names are exactly Simpler's (Worker View of its merged_swimlane.json).
    ev = json.loads((FIXTURES / case / "merged_swimlane.json").read_text())["traceEvents"]
    lane = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in ev
        if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    want = collections.Counter(
        (lane[(4, e["tid"])], e["name"], e["args"]["taskId"])
        for e in ev
        if e.get("ph") == "X" and e["pid"] == 4
    )
    got = collections.Counter(
        (s.track.name, s.name, s.args["task_id"]) for s in tl.slices if s.cat == "aicore"
    )
    assert got == want
    # Dependency flows: one per deps.json edge (all tasks ran here).
    n_edges = len(cap.deps.edges) if cap.deps else 0
    assert len(tl.flows) == res.counts["dependency_flows"] == n_edges
    for f in tl.flows:
        assert f.src.args["task_id"] != f.dst.args["task_id"]
    # Kernel -> first task slice, for codegen -> device flows.
    for name, sl in res.first_task_slice_by_kernel_name.items():
        assert sl.name.startswith(name)
        same = [
            s
            for s in tl.slices
            if s.cat == "aicore" and s.name.split("(")[0].removesuffix("_spmd") == name
        ]
        assert sl.ts_ns == min(s.ts_ns for s in same)
    if cap.name_map and cap.deps:
        assert set(res.first_task_slice_by_kernel_name) <= set(cap.name_map.names.values())
    _assert_tracks_nest(tl)
    names = [p.name for p in res.processes]
    assert names[0].startswith("Device r0 · AICore")
    if rec.level >= 3:
        assert any("AICPU scheduler" in n for n in names)
        assert {t.name for t in tl.tracks if "scheduler" in t.process.name} <= {
            f"Sched_{i}" for i in range(len(rec.scheduler_phases))
        }


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("hbg_")])
def test_calibrated_device_slices_lie_inside_the_runner_run_span(case):
    cap = _capture(case)
    tl = Timeline()
    res = add_device_capture(tl, cap, rank_label="r0", placement=Placement.calibrated())
    hl = add_host_log(tl, cap.host_log)
    assert not res.estimated and res.uncertainty_ns == pytest.approx(
        json.loads((FIXTURES / case / "merged_swimlane.json").read_text())["metadata"][
            "clock_alignment"
        ]["max_uncertainty_ns"]
    )
    assert all(not p.estimated and "estimated" not in p.name for p in res.processes)
    assert res.processes[0].args["alignment"]["method"] == res.alignment_method
    run = next(s for s in tl.slices if s.name == "chip.run.runner_run")
    device = [s for s in tl.slices if s.cat in ("aicore", "scheduler")]
    assert device
    for s in device:
        assert run.ts_ns <= s.ts_ns and s.ts_ns + s.dur_ns <= run.ts_ns + run.dur_ns
    lo, hi = res.device_window_ns
    assert run.ts_ns <= lo < hi <= run.ts_ns + run.dur_ns
    # Host-orchestrator phases are exact host ns: equal to the raw values.
    host = [s for s in tl.slices if s.cat == "host_orchestrator"]
    raw = cap.records.host_orchestrator_phases[0]
    assert sorted(s.ts_ns for s in host) == sorted(raw.starts.tolist())
    assert hl.device_clock_spans_skipped == 1 and hl.spans_added == len(cap.host_log.spans) - 1
    host_proc = hl.processes[0]
    assert host_proc.os_pid == cap.host_log.spans[0].pid
    assert all(t.os_tid == cap.host_log.spans[0].tid for t in tl.tracks if t.process is host_proc)
    _assert_tracks_nest(tl)


def test_device_orchestrated_capture_is_estimated_and_says_so():
    cap = _capture("tmr_bgemm_case0_l4_depgen")
    with pytest.raises(TraceInputError, match="cannot calibrate.*missing_clock_anchors"):
        add_device_capture(Timeline(), cap, rank_label="r0", placement=Placement.calibrated())
    tl = Timeline()
    res = add_device_capture(
        tl, cap, rank_label="r3", placement=Placement.estimated(ORIGIN, "start of device_execution")
    )
    assert res.estimated and res.uncertainty_ns is None
    assert [p.name for p in res.processes] == [
        "Device r3 · AICore (estimated)",
        "Device r3 · AICPU scheduler (estimated)",
        "Device r3 · Orchestrator (estimated)",
    ]
    assert all(p.estimated and p.args["estimated"] for p in res.processes)
    assert any("ESTIMATED" in w for w in tl.warnings)
    assert min(s.ts_ns for s in tl.slices) == pytest.approx(ORIGIN)
    rec = cap.records
    span_ns = (rec.device_cycle_bounds()[1] - rec.device_cycle_bounds()[0]) * 20
    assert max(s.ts_ns + s.dur_ns for s in tl.slices) == pytest.approx(ORIGIN + span_ns)


def test_auto_falls_back_to_estimated_when_anchors_are_bad(tmp_path):
    raw = json.loads(
        (FIXTURES / "hbg_vector_example_l4_depgen" / "chip_swimlane_records.json").read_text()
    )
    for s in raw["metadata"]["clock_anchors"]["samples"]:
        s["error"] = {"code": 1}
    cap = _capture("hbg_vector_example_l4_depgen")
    cap.records = sr.read_swimlane_records("x.json", data=raw)
    tl = Timeline()
    res = add_device_capture(tl, cap, rank_label="r0", placement=Placement.auto(ORIGIN, "why"))
    assert res.estimated and "no_valid_pre_host_orchestration_anchor" in res.alignment["reason"]
    orch = next(p for p in res.processes if "Orchestrator" in p.name)
    assert not orch.estimated and "estimated" not in orch.name  # host streams stay exact


def test_overlapping_device_tasks_move_to_a_sub_lane_with_a_warning():
    raw = json.loads(
        (FIXTURES / "tmr_vector_example_l1" / "chip_swimlane_records.json").read_text()
    )
    first = raw["aicore_tasks"][0]
    dup = list(first)
    dup[2] += 100  # another dispatch on the same core
    dup[3] = first[3] + (first[4] - first[3]) // 2  # starts mid-way through the first
    dup[4] = first[4] + 1000
    raw["aicore_tasks"].append(dup)
    cap = _capture("tmr_vector_example_l1")
    cap.records = sr.read_swimlane_records("x.json", data=raw)
    tl = Timeline()
    res = add_device_capture(tl, cap, rank_label="r0", placement=Placement.estimated(0, "t"))
    assert res.counts["overlaps_moved"] == 1
    lanes = {s.track.name for s in tl.slices}
    core_lane = f"{raw['metadata']['core_types'][first[0]].upper()}_{first[0]}"
    assert f"{core_lane} (overlap 1)" in lanes
    assert any("overlapping" in w for w in tl.warnings)
    _assert_tracks_nest(tl)


def test_two_ranks_and_merged_swimlanes_never_collide():
    tl = Timeline()
    for rank in ("r0", "r1"):
        cap = _capture("tmr_mixed_example_case1_l4_depgen")
        add_device_capture(tl, cap, rank_label=rank, placement=Placement.estimated(ORIGIN, "t"))
        m = add_merged_swimlane(
            tl,
            sr.read_merged_swimlane(
                FIXTURES / "tmr_mixed_example_case1_l4_depgen" / "merged_swimlane.json"
            ),
            rank_label=rank,
            origin_host_ns=ORIGIN,
            reason="Simpler's converted trace",
        )
        assert m.counters_skipped == 27 and m.flows_unbound == 0
        assert all(p.estimated and p.name.endswith("(estimated)") for p in m.processes)
        assert {p.args["simpler_pid"] for p in m.processes} == {1, 2, 3, 4}
    uids = [p.uid for p in tl.processes] + [t.uid for t in tl.tracks]
    assert len(uids) == len(set(uids))
    assert len({f.id for f in tl.flows}) == len(tl.flows)
    names = [p.name for p in tl.processes]
    assert len(names) == len(set(names))
    assert "Device r1 · Simpler Worker View (estimated)" in names
    _assert_tracks_nest(tl)


def test_merged_swimlane_keeps_slices_flows_and_lanes():
    path = FIXTURES / "hbg_vector_example_l4_depgen" / "merged_swimlane.json"
    doc = json.loads(path.read_text())
    tl = Timeline()
    m = add_merged_swimlane(
        tl, sr.read_merged_swimlane(path), rank_label="r0", origin_host_ns=ORIGIN, reason="t"
    )
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert m.slices == len(tl.slices) == len(xs)
    assert m.flows == len(tl.flows) == sum(e["ph"] == "s" for e in doc["traceEvents"])
    ts = sorted(s.ts_ns for s in tl.slices)
    assert ts[0] == pytest.approx(ORIGIN + min(e["ts"] for e in xs) * 1000)
    assert {"AIV_10", "Sched_1", "H2D", "Host_0"} <= {t.name for t in tl.tracks}


def test_host_log_reuses_a_process_with_the_same_os_pid():
    cap = _capture("tmr_vector_example_l4_depgen")
    tl = Timeline()
    pid = cap.host_log.spans[0].pid
    ours = tl.add_process("python (compile)", os_pid=pid)
    res = add_host_log(tl, cap.host_log)
    assert res.processes == [ours]
    assert res.spans_added == sum(not s.device_clock for s in cap.host_log.spans)
    assert tl.metadata["simpler_clock_anchors"][0]["pid"] == pid
    _assert_tracks_nest(tl)


def test_label_helpers_follow_simpler():
    assert task_display(3) == "t3" and task_display((1 << 32) | 7) == "r1t7"
    assert func_letter_name(0) == "func_0_a" and func_letter_name(26) == "func_26_aa"


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_slice_args_carry_exactly_the_capture_values(case, compact, monkeypatch):
    """AICore args (dicts, or read lazily from the arrays for big captures) and phase args
    (the records themselves, or compact PhaseRecords)."""
    monkeypatch.setattr(simpler_records, "_COMPACT_FILE_BYTES", 0 if compact else 1 << 40)
    cap = _capture(case)
    assert cap.records.compact == compact
    raw = json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())
    tl = Timeline()
    add_device_capture(tl, cap, rank_label="r0", placement=Placement.estimated(ORIGIN, "t"))
    cpu = {(r[0], r[1]): r for r in raw.get("aicpu_tasks", [])}
    core_types = raw["metadata"]["core_types"]
    rows = {(r[0], r[2]): r for r in raw["aicore_tasks"]}
    kmap = cap.deps.kernel_ids if cap.deps else {}
    aic = [s for s in tl.slices if s.cat == "aicore"]
    assert len(aic) == len(rows)
    for s in aic:
        d = dict(s.args.items())
        assert list(d) == list(s.args) and len(s.args) == len(d) and bool(s.args)
        row = rows[(d["core_id"], d["reg_task_id"])]
        r2s = row[5] if len(row) > 5 else 0
        want = {"task_id": row[1], "task": task_display(row[1]), "core_id": row[0],
                "core_type": core_types[row[0]],
                "kernel_id": resolve_func_id(kmap.get(row[1]), core_types[row[0]]),
                "reg_task_id": row[2], "start_cycles": row[3], "end_cycles": row[4],
                "receive_to_start_cycles": r2s}
        c = cpu.get((row[0], row[2]))
        if c is not None:
            want.update(dispatch_cycles=c[2], finish_cycles=c[3],
                        dispatch_ts_ns=d["dispatch_ts_ns"], finish_ts_ns=d["finish_ts_ns"])
            assert type(d["dispatch_ts_ns"]) is float and d["dispatch_ts_ns"] <= d["finish_ts_ns"]
        assert list(d.items()) == list(want.items())
        assert (type(s.args) is dict) != compact
        assert all(type(v) in (int, str, float) for v in d.values())
        assert s.args["task_id"] == row[1] and "task" in s.args and "nope" not in s.args
        assert s.name.endswith(f"({d['task']})")
    phases = [dict(s.args.items()) for s in tl.slices if s.cat == "scheduler"]
    want = [r for t in raw.get("aicpu_scheduler_phases", []) for r in t]
    key = lambda r: (r["start_cycles"], r["end_cycles"], r["kind"])
    assert sorted(phases, key=key) == sorted(want, key=key)
