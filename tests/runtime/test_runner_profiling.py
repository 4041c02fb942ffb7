"""run() and the compile profiler: own profiler per call, or record into the active one;
failures still produce the profile; kernels kept or removed as configured."""

from __future__ import annotations

import json
import sys

import pytest
from repo_paths import REPO_ROOT as ROOT
from runtime_support import dag_golden, dag_program, dag_specs, failing_program

from pypto.compile_profiling import CompileProfiler, get_active_profiler, refresh_from_environment
from pypto.runtime import RunConfig, run


def _names(stages):
    return [s["name"] for s in stages]


def test_own_profiler_per_call_and_report(tmp_path):
    assert get_active_profiler() is None
    r = run(dag_program(), dag_specs(), dag_golden,
            RunConfig(work_dir=str(tmp_path), compile_profiling=True))
    assert r.passed
    assert _names(r.profile["stages"]) == ["golden_write", "device_execution"]
    assert get_active_profiler() is None, "run() left its profiler active"
    saved = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    assert _names(saved["stages"]) == _names(r.profile["stages"])
    assert "device_execution" in (tmp_path / "report" / "pipeline_profile.txt").read_text()


def test_no_profile_without_profiling(tmp_path):
    r = run(dag_program(), dag_specs(), dag_golden, RunConfig(work_dir=str(tmp_path)))
    assert r.passed and r.profile is None
    assert not (tmp_path / "report").exists()


def test_records_into_an_active_profiler(tmp_path):
    with CompileProfiler() as prof:
        with prof.stage("user_setup"):
            pass
        r = run(dag_program(), dag_specs(), dag_golden, RunConfig(work_dir=str(tmp_path)))
    assert r.passed
    names = _names(prof.to_dict()["stages"])
    assert names == ["user_setup", "golden_write", "device_execution"]
    assert _names(r.profile["stages"]) == names


def test_records_into_the_environment_profiler(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "1")
    prof = refresh_from_environment()
    try:
        r = run(dag_program(), dag_specs(), dag_golden, RunConfig(work_dir=str(tmp_path)))
        assert r.passed
        assert "device_execution" in _names(prof.to_dict()["stages"])
    finally:
        monkeypatch.delenv("PYPTO_COMPILE_PROFILING")
        refresh_from_environment()
    assert get_active_profiler() is None


@pytest.mark.parametrize("device_process", [False, True])
def test_kernel_failure_still_writes_the_profile(tmp_path, device_process):
    r = run(failing_program(), [
        {"name": "a", "shape": (8,), "dtype": "float32", "init_value": 1.0},
        {"name": "f", "shape": (8,), "dtype": "float32", "is_output": True}],
        lambda t, p: None,
        RunConfig(work_dir=str(tmp_path), compile_profiling=True,
                  device_process=device_process, enable_chip_swimlane=1))
    assert not r.passed
    assert "kernel 'kernel_fail' (task t0) raised FloatingPointError" in r.error
    assert "device_execution" in _names(r.profile["stages"])
    assert (tmp_path / "report" / "trace.json").is_file()


def test_save_kernels_keeps_the_compiled_output(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import vector_dag
    finally:
        sys.path.remove(str(ROOT / "examples"))
    kept = tmp_path / "kept"
    r = run(vector_dag.VectorDAG, vector_dag.tensor_specs(), vector_dag.golden,
            RunConfig(work_dir=str(tmp_path / "a"), save_kernels=True,
                      save_kernels_dir=str(kept)))
    assert r.passed and (kept / "kernel_config.json").is_file()
    r = run(vector_dag.VectorDAG, vector_dag.tensor_specs(), vector_dag.golden,
            RunConfig(work_dir=str(tmp_path / "b")))
    assert r.passed
    assert not list((tmp_path / "b").glob("kernels_*")), "temporary kernels left behind"
