"""Hostile inputs and output paths for `pypto-merge-traces`: nothing lost, nothing hangs,
never a traceback.

The fuzz part mutates the real Simpler captures (and compile traces made to fit them) one
field at a time: numbers (NaN, infinities, huge, negative), types and missing keys, text
(non-ASCII, lone surrogates, control characters) and deep nesting; the table part swaps
files for FIFOs, sockets, devices, symlink loops and garbage. Every run must end in one of
two ways:
- exit 0 with an output that is strict JSON (no NaN/Infinity) in valid UTF-8, or
- exit 2 with exactly one stderr line `<file>: <problem>` naming the bad file, no traceback
  and no output file;
and in both, no temp file is left anywhere and the inputs are byte for byte unchanged.

`-o -` on ordinary pipes (a reader that stops early, a full device, a closed stdout) and a
signal at the rename have their own outcomes (141 quietly, 1 with one line; the interrupt
line true about the output) and their own tests at the end.

The merge runs in-process through `merge_cli.main` (stderr captured) for speed, with a few
real subprocess runs. Hypothesis runs with one fixed profile (`FUZZ`: derandomized, a bounded
number of examples, no deadline, no shrinking), so a run is fast and the same every time.

Cases today's readers still get wrong belong to the reader rewrite (issue 8) and are listed
in `READER_REWRITE_XFAIL`, in one place so they can be flipped as they are fixed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from merge_inputs import FIXTURES, compile_trace_around
from repo_paths import REPO_ROOT as REPO

from pypto.compile_profiling.cli import merge_traces as merge_cli

# One fixed profile: no flaky deadline, no time spent shrinking, no example database; each
# test is seeded from its case id (`fuzz_seed`), so every run tries the same examples, and
# editing one test does not change the examples of another.
FUZZ = settings(max_examples=10, deadline=None, database=None,
                phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CALIBRATED = "hbg_vector_example_l4_depgen"      # host-orchestrated, has clock anchors
ESTIMATED = "tmr_mixed_example_case1_l4_depgen"  # named kernels, AIC + AIV, no anchors
CONVERTED = "tmr_vector_example_l4_depgen"       # its merged_swimlane.json is small

# ---------------------------------------------------------------- the cases the rewrite owns

_REWRITE = "reader rewrite (issue 8)"
# (test, case id) pairs that fail with today's readers and are fixed by the reader rewrite;
# flip an entry by deleting it (strict: a case that starts passing fails until it is removed).
READER_REWRITE_XFAIL = {
}

def fuzz_seed(case_id: str) -> int:
    return zlib.crc32(case_id.encode())


def _xfail(test: str, ids: list[str]) -> list:
    """`ids` as pytest params, the listed ones marked strict xfail."""
    params = []
    for i in ids:
        marks = []
        if (test, i) in READER_REWRITE_XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=_REWRITE))
        params.append(pytest.param(i, marks=marks, id=i))
    return params


# ---------------------------------------------------------------- running the merge

class Hang(Exception):
    """The merge blocked (e.g. opened a FIFO): the safety net of `_no_hang` fired."""


@contextlib.contextmanager
def _no_hang(seconds: float = 20.0):
    """Turn a blocked merge into a test failure instead of a stuck test run (a safety net,
    never a synchronisation: passing runs finish in milliseconds)."""
    def fire(signum, frame):
        raise Hang(f"the merge blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_main(*args) -> tuple[int, str]:
    """`pypto-merge-traces ARGS` in-process: (exit status, stderr). An exception escaping
    `main` (a traceback for the user) is returned as status -1 with its text."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), _no_hang():
        try:
            code = merge_cli.main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except Hang:
            raise
        except BaseException as e:  # noqa: BLE001 - that is the finding
            return -1, err.getvalue() + f"Traceback: {type(e).__name__}: {e}"
    return code, err.getvalue()


def run_subprocess(*args, cwd=REPO) -> subprocess.CompletedProcess:
    """The real command line (`python3 -m pypto.compile_profiling.cli.merge_traces`)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
                           *map(str, args)], capture_output=True, text=True, check=False,
                          cwd=cwd, env=env, timeout=120)


def tree_state(root: Path) -> dict[str, tuple]:
    """What is at each path under `root`: file kind and content hash (never opens a FIFO,
    socket or device)."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st_ = os.lstat(p)
            if stat.S_ISLNK(st_.st_mode):
                state[p] = ("link", os.readlink(p))
            elif stat.S_ISREG(st_.st_mode):
                with open(p, "rb") as f:
                    state[p] = ("file", hashlib.sha256(f.read()).hexdigest())
            else:
                state[p] = (stat.S_IFMT(st_.st_mode),)
    return state


def temp_leftovers(root: Path) -> list[str]:
    """Temp files of a write (ours are `.<name>.pypto-tmp-*`; older ones `.<name>.*.tmp`)."""
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names
            if n.startswith(".") and ("pypto-tmp" in n or n.endswith(".tmp"))]


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def assert_strict_json(path: Path) -> None:
    """`path` is valid UTF-8 and strict JSON (Python's parser accepts NaN/Infinity: refused)."""
    text = path.read_bytes().decode("utf-8")          # raises on invalid UTF-8 / surrogates
    json.loads(text, parse_constant=_reject_constant)


LINE = re.compile(r"^(?P<path>[^\n]+?): (?P<problem>\S[^\n]*)$")


