"""The simulated device's host log (`host.<pid>.log`, today's `[STRACE]` names): written
beside the capture, read back by the merge, which places a device-orchestrated run by span
containment inside its own `runner_run` and `device_execution` stage."""

from __future__ import annotations

import os
import re
from fractions import Fraction

import numpy as np
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
    if how["status"] == "joined":   # device_wall's cycles, inside runner_run
        assert "paired by its own run log" in how["reason"]
        assert "inside its run's device_execution stage" in how["reason"]
        assert how["method"] == "device_wall_cycles" and how["join"]["residual_ns"] == 0
        assert 0 <= how["slack_ns"] < runner[1]
    else:                       # a host-orchestrated capture with clock anchors
        assert runtime == "host_build_graph" and how["status"] == "calibrated"
    assert runtime == "host_build_graph" or how["status"] == "joined"
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
    assert how["status"] == "joined" and how["outer_pid"] == pid


# -- Simpler's newer writer: device_wall's cycles, task-timing slots, host-log drops -----------

def _device_run(tmp_path, *, level=4, runtime="tensormap_and_ringbuffer", queue=4096):
    """The slotted DSL program executed on a simulated device whose counter we hold, its DFX
    files written as `run` writes them: (the DeviceRun, its dfx_outputs directory)."""
    from runtime_support import slotted_program

    from pypto import ir
    from pypto.codegen import load_compiled
    from pypto.runtime.device import DeviceLayout, SimulatedDevice
    from pypto.runtime.host_log import write_host_log
    from pypto.runtime.swimlane_writer import write_dfx_outputs

    loaded = load_compiled(ir.compile(slotted_program(), output_dir=str(tmp_path / "k")))
    a = np.full((64, 64), 2.0, np.float32)
    device = SimulatedDevice(DeviceLayout.build(2, 4, 2), 50_000_000, level, runtime)
    run_ = device.execute(loaded, {"a": a, "b": a, "f": np.zeros_like(a)})
    assert run_.error is None
    dfx = tmp_path / "dfx_outputs"
    write_dfx_outputs(run_, dfx, level=level, dep_gen=False, case_name="Slotted",
                      kernels=loaded.kernels, orchestration_name=loaded.orchestration_name)
    write_host_log(run_, dfx, "Slotted", device_id=3, queue=queue)
    return run_, dfx


def _log_spans(dfx) -> dict:
    (log,) = dfx.glob("host.*.log")
    out = {}
    for line in log.read_text().splitlines():
        m = STRACE.search(line)
        if m:
            attrs = dict(kv.split("=", 1) for kv in m.group(8).split())
            out[m.group(5)] = (int(m.group(6)), int(m.group(7)), attrs)
    return out


def test_device_wall_carries_the_counters_bounds_and_the_device_id(tmp_path):
    run_, dfx = _device_run(tmp_path)
    wall = _log_spans(dfx)["chip.run.runner_run.device_wall"]
    attrs = wall[2]
    assert list(attrs) == ["clk", "dev_id", "dev_start_cycle", "dev_end_cycle", "dev_cnt_hz"]
    start, end, hz = (int(attrs[k]) for k in ("dev_start_cycle", "dev_end_cycle", "dev_cnt_hz"))
    assert attrs["dev_id"] == "3" and hz == run_.counter.freq_hz == 50_000_000
    assert wall[0] == 0 and wall[1] == round(Fraction((end - start) * 10**9, hz))


