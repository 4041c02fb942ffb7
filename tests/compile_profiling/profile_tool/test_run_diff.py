"""`pypto-profile diff` over whole runs, on runs of our own simulator in modelled time (exact,
with seeded jitter where noise is the point): the makespan gate, families, the path's
composition, tasks off the critical path, and no false alarm between identical programs."""

from __future__ import annotations

import functools
import json
import random
import re

import pytest
from runtime_support import FAN_CYCLES, fan_golden, fan_program, fan_specs

from pypto.compile_profiling.cli.profile import main as profile_main
from pypto.compile_profiling.profile_tool.run_diff import Thresholds, decision, diff_runs
from pypto.compile_profiling.profile_tool.run_figures import (
    RankFigures,
    RunFigures,
    load_run_figures,
)
from pypto.runtime import RunConfig, run

JITTER = 0.05
POOL = 30                      # identical-program runs the false-alarm check draws from


def _runs(root, name: str, seeds, aiv: int = 16, **cycles) -> list[str]:
    out = []
    for seed in seeds:
        work = root / f"{name}{seed}"
        config = RunConfig(work_dir=str(work), device_timing="modelled", timing_jitter=JITTER,
                           timing_seed=seed, enable_chip_swimlane=4, enable_dep_gen=True,
                           num_aiv_cores=aiv)
        r = run(fan_program(8, **cycles), fan_specs(), functools.partial(fan_golden, 8), config)
        assert r.passed, r.error
        out.append(str(work))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {
        "base": _runs(root, "base", range(POOL)),
        "more_work": _runs(root, "more", range(100, 105), branch=FAN_CYCLES["branch"] * 3 // 2),
        "half_cores": _runs(root, "half", range(200, 205), aiv=4),
        "side": _runs(root, "side", range(300, 305), side=FAN_CYCLES["side"] * 4),
    }


@pytest.fixture(scope="module")
def figures(runs):
    return {k: [load_run_figures(p) for p in v] for k, v in runs.items()}


def _cli(capsys, *argv):
    code = profile_main(["diff", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_more_device_work_is_a_regression_named_by_its_family(runs, capsys):
    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"])
    assert code == 1
    lines = out.splitlines()
    assert lines[2].startswith("REGRESSION: r0 makespan")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("r0: device makespan"))
    assert lines[at].endswith("  REGRESSION")
    assert lines[at + 1].startswith("  change +") and lines[at + 1].endswith("gate: fail above 15%")
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    fam = lines.index("  kernel families (core time summed over cores):")
    top = lines[fam + 2]
    assert top.split()[0].startswith("+")
    assert top.endswith("  8  branch  on the critical path")
    # the path's composition: its AIV compute grew
    path = lines.index("  critical path's composition:")
    compute = next(ln for ln in lines[path:fam] if ln.endswith("compute AIV"))
    assert compute.split()[4].startswith("+")


def test_half_the_cores_is_a_regression_in_modelled_time(figures):
    d = diff_runs(figures["base"][:5], figures["half_cores"])
    assert d.failed and [c.name for _, c in d.regressions] == ["makespan"]
    r = d.ranks[0]
    assert r.makespan.lower > 0.15 * r.makespan.base_median
    # the same program: every task pairs, and the families kept their core time
    assert r.paired_tasks == 18 and r.unpaired == (0, 0)
    assert all(abs(c.pct or 0) < 10 for c in r.families)


def test_captures_named_otherwise_pair_by_position_and_say_so(runs, capsys, tmp_path):
    """Base work dirs (rank `r0`) against bare captures named `cap0..cap4`: the ranks pair
    by position with a note, and the gate decides as it does with the work dirs."""
    import shutil

    caps = []
    for i, work in enumerate(runs["half_cores"]):
        cap = tmp_path / f"cap{i}"
        shutil.copytree(f"{work}/dfx_outputs", cap)
        caps.append(cap)
    code, out, err = _cli(capsys, *runs["base"][:5], "--", *caps)
    assert code == 1, err
    assert out.startswith("base: median of 5 runs") and "REGRESSION: r0 makespan" in out
    assert "note: the runs' captures have different names; ranks are paired by position" in out


def test_identical_programs_never_raise_a_false_alarm(figures):
    """Twenty draws of 5 vs 5 runs that differ only by their seeded noise: no regression.
    Each draw is seeded, so the check is exact, never lucky."""
    pool = figures["base"]
    for draw in range(20):
        picked = random.Random(draw).sample(range(POOL), 10)
        d = diff_runs([pool[i] for i in picked[:5]], [pool[i] for i in picked[5:]])
        assert not d.failed, decision(d)
        assert d.ranks[0].makespan.decided
        assert decision(d).startswith("no regression (with 99% confidence")


def test_the_cli_exits_0_on_identical_programs(runs, capsys):
    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["base"][5:10])
    assert code == 0
    assert out.splitlines()[2].startswith("no regression")


def test_one_run_per_side_decides_nothing(runs, capsys):
    code, out, _ = _cli(capsys, runs["base"][0], runs["half_cores"][0])
    assert code == 0
    assert "one run per side decides nothing" in out.splitlines()[2]
    assert "interval unknown (too few runs)" in out


def test_a_change_off_the_critical_path_is_named_as_such(figures, runs, capsys):
    d = diff_runs(figures["base"][:5], figures["side"])
    assert not d.failed
    side = next(c for c in d.ranks[0].families if c.name == "family:side")
    assert side.delta > 0 and side.on_path is False
    task = next(c for c in d.ranks[0].tasks if c.name == "task:side#0")
    assert task.on_path is False and task.delta > 0
    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["side"])
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.split()[-1:] and " side#0 " in ln)
    assert line.endswith("off the critical path: it did not set the new makespan")