def assert_outcome(code: int, err: str, *, out: Path, blamed: list[Path], work: Path,
                   before: dict, expect: str = "either") -> str:
    """The contract of every hostile run (see the module docstring); returns the outcome."""
    assert "Traceback" not in err, err
    assert code in (0, 2), (code, err)
    assert tree_state(work / "in") == before, "an input was modified"
    assert temp_leftovers(work) == [], temp_leftovers(work)
    if code == 0:
        assert expect in ("either", "accept"), f"accepted, expected a rejection: {err}"
        assert_strict_json(out)
        assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
        return "accepted"
    assert expect in ("either", "reject"), f"rejected, expected an accepted input: {err}"
    lines = err.splitlines()
    assert len(lines) == 1, err
    m = LINE.match(lines[0])
    assert m, lines[0]
    assert any(m["path"] == str(b) or m["path"].startswith(f"{b}:") for b in blamed), \
        (lines[0], blamed)
    assert list(out.parent.iterdir()) == [], "output written for a bad input"
    return "rejected"


# ---------------------------------------------------------------- the inputs to mutate

class Raw:
    """JSON text written as is in place of a value (NaN, 1e400, deep nesting...)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dump_json(doc, ensure_ascii: bool) -> bytes:
    raws: list[Raw] = []

    def swap(v):
        if isinstance(v, Raw):
            raws.append(v)
            return f"\x00RAW{len(raws) - 1}\x00"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(doc), ensure_ascii=ensure_ascii, allow_nan=True)
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{i}\x00", ensure_ascii=ensure_ascii), raw.text)
    return text.encode("utf-8", "surrogatepass")  # raw lone surrogates: invalid UTF-8 bytes


def _capture_files(case: str, names: tuple[str, ...]) -> dict[str, bytes]:
    d = FIXTURES / case
    out = {}
    for n in names:
        for p in sorted(d.glob(n)):
            out[p.name] = p.read_bytes()
    return out


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict:
    """Per target: {relative path: bytes} of one merge's inputs, the file to mutate, the
    command-line inputs. Compile traces and the profile are made by our own writers."""
    from pypto.compile_profiling import CompileProfiler

    base = tmp_path_factory.mktemp("sources")
    compile_trace_around(FIXTURES / CALIBRATED, base / "trace.json")
    trace = (base / "trace.json").read_bytes()
    with CompileProfiler() as prof:
        with prof.stage("parse"):
            pass
        with prof.stage("compile"), prof.stage("passes"), prof.stage("Simplify"):
            pass
        with prof.stage("device_execution"):
            pass
    prof.write_report(base / "report")
    profile = (base / "report" / "pipeline_profile.json").read_bytes()

    cal = {f"cap/{k}": v for k, v in _capture_files(
        CALIBRATED, ("chip_swimlane_records.json", "deps.json", "host_log.txt")).items()}
    est = {f"cap/{k}": v for k, v in _capture_files(
        ESTIMATED, ("chip_swimlane_records.json", "deps.json", "name_map_*.json",
                    "host_log.txt")).items()}
    name_map = next(k for k in est if "name_map" in k)
    merged = {"conv/merged_swimlane.json": (FIXTURES / CONVERTED / "merged_swimlane.json")
              .read_bytes()}
    return {
        "records_calibrated": ({**cal, "trace.json": trace}, "cap/chip_swimlane_records.json",
                               ["trace.json", "cap"]),
        "records_estimated": (est, "cap/chip_swimlane_records.json", ["cap"]),
        "deps": (est, "cap/deps.json", ["cap"]),
        "name_map": (est, name_map, ["cap"]),
        "merged_swimlane": (merged, "conv/merged_swimlane.json", ["conv/merged_swimlane.json"]),
        "trace": ({**cal, "trace.json": trace}, "trace.json", ["trace.json", "cap"]),
        "profile": ({"report/pipeline_profile.json": profile}, "report/pipeline_profile.json",
                    ["report/pipeline_profile.json"]),
        "host_log": (est, "cap/host_log.txt", ["cap"]),
    }


@contextlib.contextmanager
def workspace(files: dict[str, bytes]):
    """A fresh directory with `in/` (the inputs) and `out/` (empty)."""
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        for rel, data in files.items():
            p = work / "in" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        (work / "out").mkdir()
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def merge_changed(files: dict[str, bytes], args: list[str], mutated: str, data: bytes,
                  expect: str = "either") -> tuple[str, str]:
    """Merge `files` (`args` on the command line) with `mutated` holding `data` instead;
    check the contract (`assert_outcome`); return the outcome and stderr."""
    with workspace({**files, mutated: data}) as work:
        before = tree_state(work / "in")
        out = work / "out" / "merged.json"
        code, err = run_main(*(work / "in" / a for a in args), "-o", out, "-q")
        return assert_outcome(code, err, out=out, blamed=[work / "in" / mutated], work=work,
                              before=before, expect=expect), err


# ---------------------------------------------------------------- mutation strategies

DELETE = object()
RENAME_KEY = object()
NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), 1e308, -1e308, -1,
           2 ** 63, 2 ** 64 + 1, -(2 ** 63) - 1, 0.5, 0]
TYPES = [None, True, "7", [], {}, [[1]], {"x": {"y": 1}}, DELETE]
TEXT = ["é²", "\ud800", "a\x00\x1f\x7fb", "\u2028\u2029", "²", "\udfff\ud800x", "x" * 10_000,
        RENAME_KEY]
NESTING = [Raw("[" * 1_000 + "]" * 1_000), Raw('{"a":' * 1_000 + "1" + "}" * 1_000),
           Raw("[" * 100_000 + "]" * 100_000)]
FAMILIES = {"numbers": NUMBERS, "types": TYPES, "text": TEXT, "nesting": NESTING}
RENAMED_KEYS = ["²", "\ud800", "", "0x1", "１"]


def json_paths(doc, family: str, prefix: tuple = ()) -> list[tuple]:
    """The paths into `doc` (lists: their first two and last elements) where `family`'s
    values matter: numbers replace numbers, text replaces strings and renames keys, types
    and nesting replace anything."""
    if family == "numbers":
        fits = type(doc) in (int, float)
    elif family == "text":
        fits = isinstance(doc, (str, dict))
    else:
        fits = True
    out = [prefix] if prefix and fits else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += json_paths(v, family, prefix + (k,))
    elif isinstance(doc, list):
        for i in sorted({0, 1, len(doc) - 1} & set(range(len(doc)))):
            out += json_paths(doc[i], family, prefix + (i,))
    return out


@st.composite
def json_mutation(draw, paths: list[tuple], family: str):
    """(path, new value, ASCII-only output): any field of the document, any hostile value."""
    path = list(draw(st.sampled_from(paths)))
    value = draw(st.sampled_from(FAMILIES[family]))
    if value is RENAME_KEY:
        value = (RENAME_KEY, draw(st.sampled_from(RENAMED_KEYS)))
    return path, value, draw(st.booleans())


def apply_mutation(doc, path: list, value):
    if not path:
        return doc if value is DELETE or isinstance(value, tuple) else value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if value is DELETE:
        del parent[last]
    elif isinstance(value, tuple) and value and value[0] is RENAME_KEY:
        if isinstance(parent, dict):
            parent[value[1]] = parent.pop(last)
        else:
            parent[last] = value[1]
    else:
        parent[last] = value
    return doc


LOG_VALUES = ["nan", "inf", "-1", "1e308", "99999999999999999999999", "", "0x10", "é²",
              "\x00", "x" * 5_000, "=", "a=b"]


@st.composite
def log_mutation(draw, lines: list[str]):
    """A run-log line with one `key=value` field changed, deleted or made huge."""
    marked = [i for i, ln in enumerate(lines) if "[STRACE]" in ln or "[CLOCK_ANCHOR]" in ln]
    i = draw(st.sampled_from(marked))
    tokens = lines[i].split(" ")
    fields = [j for j, t in enumerate(tokens) if "=" in t and not t.startswith("[")]
    j = draw(st.sampled_from(fields))
    action = draw(st.sampled_from(["value", "delete", "duplicate", "token"]))
    return i, j, action, draw(st.sampled_from(LOG_VALUES))


def apply_log_mutation(lines: list[str], m) -> bytes:
    i, j, action, value = m
    tokens = lines[i].split(" ")
    key = tokens[j].split("=", 1)[0]
    if action == "value":
        tokens[j] = f"{key}={value}"
    elif action == "delete":
        del tokens[j]
    elif action == "duplicate":
        tokens.insert(j + 1, f"{key}={value}")
    else:
        tokens.insert(j, value * 3 if value else "junk")
    out = list(lines)
    out[i] = " ".join(tokens)
    return "\n".join(out).encode("utf-8", "surrogateescape") + b"\n"


TARGETS = ["records_calibrated", "records_estimated", "deps", "name_map", "merged_swimlane",
           "trace", "profile"]
FIELD_IDS = [f"{t}-{f}" for t in TARGETS for f in FAMILIES]


@pytest.mark.parametrize("case", _xfail("test_field_mutation", FIELD_IDS))
def test_field_mutation(sources, case):
    target, family = case.split("-")
    files, mutated, args = sources[target]
    paths = json_paths(json.loads(files[mutated]), family)

    @FUZZ
    @seed(fuzz_seed(case))
    @given(data=st.data())
    def check(data):
        doc = json.loads(files[mutated])   # a fresh copy per example
        path, value, ascii_only = data.draw(json_mutation(paths, family))
        doc = apply_mutation(doc, path, value)
        merge_changed(files, args, mutated, dump_json(doc, ascii_only))

    check()


def test_host_log_mutation(sources):
    files, mutated, args = sources["host_log"]
    lines = files[mutated].decode("utf-8").splitlines()

    @settings(FUZZ, max_examples=16)
    @seed(fuzz_seed("host_log"))
    @given(m=log_mutation(lines))
    def check(m):
        merge_changed(files, args, mutated, apply_log_mutation(lines, m))

    check()


# ---------------------------------------------------------------- the known cases

def _set_first_x(key, value):
    def mutate(doc):
        ev = next(e for e in doc["traceEvents"] if e.get("ph") == "X")
        ev[key] = value
        return doc
    return mutate


def _set_path(*path_and_value):
    *path, value = path_and_value

    def mutate(doc):
        return apply_mutation(doc, list(path), value)
    return mutate


def _name_map_key(doc):
    table = doc["callable_id_to_name"]
    table["²"] = table.pop(next(iter(table)))
    return doc


def _first_phase(value):
    def mutate(doc):
        for key, streams in doc.items():
            if key.endswith("_phases") and isinstance(streams, list):
                for stream in streams:
                    for rec in stream if isinstance(stream, list) else []:
                        if isinstance(rec, dict) and "tasks_processed" in rec:
                            rec["tasks_processed"] = value
                            return doc
        raise AssertionError("no phase record with tasks_processed in the fixture")
    return mutate


def _first_name(value):
    def mutate(doc):
        table = doc["callable_id_to_name"]
        table[next(iter(table))] = value
        return doc
    return mutate


def _stage_name(value):
    def mutate(doc):
        doc["stages"][0]["name"] = value
        return doc
    return mutate


def _deep(n):
    return Raw('{"a":' * n + "1" + "}" * n)


def _thread_name_of_a_new_pid(doc):
    """A `thread_name` event for a pid no other event has (found by fuzzing: a KeyError)."""
    doc["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 4_000_001, "tid": 7,
                               "args": {"name": "orphan"}})
    return doc


# id -> (target, mutation, expected outcome, word the one-line problem must contain)
KNOWN = {
    "trace_ts_nan": ("trace", _set_first_x("ts", Raw("NaN")), "reject", "ts"),
    "trace_ts_infinity": ("trace", _set_first_x("ts", Raw("Infinity")), "reject", "ts"),
    "trace_dur_1e308": ("trace", _set_first_x("dur", 1e308), "reject", "dur"),
    "merged_ts_nan": ("merged_swimlane", _set_first_x("ts", Raw("NaN")), "reject", "ts"),
    "merged_ts_infinity": ("merged_swimlane", _set_first_x("ts", Raw("-Infinity")), "reject",
                           "ts"),
    "merged_dur_1e308": ("merged_swimlane", _set_first_x("dur", 1e308), "reject", "dur"),
    "profile_seconds_nan": ("profile", _set_path("stages", 0, "seconds", Raw("NaN")),
                            "reject", "seconds"),
    "profile_seconds_1e308": ("profile", _set_path("stages", 0, "seconds", 1e308), "reject",
                              "seconds"),
    "name_map_key_superscript_two": ("name_map", _name_map_key, "reject", "²"),
    # one record's bad field costs that record alone (issue 29): merged, one warning
    "tasks_processed_object": ("records_estimated", _first_phase({"n": 1}), "accept", ""),
    "tasks_processed_list": ("records_estimated", _first_phase([1, 2]), "accept", ""),
    "name_map_lone_surrogate": ("name_map", _first_name("\ud800"), "accept", ""),
    "name_map_control_chars": ("name_map", _first_name("a\x00\x1b[31mb"), "accept", ""),
    "stage_name_lone_surrogate": ("profile", _stage_name("pa\udcffrse"), "accept", ""),
    "trace_args_1000_deep": ("trace", _set_first_x("args", _deep(1_000)), "either", ""),
    "trace_thread_name_of_a_pid_with_no_event": ("trace", _thread_name_of_a_new_pid,
                                                 "accept", ""),
    # the records reader's range rule on the trace's own clock anchor (issue 22, item 3)
    "trace_anchor_monotonic_past_the_rule": (
        "trace", _set_path("otherData", "clock_anchor", "monotonic_ns", 2**63 - 1), "reject",
        (f"otherData.clock_anchor: monotonic_ns {2**63 - 1} is out of range (device and "
         "host times must stay under 2^62 ns)")),
    "trace_anchor_wall_past_the_rule": (
        "trace", _set_path("otherData", "clock_anchor", "wall_ns", -(2**62)), "reject",
        f"otherData.clock_anchor: |wall_ns| {2**62} is out of range"),
    # a negative anchor is one line too, not an OverflowError (issue 24)
    "trace_anchor_monotonic_negative": (
        "trace", _set_path("otherData", "clock_anchor", "monotonic_ns", -10), "reject",
        "otherData.clock_anchor: monotonic_ns -10 is negative"),
}


@pytest.mark.parametrize("case", _xfail("test_known_hostile_field", sorted(KNOWN)))
def test_known_hostile_field(sources, case):
    target, mutate, expect, word = KNOWN[case]
    files, mutated, args = sources[target]
    outcome, err = merge_changed(files, args, mutated,
                                 dump_json(mutate(json.loads(files[mutated])), ensure_ascii=True),
                                 expect=expect)
    if outcome == "rejected":
        assert word in err, err


# ---------------------------------------------------------------- run-log times: one range rule

MAX_NS = 1 << 62        # the records reader's rule (simpler_schema.MAX_CLOCK_NS)
BIND_ARGS = r"(name=chip\.run\.bind\.args ts=)(\d+)( dur=)(\d+)"
WALL = r"(name=chip\.run\.runner_run\.device_wall ts=)(\d+)( dur=)(\d+)"
ANCHOR = r"(\[CLOCK_ANCHOR\] v=1 pid=\d+ mono_ns=)(\d+)( wall_ns=)(\d+)"

# id -> (the line's pattern, the new groups 2 and 4, the one-line problem's end)
RUN_LOG_TIMES = {
    # Issue 22: an OverflowError in the layout once ts + dur passed int64
    "ts_near_int64_max": (BIND_ARGS, (2**63 - 1000, 448_444),
                          (f"[STRACE] ts {2**63 - 1000} is out of range (device and host times "
                           "must stay under 2^62 ns)")),
    "ts_plus_dur_past_the_rule": (BIND_ARGS, (MAX_NS - 10, 100),
                                  (f"[STRACE] ts + dur {MAX_NS + 90} is out of range (device "
                                   "and host times must stay under 2^62 ns)")),
    "dur_past_the_rule": (BIND_ARGS, (5, MAX_NS), f"[STRACE] dur {MAX_NS} is out of range"),
    "clk_dev_ts_past_the_rule": (WALL, (MAX_NS, 5), f"[STRACE] ts {MAX_NS} is out of range"),
    "anchor_mono_past_the_rule": (ANCHOR, (MAX_NS, 1_795_979_133_262_674_619),
                                  f"[CLOCK_ANCHOR] mono_ns {MAX_NS} is out of range"),
    "anchor_wall_past_the_rule": (ANCHOR, (874_229_009_130, -MAX_NS),
                                  f"[CLOCK_ANCHOR] |wall_ns| {MAX_NS} is out of range"),
    # integers over 4,300 digits (Python's int parser refuses them): still one line
    "ts_of_5000_digits": (BIND_ARGS, ("9" * 5000, 448_444),
                          "[STRACE] ts='" + "9" * 40 + "' is not a non-negative 64-bit "
                          "integer"),
}


@pytest.mark.parametrize("case", sorted(RUN_LOG_TIMES))
def test_run_log_times_obey_the_records_range_rule(sources, case):
    """Every time a run log gives reaches a clock conversion, so each is checked at the
    reader with the records reader's rule (under 2^62 ns; `ts + dur` too), naming its line."""
    pattern, (a, b), problem = RUN_LOG_TIMES[case]
    files, mutated, args = sources["host_log"]
    text = files[mutated].decode("utf-8")
    m = re.search(pattern, text)
    assert m, pattern
    line = text.count("\n", 0, m.start()) + 1
    text = text[:m.start()] + f"{m[1]}{a}{m[3]}{b}" + text[m.end():]
    _, err = merge_changed(files, args, mutated, text.encode("utf-8"), expect="reject")
    assert f": line {line}: {problem}" in err, err


