"""Hostile use of `pypto-profile`'s commands and of the directories the merge writes: nothing
lost, nothing reached, every bad input one line.

- outputs onto inputs: every command that writes a file, pointed at each of its input files
  directly, through a symlink and through a hard link: exit 2, one line, every input byte
  unchanged, no temp file left;
- output directories (a Parquet dataset, a `--per-rank` output) holding a file we did not
  write: refused, the file still there; a stale staging directory of a killed run on this
  host removed and named, another host's left alone;
- SQL that reaches outside the run (read a file, write one, install or load an extension,
  attach a database, change a setting): one line, exit 2, and nothing written outside;
- a query that runs long: Ctrl-C stops it within a second (130), `--timeout` too (124); a
  result of millions of rows streams (bounded memory, a cut pipe is 141);
- damaged datasets (truncated, a table missing, a wrong schema, somebody else's Parquet, a
  file its manifest lists gone): one line naming the file, exit 2, no traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_processes import stop
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from merge_inputs import FIXTURES
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.cli.profile import main as profile_main

CASE = "tmr_vector_example_l4_depgen"
PROFILE = [sys.executable, "-m", "pypto.compile_profiling"]
# a query DuckDB works at for minutes, in one task of its join (it polls for Ctrl-C only
# between tasks)
LONG_SQL = ("select count(*) from range(300000) a, range(300000) b "
            "where (a.range * 7919 + b.range) % 1000003 = 17")


def digest(root: Path) -> dict[str, str]:
    """Every file under `root` (or `root` itself) by path: its SHA-256."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def leftovers(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if ".pypto-tmp-" in p.name
                  or ".pypto-stage-" in p.name)


@pytest.fixture
def capture(tmp_path) -> Path:
    cap = tmp_path / "cap"
    shutil.copytree(FIXTURES / CASE, cap)
    return cap


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ds") / "tables"
    assert merge_main([str(FIXTURES / CASE), "-o", str(d), "--format", "parquet", "-q"]) == 0
    return d


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    err = [x for x in err if not x.startswith(("warning: ", "note: "))]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ------------------------------------------------------------------ outputs onto inputs

COMMANDS = {
    "analyze": lambda inp: ["analyze", inp],
    "analyze json": lambda inp: ["analyze", inp, "--format", "json"],
    "query": lambda inp: ["query", "select 1 as x", inp],
    "aggregate": lambda inp: ["aggregate", inp],
}


