"""Codegen outputs, the loader contract, numerics of the executable form, parallel codegen."""

from __future__ import annotations

import json
import os
import sys
import threading

import numpy as np
import pytest
from repo_paths import REPO_ROOT

import examples.many_kernels as many
import examples.tiled_softmax as softmax
import examples.vector_dag as vdag
from pypto import ir
from pypto.codegen import LoadedProgram, TaskCall, generate, load_compiled
from pypto.compile_profiling import CompileProfiler
from pypto.errors import CompileError, RuntimeConfigError
from pypto.ir import PassManager


def tensors_from(specs):
    out = {}
    for s in specs:
        v = s["init_value"]
        out[s["name"]] = (np.array(v, dtype=s["dtype"]) if isinstance(v, np.ndarray)
                          else np.full(s["shape"], v, dtype=s["dtype"]))
    return out


def execute(compiled: LoadedProgram, tensors: dict) -> list[TaskCall]:
    tasks = compiled.build_tasks(tensors)
    for t in tasks:
        compiled.kernels[t.kernel].fn(*t.args)
    return tasks


@pytest.mark.parametrize("module, program, ntasks", [
    (vdag, vdag.VectorDAG, 5), (softmax, softmax.TiledSoftmax, 2), (many, many.ManyKernels, 64)])
def test_compiled_examples_match_golden(tmp_path, module, program, ntasks):
    compiled = load_compiled(ir.compile(program, output_dir=str(tmp_path)))
    tensors = tensors_from(module.tensor_specs())
    expected = {k: v.copy() for k, v in tensors.items()}
    module.golden(expected, {})
    assert len(execute(compiled, tensors)) == ntasks
    for s in module.tensor_specs():
        if s["is_output"]:
            np.testing.assert_allclose(tensors[s["name"]], expected[s["name"]], rtol=1e-5, atol=1e-6)


def test_vector_dag_tasks_share_intermediates_by_identity(tmp_path):
    compiled = load_compiled(ir.compile(vdag.VectorDAG, output_dir=str(tmp_path)))
    tensors = tensors_from(vdag.tensor_specs())
    tasks = compiled.build_tasks(tensors)
    assert [t.kernel for t in tasks] == ["kernel_add", "kernel_add_scalar", "kernel_add_scalar",
                                         "kernel_mul", "kernel_add"]
    t0 = tasks[0].args[2]
    assert tasks[1].args[0] is t0 and tasks[2].args[0] is t0 and tasks[4].args[1] is t0
    assert tasks[0].args[0] is tensors["a"] and tasks[4].args[2] is tensors["f"]
    assert tasks[1].args[1] == 1.0 and tasks[2].args[1] == 2.0


def test_kernel_config_and_loader_fields(tmp_path):
    out = ir.compile(softmax.TiledSoftmax, output_dir=str(tmp_path))
    config = json.loads((tmp_path / "kernel_config.json").read_text())
    assert [(k["func_id"], k["name"], k["core_type"]) for k in config["kernels"]] == [
        (0, "qk_matmul", "aic"), (1, "row_softmax", "aiv")]
    for k in config["kernels"]:
        assert (tmp_path / k["source"]).is_file() and (tmp_path / k["executable"]).is_file()
    compiled = load_compiled(out)
    assert compiled.name == "TiledSoftmax" and compiled.orchestration_name == "main"
    assert [(p.name, p.shape, p.dtype, p.direction) for p in compiled.params] == [
        ("q", (64, 128), "float32", "in"), ("k", (128, 64), "float32", "in"),
        ("out", (64, 64), "float32", "out")]
    mm = compiled.kernels["qk_matmul"]
    assert (mm.func_id, mm.core_type, [p.direction for p in mm.params]) == (0, "aic", ["in", "in", "out"])


def test_scalar_params_have_no_shape(tmp_path):
    compiled = load_compiled(ir.compile(vdag.VectorDAG, output_dir=str(tmp_path)))
    p = compiled.kernels["kernel_add_scalar"].params[1]
    assert (p.name, p.shape, p.dtype, p.direction) == ("scalar", None, "float32", "scalar")


