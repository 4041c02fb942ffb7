"""The stage tree's rules on recordings written by hand (a fake clock: every timestamp is
chosen, equal ones too), on real asyncio and thread-pool profiles, and in a fresh
interpreter: the equal-timestamp boundaries, sibling order across threads, unbound
workers walking up to the open stage, the close and re-home rules across threads,
processes and lanes, and when the `plain_profile` fast path may be taken."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pypto
from pypto.compile_profiling import CompileProfiler
from pypto.compile_profiling.chrome_trace import LANE_TID_BASE, profile_trace
from pypto.compile_profiling.stage_log import GLOBAL_REF, NO_PARENT, Recording, ThreadLog
from pypto.compile_profiling.stage_record import StageRecord
from pypto.compile_profiling.stage_tree import (
    build_stage_tree,
    infer_category,
    plain_profile,
)

PID, MAIN, WORKER = 100, 1, 2


def log(n: int, stages, *, pid=PID, tid=MAIN, name="MainThread", lanes=None, errors=None,
        tangled=False, inserted=()) -> ThreadLog:
    """Thread log number `n` (its refs are n * GLOBAL_REF + 6 * k) of (name, start, parent,
    end) stages; a parent is a position k in this log, a global ref, or NO_PARENT."""
    tl = ThreadLog()
    for stage_name, start, parent, end in stages:
        tl += (stage_name, None, None, start, 6 * parent if 0 <= parent < GLOBAL_REF else
               parent, end)
    tl.pid, tl.tid, tl.thread_name, tl.base = pid, tid, name, n * GLOBAL_REF
    tl.lanes, tl.errors, tl.inserted, tl.tangled = {6 * k: v for k, v in (lanes or {}).items()}, \
        {6 * k: v for k, v in (errors or {}).items()}, list(inserted), tangled
    tl.order, tl.prof, tl.top, tl.pending = n, None, None, None
    return tl


def ref(n: int, k: int) -> int:
    """The global ref of stage k of log n."""
    return n * GLOBAL_REF + 6 * k


def tree(*logs, end_ns=1_000, entry_tid=MAIN, pid=PID):
    return build_stage_tree(Recording(list(logs), pid, entry_tid, end_ns))


def shape(stages) -> list:
    """[(name, start, end, [children])] of a tree."""
    return [(s.name, s.start_ns, s.end_ns, shape(s.children)) for s in stages]


# ------------------------------------------------------------------ equal timestamps

def test_a_child_ending_in_the_same_ns_as_its_parent_stays_inside():
    roots = tree(log(1, [("p", 1000, NO_PARENT, 1100), ("c", 1050, 0, 1100),
                         ("z", 1000, 0, 1000)]))
    assert shape(roots) == [("p", 1000, 1100, [("z", 1000, 1000, []), ("c", 1050, 1100, [])])]
    assert not roots[0].out_of_order and not roots[0].children[1].interrupted


def test_a_child_starting_when_its_parent_ended_is_not_inside_it():
    """A coarse clock that did not advance: the child opened in the parent's last tick. It
    is not inside the parent (it would stick out of it on a timeline): it moves up."""
    rec = Recording([log(1, [("g", 0, NO_PARENT, 300), ("p", 0, 0, 100), ("c", 100, 1, 100)])],
                    PID, MAIN, 1_000)
    assert plain_profile(rec) is None               # not the recorded tree: settle it
    assert shape(build_stage_tree(rec)) == [
        ("g", 0, 300, [("p", 0, 100, []), ("c", 100, 100, [])])]
    assert not build_stage_tree(rec)[0].children[0].out_of_order
    # one tick earlier it is inside, and the recording is the tree
    ok = Recording([log(1, [("g", 0, NO_PARENT, 300), ("p", 0, 0, 100), ("c", 99, 1, 100)])],
                   PID, MAIN, 1_000)
    assert plain_profile(ok) is not None
    assert shape(build_stage_tree(ok)) == [("g", 0, 300, [("p", 0, 100, [("c", 99, 100, [])])])]


def test_a_child_ending_one_ns_after_its_parent_moves_up_and_flags_the_parent():
    roots = tree(log(1, [("g", 0, NO_PARENT, 300), ("p", 10, 0, 100), ("c", 50, 1, 101)]))
    assert shape(roots) == [("g", 0, 300, [("p", 10, 100, []), ("c", 50, 101, [])])]
    assert roots[0].children[0].out_of_order and not roots[0].out_of_order
    # outliving every ancestor: top-level, every one it outlived flagged
    roots = tree(log(1, [("g", 0, NO_PARENT, 300), ("p", 10, 0, 100), ("c", 50, 1, 301)]))
    assert [(s.name, s.out_of_order) for s in roots] == [("g", True), ("c", False)]
    assert roots[0].children[0].out_of_order


def test_equal_starts_keep_their_recorded_order():
    roots = tree(log(1, [("a", 5, NO_PARENT, 5), ("b", 5, NO_PARENT, 5), ("c", 5, NO_PARENT, 9)]))
    assert [s.name for s in roots] == ["a", "b", "c"]


# ------------------------------------------------------------------ siblings and workers

def test_two_siblings_on_two_threads_are_ordered_by_start():
    """The worker's stage (bound under `p`) started before the main thread's child: two
    siblings, the worker's first, whatever the log order."""
    main = log(1, [("p", 0, NO_PARENT, 100), ("late", 60, 0, 70)])
    worker = log(2, [("early", 20, ref(1, 0), 90)], tid=WORKER, name="pool_0")
    (p,) = tree(main, worker)
    assert [(c.name, c.tid, c.thread_name) for c in p.children] == [
        ("early", WORKER, "pool_0"), ("late", MAIN, "MainThread")]
    # two top-level stages: the worker's (adopted by nothing: no main stage open then) first
    assert [s.name for s in tree(log(1, [("b", 30, NO_PARENT, 40)]),
                                 log(2, [("a", 10, NO_PARENT, 20)], tid=WORKER))] == ["a", "b"]


