"""End to end: every example compiles with the real compiler, runs on the simulated device, and
matches its golden; the run scripts work; the profile has the documented stages."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT as ROOT

from pypto.runtime import RunConfig, run

# Example programs; `run_*.py` and `profile_*.py` are scripts that drive them.
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py")
                  if not p.name.startswith(("run_", "profile_")))
RUN_SCRIPTS = sorted((ROOT / "examples").glob("run_*.py"))


def _load_example(path: Path):
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # inspect (used by @pl.program) finds the source through it
    spec.loader.exec_module(mod)
    from pypto.ir_core.nodes import Program

    programs = [v for v in vars(mod).values() if isinstance(v, Program)]
    if len(programs) != 1 or not callable(getattr(mod, "golden", None)) \
            or not callable(getattr(mod, "tensor_specs", None)):
        pytest.fail(f"{path.name} does not expose one program, golden() and tensor_specs()")
    return programs[0], mod


def _stage_names(profile: dict) -> list[str]:
    out, stack = [], list(profile["stages"])
    while stack:
        s = stack.pop(0)
        out.append(s["name"])
        stack.extend(s["children"])
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_example_matches_golden(path, runtime, tmp_path):
    program, mod = _load_example(path)
    r = run(program, mod.tensor_specs(), mod.golden,
            RunConfig(work_dir=str(tmp_path), compile_profiling=True, enable_chip_swimlane=4,
                      enable_dep_gen=True, runtime=runtime))
    assert r.passed, r.error
    names = _stage_names(r.profile)
    for stage in ("compile", "passes", "codegen", "golden_write", "device_execution"):
        assert stage in names
    top = [s["name"] for s in r.profile["stages"]]
    assert top[-3:] == ["compile", "golden_write", "device_execution"]
    report = tmp_path / "report"
    for f in ("pipeline_profile.txt", "pipeline_profile.json", "trace.json"):
        assert (report / f).is_file()
    doc = json.loads((tmp_path / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    deps = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    assert len(doc["aicore_tasks"]) == len(deps["tasks"]) > 0
    names = json.loads(next((tmp_path / "dfx_outputs").glob("name_map_*.json")).read_text())
    used = {str(max(t["kernel_ids"])) for t in deps["tasks"]}
    assert used <= set(names["callable_id_to_name"])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_in_device_process(path, tmp_path):
    program, mod = _load_example(path)
    r = run(program, mod.tensor_specs(), mod.golden,
            RunConfig(work_dir=str(tmp_path), compile_profiling=True, enable_chip_swimlane=2,
                      device_process=True))
    assert r.passed, r.error
    assert "device_process" in _stage_names(r.profile)


def test_wrong_golden_fails_with_a_readable_error(tmp_path):
    program, mod = _load_example(ROOT / "examples" / "vector_dag.py")

    def off_by_one(t, p):
        mod.golden(t, p)
        first = next(s["name"] for s in mod.tensor_specs() if s["is_output"])
        t[first] += 1

    r = run(program, mod.tensor_specs(), off_by_one, RunConfig(work_dir=str(tmp_path)))
    assert not r.passed
    assert "elements differ beyond rtol" in r.error


@pytest.mark.parametrize("script", RUN_SCRIPTS, ids=lambda p: p.stem)
def test_run_script(script, tmp_path):
    work = tmp_path / "out"
    p = subprocess.run([sys.executable, str(script), str(work)], capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert "PASS" in p.stdout
    assert (work / "report" / "trace.json").is_file()
    assert (work / "dfx_outputs" / "chip_swimlane_records.json").is_file()
    assert str(work / "dfx_outputs") in p.stdout
