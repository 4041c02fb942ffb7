"""merge_traces / write_timeline on every real capture, alone and with a compile trace."""

from __future__ import annotations

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

from pypto.compile_profiling import simpler_readers as sr
from pypto.compile_profiling import simpler_records
from pypto.compile_profiling.merge import (
    format_for_path,
    merge_traces,
    profile_to_timeline,
    write_timeline,
)
from pypto.errors import ProfileWriteError, TraceInputError

pytestmark = pytest.mark.skipif(not CASES, reason="no Simpler fixtures on this machine")


def device_slices(tl):
    return [s for s in tl.slices if s.track.process.name.startswith("Device")]


def check_nesting(tl):
    """Slices of each track nest properly (what both exporters and Perfetto need)."""
    by_track = {}
    for s in tl.slices:
        by_track.setdefault(id(s.track), []).append(s)
    for slices in by_track.values():
        stack = []
        for s in sorted(slices, key=lambda s: (s.ts_ns, -s.dur_ns)):
            end = s.ts_ns + s.dur_ns
            while stack and stack[-1] <= s.ts_ns:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, f"{s.name} sticks out of its parent"
            stack.append(end)


@pytest.mark.parametrize("case", CASES)
def test_each_capture_merges_alone_with_its_alignment_stated(case):
    r = merge_traces([FIXTURES / case])
    tl = r.timeline
    rec = sr.read_swimlane_records(FIXTURES / case / "chip_swimlane_records.json")
    dev = device_slices(tl)
    aicore = [s for s in dev if "AICore" in s.track.process.name]
    assert len(aicore) == len(rec.aicore)
    check_nesting(tl)
    names = [p.name for p in tl.processes]
    assert any("AICore" in n for n in names)
    procs = [p for p in tl.processes if p.name.startswith("Device")]
    if case in CALIBRATED:
        assert not any(p.estimated for p in procs)
        assert any("calibrated ±" in p.name for p in procs)
        assert not tl.metadata["estimated"]
        assert not [w for w in r.warnings if "ESTIMATED" in w]
    else:
        assert all(p.estimated and "(estimated)" in p.name for p in procs)
        assert tl.metadata["estimated"] is True
        assert any("ESTIMATED" in w for w in r.warnings)
        assert any("ESTIMATED" in line for line in r.summary_lines)
    if (FIXTURES / case / "deps.json").exists() and rec.level >= 2:
        deps = sr.read_deps(FIXTURES / case / "deps.json")
        assert len(tl.flows) <= len(deps.edges)
        assert (len(tl.flows) > 0) == (len(deps.edges) > 0)
    # the Simpler host spans are on their real pid
    facts = capture_host_facts(FIXTURES / case)
    assert any(p.os_pid == facts["pid"] for p in tl.processes)
    assert all(line.startswith(str(FIXTURES / case)) for line in r.summary_lines)


@pytest.mark.parametrize("case", CALIBRATED)
def test_calibrated_capture_lands_inside_device_execution(tmp_path, case):
    info = compile_trace_around(FIXTURES / case, tmp_path / "trace.json")
    r = merge_traces([tmp_path / "trace.json", FIXTURES / case])
    tl = r.timeline
    dev = device_slices(tl)
    assert dev
    for s in dev:
        assert info["exec_start"] <= s.ts_ns and s.ts_ns + s.dur_ns <= info["exec_end"], s.name
    # layout: the compile process first, devices after
    order = sorted(tl.processes, key=lambda p: p.sort_index)
    assert order[0].name == "PyPTO compile" and order[-1].name.startswith("Device")
    # one flow per kernel from its codegen stage to its first device task
    kflows = [f for f in tl.flows if f.src.name.startswith("kernel_codegen:")]
    kernels = kernel_names(FIXTURES / case)
    assert len(kflows) == len(kernels)
    for f in kflows:
        kernel = f.src.name.split(":", 1)[1]
        assert f.dst.name.startswith(kernel + "(")
        same = [s for s in dev if s.name.startswith(kernel + "(") and "AICore" in s.track.process.name]
        assert f.dst.ts_ns == min(s.ts_ns for s in same)
    assert tl.metadata["clock"] == "CLOCK_MONOTONIC"
    src = {m["kind"]: m for m in tl.metadata["sources"]}
    assert src["swimlane_records"]["estimated"] is False
    assert 0 < src["swimlane_records"]["uncertainty_ns"] < 1000
    # the Simpler run log is the same process as the compile trace: one process, both
    comp = next(p for p in tl.processes if p.name == "PyPTO compile")
    assert {s.name for s in tl.slices if s.track.process is comp} >= {"device_execution",
                                                                       "chip.run"}
    check_nesting(tl)