def test_an_unbound_worker_stage_walks_up_to_the_stage_open_when_it_started():
    """The innermost stage of the entering thread that started at or before the worker's
    stage may have ended: its parents are tried, up to the one still open then."""
    main = log(1, [("a", 0, NO_PARENT, 100), ("b", 10, 0, 20), ("c", 30, 0, 40),
                   ("d", 200, NO_PARENT, 0)])
    workers = log(2, [("w_in_a", 25, NO_PARENT, 28), ("w_at_b_end", 20, NO_PARENT, 22),
                      ("w_in_c", 35, NO_PARENT, 36), ("w_between", 150, NO_PARENT, 160),
                      ("w_before", -5, NO_PARENT, -1), ("w_in_open_d", 300, NO_PARENT, 310)],
                  tid=WORKER, name="pool_0")
    roots = tree(main, workers, end_ns=None)
    by = {s.name: s for s in _walk(roots)}
    parent = {c.name: s.name for s in _walk(roots) for c in s.children}
    assert parent["w_in_a"] == "a"            # b (10..20) ended before 25: up to a
    assert parent["w_at_b_end"] == "b"        # b ends in the ns it starts: still open then
    assert parent["w_in_c"] == "c"
    assert parent["w_in_open_d"] == "d"       # d is still open
    assert "w_between" not in parent and "w_before" not in parent   # top-level
    assert [s.name for s in roots] == ["w_before", "a", "w_between", "d"]
    assert (by["d"].end_ns, by["d"].interrupted) == (0, False)     # still running


def test_unbound_stages_of_another_process_or_of_the_entering_thread_elsewhere_stay_top():
    main = log(1, [("a", 0, NO_PARENT, 100)])
    other_pid = log(2, [("forked", 10, NO_PARENT, 20)], pid=PID + 1, tid=WORKER)
    same_tid_other_pid = log(3, [("twin", 30, NO_PARENT, 40)], pid=PID + 1, tid=MAIN)
    roots = tree(main, other_pid, same_tid_other_pid)
    assert shape(roots) == [("a", 0, 100, []), ("forked", 10, 20, []), ("twin", 30, 40, [])]


