"""Which run's stage and host clock each capture is placed against (`trace_merge.place.placement`), on
small synthetic inputs written here: records at 1 GHz (a cycle is a ns), run logs and
compile traces with chosen times, so every offset and bound is worked out by hand in the
test. The rules: a capture's own run's `device_execution` stage (of several in one
process, the one holding its `runner_run`), the n-th stage for the n-th log-less capture
when the counts match, a cross-host trace's stages moved onto the reference axis, the
same-host tolerance of wall-clock anchors, the reference anchor when the first trace has
none, labels of work dirs that look alike, and the interval logic of the
estimate."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from repo_paths import TEST_FIXTURES

from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.kinds import PlacementStatus
from pypto.compile_profiling.trace_merge.place.containment import fmt_ns
from pypto.compile_profiling.trace_merge.place.placement import place
from pypto.compile_profiling.trace_merge.place.plan import SAME_HOST_TOLERANCE_NS, DeviceClock
from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs
from pypto.compile_profiling.trace_merge.read.wall_anchor import WallClockAnchor
from pypto.errors import TraceInputError

GHZ = 1_000_000_000
R = 10_000_000_000            # where the synthetic runs' runner_run spans start (host ns)


def records(d: Path, rows, freq=GHZ) -> Path:
    """A level-1 capture: rows (core, task, start cycle, end cycle)."""
    d.mkdir(parents=True, exist_ok=True)
    regs: dict[int, int] = {}
    aicore = []
    for core, task, st, en in rows:
        regs[core] = regs.get(core, 0) + 1
        aicore.append([core, task, regs[core], st, en, 0])
    doc = {"chip_swimlane_level": 1, "aicore_tasks": aicore,
           "metadata": {"clock_freq_hz": freq,
                        "core_types": ["aic"] * (max(r[0] for r in rows) + 1)}}
    (d / "chip_swimlane_records.json").write_text(json.dumps(doc))
    return d


def calibrated(d: Path, rows, pre, post, freq=GHZ, quant=0) -> Path:
    """Records with clock anchors: `pre`/`post` (host_before, host_after, cycles)."""
    records(d, rows, freq)
    doc = json.loads((d / "chip_swimlane_records.json").read_text())
    samples = [{"position": pos, "sample_idx": 0, "host_before_ns": hb, "host_after_ns": ha,
                "device_cycles": c, "error": None}
               for pos, (hb, ha, c) in (("pre_host_orchestration", pre),
                                        ("post_device_execution", post))]
    doc["metadata"].update(clock_anchors={"schema_version": 1, "samples": samples,
                                          "device_timestamp_unit": "syscnt_cycles"},
                           host_timestamp_quantization_ns=quant)
    (d / "chip_swimlane_records.json").write_text(json.dumps(doc))
    return d


def converted(d: Path, slices) -> Path:
    """Simpler's merged_swimlane.json: slices (pid, process name, start us, dur us)."""
    d.mkdir(parents=True, exist_ok=True)
    ev = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
          for pid, name in {(s[0], s[1]) for s in slices}]
    ev += [{"ph": "X", "name": f"k{i}", "pid": pid, "tid": 1, "ts": ts, "dur": dur}
           for i, (pid, _, ts, dur) in enumerate(slices)]
    (d / "merged_swimlane.json").write_text(json.dumps({"traceEvents": ev}))
    return d


def run_log(d: Path, pid: int, spans, anchor=None) -> Path:
    """host_log.txt: spans (name, ts, dur[, "dev"][, inv]) of process `pid`."""
    d.mkdir(parents=True, exist_ok=True)
    lines = [] if anchor is None else [
        f"[CLOCK_ANCHOR] v=1 pid={pid} mono_ns={anchor[0]} wall_ns={anchor[1]}"]
    for name, ts, dur, *rest in spans:
        dev = " clk=dev" if "dev" in rest else ""
        inv = next((r for r in rest if isinstance(r, int)), 1)
        lines.append(f"[STRACE] v=1 pid={pid} tid={pid} inv={inv} hid=0 depth=1 name={name} "
                     f"ts={ts} dur={dur}{dev}")
    (d / "host_log.txt").write_text("\n".join(lines) + "\n")
    return d


def trace(path: Path, stages, *, host="hostA", pid=7, anchor=None) -> Path:
    """A compile trace.json: stages (name, start ns, end ns[, pid])."""
    ev = [{"ph": "X", "name": name, "cat": "user", "ts": s / 1000, "dur": (e - s) / 1000,
           "pid": rest[0] if rest else pid, "tid": rest[0] if rest else pid, "args": {}}
          for name, s, e, *rest in stages]
    other = {"clock": "CLOCK_MONOTONIC", "host": host, "pid": pid}
    if anchor is not None:
        other["clock_anchor"] = {"monotonic_ns": anchor[0], "wall_ns": anchor[1]}
    path.write_text(json.dumps({"traceEvents": ev, "otherData": other}))
    return path


def plan_of(*paths, **kw):
    return place(read_inputs(list(paths)), **kw)


ROWS = [(0, 1, 1_000, 2_000), (0, 2, 2_500, 4_000)]   # records from cycle 1000 to 4000


def contained_run(d: Path, pid=7, *, wall=5_000, rr=(R, 1_000_000), anchor=None) -> Path:
    """A capture with its own run log: runner_run `rr` and a device_wall of `wall` ns.
    By hand (docs/placement.md): the join brackets the origin cycle to [4000 - wall, 1000]
    (origin its middle), the block [min(0, 1000 - origin), max(wall, 4000 - origin)] goes
    in runner_run from its start."""
    records(d, ROWS)
    return run_log(d, pid, [("chip.run", rr[0] - 100, rr[1] + 200),
                            ("chip.run.runner_run", *rr),
                            ("chip.run.runner_run.device_wall", 0, wall, "dev")], anchor)


# ------------------------------------------------------------------ the run's own stage

def test_of_two_device_execution_stages_in_its_process_the_one_holding_its_run(tmp_path):
    """pid 7 ran device_execution twice; its run log's runner_run lies in the second. By
    hand: the join brackets the origin cycle to [4000 - 5000, 1000] (origin 0), the block
    [0, 5000] goes in runner_run [R, R + 1 ms] from its start: offset R, slack 1 ms - 5 us.
    The interval: the records (cycles 1000..4000) inside runner_run allow offsets
    [R - 1000, R + 996000] (the stage, [R - 500, R + 1000100], is wider): the drawn R may be
    996 us early. The second stage holds it (a constraint kept); had the first been taken,
    it would exclude runner_run and be dropped."""
    cap = contained_run(tmp_path / "cap")
    tr = trace(tmp_path / "trace.json", [("device_execution", R - 5_000_000, R - 4_000_000),
                                         ("device_execution", R - 500, R + 1_000_100)])
    (cp,) = plan_of(tr, cap).captures
    dev = cp.device
    assert (dev.status, cp.run_pid) == ("contained", 7)
    c = dev.containment
    assert (c.join.lo, c.join.hi, c.head_ns, c.extent_ns) == (-1_000, 1_000, 0, 5_000)
    assert (c.place_lo_ns, c.place_hi_ns) == (R, R + 995_000)
    assert (dev.offset_ns, dev.uncertainty_ns, c.dropped) == (R, 996_000, [])
    assert (dev.offset_lo_ns, dev.offset_hi_ns) == (R - 1_000, R + 996_000)
    assert c.constraints == ["the device block inside chip.run.runner_run",
                             "inside its run's device_execution stage"]
    # two stages on its pid holding no runner_run: neither is its run's, none is a bound
    tr = trace(tmp_path / "neither.json", [("device_execution", R - 500, R + 10),
                                           ("device_execution", R + 20, R + 1_000_100)])
    (cp,) = plan_of(tr, cap).captures
    assert cp.device.containment.constraints == ["the device block inside chip.run.runner_run"]
    assert cp.device.containment.dropped == []
    # without the second stage the only one on its pid excludes the run: dropped, named
    tr = trace(tmp_path / "one.json", [("device_execution", R - 5_000_000, R - 4_000_000)])
    (cp,) = plan_of(tr, cap).captures
    assert cp.device.uncertainty_ns == 996_000
    assert cp.device.containment.dropped == [
        "inside its run's device_execution stage: it excludes chip.run.runner_run's placement"]


