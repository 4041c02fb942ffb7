"""Modelled time: captures that reproduce to the cycle and answer to core counts and program
changes as a device would (`RunConfig(device_timing="modelled")`)."""

from __future__ import annotations

import functools
import json

import pytest
from runtime_support import (
    FAN_CYCLES,
    dag_golden,
    dag_program,
    dag_specs,
    fan_golden,
    fan_program,
    fan_specs,
)

from pypto.codegen.cost_model import (
    MTE_BYTES,
    MTE_LATENCY,
    VEC_BYTES,
    VEC_LATENCY,
    kernel_cycles,
)
from pypto.errors import RuntimeConfigError
from pypto.runtime import RunConfig, run
from pypto.runtime.modelled_time import task_ticks

FREQ = 50_000_000             # a2a3's counter: one tick is 20 ns


def _fan_run(tmp_path, name="w", branches=8, aiv=16, runtime="host_build_graph", **kw):
    cycles = {k: kw.pop(k) for k in list(kw) if k in FAN_CYCLES}
    config = RunConfig(work_dir=str(tmp_path / name), device_timing="modelled",
                       enable_chip_swimlane=4, enable_dep_gen=True, num_aiv_cores=aiv,
                       runtime=runtime, **kw)
    r = run(fan_program(branches, **cycles), fan_specs(),
            functools.partial(fan_golden, branches), config)
    assert r.passed, r.error
    return json.loads((tmp_path / name / "dfx_outputs" / "chip_swimlane_records.json")
                      .read_text())


def _relative(doc) -> list[tuple]:
    """(core, task, start, end) in cycles from the first start: what must reproduce."""
    rows = doc["aicore_tasks"]
    t0 = min(r[3] for r in rows)
    return sorted((r[0], r[1], r[3] - t0, r[4] - t0) for r in rows)


def _makespan(doc) -> int:
    rows = doc["aicore_tasks"]
    return max(r[4] for r in rows) - min(r[3] for r in rows)


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_two_runs_reproduce_to_the_cycle(tmp_path, runtime):
    a = _fan_run(tmp_path, "a", runtime=runtime)
    b = _fan_run(tmp_path, "b", runtime=runtime)
    assert _relative(a) == _relative(b)
    sched = [[r[1:4] for r in d["scheduler_tasks"]["records"]] for d in (a, b)]
    t0 = [min(r[1] for r in s) for s in sched]
    assert [(c, d - t0[0], f - t0[0]) for c, d, f in sched[0]] == \
        [(c, d - t0[1], f - t0[1]) for c, d, f in sched[1]]
    assert a["metadata"]["device_timing"] == {
        "mode": "modelled", "jitter": 0.0, "seed": None, "cost_model": "pypto.codegen.cost_model",
        "schedule_rules": "pypto.compile_profiling.schedule.rules",
        "schedule_ticks": {"dispatch": 10, "launch": 40, "poll": 15, "complete": 8, "submit": 20},
        "schedule_ns": {"dispatch": 200, "launch": 800, "poll": 300, "complete": 150, "submit": 400}}


def test_fewer_cores_make_a_longer_run_as_on_a_device(tmp_path):
    branch_ticks = task_ticks([FAN_CYCLES["branch"]], 1_800_000_000, FREQ)[0]
    wide = _makespan(_fan_run(tmp_path, "wide", aiv=16))
    narrow = _makespan(_fan_run(tmp_path, "narrow", aiv=2))
    # eight 20 us branches: side by side on 16 cores, four after one another on 2
    assert narrow - wide >= 3 * branch_ticks


def test_more_work_in_a_kernel_is_a_longer_run(tmp_path):
    base = _makespan(_fan_run(tmp_path, "base"))
    slower = _makespan(_fan_run(tmp_path, "slow", branch=FAN_CYCLES["branch"] * 2))
    extra = task_ticks([FAN_CYCLES["branch"]], 1_800_000_000, FREQ)[0]
    assert slower - base == extra        # the branches are on the path: all of it shows


def test_scheduler_costs_change_the_modelled_schedule_and_say_so(tmp_path):
    """Launching at no cost (one tick, the model's least) shortens every task's wait by the
    39 ticks of the default 800 ns; the capture states the costs it ran with."""
    base = _fan_run(tmp_path, "base")
    fast = _fan_run(tmp_path, "fast", scheduler_costs={"launch": 0})
    assert fast["metadata"]["device_timing"]["schedule_ticks"]["launch"] == 1
    assert {k: v for k, v in fast["metadata"]["device_timing"]["schedule_ticks"].items()
            if k != "launch"} == {"dispatch": 10, "poll": 15, "complete": 8, "submit": 20}
    gaps = [[r[3] - d for r, (_, d, _) in zip(doc["aicore_tasks"], [
        x[1:4] for x in doc["scheduler_tasks"]["records"]])] for doc in (base, fast)]
    assert set(gaps[0]) == {40} and set(gaps[1]) == {1}
    # the path holds a launch before each of its tasks: head, branch, four tails at least
    assert _makespan(base) - _makespan(fast) >= 39 * 5