def test_a_5000_digit_integer_in_host_phase_records_is_called_what_it_is(tmp_path):
    """Python's int parser refuses over 4,300 digits: the reader says what is wrong (an
    integer too big), not "invalid JSON", which the line is not."""
    cap = tmp_path / "cap"
    shutil.copytree(FIXTURES / CALIBRATED, cap)
    p = cap / "host_phase_records.jsonl"
    text, n = re.subn(r'"start_ns": \d+', '"start_ns": ' + "9" * 5000, p.read_text(), count=1)
    assert n == 1
    p.write_text(text)
    code, err = run_main(cap, "-o", tmp_path / "m.json", "-q")
    assert code == 2
    assert err == f"{p}:1: $: holds an integer of over 4,300 digits, too big for any field\n"


# ---------------------------------------------------------------- file kinds

def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()   # the socket file stays


def _link_to(target: str):
    def make(p: Path) -> None:
        p.symlink_to(target)
    return make


def _self_link(p: Path) -> None:
    p.symlink_to(p.name)


def _link_loop(p: Path) -> None:
    p.symlink_to(p.name + ".other")
    (p.parent / (p.name + ".other")).symlink_to(p.name)


def _sparse(p: Path, size: int = 8 << 20) -> None:
    with open(p, "wb") as f:
        f.truncate(size)   # zeros, no blocks on disk