def test_a_threshold_can_gate_a_family(figures):
    d = diff_runs(figures["base"][:5], figures["side"],
                  thresholds=Thresholds(rules=[("family:*", 50.0)]))
    assert [c.name for _, c in d.regressions] == ["family:side"]
    assert Thresholds(rules=[("family:*", 50.0), ("family:side", 900.0)]).pct(
        "family:side") == 900.0


def test_json_follows_the_schema_and_markdown_opens_with_the_decision(runs, capsys, tmp_path):
    import jsonschema
    from repo_paths import REPO_ROOT

    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"], "--format",
                        "json")
    doc = json.loads(out)
    schema = json.loads((REPO_ROOT / "docs" / "diff.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert code == 1 and doc["failed"] and doc["regressions"] == [
        {"rank": "r0", "figure": "makespan"}]
    fam = doc["ranks"][0]["families"][0]
    assert fam["family"] == "branch" and fam["on_critical_path"] is True
    assert fam["tasks"] == [8, 8]
    _, md, _ = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"], "--format",
                    "markdown")
    assert md.startswith("### PyPTO run comparison: regression\n\nREGRESSION: r0 makespan")
    assert "| family `branch` |" in md


@pytest.mark.parametrize("flag, words", [
    ("--fail-above=x", "'x' is not a number"),
    ("--fail-above==5", "no figure before '='"),
    ("--fail-above=family:*=-1", "must be a finite number >= 0"),
])
def test_bad_thresholds_are_one_line(runs, capsys, flag, words):
    with pytest.raises(SystemExit) as e:
        profile_main(["diff", runs["base"][0], runs["base"][1], flag])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_a_parquet_dataset_is_refused_with_the_reason(runs, capsys, tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "slices.parquet").write_bytes(b"PAR1")
    code, _, err = _cli(capsys, runs["base"][0], ds)
    assert code == 2
    assert err.strip().endswith("holds no dependency records, so its critical path cannot "
                                "be compared: give the work dir or capture it was merged "
                                "from")


