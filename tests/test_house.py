"""The house of the whole `pypto` package: no import circle anywhere, and each top-level room
imports only the rooms below it (`tests/compile_profiling/test_package_layout.py` holds
`pypto.compile_profiling`'s own floors to the same rule)."""

from __future__ import annotations

from import_graph import circles, import_graph
from repo_paths import REPO_ROOT

ROOT = REPO_ROOT / "pypto"

# Each room (a top-level module or subpackage of `pypto`; "pypto" is the package's own
# `__init__`) and the rooms it may import, from the ground up. `ir` is upstream's `pypto.ir`:
# a face that hands on the IR core and the runtime's `compile`, imported by nothing here.
MAY_IMPORT = {
    "pypto": set(),
    "errors": set(),
    "about": {"pypto"},
    "compile_profiling": {"pypto", "errors", "about"},
    "ir_core": {"errors", "compile_profiling"},
    "language": {"errors", "ir_core", "compile_profiling"},
    "codegen": {"errors", "ir_core", "compile_profiling"},
    "runtime": {"errors", "ir_core", "codegen", "compile_profiling"},
    "ir": {"ir_core", "runtime"},
}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pypto"


def test_no_import_circle_anywhere_in_pypto():
    assert circles(import_graph(ROOT)) == []


def test_every_room_is_declared_and_imports_only_downwards():
    graph = import_graph(ROOT)
    rooms = {room(m) for m in graph}
    assert rooms == set(MAY_IMPORT), f"undeclared: {sorted(rooms - set(MAY_IMPORT))}"
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                   if room(t) != room(m) and room(t) not in MAY_IMPORT[room(m)])
    assert wrong == []


def test_the_declared_rooms_stand_on_floors():
    """The table itself has no circle: each room's allowed rooms come before it."""
    assert circles({r: set(below) for r, below in MAY_IMPORT.items()}) == []


# Definitions kept longer than the house's limits, each for a measured reason (docs/DESIGN.md):
# two hot loops whole (a call per event or block would cost the replay), and an argparse table.
LONG_ALLOWED = {
    "pypto/compile_profiling/schedule/calibrated.py:_walk",      # inlined: 1M replay 2.6 -> 2.0 s
    "pypto/compile_profiling/schedule/rules.py:simulate",        # the modelled-time event loop
    "pypto/compile_profiling/cli/merge_arguments.py:parser",     # the argparse table
}


def test_no_function_over_80_lines_and_no_class_over_200():
    """One job per definition: a longer one is split by job, or listed above with its reason."""
    import ast

    long = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                limit = 200 if isinstance(node, ast.ClassDef) else 80
                if node.end_lineno - node.lineno + 1 > limit:
                    long.add(f"{path.relative_to(REPO_ROOT).as_posix()}:{node.name}")
    assert long == LONG_ALLOWED
