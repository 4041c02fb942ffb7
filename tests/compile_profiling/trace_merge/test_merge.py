"""merge_traces on every real capture: reading, placement rules, layout, ids."""

from __future__ import annotations

import gzip
import json
import re
import shutil

import pytest
from merge_inputs import (
    CALIBRATED,
    CASES,
    ESTIMATED,
    FIXTURES,
    capture_host_facts,
    compile_trace_around,
    kernel_names,
)

from pypto.compile_profiling.profile_timeline import profile_to_timeline
from pypto.compile_profiling.timeline import format_for_path, write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.views import FLOWS
from pypto.errors import ProfileWriteError, TraceInputError

STRACE = re.compile(r"\[STRACE\] .*?name=(\S+) ts=(\d+) dur=(\d+)(.*)")


def strace_spans(case) -> dict[str, tuple[int, int, bool]]:
    """name -> (ts, dur, clk=dev) of the capture's run log."""
    out = {}
    for line in (FIXTURES / case / "host_log.txt").read_text().splitlines():
        m = STRACE.search(line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)), "clk=dev" in m.group(4))
    return out


def records(case) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


def device_rows(tl, view="AICore"):
    """The device slices of one view (on AICore: the kernel bars, not the setup waits)."""
    return [s for s in tl.slices() if s.process.name.startswith("Device") and view in
            s.process.name and (view != "AICore" or s.cat == "aicore")]


def check_nesting(tl):
    """Slices of each track nest properly (what both exporters and Perfetto need)."""
    by_track = {}
    for s in tl.slices():
        by_track.setdefault(id(s.track), []).append(s)
    for rows in by_track.values():
        stack = []
        for s in sorted(rows, key=lambda s: (s.start_ns, -s.dur_ns)):
            while stack and stack[-1] <= s.start_ns:
                stack.pop()
            assert not stack or s.end_ns <= stack[-1], f"{s.name} sticks out of its parent"
            stack.append(s.end_ns)


def uncertainty_ns(proc) -> float:
    return proc.args["alignment"]["uncertainty_ns"]


@pytest.mark.parametrize("case", CASES)
def test_each_capture_merges_alone_with_its_alignment_stated(case):
    r = merge_traces([FIXTURES / case])
    tl = r.timeline
    assert len(device_rows(tl)) == len(records(case)["aicore_tasks"])
    check_nesting(tl)
    procs = [p for p in tl.processes if p.name.startswith("Device")]
    if case in CALIBRATED:
        assert all("(calibrated ±" in p.name for p in procs if "Orchestrator" not in p.name)
        assert not tl.metadata["estimated"]
    else:
        # contained in its own run log's runner_run: the offset's interval is the bound
        assert all(p.estimated and re.search(r"\(contained -[\d.]+ [mun]?s/\+[\d.]+ ms\)",
                                             p.name) for p in procs)
        assert tl.metadata["estimated"] is True
        assert any("placed by span containment, not calibrated: the records may lie" in w
                   for w in r.warnings)
    facts = capture_host_facts(FIXTURES / case)
    assert any(p.os_pid == facts["pid"] and p.pid == facts["pid"] for p in tl.processes)


# The simulator stamps device_wall from its own clock: in this capture it runs 60 ms past
# runner_run's end once put where the device really started, which Simpler's containment
# (device_wall inside runner_run) cannot know: the interval we publish does not rely on it.
SIM_WALL_OVERRUN = "tmr_vector_example_l4_depgen"


