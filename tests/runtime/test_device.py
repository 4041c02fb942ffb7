"""The simulated device: dependencies honoured, kernels placed by core type, real results,
a device counter with its own origin that advances with real time."""

from __future__ import annotations

import functools
import itertools
import time

import numpy as np
import pytest
from runtime_support import (
    CompiledKernel,
    LoadedProgram,
    ParamSpec,
    TaskCall,
    dag_program,
    failing_program,
    k_add,
    mixed_program,
    wide_program,
)

from pypto.runtime.device import DeviceLayout, SimulatedDevice
from pypto.runtime.device_clock import HOST_DISTANCE_CYCLES, MIN_ORIGIN_CYCLES, DeviceCounter
from pypto.runtime.task_graph import TaskGraph


def _execute(
    program, tensors, level=4, runtime="host_build_graph", aic=2, aiv=4, sched=3, dep_gen=True
):
    dev = SimulatedDevice(DeviceLayout.build(aic, aiv, sched), 50_000_000, level, runtime, dep_gen)
    return dev.execute(program, tensors)


def _rows_by_task(run):
    """task index -> (core, start_ns, end_ns) from the raw core records."""
    out = {}
    for core, rows in enumerate(run.records.core_rows):
        for tid, reg, recv, start, end in rows:
            assert tid not in out, f"task {tid} ran twice"
            out[tid] = (core, start, end)
    return out


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_dag_results_and_dependency_order(runtime):
    shape = (64, 64)
    t = {
        "a": np.full(shape, 2, np.float32),
        "b": np.full(shape, 3, np.float32),
        "f": np.zeros(shape, np.float32),
    }
    run = _execute(dag_program(shape), t, runtime=runtime)
    assert run.error is None
    assert (t["f"] == 47).all()
    rows = _rows_by_task(run)
    assert sorted(rows) == [0, 1, 2, 3, 4]
    preds = {task.index: task.preds for task in run.graph.tasks}
    assert preds == {0: [], 1: [0], 2: [0], 3: [1, 2], 4: [3, 0]}
    for succ, ps in preds.items():
        for p in ps:
            assert rows[p][2] <= rows[succ][1], f"t{succ} started before its predecessor t{p} ended"


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_wide_program_all_tasks_once_and_chains_ordered(runtime):
    prog = wide_program(n_tasks=240, width=12, cols=16)
    a = np.arange(12 * 16, dtype=np.float32).reshape(12, 16)
    t = {"a": a, "f": np.zeros((12, 16), np.float32)}
    run = _execute(prog, t, runtime=runtime, aiv=6)
    assert run.error is None
    np.testing.assert_array_equal(t["f"], a + 20)
    rows = _rows_by_task(run)
    assert len(rows) == 240
    for task in run.graph.tasks:
        for p in task.preds:
            assert rows[p][2] <= rows[task.index][1]
    used = {core for core, _, _ in rows.values()}
    assert len(used) > 1, "independent chains should spread over several cores"


def test_kernels_are_placed_by_core_type():
    n = 5
    shape = (16, 16)
    rng = np.random.default_rng(1)
    t = {
        "a": rng.random(shape, dtype=np.float32),
        "b": rng.random(shape, dtype=np.float32),
        "out": np.zeros(shape, np.float32),
    }
    a, b = t["a"].copy(), t["b"].copy()
    run = _execute(mixed_program(n, shape), t, aic=2, aiv=4)
    assert run.error is None
    np.testing.assert_allclose(t["out"], n * (a @ b), rtol=1e-5)
    types = run.layout.core_types
    for task in run.graph.tasks:
        core = _rows_by_task(run)[task.task_id][0]
        assert (
            types[core]
            == task.core_type
            == ("aic" if task.kernel_name == "kernel_matmul" else "aiv")
        )
    # in-place accumulation: each acc waits for the previous acc (WAW/RAW on out)
    accs = [task for task in run.graph.tasks if task.kernel_name == "kernel_acc"]
    for prev, cur in itertools.pairwise(accs):
        assert prev.index in cur.preds