def test_task_slots_are_the_tagged_tasks_dispatch_to_finish_cycle_for_cycle(tmp_path):
    """Each slot span is min(dispatch) -> max(finish) of the tasks tagged with it, in
    device-phase ns from dev_start_cycle, exactly as the capture's own records say (slot 5:
    two tasks, one merged window); the untagged task has none."""
    from runtime_support import SLOTTED_TAGS

    from pypto.compile_profiling.trace_merge.read.read_records import read_records

    _, dfx = _device_run(tmp_path)
    spans = _log_spans(dfx)
    origin = int(spans["chip.run.runner_run.device_wall"][2]["dev_start_cycle"])
    rec = read_records(dfx / "chip_swimlane_records.json")
    a, c = rec.aicore, rec.aicpu
    token = {(int(k), int(r)): int(t) & 0xFFFFFFFF for k, r, t in
             zip(a["core_id"], a["reg_task_id"], a["task_id"])}
    windows: dict[int, list[int]] = {}
    for core, reg, d, f in zip(c["core_id"], c["reg_task_id"], c["dispatch_cycles"],
                               c["finish_cycles"]):
        slot = SLOTTED_TAGS.get(token[int(core), int(reg)])
        if slot is not None:
            w = windows.setdefault(slot, [int(d), int(f)])
            w[0], w[1] = min(w[0], int(d)), max(w[1], int(f))
    slots = {int(n.rsplit("_", 1)[1]): v for n, v in spans.items() if ".task_slot_" in n}
    assert sorted(slots) == [3, 5] == sorted(windows)

    def ns(cycles):
        return round(Fraction((cycles - origin) * 10**9, 50_000_000))

    for n, (d, f) in windows.items():
        assert slots[n][:2] == (ns(d), ns(f) - ns(d))
        assert slots[n][2] == {"clk": "dev"}


def test_the_merge_joins_by_device_wall_cycles_and_holds_the_true_offset(tmp_path):
    """Ground truth: the simulated counter reads origin + (host ns - epoch) * f / 1e9, so the
    true offset (host ns = cycles * 1e9 / f + offset) is epoch - origin * 1e9 / f. The merge
    joins exactly (no residual), keeps device_wall inside runner_run, and its interval holds
    the truth; its width is runner_run's length less device_wall's, to the nanosecond."""
    run_, dfx = _device_run(tmp_path)
    m = merge_traces([dfx])
    how = next(p for p in m.timeline.processes if "AICore" in p.name).args["alignment"]
    assert how["status"] == "joined" and how["method"] == "device_wall_cycles"
    assert how["join"] == {"sources": ["device_wall cycles"],
                           "origin_cycles": how["device_wall_cycles"]["start"], "residual_ns": 0}
    counter = run_.counter
    truth = Fraction(counter.epoch_ns) - Fraction(counter.origin_cycles * 10**9, counter.freq_hz)
    tick = Fraction(10**9, counter.freq_hz)            # a counter read truncates to a cycle
    assert how["offset_lo_ns"] <= truth + tick and truth <= how["offset_hi_ns"]
    spans = _log_spans(dfx)
    runner = spans["chip.run.runner_run"][1]
    wall = how["device_wall_cycles"]
    wall_ns = Fraction((wall["end"] - wall["start"]) * 10**9, wall["hz"])
    assert abs((how["offset_hi_ns"] - how["offset_lo_ns"]) - (runner - wall_ns)) <= 2
    lanes = {s.track.name.split(" (")[0] for s in m.timeline.slices() if "device_wall" in s.name}
    assert lanes == {"device clock", "task slots"}
    assert any(ln.startswith(f"{dfx}/host.") and "2 task slots on its task-slots lane" in ln
               for ln in m.summary_lines)


def test_a_full_logger_queue_loses_records_and_says_so(tmp_path):
    _, dfx = _device_run(tmp_path, queue=2)
    (log,) = dfx.glob("host.*.log")
    lines = log.read_text().splitlines()
    assert sum("[STRACE]" in ln for ln in lines) == 2
    (drop,) = [ln for ln in lines if "[HOSTLOG_DROPS]" in ln]
    assert re.search(r"\[ERROR\] host_log_drops: \[HOSTLOG_DROPS\] v=1 pid=\d+ new=6 total=\d+ "
                     r"queue_full=\d+ claim_exhausted=0 output_failed=0 not_admitted=0$", drop)
    m = merge_traces([dfx])
    (warning,) = [w for w in m.warnings if "[HOSTLOG_DROPS]" in w]
    assert "its host side is incomplete" in warning
    (source,) = [s for s in m.timeline.metadata["sources"] if s["kind"] == "run_log"]
    assert source["host_side_incomplete"] is True
