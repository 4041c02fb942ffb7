"""The critical-path and overhead rules one at a time, on task tables written by hand (a
few tasks, every cycle chosen): the happens-before edge filter at its tolerance, what is
counted and left out, cycles, topological levels, the static path's tie rules, resource
predecessors, the observed path's gating rule, what filled each stall, the percentile rule,
head and tail overhead, starvation shares, task switches, fan-in/out and the scheduler loop
(nested phases counted once, finishes vs tasks)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pypto.compile_profiling.analysis.critical_path import (
    TOLERANCE_CYCLES,
    core_predecessors,
    dependency_edges,
    kahn_levels,
    observed_path,
    stall_parts,
    static_path,
)
from pypto.compile_profiling.analysis.overhead import (
    Overhead,
    distribution,
    exclusive_phase_time,
    fan_degrees,
    overhead,
    scheduler_loop,
    task_switches,
)
from pypto.compile_profiling.analysis.tasks import TaskTable, decimal_string_rank

I64 = np.int64


def table(rows, core_types=("aiv",), freq=1_000_000_000, type_of_core=None) -> TaskTable:
    """Rows (core, task id, start, end) in record order: tasks numbered by first row."""
    ids: list[int] = []
    for _, t, _, _ in rows:
        if t not in ids:
            ids.append(t)
    row_task = np.array([ids.index(t) for _, t, _, _ in rows], dtype=I64)
    rs = np.array([r[2] for r in rows], dtype=I64)
    re = np.array([r[3] for r in rows], dtype=I64)
    core = np.array([r[0] for r in rows], dtype=I64)
    kinds = list(dict.fromkeys(core_types))
    of_core = type_of_core or {}
    row_type = np.array([of_core.get(c, 0) for c in core], dtype=np.int8)
    n = len(ids)
    start = np.array([rs[row_task == i].min() for i in range(n)], dtype=I64)
    end = np.array([re[row_task == i].max() for i in range(n)], dtype=I64)
    types = np.array([np.bitwise_or.reduce(1 << row_type[row_task == i].astype(I64))
                      for i in range(n)], dtype=I64)
    first_row = np.array([int(np.flatnonzero(row_task == i)[0]) for i in range(n)], dtype=I64)
    blocks = np.bincount(row_task, minlength=n).astype(I64)
    ids_a = np.array(ids, dtype=I64)
    return TaskTable(ids_a, start, end, first_row, blocks, types, decimal_string_rank(ids_a),
                     row_task, rs, re, core, row_type, kinds, np.full(n, -1, I64), freq)


def deps(edges, tasks=None, no_kernel=()):
    task_ids = sorted({t for e in edges for t in e} if tasks is None else tasks)
    kernels = np.array([[-1, -1, -1] if t in no_kernel else [0, -1, -1] for t in task_ids],
                       dtype=I64).reshape(-1, 3)
    return SimpleNamespace(task_id=np.array(task_ids, dtype=I64), kernel_ids=kernels,
                           pred=np.array([p for p, _ in edges], dtype=I64),
                           succ=np.array([s for _, s in edges], dtype=I64))


# ------------------------------------------------------------------ edges

def test_an_edge_is_kept_when_its_producer_ended_within_the_tolerance_and_started_first():
    rows = [(0, 1, 0, 100), (1, 2, 98, 150), (2, 3, 97, 150), (3, 4, 0, 120), (4, 5, 0, 50)]
    d = dependency_edges(table(rows), deps([(1, 2), (1, 3), (4, 5), (5, 4)]))
    # 1 -> 2: ends 100 <= 98 + 2: kept; 1 -> 3: 100 > 97 + 2: out of order
    # 4 -> 5 and 5 -> 4: both start at 0, neither started first: out of order (and a cycle)
    tt = table(rows)
    assert [(int(tt.ids[p]), int(tt.ids[s])) for p, s in zip(d.pred, d.succ)] == [(1, 2)]
    assert (d.kept, d.edges_out_of_order, d.edges_in_file) == (1, 3, 4)
    assert TOLERANCE_CYCLES == 2
    d = dependency_edges(tt, deps([(1, 3)]), tolerance=3)
    assert d.kept == 1


def test_what_an_edge_list_leaves_out_is_counted():
    rows = [(0, 1, 0, 10), (0, 2, 20, 30), (0, 3, 40, 50), (0, 8, 60, 70)]
    g = deps([(1, 2), (2, 2), (9, 2), (2, 7), (2, 3)], tasks=[1, 2, 3, 7, 9],
             no_kernel=(7,))
    d = dependency_edges(table(rows), g)
    assert (d.deps_tasks, d.missing_tasks, d.no_block_tasks, d.not_in_deps) == (5, 1, 1, 1)
    assert (d.edges_in_file, d.edges_untimed, d.self_loops, d.kept) == (5, 2, 1, 2)
    assert (d.cycle_tasks, d.cycle_example) == (0, [])
    none = dependency_edges(table(rows), None)
    assert (none.kept, none.deps_tasks, none.edges_in_file) == (0, 0, 0)
    empty = dependency_edges(table(rows), deps([], tasks=[]))
    assert (empty.not_in_deps, empty.deps_tasks) == (4, 0)


def test_a_cycle_is_counted_with_the_tasks_behind_it_and_one_named():
    rows = [(0, 1, 0, 10), (0, 2, 20, 30), (0, 3, 40, 50), (0, 4, 60, 70)]
    d = dependency_edges(table(rows), deps([(1, 2), (2, 3), (3, 2), (3, 4)]))
    assert d.cycle_tasks == 3                      # 2 and 3 on it, 4 behind it
    assert d.cycle_example in ([2, 3], [3, 2])
    d = dependency_edges(table(rows), deps([(2, 3), (3, 4), (4, 2)]))
    assert d.cycle_tasks == 3 and sorted(d.cycle_example) == [2, 3, 4]
    assert d.cycle_example[d.cycle_example.index(2) - 1] == 4    # ... 4 -> 2 ...


def test_kahn_levels_of_a_diamond_a_chain_and_a_cycle():
    src, dst = np.array([0, 0, 1, 2, 3, 5, 6], dtype=I64), np.array([1, 2, 3, 3, 4, 6, 5],
                                                                      dtype=I64)
    assert kahn_levels(8, src, dst).tolist() == [0, 1, 1, 2, 3, -1, -1, 0]
    empty = np.zeros(0, dtype=I64)
    assert kahn_levels(3, empty, empty).tolist() == [0, 0, 0]


# ------------------------------------------------------------------ the static path

def test_the_static_path_by_hand():
    """a(0..10) -> b(12..40) -> d(41..50); a -> c(11..20) -> d. Durations 10, 28, 9, 9:
    through b: 10 + 28 + 9 = 47. The path ends at d, not at b (47 > 38)."""
    rows = [(0, 1, 0, 10), (1, 2, 12, 40), (2, 3, 11, 20), (0, 4, 41, 50)]
    tt = table(rows)
    e = dependency_edges(tt, deps([(1, 2), (1, 3), (2, 4), (3, 4)]))
    sp = static_path(tt, e)
    assert (sp.length_cycles, tt.ids[sp.tasks].tolist()) == (47, [1, 2, 4])
    # no edges: the longest single task
    sp = static_path(tt, dependency_edges(tt, None))
    assert (sp.length_cycles, tt.ids[sp.tasks].tolist()) == (28, [2])
    assert static_path(table([(0, 1, 0, 0)])[:0] if False else _empty(), e) is None


def test_a_producer_of_length_zero_is_no_predecessor_on_the_path():
    rows = [(0, 1, 5, 5), (1, 2, 6, 30)]
    tt = table(rows)
    sp = static_path(tt, dependency_edges(tt, deps([(1, 2)])))
    assert (sp.length_cycles, tt.ids[sp.tasks].tolist()) == (24, [2])


def test_equal_paths_end_at_the_first_in_topological_order():
    """Two chains of equal length: level by level, a level ordered by the position of a
    task's last-sorted producer, then its first kept edge."""
    rows = [(0, 1, 0, 10), (1, 2, 0, 10), (0, 3, 11, 20), (1, 4, 11, 20)]
    tt = table(rows)
    sp = static_path(tt, dependency_edges(tt, deps([(2, 4), (1, 3)])))
    # 3 (producer 1 at position 0) sorts before 4 (producer 2 at position 1)
    assert (sp.length_cycles, tt.ids[sp.tasks].tolist()) == (19, [1, 3])
    sp = static_path(tt, dependency_edges(tt, deps([(2, 3), (1, 4)])))
    assert tt.ids[sp.tasks].tolist() == [1, 4]