@pytest.mark.parametrize("costs, words", [
    ({"launch": -1}, "must be ns from 0 to"),
    ({"launch": float("nan")}, "must be ns from 0 to"),
    ({"launch": 2e9}, "must be ns from 0 to"),
    ({"warp": 5}, "unknown step 'warp'"),
    ([1, 2], "must be a dict"),
])
def test_bad_scheduler_costs_are_refused(costs, words):
    with pytest.raises((RuntimeConfigError, TypeError), match=words):
        RunConfig(device_timing="modelled", scheduler_costs=costs)
    with pytest.raises(RuntimeConfigError, match="modelled time only"):
        RunConfig(scheduler_costs={"launch": 0})


def test_jitter_is_seeded(tmp_path):
    a = _fan_run(tmp_path, "a", timing_jitter=0.1, timing_seed=7)
    b = _fan_run(tmp_path, "b", timing_jitter=0.1, timing_seed=7)
    c = _fan_run(tmp_path, "c", timing_jitter=0.1, timing_seed=8)
    assert _relative(a) == _relative(b) != _relative(c)
    assert a["metadata"]["device_timing"]["seed"] == 7


def test_measured_captures_say_so(tmp_path):
    work = tmp_path / "m"
    r = run(dag_program(), dag_specs(), dag_golden,
            RunConfig(work_dir=str(work), enable_chip_swimlane=1))
    assert r.passed
    doc = json.loads((work / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    assert doc["metadata"]["device_timing"] == {"mode": "measured"}


def test_a_kernel_without_modelled_cycles_is_one_clear_error(tmp_path):
    r = run(dag_program(), dag_specs(), dag_golden,
            RunConfig(work_dir=str(tmp_path / "w"), device_timing="modelled"))
    assert not r.passed
    assert "has no modelled cycles" in r.error and "compile the program again" in r.error


@pytest.mark.parametrize("kw, words", [
    ({"device_timing": "virtual"}, "device_timing must be one of measured, modelled"),
    ({"timing_jitter": 0.1}, "applies to modelled time only"),
    ({"device_timing": "modelled", "timing_jitter": 2}, "a fraction from 0 to 1"),
    ({"device_timing": "modelled", "timing_seed": "x"}, "timing_seed must be a non-negative int"),
])
def test_bad_timing_settings_are_refused(kw, words):
    with pytest.raises(RuntimeConfigError, match=words):
        RunConfig(**kw)


def test_the_cost_model_counts_bytes_and_ops():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import vector_dag

    kernel_add = vector_dag.VectorDAG.functions["kernel_add"]
    tile = 128 * 128 * 4
    load = MTE_LATENCY + tile // MTE_BYTES
    assert kernel_cycles(kernel_add) == 2 * load + (VEC_LATENCY + tile // VEC_BYTES) + load


@pytest.mark.parametrize("value", ["abc", [1, 2], -5, 0, 1.5, 1e30, 2**63 - 1, True])
def test_modelled_cycles_outside_whole_cycles_within_the_bound_are_one_line(tmp_path, value):
    """A compiled program's `modelled_cycles` is a whole number of AICore cycles from 1 to
    MAX_MODELLED_CYCLES (a minute of one core): anything else is one CompileError naming
    the file and the kernel, never a TypeError, an OverflowError or a silent 1 tick."""
    import examples.vector_dag as vdag
    from pypto import ir
    from pypto.codegen import load_compiled
    from pypto.codegen.cost_model import MAX_MODELLED_CYCLES
    from pypto.codegen.driver import CONFIG_FILE
    from pypto.errors import CompileError

    out = ir.compile(vdag.VectorDAG, output_dir=str(tmp_path / "c"))
    cfg = tmp_path / "c" / CONFIG_FILE
    doc = json.loads(cfg.read_text())
    name = doc["kernels"][0]["name"]
    doc["kernels"][0]["modelled_cycles"] = value
    cfg.write_text(json.dumps(doc))
    with pytest.raises(CompileError) as e:
        load_compiled(out)
    assert str(e.value) == (f"{cfg}: kernel {name!r}: modelled_cycles must be a whole number "
                            f"of cycles from 1 to {MAX_MODELLED_CYCLES}, got {value!r}")
    doc["kernels"][0]["modelled_cycles"] = MAX_MODELLED_CYCLES     # the bound itself: taken
    cfg.write_text(json.dumps(doc))
    assert load_compiled(out).kernels[name].modelled_cycles == MAX_MODELLED_CYCLES


def test_a_schedule_longer_than_the_hold_bound_is_refused_not_slept_through(tmp_path):
    """Branch kernels of 30 s each on 2 cores: 8 of them take 120 s of device time, past
    MAX_HOLD_S. The run fails at once with one line naming the longest kernel."""
    from pypto.runtime.modelled_time import MAX_HOLD_S

    config = RunConfig(work_dir=str(tmp_path / "w"), device_timing="modelled",
                       num_aiv_cores=2)
    r = run(fan_program(8, branch=30 * 1_800_000_000), fan_specs(),
            functools.partial(fan_golden, 8), config)
    assert not r.passed
    assert "the modelled schedule lasts" in r.error and f"at most {MAX_HOLD_S} s" in r.error
    assert "'branch', 54000000000 cycles" in r.error


def test_a_negative_seed_is_refused_it_would_repeat_another():
    with pytest.raises(RuntimeConfigError, match="timing_seed must be a non-negative int"):
        RunConfig(device_timing="modelled", timing_jitter=0.1, timing_seed=-1)
