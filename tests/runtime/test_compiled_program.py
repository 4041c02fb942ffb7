"""`ir.compile`'s result: the output directory (a str, as before) that can also be called."""

from __future__ import annotations

import os
import pickle

import numpy as np

import examples.vector_dag as vdag
from pypto import ir
from pypto.codegen import load_compiled


def test_it_is_the_directory_for_every_path_api_and_survives_pickling(tmp_path):
    compiled = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path))
    assert compiled == str(tmp_path) and os.path.join(compiled, "x") == str(tmp_path / "x")
    assert compiled.output_dir == str(tmp_path) and compiled.work_dir == str(tmp_path)
    assert load_compiled(compiled).name == "VectorDAG"
    again = pickle.loads(pickle.dumps(compiled))
    assert isinstance(again, ir.CompiledProgram) and again == compiled
    assert again.program.name == "VectorDAG" and again.platform == "a2a3sim"
    a = np.full((vdag.ROWS, vdag.COLS), 1.0, np.float32)
    f = again(a, a)                                   # the copy runs as well
    assert np.all(f == (2 + 1) * (2 + 2) + 2)


def test_it_loads_the_kernels_once(tmp_path):
    compiled = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path))
    assert compiled.load() is compiled.load()