def test_two_stages_in_its_process_and_no_invocation_to_choose_by_bound_nothing(tmp_path):
    """A run log with a bare runner_run (no device_wall: nothing to contain in) and two
    device_execution stages on its pid: which one ran it is unknown, so only runner_run
    bounds the estimate: p in [R - 1000, R + 1_000_000 - 4000]."""
    cap = records(tmp_path / "cap", ROWS)
    run_log(cap, 7, [("chip.run.runner_run", R, 1_000_000)])
    tr = trace(tmp_path / "trace.json", [("device_execution", R - 10, R + 2_000_000),
                                         ("device_execution", R + 5_000_000, R + 6_000_000)])
    (cp,) = plan_of(tr, cap).captures
    lo, hi = R - 1_000, R + 1_000_000 - 4_000
    assert (cp.device.status, cp.device.offset_ns, cp.device.uncertainty_ns) == (
        "estimated", (lo + hi) / 2, (hi - lo) / 2)
    assert cp.device.how.startswith("the records inside its run log's chip.run.runner_run span;")
    # one stage on its pid: it bounds too, and the intersection is what both allow
    tr = trace(tmp_path / "one.json", [("device_execution", R + 500, R + 600_000)])
    (cp,) = plan_of(tr, cap).captures
    lo, hi = R + 500 - 1_000, R + 600_000 - 4_000
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == ((lo + hi) / 2, (hi - lo) / 2)
    assert cp.device.how.startswith("inside its run's device_execution stage; the records "
                                    "inside its run log's chip.run.runner_run span;")
    # a stage on another pid is not its run's: runner_run alone again
    tr = trace(tmp_path / "other.json", [("device_execution", R + 500, R + 600_000, 8)])
    (cp,) = plan_of(tr, cap).captures
    assert cp.device.uncertainty_ns == (1_000_000 - 4_000 + 1_000) / 2


def test_the_nth_log_less_capture_takes_the_nth_stage_in_time_order(tmp_path):
    """Two ranks without run logs and two device_execution stages written latest first:
    rank 0 takes the earlier stage, rank 1 the later, each bounding p to [s0 - 1000,
    s1 - 4000]: the middle, +- half the width."""
    work = tmp_path / "work" / "dfx_outputs"
    records(work / "rank0", ROWS)
    records(work / "rank1", ROWS)
    tr = trace(tmp_path / "trace.json", [("device_execution", 9_000_000, 9_100_000),
                                         ("device_execution", 1_000_000, 1_050_000)])
    p = plan_of(tr, tmp_path / "work")
    got = [(cp.label, cp.device.offset_ns, cp.device.uncertainty_ns) for cp in p.captures]
    assert got == [("r0", (1_000_000 - 1_000 + 1_050_000 - 4_000) / 2, (50_000 - 3_000) / 2),
                   ("r1", (9_000_000 - 1_000 + 9_100_000 - 4_000) / 2, (100_000 - 3_000) / 2)]
    assert [cp.device.label for cp in p.captures] == ["estimated ±23.5 us", "estimated ±48.5 us"]


def test_more_stages_than_log_less_captures_bound_none_of_them(tmp_path):
    """Three stages and two captures without a run pid: which is whose is unknown, so
    neither gets a stage (never another run's): the first record goes to time 0."""
    work = tmp_path / "work" / "dfx_outputs"
    records(work / "rank0", ROWS)
    records(work / "rank1", ROWS)
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 1_050_000),
                                         ("device_execution", 2_000_000, 2_050_000),
                                         ("device_execution", 3_000_000, 3_050_000)])
    p = plan_of(tr, tmp_path / "work")
    for cp in p.captures:
        assert (cp.device.status, cp.device.offset_ns, cp.device.uncertainty_ns) == (
            "estimated", -1_000, None)
        assert cp.device.label == "estimated"
    assert sum("ESTIMATED with no bound" in w and "put at time 0 (no device_execution "
               "stage or run log of its run)" in w for w in p.warnings) == 2


def test_a_stage_that_cannot_hold_the_records_centres_them_on_it(tmp_path):
    """A 3 us capture in a 2 us stage: the interval is inverted ([s0 - 1000, s1 - 4000]
    with s1 - s0 = 2000): the records are centred on the stage, with a warning, and the
    width is 0."""
    records(tmp_path / "cap", ROWS)
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 1_002_000)])
    p = plan_of(tr, tmp_path / "cap")
    (cp,) = p.captures
    mid = (1_000_000 - 1_000 + 1_002_000 - 4_000) / 2
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == (mid, 0)
    assert any("its records are longer than the span that must hold them (inside its run's "
               "device_execution stage): centred on it" in w for w in p.warnings)


def test_disjoint_bounds_keep_the_last_and_name_the_dropped(tmp_path):
    """The stage [1 ms, 2 ms] and the run log's runner_run [R, R + 1 ms] share no
    placement: the run log's bound is kept and the stage's named as dropped."""
    cap = records(tmp_path / "cap", ROWS)
    run_log(cap, 7, [("chip.run.runner_run", R, 1_000_000)])
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 2_000_000)])
    p = plan_of(tr, cap)
    (cp,) = p.captures
    lo, hi = R - 1_000, R + 1_000_000 - 4_000
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == ((lo + hi) / 2, (hi - lo) / 2)
    assert any("the placement constraints disagree; dropped: inside its run's "
               "device_execution stage; kept: the records inside its run log's "
               "chip.run.runner_run span" in w for w in p.warnings)


def test_touching_bounds_leave_one_placement(tmp_path):
    """The stage allows p in [s0 - 1000, s1 - 4000] = [R - 1000 + x, ...]: chosen so that
    its lower end is the run log's upper end: exactly one placement, width 0."""
    cap = records(tmp_path / "cap", ROWS)
    run_log(cap, 7, [("chip.run.runner_run", R, 1_000_000)])
    top = R + 1_000_000 - 4_000                        # runner_run's highest p
    tr = trace(tmp_path / "trace.json", [("device_execution", top + 1_000, top + 9_000)])
    (cp,) = plan_of(tr, cap).captures
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == (top, 0)


# ------------------------------------------------------------------ host clocks

