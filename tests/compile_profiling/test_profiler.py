"""The compile profiler: upstream-compatible API, nesting, threads, failures, reports."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from repo_paths import REPO_ROOT

from pypto.compile_profiling import (
    CompileProfiler,
    StageRecord,
    bind_to_current,
    get_active_profiler,
)
from pypto.errors import ProfileWriteError


def names(records):
    return [r.name for r in records]


def test_stage_record_keeps_upstream_constructor_and_dict_shape():
    rec = StageRecord("parse", 1.0, 1.5, [StageRecord("child", 1.1, 1.2)])
    assert rec.duration == pytest.approx(0.5)
    assert rec.start_ns == 1_000_000_000 and rec.end_ns == 1_500_000_000
    d = rec.to_dict()
    assert d["name"] == "parse" and d["seconds"] == 0.5
    assert d["children"][0]["name"] == "child" and d["children"][0]["children"] == []


def test_open_stage_record_measures_up_to_now_and_never_negative():
    now = time.perf_counter()
    rec = StageRecord("open", now - 0.25)
    assert rec.is_open and rec.duration >= 0.25
    assert StageRecord("future", now + 100).duration == 0.0
    assert rec.to_dict()["open"] is True


def test_current_is_innermost_profiler_of_this_thread_and_restored_on_exit():
    assert CompileProfiler.current() is None and get_active_profiler() is None
    with CompileProfiler() as outer:
        assert CompileProfiler.current() is outer
        with CompileProfiler() as inner:
            assert CompileProfiler.current() is inner and get_active_profiler() is inner
            seen = []
            t = threading.Thread(target=lambda: seen.append(CompileProfiler.current()))
            t.start()
            t.join()
            assert seen == [None]  # another thread has no active profiler unless bound
        assert CompileProfiler.current() is outer
    assert CompileProfiler.current() is None


def test_nested_stages_build_a_tree_with_json_report_structure():
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            pass
        with prof.stage("passes"):
            for name in ("UnrollLoops", "ConvertToSSA"):
                prof._begin_stage(name, {"ir_nodes_before": 10})
                prof._end_stage({"ir_nodes_after": 12})
    d = prof.to_dict()
    assert set(d) >= {"total_seconds", "stages"}
    assert [s["name"] for s in d["stages"]] == ["parse", "passes"]
    passes = d["stages"][1]
    assert [c["name"] for c in passes["children"]] == ["UnrollLoops", "ConvertToSSA"]
    assert passes["children"][0]["args"] == {"ir_nodes_before": 10, "ir_nodes_after": 12}
    assert passes["children"][0]["cat"] == "pass" and d["stages"][0]["cat"] == "parse"
    assert d["total_seconds"] >= sum(s["seconds"] for s in d["stages"]) - 1e-6
    assert json.loads(prof.to_json()) == json.loads(json.dumps(d))


def test_stage_records_pid_native_tid_thread_name_and_monotonic_ns():
    before = time.perf_counter_ns()
    with CompileProfiler() as prof, prof.stage("s"):
        time.sleep(0.001)
    after = time.perf_counter_ns()
    (rec,) = prof.stages
    assert rec.pid == os.getpid() and rec.tid == threading.get_native_id()
    assert rec.thread_name == threading.current_thread().name
    assert before <= rec.start_ns < rec.end_ns <= after
    assert rec.end_ns - rec.start_ns >= 1_000_000
    assert rec.start == pytest.approx(rec.start_ns / 1e9)


def test_worker_stages_keep_their_thread_and_nest_under_the_submitting_stage():
    main_tid = threading.get_native_id()
    with CompileProfiler() as prof, prof.stage("codegen"):
        def kernel(i):
            p = CompileProfiler.current()  # upstream workers look the profiler up
            with p.stage(f"kernel_codegen:k{i}", {"kernel": f"k{i}"}):
                time.sleep(0.002)
            return threading.get_native_id()

        with ThreadPoolExecutor(max_workers=3) as pool:
            worker_tids = set(pool.map(bind_to_current(kernel), range(6)))
        with prof.stage("orchestration_codegen"):
            pass
    (codegen,) = prof.stages
    kernels = [c for c in codegen.children if c.name.startswith("kernel_codegen:")]
    assert sorted(names(kernels)) == [f"kernel_codegen:k{i}" for i in range(6)]
    assert {k.tid for k in kernels} == worker_tids and main_tid not in worker_tids
    assert all(k.cat == "codegen" and k.args == {"kernel": k.name.split(":")[1]} for k in kernels)
    assert codegen.children[-1].name == "orchestration_codegen"
    starts = [c.start_ns for c in codegen.children]
    assert starts == sorted(starts)


def test_bind_to_current_without_profiler_returns_the_function_itself():
    def f():
        return 1

    assert bind_to_current(f) is f


def test_concurrent_threads_never_lose_or_corrupt_records():
    threads, per_thread = 8, 3000
    with CompileProfiler() as prof, prof.stage("root"):
        def work(t):
            p = CompileProfiler.current()
            for i in range(per_thread):
                with p.stage(f"t{t}"), p.stage("inner", {"i": i}):
                    pass

        bound = bind_to_current(work)
        ts = [threading.Thread(target=bound, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    (root,) = prof.stages
    assert len(root.children) == threads * per_thread
    by_thread: dict[str, set[int]] = {}
    for rec in root.children:
        (inner,) = rec.children
        assert inner.name == "inner" and inner.tid == rec.tid
        assert rec.start_ns <= inner.start_ns <= inner.end_ns <= rec.end_ns
        by_thread.setdefault(rec.name, set()).add(inner.args["i"])
    assert by_thread == {f"t{t}": set(range(per_thread)) for t in range(threads)}


def test_failing_stage_is_closed_marked_and_the_exception_propagates(tmp_path):
    with CompileProfiler() as prof:
        with pytest.raises(KeyError), prof.stage("passes"), prof.stage("BrokenPass"):
            raise KeyError("x")
        with prof.stage("after"):
            pass
    passes, after = prof.stages
    assert passes.error == "KeyError" and passes.children[0].error == "KeyError"
    assert not passes.is_open and after.error is None
    prof.write_report(tmp_path)
    text = (tmp_path / "pipeline_profile.txt").read_text()
    assert "FAILED (KeyError)" in text
    data = json.loads((tmp_path / "pipeline_profile.json").read_text())
    assert data["stages"][0]["error"] == "KeyError"


def test_open_stages_are_reported_up_to_now_and_marked_open():
    prof = CompileProfiler()
    prof._begin_stage("device_execution")
    time.sleep(0.002)
    (rec,) = prof.stages
    assert rec.is_open and rec.duration >= 0.002
    d = prof.to_dict()["stages"][0]
    assert d["open"] is True and d["seconds"] >= 0.002
    assert "(still open)" in prof.summary()


def test_end_stage_without_open_stage_is_ignored_like_upstream():
    prof = CompileProfiler()
    prof._end_stage()
    with prof.stage("a"):
        pass
    prof._end_stage()
    assert names(prof.stages) == ["a"]


def test_add_stage_record_inserts_at_current_nesting_level():
    with CompileProfiler() as prof:
        with prof.stage("device_execution"):
            now = time.perf_counter()
            prof.add_stage_record(StageRecord("remote", now - 0.001, now))
        prof.add_stage_record(StageRecord("top", time.perf_counter(), time.perf_counter()))
    device, top = prof.stages
    assert names(device.children) == ["remote"] and top.name == "top"


def test_repeated_stages_stay_separate_and_summary_folds_them():
    with CompileProfiler() as prof, prof.stage("passes"):
        for _ in range(2):
            with prof.stage("ConstantFolding"):
                pass
    (passes,) = prof.stages
    assert names(passes.children) == ["ConstantFolding", "ConstantFolding"]
    (line,) = [ln for ln in prof.summary().splitlines() if "ConstantFolding" in ln]
    assert line.split()[:2] == ["ConstantFolding", "x2"] and " mean " in line and " max " in line


def test_summary_layout_matches_upstream():
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            time.sleep(0.001)
        with prof.stage("codegen"), prof.stage("kernel_codegen:my_kernel"):
            pass
    lines = prof.summary().splitlines()
    assert lines[0] == "PyPTO Compile Profile" and set(lines[1]) == {"="}
    assert lines[2].startswith("Total: ") and lines[3] == ""
    # upstream's columns (name, duration, share) first; the self time follows them
    assert re.match(r"  parse +[0-9.]+m?s  \( *[0-9.]+%\)  self +[0-9.]+[mu]?s$", lines[4])
    assert lines[6].startswith("    kernel_codegen:my_kernel")
    assert "(" in lines[4] and "%)" in lines[4]


def test_write_report_writes_three_files(tmp_path):
    with CompileProfiler() as prof, prof.stage("parse"):
        pass
    out = tmp_path / "a" / "report"
    prof.write_report(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "pipeline_profile.json", "pipeline_profile.txt", "trace.json"]
    assert json.loads((out / "trace.json").read_text())["traceEvents"]


def test_to_json_writes_file_and_returns_text(tmp_path):
    with CompileProfiler() as prof, prof.stage("x"):
        pass
    text = prof.to_json(tmp_path / "profile.json")
    assert json.loads((tmp_path / "profile.json").read_text()) == json.loads(text)
    assert "\n  " in text and "\n" not in prof.to_json(indent=None)


def test_unwritable_report_dir_gives_one_clear_error_naming_the_path(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    prof = CompileProfiler()
    with pytest.raises(ProfileWriteError) as info:
        prof.write_report(blocker / "report")
    assert str(blocker / "report") in str(info.value) and "\n" not in str(info.value)


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    from pypto.compile_profiling import chrome_trace

    with CompileProfiler() as prof, prof.stage("s"):
        pass

    def fail(self, stages):
        self.write('{"half written')
        raise RuntimeError("boom")

    monkeypatch.setattr(chrome_trace._EventEmitter, "emit", fail)
    monkeypatch.setattr(chrome_trace._EventEmitter, "emit_plain", fail)  # read from the logs
    with pytest.raises(RuntimeError):
        prof.to_chrome_trace(tmp_path / "trace.json")
    assert list(tmp_path.iterdir()) == []


def test_summary_durations_line_up_even_with_names_longer_than_the_column(tmp_path):
    with CompileProfiler() as prof, prof.stage("codegen"):
        with prof.stage("kernel_codegen:a_kernel_with_a_very_long_descriptive_name"):
            pass
        with prof.stage("orchestration_codegen"):
            pass
    prof.write_report(tmp_path)
    lines = (tmp_path / "pipeline_profile.txt").read_text().splitlines()[4:]
    assert len(lines) == 4 and lines[-1].split()[0] == "(unaccounted)"
    ends = {line.index("%)") for line in lines}
    assert len(ends) == 1  # the share column ends at the same place on every line


def test_json_report_is_valid_json_with_one_stage_per_line(tmp_path):
    with CompileProfiler() as prof:
        with prof.stage("passes", {"note": 'quote " and 名前'}), prof.stage("UnrollLoops"):
            pass
        with prof.stage("codegen"):
            pass
    prof.write_report(tmp_path)
    text = (tmp_path / "pipeline_profile.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert [s["name"] for s in data["stages"]] == ["passes", "codegen"]
    assert data["stages"][0]["args"]["note"] == 'quote " and 名前'
    assert data["stages"][0]["children"][0]["name"] == "UnrollLoops"
    assert sum('"name":' in line for line in text.splitlines()) == 3


def test_merge_api_is_exported_without_loading_it_eagerly_and_the_profile_export_needs_no_merge():
    import subprocess
    import sys

    code = ("import sys, tempfile, pypto.compile_profiling as cp\n"
            "lazy = ('pypto.compile_profiling.trace_merge', 'pypto.compile_profiling.timeline')\n"
            "assert not any(m in sys.modules for m in lazy)\n"
            "with cp.CompileProfiler() as prof, prof.stage('compile'):\n"
            "    pass\n"
            "prof.to_perfetto(tempfile.mkdtemp() + '/p.pftrace')  # without the merge\n"
            "assert 'pypto.compile_profiling.trace_merge' not in sys.modules\n"
            "from pypto.compile_profiling import merge_traces, write_timeline\n"
            "assert merge_traces.__module__ == 'pypto.compile_profiling.trace_merge'\n"
            "assert write_timeline.__module__ == 'pypto.compile_profiling.timeline'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False,
                          cwd=str(REPO_ROOT))
    assert proc.returncode == 0, proc.stderr
