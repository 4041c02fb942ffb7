"""Our DFX files have the shape of today's Simpler writer (the real captures of
shared/fixtures/simpler rewritten into today's layout by tests/support/simpler_today.py), are read by
the same reader code, and their device times land inside the host `device_execution` stage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from runtime_support import (
    dag_golden,
    dag_program,
    dag_specs,
    host_ns_mapper,
    mixed_golden,
    mixed_program,
)
from simpler_fixtures import FIXTURES
from simpler_today import to_today

from pypto.compile_profiling.trace_merge.place import clock_alignment as align
from pypto.compile_profiling.trace_merge.read import read_simpler as readers
from pypto.runtime import RunConfig, run

HBG = FIXTURES / "hbg_vector_example_l4_depgen"
TMR4 = FIXTURES / "tmr_vector_example_l4_depgen"
TMR1 = FIXTURES / "tmr_vector_example_l1"

def _load(p: Path) -> dict:
    return json.loads(p.read_text())


def _today(p: Path) -> dict:
    """A real capture's records file as today's writer lays it out."""
    return to_today(_load(p))


def _meta_keys(meta: dict) -> list[str]:
    """Simpler's keys in order; ours (the boot id, how the durations were made) left out."""
    assert list(meta)[-1] == "device_timing"
    return [k for k in meta if k not in ("host_clock_domain_id", "device_timing")]


def _run(tmp_path, name="w", **kw) -> tuple[Path, object]:
    work = tmp_path / name
    r = run(dag_program(), dag_specs(), dag_golden, RunConfig(work_dir=str(work), **kw))
    assert r.passed, r.error
    return work / "dfx_outputs", r


@pytest.fixture(scope="module")
def hbg4(tmp_path_factory):
    d, r = _run(tmp_path_factory.mktemp("hbg"), enable_chip_swimlane=4, enable_dep_gen=True,
                compile_profiling=True)
    return d, r


@pytest.fixture(scope="module")
def tmr4(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("tmr"), enable_chip_swimlane=4, enable_dep_gen=True,
                runtime="tensormap_and_ringbuffer")[0]


def test_host_build_graph_file_has_the_capture_keys_in_order(hbg4):
    ours = _load(hbg4[0] / "chip_swimlane_records.json")
    ref = _today(HBG / "chip_swimlane_records.json")
    assert list(ours) == list(ref)
    assert _meta_keys(ours["metadata"]) == list(ref["metadata"])
    assert ours["metadata"]["runtime"] == "host_build_graph"
    domain = ours["metadata"].get("host_clock_domain_id")
    if Path("/proc/sys/kernel/random/boot_id").exists():
        assert domain.startswith("linux-boot-id:")
        assert list(ours["metadata"]).index("host_clock_domain_id") == \
            list(ours["metadata"]).index("host_capture") + 1
    assert list(ours["metadata"]["host_capture"]) == list(ref["metadata"]["host_capture"])
    ca, rca = ours["metadata"]["clock_anchors"], ref["metadata"]["clock_anchors"]
    assert {k: v for k, v in ca.items() if k != "samples"} == \
        {k: v for k, v in rca.items() if k != "samples"}
    assert [(s["position"], s["sample_idx"]) for s in ca["samples"]] == \
        [(s["position"], s["sample_idx"]) for s in rca["samples"]]
    assert all(list(s) == list(rca["samples"][0]) for s in ca["samples"])
    for s in ca["samples"]:
        assert s["host_before_ns"] <= s["host_after_ns"]
        assert s["rtt_ns"] == s["host_after_ns"] - s["host_before_ns"]
        assert s["device_cycles"] == s["raw_device_timestamp"]
    for k in ("orchestrator_source", "orchestrator_clock_domain", "device_clock_domain",
              "timeline_relation"):
        assert ours["metadata"][k] == ref["metadata"][k]