def test_readable_sources(tmp_path):
    ir.compile(softmax.TiledSoftmax, output_dir=str(tmp_path))
    mm = (tmp_path / "kernels" / "qk_matmul.cpp").read_text()
    assert "TMATMUL(s_blk, q_blk, k_all);" in mm and "Tile<TileType::Left, float, 32, 128>" in mm
    assert "TLOAD(q_blk_1, GlobalTensor(q + 32 * 128, {64, 128}));" in mm
    sm = (tmp_path / "kernels" / "row_softmax.cpp").read_text()
    assert "TROWMAX(" in sm and "TEXP(" in sm and "TASSIGN(" in sm
    orch = (tmp_path / "orchestration.cpp").read_text()
    assert "rt->submit_task(/*func_id=*/0, /*qk_matmul*/ {IN(q), IN(k), OUT(scores)});" in orch


def test_loader_checks_tensors_and_isolates_loads(tmp_path):
    out = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path))
    first, second = load_compiled(out), load_compiled(out)
    assert first.kernels["kernel_add"].fn is not second.kernels["kernel_add"].fn
    assert not any(name.startswith("_pypto_compiled_") for name in sys.modules)
    tensors = tensors_from(vdag.tensor_specs())
    del tensors["b"]
    with pytest.raises(RuntimeConfigError, match="no value for parameter 'b'"):
        first.build_tasks(tensors)
    tensors["b"] = np.zeros((4, 4), dtype=np.float32)
    with pytest.raises(RuntimeConfigError, match="'b' must be a float32 array of shape"):
        first.build_tasks(tensors)
    with pytest.raises(CompileError, match="kernel_config.json: cannot read"):
        load_compiled(tmp_path / "missing")


def test_memory_reuse_is_real_in_the_executable_form(tmp_path):
    """Tiles MemoryReuse put in one buffer are views of the same bytes."""
    ir.compile(softmax.TiledSoftmax, output_dir=str(tmp_path))
    src = (tmp_path / "kernels" / "row_softmax.py").read_text()
    assert "x = mem_vec[0:4096]" in src and "e = mem_vec[0:4096]" in src


def test_parallel_codegen_writes_the_same_files_as_sequential(tmp_path):
    prog = PassManager().run(many.build_program(12, "Twelve"))
    generate(prog, str(tmp_path / "seq"), max_workers=1)
    generate(prog, str(tmp_path / "par"), max_workers=4)
    for root, _, files in os.walk(tmp_path / "seq"):
        for f in files:
            a = os.path.join(root, f)
            b = a.replace(str(tmp_path / "seq"), str(tmp_path / "par"))
            with open(a) as fa, open(b) as fb:
                assert fa.read() == fb.read(), f


def test_kernel_codegen_stages_nest_under_codegen_on_worker_threads(tmp_path):
    prog = PassManager().run(many.build_program(8, "Eight"))
    with CompileProfiler() as prof:
        generate(prog, str(tmp_path), max_workers=4)
    (cg,) = prof.stages
    assert cg.name == "codegen" and cg.args["workers"] == 4
    names = [c.name for c in cg.children]
    assert sorted(names[:-1]) == sorted(f"kernel_codegen:step_{j}" for j in range(8))
    assert names[-1] == "orchestration_codegen"
    main_tid = threading.get_native_id()
    worker_tids = {c.tid for c in cg.children[:-1]}
    assert main_tid not in worker_tids and 1 <= len(worker_tids) <= 4
    assert all(c.thread_name.startswith("pypto-codegen") for c in cg.children[:-1])
    for c in cg.children:
        assert cg.start_ns <= c.start_ns <= c.end_ns <= cg.end_ns


def test_workers_from_environment(tmp_path, monkeypatch):
    prog = PassManager().run(many.build_program(3, "Three"))
    monkeypatch.setenv("PYPTO_CODEGEN_MAX_WORKERS", "1")
    with CompileProfiler() as prof:
        generate(prog, str(tmp_path))
    (cg,) = prof.stages
    assert cg.args["workers"] == 1
    assert {c.tid for c in cg.children} == {threading.get_native_id()}
    monkeypatch.setenv("PYPTO_CODEGEN_MAX_WORKERS", "many")
    with pytest.raises(CompileError, match="PYPTO_CODEGEN_MAX_WORKERS='many' is not a positive integer"):
        generate(prog, str(tmp_path))