def test_bound_workers_inside_asyncio_tasks_nest_under_their_task_stage():
    """Two tasks interleave on one thread, each hands work to a pool bound to its own
    stage: each worker stage nests under its own task's stage, on the worker's thread and
    its own lane (none), and each task's stage is on its task's lane."""
    prof = CompileProfiler()
    pool = ThreadPoolExecutor(2)
    both_open = threading.Barrier(2, timeout=10)

    def work(i):
        both_open.wait()                  # both tasks' stages are open: they interleave
        with prof.stage(f"work{i}"):
            pass

    async def task(i):
        with prof.stage(f"task{i}"):
            await asyncio.get_running_loop().run_in_executor(pool, prof.bind(work), i)

    async def main():
        await asyncio.gather(task(0), task(1))

    with prof, pool:
        asyncio.run(main())
    roots = prof.stages
    assert sorted(s.name for s in roots) == ["task0", "task1"]
    main_tid = threading.get_native_id()
    for s in roots:
        i = s.name[-1]
        (w,) = s.children
        assert w.name == f"work{i}" and w.tid != main_tid and w.lane == "" and w.lane_name == ""
        assert s.tid == main_tid and s.lane.startswith("task:")
        assert s.lane_name.startswith("MainThread · ") and s.lane_name.endswith(".task)")
    assert roots[0].lane != roots[1].lane
    assert plain_profile(prof.recording()) is None    # lanes: never the fast path
    trace = profile_trace(prof)
    lane_tids = {e["tid"] for e in trace["traceEvents"] if e.get("name", "").startswith("task")}
    assert len(lane_tids) == 2 and all(t >= LANE_TID_BASE for t in lane_tids)


def test_the_trace_of_a_lane_profile_is_drawn_from_the_tree_not_the_fast_path():
    """The same recorded stages, once with a lane and once without: only the one without
    may take `plain_profile`, and only the lane's stage is drawn on a lane tid."""
    lanes = {1: ("task:1:ab", "Task-1 (job)")}
    with_lane = Recording([log(1, [("p", 0, NO_PARENT, 100), ("t", 10, 0, 20)], lanes=lanes)],
                          PID, MAIN, 1_000)
    plain = Recording([log(1, [("p", 0, NO_PARENT, 100), ("t", 10, 0, 20)])], PID, MAIN, 1_000)
    assert plain_profile(plain) is not None and plain_profile(with_lane) is None
    (p,) = build_stage_tree(with_lane)
    (t,) = p.children
    assert (p.lane, t.lane, t.lane_name) == ("", "task:1:ab", "MainThread · Task-1 (job)")


# ------------------------------------------------------------------ closing and re-homing

def test_an_abandoned_stage_closes_at_its_parent_on_its_thread_else_at_the_profile_end():
    main = log(1, [("p", 0, NO_PARENT, 100), ("open_child", 10, 0, 0)])
    worker = log(2, [("open_worker", 20, ref(1, 0), 0)], tid=WORKER)
    other = log(3, [("open_forked", 30, ref(1, 0), 0)], pid=PID + 1, tid=MAIN)
    (p,) = tree(main, worker, other, end_ns=500)
    got = {c.name: (c.end_ns, c.interrupted) for c in p.children}
    assert got == {"open_child": (100, True), "open_worker": (500, True),
                   "open_forked": (500, True)}
    assert not p.out_of_order and not p.interrupted
    # while the profile runs, a stage with nothing to close it at stays open
    (p,) = tree(main, worker, end_ns=None)
    got = {c.name: (c.end_ns, c.interrupted) for c in p.children}
    assert got == {"open_child": (100, True), "open_worker": (0, False)}


def test_an_abandoned_stage_of_a_task_stage_closes_at_its_parent_on_the_same_lane():
    """The parent ran on a task's lane, the child (recorded without a lane of its own)
    inherits it: closed at the parent's end like any child of its thread."""
    lanes = {0: ("task:1:cc", "Task-4 (job)")}
    (p,) = tree(log(1, [("p", 0, NO_PARENT, 100), ("c", 10, 0, 0)], lanes=lanes), end_ns=700)
    (c,) = p.children
    assert (c.end_ns, c.interrupted, c.lane) == (100, True, "task:1:cc")


