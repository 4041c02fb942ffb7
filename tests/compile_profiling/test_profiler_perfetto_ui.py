"""trace.json opens in the real (offline) Perfetto UI with the processes, threads and slices we wrote."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pypto.compile_profiling import CompileProfiler, StageRecord, bind_to_current

WORKERS = 3


@pytest.mark.perfetto_ui
def test_compile_trace_loads_in_perfetto_with_expected_counts(tmp_path, perfetto_ui):
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            pass
        with prof.stage("passes"):
            for name in ("UnrollLoops", "ConvertToSSA", "UnrollLoops"):
                with prof.stage(name):
                    pass
            now = time.perf_counter()
            prof.add_stage_record(StageRecord("zero-length", now, now))
        with prof.stage("codegen"):
            # each kernel waits until WORKERS run at once: every pool thread runs some
            all_workers_busy = threading.Barrier(WORKERS, timeout=60)

            def kernel(i):
                with CompileProfiler.current().stage(f"kernel_codegen:k{i}", {"i": i}):
                    all_workers_busy.wait()

            with ThreadPoolExecutor(WORKERS, thread_name_prefix="codegen") as pool:
                list(pool.map(bind_to_current(kernel), range(2 * WORKERS)))
            with prof.stage('orchestration "codegen" ✓'):
                pass
        # At a fixed time, not the host's uptime (the UI's JSON importer keeps every ns only
        # up to about 2^53 ns, 104 days), on a lane of its own: nothing clamps or nests it.
        exact_ns = 1_234_567_890_123
        prof.add_stage_record(StageRecord("fixed-time", exact_ns / 1e9, (exact_ns + 1) / 1e9,
                                          start_ns=exact_ns, end_ns=exact_ns + 1,
                                          tid=999_999_001, thread_name="fixed-time lane"))
    prof.write_report(tmp_path)

    trace = perfetto_ui.load(tmp_path / "trace.json")
    assert trace.import_errors() == []
    procs = [p for p in trace.processes() if p["pid"] == os.getpid()]
    assert [p["name"] for p in procs] == ["PyPTO compile"]
    threads = [t for t in trace.threads() if t["pid"] == os.getpid()]
    names = sorted(t["name"] for t in threads)
    assert "MainThread" in names and sum(n.startswith("codegen") for n in names) == WORKERS
    assert trace.slice_count() == 15  # parse; passes + 3 + zero-length; codegen + 6 + 1; fixed

    slices = trace.slices()
    by_name = {s["name"]: s for s in slices}
    assert [s["depth"] for s in slices if s["name"] == "UnrollLoops"] == [1, 1]
    assert by_name["passes"]["depth"] == 0
    assert by_name['orchestration "codegen" ✓']["depth"] == 1
    assert by_name["zero-length"]["dur"] == 0 and by_name["zero-length"]["depth"] == 1
    fixed = by_name["fixed-time"]
    assert (fixed["ts"], fixed["dur"], fixed["tid"]) == (exact_ns, 1, 999_999_001)  # every ns
    kernels = [s for s in slices if s["name"].startswith("kernel_codegen:")]
    assert len(kernels) == 2 * WORKERS
    assert all(k["thread_name"].startswith("codegen") and k["depth"] == 0 for k in kernels)
    assert len({k["tid"] for k in kernels}) == WORKERS
    assert {k["tid"] for k in kernels}.isdisjoint({threading.get_native_id()})
    codegen = by_name["codegen"]
    assert all(codegen["ts"] <= k["ts"] and k["ts"] + k["dur"] <= codegen["ts"] + codegen["dur"]
               for k in kernels)
    assert trace.slice_args("UnrollLoops")["args.path"] == "passes/UnrollLoops"
    assert trace.slice_args("kernel_codegen:k4")["args.i"] == 4


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
    prof.to_perfetto(tmp_path / "profile.pftrace")  # the same lanes, as protobuf

    for name in ("trace.json", "profile.pftrace"):
        with perfetto_ui.load(tmp_path / name) as trace:  # closed before the next load
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
                # a lane is a thread of the process in both formats, named alike
                assert fetch["thread_name"].startswith(f"async-loop · worker-{i} (")
                assert fetch["pid"] == os.getpid()