def test_a_cross_host_traces_stage_is_moved_onto_the_reference_axis(tmp_path):
    """hostB's monotonic clock reads 5 s less than hostA's at the same wall time: its
    stages are at +5 s on hostA's axis, and the log-less capture is bounded there."""
    wall = 1_700_000_000_000_000_000
    a = trace(tmp_path / "a.json", [("compile", 4_000_000_000, 7_000_000_000)],
              host="hostA", anchor=(6_000_000_000, wall))
    b = trace(tmp_path / "b.json", [("device_execution", 1_000_000, 1_100_000)],
              host="hostB", pid=8, anchor=(1_000_000_010, wall + 10))
    records(tmp_path / "cap", ROWS)
    p = plan_of(a, b, tmp_path / "cap")
    assert [hc.offset_ns for _, hc in p.traces] == [0, 5_000_000_000]
    assert p.traces[1][1].how == ("cross-host: host hostB moved by wall-clock anchors "
                                  "(+5000000000 ns; assumes synchronised wall clocks)")
    (cp,) = p.captures
    lo, hi = 5_001_000_000 - 1_000, 5_001_100_000 - 4_000
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == ((lo + hi) / 2, (hi - lo) / 2)


def test_a_trace_of_another_host_without_anchors_is_left_on_its_own_clock(tmp_path):
    a = trace(tmp_path / "a.json", [("compile", 0, 100)], host="hostA", anchor=(50, 1_000))
    b = trace(tmp_path / "b.json", [("compile", 0, 100)], host="hostB")
    p = plan_of(a, b)
    assert p.traces[1][1].offset_ns == 0
    assert p.traces[1][1].how == "unaligned other host (no clock anchor)"
    assert p.warnings == [(f"{b}: from host hostB, but without clock anchors it cannot be "
                           "aligned with hostA; placed on its own monotonic clock")]


def test_a_first_trace_without_an_anchor_leaves_the_reference_anchor_to_the_run_log(tmp_path):
    """The first trace names the reference host but has no anchor: a second trace of that
    host is exact on it; the reference anchor is then the first run log's, so a run log of
    that anchor's host is exact too (offset 0), whatever its wall clock says."""
    a = trace(tmp_path / "a.json", [("compile", R - 1_000_000, R + 2_000_000)], host="hostA")
    b = trace(tmp_path / "b.json", [("compile", R, R + 10)], host="hostA",
              anchor=(5, 123_456_789_000))
    cap = contained_run(tmp_path / "cap", anchor=(R, 7_777_000_000_000))
    p = plan_of(a, b, cap)
    assert (p.reference_host, p.reference_anchor) == (
        "hostA", WallClockAnchor(R, 7_777_000_000_000, 7, "[CLOCK_ANCHOR]"))
    assert [hc.offset_ns for _, hc in p.traces] == [0, 0]
    assert p.traces[1][1].how == "exact (host CLOCK_MONOTONIC)"
    (cp,) = p.captures
    assert cp.host.offset_ns == 0 and cp.device.offset_ns == R


@pytest.mark.parametrize("apart, same", [(SAME_HOST_TOLERANCE_NS, True),
                                         (-SAME_HOST_TOLERANCE_NS, True),
                                         (SAME_HOST_TOLERANCE_NS + 1, False),
                                         (-SAME_HOST_TOLERANCE_NS - 1, False)])
def test_anchors_within_a_second_of_each_other_are_one_host(tmp_path, apart, same):
    """The trace's and the run log's wall-minus-monotonic differ by `apart`: up to 1 s is
    one host (clock reads jitter); beyond, the log's host is another, moved by that much."""
    wall = 1_700_000_000_000_000_000
    tr = trace(tmp_path / "trace.json", [("compile", 0, 3 * R)], anchor=(R, wall))
    cap = contained_run(tmp_path / "cap", anchor=(R, wall + apart))
    (cp,) = plan_of(tr, cap).captures
    if same:
        assert cp.host.offset_ns == 0
        assert cp.host.how == "exact (host CLOCK_MONOTONIC, same host by its [CLOCK_ANCHOR])"
        assert cp.device.offset_ns == R
    else:
        assert cp.host.offset_ns == apart
        assert cp.host.how == (f"cross-host: moved by [CLOCK_ANCHOR] wall-clock anchors "
                               f"({apart:+d} ns; assumes synchronised wall clocks)")
        assert cp.device.offset_ns == R + apart
        assert cp.device.describe()["place_lo_ns"] == R + apart


# ------------------------------------------------------------------ labels

def test_two_flat_work_dirs_of_one_name_are_told_apart(tmp_path):
    """Two runs' work dirs both called `work` (a/work/dfx_outputs, b/work/dfx_outputs):
    their labels, and so their device processes, must not be the same."""
    records(tmp_path / "a" / "work" / "dfx_outputs", ROWS)
    records(tmp_path / "b" / "work" / "dfx_outputs", [(0, 1, 5_000, 9_000)])
    p = plan_of(tmp_path / "a" / "work", tmp_path / "b" / "work")
    assert [cp.label for cp in p.captures] == ["a/work", "b/work"]
    tl = merge_traces([tmp_path / "a" / "work", tmp_path / "b" / "work"]).timeline
    names = [pr.name for pr in tl.processes]
    assert len(names) == len(set(names)) == 2
    # differently named work dirs keep their names; a lone one is r0
    records(tmp_path / "c" / "other" / "dfx_outputs", ROWS)
    p = plan_of(tmp_path / "a" / "work", tmp_path / "c" / "other")
    assert [cp.label for cp in p.captures] == ["work", "other"]
    assert [cp.label for cp in plan_of(tmp_path / "a" / "work").captures] == ["r0"]


def test_the_same_rank_of_two_distributed_runs_is_told_apart(tmp_path):
    for run in ("a", "b"):
        records(tmp_path / run / "work" / "dfx_outputs" / "rank0" / "d0", ROWS)
        records(tmp_path / run / "work" / "dfx_outputs" / "rank1" / "d0", ROWS)
    p = plan_of(tmp_path / "a" / "work", tmp_path / "b" / "work")
    assert [cp.label for cp in p.captures] == ["a/work r0d0", "a/work r1d0", "b/work r0d0",
                                               "b/work r1d0"]
    assert [cp.label for cp in plan_of(tmp_path / "a" / "work").captures] == ["r0d0", "r1d0"]


def test_two_capture_dirs_of_one_name_are_told_apart(tmp_path):
    records(tmp_path / "x" / "cap", ROWS)
    records(tmp_path / "y" / "cap", ROWS)
    p = plan_of(tmp_path / "x" / "cap", tmp_path / "y" / "cap")
    assert [cp.label for cp in p.captures] == ["x/cap", "y/cap"]


# ------------------------------------------------------------------ what the labels say

def test_fmt_ns_and_the_device_clock_labels():
    assert [fmt_ns(v) for v in (0, 9_999, 10_000, 9_999_999, 10_000_000, 9_999_999_999,
                                10_000_000_000, -25)] == [
        "0 ns", "9999 ns", "10.0 us", "10000.0 us", "10.0 ms", "10000.0 ms", "10.0 s", "25 ns"]
    est = DeviceClock(PlacementStatus.ESTIMATED, GHZ, "why", offset_ns=12.4, uncertainty_ns=85_600_000)
    assert est.label == "estimated ±85.6 ms"
    assert est.describe() == {"status": "estimated", "method": "bounded_offset",
                              "reason": "why", "frequency_hz": GHZ, "offset_ns": 12,
                              "uncertainty_ns": 85_600_000}
    unbounded = DeviceClock(PlacementStatus.ESTIMATED, GHZ, "why", offset_ns=-1.0, host_offset_ns=5)
    assert unbounded.label == "estimated"
    assert unbounded.describe() == {"status": "estimated", "method": "bounded_offset",
                                    "reason": "why", "frequency_hz": GHZ, "offset_ns": -1,
                                    "host_offset_ns": 5}


