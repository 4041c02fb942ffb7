"""write_report under hostile input: all-or-nothing sets, strict JSON whatever the args, any depth."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling import CompileProfiler, chrome_trace

NAMES = ["pipeline_profile.json", "pipeline_profile.txt", "trace.json"]


def strict_load(path: Path):
    """Strict JSON and valid UTF-8: NaN/Infinity and lone surrogates are refused."""
    raw = path.read_bytes().decode("utf-8")  # raises on invalid UTF-8
    return json.loads(raw, parse_constant=lambda c: pytest.fail(f"{path.name}: {c}"))


def profile(name="s", args=None, depth=1):
    with CompileProfiler() as prof:
        stages = [prof._begin_stage(name if i == 0 else f"{name}{i}", args) for i in range(depth)]
        for _ in stages:
            prof._end_stage()
    return prof


def test_a_failed_write_keeps_the_previous_complete_set(tmp_path, monkeypatch):
    profile("first").write_report(tmp_path)
    before = {n: (tmp_path / n).read_bytes() for n in NAMES}

    def fail(self, stages):
        raise RuntimeError("boom")

    monkeypatch.setattr(chrome_trace._EventEmitter, "emit", fail)
    with pytest.raises(RuntimeError):
        profile("second").write_report(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == NAMES
    assert {n: (tmp_path / n).read_bytes() for n in NAMES} == before
    assert not [p for p in tmp_path.parent.iterdir() if p.name.startswith(f".{tmp_path.name}.")]


KILL_PROGRAM = """
import os, signal, sys
from pypto.compile_profiling import CompileProfiler, chrome_trace
real = chrome_trace._EventEmitter.emit
def emit_then_die(self, stages):
    real(self, stages)
    self.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9 part-way through the set
chrome_trace._EventEmitter.emit = emit_then_die
with CompileProfiler() as prof, prof.stage("second"):
    pass
prof.write_report(sys.argv[1])
"""


def test_kill_9_part_way_leaves_the_previous_set(tmp_path):
    out = tmp_path / "report"
    profile("first").write_report(out)
    before = {n: (out / n).read_bytes() for n in NAMES}
    proc = subprocess.run([sys.executable, "-c", KILL_PROGRAM, str(out)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
                          capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert {n: (out / n).read_bytes() for n in NAMES} == before
    profile("third").write_report(out)  # the next write succeeds and clears the leftovers
    assert json.loads((out / "pipeline_profile.json").read_text())["stages"][0]["name"] == "third"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_directory_holding_other_files_keeps_them(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    profile().write_report(tmp_path)
    profile("again").write_report(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(NAMES + ["notes.txt"])


def test_nan_inf_and_non_json_args_give_strict_json(tmp_path):
    class Opaque:
        def __repr__(self):
            return "<Opaque 7>"

    args = {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"), "obj": Opaque(),
            "set": {1}, "bytes": b"\x00", "big": 1 << 80, 3: "int key"}
    profile("s", args).write_report(tmp_path)
    data = strict_load(tmp_path / "pipeline_profile.json")
    got = data["stages"][0]["args"]
    assert got["nan"] is None and got["inf"] is None and got["ninf"] is None
    assert got["obj"] == "<Opaque 7>" and got["set"] == "{1}" and got["big"] == repr(1 << 80)
    assert got["bytes"] == repr(b"\x00") and got["3"] == "int key"
    trace = strict_load(tmp_path / "trace.json")
    (event,) = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert event["args"]["obj"] == "<Opaque 7>" and event["args"]["nan"] is None


def test_lone_surrogates_in_names_and_args_give_valid_utf8(tmp_path):
    profile("bad\ud800name", {"k\udfff": "v\ud800"}).write_report(tmp_path)
    data = strict_load(tmp_path / "pipeline_profile.json")
    assert data["stages"][0]["name"] == "bad\\ud800name"
    assert data["stages"][0]["args"] == {"k\\udfff": "v\\ud800"}
    trace = strict_load(tmp_path / "trace.json")
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["bad\\ud800name"]
    assert "bad\\ud800name" in (tmp_path / "pipeline_profile.txt").read_text(encoding="utf-8")


def test_deeply_nested_args_are_cut_not_a_recursion_error(tmp_path):
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    profile("s", {"deep": deep}).write_report(tmp_path)
    got = strict_load(tmp_path / "pipeline_profile.json")["stages"][0]["args"]["deep"]
    depth = 0
    while isinstance(got, list):
        got, depth = got[0], depth + 1
    assert 10 < depth < 100 and "nested deeper than" in got


def test_stage_nesting_past_the_recursion_limit_works_everywhere(tmp_path):
    depth_made = sys.getrecursionlimit() + 500  # any recursive writer would fail here
    prof = profile("d", depth=depth_made)
    prof.write_report(tmp_path)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 5000)  # for this test's reader only: json.loads recurses
    try:
        data = strict_load(tmp_path / "pipeline_profile.json")
        from_to_json = json.loads(prof.to_json())
    finally:
        sys.setrecursionlimit(limit)
    assert from_to_json["stages"][0]["name"] == "d"
    node, depth = data["stages"][0], 1
    while node["children"]:
        (node,) = node["children"]
        depth += 1
    assert depth == depth_made
    lines = (tmp_path / "pipeline_profile.txt").read_text().splitlines()
    stage_lines = [line for line in lines[4:] if "(unaccounted)" not in line]
    assert len(stage_lines) == depth_made
    assert stage_lines[-1].startswith("  " * depth_made + f"d{depth_made - 1}")
    trace = strict_load(tmp_path / "trace.json")
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == depth_made
    assert prof.stages[0].to_dict()["name"] == "d"
