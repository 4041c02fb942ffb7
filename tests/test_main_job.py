"""The README's main job: examples/profile_end_to_end.py compiles, runs, merges and says how to open."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_main_job_profiles_runs_and_merges_into_json_and_protobuf(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"),
         "--example", "vector_dag", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "vector_dag: PASS" in out and "PyPTO Compile Profile" in out
    assert "calibrated by clock anchors" in out
    # the run's host log (today's span names): span containment checks the calibration
    assert re.search(r"dfx_outputs/host\.\d+\.log: run log, 3 \[STRACE\] host spans", out)
    assert re.search(r"span containment in \S+/host\.\d+\.log \(pid \d+ inv 1\) agrees", out)
    assert "linked 3 kernel_codegen stage(s) to their first device task" in out
    merged = json.loads((tmp_path / "merged.json").read_text())
    names = {e["args"]["name"] for e in merged["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert "PyPTO compile" in names
    assert any(n.startswith("Device r0 · AICore (calibrated") for n in names)
    assert (tmp_path / "merged.pftrace").stat().st_size > 0
    open_line = out.strip().splitlines()[-1].strip()
    assert open_line.startswith("pypto-merge-traces ") and open_line.endswith(" --open")
    assert str(tmp_path / "merged.pftrace") in open_line
