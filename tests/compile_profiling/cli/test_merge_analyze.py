"""`pypto-merge-traces ... --analyze REPORT`: the analysis from what the merge read and
placed, the same report `pypto-profile analyze` writes, without reading anything twice."""

from __future__ import annotations

import pytest
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.cli.profile import main as profile_main


@pytest.mark.parametrize("case", CASES)
def test_the_report_is_analyze_s_own(case, tmp_path, capsys):
    capture = str(FIXTURES / case)
    assert merge_main([capture, "-o", str(tmp_path / "m.pftrace"), "--analyze",
                       str(tmp_path / "merged.json"), "-q"]) == 0
    assert profile_main(["analyze", capture, "--format", "json", "-o",
                         str(tmp_path / "alone.json")]) == 0
    assert (tmp_path / "merged.json").read_bytes() == (tmp_path / "alone.json").read_bytes()


def test_text_and_markdown_by_the_name(tmp_path, capsys):
    capture = str(FIXTURES / CASES[0])
    for name, fmt in (("r.txt", "text"), ("r.md", "markdown")):
        assert merge_main([capture, "-o", str(tmp_path / "m.json"), "--analyze",
                           str(tmp_path / name), "-q"]) == 0
        assert profile_main(["analyze", capture, "--format", fmt, "-o",
                             str(tmp_path / ("alone_" + name))]) == 0
        assert (tmp_path / name).read_text() == (tmp_path / ("alone_" + name)).read_text()


def test_the_merge_reads_and_joins_each_capture_once(tmp_path, monkeypatch):
    """The analysis reuses the merge's plan and device rows: the records are read once, and
    the rows (AICore joined to AICPU) are made once, by the merge."""
    from pypto.compile_profiling.analysis import explain
    from pypto.compile_profiling.trace_merge.read import read_inputs as module

    reads, joins = [], []
    read, join = module.read_inputs, explain.device_rows
    monkeypatch.setattr(module, "read_inputs", lambda *a, **k: reads.append(a) or read(*a, **k))
    monkeypatch.setattr(explain, "device_rows", lambda *a: joins.append(a) or join(*a))
    assert merge_main([str(FIXTURES / CASES[0]), "-o", str(tmp_path / "m.json"), "--analyze",
                       str(tmp_path / "r.json"), "-q"]) == 0
    assert len(reads) == 1 and joins == [] and (tmp_path / "r.json").stat().st_size > 0


@pytest.mark.parametrize("extra, words", [
    (["--analyze", "{out}"], "would write the report over the merged trace"),
])
def test_a_report_over_the_trace_is_refused(tmp_path, capsys, extra, words):
    out = str(tmp_path / "m.json")
    code = merge_main([str(FIXTURES / CASES[0]), "-o", out,
                       *[x.format(out=out) for x in extra]])
    assert code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("argv, words", [
    (["in", "--per-rank", "d", "--analyze", "r.txt"], "--analyze goes with -o"),
    (["--compare", "b", "n", "-o", "x.json", "--analyze", "r.txt"], "pypto-profile diff"),
])
def test_usage_mistakes_are_one_line(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        merge_main(argv)
    assert e.value.code == 2 and words in capsys.readouterr().err
