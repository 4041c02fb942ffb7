"""Span containment (Simpler's `span_containment_v1`) and dispatch-identity pairing: the
exact offset and slack of every real capture, worked out here by hand from its log and its
records; refusals of artifacts that are not from one run; the interval rules; the
`aicpu_launch` narrowing; old root names; multi-rank trees paired by dispatch identity."""

from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction

import pytest
from host_log_rewrite import RANK_CASES, multi_rank_tree, original, today
from merge_inputs import CASES, ESTIMATED, FIXTURES, compile_trace_around

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.containment import (
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
    join_origin,
)
from pypto.compile_profiling.trace_merge.read_run_log import RunLog
from pypto.errors import TraceInputError

pytestmark = pytest.mark.skipif(not CASES, reason="no Simpler fixtures on this machine")

STRACE = re.compile(r"\[STRACE\] .*?name=(\S+) ts=(\d+) dur=(\d+)")


# ------------------------------------------------------------------ by hand, from the files

def by_hand(log_text: str, records: dict, launch_ns: int | None = None) -> dict:
    """Simpler's rule written out: the records' extent and stream windows (positive cycles),
    the brackets each (log sub-phase, stream) pair and device_wall put on the origin cycle,
    the placement inside runner_run (after the launch marker), the drawn block's start."""
    spans = {m.group(1): (int(m.group(2)), int(m.group(3)))
             for m in (STRACE.search(line) for line in log_text.splitlines()) if m}
    f = records["metadata"]["clock_freq_hz"]
    sched = [c for thread in records.get("aicpu_scheduler_phases", []) for p in thread
             for c in (p["start_cycles"], p["end_cycles"])]
    orch = [c for thread in records.get("aicpu_orchestrator_phases", []) for p in thread
            for c in (p["start_cycles"], p["end_cycles"])]
    cycles = [c for r in records["aicore_tasks"] for c in (r[3] - r[5], r[3], r[4])]
    cycles += [c for r in records.get("aicpu_tasks", []) for c in (r[2], r[3])]
    cycles = [c for c in cycles + sched + orch if c > 0]
    extent = (min(cycles), max(cycles))
    wall = "chip.run.runner_run.device_wall"
    phases = {k[len(wall) + 1:]: v for k, v in spans.items()
              if k.startswith(wall + ".") and v[1] > 0}
    brackets = [((0, spans[wall][1]), extent)]
    if sched:
        brackets.append((phases["sched"], (min(sched), max(sched))))
    if orch:
        brackets.append((phases["orch"], (min(orch), max(orch))))
    ns = Fraction(10**9, f)
    hi = min(first - start / ns for (start, _), (first, _) in brackets)
    lo = max(last - (start + dur) / ns for (start, dur), (_, last) in brackets)
    assert lo <= hi
    origin = (lo + hi) / 2
    drawn = [(c - origin) * ns for c in extent]
    drawn += [Fraction(v) for ts, dur in phases.values() for v in (ts, ts + dur)]
    head = min(Fraction(0), min(drawn))
    device = max(Fraction(spans[wall][1]), max(drawn)) - head
    rr_start, rr_dur = spans["chip.run.runner_run"]
    start = max(rr_start, launch_ns) if launch_ns is not None else rr_start
    return {"offset_ns": round(start - head - origin * ns),
            "slack_ns": round(rr_start + rr_dur - device - start),
            "residual_ns": round((hi - lo) * ns), "runner_run": (rr_start, rr_start + rr_dur),
            "first_cycles": min(r[3] for r in records["aicore_tasks"]), "extent": extent,
            "ns_per_cycle": ns}


def records(case) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


def log_text(case) -> str:
    return (FIXTURES / case / "host_log.txt").read_text()


def aicore(tl, label=None):
    return [s for s in tl.slices() if s.cat == "aicore" and (label is None or label in
                                                             s.process.name)]


def alignment(tl, label=None) -> dict:
    return next(p for p in tl.processes if "AICore" in p.name and (
        label is None or label in p.name)).args["alignment"]


# ------------------------------------------------------------------ the real captures