# ------------------------------------------------------------------ resource predecessors

def test_the_resource_predecessor_freed_the_core_within_the_tolerance():
    rows = [(0, 1, 0, 50), (0, 2, 48, 60), (0, 3, 63, 70), (0, 3, 71, 80), (1, 4, 0, 10)]
    tt = table(rows)
    cp_task, cp_end = core_predecessors(tt)
    # 2: core freed by 1 at 50 <= 48 + 2; 3: freed by 2 at 60, 63 > 60: not within 2 of
    # its start? 60 <= 63 + 2: yes; 3's second block is no first block; 4: first on core 1
    assert [int(tt.ids[t]) if t >= 0 else -1 for t in cp_task] == [-1, 1, 2, -1]
    assert cp_end.tolist() == [-1, 50, 60, -1]
    cp_task, _ = core_predecessors(tt, tolerance=1)
    assert [int(tt.ids[t]) if t >= 0 else -1 for t in cp_task] == [-1, -1, 2, -1]


def test_the_core_holder_is_the_first_block_to_reach_the_latest_end():
    """Core 0 runs 1 (0..50) and 2 (10..50), both ending at 50: 1 reached 50 first, so 1
    freed the core for 3."""
    rows = [(0, 1, 0, 50), (0, 2, 10, 50), (0, 3, 51, 60)]
    tt = table(rows)
    cp_task, cp_end = core_predecessors(tt)
    assert (int(tt.ids[cp_task[2]]), int(cp_end[2])) == (1, 50)
    assert cp_task[1] == -1         # 2's block started while 1 held the core: no gate