FILE_KINDS = {
    "fifo": (_fifo, "FIFO"),
    "socket": (_socket, "socket"),
    "self_symlink": (_self_link, "symlink loop"),
    "symlink_loop": (_link_loop, "symlink loop"),
    "dangling_symlink": (_link_to("nowhere.json"), "no such file"),
    "dev_zero": (_link_to("/dev/zero"), "device"),
    "dev_urandom": (_link_to("/dev/urandom"), "device"),
    "dev_null": (_link_to("/dev/null"), "device"),
    "sparse_zeros": (_sparse, "JSON"),
}
# where the swapped file sits: inside a capture directory given as the input, or given itself
KIND_PLACES = {
    "records": ("records_estimated", "cap/chip_swimlane_records.json", ["cap"]),
    "deps": ("deps", "cap/deps.json", ["cap"]),
    "name_map": ("name_map", None, ["cap"]),
    "host_log": ("host_log", "cap/host_log.txt", ["cap"]),
    "trace_arg": ("trace", "trace.json", ["trace.json", "cap"]),
    "merged_arg": ("merged_swimlane", "conv/merged_swimlane.json",
                   ["conv/merged_swimlane.json"]),
}
KIND_IDS = [f"{place}-{kind}" for place in KIND_PLACES for kind in FILE_KINDS
            if not (kind == "sparse_zeros" and place == "host_log")]