def test_an_unbound_worker_walks_up_through_a_stage_bound_on_another_thread():
    """The entering thread's stage m ran bound under worker stage w; a pool stage that
    starts after m ended walks up from m to w, on the other thread, still open then."""
    main = log(1, [("m", 10, ref(2, 0), 20)])
    worker = log(2, [("w", 0, -2, 100)], tid=WORKER)
    pool = log(3, [("o", 30, NO_PARENT, 40)], tid=WORKER + 1)
    (w,) = tree(main, worker, pool)
    assert [c.name for c in w.children] == ["m", "o"]


def test_an_abandoned_top_level_stage_closes_at_the_profile_end_never_before_its_start():
    roots = tree(log(1, [("a", 10, NO_PARENT, 0), ("late", 900, NO_PARENT, 0)]), end_ns=500)
    assert [(s.end_ns, s.end, s.interrupted) for s in roots] == [
        (500, 500 / 1e9, True), (900, 900 / 1e9, True)]


def test_a_task_outliving_its_spawner_is_closed_at_the_profile_end_not_the_spawner():
    lanes = {1: ("task:1:aa", "Task-2 (child)")}
    p, c = tree(log(1, [("spawner", 0, NO_PARENT, 100), ("child", 10, 0, 0)], lanes=lanes),
                end_ns=700)
    assert (c.name, c.end_ns, c.interrupted, c.lane) == ("child", 700, True, "task:1:aa")
    # ...so it ends after its spawner: it moves up, and on another lane flags nobody
    assert p.children == [] and not p.out_of_order


def test_a_stage_outliving_its_parent_on_another_lane_moves_up_unflagged():
    lanes = {2: ("task:1:bb", "Task-3 (gen)")}
    roots = tree(log(1, [("g", 0, NO_PARENT, 500), ("p", 10, 0, 100), ("c", 20, 1, 200)],
                     lanes=lanes))
    (g,) = roots
    assert [c.name for c in g.children] == ["p", "c"] and not g.children[0].out_of_order
    assert g.children[1].lane == "task:1:bb"


def test_an_interrupted_stage_moves_up_without_flagging_its_parent():
    """Never closed, under a parent that closed: closed at the parent's end and flagged
    interrupted, it stays inside; a never-closed top-level stage closes at the profile's
    end. An interrupt flags nobody out of order."""
    roots = tree(log(1, [("g", 0, NO_PARENT, 0), ("p", 10, 0, 100), ("c", 20, 1, 0)]),
                 end_ns=400)
    (g,) = roots
    assert (g.end_ns, g.interrupted) == (400, True)
    # c's parent p closed at 100: c is closed there (its own thread), stays inside p
    (p,) = g.children
    assert [(c.name, c.end_ns, c.interrupted) for c in p.children] == [("c", 100, True)]
    assert not p.out_of_order


def test_a_parent_on_another_thread_or_process_holds_its_child_whatever_the_times():
    main = log(1, [("p", 0, NO_PARENT, 100)])
    worker = log(2, [("w", 50, ref(1, 0), 150), ("after", 120, ref(1, 0), 130)], tid=WORKER)
    forked = log(3, [("f", 50, ref(1, 0), 160)], pid=PID + 1, tid=MAIN)
    (p,) = tree(main, worker, forked)
    assert [c.name for c in p.children] == ["w", "f", "after"] and not p.out_of_order


def test_a_parent_ref_outside_the_snapshot_makes_a_top_level_stage():
    gone = ref(9, 0)                                  # log 9 is not in this recording
    beyond = ref(1, 5)                                # log 1 has only one stage
    roots = tree(log(1, [("p", 0, NO_PARENT, 100)]),
                 log(2, [("x", 10, gone, 20), ("y", 30, beyond, 40)], tid=WORKER))
    assert [s.name for s in roots] == ["p", "x", "y"]


