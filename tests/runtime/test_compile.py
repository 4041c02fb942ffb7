"""`ir.compile`: output directory, profiling opt-ins and reports, failures that still report."""

from __future__ import annotations

import json
import os

import pytest

import examples.many_kernels as many
import examples.vector_dag as vdag
import pypto.language as pl
from pypto import ir
from pypto.compile_profiling import CompileProfiler, refresh_from_environment
from pypto.errors import CompileError, ParserError

BIG = "pl.Tensor[[256, 256], pl.FP32]"
TOO_BIG = (
    "@pl.program\nclass TooBig:\n"
    "    @pl.function(type=pl.FunctionType.InCore)\n"
    f"    def huge(self, a: {BIG}, out: pl.Out[{BIG}]) -> {BIG}:\n"
    "        t = pl.load(a, [0, 0], [256, 256])\n"
    "        out = pl.store(t, [0, 0], out)\n        return out\n"
    "    @pl.function(type=pl.FunctionType.Orchestration)\n"
    f"    def main(self, a: {BIG}, out: pl.Out[{BIG}]) -> {BIG}:\n"
    "        out = self.huge(a, out)\n        return out\n")


def stage_names(stages: list[dict], depth: int = 0) -> list[tuple[int, str]]:
    out = []
    for s in stages:
        out.append((depth, s["name"]))
        out += stage_names(s["children"], depth + 1)
    return out


def test_profiling_true_writes_report_with_passes_and_codegen_only(tmp_path):
    out = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path), profiling=True)
    report = tmp_path / "report"
    assert out == str(tmp_path)
    assert {"pipeline_profile.txt", "pipeline_profile.json", "trace.json"} <= set(os.listdir(report))
    profile = json.loads((report / "pipeline_profile.json").read_text())
    names = stage_names(profile["stages"])
    # (a first compile in this process also records the imports it made)
    assert [n for d, n in names if d == 0 and not n.startswith("import:")] == [
        "passes", "codegen"]
    assert (1, "AllocateMemoryAddr") in names and (1, "kernel_codegen:kernel_mul") in names
    assert (1, "orchestration_codegen") in names
    codegen = next(st for st in profile["stages"] if st["name"] == "codegen")
    kernels = [k for k in codegen["children"] if k["name"].startswith("kernel_codegen:")]
    assert len(kernels) == 3
    for kernel in kernels:                        # each kernel's two steps, in order
        assert [c["name"] for c in kernel["children"]
                if not c["name"].startswith("import:")] == ["kernel_source", "kernel_executable"]
    assert "compile" not in [n for _, n in names] and "parse" not in [n for _, n in names]
    text = (report / "pipeline_profile.txt").read_text()
    assert text.startswith("PyPTO Compile Profile") and "kernel_codegen:* x" in text  # folded
    trace = json.loads((report / "trace.json").read_text())
    assert any(e.get("name") == "kernel_codegen:kernel_add" for e in trace["traceEvents"])


def test_profiling_off_writes_no_report(tmp_path):
    ir.compile(vdag.VectorDAG, output_dir=str(tmp_path))
    assert not (tmp_path / "report").exists()
    assert (tmp_path / "kernel_config.json").is_file()


def test_default_output_dir_is_under_build_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ir.compile(vdag.VectorDAG)
    assert os.path.dirname(out) == "build_output"
    assert os.path.basename(out).startswith("VectorDAG_")
    assert os.path.isfile(os.path.join(out, "kernel_config.json"))


def test_dump_passes_writes_numbered_ir(tmp_path):
    ir.compile(vdag.VectorDAG, output_dir=str(tmp_path), dump_passes=True)
    dumps = sorted(os.listdir(tmp_path / "passes_dump"))
    assert dumps[1] == "01_UnrollLoops.txt" and dumps[-1] == "09_AllocateMemoryAddr.txt"


