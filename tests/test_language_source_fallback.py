"""@pl.program where `inspect` cannot find the source: IPython cells, `exec`, importlib modules."""

from __future__ import annotations

import importlib.util
import inspect
import linecache
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pypto.errors import ParserError
from pypto.ir.printer import print_program

T = "pl.Tensor[[64, 64], pl.FP32]"
CELL = textwrap.dedent(f"""\
    import pypto.language as pl

    N = 64

    @pl.program
    class Cell:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: {T}, out: pl.Out[{T}]) -> {T}:
            t = pl.load(a, [0, 0], [N, N])
            out = pl.store(pl.exp(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: {T}, out: pl.Out[{T}]) -> {T}:
            out = self.k(a, out)
            return out
    """)


def test_exec_of_source_registered_in_linecache_is_parsed(monkeypatch):
    name = "<ipython-input-7-cafe>"  # how IPython names a cell it has put in linecache
    monkeypatch.setitem(linecache.cache, name, (len(CELL), None, CELL.splitlines(True), name))
    namespace = {"__name__": "__main__"}
    exec(compile(CELL, name, "exec"), namespace)  # noqa: S102 - the case under test
    program = namespace["Cell"]
    assert sorted(program.functions) == ["k", "main"]
    assert "exp" in print_program(program)
    with pytest.raises((OSError, TypeError)):  # the path the decorator used to depend on
        inspect.getsource(type("Cell", (), {"__module__": "__main__"}))


def test_module_loaded_by_importlib_without_sys_modules_entry(tmp_path):
    path = tmp_path / "kernels_mod.py"
    path.write_text(CELL)
    spec = importlib.util.spec_from_file_location("kernels_mod_not_registered", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no sys.modules entry: inspect.getsourcefile fails
    assert "kernels_mod_not_registered" not in sys.modules
    assert sorted(module.Cell.functions) == ["k", "main"]


def test_error_spans_point_into_the_cell(monkeypatch):
    name = "<ipython-input-8-beef>"
    bad = CELL.replace("pl.exp(t)", "pl.nope(t)")
    monkeypatch.setitem(linecache.cache, name, (len(bad), None, bad.splitlines(True), name))
    with pytest.raises(ParserError) as info:
        exec(compile(bad, name, "exec"), {"__name__": "__main__"})  # noqa: S102
    assert info.value.filename == name
    assert bad.splitlines()[info.value.lineno - 1].strip().startswith("out = pl.store(pl.nope")


def test_no_source_anywhere_says_so_and_points_to_parse_program():
    with pytest.raises(ParserError) as info:
        exec(compile(CELL, "<nowhere>", "exec"), {"__name__": "__main__"})  # noqa: S102
    message = str(info.value)
    assert "'Cell'" in message and "not available" in message
    assert "<nowhere>:5 is not in linecache" in message
    assert "pl.parse_program(source, filename)" in message


def test_real_ipython_cell():
    pytest.importorskip("IPython")
    script = ("from IPython.testing.globalipapp import start_ipython\n"
              "ip = start_ipython()\n"
              f"result = ip.run_cell({CELL!r})\n"
              "result.raise_error()\n"
              "print(sorted(ip.user_ns['Cell'].functions))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False, cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "['k', 'main']"