def test_errors_lanes_and_inserted_records_of_a_log_reach_the_tree():
    ins = [_inserted(StageRecord("remote", 0.00000002, 0.00000003), 0)]
    roots = tree(log(1, [("p", 0, NO_PARENT, 100), ("q", 40, 0, 60)], errors={1: "ValueError"},
                     inserted=ins))
    (p,) = roots
    assert [(c.name, c.error, c.cat) for c in p.children] == [
        ("remote", None, "user"), ("q", "ValueError", "user")]
    assert (p.children[0].start_ns, p.children[0].end_ns) == (20, 30)


def test_errors_and_lanes_of_stages_past_the_snapshot_are_left_out():
    """Another thread may add a stage (and its error or lane) after the log was copied: an
    entry for a stage the copy does not hold lands on no stage."""
    lanes = {1: ("task:1:dd", "Task-5 (a)"), 3: ("task:1:ee", "Task-6 (b)")}
    first = log(1, [("p", 0, NO_PARENT, 100), ("q", 10, 0, 20), ("r", 30, 0, 40)],
                errors={3: "Late", 4: "Later"}, lanes=lanes)
    second = log(2, [("x", 200, NO_PARENT, 300)], tid=WORKER)
    roots = tree(first, second)
    got = [(s.name, s.error, s.lane) for s in _walk(roots)]
    assert sorted(got) == [("p", None, ""), ("q", None, "task:1:dd"), ("r", None, ""),
                           ("x", None, "")]
    (p, _x) = roots
    assert [c.lane_name for c in p.children] == ["MainThread · Task-5 (a)", ""]


def test_the_records_map_holds_every_stage_by_its_global_ref():
    found = {}
    a = log(1, [("p", 0, NO_PARENT, 100), ("q", 10, 0, 20), ("r", 30, 0, 40)])
    b = log(3, [("w0", 5, ref(1, 0), 6), ("w1", 7, ref(1, 0), 8)], tid=WORKER)
    build_stage_tree(Recording([a, b], PID, MAIN, 1_000), records=found)
    assert {k: v.name for k, v in found.items()} == {
        ref(1, 0): "p", ref(1, 1): "q", ref(1, 2): "r", ref(3, 0): "w0", ref(3, 1): "w1"}


def test_a_reused_thread_id_sorts_the_entering_threads_stages_by_time():
    """Two logs of one native thread id (a thread ended, a new one got its id): the
    stages an unbound worker may nest under are taken in time order, not log order."""
    later = log(1, [("a", 100, NO_PARENT, 200)])
    earlier = log(2, [("b", 0, NO_PARENT, 50)])
    pool = log(3, [("o", 20, NO_PARENT, 30)], tid=WORKER)
    roots = tree(later, earlier, pool)
    assert [(s.name, [c.name for c in s.children]) for s in roots] == [
        ("b", ["o"]), ("a", [])]


def test_categories_come_from_the_name_and_the_parent():
    passes = StageRecord("passes", 0, 1)
    assert [infer_category(n, None) for n in (
        "compile", "parse", "passes", "codegen", "orchestration_codegen", "golden_write",
        "device_execution", "kernel_codegen:k", "my_codegen", "other")] == [
        "compile", "parse", "pass", "codegen", "codegen", "runtime", "device", "codegen",
        "codegen", "user"]
    assert infer_category("ConstantFolding", passes) == "pass"
    assert infer_category("ConstantFolding", StageRecord("compile", 0, 1)) == "user"


# ------------------------------------------------------------------ the fast path

