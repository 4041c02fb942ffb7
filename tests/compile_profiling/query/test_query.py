"""`pypto-profile query` / `aggregate`: SQL over a run's tables, and every preset against the
command that computes the same thing (kernels by device time == `pypto-profile kernels`,
slowest stages == `pypto-profile show`), on a real run of the 64-kernel example and on the
real Simpler captures; the same answers from a Parquet dataset as from the inputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from example_runs import run_many_kernels
from merge_inputs import CASES, FIXTURES
from repo_paths import REPO_ROOT as ROOT

from pypto.about import python_command
from pypto.compile_profiling.cli.profile import main
from pypto.compile_profiling.profile_data.load import load_profile
from pypto.compile_profiling.profile_data.model import walk
from pypto.compile_profiling.profile_data.view import slowest_stages
from pypto.compile_profiling.query.aggregate import aggregate, find_runs
from pypto.compile_profiling.query.run import run_preset, run_query
from pypto.compile_profiling.query.tables import open_run
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.errors import QueryError


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    """A run() work dir of the 64-kernel example: report/ and dfx_outputs/ at level 4."""
    return run_many_kernels(tmp_path_factory.mktemp("run") / "many_kernels")


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _kernels_command(capsys, path) -> dict:
    code, out, _ = cli(capsys, "kernels", path, "--format", "json")
    assert code == 0
    return {k["kernel"]: k for k in json.loads(out)["kernels"] if k["tasks"] is not None}


def _assert_kernels_agree(preset: list[dict], command: dict) -> None:
    assert sorted(r["kernel"] for r in preset) == sorted(command)
    totals = [r["device_total_us"] for r in preset]      # slowest first, as the command
    assert totals == sorted(totals, reverse=True)
    for r in preset:
        want = command[r["kernel"]]
        assert (r["tasks"], r["runs"], r["core_type"]) == (
            want["tasks"], want["executions"], want["core_type"])
        for key in ("device_total_us", "device_mean_us", "device_max_us"):
            assert r[key] == pytest.approx(want[key], rel=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_kernels_preset_equals_the_kernels_command_on_every_capture(case, capsys):
    con = open_run([FIXTURES / case])
    preset = run_preset(con, "kernels").records()
    command = _kernels_command(capsys, FIXTURES / case)
    assert preset or not command
    _assert_kernels_agree(preset, command)


def test_kernels_preset_on_a_work_dir_and_its_parquet_dataset(work_dir, tmp_path, capsys):
    command = _kernels_command(capsys, work_dir)
    assert len(command) == 64
    _assert_kernels_agree(run_preset(open_run([work_dir]), "kernels").records(), command)
    write_timeline(merge_traces([str(work_dir)]).timeline, tmp_path / "run.parquet")
    code, out, _ = cli(capsys, "query", "--preset", "kernels", tmp_path / "run.parquet",
                       "--format", "json")
    assert code == 0
    _assert_kernels_agree(json.loads(out), command)


def test_slowest_stages_preset_equals_show(work_dir):
    profile = load_profile(work_dir)
    want = [(s.path, s.self_ns, s.stage.duration_ns) for s in slowest_stages(profile.stages, 40)]
    got = run_preset(open_run([work_dir]), "slowest-stages", limit=40).records()
    assert [(r["path"], r["self_ns"], round(r["total_ms"] * 1e6)) for r in got] == want
    assert any(p.startswith("compile/codegen/kernel_codegen:") for p, _, _ in want)


def test_idle_gaps_preset_equals_the_kernel_bars(capsys):
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    tl = merge_traces([str(case)]).timeline
    block = next(b for b in tl.blocks if b.cat == "aicore")
    core = {c.key: c for c in block.args}["core_id"].values
    want = {}
    for c in np.unique(core).tolist():
        s = block.start_ns[core == c]
        e = s + block.dur_ns[core == c]
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
        run_end = np.maximum.accumulate(e)
        gaps = s[1:] - run_end[:-1]
        gaps = gaps[gaps > 0]
        want[c] = (len(gaps), int(gaps.sum()), int(gaps.max()) if len(gaps) else 0)
    got = run_preset(open_run([case]), "idle-gaps").records()
    assert {int(r["core"].split("_")[1]): (r["gaps"], round(r["idle_us"] * 1e3),
                                           round(r["largest_gap_us"] * 1e3)) for r in got} == want


def test_sql_over_the_tables(capsys):
    case = FIXTURES / "hbg_vector_example_l4_depgen"
    code, out, _ = cli(capsys, "query", "select count(*) as n from slice where category = "
                       "'aicore'", case, "--format", "csv")
    assert code == 0 and out == "n\n4\n"
    con = open_run([case])
    tl = merge_traces([str(case)]).timeline
    (n,), = run_query(con, "select count(*) from flow f join slice a on a.id = f.slice_out "
                      "join slice b on b.id = f.slice_in").rows
    assert n == tl.flow_count
    code, out, _ = cli(capsys, "query", "select name, depth from slice order by ts limit 2",
                       case)
    assert code == 0 and out.splitlines()[0].split() == ["name", "depth"]


def test_an_sql_error_is_one_line_with_duckdbs_message_and_exit_2(capsys):
    code, out, err = cli(capsys, "query", "select nope from slice",
                         FIXTURES / "hbg_vector_example_l4_depgen")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "SQL error" in lines[0] and '"nope" not found' in lines[0]
    with pytest.raises(QueryError):
        run_query(open_run([FIXTURES / "hbg_vector_example_l4_depgen"]), "selec 1")


def test_presets_are_listed_and_an_unknown_one_is_refused(capsys):
    code, out, _ = cli(capsys, "query", "--preset", "list")
    assert code == 0
    assert [ln.split()[0] for ln in out.splitlines()] == ["kernels", "makespan", "idle-gaps",
                                                         "slowest-stages"]
    code, _, err = cli(capsys, "query", "--preset", "nope", FIXTURES / CASES[0])
    assert code == 2 and "unknown preset" in err


def test_a_missing_extra_is_one_line_naming_the_pip_command(tmp_path):
    code = ("import sys; sys.modules['duckdb'] = None; "
            "from pypto.compile_profiling.cli.profile import main; "
            f"sys.exit(main(['query', 'select 1', {str(FIXTURES / CASES[0])!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"pypto-profile: duckdb not installed: {python_command()} -m pip install -e '.[scale]'"]


def test_aggregate_over_a_tree_agrees_with_each_profile(work_dir, tmp_path, capsys):
    tree = tmp_path / "runs"
    shutil.copytree(work_dir / "report", tree / "a" / "report")
    shutil.copytree(work_dir / "report", tree / "nested" / "b" / "report")
    doc = json.loads((work_dir / "report" / "trace.json").read_text())
    for ev in doc["traceEvents"]:
        if ev.get("name") == "golden_write":     # a third run: one stage half as long
            ev["dur"] = round(ev["dur"] / 2, 3)
    (tree / "nested" / "c").mkdir(parents=True)
    (tree / "nested" / "c" / "trace.json").write_text(json.dumps(doc))
    runs = find_runs([tree])
    assert [p.relative_to(tree).as_posix() for p in runs] == ["a", "nested/b", "nested/c"]
    result, n = aggregate([tree])
    assert n == 3
    rows = {(r["kind"], r["name"]): r for r in result.records()}
    want: dict = {}
    for r in runs:
        paths: dict = {}
        for st, _, parent in walk(load_profile(r).stages):
            paths[id(st)] = f"{paths[id(parent)]}/{st.name}" if parent is not None else st.name
            want.setdefault(paths[id(st)], []).append(st.duration_ns)
    stage_rows = {name: r for (kind, name), r in rows.items() if kind in ("stage", "pass")}
    assert set(stage_rows) == set(want)
    for path, durations in want.items():
        r = stage_rows[path]
        assert r["count"] == len(durations)
        assert r["total_ms"] == pytest.approx(sum(durations) / 1e6, rel=1e-9, abs=1e-6)
        assert r["max_ms"] == pytest.approx(max(durations) / 1e6, rel=1e-9, abs=1e-6)
        assert r["p50_ms"] == pytest.approx(np.percentile(durations, 50) / 1e6, rel=1e-9,
                                            abs=1e-6)
        assert r["p95_ms"] == pytest.approx(np.percentile(durations, 95) / 1e6, rel=1e-9,
                                            abs=1e-6)
    assert rows[("pass", "compile/passes/ConstantFolding")]["count"] == 3
    totals = [r["total_ms"] for r in result.records()]
    assert totals == sorted(totals, reverse=True)


def test_aggregate_counts_kernels_across_runs(work_dir, tmp_path, capsys):
    command = _kernels_command(capsys, work_dir)
    result, n = aggregate([work_dir, work_dir])
    assert n == 2
    kernels = {r["name"]: r for r in result.records() if r["kind"] == "kernel"}
    assert set(kernels) == set(command)
    for name, k in kernels.items():
        assert k["count"] == 2 * command[name]["executions"] and k["runs"] == 2
        assert k["total_ms"] == pytest.approx(2 * command[name]["device_total_us"] / 1e3,
                                              rel=1e-9)
    code, out, err = cli(capsys, "aggregate", work_dir, "--limit", "3")
    assert code == 0 and len(out.splitlines()) == 4 and "1 run(s)" in err


def test_aggregate_text_fits_a_terminal_and_a_file_keeps_whole_names(work_dir, tmp_path,
                                                                      capsys):
    """Stage paths are long (`compile/codegen/kernel_codegen:k/kernel_executable`): on the
    terminal the name column is shortened from the left to fit 100 columns, and says so;
    `-o FILE` and CSV keep the whole names."""
    code, out, err = cli(capsys, "aggregate", work_dir)
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 100
    assert any(x.split()[1].startswith("…") for x in lines[1:])
    assert "names shortened from the left" in err
    code, csv_out, _ = cli(capsys, "aggregate", work_dir, "--format", "csv")
    names = [r.split(",")[1] for r in csv_out.splitlines()[1:]]
    shown = [x.split()[1] for x in lines[1:]]
    assert len(names) == len(shown)
    for name, s in zip(names, shown):          # the end of every name is kept
        assert name == s or (s.startswith("…") and name.endswith(s[1:])), (name, s)
    assert cli(capsys, "aggregate", work_dir, "-o", str(tmp_path / "t.txt"))[0] == 0
    whole = (tmp_path / "t.txt").read_text()
    assert "…" not in whole and all(n in whole for n in names)


def test_a_search_stays_on_its_file_system_says_so_and_reports_progress(monkeypatch):
    """/dev searched for runs: the file systems mounted under it (/dev/shm, /dev/pts) are
    named as skipped, not entered; with PROGRESS_S at 0 every directory is reported."""
    import os

    from pypto.compile_profiling.query import aggregate as agg
    from pypto.errors import TraceInputError

    mounts = [d for d in ("/dev/shm", "/dev/pts", "/dev/mqueue")
              if os.path.isdir(d) and os.stat(d).st_dev != os.stat("/dev").st_dev]
    if not mounts:
        pytest.skip("no file system mounted under /dev here")
    monkeypatch.setattr(agg, "PROGRESS_S", 0.0)
    said, search = [], agg.Search()
    with pytest.raises(TraceInputError, match="no runs here"):
        agg.find_runs(["/dev"], progress=said.append, search=search)
    assert set(mounts) <= set(search.other_fs)
    assert not any(d.startswith(tuple(m + "/" for m in mounts)) for d in said)
    assert len(said) == search.directories and said[0].startswith("searching for runs: 1 ")
    (line,) = [x for x in search.skipped_lines() if "another file system" in x]
    assert line.startswith(f"skipped {len(search.other_fs)} director")


def test_a_run_in_a_tree_that_cannot_be_read_is_skipped_and_named(work_dir, tmp_path,
                                                                   capsys):
    """`aggregate /` meets somebody's damaged run: the others still count, the damaged one is
    named with its reason; given by name, the same run is refused (exit 2, one line)."""
    tree = tmp_path / "runs"
    shutil.copytree(work_dir / "report", tree / "a" / "report")
    bad = tree / "b" / "trace.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"traceEvents": [')
    code, out, err = cli(capsys, "aggregate", tree)
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == "note: skipped 1 run found in a tree that cannot be read:", lines
    assert lines[1].startswith(f"  {bad}: truncated JSON")
    assert lines[2] == "note: 1 run(s)"
    assert "compile/passes/ConstantFolding" in out
    code, out, err = cli(capsys, "aggregate", bad)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith(f"{bad}: truncated JSON")
    (tree / "a" / "report" / "trace.json").write_text("{")
    for p in (tree / "a" / "report").iterdir():
        if p.name != "trace.json":
            p.unlink()
    code, out, err = cli(capsys, "aggregate", tree)
    assert code == 2 and "none of the runs found here can be read" in err, err


def test_a_search_follows_no_symlinked_directory(tmp_path):
    from pypto.compile_profiling.query.aggregate import Search, find_runs

    real = tmp_path / "elsewhere" / "work"
    shutil.copytree(FIXTURES / "tmr_vector_example_l4_depgen", real)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link").symlink_to(real, target_is_directory=True)
    shutil.copytree(FIXTURES / "tmr_vector_example_l1", tree / "mine")
    search = Search()
    assert find_runs([tree], search=search) == [tree / "mine"]


@pytest.mark.parametrize("raised", ["interrupt", "runtime", "invalid_input"])
def test_ctrl_c_inside_aggregates_duckdb_reads_ends_with_130(work_dir, monkeypatch, capsys,
                                                            raised):
    """Ctrl-C while DuckDB reads a run comes out as DuckDB's own error; `aggregate` ends
    with 130 and one line, as `query` does, never a traceback."""
    import duckdb

    from pypto.compile_profiling.query import tables

    error = {"interrupt": duckdb.InterruptException("INTERRUPT Error: Interrupted!"),
             "runtime": RuntimeError("Query interrupted"),
             "invalid_input": duckdb.InvalidInputException(
                 "Invalid Input Error: Python exception occurred: KeyboardInterrupt")}[raised]

    def open_run(paths):
        raise error

    monkeypatch.setattr(tables, "open_run", open_run)
    code, out, err = cli(capsys, "aggregate", work_dir)
    assert code == 130 and out == ""
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err


def test_a_run_under_a_path_that_is_not_utf8_is_queried_and_drawn(work_dir, tmp_path,
                                                                   capsys):
    """A directory name with a byte that is not UTF-8: Python holds it as a lone surrogate,
    which Arrow and a UTF-8 file cannot store; it is shown as U+FFFD, and every command
    works (as analyze, kernels, merge and diff did)."""
    import os
    import shutil

    odd = os.path.join(os.fsencode(tmp_path), b"run\xff")
    shutil.copytree(work_dir, os.fsdecode(odd))
    path = os.fsdecode(odd)
    code, out, err = cli(capsys, "query", "--preset", "kernels", path)
    assert code == 0 and "Traceback" not in err and out.strip()
    code, out, err = cli(capsys, "query", "select directory from capture", path)
    assert code == 0 and "run\ufffd" in out
    page = tmp_path / "page.html"
    code, _, err = cli(capsys, "html", path, "-o", str(page))
    assert code == 0 and "run\ufffd" in page.read_text(encoding="utf-8")
