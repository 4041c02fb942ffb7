"""Two runs on one timeline (`pypto-merge-traces --compare BASE NEW`): named, ids apart,
lined up where asked, nothing lost; as one trace or a ZIP of the two, both opening in the
Perfetto UI without import errors."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import pytest

from examples import compare_runs as example
from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.compare import compare_runs
from pypto.compile_profiling.trace_merge.lay_out.side_by_side import align_point


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """One run of the example with 16 AIV cores, one with 4 (modelled time)."""
    out = tmp_path_factory.mktemp("compare")
    example.make_runs(out, 1, 16, 4)
    return out / "base" / "run0", out / "new" / "run0"


def _first(timeline, cat: str, label: str) -> int:
    return min(int(b.start_ns.min()) for b in timeline.blocks
               if b.cat == cat and b.tracks[0].process.name.startswith(label + ": "))


@pytest.mark.parametrize("at, cat", [("device", "aicore"), ("compile", "compile")])
def test_the_runs_line_up_where_asked(two_runs, at, cat):
    both = compare_runs(*two_runs, at=at).timeline
    assert _first(both, cat, "base") == _first(both, cat, "new")
    alone = [merge_traces([p]).timeline for p in two_runs]
    assert align_point(alone[0], at, "b") == _first(both, cat, "base")   # base stays put


def test_nothing_is_lost_and_ids_never_meet(two_runs):
    alone = [merge_traces([p]).timeline for p in two_runs]
    both = compare_runs(*two_runs).timeline
    assert both.slice_count == sum(t.slice_count for t in alone)
    assert both.flow_count == sum(t.flow_count for t in alone)
    assert len(both.counters) == sum(len(t.counters) for t in alone)
    names = [p.name for p in sorted(both.processes, key=lambda p: p.sort_index)]
    half = len(alone[0].processes)
    assert all(n.startswith("base: ") for n in names[:half])
    assert all(n.startswith("new: ") for n in names[half:])
    assert len({p.pid for p in both.processes}) == len(both.processes)
    assert len({t.tid for t in both.tracks}) == len(both.tracks)
    # durations untouched: the new run was moved, not stretched
    new_durs = np.sort(np.concatenate([b.dur_ns for b in both.blocks
                                       if b.tracks[0].process.name.startswith("new: ")]))
    assert np.array_equal(new_durs, np.sort(np.concatenate([b.dur_ns for b in
                                                             alone[1].blocks])))
    meta = both.metadata["compare"]
    assert meta["aligned_at"] == "device" and meta["base"] == str(two_runs[0])


def test_the_cli_writes_one_trace_or_an_archive(two_runs, tmp_path, capsys):
    b, n = map(str, two_runs)
    assert merge_main(["--compare", b, n, "-o", str(tmp_path / "both.pftrace")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("base: merged 1 compile trace")
    assert any(line.startswith("new:   r0: 15 tasks") for line in err)
    assert merge_main(["--compare", b, n, "-o", str(tmp_path / "both.zip"), "-q"]) == 0
    with zipfile.ZipFile(tmp_path / "both.zip") as z:
        assert sorted(z.namelist()) == ["base.pftrace", "new.pftrace"]


@pytest.mark.parametrize("argv, words", [
    (["--compare", "B", "N", "extra", "-o", "x.json"], "give no other INPUT"),
    (["--compare", "B", "N", "--per-rank", "d"], "not --per-rank"),
    (["--compare", "B", "N", "--align", "start", "-o", "x.json"],
     "--align says where the two runs line up"),
    (["in", "--align", "compile", "-o", "x.json"], "it goes with --compare"),
    (["-o", "x.json"], "or --compare BASE NEW"),
])
def test_usage_mistakes_are_one_line(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        merge_main(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


def test_a_run_without_the_alignment_point_is_refused_by_name(two_runs, tmp_path, capsys):
    capture = two_runs[1] / "dfx_outputs"
    code = merge_main(["--compare", str(two_runs[0]), str(capture), "--align", "compile",
                       "-o", str(tmp_path / "x.json")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"{capture}: no compile stage (no compile trace among its inputs) to "
                   "align the runs at: try --align device")
    assert not (tmp_path / "x.json").exists()


def test_a_zip_takes_no_format(two_runs, tmp_path, capsys):
    code = merge_main(["--compare", *map(str, two_runs), "-o", str(tmp_path / "x.zip"),
                       "--format", "json"])
    assert code == 2 and "leave --format out" in capsys.readouterr().err


def test_a_zip_into_a_missing_directory_is_made_and_an_unwritable_one_is_one_line(
        two_runs, tmp_path, capsys):
    """As the .pftrace and .json writers do: a missing directory is created; one that
    cannot be written is one line naming it and exit 1, never a traceback."""
    out = tmp_path / "new" / "dir" / "both.zip"
    assert merge_main(["--compare", *map(str, two_runs), "-o", str(out), "-q"]) == 0
    assert zipfile.ZipFile(out).namelist()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):                   # root writes anywhere: make it a file
        locked.rmdir()
        locked.write_text("")
    capsys.readouterr()
    code = merge_main(["--compare", *map(str, two_runs), "-o", str(locked / "both.zip"), "-q"])
    err = capsys.readouterr().err
    assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err
    assert str(locked) in err


@pytest.mark.perfetto_ui
@pytest.mark.parametrize("name", ["both.pftrace", "both.json", "both.zip"])
def test_both_runs_open_in_perfetto(perfetto_ui, two_runs, tmp_path, name):
    out = tmp_path / name
    assert merge_main(["--compare", *map(str, two_runs), "-o", str(out), "-q"]) == 0
    t = perfetto_ui.load(out)
    assert t.import_errors() == []
    alone = [merge_traces([p]).timeline for p in two_runs]
    assert t.slice_count() == sum(x.slice_count for x in alone)
    names = t.process_names()
    assert sum(n.startswith("base: ") for n in names) == len(alone[0].processes)
    assert sum(n.startswith("new: ") for n in names) == len(alone[1].processes)
    first = {}
    for s in t.slices("category = 'aicore'"):
        label = s["process_name"].split(":")[0]
        first[label] = min(first.get(label, s["ts"]), s["ts"])
    assert sorted(first) == ["base", "new"] and first["base"] == first["new"]