def test_device_times_are_rounded_once_and_exact_when_the_period_is_whole(tmp_path):
    import numpy as np

    cycles = np.array([0, 1, 3, 1_000_000_007], dtype=np.int64)
    exact = DeviceClock(PlacementStatus.CONTAINED, 50_000_000, "", offset_ns=-7)          # 20 ns a cycle
    assert exact.to_ns(cycles).tolist() == [-7, 13, 53, 20_000_000_133]
    odd = DeviceClock(PlacementStatus.ESTIMATED, 3_000_000, "", offset_ns=0.4)            # 333.3 ns a cycle
    assert odd.to_ns(cycles).tolist() == [0, 334, 1000, round(1_000_000_007 * 1e9 / 3e6 + 0.4)]


def test_a_capture_that_would_start_before_time_0_is_refused(tmp_path):
    records(tmp_path / "cap", ROWS)
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 1_100_000)])
    with pytest.raises(TraceInputError, match=r"would start 1000\.0 us before time 0 on the "
                                              r"merged timeline"):
        plan_of(tr, tmp_path / "cap", offset_us=-2_000)
    p = plan_of(tr, tmp_path / "cap", offset_us=250)
    (cp,) = p.captures
    assert cp.device.offset_ns == 1_000_000 + 250_000 - 1_000
    assert cp.device.how == ("250 us after the start of its run's device_execution stage "
                             "(--offset-us); no clock anchors in the capture")


# ------------------------------------------------------------------ more sources

def test_the_run_pid_comes_from_runner_run_else_the_anchor_else_the_first_span(tmp_path):
    def pid_of(name, spans, anchor=None):
        d = records(tmp_path / name, ROWS)
        run_log(d, 7, spans, anchor)
        text = (d / "host_log.txt").read_text().replace("pid=7 tid=7", "pid=8 tid=8", 1)
        (d / "host_log.txt").write_text(text)
        return plan_of(d).captures[0].run_pid

    # the first span (pid 8 after the rewrite) is no runner_run: runner_run's pid wins
    assert pid_of("a", [("chip.run", R, 10), ("chip.run.runner_run", R, 10)]) == 7
    # a runner_run on the device clock is none
    assert pid_of("b", [("chip.run", R, 10), ("chip.run.runner_run", 0, 10, "dev")],
                  anchor=(R, 5)) == 7                      # the anchor's pid (its line: 7)
    assert pid_of("c", [("chip.run", R, 10), ("other", R, 10)]) == 8   # the first span's


def test_a_capture_without_records_to_place_is_at_offset_0(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    (d / "chip_swimlane_records.json").write_text(json.dumps({
        "chip_swimlane_level": 1, "aicore_tasks": [],
        "metadata": {"clock_freq_hz": GHZ, "core_types": ["aic"]}}))
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 1_100_000)])
    (cp,) = plan_of(tr, d).captures
    assert (cp.device.status, cp.device.offset_ns, cp.device.freq_hz, cp.device.how) == (
        "estimated", 0.0, GHZ, "no device records; no clock anchors in the capture")
    assert cp.device.uncertainty_ns is None


def test_a_converted_trace_without_a_run_log_is_estimated_in_its_stage(tmp_path):
    """Slices from 1 us to 6 us (ns from its own origin): p in [1 ms - 1000, 1.1 ms - 6000]."""
    c = converted(tmp_path / "conv", [(4, "Worker View", 1.0, 3.0), (4, "Worker View", 5.0, 1.0)])
    tr = trace(tmp_path / "trace.json", [("device_execution", 1_000_000, 1_100_000)])
    (cp,) = plan_of(tr, c).captures
    dev = cp.converted
    assert cp.device is None and (dev.status, dev.freq_hz) == ("estimated", GHZ)
    assert (dev.offset_ns, dev.uncertainty_ns) == ((999_000 + 1_094_000) / 2, 47_500)
    assert dev.how == ("inside its run's device_execution stage; Simpler's converted trace "
                       "has no host clock")
    (cp,) = plan_of(tr, c, offset_us=10).captures
    assert cp.converted.offset_ns == 1_000_000 + 10_000 - 1_000
    assert cp.converted.how == ("10 us after the start of its run's device_execution stage "
                                "(--offset-us); Simpler's converted trace has no host clock")


def test_a_converted_trace_with_its_run_log_is_contained(tmp_path):
    """As records: 1 GHz, ns from its origin. Slices 1..6 us, device_wall 10 us: the join
    brackets the origin to [6000 - 10000, 1000] (-1500), the block [0, 10 us] from R. The
    slices inside runner_run allow offsets [R - 1000, R + 994000]: the drawn R + 1500 may
    be 2500 ns late or 992.5 us early."""
    c = converted(tmp_path / "conv", [(4, "Worker View", 1.0, 3.0), (4, "Worker View", 5.0, 1.0)])
    run_log(c, 7, [("chip.run.runner_run", R, 1_000_000),
                   ("chip.run.runner_run.device_wall", 0, 10_000, "dev")])
    tr = trace(tmp_path / "trace.json", [("device_execution", R - 10, R + 1_000_010)])
    (cp,) = plan_of(tr, c).captures
    dev = cp.converted
    assert dev.status == "contained" and dev.containment.join.origin == -1_500
    assert (dev.offset_ns, dev.uncertainty_ns) == (R + 1_500, 992_500)
    assert (dev.offset_lo_ns, dev.offset_hi_ns) == (R - 1_000, R + 994_000)
    assert dev.containment.constraints[-1] == "inside its run's device_execution stage"
    assert "Simpler's converted trace has no host clock" in dev.how


def test_offset_us_counts_from_runner_run_on_the_reference_axis(tmp_path):
    """No device_execution stage: --offset-us counts from the run log's runner_run, moved
    by its host's offset (the log's host is 3 s behind the trace's)."""
    wall = 1_700_000_000_000_000_000
    cap = records(tmp_path / "cap", ROWS)
    run_log(cap, 7, [("chip.run.runner_run", R, 1_000_000)], anchor=(R, wall + 3_000_000_000))
    tr = trace(tmp_path / "trace.json", [("compile", 0, 3 * R)], anchor=(R, wall))
    (cp,) = plan_of(tr, cap, offset_us=5).captures
    assert cp.host.offset_ns == 3_000_000_000
    assert cp.device.offset_ns == R + 3_000_000_000 + 5_000 - 1_000
    assert cp.device.how == ("5 us after the start of its run's chip.run.runner_run span "
                             "(--offset-us); no clock anchors in the capture")
    # without --offset-us: its runner_run bounds it, on the reference axis too
    (cp,) = plan_of(tr, cap).captures
    lo, hi = R + 3_000_000_000 - 1_000, R + 3_000_000_000 + 1_000_000 - 4_000
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == ((lo + hi) / 2, (hi - lo) / 2)
    # a device-clock span called runner_run is no bound
    cap2 = records(tmp_path / "cap2", ROWS)
    run_log(cap2, 7, [("chip.run.runner_run", 0, 1_000_000, "dev")])
    (cp,) = plan_of(cap2).captures
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == (-1_000, None)


# ------------------------------------------------------------------ one run, time >= 0