def test_rows_and_phases_have_the_capture_shapes(hbg4, tmr4):
    epochs = set()
    for ours_dir, ref_dir in ((hbg4[0], HBG), (tmr4, TMR4)):
        ours = _load(ours_dir / "chip_swimlane_records.json")
        ref = _today(ref_dir / "chip_swimlane_records.json")
        assert list(ours) == list(ref), ref_dir.name
        assert _meta_keys(ours["metadata"]) == list(ref["metadata"])
        assert {len(r) for r in ours["aicore_tasks"]} == {7}
        rows = ours["scheduler_tasks"]["records"]
        assert list(ours["scheduler_tasks"]) == list(ref["scheduler_tasks"]) == \
            ["producer", "records"]
        assert ours["scheduler_tasks"]["producer"] == "aicpu"
        assert {len(r) for r in rows} == {5}
        assert all(type(v) is int for r in ours["aicore_tasks"] + rows for v in r)
        (epoch,) = {r[6] for r in ours["aicore_tasks"]} | {r[4] for r in rows}
        epochs.add(epoch)
        streams, ref_streams = ours["scheduler_records"]["streams"], \
            ref["scheduler_records"]["streams"]
        assert list(ours["scheduler_records"]) == ["streams"]
        assert all(list(st) == list(ref_streams[0]) for st in streams)
        assert all(st["records"] for st in streams)          # idle schedulers are left out
        ids = [st["scheduler_id"] for st in streams]
        assert ids == sorted(set(ids)) and set(ids) <= set(ours["metadata"]["core_to_thread"])
        ref_rec = list(ref_streams[0]["records"][0])
        ref_metric = {st["records"][m["record_index"]]["kind"]: list(m)
                      for st in ref_streams for m in st["metrics"]}
        for st in streams:
            assert st["capture"] == {"committed": len(st["records"]), "dropped": 0,
                                     "truncated": False}
            assert all(list(r) == ref_rec and r["run_epoch"] == epoch and r["task_id"] is None
                       for r in st["records"])
            assert [m["record_index"] for m in st["metrics"]] == list(range(len(st["records"])))
            for m in st["metrics"]:
                assert list(m) == ref_metric[st["records"][m["record_index"]]["kind"]]
        orch = "host_orchestrator_phases" if ref_dir is HBG else "aicpu_orchestrator_phases"
        assert len(ours[orch]) == 1
        assert [list(p) for p in ours[orch][0]] == [list(ref[orch][0][0])] * len(ours[orch][0])
        # ring 0, local id = submission index; the AICore token is the task id
        assert [(p["submit_idx"], p["task_id"]) for p in ours[orch][0]] == \
            [(i, i) for i in range(5)]
        assert sorted(r[1] for r in ours["aicore_tasks"]) == list(range(5))
        assert ours["aicore_tasks"] == sorted(ours["aicore_tasks"], key=lambda r: (r[0], r[2]))
    assert len(epochs) == 2                      # each run its own run_epoch
    hbg = _load(hbg4[0] / "chip_swimlane_records.json")
    ref = _load(HBG / "chip_swimlane_records.json")
    assert [list(u) for u in hbg["host_device_uploads"]] == \
        [list(u) for u in ref["host_device_uploads"]]
    assert [u["phase"] for u in hbg["host_device_uploads"]] == ["graph_upload", "arena_h2d"]


def test_device_orchestrated_file_has_no_anchors(tmr4):
    meta = _load(tmr4 / "chip_swimlane_records.json")["metadata"]
    assert "clock_anchors" not in meta and "orchestrator_source" not in meta
    assert meta["clock_freq_hz"] == 50_000_000 and meta["num_cores"] == len(meta["core_types"])