@pytest.mark.parametrize("case", ESTIMATED)
def test_device_orchestrated_capture_lies_inside_its_runner_run_and_the_truth_is_covered(case):
    """Span containment: the device block inside runner_run, drawn at the earliest placement
    (as Simpler draws it); the published interval says how much earlier or later the records
    may lie. On this simulator the device counter is the host's monotonic clock, so the
    true position is known: inside the interval on every capture, the one whose
    device_wall overruns runner_run too (Simpler's slack alone misses it there)."""
    tl = merge_traces([FIXTURES / case]).timeline
    spans = strace_spans(case)
    rr_ts, rr_dur, _ = spans["chip.run.runner_run"]
    rec = records(case)
    freq = rec["metadata"]["clock_freq_hz"]
    true_first = min(r[3] for r in rec["aicore_tasks"]) * 1e9 / freq
    rows = device_rows(tl)
    first = min(s.start_ns for s in rows)
    assert rr_ts <= first and max(s.end_ns for s in rows) <= rr_ts + rr_dur
    how = rows[0].process.args["alignment"]
    drawn, lo, hi = how["offset_ns"], how["offset_lo_ns"], how["offset_hi_ns"]
    assert lo <= drawn <= hi
    assert uncertainty_ns(rows[0].process) < rr_dur              # the log bounded it
    later = true_first - first
    assert lo - drawn <= later <= hi - drawn
    if case == SIM_WALL_OVERRUN:
        assert later > how["slack_ns"] + how["join"]["residual_ns"] / 2


@pytest.mark.parametrize("case", [c for c in CASES
                                  if (FIXTURES / c / "host_phase_records.jsonl").exists()])
def test_host_phase_records_are_drawn_on_their_thread_inside_the_run_logs_spans(case):
    """Every record of host_phase_records.jsonl is a slice on its real pid/tid, at its own
    CLOCK_MONOTONIC times moved as the run log's spans are, nested inside `chip.run.bind` or
    `chip.run.runner_run` on the same thread."""
    lines = [json.loads(ln) for ln in (FIXTURES / case / "host_phase_records.jsonl")
             .read_text().splitlines() if ln.strip()]
    r = merge_traces([FIXTURES / case])
    slices = list(r.timeline.slices())
    phases = [s for s in slices if s.cat == "simpler_host_phase"]
    spans = {s.name: s for s in slices if s.cat == "simpler_host"}
    offset = spans["chip.run"].start_ns - strace_spans(case)["chip.run"][0]
    want = sorted((ln["pid"], rec["tid"], rec["phase"], rec["start_ns"] + offset,
                   rec["end_ns"] + offset) for ln in lines for rec in ln["records"])
    assert sorted((s.process.pid, s.track.tid, s.name, s.start_ns, s.end_ns)
                  for s in phases) == want
    for s in phases:
        assert s.track is spans["chip.run"].track
        assert any(spans[n].start_ns <= s.start_ns and s.end_ns <= spans[n].end_ns
                   for n in ("chip.run.bind", "chip.run.runner_run"))
    assert any("host_phase_records.jsonl: " in line and f"{len(phases)} host phases" in line
               for line in r.summary_lines)
    check_nesting(r.timeline)


@pytest.mark.parametrize("case", ESTIMATED)
def test_clk_dev_spans_are_drawn_on_a_device_clock_lane_inside_runner_run(case):
    """Placement rule 3: device_wall starts inside chip.run.runner_run and its children (orch,
    sched, ...) lie inside both; device_wall itself may end after runner_run (it does, by
    60 ms, in tmr_vector_example), so its end is not asserted."""
    tl = merge_traces([FIXTURES / case]).timeline
    spans = strace_spans(case)
    dev = [s for s in tl.slices() if s.track.name.startswith("device clock")]
    assert sorted(s.name for s in dev) == sorted(n for n, v in spans.items() if v[2])
    by = {s.name: s for s in tl.slices() if s.cat == "simpler_host"}
    rr = by["chip.run.runner_run"]
    wall = next(s for s in dev if s.name == "chip.run.runner_run.device_wall")
    assert rr.start_ns <= wall.start_ns <= rr.end_ns
    for s in dev:
        assert s.dur_ns == spans[s.name][1]
        if s is not wall:
            assert wall.start_ns <= s.start_ns and s.end_ns <= min(wall.end_ns, rr.end_ns)
    check_nesting(tl)