def test_html_shows_both_sides_with_their_change(runs, capsys, tmp_path):
    page = tmp_path / "compare.html"
    code = profile_main(["html", *runs["base"][:5], "--", *runs["more_work"], "-o", str(page)])
    assert code == 0
    text = page.read_text()
    assert "REGRESSION: r0 makespan worse by more than the threshold" in text
    assert "<script" not in text and "Content-Security-Policy" in text
    assert text.count("<svg") == 3            # makespan, the path, the families
    assert ">branch</text>" in text and "; REGRESSION</text>" in text
    assert "script-src 'none'" in text and "unsafe-inline' ;" not in text
    _check_tables(text, tables=1)              # the tasks that changed most


def _check_tables(text: str, tables: int) -> list[tuple[str, str]]:
    """Each table of a comparison page: one unit per time column, no empty column; -> each
    table's body and the "N more" line under it ("" when none)."""
    found = re.findall(r"<table>(.*?)</table>\s*(<p>\d+ more [^<]+<code>[^<]+</code>[^<]+</p>)?",
                       text, re.DOTALL)
    assert len(found) == tables
    for body, _more in found:
        heads = re.findall(r"<th>([^<]*)</th>", body)
        assert all(heads), heads
        rows = [re.findall(r"<td>([^<]*)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", body)]
        rows = [r for r in rows if r]
        for col in range(1, 4):               # base, new, change: one unit each
            assert len({r[col].split()[-1] for r in rows}) == 1, [r[col] for r in rows]
        assert all(r[4] for r in rows)
    return found


def test_the_pages_compile_table_shows_the_largest_changes_either_way_and_counts_the_rest(
        figures):
    """15 stages, 7 slower and 8 faster (by 1 us to 15 ms): the 10 largest changes either way
    in one unit per column, and "5 more stages" under them."""
    from pypto.compile_profiling.profile_data.model import Profile, Stage
    from pypto.compile_profiling.profile_tool.compare_html import compare_html
    from pypto.compile_profiling.profile_tool.diff import diff_profiles

    def profile(sign: int) -> Profile:
        stages, t = [], 0
        for i in range(15):
            d = 20_000_000 + sign * (1 if i % 2 else -1) * 1000 * 2 ** i // 2
            stages.append(Stage(f"s{i:02d}", t, t + d))
            t += d
        return Profile("p", stages, t)

    d = diff_runs(figures["base"][:5], figures["more_work"])
    d.compile = diff_profiles([profile(-1)] * 3, [profile(1)] * 3)
    text = compare_html(d)
    body, more = _check_tables(text, tables=2)[1]
    shown = re.findall(r"<tr><td>(s\d+)</td>", body)
    assert sorted(shown) == [f"s{i:02d}" for i in range(5, 15)]      # the 10 largest, either way
    assert "s14" in shown and "s13" in shown                          # a decrease and an increase
    assert more.startswith("<p>5 more stages: ")


def test_html_compares_whole_runs_only(runs, capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code = profile_main(["html", runs["base"][0], "--", str(empty), "-o",
                         str(tmp_path / "x.html")])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"{empty}: no device capture here")
    assert not (tmp_path / "x.html").exists()


def test_records_under_the_older_name_are_a_whole_run(runs, tmp_path):
    """`l2_swimlane_records.json`, the name older Simpler wrote and the merge reads: its run
    is compared as a whole run, with the same figures as under today's name."""
    import shutil

    older = tmp_path / "older"
    shutil.copytree(runs["base"][0], older)
    for records in older.glob("dfx_outputs/**/chip_swimlane_records.json"):
        records.rename(records.with_name("l2_swimlane_records.json"))
    assert not list(older.glob("**/chip_swimlane_records.json"))
    got, want = load_run_figures(older), load_run_figures(runs["base"][0])
    assert [r.makespan_ns for r in got.ranks] == [r.makespan_ns for r in want.ranks] != []
    code = profile_main(["diff", runs["base"][1], "--", str(older), "-o",
                         str(tmp_path / "d.txt")])
    assert code == 0
    assert "r0: device makespan" in (tmp_path / "d.txt").read_text()


