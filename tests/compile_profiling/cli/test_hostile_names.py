"""Kernel names are data from a capture's name map: in text output they never move the
cursor, clear the screen, set the terminal's title or forge a line; in a Markdown pull
request comment a backtick or a `|` in one never closes its code span or opens a column."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from simpler_fixtures import FIXTURES

HOSTILE = ["\x1b[2J\x1b[31mRED\x1b]0;title\x07", "line1\nFAKE: no regression\r",
           "tick`<b>|x"]
PROFILE = [sys.executable, "-m", "pypto.compile_profiling"]
MERGE = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces"]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    cap = tmp_path_factory.mktemp("hostile") / "cap"
    shutil.copytree(FIXTURES / "tmr_bgemm_case0_l4_depgen", cap)
    (name_map,) = cap.glob("name_map_*.json")
    doc = json.loads(name_map.read_text())
    ids = sorted(doc["callable_id_to_name"])
    doc["callable_id_to_name"] = {k: HOSTILE[i % len(HOSTILE)] for i, k in enumerate(ids)}
    name_map.write_text(json.dumps(doc))
    return cap


def _clean(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\r"), repr(text[:300])
    assert not any(line.startswith("FAKE") for line in text.splitlines())


@pytest.mark.parametrize("argv", [
    ["kernels", "{cap}"], ["kernels", "{cap}", "--format", "markdown"],
    ["analyze", "{cap}"], ["analyze", "{cap}", "--format", "markdown"],
    ["diff", "{cap}", "{cap}"], ["diff", "{cap}", "{cap}", "--format", "markdown"],
    ["query", "--preset", "kernels", "{cap}"],
], ids=lambda a: "-".join(x for x in a if "{" not in x))
def test_text_and_markdown_never_carry_a_names_control_characters(capture, argv):
    r = subprocess.run([*PROFILE, *(a.format(cap=capture) for a in argv)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    _clean(r.stdout)
    _clean(r.stderr)
    if "markdown" in argv:              # every code span closes on its own line
        for line in r.stdout.splitlines():
            assert line.count("`") % 2 == 0, line


def test_the_merges_kernel_lines_never_carry_them(capture, tmp_path):
    r = subprocess.run([*MERGE, str(capture), "-o", str(tmp_path / "m.json"), "--kernels"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    _clean(r.stderr)
    assert "\\x1b[2J" in r.stderr or "\\n" in r.stderr     # shown, escaped