@pytest.mark.parametrize("case", ESTIMATED)
def test_estimated_capture_starts_at_device_execution(tmp_path, case):
    info = compile_trace_around(FIXTURES / case, tmp_path / "trace.json")
    tl = merge_traces([tmp_path / "trace.json", FIXTURES / case]).timeline
    # the capture's origin (earliest record, counting AICore receive time) is put there
    first = min(s.ts_ns for s in device_slices(tl))
    assert info["exec_start"] <= first < info["exec_start"] + 100_000
    tl2 = merge_traces([tmp_path / "trace.json", FIXTURES / case], offset_us=250).timeline
    assert min(s.ts_ns for s in device_slices(tl2)) == pytest.approx(first + 250_000, abs=1)
    meta = {m["kind"]: m for m in tl2.metadata["sources"]}["swimlane_records"]
    assert meta["estimated"] and "--offset-us" in meta["alignment"]


def test_merged_swimlane_alone_is_estimated(tmp_path):
    case = FIXTURES / CALIBRATED[0]
    info = compile_trace_around(case, tmp_path / "trace.json")
    r = merge_traces([tmp_path / "trace.json", case / "merged_swimlane.json"])
    procs = [p for p in r.timeline.processes if p.name.startswith("Device")]
    assert procs and all(p.estimated for p in procs)
    first = min(s.ts_ns for s in device_slices(r.timeline))
    assert first >= info["exec_start"] - 1
    assert any("merged_swimlane" in line and "ESTIMATED" in line for line in r.summary_lines)


def test_loose_files_of_one_directory_form_one_capture():
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    r = merge_traces([case / "chip_swimlane_records.json", case / "deps.json",
                      next(case.glob("name_map_*.json"))])
    names = {s.name.split("(")[0] for s in device_slices(r.timeline)
             if "AICore" in s.track.process.name}
    assert names == {"GEMM", "ADD"}
    assert len(r.timeline.flows) > 0


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
    stages = {s.name: s for s in tl.slices if s.track.process is rep}
    assert stages["codegen"].ts_ns == stages["parse"].ts_ns + 0.5e9
    assert stages["kernel_codegen:GEMM"].ts_ns == stages["codegen"].ts_ns
    check_nesting(tl)  # the over-long last child is clipped to its parent
    first_dev = min(s.ts_ns for s in device_slices(tl))
    assert stages["device_execution"].ts_ns == pytest.approx(first_dev, abs=1)
    assert any("pipeline_profile.json" in w and "ESTIMATED" in w for w in r.warnings)
    assert any(f.src is stages["kernel_codegen:GEMM"] for f in tl.flows)