def test_sources_a_day_apart_are_refused_in_hours_or_put_together(tmp_path):
    """A capture's run log from another host (its anchor: 25 h of wall-minus-monotonic
    apart) shares no time with the trace: refused, the gap said in hours; --align start
    moves it (and its device records) to start where the trace starts."""
    wall = 1_700_000_000_000_000_000
    hour = 3_600_000_000_000
    tr = trace(tmp_path / "trace.json", [("compile", R - 50_000, R - 10_000)], anchor=(R, wall))
    cap = contained_run(tmp_path / "cap", anchor=(R, wall + 25 * hour))
    with pytest.raises(TraceInputError) as e:
        plan_of(tr, cap)
    assert e.value.path == str(tr)
    assert e.value.problem == (
        f"shares no time with {cap} (that starts 25.0 h after this ends) and their clocks "
        "are joined only through wall-clock anchors (another host or boot): they cannot be "
        "from one run; --align start puts their starts together, --offset-us US places the "
        "capture by hand")
    p = plan_of(tr, cap, align="start")
    (cp,) = p.captures
    first = R - 100                   # the capture's first host span: chip.run at R - 100
    shift = (R - 50_000) - (first + 25 * hour)
    assert cp.host.offset_ns == 25 * hour + shift
    assert cp.host.how.endswith(f"; moved {shift:+d} ns to start with {tr} (--align start: "
                                "not a clock relation)")
    assert cp.device.offset_ns == R + 25 * hour + shift
    # the capture ends (R + 1_000_100 on its clock) exactly 1 h before the trace starts
    # (R + 2 ms): said in hours; 1 ns less, in seconds
    late = trace(tmp_path / "late.json", [("compile", R + 2_000_000, R + 3_000_000)],
                 anchor=(R, wall))
    for name, apart, said in (("b", 0, "1.0 h"), ("c", 1, "3600.0 s")):
        cap = contained_run(tmp_path / f"cap_{name}", anchor=(R, wall + 999_900 - hour + apart))
        with pytest.raises(TraceInputError) as e:
            plan_of(late, cap)
        assert f"(that ends {said} before this starts)" in e.value.problem


def test_traces_of_another_boot_are_moved_to_start_with_the_reference(tmp_path):
    wall = 1_700_000_000_000_000_000
    a = trace(tmp_path / "a.json", [("compile", R, R + 1_000)], host="hostA", anchor=(R, wall))
    b = trace(tmp_path / "b.json", [("compile", 5_000, 6_000)], host="hostB",
              anchor=(5_000, wall + 86_400_000_000_000))
    with pytest.raises(TraceInputError, match="shares no time with") as e:
        plan_of(a, b)
    assert "--offset-us" not in e.value.problem
    p = plan_of(a, b, align="start")
    off = p.traces[1][1].offset_ns
    assert 5_000 + off == R
    assert p.traces[1][1].how.startswith("cross-host: host hostB moved by wall-clock anchors")
    assert p.traces[1][1].how.endswith(f" ns to start with {a} (--align start: not a clock "
                                       "relation)")


# ------------------------------------------------------------------ pipeline_profile.json

def profile(path: Path, stages) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "pipeline_profile.json").write_text(json.dumps({"total_seconds": 1.0,
                                                           "stages": stages}))
    return path / "pipeline_profile.json"


STAGES = [{"name": "parse", "seconds": 0.001, "children": []},
          {"name": "compile", "seconds": 0.002, "children": [
              {"name": "passes", "seconds": 0.0005, "children": []},
              {"name": "device_execution", "seconds": 0.001, "children": []}]},
          {"name": "device_execution", "seconds": 0.003, "children": []}]


def test_a_profile_goes_where_the_calibrated_capture_puts_its_device_execution(tmp_path):
    """device_execution first starts 1 ms + 0.5 ms into the profile (inside compile, after
    passes); the calibrated capture's first record (cycle 1000, 1 GHz, anchors exact at
    cycle 100 = host 10 s) is at 10 s + 900 ns: the profile starts 1.5 ms before that."""
    rep = profile(tmp_path / "report", STAGES)
    cap = calibrated(tmp_path / "cap", ROWS, pre=(R - 10, R + 10, 100),
                     post=(R + 1_000_000 - 10, R + 1_000_000 + 10, 1_000_100))
    p = plan_of(rep, cap)
    (rp,) = p.reports
    assert p.captures[0].device.status == "calibrated"
    assert rp.origin_ns == R + 900 - 1_500_000
    assert rp.how == "its device_execution put at the first record of the calibrated capture"
    assert p.warnings[-1] == (f"{rep}: pipeline_profile.json has no absolute times: stage "
                              "layout ESTIMATED (its device_execution put at the first record "
                              "of the calibrated capture)")
    # too early for that: at time 0
    early = calibrated(tmp_path / "early", ROWS, pre=(990, 1_010, 100),
                       post=(1_000_990, 1_001_010, 1_000_100))
    (rp,) = plan_of(rep, early).reports
    assert (rp.origin_ns, rp.how) == (0.0, ("its start put at time 0 (its device_execution "
                                           "at the calibrated capture's first record would "
                                           "start before)"))


def test_a_profile_without_a_calibrated_capture_starts_with_the_other_inputs(tmp_path):
    rep = profile(tmp_path / "report", STAGES)
    tr = trace(tmp_path / "trace.json", [("compile", R + 7, R + 100), ("parse", R + 3, R + 5)])
    (rp,) = plan_of(rep, tr).reports
    assert (rp.origin_ns, rp.how) == (R + 3, "its start put at the start of the other inputs")
    (rp,) = plan_of(rep).reports
    assert (rp.origin_ns, rp.how) == (0.0, "its start put at time 0")
    # a profile without device_execution beside a calibrated capture: the other inputs
    rep2 = profile(tmp_path / "r2", [{"name": "parse", "seconds": 0.001, "children": []}])
    cap = calibrated(tmp_path / "cap", ROWS, pre=(R - 10, R + 10, 100),
                     post=(R + 1_000_000 - 10, R + 1_000_000 + 10, 1_000_100))
    (rp,) = plan_of(rep2, tr, cap).reports
    assert (rp.origin_ns, rp.how) == (R + 3, "its start put at the start of the other inputs")


def test_of_two_calibrated_captures_the_earlier_first_record_places_the_profile(tmp_path):
    rep = profile(tmp_path / "report", [{"name": "device_execution", "seconds": 0.001,
                                         "children": []}])
    late = calibrated(tmp_path / "w" / "dfx_outputs" / "rank0", ROWS,
                      pre=(R - 10, R + 10, 100), post=(R + 999_990, R + 1_000_010, 1_000_100))
    early = calibrated(tmp_path / "w" / "dfx_outputs" / "rank1", ROWS,
                       pre=(R - 5_010, R - 4_990, 100),
                       post=(R + 994_990, R + 995_010, 1_000_100))
    assert late and early
    (rp,) = plan_of(rep, tmp_path / "w").reports
    assert rp.origin_ns == R - 5_000 + 900


# ------------------------------------------------------------------ clk=dev spans' offset

WALL_SPANS = [("chip.run", R - 300, 1_000_400), ("chip.run.runner_run", R, 1_000_000),
              ("chip.run.runner_run.device_wall", 0, 6_000, "dev")]