def test_two_anchorless_ranks_are_each_placed_against_their_own_run(tmp_path):
    """Placement rule 1: each rank inside its own run's runner_run span, never another's."""
    dfx = tmp_path / "work" / "dfx_outputs"
    cases = ("tmr_vector_example_l4_depgen", "tmr_mixed_example_case1_l4_depgen")
    for r, case in enumerate(cases):
        shutil.copytree(FIXTURES / case, dfx / f"rank{r}" / "d0")
    tl = merge_traces([tmp_path / "work"]).timeline
    for r, case in enumerate(cases):
        rr_ts, rr_dur, _ = strace_spans(case)["chip.run.runner_run"]
        rows = [s for s in device_rows(tl) if f"r{r}d0" in s.process.name]
        assert rows
        assert rr_ts <= min(s.start_ns for s in rows)
        assert max(s.end_ns for s in rows) <= rr_ts + rr_dur
    # every id names one process or thread; only a main thread shares its process's pid
    ids = [p.pid for p in tl.processes] + [t.tid for t in tl.tracks
                                           if t.tid != t.process.pid]
    assert len(ids) == len(set(ids))
    main_threads = [t for t in tl.tracks if t.tid == t.process.pid]
    assert main_threads and all(t.os_tid == t.process.os_pid for t in main_threads)


@pytest.mark.parametrize("case", CALIBRATED)
def test_calibrated_capture_lands_inside_device_execution_with_codegen_flows(tmp_path, case):
    info = compile_trace_around(FIXTURES / case, tmp_path / "trace.json")
    r = merge_traces([tmp_path / "trace.json", FIXTURES / case])
    tl = r.timeline
    rows = device_rows(tl)
    assert rows
    for s in rows:
        assert info["exec_start"] <= s.start_ns and s.end_ns <= info["exec_end"], s.name
    order = [p.name.split(" (")[0] for p in sorted(tl.processes, key=lambda p: p.sort_index)]
    # as the work flows: compile, the host's submits and uploads, then the device
    assert order[:3] == ["PyPTO compile", f"{case} · Host Orchestrator",
                         f"Device {case} · AICore"]
    # issue 22: an arrow from each kernel's codegen stage to every task of that kernel (to
    # its earliest block), not to its first task only
    kflows = [f for f in tl.flows if f.cat == "kernel_codegen"]
    kernels = kernel_names(FIXTURES / case)
    tasks = {s.name for s in rows if s.name.split("(")[0] in kernels}
    got = [(f.src.names[f.src.name[sr_]].split(":", 1)[1], f.dst.names[f.dst.name[dr]],
            int(f.dst.start_ns[dr])) for f in kflows
           for sr_, dr in zip(f.src_row.tolist(), f.dst_row.tolist())]
    assert sorted(task for _, task, _ in got) == sorted(tasks)
    for kernel, task, start in got:
        assert task.startswith(kernel + "(")
        assert start == min(s.start_ns for s in rows if s.name == task)
    assert {k for k, _, _ in got} == set(kernels)
    if kernels:          # a capture without a name map has no kernel names to link
        assert f"linked {len(kernels)} kernel_codegen stage(s) to their kernels' " \
               f"{len(tasks)} device task(s)" in r.summary_lines
    src = {m["kind"]: m for m in tl.metadata["sources"]}
    assert src["swimlane_records"]["estimated"] is False
    assert 0 < src["swimlane_records"]["uncertainty_ns"] < 1000
    # the compile trace and the Simpler run log are one process: its real pid
    comp = next(p for p in tl.processes if p.name == "PyPTO compile")
    assert comp.pid == info["pid"] == comp.os_pid
    assert {s.name for s in tl.slices() if s.process is comp} >= {"device_execution", "chip.run"}
    check_nesting(tl)



def test_processes_are_ordered_as_the_work_flows_each_capture_together():
    """Compile and host processes first, then each capture in input order: its host
    orchestrator, cores, schedulers, device orchestrator, then the views made from them."""
    from pypto.compile_profiling import analysis

    cases = ["hbg_bgemm_l4_depgen", "tmr_mixed_example_case1_l4_depgen"]
    r = merge_traces([FIXTURES / c for c in cases], views=["all"],
                     derived_views=analysis.TIMELINE_VIEWS)
    order = [p.name.split(" (")[0] for p in sorted(r.timeline.processes,
                                                   key=lambda p: p.sort_index)]
    assert [n.split(" ")[0] for n in order[:2]] == ["Simpler", "Simpler"]    # run logs
    assert order[2:] == [
        "hbg_bgemm_l4_depgen · Host Orchestrator", "Device hbg_bgemm_l4_depgen · AICore",
        "Device hbg_bgemm_l4_depgen · AICPU scheduler",
        "Device hbg_bgemm_l4_depgen · Scheduler view",
        "Device hbg_bgemm_l4_depgen · Critical path",
        "Device tmr_mixed_example_case1_l4_depgen · AICore",
        "Device tmr_mixed_example_case1_l4_depgen · AICPU scheduler",
        "Device tmr_mixed_example_case1_l4_depgen · Orchestrator",
        "Device tmr_mixed_example_case1_l4_depgen · Scheduler view",
        "Device tmr_mixed_example_case1_l4_depgen · Critical path"]

