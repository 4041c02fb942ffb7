"""End to end in the offline Perfetto UI: merged files (JSON and protobuf) load without import
errors and show the processes, lanes, slices and flows the merge made; calibrated device
slices lie inside `device_execution`."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from merge_inputs import CASES, ESTIMATED, FIXTURES, compile_trace_around
from timeline_checks import check_matches_timeline, lane_of

from pypto.compile_profiling.profile_timeline import write_profile_perfetto
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.place.plan import fmt_interval

pytestmark = [pytest.mark.perfetto_ui,
              pytest.mark.skipif(not CASES, reason="no Simpler fixtures on this machine")]
FORMATS = [".json", ".pftrace"]


@pytest.mark.parametrize("suffix", FORMATS)
def test_calibrated_merge_device_slices_inside_device_execution(perfetto_ui, tmp_path, suffix):
    case = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"
    info = compile_trace_around(case, tmp_path / "trace.json")
    tl = merge_traces([tmp_path / "trace.json", case]).timeline
    out = tmp_path / f"merged{suffix}"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    rows = check_matches_timeline(t, tl)
    (ex,) = [r for r in rows if r["name"] == "device_execution"]
    assert ex["ts"] == info["exec_start"] and ex["dur"] == info["exec_end"] - info["exec_start"]
    device = [r for r in rows if r["process_name"].startswith("Device")]
    assert len(device) == sum(1 for s in tl.slices() if s.process.name.startswith("Device"))
    for r in device:
        assert ex["ts"] <= r["ts"] and r["ts"] + r["dur"] <= ex["ts"] + ex["dur"], r
    lanes = {lane_of(r) for r in device}
    assert any(n.startswith("AIC_") for n in lanes) and any(n.startswith("AIV_") for n in lanes)
    assert any(n.startswith("Sched_") for n in lanes)
    assert all("calibrated ±" in p for p in t.process_names() if "AICore" in p)
    # kernel_codegen -> every task of that kernel (one arrow a task), as Perfetto links them
    by_id = {r["id"]: r for r in rows}
    aicore = {r["id"]: r for r in device if r["category"] == "aicore"}
    kflows = [(by_id[f["slice_out"]]["name"], f["slice_in"]) for f in t.flows()
              if by_id[f["slice_out"]]["name"].startswith("kernel_codegen:")]
    assert sorted({k for k, _ in kflows}) == [f"kernel_codegen:{k}" for k in info["kernels"]]
    assert all(aicore[i]["name"].startswith(k.split(":")[1] + "(") for k, i in kflows)
    tasks = {r["name"] for r in aicore.values()}
    assert len({aicore[i]["name"] for _, i in kflows}) == len(kflows) == len(tasks)
    # task labels as Simpler names them, with their args
    assert any(r["name"].startswith("GEMM(") for r in device)


@pytest.mark.parametrize("suffix", FORMATS)
def test_contained_merge_is_labelled_and_bounded_by_its_run(perfetto_ui, tmp_path, suffix):
    """A capture placed by span containment, in both formats: zero import errors, its
    processes named with the offset interval, every device slice inside its run's
    runner_run."""
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    info = compile_trace_around(case, tmp_path / "trace.json")
    tl = merge_traces([tmp_path / "trace.json", case]).timeline
    out = tmp_path / f"merged{suffix}"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    rows = check_matches_timeline(t, tl)
    device = [r for r in rows if r["process_name"].startswith("Device")]
    how = next(p for p in tl.processes if p.name.startswith("Device")).args["alignment"]
    label = fmt_interval(how["offset_lo_ns"] - how["offset_ns"],
                         how["offset_hi_ns"] - how["offset_ns"])
    assert label.startswith("-") and label.endswith(" ms")
    assert all(f"(contained {label})" in r["process_name"] for r in device)
    (runner,) = [r for r in rows if r["name"] == "chip.run.runner_run"]
    assert runner["ts"] <= min(r["ts"] for r in device)
    assert max(r["ts"] + r["dur"] for r in device) <= runner["ts"] + runner["dur"]
    assert info["exec_start"] <= runner["ts"] and runner["ts"] + runner["dur"] <= info["exec_end"]
    # the run log's clk=dev spans, on the run's device-clock lane
    assert any(lane_of(r).startswith("device clock") and r["name"].endswith("device_wall.orch")
               for r in rows)
    if suffix == ".json":
        other = json.loads(out.read_text())["otherData"]
        assert other["estimated"] is True
    else:
        assert t.metadata().get("cr-estimated") in (1, True, "1", "true")


@pytest.mark.parametrize("suffix", FORMATS)
def test_two_ranks_and_every_fixture_in_one_file(perfetto_ui, tmp_path, suffix):
    """Every real capture with every device view in one file (two of them as the ranks of a
    distributed run): nothing lost, zero import errors (Simpler's own Scheduler View gives 8
    on the SPMD capture)."""
    dfx = tmp_path / "work" / "dfx_outputs"
    for r, case in enumerate(("tmr_vector_example_l4_depgen", "tmr_mixed_example_case1_l4_depgen")):
        shutil.copytree(FIXTURES / case, dfx / f"rank{r}" / "d0")
    others = [c for c in CASES if c not in ("tmr_vector_example_l4_depgen",
                                            "tmr_mixed_example_case1_l4_depgen")]
    tl = merge_traces([tmp_path / "work", *(FIXTURES / c for c in others)]).timeline
    out = tmp_path / f"all{suffix}"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    check_matches_timeline(t, tl)
    names = t.process_names()
    assert any("r0d0" in n for n in names) and any("r1d0" in n for n in names)


@pytest.mark.parametrize("suffix", FORMATS)
def test_simpler_converted_trace_merges_and_loads(perfetto_ui, tmp_path, suffix):
    case = FIXTURES / ESTIMATED[0]
    compile_trace_around(case, tmp_path / "trace.json")
    tl = merge_traces([tmp_path / "trace.json", case / "merged_swimlane.json"]).timeline
    out = tmp_path / f"m{suffix}"
    write_timeline(tl, out)
    check_matches_timeline(perfetto_ui.load(out), tl)


def test_compile_profile_alone_as_pftrace(perfetto_ui, tmp_path):
    from pypto.compile_profiling import CompileProfiler

    with CompileProfiler() as prof, prof.stage("compile"):
        with prof.stage("passes"), prof.stage("ConvertToSSA"):
            pass
        with prof.stage("codegen"), prof.stage("kernel_codegen:QK"):
            pass
    out = tmp_path / "profile.pftrace"
    write_profile_perfetto(prof, out)
    t = perfetto_ui.load(out)
    assert t.import_errors() == []
    rows = t.slices()
    assert {r["name"]: r["depth"] for r in rows} == {
        "compile": 0, "passes": 1, "ConvertToSSA": 2, "codegen": 1, "kernel_codegen:QK": 2}
    assert all(r["tid"] is not None for r in rows)  # real host threads


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_real_run_on_the_simulator_merges_and_loads(perfetto_ui, tmp_path, runtime):
    """Nothing crafted: compile + run the vector DAG with profiling, level 4 and dep_gen."""
    from pypto.runtime import RunConfig, run

    examples = str(Path(__file__).resolve().parents[1] / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import vector_dag

    work = tmp_path / "work"
    result = run(vector_dag.VectorDAG, vector_dag.tensor_specs(), vector_dag.golden,
                 RunConfig(work_dir=str(work), compile_profiling=True, enable_chip_swimlane=4,
                           enable_dep_gen=True, runtime=runtime, case_name="vector_dag"))
    assert result.passed
    r = merge_traces([work])
    tl = r.timeline
    calibrated = runtime == "host_build_graph"
    for suffix in FORMATS:
        out = tmp_path / f"merged{suffix}"
        write_timeline(tl, out)
        with perfetto_ui.load(out) as t:  # closed before the next load: one page serves both
            rows = check_matches_timeline(t, tl)
        (ex,) = [x for x in rows if x["name"] == "device_execution"]
        device = [x for x in rows if x["process_name"].startswith("Device r0")]
        kernels = [x for x in device if "AICore" in x["process_name"] and x["category"] == "aicore"]
        assert len(kernels) == 5
        kflows = sum(len(f) for f in tl.flows if f.cat == "kernel_codegen")
        assert kflows == 5  # add, add_scalar, mul: an arrow to each of their 5 tasks
        for x in device:       # calibrated or contained: inside its run's device_execution
            assert ex["ts"] <= x["ts"] and x["ts"] + x["dur"] <= ex["ts"] + ex["dur"], x
        if calibrated:
            assert not r.timeline.metadata["estimated"]
        else:
            # device_wall's cycles join the run; its host span bounds where
            assert all("(joined by device_wall cycles " in x["process_name"] for x in device
                       if "Orchestrator" not in x["process_name"])
