"""The house of `pypto.compile_profiling`: no import circle, imports only one way, and a merge
that loads only the merge's own floors.

Every `import` statement counts, at module level, inside functions and under
`TYPE_CHECKING` alike: a circle hidden in a function body is still a circle to a reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from import_graph import circles, imports_of
from import_graph import import_graph as graph_of
from repo_paths import REPO_ROOT as REPO
from simpler_fixtures import FIXTURES

PACKAGE = "pypto.compile_profiling"
ROOT = REPO / "pypto" / "compile_profiling"

# Each room (a subpackage, or "core" for the modules at the package's top) and the rooms it
# may import. A new subpackage must be added here, with its place in the house.
MAY_IMPORT = {
    "foundation": {"foundation"},
    "schedule": {"schedule"},
    "timeline": {"timeline", "foundation"},
    "trace_merge": {"trace_merge", "timeline", "foundation"},
    "analysis": {"analysis", "schedule", "trace_merge", "timeline", "foundation"},
    "profile_data": {"profile_data", "foundation", "core"},
    "core": {"core", "profile_data", "timeline", "foundation"},
    "viewer": {"viewer", "foundation"},
    "query": {"query", "trace_merge", "timeline", "profile_data", "foundation"},
    # the whole-run comparison reads the device side through `analysis`
    "profile_tool": {"profile_tool", "core", "profile_data", "analysis", "trace_merge",
                     "timeline", "foundation"},
    "cli": {"cli", "viewer", "profile_tool", "analysis", "query", "core", "profile_data",
            "trace_merge", "timeline", "foundation"},
}


def import_graph() -> dict[str, set[str]]:
    return graph_of(ROOT)


def room(module: str) -> str:
    parts = module.split(".")
    if parts[-1] == "__main__":
        return "cli"  # `python -m pypto.compile_profiling` is the pypto-profile command
    if len(parts) <= 2:
        return "core"  # the package itself (its __init__)
    if (ROOT / parts[2]).is_dir():
        return parts[2]
    return "core"


def test_the_graph_reader_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The checks below are only as good as the import reader: it must see an import in a
    function body, a `TYPE_CHECKING` one, `from pkg import module` and a relative one."""
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from a.b import c\n"
                   "def f():\n    from . import d\n    import a.e\n")
    known = {"a.b", "a.b.c", "a.d", "a.e", "a.m"}
    assert imports_of(src, "a.m", known) == {"a.b.c", "a.d", "a.e"}
    assert circles({"x": {"y"}, "y": {"z"}, "z": {"x"}, "w": {"x"}}) == [["x", "y", "z"]]
    assert circles({"x": {"y"}, "y": set()}) == []


def test_no_import_circle_in_compile_profiling():
    assert circles(import_graph()) == []


def test_every_room_is_declared_and_imports_only_downwards():
    graph = import_graph()
    rooms = {room(m) for m in graph}
    assert rooms <= set(MAY_IMPORT), f"undeclared rooms: {sorted(rooms - set(MAY_IMPORT))}"
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                   if room(t) not in MAY_IMPORT[room(m)])
    assert wrong == []


def test_the_merge_and_the_timeline_never_import_the_profiler_or_the_tool():
    graph = import_graph()
    below = {"foundation", "timeline", "trace_merge"}
    above = {"core", "profile_data", "profile_tool", "cli", "viewer"}
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() if room(m) in below
                   for t in targets if room(t) in above)
    assert wrong == []


MERGE_PROGRAM = """
import json, sys
from pypto.compile_profiling.cli.merge_traces import main
code = main(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pypto"))))
sys.exit(code)
"""


def test_a_merge_loads_only_the_merge_and_writes_no_profile_of_itself(tmp_path):
    """With PYPTO_COMPILE_PROFILING=1 a merge must not leave a profile of the merge in
    ./pypto_profile/ (the environment profiler is made at the first stage boundary, as
    upstream, and a merge has none), and it loads no module of the profiler or the tool."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env["PYPTO_COMPILE_PROFILING"] = "1"
    env["PYTHONPATH"] = str(REPO)
    out = tmp_path / "m.pftrace"
    r = subprocess.run([sys.executable, "-c", MERGE_PROGRAM,
                        str(FIXTURES / "hbg_vector_example_l4_depgen"), "-o", str(out), "-q"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0
    assert not (tmp_path / "pypto_profile").exists()
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    allowed = {"foundation", "timeline", "trace_merge"}
    outside = [m for m in loaded if m.startswith(PACKAGE + ".") and room(m) not in allowed]
    assert outside == [f"{PACKAGE}.cli", f"{PACKAGE}.cli.merge_arguments",
                       f"{PACKAGE}.cli.merge_output",
                       f"{PACKAGE}.cli.merge_per_rank", f"{PACKAGE}.cli.merge_traces",
                       f"{PACKAGE}.cli.process", f"{PACKAGE}.cli.progress", f"{PACKAGE}.cli.stdout",
                       f"{PACKAGE}.viewer", f"{PACKAGE}.viewer.perfetto_ui",
                       f"{PACKAGE}.viewer.ui_limits"]     # is it past what the UI can load?


def test_the_package_face_lists_exactly_its_lazy_names():
    import pypto.compile_profiling as cp

    assert sorted(cp.__all__) == sorted(cp._LAZY)
    for name in cp.__all__:
        assert getattr(cp, name) is not None