def test_layout_matches_simpler_a2a3():
    lay = DeviceLayout.build(8, 16, 3)
    assert lay.core_types == ["aic"] * 8 + ["aiv"] * 16
    assert lay.core_to_thread == [
        0,
        1,
        2,
        0,
        1,
        2,
        0,
        1,
        0,
        0,
        1,
        1,
        2,
        2,
        0,
        0,
        1,
        1,
        2,
        2,
        0,
        0,
        1,
        1,
    ]


def test_kernel_failure_is_reported():
    t = {"a": np.ones(8, np.float32), "f": np.zeros(8, np.float32)}
    run = _execute(failing_program(), t)
    assert run.error is not None
    assert "kernel 'kernel_fail' (task t0) raised FloatingPointError" in run.error


def test_missing_core_type_is_an_error():
    from pypto.runtime.device import DeviceExecutionError

    t = {
        "a": np.ones((4, 4), np.float32),
        "b": np.ones((4, 4), np.float32),
        "out": np.zeros((4, 4), np.float32),
    }
    with pytest.raises(DeviceExecutionError, match="no aic cores"):
        _execute(mixed_program(1, (4, 4)), t, aic=0, aiv=2)


def _graph(calls, kernels):
    g = TaskGraph(kernels, record_details=True)
    for c in calls:
        g.submit(c)
    return g


def test_war_waw_and_views_make_edges():
    p = ParamSpec
    add = CompiledKernel(
        0,
        "add",
        "aiv",
        [
            p("a", None, "float32", "in"),
            p("b", None, "float32", "in"),
            p("o", None, "float32", "out"),
        ],
        k_add,
    )
    ks = {"add": add}
    x = np.ones((4, 8), np.float32)
    y = np.zeros((4, 8), np.float32)
    z = np.zeros((4, 8), np.float32)
    g = _graph(
        [
            TaskCall("add", [x, x, y]),  # t0 writes y
            TaskCall("add", [y, x, z]),  # t1 reads y  (RAW on t0)
            TaskCall("add", [x, x, y]),  # t2 writes y (WAW t0, WAR t1)
            TaskCall("add", [x[0], x[0], z[1]]),  # t3 writes a row of z (WAW t1)
            TaskCall("add", [z[2], x[2], x[3]]),  # t4: RAW t1 (row 2 of z, not t3's row 1)
        ],
        ks,
    )  # and WAR on x[3]: t0-t2 read all of x,
    preds = [sorted(t.preds) for t in g.tasks]  # t3 only x[0]
    assert preds == [[], [0], [0, 1], [1], [0, 1, 2]]
    kinds = {(e.pred, e.succ): e.kind for e in g.edges}
    assert kinds[(0, 2)] == "waw" and kinds[(1, 2)] == "war" and kinds[(0, 1)] == "raw"
    assert kinds[(1, 4)] == "raw"


@pytest.mark.parametrize("seed", range(64))
def test_device_counter_origin_is_never_near_the_host_clock(seed):
    freq = 50_000_000
    c = DeviceCounter.start(freq, seed=seed)
    host_cycles = c.epoch_ns * freq // 1_000_000_000
    assert abs(c.origin_cycles - host_cycles) >= HOST_DISTANCE_CYCLES[0]
    assert abs(c.origin_cycles - host_cycles) < HOST_DISTANCE_CYCLES[1]
    assert c.origin_cycles >= MIN_ORIGIN_CYCLES


def test_device_counter_origin_is_random_unless_seeded_or_given():
    origins = {DeviceCounter.start(50_000_000).origin_cycles for _ in range(8)}
    assert len(origins) == 8
    def distance_from_host(c):
        return c.origin_cycles - c.epoch_ns * c.freq_hz // 1_000_000_000

    a, b = DeviceCounter.start(50_000_000, seed=3), DeviceCounter.start(50_000_000, seed=3)
    assert distance_from_host(a) == distance_from_host(b)
    assert DeviceCounter.start(50_000_000, origin_cycles=12345).origin_cycles == 12345
    with pytest.raises(ValueError, match="origin_cycles"):
        DeviceCounter.start(50_000_000, origin_cycles=-1)