@pytest.mark.parametrize("case", _xfail("test_file_kind", KIND_IDS))
def test_file_kind(sources, case):
    place, kind = case.split("-")
    target, rel, args = KIND_PLACES[place]
    files, mutated, _ = sources[target]
    rel = rel or mutated
    make, word = FILE_KINDS[kind]
    with workspace({k: v for k, v in files.items() if k != rel}) as work:
        (work / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
        make(work / "in" / rel)
        before = tree_state(work / "in")
        out = work / "out" / "merged.json"
        code, err = run_main(*(work / "in" / a for a in args), "-o", out, "-q")
        assert_outcome(code, err, out=out, blamed=[work / "in" / rel], work=work,
                       before=before, expect="reject")
        assert word.lower() in err.lower(), err


def test_real_command_line_with_a_fifo_input_and_a_fifo_output(sources):
    """The installed command as a user runs it (a subprocess, not `main` in-process): a
    FIFO among the capture files, then a FIFO as the output."""
    files, _, _ = sources["records_estimated"]
    with workspace({k: v for k, v in files.items() if "deps" not in k}) as work:
        os.mkfifo(work / "in" / "cap" / "deps.json")
        before = tree_state(work / "in")
        out = work / "out" / "merged.json"
        r = run_subprocess(work / "in" / "cap", "-o", out)
        assert (r.returncode, r.stderr) == (
            2, (f"{work / 'in' / 'cap' / 'deps.json'}: is a FIFO (named pipe), expected a "
               "regular file or a directory\n"))
        os.unlink(work / "in" / "cap" / "deps.json")
        os.mkfifo(out)
        r = run_subprocess(work / "in" / "cap", "-o", out)
        assert r.returncode == 2 and r.stderr.startswith(f"{out}: is a FIFO"), r.stderr
        assert r.stderr.count("\n") == 1 and stat.S_ISFIFO(os.lstat(out).st_mode)
        assert temp_leftovers(work) == [] and tree_state(work / "in") == {
            k: v for k, v in before.items() if not k.endswith("deps.json")}


def test_garbage_input_is_rejected_after_reading_its_start_only(sources):
    """A 64 MB sparse file of zeros named like a capture file: refused from its first bytes,
    not after reading it whole (peak Python memory stays far below the file size)."""
    import tracemalloc

    files, _, _ = sources["records_estimated"]
    with workspace({k: v for k, v in files.items() if "chip_swimlane" not in k}) as work:
        _sparse(work / "in" / "cap" / "chip_swimlane_records.json", 64 << 20)
        tracemalloc.start()
        try:
            code, err = run_main(work / "in" / "cap", "-o", work / "out" / "m.json", "-q")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert code == 2 and "Traceback" not in err, err
    assert peak < 16 << 20, f"peak {peak / 1e6:.0f} MB for a 64 MB garbage file"


def test_fifo_swapped_in_after_the_check_does_not_block(tmp_path, monkeypatch):
    """The stat before the open saw a regular file; a FIFO is there when it is opened:
    the open does not wait for a writer and the file is refused."""
    from pypto.compile_profiling.foundation import input_files
    from pypto.errors import TraceInputError

    regular = tmp_path / "regular.json"
    regular.write_text("{}")
    fifo = tmp_path / "deps.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(input_files, "stat_input", lambda path: os.stat(regular))
    with _no_hang(), pytest.raises(TraceInputError) as info:
        input_files.read_input_bytes(fifo)
    assert str(info.value) == f"{fifo}: is a FIFO (named pipe), expected a regular file"


def test_file_bigger_than_memory_is_refused_before_reading(tmp_path, monkeypatch):
    from pypto.compile_profiling.foundation import input_files
    from pypto.errors import TraceInputError

    p = tmp_path / "deps.json"
    p.write_text("[" + "1," * 1000 + "1]")
    monkeypatch.setattr(input_files, "MAX_INPUT_BYTES", 1000)
    with pytest.raises(TraceInputError, match="larger than this machine's memory"):
        input_files.read_input_bytes(p)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_device_given_as_input_is_refused_without_reading(tmp_path, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    out = tmp_path / "m.json"
    code, err = run_main(device, "-o", out)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"{device}: "), err
    assert not out.exists()


@contextlib.contextmanager
def _as_user_without_root_powers():
    """As root: the effective user is `nobody` inside the block (root reads any directory
    whatever its mode, so that is how to see what a user without the permission sees); as
    anyone else: unchanged."""
    if os.geteuid() != 0:
        yield
        return
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no user nobody to drop to")
    # what the merge imports lazily, imported while the installation is still readable
    import pypto.compile_profiling.timeline.json_rows
    import pypto.compile_profiling.timeline.write_json
    import pypto.compile_profiling.trace_merge.lay_out.layout
    import pypto.compile_profiling.trace_merge.read.read_inputs
    import pypto.compile_profiling.trace_merge.views  # noqa: F401

    groups = os.getgroups()
    os.setgroups([])
    os.setegid(nobody.pw_gid)
    os.seteuid(nobody.pw_uid)
    try:
        yield nobody
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


@pytest.mark.parametrize("mode", [0o000, 0o444, 0o111], ids=["none", "read_only",
                                                             "search_only"])
def test_unreadable_capture_directory_is_one_line(sources, mode):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        os.chmod(work, 0o755)
        os.chmod(work / "in", 0o755)
        os.chmod(work / "out", 0o777)
        cap = work / "in" / "cap"
        before = tree_state(work / "in")
        os.chmod(cap, mode)
        try:
            with _as_user_without_root_powers():
                code, err = run_main(cap, "-o", work / "out" / "m.json", "-q")
        finally:
            os.chmod(cap, 0o755)
        assert_outcome(code, err, out=work / "out" / "m.json", blamed=[cap], work=work,
                       before=before, expect="reject")
        assert "permission denied" in err.lower(), err


# ---------------------------------------------------------------- output paths

def _input_file(work: Path) -> Path:
    return work / "in" / "cap" / "chip_swimlane_records.json"


def _hard_link(work: Path) -> Path:
    p = work / "elsewhere.json"
    os.link(_input_file(work), p)
    return p


def _sym_link(work: Path) -> Path:
    p = work / "link.json"
    p.symlink_to(_input_file(work))
    return p


# id -> (output path, extra inputs given on the command line)
OUTPUT_IS_INPUT = {
    "file_inside_input_dir": (_input_file, []),
    "file_given_as_input": (lambda w: w / "in" / "cap" / "deps.json",
                            ["cap/deps.json"]),
    "hard_link_to_input": (_hard_link, []),
    "symlink_to_input": (_sym_link, []),
}


@pytest.mark.parametrize("case", _xfail("test_output_that_is_an_input_is_refused",
                                        sorted(OUTPUT_IS_INPUT)))
def test_output_that_is_an_input_is_refused(sources, case):
    files, _, _ = sources["records_estimated"]
    make, extra = OUTPUT_IS_INPUT[case]
    with workspace(files) as work:
        out = make(work)
        before = tree_state(work)
        code, err = run_main(work / "in" / "cap", *(work / "in" / e for e in extra),
                             "-o", out, "--format", "json")
        assert code == 2 and "Traceback" not in err, err
        assert err.count("\n") == 1 and err.startswith(f"{out}: "), err
        assert "input" in err
        assert tree_state(work) == before
        assert temp_leftovers(work) == []


def _mknod_null(p: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))   # a /dev/null of our own