@pytest.mark.parametrize("case", ESTIMATED)
def test_offset_and_slack_of_each_real_capture_to_the_nanosecond(case):
    want = by_hand(log_text(case), records(case))
    tl = merge_traces([FIXTURES / case]).timeline
    got = alignment(tl)
    assert (got["status"], got["method"]) == ("contained", "span_containment_v1")
    assert got["offset_ns"] == want["offset_ns"]
    assert got["slack_ns"] == want["slack_ns"] == got["uncertainty_ns"]
    assert got["join"]["residual_ns"] == want["residual_ns"]
    first = min(s.start_ns for s in aicore(tl))
    assert first == want["first_cycles"] * want["ns_per_cycle"] + want["offset_ns"]
    assert f"(contained, slack {want['slack_ns'] / 1e6:.1f} ms)" in aicore(tl)[0].process.name


def test_the_by_hand_rule_itself_on_one_capture():
    """The numbers of tmr_vector_example_l4_depgen, typed in: its sched window starts 51460
    ns into device_wall, its first sched record is cycle 33785211413 (50 MHz)... the result
    of the rule as Simpler states it, so `by_hand` cannot drift with the code."""
    want = by_hand(log_text("tmr_vector_example_l4_depgen"),
                   records("tmr_vector_example_l4_depgen"))
    assert (want["offset_ns"], want["slack_ns"], want["residual_ns"]) == (
        -197_473_949, 137_038_271, 2_100)