def test_no_rows_no_predecessors():
    cp_task, cp_end = core_predecessors(_empty())
    assert cp_task.tolist() == [] and cp_end.tolist() == []


# ------------------------------------------------------------------ the observed path

def test_the_observed_path_takes_the_later_gate_and_ties_to_the_larger_id_string():
    """5 waits on data 1 (ends 30) and on core 0's 2 (ends 40): the core gates it (later);
    2 waits on nothing but its core, freed by 9 at 10; 9 is first: front gap 0."""
    rows = [(0, 9, 0, 10), (0, 2, 11, 40), (1, 1, 0, 30), (0, 5, 41, 60)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(1, 5)])))
    assert tt.ids[obs.tasks].tolist() == [9, 2, 5]
    assert obs.held_by.tolist() == [2, 1, 1] and obs.stall.tolist() == [0, 1, 1]
    assert obs.compute.tolist() == [10, 29, 19] and obs.exact and obs.makespan == 60
    # data and core end together: the larger id string gates ("9" > "10" as strings)
    rows = [(0, 10, 0, 40), (1, 9, 0, 40), (0, 5, 41, 60)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(9, 5)])))
    assert tt.ids[obs.tasks].tolist() == [9, 5] and obs.held_by.tolist() == [2, 0]
    obs = observed_path(tt, dependency_edges(tt, deps([(10, 5)])))
    assert tt.ids[obs.tasks].tolist() == [10, 5]
    # the same task by data and by core: data
    obs = observed_path(tt, dependency_edges(tt, deps([(10, 5), (9, 5)])))
    assert tt.ids[obs.tasks].tolist() == [9, 5] and obs.held_by.tolist() == [2, 0]
    rows = [(0, 10, 0, 40), (0, 5, 41, 60)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(10, 5)])))
    # no dispatch/finish records: the stall is there, what filled it is unknown
    assert obs.held_by.tolist() == [2, 0] and obs.stall_by_part() == {
        "completion": 0, "dispatch": 0, "launch": 0, "front": 0, "unknown": 1}
    assert obs.held_by_counts() == {"data": 1, "core": 0, "start": 1}
    assert observed_path(_empty(), dependency_edges(tt, None)) is None


