"""docs/dsl.md's whole program runs as written: parsed, compiled, run and checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from repo_paths import REPO_ROOT as REPO

DOC = (REPO / "docs" / "dsl.md").read_text()


def test_the_reference_program_runs_and_passes(tmp_path):
    (program,) = [b for b in re.findall(r"```python\n(.*?)```", DOC, re.DOTALL)
                  if "@pl.program" in b]
    script = tmp_path / "scale_shift.py"
    script.write_text(program)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, timeout=120,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PASS (")
    assert list(tmp_path.glob("build_output/ScaleShift_*/report/pipeline_profile.json"))
