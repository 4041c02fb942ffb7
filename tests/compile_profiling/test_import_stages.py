"""Imports made while profiling are stages `import:<module>`, so a first profile names the time
its lazy imports took instead of leaving it to `compile`'s self time or "(unaccounted)"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling import CompileProfiler


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A fresh package `<name>` with a submodule, importable from tmp_path: (name, dir)."""
    name = f"pkg_{uuid.uuid4().hex[:12]}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import helper\nVALUE = helper.VALUE + 1\n")
    (pkg / "helper.py").write_text("import json\nVALUE = 41\n")
    (pkg / "broken.py").write_text("raise ValueError('broken on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, pkg
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_an_import_is_one_stage_where_it_happened_and_counts_what_it_pulled_in(package):
    name, _ = package
    with CompileProfiler() as prof, prof.stage("work"):
        module = __import__(name)
    assert module.VALUE == 42
    (work,) = prof.stages
    (imp,) = work.children
    assert (imp.name, imp.cat) == (f"import:{name}", "import")
    assert imp.args["modules"] >= 2          # the package and its helper (and json, if new)
    assert work.start_ns <= imp.start_ns <= imp.end_ns <= work.end_ns
    # loaded now: importing it again is no stage at all
    with CompileProfiler() as again:
        __import__(name)
    assert again.stages == []


def test_a_failed_import_is_a_failed_stage_and_the_error_goes_on(package):
    name, _ = package
    with CompileProfiler() as prof, pytest.raises(ValueError, match="broken on import"):
        __import__(f"{name}.broken")
    # the package is imported first (and fine), then its submodule, which fails
    package_stage, broken = prof.stages
    assert (package_stage.name, package_stage.error) == (f"import:{name}", None)
    assert (broken.name, broken.error, broken.is_open) == (f"import:{name}.broken",
                                                            "ValueError", False)


def test_without_a_profiler_imports_are_not_stages_of_anything(package):
    name, _ = package
    prof = CompileProfiler()   # made, never entered: not active
    __import__(name)
    assert prof.stages == []


PROGRAM = """
import json, sys
sys.path.insert(0, {examples!r})
import vector_dag
from pypto.runtime import RunConfig, run
result = run(vector_dag.VectorDAG, vector_dag.tensor_specs(), vector_dag.golden,
             RunConfig(work_dir={work!r}))
assert result.passed, result.error
finders = [type(f).__name__ for f in sys.meta_path]
print(json.dumps({{"profile": result.profile, "finders": finders}}))
"""


def run_program(tmp_path, profiling: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env["PYTHONPATH"] = str(REPO)
    if profiling:
        env.update(PYPTO_COMPILE_PROFILING="1", PYPTO_COMPILE_PROFILING_DIR=str(tmp_path / "p"))
    code = PROGRAM.format(examples=str(REPO / "examples"), work=str(tmp_path / "work"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, timeout=120,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_first_profile_names_its_imports(tmp_path):
    """The environment's profile of a fresh interpreter: the program's own imports after
    profiling began (`pypto.runtime` here) and `ir.compile`'s first-call imports of the
    passes and codegen are stages, so neither `compile`'s self time nor "(unaccounted)"
    holds them."""
    doc = run_program(tmp_path, profiling=True)
    stages = doc["profile"]["stages"]
    top = {s["name"]: s for s in stages}
    assert "import:pypto.runtime" in top and top["import:pypto.runtime"]["cat"] == "import"
    compile_stage = top["compile"]
    imports = [c for c in compile_stage["children"] if c["name"].startswith("import:")]
    names = {c["name"] for c in imports}
    assert {"import:pypto.ir_core.passes", "import:pypto.codegen"} <= names, names
    assert all(c["args"]["modules"] >= 1 and c["cat"] == "import" for c in imports)
    # the profiler's own modules (reports, exports) are never stages of the program
    every = [s["name"] for s in _walk(stages)]
    assert not [n for n in every if n.startswith("import:pypto.compile_profiling")]
    assert "ImportStages" in doc["finders"]


def test_profiling_off_installs_no_finder(tmp_path):
    doc = run_program(tmp_path, profiling=False)
    assert doc["profile"] is None and "ImportStages" not in doc["finders"]


def _walk(stages):
    work = list(stages)
    while work:
        s = work.pop()
        yield s
        work.extend(s["children"])