def test_overlapping_path_tasks_add_only_what_lies_past_the_path_so_far():
    """Within the 2-cycle tolerance a task starts before its producer ends. 1 [0, 51) on
    core 0; 2 [49, 50) on core 1 ends first (data from 1, kept: 51 <= 49 + 2); 3 [52, 80)
    on core 2 waits on 2's data. The path 1, 2, 3: 2 adds nothing (its span lies inside
    1's); the frontier stays at 51, the furthest the path reached, so 3's stall is 1 and
    its compute 28; compute + stall = the makespan, exactly."""
    rows = [(0, 1, 0, 51), (1, 2, 49, 50), (2, 3, 52, 80)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(1, 2), (2, 3)])))
    assert tt.ids[obs.tasks].tolist() == [1, 2, 3]
    assert obs.frontier.tolist() == [0, 51, 51]
    assert obs.stall.tolist() == [0, 0, 1] and obs.compute.tolist() == [51, 0, 28]
    assert obs.exact and obs.makespan == 80
    # overlapping by one cycle: 2 [50, 70) after 1 [0, 51) adds 19, not its span of 20
    rows = [(0, 1, 0, 51), (1, 2, 50, 70)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(1, 2)])))
    assert obs.compute.tolist() == [51, 19] and obs.stall.tolist() == [0, 0] and obs.exact


def test_the_path_ends_at_the_first_task_to_end_last_and_tiles_the_makespan():
    rows = [(0, 1, 5, 20), (1, 2, 7, 50), (2, 3, 10, 50)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, None))
    assert tt.ids[obs.tasks].tolist() == [2]
    assert (obs.t0, obs.t1, obs.stall.tolist(), obs.compute.tolist()) == (5, 50, [2], [43])
    assert obs.frontier.tolist() == [5] and obs.exact


def test_a_stall_is_cut_at_the_predecessors_finish_and_its_own_dispatch():
    """Producer 1 on core 0 ends at 100; the AICPU sees it at 130 (finish) and dispatches 2
    at 150; core 1 starts 2 at 170: completion 30, dispatch 20, launch 20. The first task's
    gap (it starts at 10, task 3 at 0) is cut at its own dispatch (9): launch 1 after it;
    before it, front (its submission unknown) or, submitted at 4, front 4 then dispatch 5."""
    rows = [(2, 3, 0, 5), (0, 1, 10, 100), (1, 2, 170, 200)]
    tt = table(rows)
    finish = np.array([8, 130, 210], dtype=I64)
    dispatch = np.array([0, 9, 150], dtype=I64)
    edges = dependency_edges(tt, deps([(1, 2)]))
    obs = observed_path(tt, edges, dispatch=dispatch, finish=finish)
    assert tt.ids[obs.tasks].tolist() == [1, 2]
    assert obs.parts.tolist() == [[0, 0, 1, 9, 0], [30, 20, 20, 0, 0]]
    assert obs.stall_by_part() == {"completion": 30, "dispatch": 20, "launch": 21,
                                   "front": 9, "unknown": 0}
    assert obs.exact
    submit = np.array([0, 4, 4], dtype=I64)
    obs = observed_path(tt, edges, dispatch=dispatch, finish=finish, submit=submit)
    assert obs.parts.tolist() == [[0, 5, 1, 4, 0], [30, 20, 20, 0, 0]] and obs.exact
    # the same 100 cycles later, task 1 dispatched (60) before the run's first start (100):
    # the whole front gap is launch
    late = table([(c, t, st + 100, en + 100) for c, t, st, en in rows])
    obs = observed_path(late, dependency_edges(late, deps([(1, 2)])),
                        dispatch=np.array([100, 60, 250], dtype=I64), finish=finish + 100,
                        submit=np.array([40, 40, 40], dtype=I64))
    assert obs.parts[0].tolist() == [0, 0, 10, 0, 0]