def test_device_counter_ticks_at_its_frequency_from_its_origin():
    c = DeviceCounter.start(50_000_000, origin_cycles=1 << 40)
    assert c.cycles_at(c.epoch_ns) == 1 << 40
    assert c.cycles_at(c.epoch_ns + 1_000_000_000) - c.cycles_at(c.epoch_ns) == 50_000_000
    drifting = DeviceCounter.start(50_000_000, drift_ppm=100.0, origin_cycles=0)
    assert drifting.cycles_at(drifting.epoch_ns + 1_000_000_000) == 50_005_000
    before = time.perf_counter_ns()
    now = c.read()  # read() is cycles_at(the host clock now)
    after = time.perf_counter_ns()
    assert c.cycles_at(before) <= now <= c.cycles_at(after)


def test_device_process_program_pickles_by_reference():
    import pickle

    prog = dag_program()
    again = pickle.loads(pickle.dumps(prog))
    assert again.kernels["kernel_add"].fn is prog.kernels["kernel_add"].fn
    assert isinstance(again.build_tasks, functools.partial)
    _ = LoadedProgram


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_broken_orchestration_is_one_error(runtime, tmp_path):
    from pypto.runtime.device_process import DeviceSettings, run_device

    def boom(tensors):
        raise IndexError("tile 9 of 8")

    prog = LoadedProgram("Broken", "", dag_program().kernels, "main", [], boom)
    s = DeviceSettings(1, 2, 1, 50_000_000, 4, runtime, False, str(tmp_path / "dfx"), "b")
    out = run_device(prog, {"a": np.zeros(4, np.float32)}, s)
    assert out.error == "orchestration failed: IndexError: tile 9 of 8"


def k_axpy(x, y, out):
    np.multiply(x, 0.5, out=out)
    out += y


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_and_ringbuffer"])
def test_random_programs_equal_sequential_execution(runtime):
    """Any mix of RAW/WAR/WAW over shared buffers (whole arrays and row views) gives the same
    result as running the tasks one by one in submission order."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    p = ParamSpec
    kern = {"axpy": CompiledKernel(0, "axpy", "aiv", [p("x", None, "float32", "in"),
                                                      p("y", None, "float32", "in"),
                                                      p("o", None, "float32", "out")], k_axpy),
            "axpy_c": CompiledKernel(1, "axpy_c", "aic", [p("x", None, "float32", "in"),
                                                          p("y", None, "float32", "in"),
                                                          p("o", None, "float32", "out")], k_axpy)}
    n_buf = 4
    op = st.tuples(st.sampled_from(["axpy", "axpy_c"]), st.integers(0, n_buf - 1),
                   st.integers(0, n_buf - 1), st.integers(0, n_buf - 1),
                   st.sampled_from([None, 0, 1, 2]))

    @settings(max_examples=25, deadline=None)
    @given(st.lists(op, min_size=1, max_size=24))
    def check(ops):
        def make(bufs):
            calls = []
            for k, a, b, o, row in ops:
                if row is None or o in (a, b):
                    calls.append(TaskCall(k, [bufs[a], bufs[b], bufs[o]]))
                else:
                    calls.append(TaskCall(k, [bufs[a][row], bufs[b][row], bufs[o][row]]))
            return calls

        init = [np.arange(12, dtype=np.float32).reshape(3, 4) + 10 * i for i in range(n_buf)]
        ref = [b.copy() for b in init]
        for c in make(ref):
            kern[c.kernel].fn(*c.args)
        names = [f"b{i}" for i in range(n_buf)]
        prog = LoadedProgram("Rand", "", kern, "main", [],
                               lambda t: make([t[nm] for nm in names]))
        tensors = {nm: b.copy() for nm, b in zip(names, init)}
        run = _execute(prog, tensors, runtime=runtime, aic=2, aiv=3, sched=2)
        assert run.error is None
        for nm, r in zip(names, ref):
            np.testing.assert_array_equal(tensors[nm], r)

    check()
