"""The one line saying where the compile profile went (logger `pypto.compile_profiling`),
shown on stderr by default only when the user asked for profiling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT as ROOT

COMPILE = """
import examples.vector_dag as vdag
from pypto import ir
ir.compile(vdag.VectorDAG, output_dir={out!r}, profiling={profiling})
"""
RUN = """
import examples.vector_dag as vdag
from pypto.runtime import RunConfig, run
r = run(vdag.VectorDAG, vdag.tensor_specs(), vdag.golden,
        RunConfig(work_dir={out!r}, compile_profiling={profiling}))
assert r.passed, r.error
"""


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=120)


@pytest.mark.parametrize("program", [COMPILE, RUN], ids=["ir.compile", "run"])
def test_profiling_says_once_where_the_report_went(tmp_path, program):
    out = tmp_path / "out"
    proc = run_python(program.format(out=str(out), profiling=True), ROOT)
    assert proc.returncode == 0, proc.stderr
    report = out / "report"
    line = (f"pypto: compile profile written to {report}{os.sep} "
            "(pipeline_profile.txt, .json, trace.json)")
    assert proc.stderr.splitlines() == [line]
    assert (report / "pipeline_profile.txt").is_file()


def test_a_report_under_the_working_directory_is_named_relative_to_it(tmp_path):
    proc = run_python(RUN.format(out="work", profiling=True), tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = (f"pypto: compile profile written to {os.path.join('work', 'report')}{os.sep} "
            "(pipeline_profile.txt, .json, trace.json)")
    assert proc.stderr.splitlines() == [line]
    assert (tmp_path / "work" / "report" / "pipeline_profile.json").is_file()


@pytest.mark.parametrize("program", [COMPILE, RUN], ids=["ir.compile", "run"])
def test_no_line_without_profiling(tmp_path, program):
    proc = run_python(program.format(out=str(tmp_path / "out"), profiling=False), ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_program_that_configured_logging_decides_itself(tmp_path):
    quiet = "import logging; logging.basicConfig(level=logging.WARNING)\n"
    proc = run_python(quiet + COMPILE.format(out=str(tmp_path / "a"), profiling=True), ROOT)
    assert proc.returncode == 0 and proc.stderr == ""
    verbose = "import logging; logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
    proc = run_python(verbose + COMPILE.format(out=str(tmp_path / "b"), profiling=True), ROOT)
    lines = [ln for ln in proc.stderr.splitlines() if "compile profile written" in ln]
    line = (f"pypto.compile_profiling pypto: compile profile written to "
            f"{tmp_path / 'b' / 'report'}{os.sep} "
            "(pipeline_profile.txt, .json, trace.json)")
    assert lines == [line]