def test_the_device_part_of_the_wall_time_starts_at_the_first_path_tasks_start():
    """End to end explains everything before the first path task's start from the host
    side (its launch is the host-visible `launch`), so without the front gap its whole
    stall is left out; with it, the pieces tile the makespan from the first start."""
    from pypto.compile_profiling.analysis.end_to_end import COMPUTE, device_segments

    rows = [(2, 3, 0, 5), (0, 1, 10, 100), (1, 2, 170, 200)]
    tt = table(rows)
    obs = observed_path(tt, dependency_edges(tt, deps([(1, 2)])),
                        dispatch=np.array([0, 9, 150], dtype=I64),
                        finish=np.array([8, 130, 210], dtype=I64),
                        submit=np.array([0, 4, 4], dtype=I64))
    ident = lambda x: np.asarray(x, dtype=I64)          # cycles as ns
    b, e, where, what = device_segments(obs, ident, front_gap=False)
    assert (b[0], e[-1]) == (10, 200) and (b[1:] == e[:-1]).all()
    assert where[0] == 0 and what[0] == COMPUTE
    b, e, where, what = device_segments(obs, ident)
    assert (b[0], e[-1]) == (0, 200) and int((e - b).sum()) == obs.makespan


@pytest.mark.parametrize("finish, dispatch, parts", [
    (130, 150, [30, 20, 20, 0, 0]),      # in order: completion, dispatch, launch
    (160, 150, [50, 0, 20, 0, 0]),       # dispatched before the finish was seen: launch after
    (90, 80, [0, 0, 70, 0, 0]),          # both before the stall began: all launch
    (190, 185, [70, 0, 0, 0, 0]),        # both after the start: all completion
    (-1, 150, [0, 0, 20, 0, 50]),        # no finish: before the dispatch is unknown
    (130, -1, [30, 0, 0, 0, 40]),        # no dispatch: after the finish is unknown
    (-1, -1, [0, 0, 0, 0, 70]),          # neither: all unknown
])
def test_the_cuts_tile_a_stall_exactly(finish, dispatch, parts):
    """One stall from e = 100 to s = 170 (row 0 is a front gap of 5)."""
    e = np.array([0, 100], dtype=I64)
    s = np.array([5, 170], dtype=I64)
    got = stall_parts(e, s, np.array([-1, finish], dtype=I64),
                      np.array([-1, dispatch], dtype=I64))
    assert got[0].tolist() == [0, 0, 0, 5, 0]
    assert got[1].tolist() == parts and got[1].sum() == 70


def _empty() -> TaskTable:
    z = np.zeros(0, dtype=I64)
    return TaskTable(z, z, z, z, z, z, z, z, z, z, z, z.astype(np.int8), ["aiv"], z, 10**9)


# ------------------------------------------------------------------ overhead

def test_percentiles_follow_simplers_index_rule():
    d = distribution(np.arange(10, 0, -1, dtype=I64), 500_000_000)    # 2 ns a cycle
    # sorted 1..10 (x2 ns); p: index min(int(10 * p / 100), 9)
    assert d.percentiles == {"p10": 4.0, "p25": 6.0, "p50": 12.0, "p75": 16.0, "p90": 20.0,
                             "p95": 20.0, "p99": 20.0}
    assert (d.count, d.max, d.mean, d.total) == (10, 20.0, 11.0, 110.0)
    assert distribution(np.zeros(0, dtype=I64), 1) is None
    one = distribution(np.array([7], dtype=I64), 1_000_000_000)
    assert set(one.percentiles.values()) == {7.0}


