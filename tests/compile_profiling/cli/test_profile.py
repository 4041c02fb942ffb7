"""`pypto-profile show/diff/html/kernels` on real profiles of the reference pipeline.

The profiles come from one `run()` of the 64-kernel example (swimlane level 4, dep_gen) and
one `ir.compile(profiling=True)`; every command reads them as a user would point at them:
work dir, report dir, pipeline_profile.json, trace.json, gzip-compressed copies.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from example_runs import run_many_kernels
from repo_paths import REPO_ROOT as ROOT

import examples.vector_dag as vdag
from pypto import ir
from pypto.compile_profiling.cli.profile import main
from pypto.compile_profiling.profile_data.load import load_profile
from pypto.compile_profiling.profile_data.model import walk
from pypto.compile_profiling.report import PROFILE_SCHEMA_VERSION


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    """A run() work dir of the 64-kernel example: report/ and dfx_outputs/ at level 4."""
    return run_many_kernels(tmp_path_factory.mktemp("run") / "many_kernels")


@pytest.fixture(scope="module")
def compile_dir(tmp_path_factory) -> Path:
    """An ir.compile(profiling=True) output dir (report/ only, no device)."""
    d = tmp_path_factory.mktemp("compile")
    ir.compile(vdag.VectorDAG, output_dir=str(d), profiling=True)
    return d


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- show

def test_show_folds_the_64_kernels_and_accounts_for_every_nanosecond(work_dir, capsys):
    code, out, _ = cli(capsys, "show", work_dir, "--json", "--top", "3")
    assert code == 0
    view = json.loads(out)
    rows = {r["key"]: r for r in view["rows"]}
    family = rows["compile/codegen/kernel_codegen:*"]
    assert family["count"] == 64 and family["max_ms"] >= family["mean_ms"] > 0
    assert not any(k.startswith("compile/codegen/kernel_codegen:step_") for k in rows)
    # top-level self times + children, and the unaccounted rest, add up to the total
    top = [r for r in view["rows"] if r["depth"] == 1]
    assert [r["label"] for r in top] == ["compile", "golden_write", "device_execution"]
    assert sum(r["total_ms"] for r in top) + view["unaccounted_ms"] == pytest.approx(
        view["total_ms"], abs=1e-3)
    for r in view["rows"]:
        assert 0 <= r["self_ms"] <= r["total_ms"] + 1e-9
    codegen = rows["compile/codegen"]
    assert codegen["self_ms"] < codegen["total_ms"]  # the pool's kernels are not its own time
    assert len(view["slowest_by_self_time"]) == 3
    selfs = [s["self_ms"] for s in view["slowest_by_self_time"]]
    assert selfs == sorted(selfs, reverse=True)


def test_show_text_has_self_column_family_row_unaccounted_and_top_list(work_dir, capsys):
    code, out, _ = cli(capsys, "show", work_dir / "report", "--top", "2")
    assert code == 0
    assert re.search(r"^      kernel_codegen:\* x64 +\S+  \( *[0-9.]+%\)  self +\S+  mean \S+  "
                     r"max \S+$", out, re.MULTILINE), out
    assert re.search(r"^  \(unaccounted\) ", out, re.MULTILINE)
    assert re.search(r"^  compile +\S+  \( *[0-9.]+%\)  self ", out, re.MULTILINE)
    assert "Slowest 2 stages by self time:" in out


def test_show_expand_lists_each_family_member(work_dir, capsys):
    code, out, _ = cli(capsys, "show", work_dir, "--expand", "--top", "0")
    assert code == 0
    members = re.findall(r"^        kernel_codegen:step_\d+ ", out, re.MULTILINE)
    assert len(members) == 64


def test_every_kind_of_path_gives_the_same_tree(work_dir, tmp_path, capsys):
    report = work_dir / "report"
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress((report / "trace.json").read_bytes()))
    views = []
    for path in (work_dir, report, report / "pipeline_profile.json", report / "trace.json", gz):
        code, out, _ = cli(capsys, "show", path, "--json")
        assert code == 0
        views.append([(r["key"], r["count"], round(r["total_ms"], 3))
                      for r in json.loads(out)["rows"]])
    assert all(v == views[0] for v in views[1:])


def test_ir_compile_profile_shows_its_unaccounted_time(compile_dir, capsys):
    code, out, _ = cli(capsys, "show", compile_dir, "--json")
    assert code == 0
    view = json.loads(out)
    assert [r["label"] for r in view["rows"] if r["depth"] == 1] == ["passes", "codegen"]
    assert view["unaccounted_ms"] > 0


def test_show_writes_gzip_json_output(work_dir, tmp_path, capsys):
    out_file = tmp_path / "view.json.gz"
    code, out, _ = cli(capsys, "show", work_dir, "--json", "-o", out_file)
    assert code == 0 and out == ""
    assert json.loads(gzip.decompress(out_file.read_bytes()))["rows"]


# ---------------------------------------------------------------- diff

def slowed(profile_json: Path, out: Path, stage: str, factor: float) -> Path:
    """A copy of a real pipeline_profile.json in which `stage` took `factor` times longer."""
    doc = json.loads(profile_json.read_text())
    growth = _grow(doc["stages"], stage, factor)
    assert growth > 0, f"{stage} not found"
    doc["total_seconds"] += growth / 1e9
    out.write_text(json.dumps(doc))
    return out


def _grow(stages: list, name: str, factor: float) -> int:
    """Make the first stage called `name` `factor` times longer; later siblings and every
    ancestor's end move by the same amount. Returns the growth in ns."""
    for i, st in enumerate(stages):
        if st["name"] == name:
            grow = round((st["end_ns"] - st["start_ns"]) * (factor - 1))
        else:
            grow = _grow(st["children"], name, factor)
        if grow:
            st["end_ns"] += grow
            st["seconds"] = (st["end_ns"] - st["start_ns"]) / 1e9
            for later in stages[i + 1:]:
                _shift(later, grow)
            return grow
    return 0