def test_kernel_codegen_arrows_are_a_flow_kind_to_leave_out(tmp_path):
    """One arrow per task is many at scale: `--flows` without `kernel-codegen` leaves them
    out (and only them)."""
    case = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"
    compile_trace_around(case, tmp_path / "trace.json")
    every = merge_traces([tmp_path / "trace.json", case]).timeline
    assert sum(len(f) for f in every.flows if f.cat == "kernel_codegen") == 1000
    kinds = [k for k in FLOWS if k != "kernel-codegen"]
    r = merge_traces([tmp_path / "trace.json", case], flows=kinds)
    assert not [f for f in r.timeline.flows if f.cat == "kernel_codegen"]
    assert sum(map(len, r.timeline.flows)) == sum(map(len, every.flows)) - 1000
    assert not any("kernel_codegen stage(s)" in line for line in r.summary_lines)


@pytest.mark.parametrize("case", ESTIMATED)
def test_estimated_capture_is_bounded_by_device_execution_and_offset_us_overrides(tmp_path,
                                                                                  case):
    info = compile_trace_around(FIXTURES / case, tmp_path / "trace.json")
    tl = merge_traces([tmp_path / "trace.json", FIXTURES / case]).timeline
    rows = device_rows(tl)
    first = min(s.start_ns for s in rows)
    assert info["exec_start"] <= first and max(s.end_ns for s in rows) <= info["exec_end"]
    tl2 = merge_traces([tmp_path / "trace.json", FIXTURES / case], offset_us=250).timeline
    assert min(s.start_ns for s in device_rows(tl2, "")) == info["exec_start"] + 250_000
    meta = {m["kind"]: m for m in tl2.metadata["sources"]}["swimlane_records"]
    assert meta["estimated"] and "--offset-us" in meta["alignment"]


