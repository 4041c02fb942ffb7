"""The README's main job: examples/profile_end_to_end.py compiles, runs, merges and says how to open."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pasted_commands import run_pasted, shell_env

ROOT = Path(__file__).resolve().parents[1]


def tool_command(name: str, cwd: Path) -> str:
    """How a hint printed in `cwd` names the command `name` (`pypto.about.tool_command`)."""
    return subprocess.run([sys.executable, "-c", ("import sys; from pypto.about import "
                           f"tool_command; print(tool_command({name!r}))")], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_main_job_profiles_runs_and_merges_into_json_and_protobuf(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"),
         "--example", "vector_dag", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "vector_dag: PASS" in out and "PyPTO Compile Profile" in out
    assert "merged 1 compile trace, 1 run log, 1 capture\n" in out
    assert re.search(r"^  r0: 5 tasks, makespan [\d.]+ us; device time calibrated ±\d+ ns$", out,
                     re.MULTILINE)
    assert "linked 3 kernel_codegen stage(s) to their kernels' 5 device task(s)" in out
    # in detail (`pypto-merge-traces -v`): the run's host log (today's span names), and span
    # containment checking the calibration
    from pypto.compile_profiling.trace_merge import merge_traces

    work = tmp_path / "vector_dag"
    detail = "\n".join(merge_traces([work / "report" / "trace.json",
                                     work / "dfx_outputs"]).summary_lines)
    assert "calibrated by clock anchors" in detail
    assert re.search(r"dfx_outputs/host\.\d+\.log: run log, 3 \[STRACE\] host spans", detail)
    assert re.search(r"span containment in \S+/host\.\d+\.log \(pid \d+ inv 1\) agrees",
                     detail)
    merged = json.loads((tmp_path / "merged.json").read_text())
    names = {e["args"]["name"] for e in merged["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert "PyPTO compile" in names
    assert any(n.startswith("Device r0 · AICore (calibrated") for n in names)
    assert (tmp_path / "merged.pftrace").stat().st_size > 0
    open_line = out.strip().splitlines()[-1].strip()   # opens what was written: no new merge
    tool = tool_command("pypto-profile", tmp_path)
    assert open_line == f"{tool} open {tmp_path / 'merged.pftrace'}"


def test_the_kernel_line_points_where_this_program_lists_the_rest(tmp_path, capsys):
    """Issue 22: the library-based example printed the CLI's hint "(all 64: --kernels)",
    an option it does not have. The library gives the line; each printer says where the
    other kernels are: here the `pypto-profile kernels` command, which lists all 64."""
    from pypto.compile_profiling.cli.profile import main as profile_main

    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"),
         "--example", "many_kernels", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = tmp_path / "many_kernels"
    lines = proc.stdout.splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith("  r0: most device time: ")]
    assert len(re.findall(r"step_\d+ \(AIV\) [\d.]+ us", lines[at])) == 3
    tool = tool_command("pypto-profile", tmp_path)
    assert lines[at + 1] == f"  all 64 kernels: {tool} kernels {work}"
    assert "--kernels" not in proc.stdout
    assert profile_main(["kernels", str(work), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["kernels"]) == 64


@pytest.mark.xdist_group("port_9001")      # its `open` hint serves on 9001, as the README's does
def test_every_hint_the_main_job_prints_works_pasted_into_a_new_shell(tmp_path):
    """Each command the main job prints is run as printed by `sh`, in the directory it was
    printed in, with no virtual environment active (PATH without it) and a "browser" that
    fetches what the Perfetto UI would: each one exits 0."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"), "--out", "out"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tool = tool_command("pypto-profile", tmp_path)
    hints = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith(tool)]
    hints += re.findall(r"^  all \d+ kernels: (.+)$", proc.stdout, re.MULTILINE)
    assert len(hints) == 2 and any(" open " in h for h in hints)
    env = shell_env(tmp_path)
    for hint in hints:
        code, out, err = run_pasted(hint, tmp_path, env, timeout=60)
        assert code == 0, (hint, out, err)


def test_the_main_job_output_fits_a_terminal(tmp_path):
    """No line over 100 columns; after the profile table, at most 20 terminal rows of 100
    columns (what was merged in brief; every source in detail is `pypto-merge-traces -v`)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"), "--out", "out"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = (proc.stderr + proc.stdout).splitlines()
    # a command to paste is printed whole: only a line that ends in one, long because the
    # venv lies outside the directory it runs in (its path absolute), may pass 100 columns
    long = [x for x in lines if len(x) > 100]
    assert all(re.search(r"(^|\s)/\S*pypto-profile \w+ \S+$", x) for x in long), long
    title = lines.index("PyPTO Compile Profile")
    end = next(i for i in range(title + 4, len(lines)) if not lines[i])   # the table's end
    rows = sum(max(1, -(-len(ln) // 100)) for ln in lines[end + 1:])
    assert 5 <= rows <= 20, lines[end + 1:]
