"""The simulated device's host log (`host.<pid>.log`, today's `[STRACE]` names): written
beside the capture, read back by the merge, which places a device-orchestrated run by span
containment inside its own `runner_run` and `device_execution` stage."""

from __future__ import annotations

import os
import re

import pytest
from runtime_support import dag_golden, dag_program, dag_specs

from pypto.compile_profiling.trace_merge import merge_traces
from pypto.runtime import RunConfig, run

STRACE = re.compile(r"\[STRACE\] v=1 pid=(\d+) tid=(\d+) inv=1 hid=([0-9a-f]{16}) depth=(\d) "
                    r"name=(\S+) ts=(\d+) dur=(\d+) ?(.*)$")


def _run(tmp_path, runtime, **kw):
    work = tmp_path / runtime
    r = run(dag_program(), dag_specs(), dag_golden,
            RunConfig(work_dir=str(work), enable_chip_swimlane=4, compile_profiling=True,
                      runtime=runtime, **kw))
    assert r.passed, r.error
    return work, r


def _spans(work) -> tuple[int, dict]:
    (log,) = (work / "dfx_outputs").glob("host.*.log")
    spans = {}
    for line in log.read_text().splitlines():
        m = STRACE.search(line)
        if m:
            spans[m.group(5)] = (int(m.group(6)), int(m.group(7)), int(m.group(4)),
                                 m.group(8), int(m.group(1)))
    return int(log.name.split(".")[1]), spans


def _stage(profile, name):
    stack = list(profile["stages"])
    while stack:
        s = stack.pop()
        if s["name"] == name:
            return s
        stack.extend(s["children"])
    raise AssertionError(name)


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_the_run_writes_todays_span_ladder_inside_device_execution(tmp_path, runtime):
    work, r = _run(tmp_path, runtime)
    pid, spans = _spans(work)
    assert pid == os.getpid()
    names = set(spans)
    assert {"chip.run", "chip.run.bind", "chip.run.runner_run",
            "chip.run.runner_run.device_wall"} <= names
    tmr = runtime == "tensormap_and_ringbuffer"
    assert ({"chip.run.runner_run.device_wall.orch", "chip.run.runner_run.device_wall.sched"}
            <= names) == tmr          # HBG emits the wall alone, as Simpler's does
    # the direct-chip lane's identity: no run or dispatch id, a per-process run counter
    assert re.fullmatch(r"run_id=0 dispatch_id=0 run_epoch=\d+ slot_id=0 generation=0",
                        spans["chip.run"][3])
    assert {v[2] for v in spans.values()} == {0, 1, 2} | ({3} if tmr else set())
    ex = _stage(r.profile, "device_execution")
    root = spans["chip.run"]
    assert ex["start_ns"] <= root[0] and root[0] + root[1] <= ex["end_ns"]
    runner = spans["chip.run.runner_run"]
    assert root[0] <= runner[0] and runner[0] + runner[1] <= root[0] + root[1]


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_the_merge_places_the_run_inside_its_runner_run_and_device_execution(tmp_path,
                                                                              runtime):
    work, r = _run(tmp_path, runtime)
    _, spans = _spans(work)
    m = merge_traces([work])
    rows = [s for s in m.timeline.slices() if s.process.name.startswith("Device r0")
            and s.cat in ("aicore", "scheduler", "orchestrator")]
    assert rows
    ex = _stage(r.profile, "device_execution")
    runner = spans["chip.run.runner_run"]
    for s in rows:
        assert ex["start_ns"] <= s.start_ns and s.end_ns <= ex["end_ns"], s.name
        assert runner[0] <= s.start_ns and s.end_ns <= runner[0] + runner[1], s.name
    how = next(p for p in m.timeline.processes if "AICore" in p.name).args["alignment"]
    if how["status"] == "contained":
        assert "paired by its own run log" in how["reason"]
        assert "inside its run's device_execution stage" in how["reason"]
        assert 0 <= how["slack_ns"] < runner[1]
    else:                       # a host-orchestrated capture with clock anchors
        assert runtime == "host_build_graph" and how["status"] == "calibrated"
    assert runtime == "host_build_graph" or how["status"] == "contained"
    # the run's clk=dev spans drawn on its device-clock lane, inside runner_run too
    wall = [s for s in m.timeline.slices() if s.name == "chip.run.runner_run.device_wall"]
    assert len(wall) == 1 and wall[0].track.name.startswith("device clock (")
    assert runner[0] <= wall[0].start_ns and wall[0].end_ns <= runner[0] + runner[1]


def test_a_device_child_process_logs_under_its_own_pid(tmp_path):
    work, r = _run(tmp_path, "tensormap_and_ringbuffer", device_process=True)
    pid, spans = _spans(work)
    child = _stage(r.profile, "device_process")
    assert pid == child["pid"] != os.getpid() and spans["chip.run"][4] == pid
    assert child["start_ns"] <= spans["chip.run"][0]
    m = merge_traces([work])
    how = next(p for p in m.timeline.processes if "AICore" in p.name).args["alignment"]
    assert how["status"] == "contained" and how["outer_pid"] == pid
