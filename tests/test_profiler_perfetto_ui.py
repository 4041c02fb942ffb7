"""trace.json opens in the real (offline) Perfetto UI with the processes, threads and slices we wrote."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pypto.compile_profiling import CompileProfiler, StageRecord, bind_to_current


@pytest.mark.perfetto_ui
def test_compile_trace_loads_in_perfetto_with_expected_counts(tmp_path, perfetto_ui):
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            pass
        with prof.stage("passes"):
            for name in ("UnrollLoops", "ConvertToSSA", "UnrollLoops"):
                prof._begin_stage(name)
                prof._end_stage()
            now = time.perf_counter()
            prof.add_stage_record(StageRecord("zero-length", now, now))
        with prof.stage("codegen"):
            def kernel(i):
                with CompileProfiler.current().stage(f"kernel_codegen:k{i}", {"i": i}):
                    time.sleep(0.002)

            with ThreadPoolExecutor(3, thread_name_prefix="codegen") as pool:
                list(pool.map(bind_to_current(kernel), range(6)))
            with prof.stage('orchestration "codegen" ✓'):
                pass
    prof.write_report(tmp_path)

    trace = perfetto_ui.load(tmp_path / "trace.json")
    assert trace.import_errors() == []
    procs = [p for p in trace.processes() if p["pid"] == os.getpid()]
    assert [p["name"] for p in procs] == ["PyPTO compile"]
    threads = [t for t in trace.threads() if t["pid"] == os.getpid()]
    names = sorted(t["name"] for t in threads)
    assert "MainThread" in names and sum(n.startswith("codegen") for n in names) == 3
    assert trace.slice_count() == 14  # parse; passes + 3 passes + zero-length; codegen + 6 + 1

    slices = trace.slices()
    by_name = {s["name"]: s for s in slices}
    assert by_name["UnrollLoops"]["depth"] == 1 and by_name["passes"]["depth"] == 0
    assert by_name['orchestration "codegen" ✓']["depth"] == 1
    assert by_name["zero-length"]["dur"] == 0 and by_name["zero-length"]["depth"] == 1
    kernels = [s for s in slices if s["name"].startswith("kernel_codegen:")]
    assert len(kernels) == 6
    assert all(k["thread_name"].startswith("codegen") and k["depth"] == 0 for k in kernels)
    assert {k["tid"] for k in kernels}.isdisjoint({threading.get_native_id()})
    codegen = by_name["codegen"]
    assert all(codegen["ts"] <= k["ts"] and k["ts"] + k["dur"] <= codegen["ts"] + codegen["dur"]
               for k in kernels)
    unroll = prof.stages[1].children[0]
    assert by_name["parse"]["ts"] == prof.stages[0].start_ns  # ns precision survives
    assert trace.slice_args("UnrollLoops")["args.path"] == "passes/UnrollLoops"
    assert unroll.name == "UnrollLoops"


@pytest.mark.perfetto_ui
def test_asyncio_tasks_each_get_a_lane_in_perfetto(tmp_path, perfetto_ui):
    import asyncio

    with CompileProfiler() as prof:
        async def work(i):
            with prof.stage(f"fetch:{i}"):
                await asyncio.sleep(0.001 * (6 - i))
                with prof.stage(f"parse:{i}"):
                    await asyncio.sleep(0)

        async def main():
            with prof.stage("gather"):
                await asyncio.gather(*(asyncio.create_task(work(i), name=f"worker-{i}")
                                       for i in range(6)))

        # the Playwright driver runs an event loop on this thread: give asyncio its own
        loop_thread = threading.Thread(target=asyncio.run, args=(main(),), name="async-loop")
        loop_thread.start()
        loop_thread.join()
    prof.write_report(tmp_path)

    trace = perfetto_ui.load(tmp_path / "trace.json")
    assert trace.import_errors() == []
    slices = trace.slices()
    assert len(slices) == 13
    by_name = {s["name"]: s for s in slices}
    fetch_tracks = {by_name[f"fetch:{i}"]["track_id"] for i in range(6)}
    assert len(fetch_tracks) == 6 and by_name["gather"]["track_id"] not in fetch_tracks
    for i in range(6):
        fetch, parse = by_name[f"fetch:{i}"], by_name[f"parse:{i}"]
        assert fetch["depth"] == 0 and parse["depth"] == 1
        assert parse["track_id"] == fetch["track_id"] and parse["parent_id"] == fetch["id"]
        assert fetch["thread_name"].startswith(f"async-loop · worker-{i} (")
        assert fetch["pid"] == os.getpid()