def test_real_pids_and_tids_of_the_compile_trace_are_kept(tmp_path):
    """Placement rule 4: the merged files carry the real pid and native tids."""
    case = FIXTURES / CALIBRATED[0]
    info = compile_trace_around(case, tmp_path / "trace.json", worker_tid=777001)
    tl = merge_traces([tmp_path / "trace.json", case]).timeline
    comp = next(p for p in tl.processes if p.name == "PyPTO compile")
    tids = {t.tid for t in tl.tracks if t.process is comp}
    assert comp.pid == info["pid"] and 777001 in tids
    write_timeline(tl, tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    xs = [e for e in doc["traceEvents"] if e.get("name") == "device_execution"]
    assert xs[0]["pid"] == info["pid"]


def test_same_pid_from_another_host_is_kept_apart_and_named(tmp_path):
    case = FIXTURES / CALIBRATED[0]
    compile_trace_around(case, tmp_path / "a.json", host="hostA")
    doc = json.loads((tmp_path / "a.json").read_text())
    doc["otherData"]["host"] = "hostB"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    tl = merge_traces([tmp_path / "a.json", tmp_path / "b.json"]).timeline
    a, b = tl.processes
    assert a.pid == a.os_pid and b.pid != b.os_pid == a.os_pid
    assert f"pid {a.os_pid} on hostB" in b.name


def test_converted_trace_keeps_touching_slices_on_one_lane(tmp_path):
    """Placement rule 5: times are integer ns before any comparison (no overlap lanes)."""
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    r = merge_traces([case / "merged_swimlane.json"])
    assert not [t for t in r.timeline.tracks if "(overlap" in t.name]
    assert not [w for w in r.warnings if "sub-lanes" in w]
    procs = [p for p in r.timeline.processes if p.name.startswith("Device")]
    assert procs and all(p.estimated for p in procs)


def test_each_aiv_block_of_a_mix_task_is_named_after_the_kernel_it_ran():
    """deps.json gives a MIX task's kernels as (aic, aiv0, aiv1); the runtime pairs the AIV
    cores in core order (cluster c: the 2c-th and (2c+1)-th), so when AIV0 and AIV1 run
    different kernels each block carries its own, not AIV0's for both as Simpler draws."""
    case = FIXTURES / "tmr_mixed_example_case1_l4_depgen"
    rec = records(case.name)
    aiv_cores = [c for c, t in enumerate(rec["metadata"]["core_types"]) if t == "aiv"]
    deps = json.loads((case / "deps.json").read_text())["tasks"]
    kernels = {int(t["task_id"]): t["kernel_ids"] for t in deps}
    (name_map,) = case.glob("name_map_*.json")
    names = {int(k): v for k, v in
             json.loads(name_map.read_text())["callable_id_to_name"].items()}
    r = merge_traces([case])
    seen = 0
    for s in device_rows(r.timeline):
        task, core = int(s.args["task_id"]), int(s.args["core_id"])
        _aic, aiv0, aiv1 = kernels[task]
        if core not in aiv_cores or min(aiv0, aiv1) < 0 or aiv0 == aiv1:
            continue
        slot = aiv1 if aiv_cores.index(core) % 2 else aiv0
        assert s.args["kernel_id"] == slot and s.name.startswith(names[slot] + "("), s
        seen += 1
    assert seen == 16             # 2 AIV blocks of each of 4 tasks (0,1,2) and 4 (-1,3,4)


def test_loose_files_of_one_directory_form_one_capture():
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    r = merge_traces([case / "chip_swimlane_records.json", case / "deps.json",
                      next(case.glob("name_map_*.json"))])
    names = {s.name.split("(")[0] for s in device_rows(r.timeline)}
    assert names == {"GEMM", "ADD"}
    assert r.timeline.flow_count > 0


def test_pipeline_profile_is_placed_and_labelled_estimated(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "pipeline_profile.json").write_text(json.dumps({
        "total_seconds": 3.0, "stages": [
            {"name": "parse", "seconds": 0.5, "children": []},
            {"name": "codegen", "seconds": 1.0, "children": [
                {"name": "kernel_codegen:GEMM", "seconds": 0.4, "children": []},
                {"name": "orchestration_codegen", "seconds": 0.6000001, "children": []}]},
            {"name": "device_execution", "seconds": 1.5, "children": []}]}))
    case = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"
    r = merge_traces([report, case])
    tl = r.timeline
    rep = next(p for p in tl.processes if "pipeline_profile" in p.name)
    assert rep.estimated and rep.sort_index == 0
    stages = {s.name: s for s in tl.slices() if s.process is rep}
    assert stages["codegen"].start_ns == stages["parse"].start_ns + 500_000_000
    assert stages["kernel_codegen:GEMM"].start_ns == stages["codegen"].start_ns
    check_nesting(tl)  # the over-long last child is clipped to its parent
    # the first record on the device clock (the host orchestrator's phases come before)
    first_dev = min(s.start_ns for s in device_rows(tl, "") if "Orchestrator" not in
                    s.process.name)
    assert abs(stages["device_execution"].start_ns - first_dev) <= 1
    assert any("pipeline_profile.json" in w and "ESTIMATED" in w for w in r.warnings)
    assert any(f.cat == "kernel_codegen" for f in tl.flows)


def test_report_dir_prefers_trace_json_over_profile(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    compile_trace_around(FIXTURES / CALIBRATED[0], report / "trace.json")
    (report / "pipeline_profile.json").write_text('{"total_seconds": 1, "stages": []}')
    r = merge_traces([tmp_path])
    assert [p.name for p in r.timeline.processes] == ["PyPTO compile"]
    assert "exact" in r.summary_lines[0]


def test_trace_from_another_host_is_moved_by_wall_clock_anchors(tmp_path):
    case = FIXTURES / CALIBRATED[0]
    compile_trace_around(case, tmp_path / "a.json", host="hostA")
    doc = json.loads((tmp_path / "a.json").read_text())
    shift = 5_000_000_000_000
    for ev in doc["traceEvents"]:
        if ev["ph"] == "X":
            ev["ts"] += shift / 1000
        ev["pid"] = 99
    doc["otherData"]["host"] = "hostB"
    doc["otherData"]["clock_anchor"]["monotonic_ns"] += shift
    (tmp_path / "b.json").write_text(json.dumps(doc))
    tl = merge_traces([tmp_path / "a.json", tmp_path / "b.json"]).timeline
    a, b = tl.processes
    ea = next(s for s in tl.slices() if s.process is a and s.name == "device_execution")
    eb = next(s for s in tl.slices() if s.process is b and s.name == "device_execution")
    assert abs(eb.start_ns - ea.start_ns) <= 1
    assert "cross-host" in b.args["alignment"]


def _other_host_copy(case, dest, mono_ahead_ns=0, wall_ahead_ns=0):
    """The capture as another host logs it: its monotonic clock `mono_ahead_ns` ahead of
    ours (host spans and [CLOCK_ANCHOR] read more), its wall clock `wall_ahead_ns` ahead."""
    shutil.copytree(case, dest)
    log = (dest / "host_log.txt").read_text()
    log = re.sub(r"(\[CLOCK_ANCHOR\] .*?mono_ns=)(\d+)(.*?wall_ns=)(\d+)", lambda m: (
        m.group(1) + str(int(m.group(2)) + mono_ahead_ns) + m.group(3)
        + str(int(m.group(4)) + wall_ahead_ns)), log)
    log = "\n".join(re.sub(r" ts=(\d+)", lambda m: f" ts={int(m.group(1)) + mono_ahead_ns}",
                           line) if "[STRACE]" in line and "clk=dev" not in line else line
                    for line in log.split("\n"))
    (dest / "host_log.txt").write_text(log)
    return dest


def test_capture_from_another_host_is_moved_by_its_clock_anchor(tmp_path):
    """Another host's clock reads 7000 s more: through its [CLOCK_ANCHOR] its run lands
    where it ran, exactly where the same capture of this host lands."""
    case = FIXTURES / "tmr_vector_example_l4_depgen"
    compile_trace_around(case, tmp_path / "trace.json")
    same = merge_traces([tmp_path / "trace.json", case]).timeline
    other = _other_host_copy(case, tmp_path / "other_host", mono_ahead_ns=7_000_000_000_000)
    r = merge_traces([tmp_path / "trace.json", other])
    a = sorted(s.start_ns for s in device_rows(same))
    b = sorted(s.start_ns for s in device_rows(r.timeline))
    assert a == b
    assert any("cross-host" in line for line in r.summary_lines)


def test_sources_that_share_no_time_across_hosts_are_refused_or_aligned_start_to_start(
        tmp_path):
    """Issue 22: a capture whose wall clock puts it 7000 s after the compile trace cannot be
    from its run: refused in one line naming both and the gap, never drawn where Perfetto
    would drop it; `align="start"` puts their starts together."""
    case = FIXTURES / "tmr_vector_example_l4_depgen"
    compile_trace_around(case, tmp_path / "trace.json")
    other = _other_host_copy(case, tmp_path / "other_host", wall_ahead_ns=7_000_000_000_000)
    with pytest.raises(TraceInputError) as e:
        merge_traces([tmp_path / "trace.json", other])
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'trace.json'}: shares no time with {other} ")
    assert "(that starts 1.9 h after this ends)" in msg and "--align start" in msg
    assert "--offset-us" in msg and "\n" not in msg
    tl = merge_traces([tmp_path / "trace.json", other], align="start").timeline
    starts = [s.start_ns for s in tl.slices()]
    assert min(starts) >= 0
    comp = min(s.start_ns for s in tl.slices() if s.process.name == "PyPTO compile")
    host = [s for s in tl.slices() if s.cat == "simpler_host"]
    moved = min(min(s.start_ns for s in host), min(s.start_ns for s in device_rows(tl, "")))
    assert moved == comp
    assert any("--align start" in line for line in r_summary(tl))


def r_summary(tl):
    return [m["alignment"] for m in tl.metadata["sources"]]


def test_diagnostics_that_are_not_timelines_are_listed(tmp_path):
    leaf = tmp_path / "dfx_outputs"
    shutil.copytree(FIXTURES / CALIBRATED[0], leaf)
    (leaf / "pmu.csv").write_text("core,cycles\n0,1\n")
    (leaf / "args_dump").mkdir()
    r = merge_traces([tmp_path])
    listed = [line for line in r.summary_lines if "listed only" in line]
    assert len(listed) == 2 and any("pmu.csv" in line for line in listed)


def test_bad_inputs_raise_trace_input_error_naming_the_file(tmp_path):
    bad = tmp_path / "trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": -2, "pid": 1, "tid": 1, '
                   '"name": "a"}], "otherData": {"clock": "CLOCK_MONOTONIC"}}')
    with pytest.raises(TraceInputError, match=r"traceEvents\[0\]\.dur: negative duration") as e:
        merge_traces([bad])
    assert e.value.path == str(bad)
    with pytest.raises(TraceInputError, match="no such file"):
        merge_traces([tmp_path / "missing.json"])
    (tmp_path / "strace.json").write_text('{"traceEvents": []}')
    with pytest.raises(TraceInputError, match="clock is unknown"):
        merge_traces([tmp_path / "strace.json"])