def test_head_tail_and_starvation_by_hand():
    """Two AIV cores. 1 on core 0 (0..10, dispatched at -, i.e. 0), 2 on core 1 (5..30),
    3 on core 0 (20..40): 3 needs 1 (ready at 10) and is dispatched at 18. Core 0 idles
    10..20 with 3 ready 10..18: AIV starved 8 of 40 cycles."""
    rows = [(0, 1, 0, 10), (1, 2, 5, 30), (0, 3, 20, 40)]
    tt = table(rows)
    dispatch = np.array([0, 2, 18], dtype=I64)
    finish = np.array([12, 31, 45], dtype=I64)
    has = np.ones(3, dtype=bool)
    ov = overhead(tt, dispatch, finish, has, deps([(1, 3)]))
    # tail: finish - end: 2, 1, 5
    assert (ov.tail.total, ov.tail.max) == (8.0, 5.0)
    (aiv,) = ov.engines
    assert (aiv.engine, aiv.cores, aiv.starved_share) == ("AIV", 2, 8 / 40)
    assert ov.all_starved_share == ov.some_starved_share == 8 / 40
    ts = ov.timeline["ts"].tolist()
    assert ts == [0, 5, 10, 18, 20, 30, 40]
    assert ov.timeline["AIV starved"].tolist() == [0, 0, 1, 0, 0, 0]
    assert ov.timeline["AIV idle cores"].tolist() == [1, 0, 1, 1, 0, 1]
    assert ov.timeline["AIV ready, undispatched"].tolist() == [0, 0, 1, 0, 0, 0]
    assert ov.notes == []


def test_a_task_without_producers_is_ready_from_its_submission():
    """A queue of ready work on one AIV core: 1 (0..10) and 2 (20..30) have no producers
    and were both submitted at 0; 2 is dispatched at 15. The core idles 10..20 while 2 is
    ready and not yet dispatched 10..15: starved 5 of 30 cycles. Without submissions a
    task with no producers is ready only at its own dispatch: no starvation is seen."""
    tt = table([(0, 1, 0, 10), (0, 2, 20, 30)])
    dispatch = np.array([0, 15], dtype=I64)
    finish = np.array([11, 31], dtype=I64)
    has = np.ones(2, dtype=bool)
    ov = overhead(tt, dispatch, finish, has, deps([], tasks=[1, 2]),
                  submit=np.array([0, 0], dtype=I64))
    assert ov.engines[0].starved_share == 5 / 30
    ov = overhead(tt, dispatch, finish, has, deps([], tasks=[1, 2]))
    assert ov.engines[0].starved_share == 0


def test_the_first_block_on_a_core_waits_from_its_dispatch():
    """Head overhead: 1: 0 - 0 = 0 (first on core 0); 2: 5 - 2 = 3 (first on core 1: only
    its dispatch bounds it, there is no earlier block); 3: min(20 - 18, 20 - 10) = 2."""
    rows = [(0, 1, 0, 10), (1, 2, 5, 30), (0, 3, 20, 40)]
    dispatch = np.array([0, 2, 18], dtype=I64)
    ov = overhead(table(rows), dispatch, dispatch + 50, np.ones(3, dtype=bool), None)
    assert (ov.head.total, ov.head.max, ov.head.percentiles["p50"]) == (5.0, 3.0, 2.0)
    # a block picked up before its core was free counts from that free time, >= 0
    rows = [(0, 1, 0, 10), (0, 2, 12, 30)]
    ov = overhead(table(rows), np.array([0, 1], I64), np.array([11, 31], I64),
                  np.ones(2, dtype=bool), None)
    assert max(ov.head.percentiles.values()) == 2.0 and ov.head.total == 2.0