def test_plain_profile_is_the_tree_in_pre_order_when_nothing_needs_settling():
    main = log(1, [("b", 50, NO_PARENT, 90), ("b1", 60, 0, 70), ("a", 0, NO_PARENT, 40),
                   ("a1", 10, 2, 20), ("a2", 20, 2, 40)], errors={3: "KeyError"})
    bound = log(2, [("w", 15, ref(1, 0), 30)], tid=WORKER)   # under log 1's first stage
    rec = Recording([main], PID, MAIN, 100)
    pp = plain_profile(rec)
    assert pp.names == ["a", "a1", "a2", "b", "b1"]
    assert (pp.starts, pp.ends, pp.parents) == ([0, 10, 20, 50, 60], [40, 20, 40, 90, 70],
                                                 [-1, 0, 0, -1, 3])
    assert pp.roots == [0, 3] and pp.errors == {1: "KeyError"}
    assert (pp.pids, pp.tids, pp.thread_names) == ([PID] * 5, [MAIN] * 5, ["MainThread"] * 5)
    assert [s.duration for s in pp.root_records()] == [40e-9, 40e-9]
    # what would need the tree: bound work, an open stage, a tangle, an insert, an orphan
    for logs in ([main, bound],
                 [log(1, [("o", 0, NO_PARENT, 0)])],
                 [log(1, [("t", 0, NO_PARENT, 5)], tangled=True)],
                 [log(1, [("i", 0, NO_PARENT, 5)], inserted=[_inserted(StageRecord("r", 0, 0),
                                                                       NO_PARENT)])],
                 [main, log(2, [("orphan", 5, NO_PARENT, 6)], tid=WORKER)]):
        assert plain_profile(Recording(logs, PID, MAIN, 100)) is None
    # an orphan of the entering thread in another process is adopted by nothing either
    assert plain_profile(Recording([log(1, [("x", 0, NO_PARENT, 1)], pid=PID + 1)], PID, MAIN,
                                   100)) is None
    assert plain_profile(Recording([log(1, [])], PID, MAIN, 100)).names == []
    # an empty log before others is passed over, not the end
    pp = plain_profile(Recording([log(1, []), log(2, [("x", 0, NO_PARENT, 1)])], PID, MAIN, 9))
    assert pp.names == ["x"]
    # a child of the log's very first stage, opened in the tick that stage ended in
    assert plain_profile(Recording([log(1, [("p", 0, NO_PARENT, 10), ("c", 10, 0, 10)])], PID,
                                   MAIN, 100)) is None


def test_plain_profile_orders_equal_starts_by_log_then_position_and_keeps_errors_home():
    """Top-level stages of two threads starting in the same ns: the first log's first. An
    error on a segment's first stage, and on a stage of a later segment of the same log
    with another log's segment drawn between them, lands on its own stage."""
    main = log(1, [("m0", 10, NO_PARENT, 20), ("m1", 50, NO_PARENT, 60), ("m1a", 52, 1, 55)],
               errors={0: "E0", 1: "E1", 2: "E2"})
    worker = log(2, [("w0", 50, -2, 58), ("w1", 30, -2, 40)], tid=WORKER)
    pp = plain_profile(Recording([main, worker], PID, MAIN, 100))
    assert pp.names == ["m0", "w1", "m1", "m1a", "w0"]
    assert pp.errors == {0: "E0", 2: "E1", 3: "E2"}
    assert pp.parents == [-1, -1, -1, 2, -1] and pp.roots == [0, 1, 2, 4]
    # the tree agrees
    roots = build_stage_tree(Recording([main, worker], PID, MAIN, 100))
    assert [(s.name, s.error) for s in roots] == [("m0", "E0"), ("w1", None), ("m1", "E1"),
                                                  ("w0", None)]


def test_the_first_stage_of_a_fresh_process_is_a_parent_like_any_other():
    """In a fresh interpreter the first thread log and its first stage have the smallest
    refs the profiler hands out: bound work under that stage must still find it."""
    script = textwrap.dedent("""
        import threading
        from pypto.compile_profiling import CompileProfiler
        with CompileProfiler() as prof:
            with prof.stage("first"):
                def work():
                    with prof.stage("inner"):
                        pass
                t = threading.Thread(target=prof.bind(work))
                t.start(); t.join()
        (first,) = prof.stages
        print(first.name, [c.name for c in first.children], first.children[0].tid != first.tid)
        """)
    env = {**os.environ, "PYTHONPATH": str(Path(pypto.__file__).resolve().parent.parent),
           "PYPTO_COMPILE_PROFILING": "0"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "first ['inner'] True"


def _walk(stages):
    stack = list(stages)
    while stack:
        s = stack.pop()
        yield s
        stack.extend(s.children)


def _inserted(record, parent_ref):
    from pypto.compile_profiling.stage_log import Inserted

    return Inserted(record, parent_ref)
