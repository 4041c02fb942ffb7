"""Big runs: a cut to a time window or some ranks (`--window`, `--ranks`), the lighter defaults
past `SCALE_TASKS` device tasks, and the line that says a trace is past what the Perfetto UI
can be handed, from the merge and from `open`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from local_ports import free_port
from merge_inputs import FIXTURES

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.trace_merge import merge_traces, views
from pypto.compile_profiling.viewer import ui_limits

CASE = FIXTURES / "tmr_bgemm_case0_l4_depgen"      # 1000 tasks over 5.3 s


def _events(doc: dict) -> tuple[list, list, dict]:
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    flows = [e for e in doc["traceEvents"] if e.get("ph") in ("s", "f")]
    counters: dict = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "C":
            counters.setdefault((e["pid"], e["name"]), []).append((e["ts"], e["args"]))
    return slices, flows, counters


def _merge(capsys, *argv) -> tuple[int, list[str]]:
    code = merge_main([*map(str, argv)])
    return code, capsys.readouterr().err.splitlines()


def test_a_window_keeps_what_overlaps_it_whole_and_says_what_of_what(tmp_path, capsys):
    whole, part = tmp_path / "whole.json", tmp_path / "part.json"
    assert _merge(capsys, CASE, "-o", whole, "-q")[0] == 0
    code, err = _merge(capsys, CASE, "-o", part, "--window", "1s:2.5s")
    assert code == 0, err
    w, p = json.loads(whole.read_text()), json.loads(part.read_text())
    ws, wf, wc = _events(w)
    ps, pf, pc = _events(p)
    origin = min([e["ts"] for e in ws] + [t for c in wc.values() for t, _ in c])
    lo, hi = origin + 1e6, origin + 2.5e6                      # us, as the JSON holds them
    want = [e for e in ws if e["ts"] + e["dur"] >= lo and e["ts"] < hi]
    key = lambda e: (e["pid"], e["tid"], e["ts"], e["name"])
    assert sorted(map(key, ps)) == sorted(map(key, want))
    assert 0 < len(ps) < len(ws)
    assert {key(e): e["args"] for e in ps} == {key(e): e["args"] for e in want}  # whole, as is
    assert 0 < len(pf) < len(wf)
    for (pid, name), samples in pc.items():      # inside, plus the value in effect at lo
        inside = [(t, a) for t, a in wc[(pid, name)] if lo <= t < hi]
        before = [(t, a) for t, a in wc[(pid, name)] if t < lo]
        assert samples == ([(pytest.approx(lo), before[-1][1])] if before else []) + inside
    (line,) = [x for x in err if x.startswith("cut to ")]
    assert line.startswith("cut to 1.00 s to 2.50 s of ")
    assert f"kept {len(ps):,} of {len(ws):,} slices" in " ".join(err)
    assert p["otherData"]["cut"]["window_ns"] == [1_000_000_000, 2_500_000_000]


def test_open_ended_windows_and_a_window_past_the_end(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert _merge(capsys, CASE, "-o", out, "--window", ":500ms", "-q")[0] == 0
    head = _events(json.loads(out.read_text()))[0]
    assert _merge(capsys, CASE, "-o", out, "--window", "500ms:", "-q")[0] == 0
    tail = _events(json.loads(out.read_text()))[0]
    assert head and tail
    assert _merge(capsys, CASE, "-o", out, "--window", "1000s:2000s", "-q")[0] == 0
    assert _events(json.loads(out.read_text()))[0] == []       # nothing there: an empty part


@pytest.mark.parametrize("window, says", [
    ("10:20", "'10' is not a time with a unit"),
    ("2s:1s", "the end must come after the start"),
    ("1s", "give START:END"),
    (":", "give a start, an end or both"),
    ("1s:2s:3s", "give START:END"),
])
def test_a_bad_window_is_one_usage_line(tmp_path, capsys, window, says):
    with pytest.raises(SystemExit) as stop:
        merge_main([str(CASE), "-o", str(tmp_path / "m.json"), "--window", window])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pypto-merge-traces: error: argument --window: ") and says in err[-1]
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("argv, says", [
    (["--per-rank", "OUT", "--window", "1s:2s"], "--window and --ranks cut one merged file"),
    (["--compare", str(CASE), str(CASE), "-o", "OUT.json", "--ranks", "0"],
     "--window and --ranks cut one run's merge"),
    (["-o", "OUT.json", "--ranks", "0,x"], "give ranks as 0,3,5-7"),
    (["-o", "OUT.json", "--ranks", "5-2"], "runs backwards"),
])
def test_cut_options_that_do_not_fit_are_one_usage_line(tmp_path, capsys, argv, says):
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    with pytest.raises(SystemExit) as stop:
        merge_main(([str(CASE)] if "--compare" not in argv else []) + argv)
    assert stop.value.code == 2
    assert says in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks") / "dfx"
    for r, case in enumerate(("tmr_vector_example_l4_depgen", "tmr_bgemm_case0_l4_depgen")):
        shutil.copytree(FIXTURES / case, root / f"rank{r}" / "d0")
    return root


def test_ranks_keep_their_processes_and_refuse_ranks_not_there(two_ranks, tmp_path, capsys):
    whole = merge_traces([two_ranks]).timeline
    assert {p.rank for p in whole.processes} == {0, 1}
    out = tmp_path / "r1.json"
    code, err = _merge(capsys, two_ranks, "-o", out, "--ranks", "1")
    assert code == 0, err
    doc = json.loads(out.read_text())
    ranks = {p["pid"]: p for p in doc["otherData"]["processes"]}
    shown = {e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    rank_of = {p.pid: p.rank for p in whole.processes}
    assert shown and {rank_of[pid] for pid in shown} <= {1, None}
    assert {rank_of[pid] for pid in ranks} <= {1, None}
    want = sum(int(np.isin(b.track, [i for i, tr in enumerate(b.tracks)
                                      if tr.process.rank in (1, None)]).sum())
               for b in whole.blocks)
    assert len([e for e in doc["traceEvents"] if e.get("ph") == "X"]) == want
    assert any(x.startswith("cut to ranks 1 of 0-1 (--ranks)") for x in err), err
    code, err = _merge(capsys, two_ranks, "-o", out, "--ranks", "4-5")
    assert code == 2 and err == ["--ranks: no capture of rank 4-5 here (ranks 0-1)"]
    code, err = _merge(capsys, CASE, "-o", out, "--ranks", "0")
    assert code == 2 and err[0].startswith("--ranks: no capture here carries a rank")


def test_past_scale_tasks_the_defaults_are_light_and_say_what_they_leave_out(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(views, "SCALE_TASKS", 999)           # the capture holds 1000 tasks
    out = tmp_path / "m.json"
    code, err = _merge(capsys, CASE, "-o", out)
    assert code == 0, err
    doc = json.loads(out.read_text())
    cats = {e.get("cat") for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert cats - {"simpler_host"} == {"aicore"}              # the host side is not a view
    flows = {e.get("cat") for e in doc["traceEvents"] if e.get("ph") in ("s", "f")}
    assert flows == {"dependency"}
    note = " ".join(err)
    assert "1,000 device tasks (over 999): drawn light" in note
    for left in ("orchestrator", "scheduler", "scheduler-view", "setup", "dispatch", "complete"):
        assert left in note.split("left out:")[1]
    assert "--views all --flows all draws everything" in note
    # named views, Parquet, and the API by default: everything, no note
    code, err = _merge(capsys, CASE, "-o", out, "--views", "all", "--flows", "all")
    every = {e.get("cat") for e in json.loads(out.read_text())["traceEvents"]
             if e.get("ph") == "X"}
    assert {"aicore", "aicore_setup", "scheduler", "scheduler_view", "orchestrator"} <= every
    assert "drawn light" not in " ".join(err)
    assert _merge(capsys, CASE, "-o", tmp_path / "ds", "--format", "parquet", "-q")[0] == 0
    from pypto.compile_profiling.timeline.write_parquet import read_parquet_dataset

    cats = set(read_parquet_dataset(tmp_path / "ds")["slice"].column("category").to_pylist())
    assert {"scheduler", "scheduler_view", "orchestrator"} <= cats
    assert len(merge_traces([CASE]).timeline.blocks) > 1
    monkeypatch.setattr(views, "SCALE_TASKS", 1000)          # not over: as before
    code, err = _merge(capsys, CASE, "-o", out)
    assert "drawn light" not in " ".join(err)


def test_a_trace_past_the_ui_limit_is_said_by_the_merge(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ui_limits, "FETCH_LIMIT_BYTES", 100_000)
    out = tmp_path / "m.json"
    code, err = _merge(capsys, CASE, "-o", out, "-q")
    assert code == 0
    mine = err[:next(i for i, x in enumerate(err[1:], 1) if not x.startswith("    "))]
    text = " ".join(x.strip() for x in mine)
    assert text.startswith(f"warning: {out} is ") and "past the 0 MiB (2 GiB)" in text
    for way in ("--window START:END or --ranks LIST merge a part of it", ".pftrace is about",
                "pypto-profile query", "trace_processor --httpd"):
        assert way in text, text
    assert all(len(x) <= 100 for x in mine[1:])       # the first holds the path
    code, err = _merge(capsys, CASE, "-o", tmp_path / "m.pftrace", "-q")
    assert ".pftrace is about" not in " ".join(err)
    monkeypatch.setattr(ui_limits, "FETCH_LIMIT_BYTES", 2 * 2**30)
    code, err = _merge(capsys, CASE, "-o", out, "-q")
    assert not [x for x in err if "past the" in x]


def test_open_says_it_before_serving_a_trace_past_the_limit(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:                       # sparse: 2 GiB + 1 byte, no disk used
        f.truncate(2 * 2**30 + 1)
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "open", str(big),
                        "--no-browser", "--port", str(free_port()), "--timeout", "0.2"],
                       capture_output=True, text=True, check=False, timeout=60)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"warning: {big} is 2,147.5 MB (2,048.0 MiB), past the 2,048 MiB "
                            "(2 GiB) the Perfetto UI can download"), r.stderr
    assert "pypto-merge-traces INPUT... --window START:END (or --ranks LIST)" in first
    assert r.stdout.startswith("http://127.0.0.1:")      # then it serves, as asked


def test_the_cut_rows_and_arrows_are_the_whole_runs_rows(tmp_path):
    """The cut's arrows join the same slices the whole run's do (rows renumbered right)."""
    from pypto.compile_profiling.timeline.cut import Cut, cut_timeline

    tl = merge_traces([CASE]).timeline
    part, _ = cut_timeline(tl, Cut(1_000_000_000, 2_000_000_000))

    def ends(t):
        out = set()
        for f in t.flows:
            for s, d in zip(f.src_row.tolist(), f.dst_row.tolist()):
                out.add((f.cat, int(f.src.start_ns[s]), int(f.dst.start_ns[d])))
        return out
    whole_ends, part_ends = ends(tl), ends(part)
    assert part_ends and part_ends < whole_ends
    origin = min(int(b.start_ns.min()) for b in tl.blocks)
    lo, hi = origin + 1_000_000_000, origin + 2_000_000_000
    for b in part.blocks:
        assert np.all(b.start_ns + b.dur_ns >= lo) and np.all(b.start_ns < hi)


# What the UI v52 draws the overview bar and a collapsed process group's summary from: slices
# on thread tracks, per process (its `loadTimelineOverview` query, in our words).
_OVERVIEW_SQL = """
select p.name as process, count(*) as slices, sum(s.dur) as dur
from slice s join thread_track tt on s.track_id = tt.id join thread using (utid)
join process p using (upid)
group by p.name order by p.name
"""


@pytest.mark.perfetto_ui
def test_a_cut_loads_in_the_ui_and_both_formats_feed_its_overview_alike(perfetto_ui,
                                                                        tmp_path, capsys):
    """The cut's output opens in the offline UI without import errors; the .pftrace gives the
    overview bar and the groups' summaries what the JSON gives (every slice on a thread of
    its process)."""
    tl = merge_traces([CASE]).timeline
    from pypto.compile_profiling.timeline.cut import Cut, cut_timeline

    part, _ = cut_timeline(tl, Cut(1_000_000_000, 2_000_000_000))
    seen = {}
    for ext in (".pftrace", ".json"):
        out = tmp_path / f"part{ext}"
        assert _merge(capsys, CASE, "-o", out, "--window", "1s:2s", "-q")[0] == 0
        with perfetto_ui.load(out) as t:
            assert t.import_errors() == []
            assert t.slice_count() == part.slice_count
            seen[ext] = t.query(_OVERVIEW_SQL)
    assert seen[".pftrace"] == seen[".json"]
    assert sum(r["slices"] for r in seen[".json"]) == part.slice_count