def test_scheduler_rows_join_aicore_rows_on_run_core_and_reg(hbg4):
    doc = _load(hbg4[0] / "chip_swimlane_records.json")
    cpu = {(r[4], r[0], r[1]): r for r in doc["scheduler_tasks"]["records"]}
    assert len(cpu) == len(doc["aicore_tasks"])
    for core, tok, reg, start, end, r2s, epoch in doc["aicore_tasks"]:
        _, _, dispatch, finish, _ = cpu[(epoch, core, reg)]
        assert dispatch <= start <= end <= finish
        assert r2s >= 0
        assert doc["metadata"]["core_types"][core] == "aiv"


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_level_gating(tmp_path, level, runtime):
    d, _ = _run(tmp_path, enable_chip_swimlane=level, runtime=runtime)
    f = d / "chip_swimlane_records.json"
    if level == 0:
        assert not d.exists() or not any(d.iterdir())
        return
    doc = _load(f)
    assert doc["chip_swimlane_level"] == level
    assert len(doc["aicore_tasks"]) == 5
    assert ("scheduler_tasks" in doc) == (level >= 2)
    assert level < 2 or len(doc["scheduler_tasks"]["records"]) == 5
    assert ("scheduler_records" in doc) == (level >= 3)
    orch = {"host_orchestrator_phases", "aicpu_orchestrator_phases"} & set(doc)
    assert bool(orch) == (level >= 4)
    assert ("core_to_thread" in doc["metadata"]) == (level >= 2)
    assert ("clock_anchors" in doc["metadata"]) == (runtime == "host_build_graph")
    if level == 1 and runtime == "tensormap_and_ringbuffer":
        ref = _today(TMR1 / "chip_swimlane_records.json")
        assert list(doc) == list(ref) and _meta_keys(doc["metadata"]) == list(ref["metadata"])
    assert (d / "name_map_VectorDAG.json").exists()
    assert not (d / "deps.json").exists()


def test_deps_json_matches_the_capture_schema(hbg4, tmr4):
    ref = _load(HBG / "deps.json")
    for d in (hbg4[0], tmr4):
        deps = _load(d / "deps.json")
        assert list(deps) == list(ref)
        assert [t["task_id"] for t in deps["tasks"]] == [str(i) for i in range(5)]
        for t in deps["tasks"]:
            assert list(t) == list(ref["tasks"][0])
            assert len(t["kernel_ids"]) == 3 and t["kernel_ids"][0] == -1
            assert t["kernel_ids"][2] == -1 and t["kernel_ids"][1] >= 0
            for a in t["args"]:
                ref_arg = next(x for x in ref["tasks"][0]["args"] if x["type"] == a["type"]) \
                    if a["type"] in ("INPUT", "OUTPUT") else None
                if ref_arg is not None:
                    assert list(a) == list(ref_arg)
        assert all(list(x) == list(ref["tensors"][0]) for x in deps["tensors"])
        assert {(e["pred"], e["succ"]) for e in deps["edges"]} == \
            {("0", "1"), ("0", "2"), ("1", "3"), ("2", "3"), ("3", "4"), ("0", "4")}
        assert all(list(e) == list(ref["edges"][0]) for e in deps["edges"])
        ids = {x["tensor_id"] for x in deps["tensors"]}
        assert all(e["tensor_id"] in ids for e in deps["edges"])


def test_name_map_matches_the_capture_schema(hbg4):
    ours = _load(hbg4[0] / "name_map_VectorDAG.json")
    ref = _load(FIXTURES / "tmr_mixed_example_case1_l4_depgen" / "name_map_TestMixedExample_case1.json")
    assert list(ours) == list(ref) and ours["level"] == ref["level"]
    assert ours["callable_id_to_name"]["0"] == "kernel_add"
    assert ours["orchestrator_name"] == "main"


def test_the_same_reader_reads_ours_and_the_captures(hbg4, tmr4):
    for d in (HBG, TMR4, TMR1, hbg4[0], tmr4):
        rec = readers.read_records(d / "chip_swimlane_records.json")
        assert (rec.aicore_columns, rec.layout) == \
            ((6, "august") if d in (HBG, TMR4, TMR1) else (7, "today"))
        assert not rec.warnings and not rec.set_aside
        assert rec.freq_hz == 50_000_000
        assert (rec.clock_anchors is not None) == (d in (HBG, hbg4[0]))
        if (d / "deps.json").exists():
            g = readers.read_deps(d / "deps.json")
            assert len(g.task_id) == len(rec.aicore["task_id"])
    nm = readers.read_name_map(hbg4[0] / "name_map_VectorDAG.json")
    assert nm.names[2] == "kernel_mul"


def _stage(profile: dict, name: str) -> dict:
    stack = list(profile["stages"])
    while stack:
        s = stack.pop()
        if s["name"] == name:
            return s
        stack.extend(s["children"])
    raise AssertionError(f"no stage {name}")


