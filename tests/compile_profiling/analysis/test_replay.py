"""The replay of a captured run (`analysis.replay`): unedited it reproduces the capture, to
the tick on modelled runs (the rules engine) and on every real Simpler capture with AICPU
records (the calibrated engine); edited, on modelled programs whose bottleneck is known by
construction, it predicts what a real re-run with the change makes."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from repo_paths import REPO_ROOT
from simpler_fixtures import CASES, FIXTURES
from whatif_programs import PROGRAMS, edits_of, makespan_ns, run_graph

from pypto.compile_profiling.analysis import analyze
from pypto.compile_profiling.analysis.replay import Edit, Engine, ReplayInput, replay
from pypto.compile_profiling.analysis.whatif import parse_edit, run_prediction

LEVEL_1 = [c for c in CASES if c.endswith("_l1")]
REPLAYABLE = [c for c in CASES if c not in LEVEL_1]


def _rank(path):
    (rank,) = analyze([str(path)], with_overhead=False).ranks
    return rank


@pytest.mark.parametrize("case", REPLAYABLE)
def test_every_real_capture_with_aicpu_records_is_replayed_as_it_ran(case):
    r = _rank(FIXTURES / case)
    assert r.replay is not None and r.replay.engine is Engine.CALIBRATED
    base = replay(r.replay, Edit())         # run, not the baseline taken as the capture
    assert base.makespan == r.replay.makespan == r.makespan_cycles      # 0.0 %
    assert r.replay.calibration.violations == 0
    taken = r.replay.baseline()
    assert (taken.start == base.start).all() and (taken.finish == base.finish).all()
    # block by block, not only the makespan
    b = r.replay.blocks
    assert (base.start == b.start).all() and (base.end == b.end).all()
    assert (base.dispatch == b.dispatch).all() and (base.core == b.core).all()


@pytest.mark.parametrize("case", LEVEL_1)
def test_a_level_1_capture_says_why_it_cannot_be_replayed(case):
    r = _rank(FIXTURES / case)
    assert r.replay is None
    assert r.no_replay.startswith("a replay needs every block's AICPU dispatch and finish "
                                  "(swimlane level 2 and up)")


@pytest.mark.parametrize("name", ["fan", "fan_device_orchestrated", "mixed_aic_aiv",
                                  "tiny_tasks", "queue_on_two_cores"])
def test_a_modelled_run_is_replayed_by_its_own_rules_to_the_tick(tmp_path, name):
    r = _rank(run_graph(PROGRAMS[name], tmp_path / "w"))
    inp = r.replay
    assert inp.engine is Engine.RULES
    base = inp.baseline()
    b = inp.blocks
    assert base.makespan == inp.makespan
    for mine, theirs in ((base.dispatch, b.dispatch), (base.start, b.start),
                         (base.end, b.end), (base.core, b.core)):
        assert (mine - base.dispatch.min() == theirs - b.dispatch.min()).all() \
            if mine is not base.core else (mine == theirs).all()
    assert (base.finish - base.dispatch.min() == b.finish - b.dispatch.min()).all()


def test_a_capture_made_before_it_stated_its_rules_falls_back_to_the_calibrated_engine(
        tmp_path):
    import json

    work = run_graph(PROGRAMS["fan"], tmp_path / "w")
    rec = work / "dfx_outputs" / "chip_swimlane_records.json"
    doc = json.loads(rec.read_text())
    for key in ("schedule_rules", "schedule_ticks", "schedule_ns"):
        del doc["metadata"]["device_timing"][key]
    rec.write_text(json.dumps(doc))
    inp = _rank(work).replay
    assert inp.engine is Engine.CALIBRATED and inp.baseline().makespan == inp.makespan


def test_every_edit_of_every_program_is_predicted_as_its_re_run_makes_it(tmp_path):
    """12 programs x 5 edits (benchmarks/validate_whatif.py prints the table): the rules
    engine's prediction is what the re-run made, to the tick."""
    for name, graph in PROGRAMS.items():
        inp = _rank(run_graph(graph, tmp_path / name / "base")).replay
        for k, edit in enumerate(edits_of(graph)):
            e = parse_edit(**{"cores": [], "faster": [], "sched": [], "no_deps": False,
                              **edit.options})
            p = run_prediction("base", inp, e)
            actual = makespan_ns(run_graph(edit.graph, tmp_path / name / f"e{k}",
                                           **edit.config))
            assert p.ns(p.predicted) == pytest.approx(actual, rel=1e-9), (name, edit.name)


def test_the_readme_comparison_16_cores_predicted_from_the_4_core_runs(tmp_path):
    """examples/compare_runs.py: the 4-core runs replayed with 16 AIV cores predict the
    16-core runs' median makespan within 2 %."""
    sys.path.insert(0, str(REPO_ROOT / "examples"))
    import compare_runs

    assert compare_runs.main(["--out", str(tmp_path), "--runs", "3"]) == 0
    base = [makespan_ns(p) for p in sorted((tmp_path / "base").iterdir())]
    predicted = [run_prediction(str(p), _rank(p).replay, Edit(cores=(("AIV", 16),)))
                 for p in sorted((tmp_path / "new").iterdir())]
    median = np.median([p.ns(p.predicted) for p in predicted])
    assert median == pytest.approx(np.median(base), rel=0.02)


def test_an_edit_that_does_not_fit_the_capture_is_one_line(tmp_path):
    inp: ReplayInput = _rank(run_graph(PROGRAMS["fan"], tmp_path / "w")).replay
    with pytest.raises(ValueError, match="no kernel family 'gemm' in this capture"):
        replay(inp, Edit(faster=(("gemm", 2.0),)))
    with pytest.raises(ValueError, match=r"no MIX cores in this capture \(it has AIC, AIV\)"):
        replay(inp, Edit(cores=(("MIX", 4),)))