def test_report_dir_prefers_trace_json_over_profile(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    compile_trace_around(FIXTURES / CALIBRATED[0], report / "trace.json")
    (report / "pipeline_profile.json").write_text('{"total_seconds": 1, "stages": []}')
    r = merge_traces([tmp_path])  # the output dir holding report/
    assert [p.name for p in r.timeline.processes] == ["PyPTO compile"]
    assert "exact" in r.summary_lines[0]


def test_trace_from_another_host_is_moved_by_wall_clock_anchors(tmp_path):
    case = FIXTURES / CALIBRATED[0]
    compile_trace_around(case, tmp_path / "a.json", host="hostA")
    doc = json.loads((tmp_path / "a.json").read_text())
    shift = 5_000_000_000_000  # host B booted 5000 s earlier: its monotonic clock is ahead
    for ev in doc["traceEvents"]:
        if ev["ph"] == "X":
            ev["ts"] += shift / 1000
    doc["otherData"]["host"] = "hostB"
    doc["otherData"]["clock_anchor"]["monotonic_ns"] += shift
    for ev in doc["traceEvents"]:
        if ev["ph"] == "M":
            ev["pid"] = 99
        else:
            ev["pid"] = 99
    (tmp_path / "b.json").write_text(json.dumps(doc))
    tl = merge_traces([tmp_path / "a.json", tmp_path / "b.json"]).timeline
    a, b = tl.processes
    ea = next(s for s in tl.slices if s.track.process is a and s.name == "device_execution")
    eb = next(s for s in tl.slices if s.track.process is b and s.name == "device_execution")
    assert eb.ts_ns == pytest.approx(ea.ts_ns, abs=1)
    assert "cross-host" in b.args["alignment"]


def test_two_ranks_never_share_pids_or_tids(tmp_path):
    dfx = tmp_path / "work" / "dfx_outputs"
    for r, case in enumerate(("tmr_vector_example_l4_depgen", "tmr_mixed_example_case1_l4_depgen")):
        leaf = dfx / f"rank{r}" / "d0"
        shutil.copytree(FIXTURES / case, leaf)
        (leaf / "dispatch_program.json").write_text(json.dumps({"program": f"prog{r}"}))
    r = merge_traces([tmp_path / "work"])
    tl = r.timeline
    uids = [p.uid for p in tl.processes] + [t.uid for t in tl.tracks]
    assert len(uids) == len(set(uids))
    assert len({f.id for f in tl.flows}) == len(tl.flows)
    names = [p.name for p in tl.processes]
    assert any("r0d0" in n for n in names) and any("r1d0" in n for n in names)


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
    with pytest.raises(TraceInputError, match="negative duration") as e:
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
    assert json.loads((tmp_path / "m.json").read_text())["traceEvents"]
    assert (tmp_path / "m.pftrace").read_bytes()[:1] == b"\x0a"  # Trace.packet, field 1
    assert n_pb < n_json
    assert format_for_path("x.perfetto-trace") == "perfetto"
    assert format_for_path("x.bin", "json") == "json"
    with pytest.raises(ProfileWriteError, match="extension"):
        format_for_path("x.bin")


def test_profile_to_timeline_keeps_stages_on_real_threads():
    from pypto.compile_profiling import CompileProfiler

    with CompileProfiler() as prof, prof.stage("compile"), prof.stage("passes"):
        pass
    tl = profile_to_timeline(prof)
    assert {s.name for s in tl.slices} >= {"compile", "passes"}
    assert tl.processes[0].os_pid is not None
    assert all(t.os_tid is not None for t in tl.tracks)
    check_nesting(tl)


def test_capture_from_another_host_is_moved_by_its_clock_anchor(tmp_path):
    case = FIXTURES / "hbg_vector_example_l4_depgen"
    compile_trace_around(case, tmp_path / "trace.json")
    same = merge_traces([tmp_path / "trace.json", case]).timeline
    other = tmp_path / "other_host"
    shutil.copytree(case, other)
    log = (other / "host_log.txt").read_text()
    delta = 7_000_000_000_000  # this host's wall clock reads 7000 s later at the same monotonic
    log = re.sub(r"(\[CLOCK_ANCHOR\] .*?wall_ns=)(\d+)",
                 lambda m: m.group(1) + str(int(m.group(2)) + delta), log)
    (other / "host_log.txt").write_text(log)
    r = merge_traces([tmp_path / "trace.json", other])
    moved = r.timeline
    a = sorted(s.ts_ns for s in device_slices(same))
    b = sorted(s.ts_ns for s in device_slices(moved))
    assert len(a) == len(b) and all(y - x == pytest.approx(delta, abs=1) for x, y in zip(a, b))
    assert any("cross-host" in line for line in r.summary_lines)


@pytest.mark.parametrize("case", ["tmr_bgemm_case0_l4_depgen", "hbg_bgemm_l4_depgen"])
def test_compact_reading_writes_the_same_trace(tmp_path, monkeypatch, case):
    """Big captures are held compactly (lazy args, records as text): same output files."""
    if case not in CASES:
        pytest.skip("fixture missing")
    outs = {}
    for compact in (False, True):
        monkeypatch.setattr(simpler_records, "_COMPACT_FILE_BYTES", 0 if compact else 1 << 40)
        res = merge_traces([FIXTURES / case])
        for ext in ("json", "pftrace"):
            out = tmp_path / f"{compact}.{ext}"
            write_timeline(res.timeline, out)
            outs[compact, ext] = out.read_bytes()
    assert outs[True, "json"] == outs[False, "json"]
    assert outs[True, "pftrace"] == outs[False, "pftrace"]