NOT_REGULAR = {"fifo": _fifo, "socket": _socket, "directory": lambda p: p.mkdir()}


@pytest.mark.parametrize("kind", _xfail("test_output_that_is_not_a_regular_file_is_refused",
                                        sorted(NOT_REGULAR)))
def test_output_that_is_not_a_regular_file_is_refused(sources, kind):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        out = work / "out" / "merged.json"
        NOT_REGULAR[kind](out)
        mode = os.lstat(out).st_mode
        code, err = run_main(work / "in" / "cap", "-o", out)
        assert code == 2 and "Traceback" not in err, err
        assert err.count("\n") == 1 and err.startswith(f"{out}: "), err
        assert "regular file" in err
        assert os.lstat(out).st_mode == mode, "the special file was replaced"
        assert temp_leftovers(work) == []


def test_an_output_that_is_a_character_device_is_written_through(sources):
    """A character device (a /dev/null of our own) is a stream, as `-o -` is: the trace is
    written into it, and the node is still the device afterwards, never a file renamed
    over it."""
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        out = work / "out" / "merged.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        _mknod_null(out)
        code, err = run_main(work / "in" / "cap", "-o", out)
        assert code == 0 and "Traceback" not in err, err
        assert f"wrote to {out} (Chrome JSON" in err
        assert stat.S_ISCHR(os.lstat(out).st_mode), "the device was replaced"
        assert temp_leftovers(work) == []