def test_write_timeline_chooses_format_by_extension(tmp_path):
    tl = merge_traces([FIXTURES / CALIBRATED[0]]).timeline
    n_json = write_timeline(tl, tmp_path / "m.json")
    n_pb = write_timeline(tl, tmp_path / "m.pftrace")
    write_timeline(tl, tmp_path / "m.json.gz")
    assert json.loads((tmp_path / "m.json").read_text())["traceEvents"]
    assert json.loads(gzip.decompress((tmp_path / "m.json.gz").read_bytes())) == json.loads(
        (tmp_path / "m.json").read_text())
    assert (tmp_path / "m.pftrace").read_bytes()[:1] == b"\x0a"  # Trace.packet, field 1
    assert n_pb < n_json
    assert format_for_path("x.perfetto-trace") == "perfetto"
    assert format_for_path("x.bin", "json") == "json"
    with pytest.raises(ProfileWriteError, match="extension"):
        format_for_path("x.bin")


def _walk_all(start, end, allow_nesting):
    """The definition: every row in (start, longest first) order, first lane it fits."""
    stacks, lane = [[]], {}
    for i in sorted(range(len(start)), key=lambda i: (start[i], -end[i])):
        for j, stack in enumerate(stacks):
            while stack and stack[-1] <= start[i]:
                stack.pop()
            if not stack or (allow_nesting and end[i] <= stack[-1]):
                stack.append(end[i])
                lane[i] = j
                break
        else:
            stacks.append([end[i]])
            lane[i] = len(stacks) - 1
    return [lane[i] for i in range(len(start))]