def phased(d: Path, sched, orch) -> Path:
    """Level-4 records: ROWS, one scheduler phase and one orchestrator phase (cycles)."""
    records(d, ROWS)
    doc = json.loads((d / "chip_swimlane_records.json").read_text())
    doc.update(chip_swimlane_level=4, aicpu_tasks=[],
               aicpu_scheduler_phases=[[{"kind": "dispatch", "start_cycles": sched[0],
                                         "end_cycles": sched[1]}]],
               aicpu_orchestrator_phases=[[{"start_cycles": orch[0], "end_cycles": orch[1]}]])
    (d / "chip_swimlane_records.json").write_text(json.dumps(doc))
    return d


@pytest.mark.parametrize("orch_span, q_mid", [
    # q (device_wall ns = nominal ns + q): records in [0 - 1000, 6000 - 4000] = [-1000, 2000];
    # sched phases 1500..3500 in device_wall.sched 2000..4500: [500, 1000]; orch phases
    # 1200..1300 in device_wall.orch 1500..2100: [300, 800]. Together [500, 800]: 650.
    ((1_500, 600), 650),
    # orch in 100..500: [-1100, -800], which excludes sched's: their hull [-1100, 2000]
    ((100, 400), 450),
])
def test_a_hand_placed_captures_device_wall_spans_follow_its_records(tmp_path, orch_span,
                                                                     q_mid):
    """--offset-us 100 puts the records at p = R + 100 us - 1000 (nominal + p); the clk=dev
    spans go at o = p - q, q where the phases put device_wall against the records."""
    d = phased(tmp_path / "cap", (1_500, 3_500), (1_200, 1_300))
    run_log(d, 7, [*WALL_SPANS, ("chip.run.runner_run.device_wall.sched", 2_000, 2_500, "dev"),
                   ("chip.run.runner_run.device_wall.orch", *orch_span, "dev")])
    p = plan_of(d, offset_us=100)
    assert p.captures[0].device.offset_ns == R + 99_000
    assert p.wall_offsets == {(str(d / "host_log.txt"), 7, 1): (R + 99_000 - q_mid,
                                                                "estimated")}


@pytest.mark.parametrize("offset_us, at", [
    (0, R),                          # p - q = R - 1000 - 500: before runner_run starts
    (2_000, R + 1_000_000 - 6_000),  # past where device_wall (6 us) still ends inside it
])
def test_device_wall_spans_stay_inside_their_host_span(tmp_path, offset_us, at):
    d = records(tmp_path / "cap", ROWS)
    run_log(d, 7, WALL_SPANS)
    assert plan_of(d, offset_us=offset_us).wall_offsets[(str(d / "host_log.txt"), 7, 1)] == (
        at, "estimated")