def test_atomic_writes_refuse_special_files_for_every_writer(tmp_path):
    """The reports and traces written by the profiler go through the same check."""
    from pypto.compile_profiling.foundation.atomic_io import atomic_write_text
    from pypto.errors import OutputPathError

    fifo = tmp_path / "pipeline_profile.txt"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError) as info:
        atomic_write_text(fifo, "report")
    assert str(info.value).startswith(f"{fifo}: is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and temp_leftovers(tmp_path) == []


def test_existing_symlink_output_is_replaced_and_its_target_left_alone(sources):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        target = work / "precious.json"
        target.write_text("keep me")
        out = work / "out" / "merged.json"
        out.symlink_to(target)
        code, err = run_main(work / "in" / "cap", "-o", out, "-q")
        assert code == 0, err
        assert not out.is_symlink() and target.read_text() == "keep me"
        assert_strict_json(out)


def test_help_says_what_happens_to_an_existing_output():
    r = run_subprocess("--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "symlink" in text and "-o -" in text


def test_dash_output_writes_to_stdout(sources):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        r = run_subprocess(work / "in" / "cap", "-o", "-", "-q", cwd=work / "out")
        assert r.returncode == 0, r.stderr
        json.loads(r.stdout, parse_constant=_reject_constant)
        assert json.loads(r.stdout)["traceEvents"]
        assert list((work / "out").iterdir()) == [] and temp_leftovers(work) == []
        assert not (work / "out" / "-").exists()


@pytest.mark.parametrize("value", _xfail("test_offset_us_must_be_finite",
                                         ["nan", "inf", "-inf", "1e300"]))
def test_offset_us_must_be_finite(sources, value):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        out = work / "out" / "m.json"
        code, err = run_main(work / "in" / "cap", "-o", out, f"--offset-us={value}")
        assert code == 2 and "Traceback" not in err, err
        assert "--offset-us" in err.splitlines()[-1]
        assert list(out.parent.iterdir()) == []


# ---------------------------------------------------------------- signals and temp files

# Runs the merge with the JSON writer stopped after its first chunk: the temp output exists
# then. The child says so by writing to the pipe `argv[1]`, then waits for a signal.
BLOCKED_CHILD = r"""
import os, signal, sys
from pypto.compile_profiling.cli import merge_traces as merge_cli
from pypto.compile_profiling.timeline import write_json

ready = int(sys.argv[1])
real_texts = write_json._event_texts

def texts_then_wait(timeline):
    it = real_texts(timeline)
    yield next(it)
    os.write(ready, b"R")
    while True:
        signal.pause()

write_json._event_texts = texts_then_wait
sys.exit(merge_cli.main(sys.argv[2:]))
"""


def start_blocked_merge(args: list) -> tuple[subprocess.Popen, int]:
    """A merge child stopped inside its write; returns once its temp output exists."""
    r, w = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_CHILD, str(w), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            pass_fds=(w,), env=env, cwd=REPO)
    os.close(w)
    try:
        got = os.read(r, 1)   # blocks until the child is inside the write (or has died)
    finally:
        os.close(r)
    if got != b"R":
        proc.kill()
        _out, err = proc.communicate()
        raise AssertionError(f"the child died before writing: {err}")
    return proc, proc.pid


@pytest.mark.parametrize("case", _xfail("test_signal_during_merge_removes_temp_output",
                                        ["SIGTERM-143", "SIGINT-130"]))
def test_signal_during_merge_removes_temp_output(sources, case):
    signame, status = case.split("-")
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        out = work / "out" / "merged.json"
        out.write_text("the previous output")
        before = tree_state(work / "in")
        proc, _ = start_blocked_merge([work / "in" / "cap", "-o", out, "-q"])
        try:
            assert len(temp_leftovers(work / "out")) == 1   # the write really started
            proc.send_signal(getattr(signal, signame))
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == int(status), err
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert temp_leftovers(work) == []
        assert out.read_text() == "the previous output"
        assert tree_state(work / "in") == before


def test_stale_temp_of_a_killed_merge_is_removed_by_the_next_run(sources):
    files, _, _ = sources["records_estimated"]
    with workspace(files) as work:
        out = work / "out" / "merged.json"
        proc, pid = start_blocked_merge([work / "in" / "cap", "-o", out, "-q"])
        proc.kill()                      # kill -9: no clean-up possible
        proc.communicate()
        stale = temp_leftovers(work / "out")
        assert len(stale) == 1 and f"-{pid}-" in stale[0], stale
        # a temp file of a live process (this one) in the same directory is left alone
        live = work / "out" / f".other.json.pypto-tmp-{socket.gethostname()}-{os.getpid()}-x"
        live.write_text("being written")
        code, err = run_main(work / "in" / "cap", "-o", out, "-q")
        assert code == 0, err
        assert temp_leftovers(work / "out") == [str(live)]
        assert_strict_json(out)


# ---------------------------------------------------------------- run-log parsing cost

def test_run_log_line_with_a_huge_token_parses_in_linear_time(tmp_path):
    """A `[STRACE]` line with one 50,000-character token costs about what the same line
    with its 50,000 characters in short tokens costs (a backtracking pattern made the long
    token quadratic: 25 s). A ratio measured in one run, not a wall-clock limit."""
    import time

    from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log

    head = "[STRACE] v=1 pid=1 tid=1 inv=1 hid=0 depth=0 name=x ts=100 dur=5 "

    def cost(tail: str) -> float:
        p = tmp_path / "host_log.txt"
        p.write_text(head + tail + "\n")
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            log = read_run_log(p)
            best = min(best, time.perf_counter() - t0)
            if best > 1.0:       # already clearly too slow: no need to repeat it
                break
        assert [s.dur_ns for s in log.spans] == [5]
        return best

    short_tokens = cost("abcd " * 10_000)
    one_token = cost("a" * 50_000)
    assert one_token < 10 * short_tokens, (one_token, short_tokens)


# ---------------------------------------------------------------- valid JSON, any layout

def test_valid_json_is_read_wherever_its_text_falls(tmp_path):
    """The 1000-task host-orchestrated capture with spaces added to its host phase line
    (valid JSON: a string then crossed the reader's 64 KiB window, and 6 of 24 shifts were
    refused as invalid) merges like the original."""
    case = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"
    files = _capture_files(case.name, ("*.json", "*.txt", "*.jsonl"))
    line = files["host_phase_records.jsonl"].strip()
    files["host_phase_records.jsonl"] = line[:1] + b" " * 12 + line[1:] + b"\n"
    with workspace({f"cap/{k}": v for k, v in files.items()}) as work:
        out = work / "out" / "merged.json"
        code, err = run_main(work / "in" / "cap", "-o", out, "-q")
        assert code == 0, err
        assert_strict_json(out)


# ---------------------------------------------------------------- `-o -` on ordinary pipes

def _merge_to_stdout(work: Path, stdout, *, shell_redirect: str = "") -> subprocess.Popen:
    args = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
            str(work / "in" / "cap"), "-o", "-", "-q"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if shell_redirect:   # as a shell runs it: `... >&-`
        return subprocess.Popen(["sh", "-c", 'exec "$@" ' + shell_redirect, "sh", *args],
                                stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=work)
    return subprocess.Popen(args, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=work)


@pytest.fixture(scope="module")
def big_capture() -> dict[str, bytes]:
    """A capture whose trace is far bigger than a pipe holds (64 KiB)."""
    case = "hbg_benchmark_bgemm_case0_l4_depgen"
    return {f"cap/{k}": v for k, v in _capture_files(case, (
        "chip_swimlane_records.json", "deps.json", "name_map_*.json")).items()}


def test_a_reader_that_stops_early_ends_the_merge_quietly(big_capture):
    """`pypto-merge-traces ... -o - | head -c 100`: the rest of the write fails with EPIPE;
    the merge stops without a word, status 141 as for a tool stopped by SIGPIPE."""
    with workspace(big_capture) as work:
        r, w = os.pipe()
        proc = _merge_to_stdout(work, w)
        os.close(w)
        with os.fdopen(r, "rb") as reader:
            assert len(reader.read(100)) == 100
        _, err = proc.communicate(timeout=120)   # the read end is closed: EPIPE
        assert proc.returncode == 141, err
        assert err == b""
        assert temp_leftovers(work) == [] and list((work / "out").iterdir()) == []


def test_stdout_on_a_full_device_is_one_line_exit_1(big_capture):
    with workspace(big_capture) as work, open("/dev/full", "wb") as full:
        proc = _merge_to_stdout(work, full)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1
        assert err.decode() == "stdout: cannot write: No space left on device\n"
        assert temp_leftovers(work) == []


def test_closed_stdout_is_one_line_exit_1_before_reading(big_capture):
    with workspace(big_capture) as work:
        proc = _merge_to_stdout(work, None, shell_redirect=">&-")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1
        assert err.decode() == "stdout: cannot write: standard output is closed\n"


# ---------------------------------------------------------------- a late Ctrl-C

@pytest.mark.parametrize("signame, status", [("SIGINT", 130), ("SIGTERM", 143)])
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_signal_at_the_rename_says_what_is_true(sources, monkeypatch, signame, status,
                                                  when):
    """The signal arrives just before or just after the output is renamed into place (a
    real signal, raised by a wrapped `os.replace`): the line says not written / written."""
    from pypto.compile_profiling.foundation import atomic_io

    files, _, _ = sources["records_estimated"]
    real_replace = atomic_io.os.replace
    with workspace(files) as work:
        out = work / "out" / "merged.json"
        out.write_text("the previous output")

        def replace_then_signal(src, dst, *a, **kw):
            if when == "after":
                real_replace(src, dst, *a, **kw)
            signal.raise_signal(getattr(signal, signame))
            if when == "before":
                real_replace(src, dst, *a, **kw)   # not reached: the signal stopped it

        monkeypatch.setattr(atomic_io.os, "replace", replace_then_signal)
        code, err = run_main(work / "in" / "cap", "-o", out, "-q")
        monkeypatch.setattr(atomic_io.os, "replace", real_replace)
        assert code == status and "Traceback" not in err, err
        if when == "after":
            assert err.splitlines() == [f"{out}: written, then interrupted by {signame}"]
            assert_strict_json(out)
        else:
            assert err.splitlines() == [f"{out}: not written (interrupted by {signame})"]
            assert out.read_text() == "the previous output"
        assert temp_leftovers(work) == []