def test_two_engines_some_and_all_starved():
    """AIC core 0, AIV core 1. AIC task 2 ready at 10 (after 1), dispatched 20; AIV task 4
    ready at 15 (after 3), dispatched 25; both cores idle from 10 and 15: AIC starved
    10..20, AIV 15..25; all 15..20, some 10..25 (an engine with no ready work is left out)."""
    rows = [(0, 1, 0, 10), (1, 3, 0, 15), (0, 2, 21, 40), (1, 4, 26, 40)]
    tt = table(rows, core_types=("aic", "aiv"), type_of_core={0: 0, 1: 1})
    dispatch = np.array([0, 0, 20, 25], dtype=I64)
    ov = overhead(tt, dispatch, dispatch + 100, np.ones(4, dtype=bool), deps([(1, 2), (3, 4)]))
    assert [(e.engine, e.starved_share) for e in ov.engines] == [("AIC", 10 / 40),
                                                                 ("AIV", 10 / 40)]
    assert ov.all_starved_share == 5 / 40 and ov.some_starved_share == 15 / 40


def test_without_dispatch_records_or_deps_the_overhead_says_why():
    tt = table([(0, 1, 0, 10), (0, 2, 12, 20)])
    none = np.zeros(2, dtype=bool)
    ov = overhead(tt, np.zeros(2, I64), np.zeros(2, I64), none, None)
    assert (ov.head, ov.tail, ov.some_starved_share, ov.engines) == (None, None, None, [])
    assert ov.notes == [("no AICPU dispatch/finish records (swimlane level 1): no starvation "
                        "shares, no head/tail overhead, no task switches")]
    part = np.array([True, False])
    ov = overhead(tt, np.array([0, 0], I64), np.array([11, 0], I64), part, None)
    assert ov.notes == [("1 AICore blocks have no AICPU record: left out of the head/tail "
                        "overhead and the task switches"), ("no deps.json: when a task became "
                        "ready is unknown, so no starvation shares (run with enable_dep_gen)")]
    assert (ov.head.count, ov.tail.total) == (1, 1.0)


def _stream(thread, kinds, rows, **args):
    """A scheduler phase stream: rows (kind, start, end)."""
    kind = np.array([kinds.index(k) for k, _, _ in rows], dtype=np.int32)
    cols = [SimpleNamespace(key=k, values=np.array(v, dtype=I64), present=None)
            for k, v in args.items()]
    return SimpleNamespace(thread=thread, kinds=kinds, kind=kind,
                           start=np.array([r[1] for r in rows], dtype=I64),
                           end=np.array([r[2] for r in rows], dtype=I64),
                           arg=lambda key: next((c for c in cols if c.key == key), None))


def test_the_scheduler_loop_per_thread():
    kinds = ["dispatch", "complete", "idle"]
    s = _stream(0, kinds, [("complete", 30, 40), ("dispatch", 0, 10), ("dispatch", 12, 20)],
                loop_iter=[3, 1, 2], tasks_processed=[2, 5, 7], pop_hit=[9, 1, 2],
                pop_miss=[9, 3, 4])
    (t,) = scheduler_loop([s, _stream(1, kinds, [])], 500_000_000, {0: 1})   # 2 ns a cycle
    assert (t.thread, t.loops, t.finishes, t.tasks, t.pop_hit, t.pop_miss) == (0, 3, 2, 1, 3, 7)
    assert t.phase_ns == {"dispatch": 36.0, "complete": 20.0, "idle": 0.0}
    assert t.idle_ns == (2 + 10) * 2.0 and t.total_ns == 80.0 and t.nested == {}
    bare = _stream(2, ["dispatch"], [("dispatch", 0, 5)])
    (b,) = scheduler_loop([bare], 1_000_000_000)
    assert (b.loops, b.finishes, b.tasks, b.pop_hit, b.pop_miss) == (0, 0, None, None, None)
    ov = Overhead([], None, None, None, None, [t, b])
    assert ov.avg_loop_ns == (80.0 + 5.0) / 3
    assert Overhead([], None, None, None, None, [b]).avg_loop_ns is None