@pytest.mark.parametrize("how", ["direct", "symlink", "hardlink"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("victim", ["deps.json", "chip_swimlane_records.json",
                                    "host_log.txt"])
def test_an_output_onto_an_input_is_refused(capture, tmp_path, capsys, command, how, victim):
    before = digest(capture)
    target = capture / victim
    out = {"direct": target, "symlink": tmp_path / "link.out",
           "hardlink": tmp_path / "hard.out"}[how]
    if how == "symlink":
        out.symlink_to(target)
    elif how == "hardlink":
        os.link(target, out)
    assert profile_main([*COMMANDS[command](str(capture)), "-o", str(out)]) == 2
    line = one_line(capsys)
    assert line.startswith(str(out)) and ("refusing to overwrite" in line or
                                          "not overwritten" in line), line
    assert digest(capture) == before
    assert leftovers(tmp_path) == []


def test_kernels_and_html_refuse_their_work_dirs_files(tmp_path, capsys):
    from example_runs import run_many_kernels

    work = run_many_kernels(tmp_path / "work")
    before = digest(work)
    for args in (["kernels", str(work)], ["html", str(work)], ["show", str(work)]):
        for victim in ("report/pipeline_profile.json", "dfx_outputs/chip_swimlane_records.json"):
            assert profile_main([*args, "-o", str(work / victim)]) == 2, (args, victim)
            one_line(capsys)
    assert digest(work) == before


def test_a_query_onto_a_file_of_its_dataset_is_refused(dataset, capsys):
    before = digest(dataset)
    part = next(dataset.glob("slice/*/*.parquet"))
    assert profile_main(["query", "select 1 as x", str(dataset), "-o", str(part)]) == 2
    assert one_line(capsys) == f"{part}: is one of the inputs: refusing to overwrite it"
    assert digest(dataset) == before


# ------------------------------------------------------------------ output directories

@pytest.mark.parametrize("format_", ["parquet"])
def test_a_dataset_directory_with_a_foreign_file_is_not_replaced(capture, tmp_path, capsys,
                                                                  format_):
    out = tmp_path / "ds"
    assert merge_main([str(capture), "-o", str(out), "--format", format_, "-q"]) == 0
    # written again: it is ours, every file in its manifest
    assert merge_main([str(capture), "-o", str(out), "--format", format_, "-q"]) == 0
    capsys.readouterr()
    (out / "NOTES.txt").write_text("mine")
    shutil.copytree(capture, out / "the capture")
    before = digest(out)
    assert merge_main([str(capture), "-o", str(out), "--format", format_, "-q"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"{out}: holds NOTES.txt and ") and "did not write" in line
    assert digest(out) == before


def test_the_capture_directory_itself_is_never_an_output_directory(capture, capsys):
    before = digest(capture)
    assert merge_main([str(capture), "-o", str(capture), "--format", "parquet", "-q"]) == 2
    assert "not replaced" in one_line(capsys)
    assert digest(capture) == before


def test_stale_staging_of_a_killed_run_is_removed_and_named(capture, tmp_path, capsys):
    out = tmp_path / "ds"
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    mine = tmp_path / f".ds.pypto-stage-{host}-{dead}-0a1b2c3d"
    old = tmp_path / f".ds.pypto-old-{host}-{dead}-0a1b2c3d"
    theirs = tmp_path / f".ds.pypto-stage-another-host-{dead}-0a1b2c3d"
    alive = tmp_path / f".ds.pypto-stage-{host}-{os.getpid()}-0a1b2c3d"
    for d in (mine, old, theirs, alive):
        (d / "slice").mkdir(parents=True)
    assert merge_main([str(capture), "-o", str(out), "--format", "parquet", "-q"]) == 0
    err = capsys.readouterr().err
    assert not mine.exists() and not old.exists()
    assert theirs.exists() and alive.exists()       # not provably a gone writer's of ours
    assert f"warning: removed {mine}, left by an interrupted run (pid {dead}, gone)" in err


# ------------------------------------------------------------------ SQL stays in the run

@pytest.mark.parametrize("sql, written", [
    ("select * from read_text('/etc/hostname')", None),
    ("select * from read_csv('/etc/passwd')", None),
    ("select * from glob('/etc/*')", None),
    ("copy (select 1) to '{tmp}/copied.csv'", "copied.csv"),
    ("export database '{tmp}/exported'", "exported"),
    ("attach '{tmp}/other.db' as o", "other.db"),
    ("install httpfs", None),
    ("load httpfs", None),
    ("set enable_external_access = true", None),
    ("select * from '{part}'", None),
])
def test_sql_that_reaches_outside_the_run_is_one_line(dataset, tmp_path, capsys, sql,
                                                       written):
    part = next(dataset.glob("slice/*/*.parquet")).resolve()
    sql = sql.format(tmp=tmp_path, part=str(part).replace("slice", "SLICE"))
    assert profile_main(["query", sql, str(dataset)]) == 2
    line = one_line(capsys)
    assert line.startswith("pypto-profile: SQL "), line
    if written:
        assert not (tmp_path / written).exists()


def test_the_run_s_own_tables_still_read_after_the_lock(dataset, capture, capsys):
    assert profile_main(["query", "select count(*) as n from slice", str(dataset)]) == 0
    assert capsys.readouterr().out.split() == ["n", "48"]
    assert profile_main(["query", "select count(*) as n from slice", str(capture)]) == 0
    assert capsys.readouterr().out.split() == ["n", "48"]


# ------------------------------------------------------------------ stopping and streaming

def _start_query(*args) -> subprocess.Popen:
    # a new session: its own process group gets the SIGINT, as a terminal's Ctrl-C
    return subprocess.Popen([*PROFILE, "query", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime


def test_ctrl_c_stops_a_running_query_within_a_second(dataset):
    proc = _start_query(LONG_SQL, str(dataset))
    try:
        deadline = time.monotonic() + 60
        while _cpu_seconds(proc.pid) < 2.0:       # start-up is ~0.5 s: DuckDB is joining
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=30)
        took = time.monotonic() - t0
        err = proc.stderr.read()
    finally:
        stop(proc)
    assert (code, err) == (130, "interrupted\n")
    assert took < 1.0, took


def test_timeout_stops_a_query(dataset, capsys):
    t0 = time.monotonic()
    assert profile_main(["query", LONG_SQL, str(dataset), "--timeout", "0.5"]) == 124
    assert time.monotonic() - t0 < 30
    assert one_line(capsys) == ("pypto-profile: the query ran longer than --timeout 0.5 s: "
                                "stopped")


def test_a_reader_that_stops_early_ends_a_big_result_with_141(dataset):
    proc = subprocess.Popen([*PROFILE, "query", "select range from range(3000000)",
                             str(dataset)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        proc.stdout.readline()
        proc.stdout.close()           # as `| head -1` does
        code = proc.wait(timeout=60)
        err = proc.stderr.read()
    finally:
        stop(proc)
    assert (code, err) == (141, b"")


def test_a_full_device_on_stdout_is_one_line(dataset):
    with open("/dev/full", "w") as full:
        r = subprocess.run([*PROFILE, "query", "select range from range(100000)",
                            str(dataset)], cwd=REPO, stdout=full, stderr=subprocess.PIPE,
                           text=True, check=False)
    assert (r.returncode, r.stderr) == (1, "stdout: cannot write: No space left on device\n")


def test_a_big_result_streams_in_bounded_memory(dataset, tmp_path):
    """10 M rows of CSV (about 150 MB of text): the peak RSS stays near the process's own
    size, far below the result's (about 1.1 GB as Python tuples)."""
    code = ("import resource, sys; from pypto.compile_profiling.cli.profile import main; "
            "c = main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "
            "file=sys.stderr); sys.exit(c)")
    out = tmp_path / "big.csv"
    r = subprocess.run([sys.executable, "-c", code, "query",
                        "select range, range * 2 as twice from range(10000000)",
                        str(dataset), "--format", "csv", "-o", str(out)], cwd=REPO,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    peak_mb = int(r.stderr.strip().splitlines()[-1])
    assert out.stat().st_size > 150_000_000
    assert peak_mb < 400, peak_mb
    with open(out) as f:
        assert f.readline() == "range,twice\n" and f.readline() == "0,0\n"


# ------------------------------------------------------------------ damaged datasets

def _damage(dataset: Path, tmp_path: Path, how: str) -> tuple[Path, Path]:
    d = tmp_path / "damaged"
    shutil.copytree(dataset, d)
    part = next(d.glob("flow/*/*.parquet"))
    if how == "truncated":
        part.write_bytes(part.read_bytes()[:200])
    elif how == "not parquet":
        part.write_text("hello")
    elif how == "a table missing":
        shutil.rmtree(d / "kernel")
        return d, d
    elif how == "somebody else's parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"a": [1, 2]}), part)
    elif how == "a wrong column type":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.ParquetFile(part).read()       # the file alone, no partition discovery
        at = table.schema.get_field_index("slice_out")
        pq.write_table(table.set_column(at, "slice_out",
                                        table["slice_out"].cast(pa.string())), part)
    elif how == "listed but gone":
        part.unlink()
        return d, part
    elif how == "a fifo":
        part.unlink()
        os.mkfifo(part)
    return d, part


@pytest.mark.parametrize("how, says", [
    ("truncated", "not a readable Parquet file"),
    ("not parquet", "not a readable Parquet file"),
    ("a table missing", "is listed in the dataset's manifest but missing"),
    ("somebody else's parquet", "not a flow table of a pypto dataset (no column"),
    ("a wrong column type", "its flow column slice_out holds string, where a pypto dataset"),
    ("listed but gone", "is listed in the dataset's manifest but missing"),
    ("a fifo", "FIFO"),
])
def test_a_damaged_dataset_is_one_line_naming_the_file(dataset, tmp_path, capsys, how, says):
    d, named = _damage(dataset, tmp_path, how)
    assert profile_main(["query", "select count(*) from flow", str(d)]) == 2
    line = one_line(capsys)
    assert line.startswith(str(named)) and says in line, line
    assert profile_main(["aggregate", str(d)]) == 2
    assert one_line(capsys).startswith(str(named))


def test_a_dataset_of_an_older_version_is_ours_by_its_file_names(capture, tmp_path, capsys):
    """An older manifest lists no files: then only the names our writer makes count as
    ours (replaced), anything else stops the write."""
    out = tmp_path / "ds"
    assert merge_main([str(capture), "-o", str(out), "--format", "parquet", "-q"]) == 0
    (out / "_pypto_tables").write_text("pypto.compile_profiling.timeline.write_parquet\n")
    assert merge_main([str(capture), "-o", str(out), "--format", "parquet", "-q"]) == 0
    (out / "_pypto_tables").write_text("pypto.compile_profiling.timeline.write_parquet\n")
    (out / "slice" / "rank=none" / "mine.csv").write_text("1")
    capsys.readouterr()
    assert merge_main([str(capture), "-o", str(out), "--format", "parquet", "-q"]) == 2
    assert "holds slice/rank=none/mine.csv, which" in one_line(capsys)
    assert (out / "slice" / "rank=none" / "mine.csv").exists()


FUZZ = settings(max_examples=25, deadline=None, database=None, derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(pick=st.integers(0, 1 << 16), where=st.floats(0, 1),
       how=st.sampled_from(["cut", "overwrite", "append"]),
       junk=st.binary(min_size=1, max_size=64))
def test_any_damage_to_any_file_of_a_dataset_is_a_result_or_one_line(dataset, tmp_path_factory,
                                                                      capsys, pick, where, how,
                                                                      junk):
    """A file of the dataset cut short, overwritten in a stretch, or extended, at places
    hypothesis picks: `query` answers or says one line naming a file, exit 0 or 2, never a
    traceback, and never writes into the dataset."""
    d = tmp_path_factory.mktemp("fuzz") / "tables"
    shutil.copytree(dataset, d)
    files = sorted(p for p in d.rglob("*") if p.is_file())
    victim = files[pick % len(files)]
    raw = bytearray(victim.read_bytes())
    at = int(where * len(raw))
    if how == "cut":
        raw = raw[:at]
    elif how == "overwrite":
        raw[at:at + len(junk)] = junk
    else:
        raw += junk
    victim.write_bytes(bytes(raw))
    before = digest(d)
    sql = "select count(*) as n from slice join thread on slice.track_id = thread.utid"
    code = profile_main(["query", sql, str(d)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if code == 0:
        assert out.split()[0] == "n"
    else:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err
        assert lines[0].startswith((str(d), "pypto-profile: SQL error")), lines[0]
    assert digest(d) == before


def test_one_short_queue_figure_costs_one_sample_and_parquet_still_writes(tmp_path, capsys):
    """One scheduler record whose `shared_at_end` has 2 values (the others 3) used to drop
    most of its thread's ready-queue samples (4176 -> 2688 here) and crash `--format
    parquet`. Now that one value is dropped (its sample, on each of the 3 queue tracks)."""
    case = "tmr_bgemm_case0_l4_depgen"
    cap = tmp_path / "cap"
    shutil.copytree(FIXTURES / case, cap)
    rec = json.loads((cap / "chip_swimlane_records.json").read_text())
    rec["aicpu_scheduler_phases"][0][5]["shared_at_end"] = [1, 2]
    assert rec["aicpu_scheduler_phases"][0][5]["kind"] == "complete"    # a sampling phase
    (cap / "chip_swimlane_records.json").write_text(json.dumps(rec))

    def samples(path) -> int:
        assert merge_main([str(path), "-o", str(tmp_path / "m.json"), "-v"]) == 0
        err = capsys.readouterr().err
        return int(err.split(" ready_queue_samples")[0].rsplit(" ", 1)[1]), err

    whole, _ = samples(FIXTURES / case)
    got, err = samples(cap)
    assert got == whole - 3
    assert ("1 in $.aicpu_scheduler_phases[0].shared_at_end (the first: "
            "$.aicpu_scheduler_phases[0][5].shared_at_end: 2 values where the others have 3: "
            "dropped for that record alone)") in err
    assert merge_main([str(cap), "-o", str(tmp_path / "ds"), "--format", "parquet", "-q"]) == 0


@pytest.mark.parametrize("victim", ["merged_swimlane.json", "strace_trace.json"])
@pytest.mark.parametrize("argv", [["analyze"], ["query", "select 1 as x"]])
def test_a_file_of_an_input_directory_is_input_too_read_or_not(capture, capsys, victim,
                                                                argv):
    """The audit's last case: a file the command did not itself read (Simpler's rendering
    beside the records, its host-span trace) is still the user's data in an input
    directory: refused. A new file there is fine."""
    before = digest(capture)
    out = capture / victim
    assert profile_main([*argv, str(capture), "-o", str(out)]) == 2
    assert one_line(capsys) == (f"{out}: is a file in the input directory "
                                f"{os.path.realpath(capture)}: refusing to overwrite it "
                                "(write elsewhere)")
    assert digest(capture) == before
    assert profile_main([*argv, str(capture), "-o", str(capture / "new.txt")]) == 0
    assert merge_main([str(capture), "-o", str(capture / victim)]) == 2