# ------------------------------------------------------------------ the gate fails closed

def _copy_runs(runs: list[str], dest) -> list:
    import shutil

    out = []
    for i, r in enumerate(runs):
        d = dest / f"run{i}"
        shutil.copytree(r, d)
        out.append(d)
    return out


def test_a_run_without_its_capture_is_refused_not_passed(runs, capsys, tmp_path):
    """Five new runs, one of them without dfx_outputs/ but with a compile profile: the
    device gate cannot compare it, so the comparison fails closed (exit 2, one line naming
    the run), never "0 regressions"."""
    import shutil

    new = _copy_runs(runs["more_work"], tmp_path)
    shutil.rmtree(new[2] / "dfx_outputs")
    (new[2] / "report").mkdir(exist_ok=True)           # a compile profile: still a run
    (new[2] / "report" / "pipeline_profile.json").write_text(json.dumps(
        {"schema_version": 1, "total_seconds": 0.5, "stages": [
            {"name": "compile", "seconds": 0.5, "start_ns": 0, "end_ns": 500_000_000,
             "children": []}]}))
    for argv in ([*runs["base"][:5], "--", *new], [*runs["base"][:5], "--", tmp_path]):
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "run2: no device capture (dfx_outputs/)" in err
    # the comparison page says the same, and is not written
    page = tmp_path / "page.html"
    assert profile_main(["html", *runs["base"][:5], "--", *map(str, new), "-o",
                         str(page)]) == 2
    assert "run2: no device capture" in capsys.readouterr().err
    assert not page.exists()


@pytest.mark.parametrize("pattern", ["path:compute_AIV=10", "bogus=0", "family:nope*=5"])
def test_a_gate_pattern_that_names_no_figure_is_refused(runs, capsys, pattern):
    code, out, err = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"],
                          "--fail-above", pattern)
    name = pattern.rpartition("=")[0]
    assert code == 2 and out == ""
    assert err.startswith(f"pypto-profile: --fail-above {name}: names no figure")


def test_top_0_lists_every_changed_task_and_a_task_gate_is_always_evaluated(runs, capsys):
    """`--top 0` is all: the JSON holds every changed task (more than 10). A `task:` gate
    on a task outside the `--top` shown is still evaluated: a gate of 0 % on every branch
    task fails the comparison although `--top 1` shows one task."""
    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"], "--top", "0",
                        "--format", "json")
    (rank,) = json.loads(out)["ranks"]
    assert len(rank["tasks"]) > 10
    code, out, _ = _cli(capsys, *runs["base"][:5], "--", *runs["more_work"], "--top", "1",
                        "--fail-above", "makespan=1000", "--fail-above", "task:branch#*=0",
                        "--format", "json")
    doc = json.loads(out)
    (rank,) = doc["ranks"]
    assert len(rank["tasks"]) == 1 and code == 1
    gated = [g for g in doc["regressions"] if g["figure"].startswith("task:branch#")]
    assert len(gated) > 1


def test_a_second_separator_is_refused(runs, capsys):
    code, out, err = _cli(capsys, runs["base"][0], "--", runs["base"][1], "--",
                          runs["base"][2])
    assert code == 2 and out == "" and "diff takes one `--`" in err


def test_a_parquet_dataset_among_a_directory_of_runs_is_refused_not_skipped(runs, capsys,
                                                                             tmp_path):
    new = _copy_runs(runs["more_work"], tmp_path / "new")
    shutil_dataset = tmp_path / "new" / "merged"
    shutil_dataset.mkdir()
    (shutil_dataset / "tasks.parquet").write_bytes(b"PAR1")
    code, out, err = _cli(capsys, *runs["base"][:5], "--", tmp_path / "new")
    assert code == 2 and out == "" and "merged: a Parquet dataset" in err
    assert len(new) == 5


# ------------------------------------------------------------------ the gate's rules by hand