def test_a_nested_phase_is_counted_once():
    """complete 0..100 holds resolve 20..50 and resolve 60..70; dispatch 100..120; a gap;
    release 130..140. Busy 130 cycles, each instant once: complete 60, resolve 40."""
    kinds = ["complete", "resolve", "dispatch", "release"]
    s = _stream(0, kinds, [("complete", 0, 100), ("resolve", 20, 50), ("resolve", 60, 70),
                           ("dispatch", 100, 120), ("release", 130, 140)])
    (t,) = scheduler_loop([s], 1_000_000_000)
    assert t.phase_ns == {"complete": 60.0, "resolve": 40.0, "dispatch": 20.0,
                          "release": 10.0}
    assert t.nested == {"resolve": "complete"}
    assert (t.busy_ns, t.idle_ns, t.total_ns) == (130.0, 10.0, 140.0)


@pytest.mark.parametrize("rows, excl", [
    # three levels: a 0..100 > b 10..90 > c 20..30: a 20, b 70, c 10
    ([(0, 0, 100), (1, 10, 90), (2, 20, 30)], [20, 70, 10]),
    # partial overlap: a 0..50, b 40..80: b takes over at 40
    ([(0, 0, 50), (1, 40, 80)], [40, 40, 0]),
    # a nested in a nested one, then a sibling in the outer one
    ([(0, 0, 100), (1, 10, 50), (2, 20, 30), (1, 60, 70)], [50, 40, 10]),
])
def test_deeper_nesting_and_overlaps_are_swept_exactly(rows, excl):
    st = np.array([r[1] for r in rows], dtype=I64)
    en = np.array([r[2] for r in rows], dtype=I64)
    kind = np.array([r[0] for r in rows], dtype=I64)
    got, idle, _ = exclusive_phase_time(st, en, kind, 3)
    assert got.tolist() == excl and idle == 0
    union = max(en) - min(st)
    assert int(got.sum()) == union


def test_task_switches_per_core_and_the_makespan_bound():
    """Core 0 (AIC): 1 (0..10), 2 dispatched at 5, starts 14: a switch of 4; 3 dispatched at
    20 after 2 ended at 18, starts 22: no switch. Core 1 (AIV): 4 (0..30), 5 dispatched at
    10, starts 33: a switch of 3."""
    rows = [(0, 1, 0, 10), (0, 2, 14, 18), (0, 3, 22, 40), (1, 4, 0, 30), (1, 5, 33, 40)]
    tt = table(rows, core_types=("aic", "aiv"), type_of_core={0: 0, 1: 1})
    dispatch = np.array([0, 5, 20, 0, 10], dtype=I64)
    sw, bound = task_switches(tt, dispatch, np.ones(5, dtype=bool))
    assert [(w.engine, w.cores, w.events, w.per_core_max) for w in sw] == [
        ("AIC", 1, 1, 4.0), ("AIV", 1, 1, 3.0)]
    assert bound == (3.0, 7.0)


def test_fan_out_and_fan_in_count_unique_neighbours_of_tasks_that_ran():
    rows = [(0, 1, 0, 10), (0, 2, 11, 20), (0, 3, 21, 30)]
    fo, fi = fan_degrees(table(rows), deps([(1, 2), (1, 3), (2, 3), (3, 3), (9, 3)],
                                           tasks=[1, 2, 3, 9]))
    # out: 1 -> 2, 3; 2 -> 3; 3 -> (self loop left out); 9 never ran
    assert (fo.count, fo.total, fo.max) == (3, 3.0, 2.0)
    # in: 2 <- 1; 3 <- 1, 2, 9 (9 is a producer in deps.json even though it never ran)
    assert (fi.count, fi.total, fi.max) == (3, 4.0, 3.0)
    assert fan_degrees(table(rows), None) == (None, None)
