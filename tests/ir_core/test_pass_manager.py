"""PassManager instruments: callback order, IR dumps, and the profiling instrument's stages."""

from __future__ import annotations

import os

import pytest

from examples.vector_dag import VectorDAG
from pypto.compile_profiling import CompileProfiler
from pypto.errors import CompileError
from pypto.ir import CallbackInstrument, DumpInstrument, Pass, PassManager, ProfilingInstrument
from pypto.ir_core.passes import ConvertToSSA, FlattenCallExpr, UnrollLoops, default_pipeline
from pypto.ir_core.visit import program_size


class Boom(Pass):
    name = "Boom"

    def run(self, program):
        raise CompileError("boom")


def test_callback_instrument_sees_each_pass_in_order():
    seen = []
    inst = CallbackInstrument(before=lambda p, prog: seen.append(("before", p.name)),
                              after=lambda p, prog: seen.append(("after", p.name)))
    PassManager([UnrollLoops(), ConvertToSSA()], [inst]).run(VectorDAG)
    assert seen == [("before", "UnrollLoops"), ("after", "UnrollLoops"),
                    ("before", "ConvertToSSA"), ("after", "ConvertToSSA")]


def test_after_callback_gets_the_transformed_program():
    sizes = []
    inst = CallbackInstrument(after=lambda p, prog: sizes.append(program_size(prog)))
    PassManager([FlattenCallExpr()], [inst]).run(VectorDAG)
    assert sizes[0] > program_size(VectorDAG)  # temporaries were added


def test_dump_instrument_writes_input_and_one_file_per_pass(tmp_path):
    PassManager(default_pipeline(), [DumpInstrument(str(tmp_path))]).run(VectorDAG)
    files = sorted(os.listdir(tmp_path))
    assert files[0] == "00_Input.txt" and files[-1] == "09_AllocateMemoryAddr.txt"
    assert len(files) == 10
    assert "tmp_1" not in (tmp_path / "02_ConvertToSSA.txt").read_text()
    assert "tmp_1" in (tmp_path / "03_FlattenCallExpr.txt").read_text()
    assert "@0x" in (tmp_path / "09_AllocateMemoryAddr.txt").read_text()


def test_profiling_instrument_records_passes_with_ir_sizes():
    with CompileProfiler() as prof:
        PassManager(default_pipeline(), [ProfilingInstrument(prof)]).run(VectorDAG)
    (passes,) = prof.stages
    assert passes.name == "passes"
    assert [c.name for c in passes.children] == [p.name for p in default_pipeline()]
    flatten = passes.children[2]
    assert flatten.cat == "pass"
    assert flatten.args["ir_size_after"] > flatten.args["ir_size_before"] > 0
    for a, b in zip(passes.children, passes.children[1:]):
        assert a.args["ir_size_after"] == b.args["ir_size_before"]
        assert a.end_ns <= b.start_ns


def test_failing_pass_closes_its_stage_and_passes_then_propagates():
    pm = PassManager([UnrollLoops(), Boom(), ConvertToSSA()])
    with CompileProfiler() as prof, pytest.raises(CompileError, match="boom"):
        pm.instruments.append(ProfilingInstrument(prof))
        pm.run(VectorDAG)
    (passes,) = prof.stages
    assert [c.name for c in passes.children] == ["UnrollLoops", "Boom"]
    assert passes.children[1].error == "CompileError" and not passes.children[1].is_open
    assert passes.error == "CompileError" and not passes.is_open
