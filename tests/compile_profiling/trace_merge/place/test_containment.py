"""Span containment (Simpler's `span_containment_v1`) and dispatch-identity pairing: the
exact offset, slack and offset interval of every real capture, worked out here by hand from
its log and its records; the interval holds the true offset on every capture; refusals of
artifacts that are not from one run; the interval rules; the `aicpu_launch` narrowing; old
root names; multi-rank trees paired by dispatch identity."""

from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction

import numpy as np
import pytest
from host_log_rewrite import RANK_CASES, multi_rank_tree, original, today
from merge_inputs import CASES, ESTIMATED, FIXTURES, compile_trace_around

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.place.containment import (
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
    host_windows,
    join_origin,
)
from pypto.compile_profiling.trace_merge.place.pairing import Candidate, PairingError, pair
from pypto.compile_profiling.trace_merge.place.plan import fmt_interval
from pypto.compile_profiling.trace_merge.read.read_run_log import RunLog, StraceSpan
from pypto.errors import TraceInputError

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
    if sched and "sched" in phases:
        brackets.append((phases["sched"], (min(sched), max(sched))))
    if orch and "orch" in phases:
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
    # the offset interval: records inside runner_run (and after the launch marker); the
    # sub-phases (device_wall's own length not among them) inside it, for any origin in
    # [lo, hi]
    p_lo = min([0] + [ts for ts, _ in phases.values()])
    p_hi = max([0] + [ts + dur for ts, dur in phases.values()])
    first_c, last_c = extent
    lows = [start - first_c * ns, start - p_lo - hi * ns]
    highs = [rr_start + rr_dur - last_c * ns, rr_start + rr_dur - p_hi - lo * ns]
    return {"offset_ns": round(start - head - origin * ns),
            "offset_lo_ns": int(np.floor(max(lows))), "offset_hi_ns": int(np.ceil(min(highs))),
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
    assert got["slack_ns"] == want["slack_ns"]
    assert (got["offset_lo_ns"], got["offset_hi_ns"]) == (want["offset_lo_ns"],
                                                          want["offset_hi_ns"])
    assert got["offset_lo_ns"] <= got["offset_ns"] <= got["offset_hi_ns"]
    # the largest error of the drawn placement (the published ends are rounded outwards)
    assert abs(got["uncertainty_ns"] - max(got["offset_ns"] - got["offset_lo_ns"],
                                           got["offset_hi_ns"] - got["offset_ns"])) <= 1
    assert got["join"]["residual_ns"] == want["residual_ns"]
    first = min(s.start_ns for s in aicore(tl))
    assert first == want["first_cycles"] * want["ns_per_cycle"] + want["offset_ns"]
    label = fmt_interval(want["offset_lo_ns"] - want["offset_ns"],
                         want["offset_hi_ns"] - want["offset_ns"])
    assert f"(contained {label})" in aicore(tl)[0].process.name


@pytest.mark.parametrize("case", CASES)
def test_the_offset_interval_holds_the_true_offset_on_every_real_capture(case, tmp_path):
    """Ground truth: on Simpler's a2a3 simulator the device counter is the host's
    CLOCK_MONOTONIC in cycles, so the true offset is 0 (the three captures with clock
    anchors say so to within their ±30 ns). Every capture, the anchored ones with their
    anchors removed, placed by containment alone: its interval holds 0."""
    cap = tmp_path / case
    shutil.copytree(FIXTURES / case, cap)
    rec = records(case)
    rec["metadata"].pop("clock_anchors", None)
    (cap / "chip_swimlane_records.json").write_text(json.dumps(rec))
    got = alignment(merge_traces([cap]).timeline)
    assert got["status"] == "contained"
    assert got["offset_lo_ns"] <= 0 <= got["offset_hi_ns"], got
    want = by_hand(log_text(case), rec)
    assert (got["offset_lo_ns"], got["offset_hi_ns"]) == (want["offset_lo_ns"],
                                                          want["offset_hi_ns"])


def test_device_walls_own_length_is_named_not_relied_on():
    """tmr_vector_example_l4_depgen: its device_wall (280.8 ms) starts 197 ms into a 417.8 ms
    runner_run, so it ends 60 ms after it. Taking device_wall's end inside runner_run as a
    bound would exclude the truth; it is named, with where it would cut, and not used."""
    case = "tmr_vector_example_l4_depgen"
    got = alignment(merge_traces([FIXTURES / case]).timeline)
    assert got["offset_lo_ns"] <= 0 <= got["offset_hi_ns"]
    assert got["offset_hi_ns_if_device_wall_inside"] < 0      # it would have missed it


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
    how = procs[0].args["alignment"]
    label = fmt_interval(how["offset_lo_ns"] - how["offset_ns"],
                         how["offset_hi_ns"] - how["offset_ns"])
    assert procs and all(f"(contained {label})" in p.name for p in procs)
    assert how["slack_ns"] == want["slack_ns"]
    assert how["offset_lo_ns"] <= how["offset_ns"] <= how["offset_hi_ns"]
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
    """A calibrated capture with its run log: the summary says what containment allows
    around where the anchors put it; a log whose runner_run starts after the anchored
    records is warned about, by how much (the anchors are used)."""
    case = "hbg_vector_example_l4_depgen"
    r = merge_traces([FIXTURES / case])
    line = next(x for x in r.summary_lines if "calibrated by clock anchors" in x)
    # the interval of test_the_offset_interval_holds_the_true_offset_on_every_real_capture
    # (-5727.8 us .. 102.9 ms around an offset of 0), around the anchors' offset (±30 ns)
    assert ("(pid 17544 inv 1) agrees: it allows -5728.1 us/+102.9 ms around where the "
            "anchors put the device") in line
    shutil.copytree(FIXTURES / case, tmp_path / "cap")
    log = tmp_path / "cap" / "host_log.txt"
    log.write_text(re.sub(r"(name=chip\.run\.runner_run ts=)(\d+)",
                          lambda m: m.group(1) + str(int(m.group(2)) + 200_000_000),
                          log.read_text()))
    r = merge_traces([tmp_path / "cap"])
    assert alignment(r.timeline)["status"] == "calibrated"
    # containment's interval moves 200 ms later: its earliest offset 200 ms - 5727.8 us
    assert any("its clock anchors put it 194.3 ms earlier than anything span containment"
               in w for w in r.warnings)


# ------------------------------------------------------------------ host windows, by hand

def span(name, ts, dur, *, pid=7, inv=1, dev=False, **attrs) -> StraceSpan:
    return StraceSpan(pid, pid, inv, None, name.count("."), name, ts, dur, dev,
                      {k: str(v) for k, v in attrs.items()}, 0)


def log_of(spans) -> RunLog:
    """A `RunLog` of these spans in this order, its columns filled as the reader fills
    them (inv and hid -1 where absent, names and attribute sets indexed)."""
    names: dict[str, int] = {}

    def col(values, dtype=np.int64):
        return np.array(list(values), dtype=dtype)

    return RunLog(
        "log", pid=col([s.pid for s in spans]), tid=col([s.tid for s in spans]),
        inv=col([-1 if s.inv is None else s.inv for s in spans]),
        depth=col([s.depth for s in spans]), ts_ns=col([s.ts_ns for s in spans]),
        dur_ns=col([s.dur_ns for s in spans]), line=col([s.line for s in spans]),
        device_clock=col([s.device_clock for s in spans], bool),
        name=col([names.setdefault(s.name, len(names)) for s in spans], np.int32),
        hid=col([-1] * len(spans), np.int32), attrs=col(range(len(spans)), np.int32),
        names=list(names), attr_sets=[s.attrs for s in spans])


def run(pid=7, inv=1, root="chip.run", *, start=10_000, dur=5_000, wall=1_000, **extra):
    spans = [span(root, start - 10, dur + 20, pid=pid, inv=inv, **extra),
             span(f"{root}.runner_run", start, dur, pid=pid, inv=inv),
             span(f"{root}.runner_run.device_wall", 0, wall, pid=pid, inv=inv, dev=True)]
    return spans


def test_host_windows_are_the_invocations_that_launched_device_work_in_pid_inv_order():
    log = log_of([
        *run(pid=9, inv=2, start=50_000),
        *run(pid=9, inv=None, start=40_000),
        *run(pid=8, inv=1, start=30_000, root="simpler_run"),
        # no device_wall: launched nothing
        span("chip.run", 0, 100, pid=1), span("chip.run.runner_run", 0, 100, pid=1),
        # runner_run on the device clock, device_wall on the host clock: neither is one
        span("chip.run.runner_run", 0, 100, pid=2, dev=True),
        span("chip.run.runner_run.device_wall", 0, 50, pid=2, dev=True),
        span("chip.run.runner_run", 0, 100, pid=3),
        span("chip.run.runner_run.device_wall", 0, 50, pid=3),
        # sub-phases: positive ones, direct children of device_wall only
        span("chip.run.runner_run.device_wall.sched", 5, 40, pid=9, inv=2, dev=True),
        span("chip.run.runner_run.device_wall.orch", 1, 0, pid=9, inv=2, dev=True),
        span("chip.run.runner_run.device_wall.sched.inner", 6, 2, pid=9, inv=2, dev=True),
        span("chip.run.runner_run.device_wall.host", 6, 2, pid=9, inv=2),
    ])
    ws = host_windows(log)
    assert [(w.pid, w.inv, w.root, w.start_ns, w.end_ns, w.where) for w in ws] == [
        (8, 1, "simpler_run", 30_000, 35_000, "pid 8 inv 1"),
        (9, None, "chip.run", 40_000, 45_000, "pid 9"),
        (9, 2, "chip.run", 50_000, 55_000, "pid 9 inv 2")]
    assert [w.phases for w in ws] == [{}, {}, {"sched": (5, 40)}]
    assert [len(w.spans) for w in ws] == [3, 3, 7]
    assert all(w.device_wall_ns == 1_000 and w.log is log for w in ws)


@pytest.mark.parametrize("attrs, identity, epoch", [
    ({"run_id": 41, "dispatch_id": 3, "slot_id": 1, "generation": 7, "run_epoch": 12},
     (41, 3, 1, 7), 12),
    ({"run_id": 0, "dispatch_id": 0, "slot_id": 1, "generation": 7}, None, None),
    ({"run_id": 0, "dispatch_id": 5, "slot_id": 0, "generation": 0}, (0, 5, 0, 0), None),
    ({"run_id": 4, "dispatch_id": 0, "slot_id": 0, "generation": 0}, (4, 0, 0, 0), None),
    ({"run_id": 41, "dispatch_id": 3, "slot_id": 1}, None, None),
    ({"run_id": "4x", "dispatch_id": 3, "slot_id": 1, "generation": 7, "run_epoch": "-1"},
     None, None),
    ({"run_id": "٣", "dispatch_id": 3, "slot_id": 1, "generation": 7, "run_epoch": "٣"},
     None, None),
])
def test_the_dispatch_identity_and_epoch_of_the_root_span(attrs, identity, epoch):
    (w,) = host_windows(log_of(run(**attrs)))
    assert (w.identity, w.run_epoch) == (identity, epoch)


def test_without_a_root_span_there_is_no_identity():
    (w,) = host_windows(log_of(run()[1:]))
    assert (w.identity, w.run_epoch) == (None, None)


@pytest.mark.parametrize("ts, dur, dev, at, problem", [
    (10_000, 0, False, 10_000, None),                  # at runner_run's start
    (15_000, 0, False, 15_000, None),                  # at its end
    (9_999, 0, False, None, "at 9999, outside chip.run.runner_run"),
    (15_001, 0, False, None, "at 15001, outside chip.run.runner_run"),
    (12_000, 1, False, None, "not a host-clock point (dur=0)"),
    (12_000, 0, True, None, "not a host-clock point (dur=0)"),
])
def test_the_aicpu_launch_marker_is_a_host_point_inside_runner_run(ts, dur, dev, at, problem):
    launch = span("chip.run.runner_run.aicpu_launch", ts, dur, dev=dev)
    (w,) = host_windows(log_of([*run(), launch]))
    assert (w.aicpu_launch_ns, w.launch_problem) == (at, problem)
    c = contain(w, capture((1000, 1500)))               # the block: 1000 ns, up to 14000
    if problem is not None:
        assert c.place_lo_ns == 10_000 and c.dropped == [f"the aicpu_launch marker ({problem})"]
    elif at <= 14_000:
        assert c.place_lo_ns == at and c.dropped == []
    else:
        assert c.place_lo_ns == 10_000 and c.dropped[0].startswith(
            f"the aicpu_launch marker at {at}: it leaves no room")


# ------------------------------------------------------------------ the join and placement

def test_each_sub_phase_narrows_the_join_in_its_order():
    """device_wall [0, 1000] alone: origin in [1500 - 1000, 1000] = [500, 1000]; sched
    [100, 300] holding the scheduler's cycles 700..900: [900 - 400, 700 - 100] =
    [500, 600]; orch [50, 150] holding 560..640: [640 - 200, 560 - 50] = [440, 510]."""
    w = window({"sched": (100, 300), "orch": (50, 150)})
    j = join_origin(w, capture((1000, 1500)))
    assert (j.lo, j.hi, j.sources) == (500, 1000, ("device_wall",))
    j = join_origin(w, capture((1000, 1500), sched=(700, 900)))
    assert (j.lo, j.hi, j.sources) == (500, 600, ("sched", "device_wall"))
    j = join_origin(w, capture((1000, 1500), sched=(700, 900), orch=(560, 640)))
    assert (j.lo, j.hi, j.origin, j.sources) == (500, 510, 505, ("sched", "orch", "device_wall"))
    # a window the log has but the capture not (or the reverse) says nothing
    j = join_origin(window({"orch": (50, 150)}), capture((1000, 1500), sched=(700, 900)))
    assert j.sources == ("device_wall",)


def test_the_join_in_cycles_of_another_frequency():
    """50 MHz: 20 ns a cycle. device_wall 1000 ns = 50 cycles holding cycles 100..130:
    origin in [130 - 50, 100] = [80, 100]; residual 20 cycles = 400 ns."""
    cap = CaptureWindows("rec", 50_000_000, (100, 130), {})
    c = contain(window(wall=1000), cap)
    assert (c.join.lo, c.join.hi, c.join.origin) == (80, 100, 90)
    assert c.residual_ns == 400
    # records from (100 - 90) * 20 = 200 ns to 800 ns: the block is device_wall [0, 1000]
    assert (c.head_ns, c.extent_ns, c.slack_ns) == (0, 1000, 4000)
    assert c.cycle_offset_ns() == 10_000 - 90 * 20 and c.phase_offset_ns() == 10_000


def test_sub_phases_outside_device_wall_widen_the_block():
    """sched [500, 1300] (past device_wall's 1000) holds cycles 900..1200: origin in
    [1200 - 1300, 900 - 500] and device_wall's [900 - 1000, 300]: [-100, 300], 100. The
    records lie 200..800 into the block, which runs to sched's end: 1300 long."""
    c = contain(window({"sched": (500, 800)}, wall=1000), capture((300, 900), sched=(900, 1200)))
    assert (c.join.lo, c.join.hi, c.join.origin) == (-100, 300, 100)
    assert (c.head_ns, c.extent_ns, c.slack_ns) == (0, 1300, 5000 - 1300)
    # a sub-phase logged before device-phase 0 opens the block there: head -200
    c = contain(window({"sched": (500, 800), "pre": (-200, 100)}, wall=1000),
                capture((300, 900), sched=(900, 1200)))
    assert (c.head_ns, c.extent_ns, c.slack_ns) == (-200, 1500, 5000 - 1500)
    assert c.phase_offset_ns() == 10_200 and c.cycle_offset_ns() == 10_200 - 100


def test_half_a_nanosecond_is_rounded_to_even_once():
    """origin 0.5 ns between two cycles: 10_000 - 0.5 -> 10_000 (even)."""
    cap = CaptureWindows("rec", 1_000_000_000, (1, 1000), {})
    c = contain(window(wall=1000), cap)
    assert c.join.origin == Fraction(1, 2) and c.cycle_offset_ns() == 10_000
    c = contain(window(wall=1000, start=10_001), cap)
    assert c.cycle_offset_ns() == 10_000          # 10_000.5: to the even 10_000


def test_the_phase_offset_is_rounded_to_the_nearest_nanosecond():
    """At 3 GHz a stage puts the block 10_166 2/3 ns after the log's zero: 10_167, never
    cut down to 10_166."""
    cap = CaptureWindows("rec", 3_000_000_000, (1, 1001), {})
    c = contain(window(wall=1000), cap, [(10_500, 14_000, "stage")])
    assert c.place_lo_ns - c.head_ns == Fraction(30_500, 3)
    assert c.phase_offset_ns() == 10_167


@pytest.mark.parametrize("start, joined", [(118, False), (119, True), (120, True),
                                           (420, True), (421, True), (422, False)])
def test_device_walls_cycles_join_within_one_cycle_of_what_the_ns_allow(start, joined):
    """The ns figures put the origin in [120, 420]; device_wall's own start cycle joins the
    run when it lies there or one cycle outside (the ns figures are rounded), and is ruled
    out, named, two cycles outside."""
    w = window(wall=1000)
    w.wall_cycles = (start, start + 1000, 1_000_000_000)
    j = join_origin(w, capture((420, 1120)))
    if joined:
        assert j.by_cycles and j.origin == start and not j.ruled_out
    else:
        assert not j.by_cycles and (j.lo, j.hi) == (120, 420)
        assert j.ruled_out[0].startswith(f"device_wall's dev_start_cycle={start}: ")


def test_a_stage_narrows_both_ends_and_several_apply_in_turn():
    w, cap = window(wall=1000, start=10_000, dur=5000), capture((1000, 1500))
    # the records lie 250..750 into the block [0, 1000]: "a" puts the block in
    # [11000, 12000], "b" raises its start to 11250
    c = contain(w, cap, [(11_250, 12_750, "a"), (11_500, 13_750, "b")])
    assert (c.place_lo_ns, c.place_hi_ns, c.constraints[1:], c.dropped) == (
        11_250, 12_000, ["a", "b"], [])
    c = contain(w, cap, [(11_250, 12_750, "a"), (13_000, 14_000, "b")])
    assert (c.place_lo_ns, c.place_hi_ns) == (11_000, 12_000)
    assert c.dropped == ["b: it excludes chip.run.runner_run's placement"]
    assert c.outer_slack_ns == 4000


def test_the_metadata_says_every_number():
    w = window({"sched": (100, 300)}, wall=1000, start=10_000, dur=5000, launch=11_000)
    c = contain(w, capture((1000, 1500), sched=(1100, 1300)))
    assert c.metadata(host_offset_ns=7) == {
        "method": "span_containment_v1", "outer_span": "chip.run.runner_run",
        "outer_pid": 7, "outer_inv": 1, "outer_start_ns": 10_007, "outer_duration_ns": 5000,
        "device_wall_ns": 1000, "device_extent_ns": 1000, "outer_slack_ns": 4000,
        "slack_ns": 3000, "place_lo_ns": 11_007, "place_hi_ns": 14_007,
        "join": {"sources": ["sched", "device_wall"], "origin_cycles": 950,
                 "residual_ns": 100},
        "run_log": "log", "aicpu_launch_ns": 11_007,
        "causal_constraint": "aicpu_launch<=device_start",
        # join [900, 1000]; records 1000..1500 after the marker: offset >= 11000 - 1000;
        # inside runner_run: <= 15000 - 1500; sub-phases end at 400: <= 15000 - 400 - 900.
        # device_wall's own 1000 ns inside it would cut to 15000 - 1000 - 900
        "offset_lo_ns": 10_007, "offset_hi_ns": 13_507,
        "offset_hi_ns_if_device_wall_inside": 13_107}
    dropped = contain(window(wall=1000, launch=14_500), capture((1000, 1500))).metadata()
    assert "aicpu_launch_ns" not in dropped and "causal_constraint" not in dropped
    assert dropped["dropped_constraints"][0].startswith("the aicpu_launch marker at 14500")


def test_refusals_say_by_how_much():
    with pytest.raises(NotOneRun) as e:
        join_origin(window({"sched": (0, 100)}, wall=1000), capture((100, 1100), sched=(600, 700)))
    assert e.value.detail == ("the device windows they report do not overlap (sched, "
                              "device_wall miss each other by 500 ns)")
    with pytest.raises(NotOneRun) as e:
        contain(window(wall=9000, start=10_000, dur=5000), capture((0, 9000)))
    assert e.value.detail == ("9000 ns of device work does not fit in pid 7 inv 1's "
                              "chip.run.runner_run of 5000 ns")
    c = contain(window(wall=9000, start=10_000, dur=5000), capture((5000, 5500)))
    assert c.dropped == [("device_wall (9000 ns) inside chip.run.runner_run (5000 ns): longer "
                         "than what is left after the device start; only the records and "
                         "sub-phases are kept inside")]
    assert (c.extent_ns, c.outer_slack_ns) == (4750, 250)        # origin 750: to cycle 5500
    c = contain(window(wall=1000, start=10_000_000, dur=50_000_000, launch=59_999_999),
                capture((1000, 1500)))
    assert c.dropped == [("the aicpu_launch marker at 59999999: it leaves no room for 1000 ns "
                         "of device work before chip.run.runner_run ends")]
    # the launch marker exactly at the last placement leaves a slack of 0
    c = contain(window(wall=1000, start=10_000, dur=5000, launch=14_000), capture((1000, 1500)))
    assert (c.place_lo_ns, c.slack_ns, c.dropped) == (14_000, 0, [])


# ------------------------------------------------------------------ pairing, by hand

def _cand(path, windows, own=(), host_pid=None, identity=None):
    return Candidate(path, windows, list(own), host_pid, identity, f"{path}/sidecar")


def _win(pid=7, inv=1, *, sched=None, wall=1000, start=10_000, dur=5000, identity=None):
    w = window({"sched": sched} if sched else None, wall=wall, start=start, dur=dur)
    w.pid, w.inv, w.identity = pid, inv, identity
    return w


def test_pairing_by_dispatch_identity_first():
    a, b = _win(7, 1, identity=(1, 1, 0, 1)), _win(7, 2, identity=(1, 2, 0, 1))
    cap = capture((1000, 1500))
    found, warnings = pair([_cand("c0", cap, host_pid=7, identity=(1, 2, 0, 1))], [a, b])
    assert (found[0].window is b, warnings) == (True, [])
    assert found[0].how == ("dispatch identity (dispatch_identity.json: host_pid 7, run_id 1 "
                            "dispatch_id 2 slot_id 0 generation 1)")
    # the host pid alone names a process of two invocations: the timing decides between them
    a = _win(7, 1, sched=(100, 300), identity=(1, 1, 0, 1))
    b = _win(7, 2, sched=(100, 900), identity=(1, 2, 0, 1))
    c = _win(8, 1, sched=(100, 300))
    cap = capture((1000, 1500), sched=(1100, 1300))
    found, warnings = pair([_cand("c0", cap, host_pid=7)], [a, b, c])
    assert found[0].window is a and found[0].how.startswith("window fit") and warnings == []


def test_identities_that_name_nothing_or_the_same_invocation_fall_back_to_timing():
    a = _win(7, 1, sched=(100, 300), identity=(1, 1, 0, 1))
    b = _win(8, 1, sched=(100, 2000), identity=(1, 1, 0, 1))
    cap = capture((1000, 1500), sched=(1100, 1300))
    found, warnings = pair([_cand("c0", cap, host_pid=9)], [a, b])
    assert warnings == [("c0/sidecar: no run log given holds the invocation it names "
                        "(host_pid 9); paired by the timing instead")]
    assert found[0].window is a
    found, warnings = pair([_cand("c0", cap, host_pid=7, identity=(1, 1, 0, 1)),
                            _cand("c1", capture((1000, 1500), sched=(1000, 2800)), host_pid=7,
                                  identity=(1, 1, 0, 1))], [a, b])
    assert warnings == [("c0/sidecar, c1/sidecar: name the same invocation; paired by the "
                        "timing instead")]
    assert found[0].window is a and found[1].window is b


def test_its_own_run_log_with_one_invocation_pairs_it():
    a, b = _win(7, 1), _win(8, 1)
    found, _ = pair([_cand("c0", capture((1000, 1500)), own=[b])], [a, b])
    assert found[0].window is b and found[0].how == "its own run log"
    # its own log with two invocations: the fit chooses among those two only
    c = _win(9, 1, sched=(100, 300))
    d = _win(9, 2, sched=(100, 3000))
    e = _win(10, 1, sched=(100, 300))
    found, _ = pair([_cand("c0", capture((1000, 1500), sched=(1100, 1300)), own=[c, d])],
                    [c, d, e])
    assert found[0].window is c
    assert found[0].how == ("window fit (its windows 0.1 us narrower than the invocation's, "
                            "next fit 2.7 us worse)")


def test_the_fit_needs_the_best_four_times_better_than_the_next():
    """Costs: how much wider the invocation's sched is than the capture's (200 ns)."""
    cap = capture((1000, 1500), sched=(1100, 1300))

    def fit(wider_a, wider_b):
        a, b = _win(7, 1, sched=(100, 200 + wider_a)), _win(8, 1, sched=(100, 200 + wider_b))
        return pair([_cand("c0", cap)], [a, b])[0][0]

    assert fit(100, 401).window.pid == 7                # 401 > 4 x 100
    with pytest.raises(PairingError, match=r"pairs ambiguously .* off by 0\.1 us of window, "
                                           r"the next by 0\.4 us"):
        fit(100, 400)                                   # exactly 4 x: ambiguous
    assert fit(0, 1).window.pid == 7                    # a perfect fit beats any other
    with pytest.raises(PairingError, match="ambiguously"):
        fit(0, 0)
    # a lone invocation that fits has no runner-up
    found, _ = pair([_cand("c0", cap)], [_win(7, 1, sched=(100, 250))])
    assert found[0].how == "window fit (its windows 0.1 us narrower than the invocation's)"


def test_a_capture_no_invocation_can_hold_is_refused_or_left_unpaired():
    big = capture((1000, 1500), sched=(1000, 2000))     # 1000 ns of sched: wider than any
    a, b = _win(7, 1, sched=(100, 300)), _win(8, 1, sched=(100, 500))
    with pytest.raises(PairingError) as e:
        pair([_cand("c0", big)], [a, b])
    assert (e.value.path, e.value.problem) == ("c0", (
        "no invocation in log can hold it: the run log and the capture are not from one run"))
    # more captures than invocations: the one nothing holds stays unpaired
    small = capture((1000, 1500), sched=(1100, 1300))
    found, _ = pair([_cand("c0", big), _cand("c1", small)], [a])
    assert list(found) == [1] and found[1].window is a
    found, _ = pair([_cand("c0", big), _cand("c1", big)], [a])
    assert found == {}
    # nothing to fit (no device windows) or nothing left: no pairing at all
    assert pair([_cand("c0", None)], [a]) == ({}, [])
    found, _ = pair([_cand("c0", small, own=[a]), _cand("c1", small)], [a])
    assert list(found) == [0] and found[0].how == "its own run log"


def test_without_sub_phases_the_fit_scores_device_wall():
    cap = capture((1000, 1500))
    a, b = _win(7, 1, wall=600), _win(8, 1, wall=5000)
    found, _ = pair([_cand("c0", cap)], [a, b])
    assert found[0].window is a and "0.1 us narrower" in found[0].how
    # records wider than device_wall do not fit it (the join refuses them)
    found, _ = pair([_cand("c0", capture((1000, 1900)))], [a, b])
    assert found[0].window is b


def test_too_many_ways_to_pair_are_refused_before_scoring():
    pool = [_win(p, 1) for p in range(10)]
    cands = [_cand(f"c{i}", capture((1000, 1500))) for i in range(7)]   # 10!/3! = 604800
    with pytest.raises(PairingError) as e:
        pair(cands, pool)
    assert e.value.path == "c0" and e.value.problem.startswith(
        "7 capture(s) carry no dispatch_identity.json and the run logs hold 10 invocations: "
        "604800 ways to pair them, too many to score")


# ------------------------------------------------------------------ device_wall's cycles, slots

def cycles_window(cycles, *, phases=None, wall=1000, start=10_000, dur=5000, slots=None,
                  problem=None) -> HostWindow:
    w = window(phases, wall, start, dur)
    w.wall_cycles, w.wall_cycles_problem, w.slots = cycles, problem, slots or {}
    return w


def test_device_walls_cycles_give_the_join_exactly_and_bound_the_wall_inside_runner_run():
    # the bracket allows origins [500, 1000]; the cycles say 600, and the wall runs 600-1600
    w = cycles_window((600, 1600, 1_000_000_000), wall=1000)
    c = contain(w, capture((1000, 1500)))
    assert c.join.by_cycles and (c.join.lo, c.join.hi) == (600, 600) and c.residual_ns == 0
    # records and wall in runner_run [10000, 15000]: offset in [10000 - 600, 15000 - 1600]
    assert (c.offset_lo_ns, c.offset_hi_ns, c.wall_hi_ns) == (9400, 13400, None)
    assert c.metadata()["method"] == "device_wall_cycles"
    assert c.metadata()["device_wall_cycles"] == {"start": 600, "end": 1600, "hz": 1_000_000_000}
    # without the cycles: the bracket's width, and device_wall's end not relied on
    plain = contain(window(wall=1000), capture((1000, 1500)))
    assert (plain.offset_lo_ns, plain.offset_hi_ns) == (9000, 13500)


@pytest.mark.parametrize("cycles, problem, says", [
    ((600, 1600, 50_000_000), None, "dev_cnt_hz=50000000, the capture counts at 1000000000 Hz"),
    ((1200, 2200, 1_000_000_000), None, ("dev_start_cycle=1200: 200 ns after what device_wall "
                                        "allow")),
    (None, ("device_wall's dev_start_cycle=12 dev_end_cycle=x dev_cnt_hz=(missing) are not three "
           "counter readings"), "are not three counter readings: not used"),
])
def test_cycles_that_disagree_or_cannot_be_read_are_ruled_out_and_named(cycles, problem, says):
    c = contain(cycles_window(cycles, problem=problem), capture((1000, 1500)))
    assert not c.join.by_cycles and c.join.sources == ("device_wall",)
    assert any(says in d for d in c.dropped), c.dropped


def test_a_task_slot_lies_within_the_aicpus_dispatches_and_finishes():
    # device_wall alone: origin in [500, 1000]. Slot 2 runs 300-450 ns into the phase
    # timeline; the AICPU dispatched from cycle 1000 to 1500: origin in [700, 1050]
    w = cycles_window(None, slots={2: (300, 150)})
    j = join_origin(w, capture((1000, 1500), aicpu=(1000, 1500)))
    assert (j.lo, j.hi) == (700, 1000) and j.sources == ("device_wall", "task_slot_2")
    # a slot that leaves no placement is dropped and named, as every other constraint
    # that would: never the whole merge refused
    j = join_origin(cycles_window(None, slots={2: (0, 900)}),
                    capture((1000, 1500), aicpu=(1000, 1500)))
    assert (j.lo, j.hi) == (500, 1000) and j.sources == ("device_wall",)
    assert j.ruled_out == (("task slot 2 (900 ns): it misses the AICPU's records by 400 ns "
                           "where device_wall place them: not used"),)
    # the other slots still narrow it
    j = join_origin(cycles_window(None, slots={2: (0, 900), 3: (300, 150)}),
                    capture((1000, 1500), aicpu=(1000, 1500)))
    assert (j.lo, j.hi) == (700, 1000) and j.sources == ("device_wall", "task_slot_3")


@pytest.mark.parametrize("attrs, cycles, device_id, problem", [
    ("clk=dev dev_id=2 dev_start_cycle=600 dev_end_cycle=1600 dev_cnt_hz=50000000",
     (600, 1600, 50_000_000), 2, None),
    ("clk=dev", None, None, None),                                  # an older writer
    ("clk=dev dev_id=1 dev_start_cycle=600 dev_cnt_hz=50000000", None, 1,
     "are not three counter readings"),
    ("clk=dev dev_start_cycle=900 dev_end_cycle=600 dev_cnt_hz=50000000", None, None,
     "do not describe a window"),
    ("clk=dev dev_start_cycle=0x10 dev_end_cycle=600 dev_cnt_hz=50000000", None, None,
     "are not three counter readings"),
])
def test_device_walls_attributes_are_read_or_named(tmp_path, attrs, cycles, device_id, problem):
    from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log

    head = "[STRACE] v=1 pid=7 tid=7 inv=1 hid=ab "
    log = tmp_path / "host.7.log"
    log.write_text(f"{head}depth=1 name=chip.run.runner_run ts=10000 dur=5000\n"
                   f"{head}depth=2 name=chip.run.runner_run.device_wall ts=0 dur=1000 {attrs}\n")
    (w,) = host_windows(read_run_log(log))
    assert (w.wall_cycles, w.device_id) == (cycles, device_id)
    assert (w.wall_cycles_problem is None) == (problem is None)
    assert problem is None or problem in w.wall_cycles_problem