def _shift(stage: dict, ns: int) -> None:
    stage["start_ns"] += ns
    stage["end_ns"] += ns
    for c in stage["children"]:
        _shift(c, ns)


def test_diff_of_one_run_per_side_decides_nothing_and_says_so(work_dir, tmp_path, capsys):
    base = work_dir / "report" / "pipeline_profile.json"
    new = slowed(base, tmp_path / "new.json", "ConstantFolding", 3.0)
    code, out, _ = cli(capsys, "diff", base, new)
    assert code == 0 and "REGRESSION" not in out
    assert "no regression decided: 1 base and 1 new run(s) cannot tell a change from noise " \
           "at 99% confidence; give at least 5 runs per side" in " ".join(out.split())
    assert max(map(len, out.splitlines())) <= 100        # wrapped under a hanging indent
    code, out, _ = cli(capsys, "diff", base, new, "--format", "json")
    doc = json.loads(out)
    assert doc["regressions"] == [] and "compile/passes/ConstantFolding" in doc["undecided"]
    assert doc["min_runs_per_side"] == 5


def test_diff_of_runs_of_the_same_profile_finds_nothing(work_dir, capsys):
    trace = work_dir / "report" / "trace.json"
    code, out, _ = cli(capsys, "diff", *[work_dir / "report"] * 5, "--", *[trace] * 5)
    assert code == 0
    assert out.splitlines()[3].startswith("0 regression(s) (slower, with 99% confidence, by "
                                          "more than 10% and 1 ms)")


def test_diff_flags_a_slowed_pass_and_exits_1(work_dir, tmp_path, capsys):
    base = work_dir / "report" / "pipeline_profile.json"
    new = slowed(base, tmp_path / "new.json", "ConstantFolding", 3.0)
    code, out, _ = cli(capsys, "diff", *[base] * 5, "--", *[new] * 5)
    assert code == 1
    flagged = [ln for ln in out.splitlines() if "REGRESSION" in ln]
    assert flagged and flagged[0].endswith("compile/passes/ConstantFolding  REGRESSION")
    # its parent grew by as much, a smaller share of it: listed right below
    lines = out.splitlines()
    i = lines.index(flagged[0])
    assert lines[i + 1].split()[0] == flagged[0].split()[0]
    assert lines[i + 1].split()[5] == "compile/passes"
    # the same change below the threshold passes
    code, _, _ = cli(capsys, "diff", *[base] * 5, "--", *[new] * 5, "--threshold", "500")
    assert code == 0


