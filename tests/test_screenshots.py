"""The README's pictures are what its commands produce: `tools/screenshots.py` runs the main
job as the README does and takes the pictures of its own `out/merged.pftrace` (opened as
`pypto-profile open --offline` opens it) and of `pypto-profile html out/many_kernels`, with
no temporary path anywhere in them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from repo_paths import REPO_ROOT

pytestmark = pytest.mark.perfetto_ui


def test_the_tool_pictures_the_main_jobs_own_outputs_in_the_order_the_work_flows(
        perfetto_ui, tmp_path):
    # perfetto_ui: the same requirements (Chromium, the offline UI); the tool drives its own
    # browser in a child process (one Playwright per thread)
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "screenshots.py"),
                           "--out", str(tmp_path / "images"), "--work", str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    groups = re.search(r"^timeline, top to bottom: (.+)$", out, re.MULTILINE).group(1)
    kinds = ["compile" if g.startswith("PyPTO compile") else "host" if "Host Orchestrator" in g
             else "device" if g.startswith("Device ") else g for g in groups.split(" | ")]
    assert kinds == ["compile", "host", "device", "device", "device"], groups
    assert "Critical path" not in groups          # the main job draws no critical path
    assert re.search(r"^report title: PyPTO run: out/many_kernels/report/pipeline_profile\.json$",
                     out, re.MULTILINE), out
    assert str(tmp_path) not in out.replace(str(tmp_path / "images"), "")
    for name in ("perfetto_timeline.png", "html_report.png"):
        png = (tmp_path / "images" / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert (tmp_path / "w" / "out" / "merged.pftrace").is_file()
