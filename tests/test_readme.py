"""The README is a front page whose examples are true: every `console` block is run, in
order, in one fresh directory, and what it shows must still be the shape of what prints.

A block's `$ ` lines are commands (run by `sh` as pasted into a new shell, with `.venv/bin/`
meaning the interpreter that runs this suite); the lines after one are its output, with `...`
for lines left out. Shape: the same words and punctuation, any numbers (durations in any
unit), any run of spaces (none where a wider number took a column's padding), any text
where a line shows `…`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pasted_commands import run_pasted, shell_env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?: ?(?:ns|us|ms|s)\b)?")   # a duration in any unit

def console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ```console block as [(command, shown output lines)]."""
    blocks = []
    for body in re.findall(r"^```console\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"output before any command: {line!r}"
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def shape(line: str) -> re.Pattern:
    """`line` with any numbers (a duration in any unit), any run of spaces, and any text
    where it shows `…` (what differs from run to run, such as which host part is largest)."""
    def words(text: str) -> str:
        pieces = NUMBER.split(text)
        parts = []
        for i, piece in enumerate(pieces):
            # spaces beside a number pad a column: a wider number may take them all
            lead = r"\s*" if i > 0 and piece.startswith(" ") else ""
            trail = r"\s*" if i < len(pieces) - 1 and piece.endswith(" ") else ""
            inner = piece.lstrip(" ") if lead else piece
            inner = inner.rstrip(" ") if trail else inner
            if not inner:                        # only spaces between two numbers
                parts.append(r"\s*" if lead or trail else "")
                continue
            core = r"\s+".join(re.escape(w) for w in re.split(" +", inner))
            parts.append(lead + core + trail)
        return NUMBER.pattern.join(parts)

    return re.compile(".*".join(words(t) for t in line.rstrip().split("…")))


def mismatch(shown: list[str], actual: list[str]) -> str | None:
    """Why `actual` is not of `shown`'s shape (None when it is): each shown line matches the
    next actual line, or, after `...`, a later one; without a final `...` nothing is left."""
    at, skipping = 0, False
    for line in shown:
        if line == "...":
            skipping = True
            continue
        want = shape(line)
        while at < len(actual) and not want.fullmatch(actual[at].rstrip()):
            if not skipping:
                return f"line {at + 1} {actual[at]!r} is not of the shape of {line!r}"
            at += 1
        if at == len(actual):
            return f"no line of the shape of {line!r}"
        at, skipping = at + 1, False
    if not skipping and at < len(actual):
        return f"more output than shown, from {actual[at]!r}"
    return None


def test_the_readme_is_a_front_page():
    assert len(README.encode()) <= 10 * 1024
    for target in re.findall(r"\]\(([^)#]+)\)", README):       # pictures and doc links
        assert (ROOT / target).is_file(), target
    assert {"analysis", "commands", "merging", "placement", "tables", "DESIGN",
            "performance"} <= {Path(t).stem for t in re.findall(r"\]\((docs/[^)]+)\)", README)}


def test_the_shape_check_catches_a_changed_output():
    shown = ["wrote out/merged.json (341,308 bytes)", "..."]
    assert mismatch(shown, ["wrote out/merged.json (12 bytes)", "x"]) is None
    assert mismatch(shown, ["wrote out/merged.parquet (12 bytes)"]) is not None
    assert mismatch(["a 1", "b"], ["a 2", "b", "c"]) is not None        # nothing left over
    assert mismatch(["...", "b"], ["a", "b"]) is None
    assert mismatch(["a 1.5 ms", "b"], ["a 2 ms", "c"]) is not None
    assert mismatch(["took 1.2ms of 3 s"], ["took 876us of 2.5 s"]) is None
    assert mismatch(["  a     62.1ms  b"], ["  a 112.7ms b"]) is None      # any run of spaces
    assert mismatch(["  a  b"], ["  ab"]) is not None
    assert mismatch(["  x   108.1ms  ( 29.9%)"], ["  x  962.2ms  (125.6%)"]) is None   # padding
    assert mismatch(["a ( 29.9%)"], ["a (x29.9%)"]) is not None
    assert mismatch(["r0: host-bound (…)"], ["r0: host-bound (launch)"]) is None
    assert mismatch(["r0: host-bound (…)"], ["r0: compute-bound (AIC)"]) is not None


@pytest.mark.xdist_group("port_9001")      # `open` serves on 9001, as the main job's test does
def test_every_console_block_runs_and_prints_what_it_shows(tmp_path):
    blocks = console_blocks(README)
    assert len(blocks) >= 2
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = shell_env(tmp_path, PYTHONUNBUFFERED="1")   # stdout, stderr interleaved as shown
    for steps in blocks:
        for command, shown in steps:
            assert command.startswith(".venv/bin/"), command
            code, out, _ = run_pasted(command.replace(".venv/bin/", f"{BIN}/"), tmp_path, env,
                                      timeout=300, merged=True)
            assert code == 0, (command, out)
            actual = out.replace(f"{BIN}/", ".venv/bin/").splitlines()
            problem = mismatch(shown, actual)
            assert problem is None, f"{command}: {problem}\n{out}"