def test_diff_min_ms_keeps_small_changes_from_failing(work_dir, tmp_path, capsys):
    base = work_dir / "report" / "pipeline_profile.json"
    new = slowed(base, tmp_path / "new.json", "ConstantFolding", 3.0)
    grown_ms = json.loads(new.read_text())["total_seconds"] * 1e3 - \
        json.loads(base.read_text())["total_seconds"] * 1e3
    code, _, _ = cli(capsys, "diff", *[base] * 5, "--", *[new] * 5,
                     "--min-ms", f"{grown_ms * 1.1:.3f}")
    assert code == 0


def test_diff_json_and_markdown(work_dir, tmp_path, capsys):
    base = work_dir / "report" / "pipeline_profile.json"
    new = slowed(base, tmp_path / "new.json", "ConstantFolding", 3.0)
    sides = (*[base] * 5, "--", *[new] * 5)
    code, out, _ = cli(capsys, "diff", *sides, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert "compile/passes/ConstantFolding" in doc["regressions"] and doc["undecided"] == []
    change = next(s for s in doc["stages"] if s["key"] == "compile/passes/ConstantFolding")
    assert change["change_pct"] == pytest.approx(200, rel=0.01)
    # identical runs on each side: the bound is the change itself
    assert change["at_least_ms"] == pytest.approx(change["delta_ms"])
    assert change["floor_ms"] == pytest.approx(max(1.0, change["base_ms"] * 0.1))
    code, out, _ = cli(capsys, "diff", *sides, "--format", "markdown")
    assert code == 1
    assert out.startswith("### Compile profile: ") and "regression" in out.splitlines()[0]
    assert "| `compile/passes/ConstantFolding` |" in out and "|---|" in out


def test_diff_lists_new_and_vanished_stages(work_dir, compile_dir, capsys):
    code, out, _ = cli(capsys, "diff", compile_dir, work_dir / "report", "--format", "json")
    doc = json.loads(out)
    status = {s["key"]: s["status"] for s in doc["stages"]}
    assert status["compile"] == "new" and status["passes"] == "vanished"
    assert code == 0  # new stages are listed, not regressions


def test_diff_one_noisy_run_on_either_side_decides_nothing(work_dir, tmp_path, capsys):
    base = work_dir / "report" / "pipeline_profile.json"
    noisy = slowed(base, tmp_path / "noisy.json", "ConstantFolding", 5.0)
    code, _, _ = cli(capsys, "diff", *[base] * 4, noisy, "--", *[base] * 5)
    assert code == 0
    code, _, _ = cli(capsys, "diff", *[base] * 5, "--", *[noisy] * 4, base)
    assert code == 0   # 4 of 5 slower: at 99% "at least" is 0
    code, _, _ = cli(capsys, "diff", *[base] * 5, "--", *[noisy] * 5)
    assert code == 1
    # directories of runs work the same way
    runs = tmp_path / "runs"
    for i in range(5):
        (runs / f"run{i}").mkdir(parents=True)
        (runs / f"run{i}" / "pipeline_profile.json").write_bytes(noisy.read_bytes())
    code, out, _ = cli(capsys, "diff", *[base] * 5, "--", runs)
    assert code == 1 and "median of 5 runs" in out


# ---------------------------------------------------------------- kernels

def test_kernels_joins_codegen_with_device_time_for_all_64(work_dir, capsys):
    code, out, _ = cli(capsys, "kernels", work_dir, "--format", "json")
    assert code == 0
    rows = json.loads(out)["kernels"]
    assert len(rows) == 64 and {r["kernel"] for r in rows} == {f"step_{i}" for i in range(64)}
    records = json.loads((work_dir / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    freq = records["metadata"]["clock_freq_hz"]
    device_us = sum((r[4] - r[3]) / freq * 1e6 for r in records["aicore_tasks"])
    assert sum(r["device_total_us"] for r in rows) == pytest.approx(device_us, rel=1e-9)
    totals = [r["device_total_us"] for r in rows]
    assert totals == sorted(totals, reverse=True)
    profile = json.loads((work_dir / "report" / "pipeline_profile.json").read_text())
    codegen = {}

    def walk(stages):
        for st in stages:
            if st["name"].startswith("kernel_codegen:"):
                codegen[st["name"].split(":", 1)[1]] = st["seconds"] * 1e3
            walk(st["children"])

    walk(profile["stages"])
    for r in rows:
        assert r["tasks"] == 1 and r["core_type"] == "aiv"
        assert r["codegen_ms"] == pytest.approx(codegen[r["kernel"]], abs=1e-3)
        assert r["device_mean_us"] == pytest.approx(r["device_total_us"] / r["executions"])
        # the row adds up: its codegen time is its self time plus its nested stages
        assert set(r["nested_stages"]) == {"kernel_source", "kernel_executable"}
        assert 0 < r["self_ms"] < r["codegen_ms"]
        assert r["self_ms"] + sum(r["nested_stages"].values()) == pytest.approx(
            r["codegen_ms"], abs=1e-6)


def test_kernels_text_markdown_and_csv(work_dir, capsys):
    code, out, _ = cli(capsys, "kernels", work_dir)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["kernel", "codegen", "ms", "self", "ms", "tasks",
                                              "core", "device", "total", "us", "mean", "us",
                                              "max", "us"]
    assert len(lines) == 66 and max(map(len, lines)) <= 100
    assert lines[-1] == ("codegen ms = self ms + nested stages (kernel_source, "
                         "kernel_executable); each: --format csv/json")
    step_0 = next(ln.split() for ln in lines if ln.startswith("step_0 "))
    assert float(step_0[1]) > float(step_0[2]) > 0          # codegen ms > self ms
    code, out, _ = cli(capsys, "kernels", work_dir, "--format", "markdown")
    assert out.startswith("| kernel |") and out.splitlines()[1].startswith("|---")
    code, out, _ = cli(capsys, "kernels", work_dir, "--format", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert len(table) == 64 and float(table[0]["device_total_us"]) > 0


def test_kernels_needs_a_work_dir_with_device_outputs(compile_dir, capsys):
    code, _, err = cli(capsys, "kernels", compile_dir)
    assert code == 2
    assert one_error_line(err).startswith(f"{compile_dir}: no dfx_outputs/")


# ---------------------------------------------------------------- html (the page's drawing is
# checked in headless Chromium in tests/compile_profiling/profile_tool/test_html_ui.py)

def test_html_is_one_self_contained_page(work_dir, tmp_path, capsys):
    page = tmp_path / "profile.html"
    code, _, _ = cli(capsys, "html", work_dir, "-o", page)
    assert code == 0
    text = page.read_text()
    assert "default-src 'none'" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    # one box per stage: 16 stages + 64 kernels with their 2 steps each, and any first-call
    # import stages
    stages = [st for st, _, _ in walk(load_profile(work_dir).stages)]
    assert len([st for st in stages if not st.name.startswith("import:")]) == 16 + 64 * 3
    assert text.count('class="stage"') == len(stages)
    assert 'id="kernels"' in text and 'id="summary"' in text
    # the run explained: the answer opens the page, the figures follow the tables, as
    # `analyze` finds them
    from pypto.compile_profiling.analysis import analyze

    (rank,) = analyze([work_dir]).ranks
    assert 'id="analysis"' in text and "tiling exact" in text
    answer, figures = text.index('id="answer"'), text.index('id="analysis"')
    assert answer < text.index('id="run"') < text.index('id="summary"') < figures
    assert f"<b>r0: {rank.verdict.kind}" in text[answer:figures]
    # the whole run on one clock: the compile, each engine, the critical path; then the
    # device part alone, zoomed; every id once
    at = text.index('<svg id="run-picture"')
    run_svg = text[at:text.index("</svg>", at)]
    assert ">compile<" in run_svg and ">r0 AIV (" in run_svg and ">r0 critical path<" in run_svg
    at = text.index('<svg id="device-picture"')
    device_svg = text[at:text.index("</svg>", at)]
    assert ">compile<" not in device_svg and ">r0 critical path<" in device_svg
    assert text.index('id="run"') < text.index('id="device"') < text.index('id="compile"')
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), sorted(ids)
    # round ticks in one unit on each axis ("0 ms", "50 ms", ...)
    for svg in (run_svg, device_svg):
        ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', svg)
        values, units = zip(*(t.split() for t in ticks))
        assert len(ticks) >= 3 and float(values[0]) == 0 and len(set(units)) == 1, ticks
        (step,) = {round(float(b) - float(a), 6) for a, b in itertools.pairwise(values)}
        assert step / 10 ** math.floor(math.log10(step)) in (1, 2, 5)
    # long tables: the first 20 rows, the rest folded
    kernels = text[text.index('id="kernels"'):]
    assert "<summary>44 more kernels</summary>" in kernels


def test_html_of_a_capture_directory_alone_is_the_device_half(work_dir, tmp_path, capsys):
    page = tmp_path / "device.html"
    code, _, err = cli(capsys, "html", work_dir / "dfx_outputs", "-o", page)
    assert code == 0 and "no compile profile here" in err
    text = page.read_text()
    assert text.index('id="answer"') < text.index('id="run"') < text.index('id="analysis"')
    assert 'id="stage-data"' not in text and ">compile<" not in text
    assert ">r0 critical path<" in text


def test_the_run_picture_draws_as_many_shapes_for_a_big_capture_as_for_a_small_one():
    """Its shapes are bounded by its columns, not by the run: per engine at most one per
    column, the critical path one per covered run of columns."""
    from simpler_fixtures import FIXTURES

    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.profile_tool.run_picture import COLUMNS, run_svg

    run = analyze([FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"])
    svg = run_svg([], run.ranks)
    (r,) = run.ranks
    engines = len(r.tasks.core_types)
    assert svg.count("<rect") <= COLUMNS * (engines + 1)
    assert len(r.tasks) == 1000 and f">{r.label} critical path<" in svg


# ---------------------------------------------------------------- errors and the command

@pytest.mark.parametrize("make, problem", [
    (lambda d: d / "missing.json", "no such file or directory"),
    (lambda d: d, "no pipeline_profile.json or trace.json"),
    (lambda d: (d / "x.json").write_text("{") and d / "x.json", "truncated JSON"),
    (lambda d: (d / "x.json").write_text("[1, 2]") and d / "x.json", "expected an object"),
    (lambda d: (d / "x.json").write_text('{"a": 1}') and d / "x.json", "not a compile profile"),
    (lambda d: (d / "x.json").write_text(
        '{"total_seconds": 1, "stages": [{"name": "a", "seconds": NaN}]}') and d / "x.json",
     "stages[0].seconds: expected a finite number"),
    (lambda d: (d / "x.json.gz").write_bytes(b"\x1f\x8bnot gzip") and d / "x.json.gz",
     "invalid gzip data"),
    (lambda d: (d / "m.pftrace").write_bytes(b"\x0a\x02\xe2\x01") and d / "m.pftrace",
     "a Perfetto protobuf trace"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, make, problem):
    path = make(tmp_path)
    code, out, err = cli(capsys, "show", path)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith(f"{path}: ") and problem in line


def test_a_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "pipeline_profile.json"
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "show", fifo)
    assert code == 2 and one_error_line(err) == (
        f"{fifo}: is a FIFO (named pipe), expected a regular file or a directory")


def test_output_that_is_an_input_is_refused(work_dir, tmp_path, capsys):
    src = tmp_path / "p.json"
    src.write_bytes((work_dir / "report" / "pipeline_profile.json").read_bytes())
    before = src.read_bytes()
    code, _, err = cli(capsys, "show", src, "--json", "-o", src)
    assert code == 2 and "is one of the inputs" in one_error_line(err)
    assert src.read_bytes() == before


@pytest.mark.parametrize("target", ["report/trace.json", "report/pipeline_profile.txt",
                                    "dfx_outputs/deps.json"])
def test_output_over_a_file_of_the_input_work_dir_is_refused(work_dir, capsys, target):
    victim = work_dir / target
    before = victim.read_bytes()
    code, _, err = cli(capsys, "show", work_dir, "-o", victim)
    assert code == 2 and "is one of the inputs" in one_error_line(err)
    assert victim.read_bytes() == before


@pytest.mark.parametrize("name", ["p.png", "profile", "page.json", "p.html.txt"])
def test_html_refuses_an_output_that_is_not_an_html_name(work_dir, tmp_path, capsys, name):
    code, out, err = cli(capsys, "html", work_dir, "-o", tmp_path / name)
    assert code == 2 and out == "" and list(tmp_path.iterdir()) == []
    assert one_error_line(err) == (f"{tmp_path / name}: html writes an HTML page; name the "
                                   "output .html or .htm (.html.gz to compress), or - for "
                                   "stdout")


@pytest.mark.parametrize("name", ["p.html", "P.HTM", "p.html.gz"])
def test_html_takes_html_names_and_stdout(work_dir, tmp_path, capsys, name):
    code, _, err = cli(capsys, "html", work_dir, "-o", tmp_path / name)
    data = (tmp_path / name).read_bytes()
    assert code == 0 and (gzip.decompress(data) if name.endswith(".gz") else data).startswith(
        b"<!DOCTYPE html>")
    # it says where the page went, as every command writing a file does
    assert err.splitlines()[-1] == f"wrote {tmp_path / name} ({len(data):,} bytes)"
    code, out, err = cli(capsys, "html", work_dir, "-o", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and "wrote" not in err


def test_every_command_writing_a_file_says_so(work_dir, tmp_path, capsys):
    for argv in (["analyze", work_dir], ["kernels", work_dir], ["show", work_dir]):
        out = tmp_path / f"{argv[0]}.txt"
        code, stdout, err = cli(capsys, *argv, "-o", out)
        assert code == 0 and stdout == "", argv
        assert err.splitlines()[-1] == f"wrote {out} ({out.stat().st_size:,} bytes)", argv


def test_show_of_a_merged_trace_says_what_it_leaves_out(work_dir, tmp_path, capsys):
    from pypto.compile_profiling.timeline import write_timeline
    from pypto.compile_profiling.trace_merge import merge_traces

    merged = tmp_path / "merged.json"
    write_timeline(merge_traces([work_dir / "report" / "trace.json",
                                 work_dir / "dfx_outputs"]).timeline, merged)
    code, out, _ = cli(capsys, "show", merged)
    assert code == 0 and out.splitlines()[4].lstrip().startswith("compile")
    (note,) = [line for line in out.splitlines() if line.startswith("(a merged trace")]
    assert note.startswith("(a merged trace: only its compile stages are shown; ")
    assert "Device r0 · AICore" in note and f"pypto-profile open {merged}" in note
    code, out, _ = cli(capsys, "show", merged, "--json")
    others = json.loads(out)["other_slices"]
    assert any(name.startswith("Device r0 · AICore") for name in others)
    assert all(n > 0 for n in others.values())
    # the compile trace alone has nothing left out
    code, out, _ = cli(capsys, "show", work_dir / "report" / "trace.json")
    assert "merged trace" not in out
    code, out, _ = cli(capsys, "show", work_dir / "report" / "trace.json", "--json")
    assert "other_slices" not in json.loads(out)


def test_write_failures_exit_1_and_refused_outputs_2(work_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    show = [sys.executable, "-m", "pypto.compile_profiling", "show", str(work_dir)]
    with open("/dev/full", "w") as full:
        r = subprocess.run(show, stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                           timeout=60, check=False)
    assert r.returncode == 1
    assert r.stderr == "stdout: cannot write: No space left on device\n"
    r = subprocess.run(show, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=env, timeout=60, check=False, close_fds=True,
                       preexec_fn=lambda: os.close(1))
    assert (r.returncode, r.stderr) == (1, "stdout: cannot write: standard output is closed\n")
    r = subprocess.run([*show, "-o", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    assert r.returncode == 2 and r.stderr.endswith("exists and is not a regular file; not "
                                                   "replaced\n")


@pytest.mark.parametrize("command", [
    ["show", "{w}"], ["diff", "{w}", "{w}"], ["kernels", "{w}"], ["analyze", "{w}"],
    ["query", "select name from slice", "{w}"], ["html", "{w}", "-o", "-"],
])
def test_a_reader_that_went_away_ends_it_quietly_with_141(work_dir, command):
    """Issue 22: `pypto-profile show ... | head -c 100` as `pypto-merge-traces -o - | head`
    does (one shared `cli.stdout`): status 141 as for a tool stopped by SIGPIPE, nothing on
    stderr. The pipe's read end is closed before the command starts, so every write fails
    with EPIPE whatever the output's size."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "pypto.compile_profiling",
                               *(a.format(w=work_dir) for a in command)],
                              stdout=w, stderr=subprocess.PIPE, text=True, env=env,
                              timeout=120, check=False)
    finally:
        os.close(w)
    assert (proc.returncode, proc.stderr) == (141, ""), proc.stderr


def test_help_of_every_command_loads_no_numpy_or_merge():
    """`--help` answers before anything heavy is imported: NumPy, msgspec, protobuf and the
    merge load only when a command runs (importing NumPy alone took ~0.2 s of 0.35 s)."""
    code = ("import sys\n"
            "from pypto.compile_profiling.cli.profile import main\n"
            "for cmd in ([], ['show'], ['diff'], ['html'], ['open'], ['kernels'], ['analyze']):\n"
            "    try:\n"
            "        main([*cmd, '--help'])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "heavy = ('numpy', 'msgspec', 'google.protobuf', 'perfetto', 'http.server',\n"
            "         'pypto.compile_profiling.trace_merge', 'pypto.compile_profiling.timeline')\n"
            "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60, check=False)
    assert r.returncode == 0 and r.stderr.strip().splitlines()[-1] == "[]", r.stderr


def test_version_help_and_module_entry_point():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "--version"],
                       capture_output=True, text=True, check=False, env=env, timeout=60)
    assert r.returncode == 0
    assert re.fullmatch(r"pypto-profile \d+\.\d+\.\d+\+profiling \(.*not the PyPTO framework.*\)\n",
                        r.stdout)
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "--help"],
                       capture_output=True, text=True, check=False, env=env, timeout=60)
    assert r.returncode == 0
    for command in ("show", "diff", "html", "open", "kernels"):
        assert command in r.stdout
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "show"],
                       capture_output=True, text=True, check=False, env=env, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_schema_version_and_json_schema_match(work_dir):
    doc = json.loads((work_dir / "report" / "pipeline_profile.json").read_text())
    assert doc["schema_version"] == PROFILE_SCHEMA_VERSION
    schema = json.loads((ROOT / "docs" / "pipeline_profile.schema.json").read_text())
    assert schema["properties"]["schema_version"]["const"] == PROFILE_SCHEMA_VERSION
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, schema)


def test_loaded_profile_keeps_the_work_dir(work_dir):
    assert load_profile(work_dir).work_dir == str(work_dir)
    assert load_profile(work_dir / "report").work_dir == str(work_dir)
    assert load_profile(work_dir / "report" / "trace.json").work_dir == str(work_dir)


def test_kernels_from_any_file_of_the_work_dir_report(work_dir, capsys):
    outs = [cli(capsys, "kernels", p, "--format", "csv")
            for p in (work_dir, work_dir / "report" / "pipeline_profile.json")]
    assert outs[0][0] == outs[1][0] == 0 and outs[0][1] == outs[1][1]


def test_kernels_on_simpler_outputs_alone_gives_the_device_side(capsys):
    from merge_inputs import FIXTURES

    capture = FIXTURES / "tmr_mixed_example_case1_l4_depgen"
    code, out, err = cli(capsys, "kernels", capture, "--format", "json")
    assert code == 0 and "device costs only" in err
    rows = {r["kernel"]: r for r in json.loads(out)["kernels"]}
    records = json.loads((capture / "chip_swimlane_records.json").read_text())
    freq = records["metadata"]["clock_freq_hz"]
    aic = [r for r in records["aicore_tasks"] if records["metadata"]["core_types"][r[0]] == "aic"]
    matmul = rows["MATMUL"]
    assert matmul["core_type"] == "aic" and matmul["codegen_ms"] is None
    assert matmul["tasks"] == len({r[1] for r in aic})
    assert matmul["device_total_us"] == pytest.approx(sum(r[4] - r[3] for r in aic) / freq * 1e6)


def test_kernels_on_a_directory_without_outputs_is_one_line(tmp_path, capsys):
    code, _, err = cli(capsys, "kernels", tmp_path)
    assert code == 2 and one_error_line(err).startswith(f"{tmp_path}: no report/ or dfx_outputs/")


def test_the_profiling_variable_does_not_profile_the_tool_itself(work_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_COMPILE_PROFILING="1")
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "show", str(work_dir)],
                       capture_output=True, text=True, check=False, env=env, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_html_escapes_hostile_stage_names_and_args(tmp_path, capsys):
    evil = "</script><script>alert(1)</script><b>"
    doc = {"schema_version": 1, "total_seconds": 0.002, "stages": [
        {"name": evil, "seconds": 0.001, "start_ns": 1000, "end_ns": 1_001_000, "pid": 1,
         "tid": 1, "thread_name": evil, "cat": "user", "args": {"x": evil, "n": "NAN"},
         "children": []}]}
    src = tmp_path / "pipeline_profile.json"
    src.write_text(json.dumps(doc).replace('"NAN"', "NaN"))  # json (not orjson) accepts NaN
    page = tmp_path / "p.html"
    assert cli(capsys, "html", src, "-o", page)[0] == 0
    text = page.read_text()
    assert "<script>alert" not in text and "<b>" not in text
    assert text.count("<script") == 2  # the stage data and the page's own script
    data = text.split('id="stage-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)[0]["args"] == {"x": evil, "n": "nan"}  # strict JSON for the page


def test_a_bug_exits_70_never_1_which_diff_means_as_a_regression(monkeypatch, capsys):
    """An unexpected exception inside a command is a bug: its traceback, one line saying
    so, and exit 70 (EX_SOFTWARE); a CI gate reading exit 1 as "a regression" never sees
    a crash as one."""
    from pypto.compile_profiling.cli import profile

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(profile.COMMANDS["diff"], "run", broken)
    assert main(["diff", "a", "--", "b"]) == 70
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err
    assert err.rstrip().splitlines()[-1].startswith("pypto-profile: internal error")


def test_diff_of_a_whole_run_against_a_profile_alone_fails_closed(work_dir, compile_dir,
                                                                  capsys):
    """A work dir with a device capture against a compile profile: the device gate cannot
    compare them, so the diff refuses (exit 2, one line naming the path without a capture
    and how to compare the compile stages alone), never passes on the compile stages."""
    code, out, err = cli(capsys, "diff", compile_dir, work_dir)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"{compile_dir}: no device capture") and "report/ dirs" in err


def test_a_commands_usage_mistake_prints_that_commands_usage(capsys):
    assert main(["diff", "only-one"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: pypto-profile diff ")
    assert err.rstrip().splitlines()[-1].startswith("pypto-profile diff: error: diff takes")


@pytest.mark.parametrize("where", ["seconds", "total_seconds"])
def test_a_time_no_profile_can_hold_is_one_line_not_a_300_digit_total(work_dir, tmp_path,
                                                                      capsys, where):
    doc = json.loads((work_dir / "report" / "pipeline_profile.json").read_text())
    if where == "seconds":
        doc["stages"][0]["seconds"] = 1e294
    else:
        doc["total_seconds"] = 1e294
    bad = tmp_path / "pipeline_profile.json"
    bad.write_text(json.dumps(doc))
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{bad}: ") and "beyond 1e+09" in err
