"""`run(program, *tensors, config=None)`, upstream's form today: compile, run when tensors are
given, return the compiled program, callable again; the golden-checking form keeps working."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import examples.tiled_softmax as softmax
import examples.vector_dag as vdag
from pypto import ir
from pypto.errors import ExecutionError, RuntimeConfigError
from pypto.runtime import RunConfig, run

SHAPE = (vdag.ROWS, vdag.COLS)


def tensors(a=2.0, b=3.0):
    return (np.full(SHAPE, a, np.float32), np.full(SHAPE, b, np.float32),
            np.zeros(SHAPE, np.float32))


def expected(a, b):
    return (a + b + 1) * (a + b + 2) + (a + b)


def test_run_writes_the_outputs_in_place_and_returns_a_callable_compiled_program(tmp_path):
    a, b, f = tensors()
    compiled = run(vdag.VectorDAG, a, b, f, config=RunConfig(work_dir=str(tmp_path)))
    assert np.all(f == expected(2, 3)) and np.all(a == 2)
    assert isinstance(compiled, ir.CompiledProgram) and callable(compiled)
    assert str(compiled) == str(tmp_path / "kernels") == os.fspath(compiled)
    assert os.path.isfile(os.path.join(compiled, "kernel_config.json"))
    a2, b2, f2 = tensors(1.0, 4.0)
    assert compiled(a2, b2, f2) is None                   # in place: nothing returned
    assert np.all(f2 == expected(1, 4))


def test_return_style_allocates_the_outputs_and_hands_them_back(tmp_path):
    compiled = run(vdag.VectorDAG, config=RunConfig(work_dir=str(tmp_path)))  # compile only
    a, b, _ = tensors(0.5, 0.25)
    f = compiled(a, b)
    assert isinstance(f, np.ndarray) and f.shape == SHAPE and f.dtype == np.float32
    assert np.allclose(f, expected(0.5, 0.25))


def test_without_tensors_or_with_codegen_only_nothing_is_executed(tmp_path):
    a, b, f = tensors()
    run(vdag.VectorDAG, a, b, f, config=RunConfig(work_dir=str(tmp_path), codegen_only=True,
                                                   enable_chip_swimlane=1))
    assert not f.any() and not (tmp_path / "dfx_outputs").exists()


def test_ir_compile_returns_the_same_callable_directory(tmp_path):
    compiled = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path / "out"))
    assert compiled == str(tmp_path / "out")              # still the directory, as a str
    a, b, f = tensors(1.0, 1.0)
    compiled(a, b, f, config=RunConfig(enable_chip_swimlane=2))
    assert np.all(f == expected(1, 1))
    assert (tmp_path / "out" / "dfx_outputs" / "chip_swimlane_records.json").is_file()


@pytest.mark.parametrize("args, error, match", [
    (lambda a, b, f: (a, b, f, f), TypeError,
     r"expects 3 \(in place\) or 2 \(outputs returned\) arguments, got 4"),
    (lambda a, b, f: (a[:64], b, f), RuntimeConfigError,
     r"parameter 'a' must be a float32 array of shape \(128, 128\), got float32 \(64, 128\)"),
    (lambda a, b, f: (a.astype(np.float64), b, f), RuntimeConfigError,
     r"parameter 'a' must be a float32 array.*got float64"),
    (lambda a, b, f: (a.tolist(), b, f), TypeError, r"parameter 'a' is a tensor; got list"),
])
def test_bad_arguments_are_one_line_naming_the_parameter(tmp_path, args, error, match):
    compiled = run(vdag.VectorDAG, config=RunConfig(work_dir=str(tmp_path)))
    with pytest.raises(error, match=match) as info:
        compiled(*args(*tensors()))
    assert "\n" not in str(info.value)


def test_a_failed_execution_raises(tmp_path):
    q = np.ones((softmax.M, softmax.K), np.float32)
    k = np.ones((softmax.K, softmax.N), np.float32)
    with pytest.raises(ExecutionError, match="device execution failed: .*no aic cores"):
        run(softmax.TiledSoftmax, q, k, np.zeros((softmax.M, softmax.N), np.float32),
            config=RunConfig(work_dir=str(tmp_path), num_aic_cores=0))


def test_profiled_run_records_compile_load_and_execution(tmp_path):
    a, b, f = tensors()
    run(vdag.VectorDAG, a, b, f, config=RunConfig(work_dir=str(tmp_path),
                                                   compile_profiling=True))
    profile = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    top = [s["name"] for s in profile["stages"]]
    assert [n for n in top if not n.startswith("import:")] == ["compile", "device_execution"]
    (comp,) = [s for s in profile["stages"] if s["name"] == "compile"]
    assert [c["name"] for c in comp["children"] if not c["name"].startswith("import:")] == [
        "passes", "codegen", "load_compiled"]


def test_settings_not_simulated_are_noted_once_and_recorded(tmp_path, caplog):
    from pypto.runtime import execute

    execute._noted.discard("enable_pmu")
    cfg = RunConfig(work_dir=str(tmp_path), enable_pmu=2, enable_chip_swimlane=1,
                    compile_profiling=True)
    with caplog.at_level(logging.WARNING, logger="pypto.runtime.execute"):
        compiled = run(vdag.VectorDAG, *tensors(), config=cfg)
        compiled(*tensors(), config=cfg)
    notes = [r.getMessage() for r in caplog.records if "enable_pmu" in r.getMessage()]
    assert len(notes) == 1 and "no AICore PMU counters" in notes[0]
    meta = json.loads((tmp_path / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    assert meta["metadata"]["not_simulated"] == {"enable_pmu": 2}
    profile = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    (dev,) = [s for s in profile["stages"] if s["name"] == "device_execution"]
    assert dev["args"]["not_simulated"] == {"enable_pmu": 2}


def test_the_golden_form_keeps_working_positionally_and_by_keyword(tmp_path):
    r1 = run(vdag.VectorDAG, vdag.tensor_specs(), vdag.golden,
             RunConfig(work_dir=str(tmp_path / "p")))
    r2 = run(program=vdag.VectorDAG, tensor_specs=vdag.tensor_specs(), golden=vdag.golden,
             config=RunConfig(work_dir=str(tmp_path / "k")))
    assert r1.passed and r2.passed and r1.not_simulated == {}
    with pytest.raises(RuntimeConfigError, match="codegen_only"):
        run(vdag.VectorDAG, vdag.tensor_specs(), vdag.golden, RunConfig(codegen_only=True))


def test_torch_cpu_tensors_are_written_in_place_and_returned_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    a = torch.full(SHAPE, 2.0)
    b = torch.full(SHAPE, 3.0)
    f = torch.zeros(SHAPE)
    compiled = run(vdag.VectorDAG, a, b, f, config=RunConfig(work_dir=str(tmp_path)))
    assert bool((f == expected(2, 3)).all())
    out = compiled(a, b)
    assert isinstance(out, torch.Tensor) and bool((out == expected(2, 3)).all())