@pytest.mark.parametrize("allow_nesting", [True, False])
def test_sublanes_follow_the_first_fit_definition(allow_nesting):
    import numpy as np
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pypto.compile_profiling.trace_merge.lay_out.lanes import sublanes

    spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 25)), max_size=40)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(spans)
    def check(rows):
        start = np.array([a for a, _ in rows], dtype=np.int64)
        end = start + np.array([d for _, d in rows], dtype=np.int64)
        got = sublanes(start, end, allow_nesting=allow_nesting).tolist()
        assert got == _walk_all(start.tolist(), end.tolist(), allow_nesting)

    check()


@pytest.mark.parametrize("shape", ["plain", "asyncio", "overlap_error_open"])
def test_profile_timeline_is_its_trace_json_without_the_text(shape):
    """`profile_to_timeline` draws every stage where `trace.json` puts it: same pid, tid,
    lane, exact ns, name, category and args, for a plain profile (read from the thread
    logs) and for ones the stage tree settles (asyncio lanes, overlap, failure, interrupted)."""
    import asyncio

    from pypto.compile_profiling import CompileProfiler
    from pypto.compile_profiling.chrome_trace import profile_trace

    async def work(prof, i):
        with prof.stage(f"task{i}", args={"i": i}):
            await asyncio.sleep(0)
            with prof.stage("inner"):
                await asyncio.sleep(0)

    async def run_all(prof):
        await asyncio.gather(*(work(prof, i) for i in range(3)))

    prof = CompileProfiler()
    with prof:
        if shape == "asyncio":
            asyncio.run(run_all(prof))
        else:
            with prof.stage("compile"), prof.stage("passes"), prof.stage(
                    "ConvertToSSA", args={"ir_nodes": 7}):
                pass
        if shape == "overlap_error_open":
            first = prof._begin_stage("first")
            second = prof._begin_stage("second")
            prof._end_stage(stage=first)  # out of order: second overlaps first
            prof._end_stage(stage=second)
            with pytest.raises(ValueError), prof.stage("bad"):
                raise ValueError("x")
            prof._begin_stage("left_open")  # closed and flagged when the profiler stops
    doc = profile_trace(prof)
    tl = profile_to_timeline(prof)
    want = sorted((e["pid"], e["tid"], round(e["ts"] * 1000), round(e["dur"] * 1000),
                   e["name"], e["cat"], json.dumps(e["args"], sort_keys=True))
                  for e in doc["traceEvents"] if e["ph"] == "X")
    got = sorted((s.track.process.pid, s.track.tid, s.start_ns, s.dur_ns, s.name, s.cat,
                  json.dumps(s.args, sort_keys=True)) for s in tl.slices())
    assert want == got
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["name"] == "thread_name"}
    assert {(t.process.pid, t.tid): t.name for t in tl.tracks} == names
    lanes = doc["otherData"].get("lanes", {})
    assert {t.tid for t in tl.tracks if t.os_tid is None} == {int(k) for k in lanes}
    assert len(lanes) == {"plain": 0, "asyncio": 3, "overlap_error_open": 1}[shape]
    if shape == "overlap_error_open":
        flags = {s.name: s.args for s in tl.slices()}
        assert flags["bad"]["failed"] and flags["left_open"]["interrupted"]
    assert tl.metadata["clock"] == "CLOCK_MONOTONIC"


