"""trace.json: complete events on real pids/tids and the CLOCK_MONOTONIC axis, metadata, nesting."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pypto
from pypto.compile_profiling import CompileProfiler, StageRecord, bind_to_current
from pypto.compile_profiling.profile_data.model import walk

WORKERS = 2


def sample_profile():
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            pass
        with prof.stage("passes"):
            with prof.stage("UnrollLoops", {"ir_nodes_before": 3}):
                time.sleep(0.0005)  # work, so its share of the total is above 0
            now = time.perf_counter()
            prof.add_stage_record(StageRecord("zero", now, now))
        with prof.stage("codegen"):
            # Every kernel waits for WORKERS kernels to run at once, so each pool thread runs
            # some: exactly WORKERS codegen lanes, however the OS schedules the threads.
            all_workers_busy = threading.Barrier(WORKERS, timeout=60)

            def kernel(i):
                with CompileProfiler.current().stage(f"kernel_codegen:k{i}"):
                    all_workers_busy.wait()

            with ThreadPoolExecutor(WORKERS, thread_name_prefix="codegen") as pool:
                list(pool.map(bind_to_current(kernel), range(2 * WORKERS)))
    return prof


def complete_events(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def written_trace(prof, tmp_path) -> dict:
    """trace.json as written, its numbers read exactly (a float of µs loses ns at 1e9 µs)."""
    prof.to_chrome_trace(tmp_path / "trace.json")
    return json.loads((tmp_path / "trace.json").read_text(), parse_float=Decimal)


def test_one_complete_event_per_stage_with_absolute_monotonic_times(tmp_path):
    prof = sample_profile()
    trace = written_trace(prof, tmp_path)
    events = {e["name"]: e for e in complete_events(trace)}
    assert len(complete_events(trace)) == 9  # parse, passes + 2 children, codegen + 4 kernels
    unroll_rec = prof.stages[1].children[0]
    e = events["UnrollLoops"]
    assert e["ts"] * 1000 == unroll_rec.start_ns  # microseconds keeping ns fractions
    assert e["dur"] * 1000 == unroll_rec.end_ns - unroll_rec.start_ns
    assert e["pid"] == os.getpid() and e["tid"] == threading.get_native_id()
    assert e["cat"] == "pass"
    assert e["args"]["path"] == "passes/UnrollLoops" and e["args"]["ir_nodes_before"] == 3
    assert 0 < e["args"]["share_pct"] < 100
    assert events["kernel_codegen:k0"]["cat"] == "codegen"
    assert events["kernel_codegen:k0"]["args"]["path"] == "codegen/kernel_codegen:k0"
    zero_rec = prof.stages[1].children[1]
    assert events["zero"]["dur"] == 0 and events["zero"]["ts"] * 1000 == zero_rec.start_ns
    # absolute: close to "now" on perf_counter_ns, not an offset from the profile's start
    assert abs(e["ts"] * 1000 - time.perf_counter_ns()) < 60e9


def test_worker_stages_are_on_their_own_thread_lanes():
    trace = sample_profile().to_chrome_trace()
    main = threading.get_native_id()
    kernel_tids = {e["tid"] for e in complete_events(trace) if e["name"].startswith("kernel_")}
    assert kernel_tids and main not in kernel_tids


def test_metadata_names_process_and_threads_and_sorts_main_thread_first():
    trace = sample_profile().to_chrome_trace()
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    procs = [e for e in meta if e["name"] == "process_name"]
    assert procs == [{"ph": "M", "name": "process_name", "pid": os.getpid(), "tid": 0,
                      "args": {"name": "PyPTO compile"}}]
    threads = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert threads[threading.get_native_id()] == "MainThread"
    assert sum(name.startswith("codegen") for name in threads.values()) == WORKERS
    order = {e["tid"]: e["args"]["sort_index"] for e in meta if e["name"] == "thread_sort_index"}
    assert order[threading.get_native_id()] == min(order.values())


def test_other_data_records_clock_anchor_and_identity():
    prof = sample_profile()
    before_mono, before_wall = time.perf_counter_ns(), time.time_ns()
    other = prof.to_chrome_trace()["otherData"]
    after_mono, after_wall = time.perf_counter_ns(), time.time_ns()
    assert other["clock"] == "CLOCK_MONOTONIC"
    anchor = other["clock_anchor"]
    assert before_mono <= anchor["monotonic_ns"] <= after_mono
    assert before_wall <= anchor["wall_ns"] <= after_wall
    assert other["pid"] == os.getpid() and other["host"] == socket.gethostname()
    assert other["pypto_version"] == pypto.__version__
    assert other["total_seconds"] == round(prof.total_seconds, 6)


def test_slices_nest_properly_on_every_thread():
    events = complete_events(sample_profile().to_chrome_trace())
    by_thread: dict[tuple, list] = {}
    for e in events:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for lane in by_thread.values():
        lane.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in lane:
            # the slices the event starts after are done (one starting where a slice ends is
            # after it, unless it is zero-length: that one may still be its last instant)
            while stack and (
                e["ts"] > stack[-1]["ts"] + stack[-1]["dur"]
                or (e["ts"] == stack[-1]["ts"] + stack[-1]["dur"] and e["dur"] > 0)
            ):
                stack.pop()
            if stack:
                parent = stack[-1]
                assert e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + 1e-9
            stack.append(e)


def test_record_ending_before_it_starts_is_written_with_zero_duration(tmp_path):
    with CompileProfiler() as prof:
        now = time.perf_counter()
        prof.add_stage_record(StageRecord("backwards", now, now - 0.001))
    (e,) = complete_events(written_trace(prof, tmp_path))
    assert e["dur"] == 0 and e["ts"] * 1000 == prof.stages[0].start_ns


def test_child_recorded_outside_its_parent_is_clamped_into_it():
    with CompileProfiler() as prof, prof.stage("outer"):
        now = time.perf_counter()
        prof.add_stage_record(StageRecord("sticks_out", now - 10, now + 10))
    events = {e["name"]: e for e in complete_events(prof.to_chrome_trace())}
    outer, inner = events["outer"], events["sticks_out"]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_awkward_names_round_trip(tmp_path):
    name = 'quote " back\\slash\nnewline 名前 ✓'
    with CompileProfiler() as prof, prof.stage(name, {"note": "tab\there"}):
        pass
    prof.to_chrome_trace(tmp_path / "trace.json")
    trace = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    (e,) = complete_events(trace)
    assert e["name"] == name and e["args"]["note"] == "tab\there"


def test_failed_and_open_stages_are_flagged():
    prof = CompileProfiler()
    try:
        with prof.stage("bad"):
            raise ValueError("x")
    except ValueError:
        pass
    with prof.stage("still_running"):
        events = {e["name"]: e for e in complete_events(prof.to_chrome_trace())}
    assert events["bad"]["args"]["failed"] is True
    assert events["bad"]["args"]["error"] == "ValueError"
    assert events["still_running"]["args"]["open"] is True


def test_other_process_records_get_their_own_named_process():
    prof = CompileProfiler()
    prof.set_process_name(424242, "PyPTO device")
    now = time.perf_counter()
    prof.add_stage_record(StageRecord("device_run", now, now + 0.001, pid=424242, tid=7,
                                      thread_name="device"))
    trace = prof.to_chrome_trace()
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[424242] == "PyPTO device"
    assert names[os.getpid()] == "PyPTO compile"


def _trace_without_anchor(text: str) -> dict:
    data = json.loads(text)
    data["otherData"].pop("clock_anchor")  # a fresh clock reading per export
    return data


def test_trace_read_from_the_logs_equals_the_trace_of_the_stage_tree():
    """A profile with nothing to settle is exported from the thread logs' columns; the text
    is exactly that of its stage tree (names, paths, categories, args merged at the close,
    failures, several threads, stages bound where nothing was open)."""
    from pypto.compile_profiling.chrome_trace import trace_text

    prof = CompileProfiler()
    with prof:
        with prof.stage("compile"):
            with prof.stage("parse", {"file": "x.py", "odd": "\u00e9\ud800"}):
                pass
            prof._begin_stage("passes", {"program": "P"})
            for i in range(3):
                prof._begin_stage(f"Pass{i}", {"ir_size_before": i}, "pass")
                prof._end_stage({"ir_size_after": i + 1})
            prof._end_stage()
            try:
                with prof.stage("codegen"), prof.stage("kernel_codegen:k0"):
                    raise ValueError
            except ValueError:
                pass
            for name in ("a", "b"):
                with prof.stage(name), prof.stage("passes"), prof.stage("Inner"):
                    pass

        def work(n):
            with prof.stage(f"worker{n}"), prof.stage("inner", cat="custom"):
                pass

        threads = [threading.Thread(target=prof.bind(work), args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    never_entered = CompileProfiler()
    for name in ("x", "y"):
        with never_entered.stage(name), never_entered.stage("z"):
            pass
    for p in (prof, never_entered):
        from_logs = _trace_without_anchor(trace_text(p))
        from_tree = _trace_without_anchor(trace_text(p, p.stages))
        assert from_logs == from_tree
        assert len([e for e in from_logs["traceEvents"] if e["ph"] == "X"]) == (
            len(list(walk(p.stages))))
