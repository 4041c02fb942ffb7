"""The run explained (`pypto.compile_profiling.analysis`): a DAG built by hand and computed on
paper, every real capture against an independent plain-Python computation of the same
definitions (tests/support/analysis_reference.py), captures built by hand for each verdict
(compute-bound with an engine starved off the path, scheduler latency with every piece,
level 1, one task without edges, a containment that device_wall's length would get wrong),
bad input, the answer first, and the end-to-end tiling of the README's main example."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from analysis_reference import critical_path as ref_path
from analysis_reference import load, starvation
from repo_paths import REPO_ROOT
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling.analysis import CATEGORIES, HELD_BY, analyze
from pypto.compile_profiling.analysis.report import format_analysis

SCHED = ("completion", "dispatch", "launch")

DEPGEN = [c for c in CASES if (FIXTURES / c / "deps.json").exists()]
LEVEL1 = [c for c in CASES if c.endswith("_l1")]


def write_capture(d, rows, edges, *, core_types, deps_tasks=None, level=2, freq=1_000_000_000):
    """A capture: `rows` (core, token, start, end[, dispatch, finish]); without the last
    two, each block is dispatched 1 cycle before it starts (at 0 at the earliest) and seen
    finished 1 after it ends. Level 1: no AICPU rows."""
    d.mkdir(parents=True, exist_ok=True)
    regs: dict[int, int] = {}
    aicore, aicpu = [], []
    for core, token, st, en, *cpu in rows:
        regs[core] = regs.get(core, 0) + 1
        aicore.append([core, token, regs[core], st, en, 0])
        disp, fin = cpu if cpu else (max(st - 1, 0), en + 1)
        aicpu.append([core, regs[core], disp, fin])
    rec = {"chip_swimlane_level": level,
           "metadata": {"clock_freq_hz": freq, "core_types": core_types},
           "aicore_tasks": aicore, "aicpu_tasks": aicpu if level >= 2 else []}
    (d / "chip_swimlane_records.json").write_text(json.dumps(rec))
    tokens = deps_tasks if deps_tasks is not None else sorted({r[1] for r in rows})
    deps = {"tasks": [{"task_id": str(t), "kernel_ids": [0, -1, -1], "block_num": 1}
                      for t in tokens],
            "edges": [{"pred": str(p), "succ": str(s)} for p, s in edges]}
    (d / "deps.json").write_text(json.dumps(deps))
    return d


# Tokens: A=1, N=9, T=10, D=4, E=5, M=6, G=7, H=8, K=11. "10" < "9" as strings, although
# 10 > 9: the observed path's tie rule compares ids as strings (Simpler keys by str(id)).
A, N, T, D, E, M, G, H, K = 1, 9, 10, 4, 5, 6, 7, 8, 11
HAND_ROWS = [                      # (core, token, start, end), record order
    (0, A, 0, 100),
    (1, N, 2, 100),
    (2, T, 2, 100),
    (0, D, 103, 200),
    (1, E, 197, 250),
    (2, M, 198, 260),
    (0, G, 202, 300),
    (0, H, 305, 400),
    (1, K, 364, 400),
    (2, K, 370, 395),              # K is SPMD: two blocks, span 364..400
]
HAND_EDGES = [
    (T, D),          # kept
    (N, D),          # kept
    (D, G),          # kept
    (D, E),          # dropped: D ends at 200 > E's start 197 + tolerance 2
    (D, M),          # kept: D ends at 200 = M's start 198 + 2 (the tolerance's edge)
    (A, H),          # kept
    (M, K),          # kept
    (K, K),          # a self-loop: ignored, said once
    (99, D),         # task 99 never ran: left out, counted
    (T, D),          # a duplicate: counted once
]


def test_hand_built_dag(tmp_path):
    cap = write_capture(tmp_path / "dfx_outputs", HAND_ROWS, HAND_EDGES,
                        core_types=["aic", "aiv", "aiv"],
                        deps_tasks=[A, N, T, D, E, M, G, H, K, 99])
    result = analyze([cap])
    (r,) = result.ranks
    ids = r.tasks.ids
    # makespan: first start A 0 .. last end H/K 400
    assert r.makespan_cycles == 400
    # static path, durations: A 100, N 98, T 98, D 97, E 53, M 62, G 98, H 95, K 36.
    # finish: A 100, N 98, T 98, E 53 (no kept edge in);
    #   D: T (first kept edge, 98 > 0) then N (98, not > 98): T wins the tie, 98 + 97 = 195;
    #   G = 195 + 98 = 293; M = 195 + 62 = 257; H = 100 + 95 = 195; K = 257 + 36 = 293.
    # G and K tie at 293: the first in the topological sort's order wins. Sort: level 0 A N T
    # E (positions 0-3, record order); level 1 H (last producer A at 0) then D (last
    # producer T at 2): 4, 5; level 2 G (kept edge 2) then M (edge 4): 6, 7; level 3 K: 8.
    # G (6) before K (8): the path is T -> D -> G, 293 cycles, 3 tasks.
    assert r.static.length_cycles == 293
    assert ids[r.static.tasks].tolist() == [T, D, G]
    # observed path, back from H (H and K both end at 400; H comes first in the records):
    #   H: data A (end 100) vs core G (G freed core 0 at 300): core-wait, stall 305-300 = 5
    #   G: data D (200) and core D (200), the same task: data wins, data-wait 202-200 = 2
    #   D: data N (100, "9"), data T (100, "10"), core A (100, "1"): "9" is the largest
    #      string: N, data-wait 103-100 = 3
    #   N: no producer, first block on core 1: held by the start, a front gap 2-0 = 2
    obs = r.observed
    assert ids[obs.tasks].tolist() == [N, D, G, H]
    assert [str(HELD_BY[k]) for k in obs.held_by] == ["start", "data", "data", "core"]
    # compute: N 100-2 = 98, D 200-103 = 97, G 300-202 = 98, H 400-305 = 95 -> 388;
    # stall 2 + 3 + 2 + 5 = 12; 388 + 12 = 400, the makespan: exact
    assert obs.compute.tolist() == [98, 97, 98, 95]
    assert obs.stall.tolist() == [2, 3, 2, 5]
    # what filled them (each block dispatched 1 before it starts, seen finished 1 after):
    #   D: 100 .. N's finish 101 .. D's dispatch 102 .. 103: completion, dispatch, launch 1
    #   G: 200 .. D's finish 201 = G's dispatch 201 .. 202: completion 1, launch 1
    #   H: 300 .. G's finish 301 .. H's dispatch 304 .. 305: completion 1, dispatch 3,
    #   launch 1
    #   N (the front gap, 0 .. 2): cut at its own dispatch 1, launch 1 after it; before it
    #   front (no submission is known here)
    assert obs.parts.tolist() == [[0, 0, 1, 1, 0], [1, 1, 1, 0, 0], [1, 0, 1, 0, 0],
                                  [1, 3, 1, 0, 0]]
    assert obs.stall_by_part() == {"completion": 3, "dispatch": 4, "launch": 4, "front": 1,
                                   "unknown": 0}
    assert obs.exact
    # kept edges: T->D, N->D, D->G, D->M, A->H, M->K = 6 (D->E dropped, K->K ignored,
    # 99->D untimed, the duplicate T->D removed by the reader)
    e = r.edges
    assert (e.kept, e.edges_out_of_order, e.self_loops, e.missing_tasks) == (6, 1, 1, 1)
    notes = "\n".join(result.warnings)
    assert "1 of its 10 tasks are missing from the records" in notes
    assert "1 edges from a task to itself" in notes
    # the reference computation agrees on everything
    ref = ref_path(*load(cap))
    assert ref["static_path"] == [str(T), str(D), str(G)]
    assert ref["observed"] == [str(N), str(D), str(G), str(H)]


def test_core_predecessor_ties(tmp_path):
    """A task's first blocks on two cores, both freed at the same time by different tasks:
    the first core in record order proposes (Simpler keeps the first of equal proposals);
    a later free time on another core beats it."""
    rows = [(0, 1, 0, 50), (1, 2, 0, 50), (1, 3, 60, 90), (0, 3, 60, 80)]
    cap = write_capture(tmp_path / "a", rows, [], core_types=["aiv", "aiv"])
    (r,) = analyze([cap]).ranks
    # task 3 starts at 60 on cores 0 and 1; core 0 (seen first) freed by 1 at 50, core 1 by
    # 2 at 50: equal, so core 0's proposal (task 1) stands: path 1 -> 3, core-wait 10
    assert r.tasks.ids[r.observed.tasks].tolist() == [1, 3]
    rows = [(0, 1, 0, 50), (1, 2, 0, 55), (1, 3, 60, 90), (0, 3, 60, 80)]
    cap = write_capture(tmp_path / "b", rows, [], core_types=["aiv", "aiv"])
    (r,) = analyze([cap]).ranks
    assert r.tasks.ids[r.observed.tasks].tolist() == [2, 3]     # freed later: 55 > 50
    assert r.observed.stall.tolist() == [0, 5]


@pytest.mark.parametrize("case", DEPGEN)
def test_real_capture_matches_the_definitions(case):
    """Every real capture with deps.json: the NumPy analysis gives what a literal
    plain-Python computation of the definitions gives, and the path tiles the makespan."""
    rec, deps = load(FIXTURES / case)
    ref = ref_path(rec, deps)
    result = analyze([FIXTURES / case])
    (r,) = result.ranks
    obs, st = r.observed, r.static
    assert r.makespan_cycles == ref["makespan"]
    assert (st.length_cycles, len(st.tasks)) == (ref["static_length"], ref["static_tasks"])
    assert [str(t) for t in r.tasks.ids[st.tasks]] == ref["static_path"]
    assert [str(t) for t in r.tasks.ids[obs.tasks]] == ref["observed"]
    assert [str(HELD_BY[k]) for k in obs.held_by] == ref["held_by"]
    assert obs.compute_total == ref["compute"]
    assert {str(k): v for k, v in obs.stall_by_part().items() if v} == \
        {k: v for k, v in ref["parts"].items() if v}
    # invariants
    assert obs.exact and obs.compute_total + obs.stall_total == obs.makespan
    s = r.tasks.start[obs.tasks]
    assert (np.diff(s) > 0).all()                        # starts rise strictly along it
    assert (obs.compute <= r.tasks.duration[obs.tasks]).all() and (obs.stall >= 0).all()
    assert obs.held_by[0] == 2 and (obs.held_by[1:] != 2).all()   # held by the start: first
    assert (obs.parts[1:, 3] == 0).all() and (obs.parts.sum(axis=1) == obs.stall).all()
    assert st.length_cycles <= r.makespan_cycles + 2 * len(st.tasks)
    # the overhead shares, against the reference sweep
    ref_share = starvation(rec, deps)
    ov = r.overhead
    got = {e.engine.lower(): e.starved_share for e in ov.engines}
    for ty, share in got.items():
        assert share == pytest.approx(ref_share[ty], abs=1e-12)
    assert ov.all_starved_share == pytest.approx(ref_share["all"], abs=1e-12)
    assert ov.some_starved_share == pytest.approx(ref_share["some"], abs=1e-12)
    assert ov.all_starved_share <= min(got.values()) + 1e-12
    # 'some' needs every engine with ready work starved: an engine busy with a queue of
    # ready work (ready from its submission) is not, so 'some' may be below an engine's share
    assert 0 <= ov.some_starved_share <= 1
    # the verdict follows the path: never the starvation off it
    assert r.verdict.kind != "unknown"
    dev = r.verdict.device or r.verdict
    if dev.kind == "scheduler-bound":
        assert sum(v for k, v in ref["parts"].items() if k in SCHED) > ref["compute"]
    else:
        assert ref["compute"] >= sum(v for k, v in ref["parts"].items() if k in SCHED)


@pytest.mark.parametrize("case", LEVEL1)
def test_level1_capture(case):
    """No deps.json, no AICPU records: no static path, the observed path follows the
    previous task on the core only, and the report says so once."""
    rec, _ = load(FIXTURES / case)
    ref = ref_path(rec, None)
    result = analyze([FIXTURES / case])
    (r,) = result.ranks
    assert r.static is None
    dev = r.verdict.device or r.verdict
    assert dev.kind == "unknown" and "level-1 capture" in dev.rule
    assert [str(t) for t in r.tasks.ids[r.observed.tasks]] == ref["observed"]
    assert set(r.observed.held_by[1:].tolist()) <= {1}          # the core only
    # no dispatch/finish records: what filled the stalls is unknown, never a cause
    parts = r.observed.stall_by_part()
    assert parts["completion"] == parts["dispatch"] == parts["launch"] == 0
    assert parts["unknown"] + parts["front"] == r.observed.stall_total
    assert r.observed.exact
    lines = [w for w in result.warnings if "no deps.json" in w]
    assert len(lines) == 1 and "resource predecessors" in lines[0]
    assert r.overhead.head is None and r.overhead.some_starved_share is None


def test_dependency_cycle_is_one_line(tmp_path):
    rows = [(0, 1, 0, 10), (0, 2, 20, 30), (0, 3, 40, 50)]
    cap = write_capture(tmp_path / "c", rows, [(1, 2), (2, 3), (3, 2)], core_types=["aiv"])
    result = analyze([cap])
    lines = [w for w in result.warnings if "dependency cycle" in w]
    assert len(lines) == 1
    assert "t2 -> t3 -> t2" in lines[0] or "t3 -> t2 -> t3" in lines[0]
    assert result.ranks[0].observed.exact


def test_tasks_with_no_blocks(tmp_path):
    rows = [(0, 1, 0, 10), (0, 2, 20, 30)]
    cap = write_capture(tmp_path / "d", rows, [(1, 2), (1, 5), (5, 2)], core_types=["aiv"],
                        deps_tasks=[1, 2, 5])
    deps = json.loads((cap / "deps.json").read_text())
    deps["tasks"][2]["kernel_ids"] = [-1, -1, -1]       # task 5: a dummy, nothing runs
    (cap / "deps.json").write_text(json.dumps(deps))
    result = analyze([cap])
    assert sum("1 tasks have no blocks" in w for w in result.warnings) == 1
    assert not any("missing from the records" in w for w in result.warnings)


def test_readme_example_end_to_end(tmp_path):
    """The main job (compile + run with profiling, level 4, dep_gen): the wall time from
    the first compile stage to the last device task is tiled exactly, every named category
    is there, and the compile side follows the first path task's kernel."""
    from example_runs import run_many_kernels

    work = run_many_kernels(tmp_path / "many_kernels", runtime="host_build_graph")
    result = analyze([work / "report" / "trace.json", work / "dfx_outputs"])
    (r,) = result.ranks
    e2e = r.end_to_end
    assert e2e is not None and e2e.exact
    assert sum(e2e.totals.values()) == e2e.end_ns - e2e.start_ns
    assert set(e2e.totals) == set(CATEGORIES)
    for cat in ("compile", "host preparation", "launch", "device compute"):
        assert e2e.totals[cat] > 0, cat
    names = [s.name for s in e2e.segments]
    trace = json.loads((work / "report" / "trace.json").read_text())
    stages = sorted((ev for ev in trace["traceEvents"] if ev.get("ph") == "X"),
                    key=lambda ev: ev["ts"])
    assert names[0] == stages[0]["name"]               # the first compile stage opens it
    assert e2e.start_ns == round(stages[0]["ts"] * 1000)
    assert f"kernel_codegen:{e2e.kernel}" in names
    # the first path task's launch is the host-visible launch, and the device part
    # starts where it ends: at that task's start
    (launched,) = [s for s in e2e.segments if s.name.startswith("dispatched → started")]
    assert launched.end_ns > launched.start_ns and launched.category == "launch"
    assert launched.end_ns == e2e.device_start_ns == e2e.segments[-1].start_ns
    # segments touch: each starts where the one before ended
    for a, b in zip(e2e.segments, e2e.segments[1:]):
        assert a.end_ns == b.start_ns
    assert not e2e.estimated and e2e.uncertainty_ns is not None