MIXED = """
import pypto.language as pl

@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.InCore)
    def mm16(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 8], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 8], pl.FP32]]) -> pl.Tensor[[16, 8], pl.FP32]:
        c = pl.store(pl.matmul(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [32, 8])), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.InCore)
    def idiv(self, x: pl.Tensor[[4, 8], pl.INT32], d: pl.Scalar[pl.INT32],
             y: pl.InOut[pl.Tensor[[4, 8], pl.INT32]]) -> pl.Tensor[[4, 8], pl.INT32]:
        for r in pl.range(4):
            q = pl.div(pl.load(x, [r, 0], [1, 8]), d)
            y = pl.store(pl.add(q, pl.load(y, [r, 0], [1, 8])), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def run(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 8], pl.FP16],
            c: pl.Out[pl.Tensor[[16, 8], pl.FP32]], x: pl.Tensor[[4, 8], pl.INT32],
            d: pl.Scalar[pl.INT32], y: pl.InOut[pl.Tensor[[4, 8], pl.INT32]]) -> pl.Tensor[[16, 8], pl.FP32]:
        c = self.mm16(a, b, c)
        for i in pl.range(3):
            y = self.idiv(x, d, y)
        return c
"""


def test_fp16_matmul_int32_division_scalar_param_and_orchestration_loop(tmp_path):
    import pypto.language as pl

    compiled = load_compiled(ir.compile(pl.parse_program(MIXED, "mixed.py"), output_dir=str(tmp_path)))
    assert [(k.name, k.core_type) for k in compiled.kernels.values()] == [("mm16", "aic"), ("idiv", "aiv")]
    assert [(p.name, p.dtype, p.direction) for p in compiled.params][3:] == [
        ("x", "int32", "in"), ("d", "int32", "scalar"), ("y", "int32", "inout")]
    rng = np.random.default_rng(0)
    t = {"a": rng.standard_normal((16, 32)).astype(np.float16),
         "b": rng.standard_normal((32, 8)).astype(np.float16),
         "c": np.zeros((16, 8), np.float32),
         "x": rng.integers(-50, 50, (4, 8)).astype(np.int32), "d": 7,
         "y": np.ones((4, 8), np.int32)}
    x0 = t["x"].copy()
    tasks = execute(compiled, t)
    assert [k.kernel for k in tasks] == ["mm16", "idiv", "idiv", "idiv"]
    assert all(k.args[2] is t["y"] for k in tasks[1:])
    np.testing.assert_allclose(t["c"], t["a"].astype(np.float32) @ t["b"].astype(np.float32),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(t["y"], 1 + 3 * (x0 // 7))


def test_cpp_kernel_source_writes_loops_that_reach_codegen_as_counted_loops():
    # The pipeline unrolls every loop before codegen; C++ emission of a loop (shared by the
    # kernel and orchestration writers) is only reached by IR that still has its loops.
    import sys

    sys.path.insert(0, str(REPO_ROOT / "examples"))
    import tiled_softmax

    from pypto.codegen.kernel_cpp import cpp_kernel_source

    prog = tiled_softmax.TiledSoftmax
    (qk,) = [f for f in prog.kernels if f.name == "qk_matmul"]
    lines = cpp_kernel_source(qk, prog.name).splitlines()
    header = [i for i, line in enumerate(lines) if "for (" in line]
    assert len(header) == 1
    start = header[0]
    assert lines[start] == "    for (int64_t i = 0; i < 2; i += 1) {"
    body_end = lines.index("    }", start)
    assert body_end > start + 1
    assert all(line.startswith("        ") for line in lines[start + 1:body_end])


def test_timing_slots_reach_the_task_calls(tmp_path):
    from runtime_support import SLOTTED_TAGS, slotted_program

    compiled = load_compiled(ir.compile(slotted_program(), output_dir=str(tmp_path)))
    a = np.ones((64, 64), np.float32)
    calls = compiled.build_tasks({"a": a, "b": a, "f": np.zeros_like(a)})
    assert [c.timing_slot for c in calls] == [SLOTTED_TAGS.get(i) for i in range(4)]
    cpp = (tmp_path / "orchestration.cpp").read_text()
    assert cpp.count("rt->set_next_task_timing_slot(5);") == 2
