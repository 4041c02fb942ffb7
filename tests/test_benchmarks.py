"""The benchmark scripts still run: each one's CI-sized smoke run, its table checked for
every figure it promises (the figures themselves are the benchmark's business, not a
test's: the machines are shared and noisy)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from repo_paths import REPO_ROOT
from simpler_fixtures import CASES, FIXTURES

NUMBER = r"\d+(?:\.\d+)?"


@pytest.mark.skipif(not CASES, reason="no Simpler fixtures on this machine")
def test_the_formats_benchmark_smoke_run_prints_every_figure(tmp_path):
    r = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "bench_formats.py"),
                        "--smoke", "--source", str(FIXTURES / "tmr_bgemm_case0_l4_depgen")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert re.search(r"^2,000 tasks: [\d,]+ records", out, re.MULTILINE), out
    for fmt in ("json", "pftrace", "parquet"):
        row = re.search(rf"^  {fmt} +({NUMBER}) +({NUMBER}) +({NUMBER}) +({NUMBER}) +"
                        rf"({NUMBER}) +({NUMBER}) +({NUMBER}) +({NUMBER})$", out, re.MULTILINE)
        assert row, (fmt, out)
        cpu, user, _rss, size, floor, x_floor, _x_json, _x_user = map(float, row.groups())
        assert 0 < user <= cpu and size > 0 and 0 < floor
        # the printed figures are rounded (CPU to 0.01 s, the floor to 0.001 s)
        assert (cpu - 0.005) / (floor + 0.0005) - 0.005 <= x_floor \
            <= (cpu + 0.005) / (floor - 0.0005) + 0.005
    assert re.search(rf"orjson baseline \(.*\): {NUMBER} s CPU = {NUMBER}x the JSON floor; "
                     rf"the JSON merge is {NUMBER}x it", out), out
    assert re.search(rf"analyze alone {NUMBER} s CPU = {NUMBER}x the JSON merge; inside the "
                     rf"merge \(--analyze\) [+-]{NUMBER} s", out), out
    for layout in ("august", "today "):
        assert re.search(rf"placement read, {layout} layout: peak RSS +{NUMBER} MB, {NUMBER} "
                         rf"MB to the driver \(the records file read whole: {NUMBER} MB",
                         out), out
    assert "the targets are not judged" in out
    assert not list(tmp_path.iterdir())         # its captures and outputs in a temp dir
