"""Stages that do not nest neatly on one thread: asyncio tasks, generators, manual closes,
interrupts, forks, environment refresh, and the upstream idioms the profiler must keep."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling import CompileProfiler, StageRecord
from pypto.compile_profiling.profile_data.model import walk

PROFILER_FILE = str(REPO / "pypto" / "compile_profiling" / "profiler.py")


def records_of(stages):
    """Every stage record of the tree (profile_data.model.walk, without depth and parent)."""
    return [rec for rec, _, _ in walk(stages)]


def run_tasks(prof, count=10):
    async def work(i):
        with prof.stage(f"fetch:{i}", {"i": i}):
            await asyncio.sleep(0.001 * (count - i))
            with prof.stage(f"parse:{i}"):
                await asyncio.sleep(0)

    async def main():
        with prof.stage("gather"):
            await asyncio.gather(*(asyncio.create_task(work(i), name=f"worker-{i}")
                                   for i in range(count)))

    asyncio.run(main())


def test_asyncio_tasks_nest_only_within_their_own_task():
    with CompileProfiler() as prof:
        run_tasks(prof)
    (gather,) = prof.stages
    fetches = gather.children
    assert sorted(f.name for f in fetches) == sorted(f"fetch:{i}" for i in range(10))
    for f in fetches:
        i = f.name.split(":")[1]
        assert [c.name for c in f.children] == [f"parse:{i}"]
        assert f.start_ns <= f.children[0].start_ns <= f.children[0].end_ns <= f.end_ns
        assert not f.out_of_order and not f.interrupted
    lanes = {f.lane for f in fetches}
    assert len(lanes) == 10 and "" not in lanes  # one lane per task
    names = {f.name: f.lane_name for f in fetches}
    assert names["fetch:3"] == "MainThread · worker-3 (run_tasks.<locals>.work)"
    assert all(f.children[0].lane == f.lane for f in fetches)
    # gather ran in asyncio.run's main task, which interleaved with the others too
    assert gather.lane not in lanes | {""}
    assert re.fullmatch(r"MainThread · Task-\d+ \(run_tasks\.<locals>\.main\)", gather.lane_name)


def test_asyncio_tasks_are_drawn_on_their_own_lanes_in_trace_json(tmp_path):
    with CompileProfiler() as prof:
        run_tasks(prof)
    prof.write_report(tmp_path)
    trace = json.loads((tmp_path / "trace.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    thread_names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                    if e["ph"] == "M" and e["name"] == "thread_name"}
    by_name = {e["name"]: e for e in slices}
    lanes = trace["otherData"]["lanes"]
    assert lanes[str(by_name["gather"]["tid"])]["tid"] == threading.get_native_id()
    task_tids = {by_name[f"fetch:{i}"]["tid"] for i in range(10)}
    assert len(task_tids) == 10 and threading.get_native_id() not in task_tids
    for i in range(10):
        tid = by_name[f"fetch:{i}"]["tid"]
        assert by_name[f"parse:{i}"]["tid"] == tid
        assert thread_names[tid].startswith(f"MainThread · worker-{i} ")
        assert lanes[str(tid)]["tid"] == threading.get_native_id()
    assert len(task_tids | {by_name["gather"]["tid"]}) == 11


def test_generator_closing_its_stage_later_closes_its_own_and_is_flagged():
    with CompileProfiler() as prof:
        def gen():
            with prof.stage("in_generator"):
                yield 1

        g = gen()
        next(g)  # opens in_generator
        with prof.stage("caller"):
            time.sleep(0.001)
            next(g, None)  # closes in_generator while caller is open
            t_gen_closed = time.perf_counter_ns()
            time.sleep(0.001)
        with prof.stage("after"):
            pass
    recs = {r.name: r for r in records_of(prof.stages)}
    gen_rec, caller = recs["in_generator"], recs["caller"]
    assert gen_rec.end_ns <= t_gen_closed < caller.end_ns  # no swapped end times
    assert gen_rec.out_of_order and not caller.out_of_order
    assert caller not in gen_rec.children  # it outlived in_generator: not inside it
    assert [r.name for r in prof.stages] == ["in_generator", "caller", "after"]
    assert recs["after"].children == [] and not recs["after"].out_of_order


def test_manual_end_stage_of_a_given_stage_closes_that_one():
    with CompileProfiler() as prof:
        a = prof._begin_stage("a")
        prof._begin_stage("b")
        assert prof._end_stage({"k": 1}, stage=a) is a
        time.sleep(0.001)
        prof._end_stage()  # the innermost open one: b
        prof._end_stage()  # nothing open: ignored
    recs = {r.name: r for r in records_of(prof.stages)}
    assert recs["a"].end_ns < recs["b"].end_ns
    assert recs["a"].args == {"k": 1} and recs["a"].out_of_order
    assert not recs["b"].is_open and not recs["b"].interrupted


def _interrupt_at(k):
    """A tracer raising KeyboardInterrupt at the k-th line run inside profiler.py."""
    seen = [0]

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != PROFILER_FILE:
            return None
        if event == "line":
            seen[0] += 1
            if seen[0] == k:
                raise KeyboardInterrupt
        return tracer

    return tracer


def test_an_interrupt_anywhere_in_the_bookkeeping_never_leaves_a_stage_open():
    hits = 0
    with CompileProfiler() as prof:
        for k in range(1, 400):
            interrupted = False
            sys.settrace(_interrupt_at(k))
            try:
                with prof.stage("outer"), prof.stage("inner"):
                    pass
            except KeyboardInterrupt:
                interrupted = True
            finally:
                sys.settrace(None)
            with prof.stage("after"):
                pass
            if not interrupted:
                break
            hits += 1
    assert hits > 20  # every line of stage() and __exit__ was hit once
    records = records_of(prof.stages)
    assert [r for r in records if r.is_open] == []
    assert any(r.interrupted for r in records)
    assert sum(r.name == "after" for r in records) == hits + 1
    for rec in records:
        for child in rec.children:
            if child.tid == rec.tid:
                assert rec.start_ns <= child.start_ns <= child.end_ns <= rec.end_ns


def test_keyboard_interrupt_through_a_stage_closes_and_flags_it():
    with CompileProfiler() as prof, pytest.raises(KeyboardInterrupt), prof.stage("work"):
        raise KeyboardInterrupt
    (work,) = prof.stages
    assert not work.is_open and work.error == "KeyboardInterrupt"


def run_profiled(tmp_path, program):
    """`program` in a fresh interpreter with PYPTO_COMPILE_PROFILING=1 (profile dir: prof/)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env.update(PYTHONPATH=str(REPO), PYPTO_COMPILE_PROFILING="1",
               PYPTO_COMPILE_PROFILING_DIR=str(tmp_path / "prof"))
    return subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


