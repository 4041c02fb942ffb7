"""`pypto.ir`, the face upstream's users import: every name it lists is the one object of the
room that owns it (no copy, no wrapper), and `ir.compile` of a program gives what
`pypto.runtime` gives."""

from __future__ import annotations

import importlib

import examples.vector_dag as vdag
from pypto import ir


def test_every_listed_name_is_the_owning_rooms_own_object():
    owners = ("pypto.ir_core.nodes", "pypto.ir_core.pass_base", "pypto.ir_core.pass_manager",
              "pypto.ir_core.printer", "pypto.ir_core.types", "pypto.runtime.compiled_program")
    for name in ir.__all__:
        obj = getattr(ir, name)
        if name == "compile":
            from pypto.runtime.compile import compile_program

            assert obj is compile_program
            continue
        homes = [m for m in owners if getattr(importlib.import_module(m), name, None) is obj]
        assert homes, f"ir.{name} is not the object of any room below"
    assert sorted(n for n in dir(ir) if not n.startswith("_") and n[0].isupper()
                  and n not in ir.__all__) == []


def test_compile_through_the_face_makes_a_compiled_program(tmp_path):
    compiled = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path / "out"))
    assert isinstance(compiled, ir.CompiledProgram)
    assert compiled.output_dir == str(tmp_path / "out")
    assert any((tmp_path / "out").rglob("*.py")) or any((tmp_path / "out").iterdir())
