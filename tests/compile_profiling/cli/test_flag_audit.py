"""No flag is silently ignored: every flag of both commands, in each mode it can be given in,
is honoured (the output changes), refused with one line naming it (exit 2), or named in the
output as not applying. A flag that changes nothing and says nothing is the defect."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from example_runs import run_many_kernels

PROFILE = [sys.executable, "-m", "pypto.compile_profiling"]
MERGE = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two profiled runs (host_build_graph: calibrated captures), level 4, dep_gen."""
    base = tmp_path_factory.mktemp("audit")
    return (run_many_kernels(base / "a", runtime="host_build_graph"),
            run_many_kernels(base / "b", runtime="host_build_graph"))


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str, bytes]:
    """(exit status, stdout, stderr, the output file `out.*` if one was written)."""
    for old in cwd.glob("out.*"):
        old.unlink()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300,
                       check=False)
    outs = sorted(cwd.glob("out.*"))
    return r.returncode, r.stdout, r.stderr, outs[0].read_bytes() if outs else b""


def inputs(a: Path) -> list[str]:
    return [str(a / "report" / "trace.json"), str(a / "dfx_outputs")]


# (case, argv builder (a, b) -> argv without the flag, the flag, what it must do)
#   honoured: exit 0 and stdout, stderr or the output differ from the run without the flag
#   refused:  exit 2, one stderr line that names the flag, nothing written
#   named:    exit 0 and a warning line naming the flag and "not applied"
CASES = [
    ("merge -o: --views", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--views", "none"], "honoured"),
    ("merge -o: --flows", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--flows", "none"], "honoured"),
    ("merge -o: --format", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--format", "perfetto"], "honoured"),
    ("merge -o: --kernels", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--kernels"], "honoured"),
    ("merge -o -q: --kernels", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json", "-q"],
     ["--kernels"], "honoured"),
    ("merge -o: -q", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"], ["-q"], "honoured"),
    ("merge -o: -v", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"], ["-v"], "honoured"),
    ("merge -o: --offset-us (calibrated)", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--offset-us", "500"], "named"),
    ("merge -o: --align start (one host)", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--align", "start"], "named"),
    ("merge -o: --port", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--port", "9100"], "refused"),
    ("merge -o: --offline", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--offline"], "refused"),
    ("merge -o: --no-browser", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--no-browser"], "refused"),
    ("merge -o: --scheduler", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--scheduler", "tcp://127.0.0.1:1"], "refused"),
    ("merge -o: --workers", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--workers", "2"], "refused"),
    ("merge -o: --merge-shards", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--merge-shards"], "refused"),
    ("merge -o -: --open", lambda a, b: [*MERGE, *inputs(a), "-o", "-"], ["--open"], "refused"),
    ("merge --per-rank: --kernels", lambda a, b: [*MERGE, *inputs(a), "--per-rank", "out.d"],
     ["--kernels"], "refused"),
    ("merge --per-rank: --format", lambda a, b: [*MERGE, *inputs(a), "--per-rank", "out.d"],
     ["--format", "json"], "refused"),
    ("merge --per-rank: --open", lambda a, b: [*MERGE, *inputs(a), "--per-rank", "out.d"],
     ["--open"], "refused"),
    ("merge --per-rank: --workers with --scheduler",
     lambda a, b: [*MERGE, *inputs(a), "--per-rank", "out.d", "--scheduler",
                   "tcp://127.0.0.1:1"], ["--workers", "2"], "refused"),
    ("show: --top", lambda a, b: [*PROFILE, "show", str(a)], ["--top", "3"], "honoured"),
    ("show: --expand", lambda a, b: [*PROFILE, "show", str(a)], ["--expand"], "honoured"),
    ("show: --json", lambda a, b: [*PROFILE, "show", str(a)], ["--json"], "honoured"),
    ("show --json: --top", lambda a, b: [*PROFILE, "show", str(a), "--json"],
     ["--top", "3"], "honoured"),
    ("show --json: --expand", lambda a, b: [*PROFILE, "show", str(a), "--json"],
     ["--expand"], "honoured"),
    ("analyze: --top", lambda a, b: [*PROFILE, "analyze", str(a / "dfx_outputs")],
     ["--top", "2"], "honoured"),
    ("analyze: --format", lambda a, b: [*PROFILE, "analyze", str(a / "dfx_outputs")],
     ["--format", "markdown"], "honoured"),
    ("analyze --format json: --top",
     lambda a, b: [*PROFILE, "analyze", str(a / "dfx_outputs"), "--format", "json"],
     ["--top", "2"], "refused"),
    ("kernels: --format", lambda a, b: [*PROFILE, "kernels", str(a)], ["--format", "csv"],
     "honoured"),
    ("diff: --min-ms", lambda a, b: [*PROFILE, "diff", str(a), "--", str(b)],
     ["--min-ms", "1000"], "honoured"),
    ("diff: --format", lambda a, b: [*PROFILE, "diff", str(a), "--", str(b)],
     ["--format", "json"], "honoured"),
    ("diff (whole runs): --fail-above", lambda a, b: [*PROFILE, "diff", str(a), "--", str(b)],
     ["--fail-above", "1000"], "honoured"),
    ("diff (whole runs): --top", lambda a, b: [*PROFILE, "diff", str(a), "--", str(b)],
     ["--top", "1"], "honoured"),
    ("diff (compile profiles): --fail-above",
     lambda a, b: [*PROFILE, "diff", str(a / "report"), "--", str(b / "report")],
     ["--fail-above", "10"], "refused"),
    ("merge -o: --analyze", lambda a, b: [*MERGE, *inputs(a), "-o", "out.json"],
     ["--analyze", "report.txt"], "honoured"),
    ("merge --per-rank: --analyze", lambda a, b: [*MERGE, *inputs(a), "--per-rank", "out.d"],
     ["--analyze", "report.txt"], "refused"),
    ("merge --compare: --analyze",
     lambda a, b: [*MERGE, "--compare", str(a), str(b), "-o", "out.json"],
     ["--analyze", "report.txt"], "refused"),
    ("merge --compare: --align", lambda a, b: [*MERGE, "--compare", str(a), str(b), "-o",
                                                "out.json"], ["--align", "compile"], "honoured"),
    ("whatif: --cores", lambda a, b: [*PROFILE, "whatif", str(a)], ["--cores", "AIV=2"],
     "honoured"),
    ("whatif: --faster", lambda a, b: [*PROFILE, "whatif", str(a)], ["--faster", "step=2"],
     "honoured"),
    ("whatif: --sched-latency", lambda a, b: [*PROFILE, "whatif", str(a)],
     ["--sched-latency", "0"], "honoured"),
    ("whatif: --no-deps", lambda a, b: [*PROFILE, "whatif", str(a)], ["--no-deps"], "honoured"),
    ("whatif: --format", lambda a, b: [*PROFILE, "whatif", str(a)], ["--format", "json"],
     "honoured"),
    ("open: --port without --offline",       # not fetched: exit 1 either way
     lambda a, b: [*PROFILE, "open", str(a / "report" / "trace.json"), "--no-browser",
                   "--timeout", "0.1"], ["--port", "9100"], "honoured"),
]


@pytest.mark.parametrize("case, argv, flag, must", CASES, ids=[c[0] for c in CASES])
def test_every_flag_is_honoured_refused_or_named(runs, tmp_path, case, argv, flag, must):
    a, b = runs
    with_flag = cli([*argv(a, b), *flag], tmp_path)
    code, _, err, written = with_flag
    name = flag[0]
    if must == "refused":
        lines = err.strip().splitlines()
        assert code == 2, (case, code, err)
        assert name in lines[-1] and "Traceback" not in err, (case, err)
        assert not written and not list(tmp_path.glob("out*")), case
        return
    if must == "named":
        assert code == 0, (case, code, err)
        said = " ".join(err.split())          # a long warning is wrapped to fit a terminal
        assert re.search(rf"{re.escape(name)} {flag[1]}:? not applied", said), (case, err)
        return
    without = cli(argv(a, b), tmp_path)
    assert code == without[0] and code in (0, 1), (case, code, err)
    assert with_flag[1:] != without[1:], f"{case}: {name} changed nothing and said nothing"