FORK_PROGRAM = """
import os, sys
from pypto.compile_profiling import get_active_profiler
prof = get_active_profiler()
with prof.stage("before_fork"):
    pass
pid = os.fork()
if pid == 0:
    child = get_active_profiler()
    assert child is not prof and child.pid == os.getpid()
    with child.stage("in_child"):
        pass
    sys.exit(0)
os.waitpid(pid, 0)
with prof.stage("after_fork"):
    pass
print(pid)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_writes_its_own_profile_under_its_own_pid(tmp_path):
    proc = run_profiled(tmp_path, FORK_PROGRAM)
    assert proc.returncode == 0, proc.stderr
    child_pid = int(proc.stdout.strip())
    parent = json.loads((tmp_path / "prof" / "pipeline_profile.json").read_text())
    child = json.loads((tmp_path / f"prof_{child_pid}" / "pipeline_profile.json").read_text())
    assert [s["name"] for s in parent["stages"]] == ["before_fork", "after_fork"]
    assert {s["pid"] for s in parent["stages"]} == {parent["pid"]} != {child_pid}
    assert [s["name"] for s in child["stages"]] == ["in_child"]
    assert child["pid"] == child_pid and child["stages"][0]["pid"] == child_pid
    assert proc.stderr.count("compile profile written") == 2


OPEN_AT_FORK_PROGRAM = """
import os, sys, time
from pypto.compile_profiling import CompileProfiler
report = sys.argv[1]
with CompileProfiler() as prof:
    with prof.stage("outer"):
        with prof.stage("before_fork"):
            sum(range(300_000))  # a few ms the child's span must not include
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            with prof.stage("in_child"):
                pass
            span, now_ns = prof.total_seconds, time.perf_counter_ns()
            prof.write_report(os.path.join(report, "child"))
            os.write(w, f"{span!r} {now_ns}".encode())
            os._exit(0)
        os.close(w)
        reply = os.read(r, 100).decode()
        os.waitpid(pid, 0)