def _assert_device_times_inside_stage(dfx: Path, profile: dict) -> None:
    doc = _load(dfx / "chip_swimlane_records.json")
    to_host, _ = host_ns_mapper(doc["metadata"])
    st = _stage(profile, "device_execution")
    lo, hi = st["start_ns"], st["end_ns"]
    times = [c for r in doc["aicore_tasks"] for c in (r[3], r[4])]
    times += [c for r in doc["scheduler_tasks"]["records"] for c in (r[2], r[3])]
    assert times
    for c in times:
        h = to_host(c)
        assert lo <= h <= hi, f"device time {c} -> host {h} outside device_execution [{lo}, {hi}]"
    # and the host orchestrator phases (host ns) too
    for p in doc["host_orchestrator_phases"][0]:
        assert lo <= p["start_host_ns"] <= p["end_host_ns"] <= hi


def test_device_times_map_inside_device_execution(hbg4):
    _assert_device_times_inside_stage(hbg4[0], hbg4[1].profile)


def test_the_merge_tools_clock_mapping_calibrates_our_anchors(hbg4):
    """The project's own alignment code (used by the trace merger) accepts our anchors and puts
    every AICore task inside device_execution, within the calibrated window."""
    rec = readers.read_records(hbg4[0] / "chip_swimlane_records.json")
    mapping = align.build_clock_mapping(rec.clock_anchors, rec.freq_hz)
    cycles = np.concatenate([rec.aicore["start_cycles"], rec.aicore["end_cycles"]])
    assert not mapping.outside_window(cycles).any()
    st = _stage(hbg4[1].profile, "device_execution")
    host = mapping.to_host_ns(cycles)
    assert (host >= st["start_ns"]).all() and (host <= st["end_ns"]).all()
    assert mapping.uncertainty_ns < 1e6


def test_device_process_shows_a_second_pid_and_maps_inside(tmp_path):
    import os

    work = tmp_path / "dp"
    r = run(mixed_program(4, (16, 16)), [
        {"name": "a", "shape": (16, 16), "dtype": "float32", "init_value": 0.5},
        {"name": "b", "shape": (16, 16), "dtype": "float32", "init_value": 0.25},
        {"name": "out", "shape": (16, 16), "dtype": "float32", "is_output": True}],
        lambda t, p: mixed_golden(4, t, p),
        RunConfig(work_dir=str(work), enable_chip_swimlane=4, device_process=True,
                  compile_profiling=True))
    assert r.passed, r.error
    dev = _stage(r.profile, "device_execution")
    child = _stage(r.profile, "device_process")
    assert dev["pid"] == os.getpid() and child["pid"] != os.getpid()
    assert dev["start_ns"] <= child["start_ns"] <= child["end_ns"] <= dev["end_ns"]
    trace = _load(work / "report" / "trace.json")
    pids = {e["pid"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert pids == {os.getpid(), child["pid"]}
    _assert_device_times_inside_stage(work / "dfx_outputs", r.profile)
    doc = _load(work / "dfx_outputs" / "chip_swimlane_records.json")
    types = doc["metadata"]["core_types"]
    assert {types[row[0]] for row in doc["aicore_tasks"]} == {"aic", "aiv"}


def test_counter_drift_is_corrected_by_the_two_anchors(tmp_path):
    """With a 200 ppm rate error, mapping through both anchors still lands inside the run."""
    import numpy as np

    from pypto.runtime.device_process import DeviceSettings, run_device

    t = {"a": np.full((64, 64), 2, np.float32), "b": np.full((64, 64), 3, np.float32),
         "f": np.zeros((64, 64), np.float32)}
    s = DeviceSettings(2, 4, 3, 50_000_000, 4, "host_build_graph", False,
                       str(tmp_path / "dfx"), "drift", drift_ppm=200.0)
    out = run_device(dag_program(), t, s)
    assert out.error is None and (t["f"] == 47).all()
    doc = _load(tmp_path / "dfx" / "chip_swimlane_records.json")
    to_host, (c0, c1) = host_ns_mapper(doc["metadata"])
    for r in doc["aicore_tasks"]:
        assert c0 <= r[3] <= r[4] <= c1
        assert out.start_ns <= to_host(r[3]) <= to_host(r[4]) <= out.end_ns