def test_a_log_and_a_capture_of_different_runs_are_refused_in_one_line(tmp_path, capsys):
    cap = tmp_path / "cap"
    cap.mkdir()
    shutil.copy(FIXTURES / "tmr_mixed_example_case1_l4_depgen" / "chip_swimlane_records.json",
                cap)
    shutil.copy(FIXTURES / "tmr_vector_example_l4_depgen" / "host_log.txt", cap)
    with pytest.raises(TraceInputError) as e:
        merge_traces([cap])
    rec, log = cap / "chip_swimlane_records.json", cap / "host_log.txt"
    assert e.value.path == str(rec)
    assert f"and {log} (pid 16547 inv 1) cannot describe one run: the device windows" in str(
        e.value)
    out = tmp_path / "m.pftrace"
    assert merge_main([str(cap), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{rec}: and {log} ") and not out.exists()


# ------------------------------------------------------------------ the interval rules

def window(phases=None, wall=1000, start=10_000, dur=5000, launch=None) -> HostWindow:
    return HostWindow(RunLog("log"), 7, 1, "chip.run", start, dur, wall, phases or {}, None,
                      None, launch, None)


def capture(extent, **windows) -> CaptureWindows:
    return CaptureWindows("rec", 1_000_000_000, extent, windows)   # 1 GHz: a cycle is a ns


def test_join_brackets_nested_touching_disjoint_and_inverted():
    # nested: the sched bracket [400, 420] inside device_wall's [120, 420]
    j = join_origin(window({"sched": (80, 600)}), capture((420, 1120), sched=(500, 1080)))
    assert (j.lo, j.hi, j.origin) == (400, 420, 410) and j.sources == ("sched", "device_wall")
    # touching: the brackets share one cycle, the origin is exact
    j = join_origin(window({"sched": (0, 500)}, wall=1000), capture((400, 1400), sched=(400, 900)))
    assert j.lo == j.hi == 400
    # disjoint: sched says [500, 600], device_wall [0, 100]: not one run
    with pytest.raises(NotOneRun, match="do not overlap"):
        join_origin(window({"sched": (0, 100)}, wall=1000), capture((100, 1100), sched=(600, 700)))
    # inverted: the records are longer than the window that must hold them
    with pytest.raises(NotOneRun, match="do not overlap"):
        join_origin(window(wall=100), capture((0, 500)))


def test_placement_inside_runner_run_after_the_launch_and_inside_a_stage():
    w, cap = window(wall=1000, start=10_000, dur=5000), capture((1000, 1500))
    c = contain(w, cap)
    # origin 750 (device_wall brackets [500, 1000]); the block [0, 1000] in [10000, 15000]
    assert (c.join.origin, c.head_ns, c.extent_ns) == (750, 0, 1000)
    assert (c.place_lo_ns, c.slack_ns, c.cycle_offset_ns()) == (10_000, 4000, 9250)
    c = contain(window(wall=1000, start=10_000, dur=5000, launch=12_000), cap)
    assert (c.place_lo_ns, c.slack_ns) == (12_000, 2000)
    # a stage: nested narrows, touching leaves no slack, disjoint is dropped and named
    records_at = 250                       # the records start 250 ns into the block
    c = contain(w, cap, [(11_000 + records_at, 20_000, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns, c.dropped) == (11_000, 3000, [])
    c = contain(w, cap, [(14_000 + records_at, 14_000 + records_at + 500, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns) == (14_000, 0)
    c = contain(w, cap, [(0, 5000, "inside its stage")])
    assert (c.place_lo_ns, c.slack_ns) == (10_000, 4000)
    assert c.dropped and c.dropped[0].startswith("inside its stage: it excludes")


def test_a_conflicting_launch_marker_or_device_wall_is_dropped_and_named():
    cap = capture((1000, 1500))
    c = contain(window(wall=1000, start=10_000, dur=5000, launch=14_500), cap)
    assert c.place_lo_ns == 10_000 and "aicpu_launch marker at 14500" in c.dropped[0]
    # device_wall longer than runner_run: the records and sub-phases still fit
    c = contain(window(wall=9000, start=10_000, dur=5000), capture((5000, 5500)))
    assert "device_wall" in c.dropped[0] and c.extent_ns <= 5000
    with pytest.raises(NotOneRun, match="does not fit"):
        contain(window(wall=9000, start=10_000, dur=5000), capture((0, 9000)))


# ------------------------------------------------------------------ today's host logs

@pytest.mark.parametrize("case", CASES)
def test_the_log_rewrite_is_undone_exactly(case):
    text = log_text(case)
    for kw in ({}, {"identity": (41, 3, 1, 7), "launch_after_ns": 5_000_000},
               {"root": "simpler_run", "pid": 4242, "inv": 9, "shift_ns": 123_456_789}):
        new = today(text, **kw)
        assert new != text and original(new) == text
    both = "\n".join([today(text, identity=(1, 1, 0, 1)), today(text, inv=2, shift_ns=10)])
    assert original(both) == f"{text}\n{text}"


@pytest.mark.parametrize("root", ["simpler_run", "run_prepared"])
def test_older_root_names_are_read_the_same(tmp_path, root):
    case = "tmr_mixed_example_case1_l4_depgen"
    shutil.copytree(FIXTURES / case, tmp_path / "cap")
    (tmp_path / "cap" / "host_log.txt").write_text(today(log_text(case), root=root))
    got = alignment(merge_traces([tmp_path / "cap"]).timeline)
    want = by_hand(log_text(case), records(case))
    assert (got["offset_ns"], got["slack_ns"]) == (want["offset_ns"], want["slack_ns"])
    assert got["outer_span"] == f"{root}.runner_run"


@pytest.mark.parametrize("case", ESTIMATED)
def test_the_aicpu_launch_marker_narrows_the_placement(tmp_path, case):
    base = by_hand(log_text(case), records(case))
    after = min(5_000_000, base["slack_ns"] // 2)
    shutil.copytree(FIXTURES / case, tmp_path / "cap")
    (tmp_path / "cap" / "host_log.txt").write_text(
        today(log_text(case), identity=(41, 1, 0, 1), launch_after_ns=after))
    tl = merge_traces([tmp_path / "cap"]).timeline
    got = alignment(tl)
    launch = base["runner_run"][0] + after
    want = by_hand(log_text(case), records(case), launch_ns=launch)
    assert got["slack_ns"] == want["slack_ns"] == base["slack_ns"] - after
    assert got["offset_ns"] == want["offset_ns"] == base["offset_ns"] + after
    assert (got["aicpu_launch_ns"], got["causal_constraint"]) == (
        launch, "aicpu_launch<=device_start")
    assert min(s.start_ns for s in aicore(tl)) >= launch


def test_a_launch_marker_that_leaves_no_room_is_dropped_and_named(tmp_path):
    case = "tmr_vector_example_l4_depgen"
    base = by_hand(log_text(case), records(case))
    shutil.copytree(FIXTURES / case, tmp_path / "cap")
    (tmp_path / "cap" / "host_log.txt").write_text(
        today(log_text(case), launch_after_ns=base["slack_ns"] + 1))
    r = merge_traces([tmp_path / "cap"])
    got = alignment(r.timeline)
    assert (got["offset_ns"], got["slack_ns"]) == (base["offset_ns"], base["slack_ns"])
    assert "aicpu_launch" not in got
    assert any("placement constraint dropped: the aicpu_launch marker" in w
               for w in r.warnings)


def test_a_device_execution_stage_that_excludes_the_run_is_dropped_and_named(tmp_path):
    """Issue 22 item 15: a constraint that conflicts with the others is named, not hidden
    in a wider bound. Here the compile trace's device_execution (same pid) ends before the
    run log's runner_run starts."""
    case = FIXTURES / "tmr_vector_example_l4_depgen"
    compile_trace_around(case, tmp_path / "trace.json")
    doc = json.loads((tmp_path / "trace.json").read_text())
    ex = next(e for e in doc["traceEvents"] if e.get("name") == "device_execution")
    ex["dur"] = 1000.0          # 1 ms from its start: over before runner_run begins
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    r = merge_traces([tmp_path / "trace.json", case])
    want = by_hand(log_text(case.name), records(case.name))
    got = alignment(r.timeline)
    assert (got["offset_ns"], got["slack_ns"]) == (want["offset_ns"], want["slack_ns"])
    assert got["dropped_constraints"] == [
        "inside its run's device_execution stage: it excludes chip.run.runner_run's placement"]
    assert any("placement constraint dropped: inside its run's device_execution stage" in w
               for w in r.warnings)


# ------------------------------------------------------------------ dispatch identity

def _ranks(tl) -> dict:
    return {rank: aicore(tl, f"r{rank}d0") for rank in range(len(RANK_CASES))}


def test_a_multi_rank_tree_pairs_each_rank_by_its_dispatch_identity(tmp_path):
    """Two ranks, each process ran two dispatches of the same shape: only the sidecar's two
    keys together (host_pid: which process; the dispatch: which of its invocations) name
    one invocation, and each rank lands inside that invocation's runner_run."""
    want = multi_rank_tree(tmp_path)
    r = merge_traces([tmp_path])
    for rank, rows in _ranks(r.timeline).items():
        lo, hi = want[rank]["runner_run"]
        assert rows and lo <= min(s.start_ns for s in rows) and max(s.end_ns for s in rows) <= hi
        got = alignment(r.timeline, f"r{rank}d0")
        assert (got["outer_pid"], got["outer_inv"]) == (want[rank]["pid"], 1)
        assert "paired by dispatch identity" in got["reason"]
        assert got["slack_ns"] == by_hand(log_text(RANK_CASES[rank]),
                                          records(RANK_CASES[rank]))["slack_ns"]
    # each invocation's clk=dev spans on a lane of its own: 2 processes x 2 invocations
    lanes = [t.name for t in r.timeline.tracks if t.name.startswith("device clock inv")
             and "(overlap" not in t.name]
    assert len(lanes) == 4 and sum("contained" in n for n in lanes) == 2


def test_each_simpler_host_process_says_which_rank_it_ran(tmp_path):
    """Issue 22: "Simpler host (pid N)" said nothing of its rank. Each process is named
    after the captures its runs made (the one whose invocation a capture was paired with),
    in its name and args; a process that ran no capture keeps the plain name."""
    want = multi_rank_tree(tmp_path)
    tl = merge_traces([tmp_path]).timeline
    hosts = {p.os_pid: p for p in tl.processes if p.name.startswith("Simpler host")}
    assert {pid: p.name for pid, p in hosts.items()} == {
        want[r]["pid"]: f"Simpler host r{r}d0 (pid {want[r]['pid']})" for r in want}
    assert all(p.args["ranks"] == [f"r{r}d0"] for r in want for p in [hosts[want[r]["pid"]]])
    alone = tmp_path / "alone"                # its run log without a capture: no rank
    alone.mkdir()
    shutil.copy(FIXTURES / RANK_CASES[0] / "host_log.txt", alone)
    (p,) = [p for p in merge_traces([alone / "host_log.txt"]).timeline.processes
            if p.name.startswith("Simpler host")]
    assert p.name == f"Simpler host (pid {want[0]['pid']})" and "ranks" not in p.args


def test_the_sidecar_names_the_invocation_not_the_timing(tmp_path):
    """Rank 0's sidecar names its process's second dispatch: it lands there, 2 s later."""
    want = multi_rank_tree(tmp_path)
    side = tmp_path / "dfx_outputs" / "rank0" / "d0" / "dispatch_identity.json"
    doc = json.loads(side.read_text())
    doc.update(endpoint_dispatch_id=2, pipeline_slot=1, pipeline_generation=2)
    side.write_text(json.dumps(doc))
    tl = merge_traces([tmp_path]).timeline
    lo, hi = (t + 2_000_000_000 for t in want[0]["runner_run"])
    rows = _ranks(tl)[0]
    assert lo <= min(s.start_ns for s in rows) and max(s.end_ns for s in rows) <= hi
    assert alignment(tl, "r0d0")["outer_inv"] == 2


@pytest.mark.parametrize("sidecars", [None, "host_pid"])
def test_runs_of_one_shape_without_a_full_identity_are_refused_as_ambiguous(tmp_path,
                                                                            sidecars):
    multi_rank_tree(tmp_path, sidecars=sidecars)
    with pytest.raises(TraceInputError, match="pairs ambiguously with the run log's "
                                              "invocations"):
        merge_traces([tmp_path])


def test_without_sidecars_a_window_fit_pairs_runs_of_different_shapes(tmp_path):
    want = multi_rank_tree(tmp_path, sidecars=None, repeat=False)
    tl = merge_traces([tmp_path]).timeline
    for rank, rows in _ranks(tl).items():
        lo, hi = want[rank]["runner_run"]
        assert lo <= min(s.start_ns for s in rows) and max(s.end_ns for s in rows) <= hi
        assert "window fit" in alignment(tl, f"r{rank}d0")["reason"]


def test_a_converted_trace_is_contained_like_its_records(tmp_path):
    """Simpler's converted trace (ns from its own origin, read as 1 GHz cycles) joins to the
    log's sub-phases through its AICPU Scheduler / Orchestrator views: the same slack, and
    its first slice where the records' first cycle goes."""
    case = "tmr_vector_example_l4_depgen"
    for name in ("merged_swimlane.json", "host_log.txt"):
        (tmp_path / "conv").mkdir(exist_ok=True)
        shutil.copy(FIXTURES / case / name, tmp_path / "conv" / name)
    tl = merge_traces([tmp_path / "conv"]).timeline
    want = by_hand(log_text(case), records(case))
    procs = [p for p in tl.processes if p.name.startswith("Device")]
    assert procs and all("(contained, slack 137.0 ms)" in p.name for p in procs)
    assert procs[0].args["alignment"]["slack_ns"] == want["slack_ns"]
    dev = [s for s in tl.slices() if s.process in procs]
    assert min(s.start_ns for s in dev) == \
        want["extent"][0] * want["ns_per_cycle"] + want["offset_ns"]


def test_a_bad_dispatch_identity_is_refused_naming_it(tmp_path):
    multi_rank_tree(tmp_path)
    side = tmp_path / "dfx_outputs" / "rank1" / "d0" / "dispatch_identity.json"
    doc = json.loads(side.read_text())
    doc["host_pid"] = "22981"
    side.write_text(json.dumps(doc))
    with pytest.raises(TraceInputError, match=r"\$\.host_pid") as e:
        merge_traces([tmp_path])
    assert e.value.path == str(side)


def test_calibration_is_checked_against_span_containment(tmp_path):
    """A calibrated capture with its run log: the summary says where the anchors put it
    within what containment allows; a log whose runner_run starts after the anchored
    records is warned about (the anchors are used)."""
    case = "hbg_vector_example_l4_depgen"
    r = merge_traces([FIXTURES / case])
    line = next(x for x in r.summary_lines if "calibrated by clock anchors" in x)
    assert "(pid 17544 inv 1) agrees: 8388.6 us before its earliest placement" in line
    shutil.copytree(FIXTURES / case, tmp_path / "cap")
    log = tmp_path / "cap" / "host_log.txt"
    log.write_text(re.sub(r"(name=chip\.run\.runner_run ts=)(\d+)",
                          lambda m: m.group(1) + str(int(m.group(2)) + 200_000_000),
                          log.read_text()))
    r = merge_traces([tmp_path / "cap"])
    assert alignment(r.timeline)["status"] == "calibrated"
    assert any("its clock anchors put it 208.4 ms before the earliest placement span "
               "containment" in w for w in r.warnings)