def test_cli_json_follows_the_schema(tmp_path, capsys):
    """`pypto-profile analyze --format json` on every real capture: valid against
    docs/analysis.schema.json, with the figures of the library."""
    import jsonschema

    from pypto.compile_profiling.cli.profile import main

    schema = json.loads((REPO_ROOT / "docs" /
                         "analysis.schema.json").read_text())
    out = tmp_path / "report.json"
    assert main(["analyze", *map(str, (FIXTURES / c for c in CASES)), "--format", "json",
                 "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert len(doc["ranks"]) == len(CASES)
    for rank in doc["ranks"]:
        assert rank["observed_path"]["tiling"] == "exact"
    err = capsys.readouterr().err
    assert "warning:" in err and "Traceback" not in err


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_cli_text_and_markdown(capsys, fmt):
    from pypto.compile_profiling.cli.profile import main

    assert main(["analyze", str(FIXTURES / "tmr_vector_example_l4_depgen"), "--format",
                 fmt]) == 0
    text = capsys.readouterr().out
    assert "tiling check: compute + stall = 233165 cycles vs makespan 233165 cycles (exact)" \
        in text
    # the answer first, at most 8 lines: host-bound end to end, the device's own verdict
    lines = text.splitlines()
    first = next(i for i, x in enumerate(lines) if x.strip() and not x.startswith("# "))
    head = lines[first].strip("*")
    assert head.startswith("tmr_vector_example_l4_depgen: host-bound")
    if fmt == "text":                   # the head line, its indented lines, a blank line
        answer = lines[first:lines.index("", first + 1)]
    else:                               # **head**, a blank line, the bullets
        rest = lines[first + 2:]
        answer = [lines[first]] + rest[:rest.index("")]
    assert any("device: dependency-bound" in x for x in answer)
    assert any(x.lstrip("- ").startswith("placement: contained") for x in answer)
    # at most 8 lines, each wrapped to 100 columns in text (a continuation is indented more)
    logical = [x for x in answer if x.strip() and not x.startswith("      ")]
    assert len(logical) <= 8
    if fmt == "text":
        long = [x for x in lines if len(x) > 100]     # only a path longer than a line,
        assert all(" " not in x.strip() and str(FIXTURES) in x for x in long), long  # alone


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    from pypto.compile_profiling.cli.profile import main

    (tmp_path / "empty").mkdir()
    assert main(["analyze", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(str(tmp_path / "empty"))
    bad = tmp_path / "bad" / "dfx_outputs"
    write_capture(bad, [(0, 1, 0, 10)], [], core_types=["aiv"])
    (bad / "deps.json").write_text('{"tasks": [}')
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "deps.json" in err[0]


def test_a_first_calls_imports_count_as_compile_time(tmp_path):
    """In a fresh interpreter the first compile imports the compiler lazily; those
    `import:<module>` stages are compile time in the end-to-end tiling, not host
    preparation (they happen inside `compile`, paid by the program being compiled)."""
    import subprocess
    import sys

    repo = REPO_ROOT
    work = tmp_path / "vector_dag"
    r = subprocess.run([sys.executable, str(repo / "examples" / "run_vector_dag.py"), str(work)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    (rank,) = analyze([work / "report" / "trace.json", work / "dfx_outputs"]).ranks
    imports = [s for s in rank.end_to_end.segments if s.name.startswith("import:")]
    assert imports, [s.name for s in rank.end_to_end.segments]
    assert {s.category for s in imports} == {"compile"}


# ------------------------------------------------------------------ one capture per verdict

def test_compute_bound_with_an_engine_starved_off_the_path(tmp_path):
    """AIC core 0 runs 1, 2, 3 back to back (0..3000, each picked up 1 cycle after the one
    before: launch). AIV core 1 runs 4 (0..10), then sits idle while 5, ready at 10 (its
    producer 4 ended), waits undispatched until 1499: AIV starved 1489 of 3000 cycles. The
    path is 1 -> 2 -> 3, all AIC: a faster scheduler would not shorten the run."""
    rows = [(0, 1, 0, 1000, 0, 1001), (0, 2, 1001, 2000, 999, 2001),
            (0, 3, 2001, 3000, 1999, 3001), (1, 4, 0, 10, 0, 11),
            (1, 5, 1500, 1600, 1499, 1601)]
    cap = write_capture(tmp_path / "c", rows, [(4, 5)], core_types=["aic", "aiv"])
    (r,) = analyze([cap]).ranks
    assert r.tasks.ids[r.observed.tasks].tolist() == [1, 2, 3]
    assert r.observed.stall_by_part() == {"completion": 0, "dispatch": 0, "launch": 2,
                                          "front": 0, "unknown": 0}
    # replayed: no scheduler latency gains 2 cycles (the path's launches), more cores or no
    # dependencies nothing worth naming; the AIC kernels taking no time gains most
    v = r.verdict
    assert (v.kind, v.cause) == ("compute-bound", "AIC")
    gains = {lv.edit.words(): lv.gain for lv in v.levers}
    assert gains["no scheduler latency"] == 2 and gains["no dependencies"] == 0
    best = max(v.levers, key=lambda lv: lv.gain)
    assert best.family == v.family and v.gain_ns == best.gain == max(gains.values())
    assert v.gain_share == pytest.approx(best.gain / 3000) and v.engine == "calibrated"
    (aiv,) = [e for e in r.overhead.engines if e.engine == "AIV"]
    assert aiv.starved_share == pytest.approx(1489 / 3000)
    assert ("AIV starved 49.6 % of the makespan, off the critical path: it would not "
            "shorten this run") in v.evidence


def test_scheduler_latency_with_every_piece(tmp_path):
    """1 (0..20) is seen finished at 50; 2 is dispatched at 80 and starts at 120; 2 ends at
    140, seen at 170; 3 is dispatched at 200 and starts at 240. Each stall: completion 30,
    dispatch 30, launch 40. Compute 60 of 260 cycles: scheduler latency 200."""
    rows = [(0, 1, 0, 20, 0, 50), (1, 2, 120, 140, 80, 170), (0, 3, 240, 260, 200, 290)]
    cap = write_capture(tmp_path / "s", rows, [(1, 2), (2, 3)], core_types=["aiv", "aiv"])
    (r,) = analyze([cap]).ranks
    obs = r.observed
    assert [str(HELD_BY[k]) for k in obs.held_by] == ["start", "data", "data"]
    assert obs.parts.tolist() == [[0, 0, 0, 0, 0], [30, 30, 40, 0, 0], [30, 30, 40, 0, 0]]
    # replayed: no scheduler latency at all leaves the 60 cycles of compute; each piece
    # alone saves its two stalls' share: completion 60, dispatch 60, launch 80 (the most)
    v = r.verdict
    assert (v.kind, v.cause) == ("scheduler-bound", "launch")
    assert v.gain_ns == 200 and v.gain_share == pytest.approx(200 / 260)
    gains = {lv.edit.words(): lv.gain for lv in v.levers}
    assert gains["no scheduler latency"] == 200
    assert (gains["no completion latency"], gains["no dispatch latency"],
            gains["no launch latency"]) == (60, 60, 80)
    assert v.rule.startswith("with no scheduler latency the run would take 60 ns instead of "
                             "260 ns (-76.9 %), more than any other removal")
    doc = json.loads(format_analysis(analyze([cap]), "json"))
    (_row1, row2, row3) = doc["ranks"][0]["observed_path"]["path"]
    assert row2["stall_parts_ns"] == {"completion": 30, "dispatch": 30, "launch": 40,
                                      "front": 0, "unknown": 0}
    assert sum(row3["stall_parts_ns"].values()) == row3["stall_ns"] == 100
    assert doc["ranks"][0]["verdict"]["kind"] == "scheduler-bound"


def test_a_level1_capture_names_no_cause(tmp_path):
    """The same run without AICPU records: the stalls are there, what filled them is not;
    the verdict is unknown, with each engine's busy share and what to capture instead."""
    rows = [(0, 1, 0, 20), (1, 2, 120, 140), (0, 3, 240, 260)]
    cap = write_capture(tmp_path / "l1", rows, [], core_types=["aiv", "aiv"], level=1)
    (r,) = analyze([cap]).ranks
    v = r.verdict
    assert v.kind == "unknown" and v.gain_ns is None
    assert "level-1 capture has no AICPU dispatch/finish records" in v.rule
    assert "core time: AIV (2 cores) busy 11.5 %, idle 88.5 %" in v.evidence
    assert any("enable_chip_swimlane >= 2" in e and "enable_dep_gen" in e for e in v.evidence)
    parts = r.observed.stall_by_part()
    assert parts["completion"] == parts["dispatch"] == parts["launch"] == 0


def test_one_task_without_edges_is_not_dependency_bound(tmp_path):
    """One SPMD task on two AIC and two AIV cores, deps.json with no edge: the static path
    would be the task itself, 100 % of the makespan, which says nothing about dependencies.
    Twenty tasks and no edge, likewise."""
    rows = [(0, 7, 0, 100), (1, 7, 0, 100), (2, 7, 5, 90), (3, 7, 5, 95)]
    cap = write_capture(tmp_path / "one", rows, [], core_types=["aic", "aic", "aiv", "aiv"])
    (r,) = analyze([cap]).ranks
    assert (r.verdict.kind, r.verdict.cause) == ("compute-bound", "AIC+AIV")
    assert r.edges.kept == 0 and "static path" not in " ".join(r.verdict.evidence)
    rows = [(i % 4, 100 + i, 10 * (i // 4), 10 * (i // 4) + 9) for i in range(20)]
    cap = write_capture(tmp_path / "twenty", rows, [], core_types=["aiv"] * 4)
    (r,) = analyze([cap]).ranks
    assert r.verdict.kind == "compute-bound"


def test_a_containment_that_device_walls_length_would_get_wrong(tmp_path):
    """runner_run [R, R + 1000], device_wall 900 ns long, its sched sub-phase the first 100
    ns, the device really starting 500 ns into runner_run (as on Simpler's simulator, whose
    device_wall can outlast runner_run). The join puts the origin cycle in [O - 5, O + 5];
    the records and the sub-phase inside runner_run allow offsets [R - O - 5, R - O + 905].
    device_wall's end inside runner_run would cut that to R - O + 105, excluding the truth
    R - O + 500: it is named, not relied on. Simpler's slack (100 ns) misses it too."""
    R, O = 10_000_000_000, 5_000_000
    truth = R - O + 500
    d = write_capture(tmp_path / "wall" / "dfx_outputs", [(0, 1, O + 10, O + 90, O + 9, O + 91)],
                      [], core_types=["aiv"], level=4)
    rec = json.loads((d / "chip_swimlane_records.json").read_text())
    rec["aicpu_scheduler_phases"] = [[{"kind": "dispatch", "start_cycles": O + 5,
                                       "end_cycles": O + 95}]]
    (d / "chip_swimlane_records.json").write_text(json.dumps(rec))
    spans = [("chip.run.runner_run", R, 1000, ""),
             ("chip.run.runner_run.device_wall", 0, 900, " clk=dev"),
             ("chip.run.runner_run.device_wall.sched", 0, 100, " clk=dev"),
             ("chip.run", R - 50, 1100, "")]
    (d / "host_log.txt").write_text("".join(
        f"[STRACE] v=1 pid=7 tid=7 inv=1 hid=0 depth={n.count('.') - 1} name={n} ts={ts} "
        f"dur={dur}{extra}\n" for n, ts, dur, extra in spans))
    result = analyze([d])
    (r,) = result.ranks
    assert r.placement == "contained" and r.offset_ns == R - O
    assert (r.offset_lo_ns, r.offset_hi_ns) == (R - O - 5, R - O + 905)
    assert r.offset_lo_ns <= truth <= r.offset_hi_ns
    assert r.clock == "contained -5 ns/+905 ns"
    (line,) = [w for w in result.warnings if "placed by span containment" in w]
    assert ("device_wall (900 ns) ending inside chip.run.runner_run, as Simpler's tools "
            "assume, would cut the later end to +105 ns: not relied on") in line
    assert "(drawn as Simpler does, slack 100 ns)" in line
    doc = json.loads(format_analysis(result, "json"))["ranks"][0]
    assert (doc["clock"]["offset_lo_ns"], doc["clock"]["offset_hi_ns"]) == (R - O - 5,
                                                                           R - O + 905)
    # the launch at the host/device boundary is a range over the interval, never one point
    launch = doc["end_to_end"]["category_ranges"]["launch"]
    assert launch[1] - launch[0] == 910


def test_top_cuts_every_long_list_and_says_how_to_see_all(capsys):
    from pypto.compile_profiling.cli.profile import main

    case = str(FIXTURES / "tmr_bgemm_case0_l4_depgen")
    assert main(["analyze", case, "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "the 3 of 59 tasks that add the most, in path order" in text
    assert "... 56 more path tasks; --top 0 for all" in text
    assert main(["analyze", case, "--top", "0"]) == 0
    text = capsys.readouterr().out
    assert "Observed path (tmr_bgemm_case0_l4_depgen): all 59 tasks" in text
    assert "--top 0 for all" not in text


def test_a_cycle_longer_than_eight_tasks_is_named_by_its_own_edges(tmp_path):
    """t1 -> t2 -> ... -> t12 -> t1: the note once closed the ring after 8 tasks with an
    edge that does not exist (t9 -> t2). Each arrow it prints is an edge of deps.json."""
    rows = [(0, t, 10 * t, 10 * t + 5) for t in range(1, 13)]
    edges = [(t, t % 12 + 1) for t in range(1, 13)]
    cap = write_capture(tmp_path / "ring", rows, edges, core_types=["aiv"])
    (line,) = [w for w in analyze([cap]).warnings if "dependency cycle" in w]
    ring = line.split("(", 1)[1].split(";")[0]
    assert line.split(": ", 1)[1].startswith("dependency cycle of 12 tasks (")
    names = [x for x in ring.split(" -> ") if not x.startswith("...")]
    assert "... (5 more)" in ring and names[0] == names[-1]
    real = {(f"t{a}", f"t{b}") for a, b in edges}
    shown = ring.split(" -> ")
    pairs = [(a, b) for a, b in itertools.pairwise(shown) if "..." not in a + b]
    assert pairs and all(p in real for p in pairs), pairs


def _slotted_run(tmp_path, **config):
    """The slotted DSL program run on the simulator (tensormap_and_ringbuffer, dep_gen)."""
    from runtime_support import slotted_program

    from pypto.runtime import RunConfig, run

    a = np.full((64, 64), 1.0, np.float32)
    work = tmp_path / "slotted"
    run(slotted_program(), a, a, np.zeros_like(a),
        config=RunConfig(work_dir=str(work), runtime="tensormap_and_ringbuffer",
                         enable_dep_gen=True, **config))
    return work


def test_each_task_slot_is_reported_beside_the_tasks_it_covers(tmp_path, capsys):
    """Slot 3 tags t0, slot 5 tags t1 and t2 (one merged window): each slot covers its tagged
    tasks, exactly (device_wall's cycles join them), and the schema holds."""
    import jsonschema

    from pypto.compile_profiling.cli.profile import main

    work = _slotted_run(tmp_path, enable_chip_swimlane=2)
    (r,) = analyze([work / "dfx_outputs"]).ranks
    assert r.placement == "joined"
    slots = {s.slot: s for s in r.slots}
    assert sorted(slots) == [3, 5] and all(s.tolerance_ns == 0 for s in slots.values())
    assert r.labels(slots[3].tasks)[1] == ["t0"]
    assert sorted(r.labels(slots[5].tasks)[1]) == ["t1", "t2"]     # t3 is untagged
    assert main(["analyze", str(work / "dfx_outputs"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((REPO_ROOT / "docs" / "analysis.schema.json")
                                        .read_text()))
    (rank,) = doc["ranks"]
    s3, s5 = rank["task_slots"]
    assert (s3["slot"], s3["tasks"], s3["first"], s3["last"]) == (3, ["kadd(t0)"], "kadd(t0)",
                                                                   "kadd(t0)")
    assert s5["slot"] == 5 and {s5["first"], s5["last"]} <= {"kadd(t1)", "kadd(t2)"}
    assert rank["host_side_incomplete"] is None and rank["clock"]["placement"] == "joined"
    assert main(["analyze", str(work / "dfx_outputs")]) == 0
    text = capsys.readouterr().out
    assert "Task-timing slots (r0)" in text and "placement: joined by device_wall's cycles" in text


def test_a_level1_capture_cannot_say_which_tasks_a_slot_covers(tmp_path):
    work = _slotted_run(tmp_path, enable_chip_swimlane=1)
    (r,) = analyze([work / "dfx_outputs"]).ranks
    assert [s.slot for s in r.slots] == [3, 5] and all(s.tasks is None for s in r.slots)


def test_a_host_log_that_lost_records_marks_the_host_side_incomplete(tmp_path):
    import re

    work = _slotted_run(tmp_path, enable_chip_swimlane=2, host_log_queue=3)
    (log,) = (work / "dfx_outputs").glob("host.*.log")
    pid, total = re.search(r"\[HOSTLOG_DROPS\] v=1 pid=(\d+) new=5 total=(\d+)",
                           log.read_text()).groups()       # 8 records, a queue of 3
    (r,) = analyze([work / "dfx_outputs"]).ranks
    assert r.host_log_dropped == {int(pid): int(total)}
    assert any("the host side is incomplete" in n for n in r.notes)


@pytest.mark.parametrize("case", CASES)
def test_leaving_out_the_overhead_keeps_the_verdict_and_path(case):
    """What `pypto-profile diff` runs (`with_overhead=False`): the same verdict and path on
    every real capture; only the overhead figures (and their starvation evidence) are gone."""
    from pypto.compile_profiling.analysis import analyze_plan
    from pypto.compile_profiling.trace_merge.place.placement import place
    from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs

    plan = place(read_inputs([FIXTURES / case]))
    full = analyze_plan(plan).ranks
    light = analyze_plan(plan, with_overhead=False).ranks
    assert [r.label for r in full] == [r.label for r in light]
    for a, b in zip(full, light):
        assert b.overhead is None and a.overhead is not None
        assert (a.verdict.kind, a.verdict.rule, a.verdict.gain_ns) == \
            (b.verdict.kind, b.verdict.rule, b.verdict.gain_ns)
        assert np.array_equal(a.observed.tasks, b.observed.tasks)
        assert np.array_equal(a.observed.parts, b.observed.parts)


def test_the_default_text_fits_100_columns_on_every_real_capture(capsys):
    """The answer, the path table (with the stall columns the capture has: `unknown` alone
    at level 1, where the path's gaps are not called stalls), overhead and end to end: no line over 100 columns without `-v` (a path the
    user gave, longer than that, stands alone on its line, whole)."""
    from pypto.compile_profiling.cli.profile import main

    for case in CASES:
        assert main(["analyze", str(FIXTURES / case)]) == 0
        lines = capsys.readouterr().out.splitlines()
        long = [x for x in lines if len(x) > 100]
        assert all(" " not in x.strip() and str(FIXTURES) in x for x in long), (case, long)
        if case.endswith("_l1"):
            head = next(x for x in lines if x.lstrip().startswith("#  kernel"))
            assert head.split()[-1] == "unknown" and "completion" not in head
            # no path composition dressed as stalls: what held its tasks is unknown
            assert not any("by what filled it" in x for x in lines)
            assert any(x.lstrip().startswith("between its tasks:") for x in lines)
        else:
            assert any("by what filled it" in x for x in lines)


def test_a_records_file_given_alone_reads_the_deps_json_beside_it(tmp_path):
    """`analyze .../chip_swimlane_records.json` answers as the capture directory does: the
    deps.json beside it describes the same tasks; a deps.json given explicitly wins, and a
    records file with none beside it is analysed without one."""
    import shutil

    case = FIXTURES / "hbg_bgemm_l4_depgen"
    whole = analyze([case]).ranks[0]
    alone = analyze([case / "chip_swimlane_records.json"]).ranks[0]
    assert alone.has_deps and alone.verdict.head() == whole.verdict.head()
    assert alone.makespan_cycles == whole.makespan_cycles
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(case / "chip_swimlane_records.json", bare)
    result = analyze([bare / "chip_swimlane_records.json"])
    assert not result.ranks[0].has_deps
    assert any("no deps.json" in w for w in result.warnings)
