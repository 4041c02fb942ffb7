"""@pl.program where `inspect` cannot find the source: IPython cells, `exec`, importlib modules."""

from __future__ import annotations

import importlib.util
import inspect
import linecache
import subprocess
import sys
import textwrap

import pytest
from repo_paths import REPO_ROOT

import pypto.language as pl
from pypto.errors import ParserError
from pypto.ir_core.printer import print_program

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


def test_no_source_anywhere_says_so_and_names_the_one_step():
    with pytest.raises(ParserError) as info:
        exec(compile(CELL, "<nowhere>", "exec"), {"__name__": "__main__"})  # noqa: S102
    message = str(info.value)
    assert "source of class 'Cell' is not available: <nowhere> is no file and not in " \
           "linecache" in message
    assert "exec(compile(src, pl.register_source(src, '<nowhere>'), 'exec'), namespace)" \
           in message and "pl.parse_program(src)" in message
    # the decorator's line (3.11+) or the class line (3.10) of the cell
    assert info.value.lineno in (5, 6) and "built-in class" not in message


def test_the_one_step_register_source_makes_exec_work():
    namespace = {"__name__": "__main__"}
    name = pl.register_source(CELL, "<cell-1>")
    try:
        exec(compile(CELL, name, "exec"), namespace)  # noqa: S102 - the case under test
    finally:
        linecache.cache.pop(name, None)
    assert name == "<cell-1>" and sorted(namespace["Cell"].functions) == ["k", "main"]


def test_parse_program_reads_the_module_constants_of_a_whole_cell():
    program = pl.parse_program(CELL, "<cell-2>")      # N = 64 is in the cell itself
    assert sorted(program.functions) == ["k", "main"]
    src = textwrap.dedent("""\
        \"\"\"A cell with every kind of constant.\"\"\"
        from __future__ import annotations
        import pypto.language as lang

        ROWS, COLS = 32, 64
        BLOCK: int = ROWS // 2
        SCALE = -0.5

        @lang.program
        class Consts:
            @lang.function(type=lang.FunctionType.InCore)
            def k(self, a: lang.Tensor[[ROWS, COLS], lang.FP32],
                  out: lang.Out[lang.Tensor[[ROWS, COLS], lang.FP32]]
                  ) -> lang.Tensor[[ROWS, COLS], lang.FP32]:
                for i in lang.range(ROWS // BLOCK):
                    t = lang.load(a, [i * BLOCK, 0], [BLOCK, COLS])
                    out = lang.store(lang.mul(t, SCALE), [i * BLOCK, 0], out)
                return out

            @lang.function(type=lang.FunctionType.Orchestration)
            def main(self, a: lang.Tensor[[ROWS, COLS], lang.FP32],
                     out: lang.Out[lang.Tensor[[ROWS, COLS], lang.FP32]]
                     ) -> lang.Tensor[[ROWS, COLS], lang.FP32]:
                out = self.k(a, out)
                return out
        """)
    program = pl.parse_program(src, "<cell-3>", env={"ROWS": 999})   # the cell's own wins
    text = print_program(program)
    assert "[32, 64]" in text and "-0.5" in text and "999" not in text


@pytest.mark.parametrize("line, problem", [
    ("N = len('abcd')", "module-level constant 'N' must be an integer or float literal"),
    ("N = M = 64", "assign one constant at a time"),
    ("print(N)", "holds one class, imports and integer or float constants only, not 'print(N)'"),
])
def test_parse_program_names_what_it_cannot_evaluate(line, problem):
    src = CELL.replace("N = 64", "N = 64\n" + line)
    with pytest.raises(ParserError) as info:
        pl.parse_program(src, "<cell-4>")
    assert problem in str(info.value) and info.value.lineno == 4


def test_real_ipython_cell():
    pytest.importorskip("IPython")
    script = ("from IPython.testing.globalipapp import start_ipython\n"
              "ip = start_ipython()\n"
              f"result = ip.run_cell({CELL!r})\n"
              "result.raise_error()\n"
              "print(sorted(ip.user_ns['Cell'].functions))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "['k', 'main']"