def test_device_wall_spans_of_an_invocation_without_a_capture_are_centred(tmp_path):
    """No records: device_wall starts in runner_run [R, R + 1 ms] at o and its content (a
    sched child ending at 8100) ends inside it: o in [R, R + 1 ms - 8100], the middle. A
    runner_run too short for the content gives no offset; a device_wall longer than its
    runner_run (a simulator's) is no bound on its own end."""
    def offsets(name, spans):
        run_log(tmp_path / name, 7, spans)
        return plan_of(tmp_path / name).wall_offsets

    sched = ("chip.run.runner_run.device_wall.sched", 100, 8_000, "dev")
    key = (str(tmp_path / "a" / "host_log.txt"), 7, 1)
    assert offsets("a", [*WALL_SPANS, sched]) == {
        key: (R + (1_000_000 - 8_100) // 2, "estimated: middle of its host span")}
    assert offsets("b", WALL_SPANS) == {(str(tmp_path / "b" / "host_log.txt"), 7, 1): (
        R + (1_000_000 - 6_000) // 2, "estimated: middle of its host span")}
    short = [("chip.run.runner_run", R, 8_000), ("chip.run.runner_run.device_wall", 0, 100,
                                                 "dev"), sched]
    assert offsets("c", short) == {}
    long = [("chip.run.runner_run", R, 8_000),
            ("chip.run.runner_run.device_wall", 0, 20_000, "dev")]
    assert offsets("d", long) == {(str(tmp_path / "d" / "host_log.txt"), 7, 1): (
        R + 4_000, "estimated: middle of its host span")}


def test_device_wall_on_another_thread_is_placed_in_the_invocations_runner_run(tmp_path):
    d = tmp_path / "log"
    run_log(d, 7, WALL_SPANS)
    text = (d / "host_log.txt").read_text().splitlines()
    text[2] = text[2].replace("tid=7", "tid=9")          # device_wall's line
    (d / "host_log.txt").write_text("\n".join(text) + "\n")
    assert plan_of(d).wall_offsets == {(str(d / "host_log.txt"), 7, 1): (
        R + (1_000_000 - 6_000) // 2, "estimated: middle of its host span")}


def anchored(d: Path, first: int, rtt: int = 0, drift: int = 0) -> Path:
    """ROWS with clock anchors at 1 ns a cycle that put cycle 1000 at host `first` ns
    (each sample's host time: the middle of its round trip `rtt`); `drift`: the end
    anchor that many ns later, i.e. 1 + drift / 9500 ns a cycle from cycle 500, which puts
    cycle 1000 drift / 19 ns later than `first`."""
    return calibrated(d, ROWS, (first - 500 - rtt // 2, first - 500 + rtt // 2, 500),
                      (first + 9_000 + drift - rtt // 2, first + 9_000 + drift + rtt // 2,
                       10_000))


def test_a_calibrated_captures_device_wall_spans_follow_its_records(tmp_path):
    """Anchors put cycle 1000 at R + 3000; q = [-1000, 2000] (the records in device_wall),
    its middle 500: device_wall's origin goes at R + 3000 - (1000 + 500) = R + 1500. Put
    later than device_wall can start and still end inside runner_run: at R + 994 us."""
    d = anchored(tmp_path / "cap", R + 3_000)
    run_log(d, 7, WALL_SPANS)
    p = plan_of(d)
    assert p.captures[0].device.status == "calibrated"
    assert p.wall_offsets == {(str(d / "host_log.txt"), 7, 1): (R + 1_500, "calibrated ±0 ns")}
    late = anchored(tmp_path / "late", R + 2_001_000)
    run_log(late, 7, WALL_SPANS)
    assert plan_of(late).wall_offsets[(str(late / "host_log.txt"), 7, 1)] == (
        R + 994_000, "calibrated ±0 ns")


@pytest.mark.parametrize("first, said, agrees", [
    # span containment: the join brackets the origin cycle to [4000 - 6000, 1000]; the
    # records (cycles 1000..4000, 1 ns each) inside runner_run [R, R + 1 ms] allow offsets
    # [R - 1000, R + 996000] (device_wall's own length is no bound). The anchors put the
    # offset at first - 1000, ±100 ns: they agree from first = R - 100 to R + 997100, and
    # the summary says what containment allows around them.
    (R + 3_000, "it allows -3000 ns/+994.0 us around where the anchors put the device", True),
    (R + 1_500, "it allows -1500 ns/+995.5 us around where the anchors put the device", True),
    (R + 500, "it allows -500 ns/+996.5 us around where the anchors put the device", True),
    (R - 100, "it allows +100 ns/+997.1 us around where the anchors put the device", True),
    (R - 101, "1 ns earlier", False),
    (R + 997_100, "it allows -997.1 us/-100 ns around where the anchors put the device", True),
    (R + 997_101, "1 ns later", False),
])
def test_a_calibrated_capture_is_cross_checked_against_its_invocation(tmp_path, first, said,
                                                                      agrees):
    d = anchored(tmp_path / "cap", first, rtt=200)
    run_log(d, 7, WALL_SPANS)
    p = plan_of(d)
    dev = p.captures[0].device
    assert (dev.status, dev.uncertainty_ns) == ("calibrated", 100)
    assert (dev.offset_lo_ns, dev.offset_hi_ns) == (first - 1_100, first - 900)
    where = f"span containment in {d / 'host_log.txt'} (pid 7 inv 1)"
    if agrees:
        assert dev.cross_check == f"{where} agrees: {said}"
        assert p.warnings == []
    else:
        assert dev.cross_check is None
        assert p.warnings == [(
            f"{d / 'chip_swimlane_records.json'}: its clock anchors put it {said} than "
            f"anything {where} allows (the anchors or the run log are wrong; the anchors "
            "are used)")]


def test_a_calibrated_capture_and_a_log_of_another_run_are_refused(tmp_path):
    """device_wall (1 us) cannot hold records 3 us long, nor runner_run (2 us) them
    device_wall: not one run, even with anchors."""
    d = anchored(tmp_path / "cap", R + 3_000)
    run_log(d, 7, [("chip.run.runner_run", R, 2_000),
                   ("chip.run.runner_run.device_wall", 0, 1_000, "dev")])
    with pytest.raises(TraceInputError, match="cannot describe one run") as e:
        plan_of(d)
    assert e.value.path == str(d / "chip_swimlane_records.json")
    assert e.value.problem.startswith(f"and {d / 'host_log.txt'} (pid 7 inv 1) cannot "
                                      "describe one run: ")


def test_exact_device_times_stay_exact_past_float_precision():
    """A whole number of ns per cycle and an integer offset: int64 all the way, so a time
    near the 2^62 ns limit keeps its last ns (float64 would not); else rounded once."""
    import numpy as np

    big = 4_000_000_000_000_000_001                 # ns; float64 has no odd integers here
    ghz = DeviceClock(PlacementStatus.CONTAINED, GHZ, "", offset_ns=3)
    assert ghz.to_ns(np.array([big], dtype=np.int64)).tolist() == [big + 3]
    slow = DeviceClock(PlacementStatus.CONTAINED, 50_000_000, "", offset_ns=-7)          # 20 ns a cycle
    assert slow.to_ns(np.array([big // 20], dtype=np.int64)).tolist() == [big - 1 - 7]
    hz = DeviceClock(PlacementStatus.CONTAINED, 1, "", offset_ns=0)                       # 1 s a cycle
    assert hz.to_ns(np.array([4_000_000_001], dtype=np.int64)).tolist() == [
        4_000_000_001_000_000_000]
    frac = DeviceClock(PlacementStatus.ESTIMATED, GHZ, "", offset_ns=0.4).to_ns(np.array([0, 1, 3]))
    assert frac.dtype == np.int64 and frac.tolist() == [0, 1, 3]


def test_a_calibrated_capture_on_another_host_is_moved_by_its_run_logs_anchor(tmp_path):
    """The anchors put cycle 1000 at R + 3000 on the log's host, 3 s behind the trace's."""
    import numpy as np

    wall = 1_700_000_000_000_000_000
    d = anchored(tmp_path / "cap", R + 3_000)
    run_log(d, 7, WALL_SPANS, anchor=(R, wall + 3_000_000_000))
    tr = trace(tmp_path / "trace.json", [("compile", 0, 3 * R)], anchor=(R, wall))
    (cp,) = plan_of(tr, d).captures
    assert (cp.device.status, cp.device.host_offset_ns) == ("calibrated", 3_000_000_000)
    assert cp.device.to_ns(np.array([1_000, 4_000])).tolist() == [
        R + 3_000_000_000 + 3_000, R + 3_000_000_000 + 6_000]
    assert cp.device.describe()["host_offset_ns"] == 3_000_000_000


@pytest.mark.parametrize("extra, origin", [
    ([], 0),                               # the join: origin in [4000 - 5000, 1000]
    ([(1, 3, 0, 0)], 0),                   # 0: never stamped, not a time
    ([(1, 3, 1, 1), (1, 4, 0, 0)], Fraction(-999, 2)),   # 1 is: origin in [-1000, 1]
])
def test_unstamped_times_are_no_part_of_a_contained_captures_extent(tmp_path, extra, origin):
    d = contained_run(tmp_path / "cap")
    records(d, ROWS + extra)
    (cp,) = plan_of(d).captures
    assert cp.device.status == "contained" and cp.device.containment.join.origin == origin


def test_a_capture_of_aicpu_tasks_only_is_contained_by_their_extent(tmp_path):
    d = contained_run(tmp_path / "cap")
    doc = json.loads((d / "chip_swimlane_records.json").read_text())
    doc.update(chip_swimlane_level=2, aicore_tasks=[], aicpu_tasks=[[0, 1, 1_000, 4_000]])
    (d / "chip_swimlane_records.json").write_text(json.dumps(doc))
    (cp,) = plan_of(d).captures
    assert cp.device.status == "contained" and cp.device.containment.join.origin == 0
    # the tasks (cycles 1000..4000) inside runner_run: offsets [R - 1000, R + 996000]
    assert (cp.device.offset_ns, cp.device.uncertainty_ns) == (R, 996_000)


def test_aicpu_lifecycle_records_widen_an_estimated_captures_extent(tmp_path):
    """Today's writer golden (50 MHz: 20 ns a cycle) with one AICPU thread whose handshake
    starts at cycle 1 and whose exit wait ends at cycle 1,000,000, before and after every
    other record: the extent is [20 ns, 20 ms], so in a 30 ms device_execution stage from R
    the offset lies in [R - 20, R + 30 ms - 20 ms]."""
    golden = TEST_FIXTURES / "simpler_today" / "writer_golden"
    doc = json.loads((golden / "chip_swimlane_records.json").read_text())
    doc["aicpu_lifecycle_records"] = [{"aicpu_thread_id": 0, "handshake_start_cycles": 1,
                                       "handshake_complete_cycles": 2,
                                       "exit_wait_start_cycles": 999_999,
                                       "exit_wait_end_cycles": 1_000_000}]
    d = tmp_path / "dfx_outputs"
    d.mkdir()
    (d / "chip_swimlane_records.json").write_text(json.dumps(doc))
    tr = trace(tmp_path / "trace.json", [("device_execution", R, R + 30_000_000)])
    (cp,) = plan_of(tr, d).captures
    lo, hi = R - 20, R + 30_000_000 - 20_000_000
    assert (cp.device.status, cp.device.offset_ns, cp.device.uncertainty_ns) == (
        "estimated", (lo + hi) / 2, (hi - lo) / 2)


def test_device_wall_spans_from_their_own_origin_listed_as_simpler_writes_them(tmp_path):
    """Simpler writes a span when it ends, so children come first; device_wall's clock has
    its own origin (here 50 us). device_wall starts in runner_run at o + 50 us and its sched
    child ends there by o + 58.1 us: o in [R - 50 us, R + 1 ms - 58.1 us], the middle (the
    child ends after device_wall does, at o + 56 us, which bounds nothing then)."""
    d = tmp_path / "log"
    run_log(d, 7, [("chip.run.runner_run.device_wall.sched", 50_100, 8_000, "dev"),
                   ("chip.run.runner_run.device_wall", 50_000, 6_000, "dev"), *WALL_SPANS[:2]])
    lo, hi = R - 50_000, R + 1_000_000 - 58_100
    assert plan_of(d).wall_offsets == {(str(d / "host_log.txt"), 7, 1): (
        (lo + hi) // 2, "estimated: middle of its host span")}
    # no child: device_wall's own end (o + 56 us) bounds it inside runner_run
    run_log(tmp_path / "bare", 7, [("chip.run.runner_run.device_wall", 50_000, 6_000, "dev"),
                                   *WALL_SPANS[:2]])
    lo, hi = R - 50_000, R + 1_000_000 - 56_000
    assert plan_of(tmp_path / "bare").wall_offsets == {
        (str(tmp_path / "bare" / "host_log.txt"), 7, 1): (
            (lo + hi) // 2, "estimated: middle of its host span")}


def test_device_wall_as_long_as_its_runner_run_has_one_place(tmp_path):
    """device_wall 1 ms in a 1 ms runner_run: it must start where runner_run does, with or
    without a hand-placed capture (whose records would otherwise move it)."""
    spans = [("chip.run.runner_run", R, 1_000_000),
             ("chip.run.runner_run.device_wall", 0, 1_000_000, "dev")]
    run_log(tmp_path / "log", 7, spans)
    assert plan_of(tmp_path / "log").wall_offsets == {
        (str(tmp_path / "log" / "host_log.txt"), 7, 1): (R, "estimated: middle of its host span")}
    d = records(tmp_path / "cap", ROWS)
    run_log(d, 7, spans)
    assert plan_of(d, offset_us=100).wall_offsets == {
        (str(d / "host_log.txt"), 7, 1): (R, "estimated")}


def test_device_wall_goes_in_its_own_threads_runner_run(tmp_path):
    """One invocation, runner_run on threads 7 and 9, device_wall on 9: thread 9's holds it."""
    d = tmp_path / "log"
    run_log(d, 7, [("chip.run.runner_run", R, 1_000_000),
                   ("chip.run.runner_run", R + 2_000_000, 100_000),
                   ("chip.run.runner_run.device_wall", 0, 6_000, "dev")])
    text = (d / "host_log.txt").read_text().splitlines()
    text[1:] = [line.replace("tid=7", "tid=9") for line in text[1:]]
    (d / "host_log.txt").write_text("\n".join(text) + "\n")
    assert plan_of(d).wall_offsets == {(str(d / "host_log.txt"), 7, 1): (
        R + 2_000_000 + (100_000 - 6_000) // 2, "estimated: middle of its host span")}


def test_device_wall_spans_of_a_log_of_another_host_are_moved_with_it(tmp_path):
    """The log's host is 3 s behind the trace's: every offset of its clk=dev spans too,
    whether centred (no capture), contained or calibrated."""
    wall = 1_700_000_000_000_000_000
    shift = 3_000_000_000
    tr = trace(tmp_path / "trace.json", [("compile", 0, 3 * R)], anchor=(R, wall))
    run_log(tmp_path / "log", 7, WALL_SPANS, anchor=(R, wall + shift))
    assert plan_of(tr, tmp_path / "log").wall_offsets[
        (str(tmp_path / "log" / "host_log.txt"), 7, 1)] == (
        R + shift + (1_000_000 - 6_000) // 2, "estimated: middle of its host span")
    # contained: the join puts the origin cycle at (4000 - 6000 + 1000) / 2 = -500, the
    # block [0, 6000] from runner_run's start; the device_wall spans' origin is the block's
    cap = records(tmp_path / "cap", ROWS)
    run_log(cap, 7, WALL_SPANS, anchor=(R, wall + shift))
    p = plan_of(tr, cap)
    assert p.captures[0].device.status == "contained"
    assert p.wall_offsets[(str(cap / "host_log.txt"), 7, 1)][0] == R + shift
    # calibrated: the anchors put cycle 1000 at R + 3000 on the log's host
    cal = anchored(tmp_path / "cal", R + 3_000)
    run_log(cal, 7, WALL_SPANS, anchor=(R, wall + shift))
    p = plan_of(tr, cal)
    assert p.captures[0].device.cross_check.startswith(
        f"span containment in {cal / 'host_log.txt'} (pid 7 inv 1) agrees: it allows "
        "-3000 ns/+994.0 us")
    assert p.wall_offsets[(str(cal / "host_log.txt"), 7, 1)][0] == R + shift + 1_500


def test_a_drifting_clock_is_cross_checked_at_the_first_record(tmp_path):
    """The end anchor 950 ns late: 1.1 ns a cycle from cycle 500, so cycle 1000 is at
    R + 3050 (offset R + 2050) and the last record, cycle 4000, at R + 2500 + 3500 * 1.1 =
    R + 6350 (offset R + 2350): the anchors' interval spans both. Containment allows
    [R - 1000, R + 996000]: around the first record's offset, -3050 ns/+993950 ns."""
    d = anchored(tmp_path / "cap", R + 3_000, drift=950)
    run_log(d, 7, WALL_SPANS)
    dev = plan_of(d).captures[0].device
    assert (dev.drawn_offset_ns, dev.offset_lo_ns, dev.offset_hi_ns) == (
        R + 2_050, R + 2_050, R + 2_350)
    assert dev.cross_check == (f"span containment in {d / 'host_log.txt'} (pid 7 inv 1) "
                               "agrees: it allows -3050 ns/+994.0 us around where the "
                               "anchors put the device")


def test_a_hand_placed_capture_at_500_mhz_moves_its_device_wall_in_ns(tmp_path):
    """2 ns a cycle: records 2000..8000 ns, --offset-us 100: p = R + 100 us - 2000; q in
    [0 - 2000, 6000 - 8000] = -2000: o = p - q = R + 100 us. Calibrated at 500 MHz, cycle
    1000 at R + 3000: o = R + 3000 - (2000 - 2000)."""
    d = records(tmp_path / "cap", ROWS, freq=500_000_000)
    run_log(d, 7, WALL_SPANS)
    p = plan_of(d, offset_us=100)
    assert p.captures[0].device.offset_ns == R + 98_000
    assert p.wall_offsets[(str(d / "host_log.txt"), 7, 1)] == (R + 100_000, "estimated")
    cal = calibrated(tmp_path / "cal", ROWS, (R + 2_000, R + 2_000, 500),
                     (R + 20_000, R + 20_000, 9_500), freq=500_000_000)
    run_log(cal, 7, WALL_SPANS)
    p = plan_of(cal)
    assert p.captures[0].device.status == "calibrated"
    assert p.wall_offsets[(str(cal / "host_log.txt"), 7, 1)][0] == R + 3_000


def test_a_device_clock_runner_run_never_names_the_run_pid(tmp_path):
    """pid 9's runner_run is on the device clock: the pid is the anchor's (7), not 9."""
    d = records(tmp_path / "cap", ROWS)
    run_log(d, 7, [("chip.run", R, 10), ("chip.run.runner_run", 0, 10, "dev")], anchor=(R, 5))
    text = (d / "host_log.txt").read_text().splitlines()
    text[2] = text[2].replace("pid=7 tid=7", "pid=9 tid=9")
    (d / "host_log.txt").write_text("\n".join(text) + "\n")
    assert plan_of(d).captures[0].run_pid == 7