def test_interleaved_asyncio_stages_are_lanes_of_their_thread(tmp_path):
    """The profiler gives interleaving asyncio tasks lanes (`otherData.lanes`): the merge and
    the Perfetto export draw them as lanes of the real process, not as made-up threads."""
    import asyncio

    from pypto.compile_profiling import CompileProfiler

    async def work(prof, i):
        with prof.stage(f"task{i}"):
            await asyncio.sleep(0)

    async def run_all(prof):
        await asyncio.gather(*(work(prof, i) for i in range(3)))

    with CompileProfiler() as prof:
        asyncio.run(run_all(prof))
    prof.write_report(tmp_path)
    for tl in (merge_traces([tmp_path / "trace.json"]).timeline, profile_to_timeline(prof)):
        lanes = [t for t in tl.tracks if t.os_tid is None]
        assert len(lanes) == 3 and all(" · " in t.name for t in lanes)
        assert all(t.process.os_pid == t.process.pid == prof.pid for t in lanes)
        assert sorted(s.name for s in tl.slices() if s.track in lanes) == ["task0", "task1",
                                                                           "task2"]


def test_a_pipeline_profile_is_never_placed_before_time_0(tmp_path):
    """Issue 22: its device_execution at the calibrated capture's first record (706 s of
    uptime) would put 2000 s of compile before time 0, which Perfetto drops."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "pipeline_profile.json").write_text(json.dumps({"total_seconds": 2001, "stages": [
        {"name": "compile", "seconds": 2000.0, "children": []},
        {"name": "device_execution", "seconds": 1.0, "children": []}]}))
    r = merge_traces([report, FIXTURES / "hbg_vector_example_l4_depgen"])
    stages = {s.name: s for s in r.timeline.slices() if s.cat == "compile"}
    assert stages["compile"].start_ns == 0
    assert min(s.start_ns for s in r.timeline.slices()) >= 0
    assert any("its start put at time 0 (its device_execution" in w for w in r.warnings)