def _figs(makespans: list[float], label: str = "r0") -> list[RunFigures]:
    """Runs of one rank with only a makespan (ns): what the makespan gate reads."""
    return [RunFigures(f"run{i}", None, [RankFigures(label, m, None, None, {}, {}, {}, {},
                                                      {}, {}, {})])
            for i, m in enumerate(makespans)]


def _gate(base, new, pct):
    d = diff_runs(_figs(base), _figs(new), thresholds=Thresholds(makespan_pct=pct))
    return d.ranks[0].makespan


def test_the_gate_compares_the_intervals_lower_end_with_the_threshold_of_the_base():
    """5 runs of 100 ns against 5 of 120: every pairwise change is +20, so the interval is
    +20 .. +20. The floor is the threshold's percent of the *base* median (100): 15 % and
    18 % (floors 15, 18) fail; 20 % (floor 20: 'more than', not 'at least') passes, and so
    would 18 % of the new median (21.6)."""
    c = _gate([100.0] * 5, [120.0] * 5, 15)
    assert (c.lower, c.upper, c.regression) == (20.0, 20.0, True)
    assert _gate([100.0] * 5, [120.0] * 5, 18).regression
    assert not _gate([100.0] * 5, [120.0] * 5, 20).regression
    # two of five new runs slower by 40: the change is 0 .. +40, its lower end 0 is below
    # any floor, so the gate passes although the upper end is far above it
    c = _gate([100.0] * 5, [100.0, 100.0, 100.0, 140.0, 140.0], 15)
    assert (c.lower, c.upper, c.regression) == (0.0, 40.0, False)


def test_on_the_critical_path_means_in_most_new_runs():
    from pypto.compile_profiling.profile_tool.run_diff import Change

    assert Change("task:x#0", [], [], on_path_runs=(3, 5)).on_path is True
    assert Change("task:x#0", [], [], on_path_runs=(2, 4)).on_path is False   # half: not most
    assert Change("task:x#0", [], [], on_path_runs=(0, 5)).on_path is False


def test_the_path_figures_are_per_engine_sums_in_ns_of_a_real_capture():
    """rank_figures of a real capture: the path's compute per engine adds every path task
    of that engine, its stall parts are the analysis's cycles in ns, and a family's core
    time adds its blocks (an SPMD task's 48), not its task's span."""
    from simpler_fixtures import FIXTURES

    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.profile_tool.run_figures import rank_figures

    for case in ("hbg_bgemm_l4_depgen", "tmr_spmd_paged_attention_b1_s128_l4_depgen"):
        (r,) = analyze([FIXTURES / case], with_overhead=False).ranks
        f = rank_figures(r)
        ns = 1e9 / r.freq_hz
        obs = r.observed
        compute = sum(v for k, v in f.path.items() if k.startswith("compute "))
        assert compute == pytest.approx(obs.compute_total * ns, rel=1e-12)
        for part, cycles in obs.stall_by_part().items():
            assert f.path[f"stall {part}"] == pytest.approx(cycles * ns, rel=1e-12)
        tt = r.tasks
        blocks = float((tt.row_end - tt.row_start).sum()) * ns
        assert sum(f.family_core_ns.values()) == pytest.approx(blocks, rel=1e-12)
    assert int(tt.blocks.sum()) == 48 and blocks > float((tt.end - tt.start).sum()) * ns


def test_the_verdict_is_decided_on_each_sides_median_run(runs):
    """Of three runs given in any order, only the one whose makespan is the middle one
    carries a verdict (the others are left undecided, their replays saved)."""
    from pypto.compile_profiling.profile_tool.run_figures import load_runs_figures

    figs = load_runs_figures(runs["base"][:3])
    spans = [f.ranks[0].makespan_ns for f in figs]
    middle = sorted(range(3), key=lambda i: (spans[i], i))[1]
    assert [f.ranks[0].verdict is not None for f in figs] == [i == middle for i in range(3)]