prof.write_report(os.path.join(report, "parent"))
print(pid, reply)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_reports_only_its_own_stages_not_the_parents_open_one(tmp_path):
    """Forked inside an open stage of an explicit profiler: the child's report holds only
    the child's stages (the parent's open `outer` is not drawn again on the parent's
    pid/tid), its span starts at the fork, and merging both traces draws `outer` once."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_COMPILE_PROFILING")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", OPEN_AT_FORK_PROGRAM, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    pid_text, span_text, now_text = proc.stdout.split()
    child_pid, child_span, child_now_ns = int(pid_text), float(span_text), int(now_text)
    child = json.loads((tmp_path / "child" / "pipeline_profile.json").read_text())
    assert [(s["name"], s["pid"]) for s in child["stages"]] == [("in_child", child_pid)]
    trace = json.loads((tmp_path / "child" / "trace.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["pid"]) for e in slices] == [("in_child", child_pid)]
    parent = json.loads((tmp_path / "parent" / "pipeline_profile.json").read_text())
    assert [s["name"] for s in parent["stages"]] == ["outer"]
    (before_fork,) = parent["stages"][0]["children"]
    assert before_fork["name"] == "before_fork"
    # the child's span starts after the fork (1 us for float seconds against integer ns)
    assert child_span * 1e9 <= child_now_ns - before_fork["end_ns"] + 1000

    from pypto.compile_profiling.trace_merge import merge_traces

    merged = merge_traces([tmp_path / "parent" / "trace.json", tmp_path / "child" / "trace.json"])
    names = [block.names[i] for block in merged.timeline.blocks for i in block.name.tolist()]
    assert sorted(names) == ["before_fork", "in_child", "outer"]


REFRESH_PROGRAM = """
import os, threading
import pypto.compile_profiling as cp
prof = cp.get_active_profiler()
assert prof is not None
go, done, seen = threading.Event(), threading.Event(), []
def worker():
    go.wait()
    seen.append(cp.get_active_profiler())
    done.set()
t = threading.Thread(target=worker)
t.start()
os.environ["PYPTO_COMPILE_PROFILING"] = "0"
assert cp.refresh_from_environment() is None
go.set(); done.wait(); t.join()
assert seen == [None], seen
print("OFF")
"""


def test_refresh_from_environment_switches_every_thread(tmp_path):
    proc = run_profiled(tmp_path, REFRESH_PROGRAM)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OFF"
    assert not (tmp_path / "prof").exists()  # nobody records into an unwritten profile


# -- upstream idioms ---------------------------------------------------------------------------

def test_stage_yields_and_begin_stage_returns_a_stage_record_compatible_object():
    with CompileProfiler() as prof:
        with prof.stage("outer") as rec:
            assert rec.name == "outer" and rec.end == 0 and rec.is_open
            with prof.stage("inner"):
                time.sleep(0.001)
        manual = prof._begin_stage("manual")
        prof._end_stage()
    assert rec.end > rec.start > 0 and rec.duration >= 0.001
    assert [c.name for c in rec.children] == ["inner"]
    d = rec.to_dict()
    assert d["name"] == "outer" and d["children"][0]["name"] == "inner" and d["seconds"] > 0
    assert manual.name == "manual" and manual.end >= manual.start and not manual.is_open


def test_unwrapped_pool_worker_stages_nest_under_the_open_stage_of_the_entering_thread():
    with CompileProfiler() as prof:
        with prof.stage("codegen"):
            def kernel(i):  # written for upstream: no bind_to_current
                with prof.stage(f"kernel_codegen:k{i}"):
                    time.sleep(0.002)

            with ThreadPoolExecutor(3) as pool:
                list(pool.map(kernel, range(6)))
        with prof.stage("after"):
            pass
    codegen, after = prof.stages
    assert sorted(c.name for c in codegen.children) == [f"kernel_codegen:k{i}" for i in range(6)]
    assert after.children == []
    top = sum(s.duration for s in prof.stages)
    assert top <= prof.total_seconds  # kernels are not counted beside codegen
    lines = prof.summary().splitlines()   # the six fold into one family row under codegen
    assert [line.split()[:2] for line in lines if "kernel_codegen:" in line] == [
        ["kernel_codegen:*", "x6"]]
    assert lines[lines.index(next(x for x in lines if "kernel_codegen:" in x)) - 1].startswith(
        "  codegen")


def test_work_bound_where_no_stage_was_open_stays_top_level():
    from pypto.compile_profiling import bind_to_current

    with CompileProfiler() as prof:
        def job():
            with prof.stage("bound_job"):
                time.sleep(0.002)

        bound = bind_to_current(job)  # bound here, with nothing open
        with prof.stage("busy"), ThreadPoolExecutor(1) as pool:
            pool.submit(bound).result()
    assert sorted(s.name for s in prof.stages) == ["bound_job", "busy"]


def test_add_stage_record_with_perf_counter_seconds_keeps_working():
    with CompileProfiler() as prof, prof.stage("device_execution"):
        now = time.perf_counter()
        prof.add_stage_record(StageRecord("remote", now - 0.002, now - 0.001))
    (device,) = prof.stages
    (remote,) = device.children
    assert remote.name == "remote" and remote.duration == pytest.approx(0.001)
    assert remote.start_ns == round((now - 0.002) * 1e9)