def test_active_profiler_records_parse_passes_codegen_without_report(tmp_path):
    with CompileProfiler() as prof:
        prog = many.build_program(4, "Four")
        ir.compile(prog, output_dir=str(tmp_path))
    assert [s.name for s in prof.stages] == ["parse", "passes", "codegen"]
    assert prof.stages[0].cat == "parse"
    assert prof.stages[0].args == {"file": "<generated Four>", "program": "Four", "functions": 5}
    assert not (tmp_path / "report").exists()


def test_active_profiler_and_profiling_true_records_and_writes_report(tmp_path):
    with CompileProfiler() as prof:
        ir.compile(vdag.VectorDAG, output_dir=str(tmp_path), profiling=True)
        ir.compile(vdag.VectorDAG, output_dir=str(tmp_path / "second"))
    assert [s.name for s in prof.stages] == ["passes", "codegen", "passes", "codegen"]
    assert (tmp_path / "report" / "pipeline_profile.json").is_file()


def test_no_parse_stage_when_profiler_not_active_at_decoration(tmp_path):
    prog = many.build_program(2, "Two")
    with CompileProfiler() as prof:
        ir.compile(prog, output_dir=str(tmp_path))
    assert [s.name for s in prof.stages] == ["passes", "codegen"]


def test_failing_pass_still_writes_report_then_raises(tmp_path):
    prog = pl.parse_program(TOO_BIG, "too_big.py")
    with pytest.raises(CompileError, match="kernel 'huge' needs 262144 bytes of Vec memory"):
        ir.compile(prog, output_dir=str(tmp_path), profiling=True)
    profile = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    (passes,) = profile["stages"]
    assert passes["name"] == "passes" and passes["error"] == "CompileError"
    assert passes["children"][-1]["name"] == "AllocateMemoryAddr"
    assert passes["children"][-1]["error"] == "CompileError"
    assert "FAILED" in (tmp_path / "report" / "pipeline_profile.txt").read_text()


def test_failing_codegen_still_writes_report_then_raises(tmp_path, monkeypatch):
    from pypto.codegen import driver

    def broken(func, program_name):
        raise CompileError(f"cannot lower {func.name}")

    monkeypatch.setattr(driver, "cpp_kernel_source", broken)
    with pytest.raises(CompileError, match="cannot lower"):
        ir.compile(vdag.VectorDAG, output_dir=str(tmp_path), profiling=True, codegen_workers=1)
    profile = json.loads((tmp_path / "report" / "pipeline_profile.json").read_text())
    assert [s["name"] for s in profile["stages"]] == ["passes", "codegen"]
    codegen = profile["stages"][1]
    assert codegen["error"] == "CompileError"
    assert codegen["children"][0]["name"] == "kernel_codegen:kernel_add"
    assert codegen["children"][0]["error"] == "CompileError"


def test_environment_variable_activates_recording(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "1")
    prof = refresh_from_environment()
    try:
        assert prof is not None
        ir.compile(vdag.VectorDAG, output_dir=str(tmp_path))
        assert [s.name for s in prof.stages][-2:] == ["passes", "codegen"]
        assert not (tmp_path / "report").exists()
    finally:
        monkeypatch.delenv("PYPTO_COMPILE_PROFILING")
        assert refresh_from_environment() is None
    # the dropped process-wide profiler no longer counts as this thread's (it stayed bound,
    # and a later test's `with CompileProfiler()` found it current after its own exit)
    assert CompileProfiler.current() is None


def test_compile_rejects_non_programs():
    with pytest.raises(CompileError, match="expects the Program"):
        ir.compile(object())


def test_parse_error_marks_the_parse_stage_failed():
    with CompileProfiler() as prof, pytest.raises(ParserError):
        pl.parse_program("@pl.program\nclass P:\n    x = 1\n", "bad.py")
    (parse,) = prof.stages
    assert parse.name == "parse" and parse.error == "ParserError" and not parse.is_open
