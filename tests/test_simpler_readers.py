"""Readers of Simpler's files: real captures read, bad input rejected with TraceInputError."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling import simpler_deps, simpler_json, simpler_records
from pypto.compile_profiling import simpler_readers as sr
from pypto.errors import TraceInputError

pytestmark = pytest.mark.skipif(not CASES, reason="Simpler fixtures not present")


def _raw(case: str) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


@pytest.mark.parametrize("case", CASES)
def test_records_of_every_fixture_match_the_raw_json(case):
    raw = _raw(case)
    rec = sr.read_swimlane_records(FIXTURES / case / "chip_swimlane_records.json")
    assert rec.level == raw["chip_swimlane_level"]
    assert rec.metadata.clock_freq_hz == raw["metadata"]["clock_freq_hz"]
    assert rec.aicore.shape == (len(raw["aicore_tasks"]), 6)
    assert rec.aicore.tolist() == raw["aicore_tasks"]
    assert rec.aicpu.tolist() == raw["aicpu_tasks"]
    assert [len(s) for s in rec.scheduler_phases] == [
        len(t) for t in raw.get("aicpu_scheduler_phases", [])
    ]
    assert [len(s) for s in rec.orchestrator_phases] == [
        len(t) for t in raw.get("aicpu_orchestrator_phases", [])
    ]
    assert [len(s) for s in rec.host_orchestrator_phases] == [
        len(t) for t in raw.get("host_orchestrator_phases", [])
    ]
    for s, t in zip(rec.scheduler_phases, raw.get("aicpu_scheduler_phases", [])):
        assert s.names == [r["kind"] for r in t]
        assert s.starts.tolist() == [r["start_cycles"] for r in t]
    has_anchors = "clock_anchors" in raw["metadata"]
    assert (rec.metadata.clock_anchors is not None) == has_anchors
    assert has_anchors == case.startswith("hbg_")  # README: only host-orchestrated
    if has_anchors:
        assert rec.metadata.orchestrator_source == "host"
        assert len(rec.metadata.clock_anchors.samples) == 6
        assert rec.host_device_uploads is not None and len(rec.host_device_uploads) == 2


def test_old_l2_file_with_five_column_rows_reads_with_zero_receive_to_start(tmp_path):
    raw = _raw("tmr_vector_example_l4_depgen")
    raw["l2_swimlane_level"] = raw.pop("chip_swimlane_level")
    raw["aicore_tasks"] = [row[:5] for row in raw["aicore_tasks"]]
    p = tmp_path / "l2_swimlane_records.json"
    p.write_text(json.dumps(raw))
    rec = sr.read_swimlane_records(p)
    assert rec.level_key == "l2_swimlane_level" and rec.aicore_columns == 5
    assert rec.aicore[:, sr.AIC_R2S].tolist() == [0] * len(raw["aicore_tasks"])


def test_level_gating_ignores_streams_above_the_level(tmp_path):
    raw = _raw("tmr_vector_example_l4_depgen")
    raw["chip_swimlane_level"] = 2
    p = tmp_path / "chip_swimlane_records.json"
    p.write_text(json.dumps(raw))
    rec = sr.read_swimlane_records(p)
    assert rec.scheduler_phases == [] and rec.orchestrator_phases == []
    assert set(rec.ignored_streams) == {"aicpu_scheduler_phases", "aicpu_orchestrator_phases"}
    assert len(rec.aicpu) == 5


def _mutations():
    def drop_freq(d):
        del d["metadata"]["clock_freq_hz"]

    def level_7(d):
        d["chip_swimlane_level"] = 7

    def no_level(d):
        del d["chip_swimlane_level"]

    def str_freq(d):
        d["metadata"]["clock_freq_hz"] = "50000000"

    def end_before_start(d):
        row = d["aicore_tasks"][0]
        row[3], row[4] = row[4], row[3]

    def negative(d):
        d["aicpu_tasks"][0][2] = -5

    def float_cycles(d):
        d["aicore_tasks"][1][3] = 1.5

    def ragged(d):
        d["aicore_tasks"][0].append(1)
        d["aicore_tasks"][0].append(1)

    def sched_backwards(d):
        ph = d["aicpu_scheduler_phases"][1][0]
        ph["end_cycles"] = ph["start_cycles"] - 1

    def sched_missing_kind(d):
        del d["aicpu_scheduler_phases"][1][0]["kind"]

    def anchors_v2(d):
        d["metadata"]["clock_anchors"]["schema_version"] = 2

    def anchor_bad_type(d):
        d["metadata"]["clock_anchors"]["samples"][0]["host_before_ns"] = "x"

    def host_backwards(d):
        ph = d["host_orchestrator_phases"][0][0]
        ph["end_host_ns"] = ph["start_host_ns"] - 10

    def core_out_of_range(d):
        d["aicore_tasks"][0][0] = 99

    def top_level_list(d):
        d.clear()

    return [
        ("clock_freq_hz", drop_freq),
        ("unknown level 7", level_7),
        ("chip_swimlane_level", no_level),
        ("expected an integer", str_freq),
        ("before start_cycles", end_before_start),
        ("negative value", negative),
        ("expected an integer", float_cycles),
        ("columns", ragged),
        ("before start_cycles", sched_backwards),
        ("missing 'kind'", sched_missing_kind),
        ("unknown schema_version 2", anchors_v2),
        ("expected an integer", anchor_bad_type),
        ("before start_host_ns", host_backwards),
        ("core_id 99", core_out_of_range),
        ("chip_swimlane_level", top_level_list),
    ]


@pytest.mark.parametrize("expected,mutate", _mutations(), ids=lambda x: getattr(x, "__name__", x))
def test_bad_records_raise_one_clear_line(tmp_path, expected, mutate):
    raw = _raw("hbg_vector_example_l4_depgen")
    mutate(raw)
    p = tmp_path / "chip_swimlane_records.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(TraceInputError) as info:
        sr.read_swimlane_records(p)
    msg = str(info.value)
    assert msg.startswith(str(p) + ": ") and "\n" not in msg
    assert expected in info.value.problem


def test_truncated_and_invalid_json_are_named(tmp_path):
    text = (FIXTURES / "hbg_vector_example_l4_depgen" / "chip_swimlane_records.json").read_text()
    p = tmp_path / "chip_swimlane_records.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(TraceInputError, match="truncated JSON"):
        sr.read_swimlane_records(p)
    p.write_text('{"chip_swimlane_level": 4,, }')
    with pytest.raises(TraceInputError, match="invalid JSON"):
        sr.read_swimlane_records(p)
    p.write_text("")
    with pytest.raises(TraceInputError, match="empty"):
        sr.read_swimlane_records(p)
    with pytest.raises(TraceInputError, match="cannot read"):
        sr.read_swimlane_records(tmp_path / "missing.json")


def test_deps_name_map_and_dispatch_program(tmp_path):
    deps = sr.read_deps(FIXTURES / "tmr_mixed_example_case1_l4_depgen" / "deps.json")
    assert deps.kernel_ids[4294967296] == (0, 1, 2)
    assert all(t >= 0 for t in deps.task_ids)
    spmd = sr.read_deps(FIXTURES / "tmr_spmd_paged_attention_b1_s128_l4_depgen" / "deps.json")
    assert spmd.block_num[0] == 16
    bg = sr.read_deps(FIXTURES / "tmr_bgemm_case0_l4_depgen" / "deps.json")
    assert len(bg.edges) == len(set(bg.edges)) > 0
    nm = sr.read_name_map(next((FIXTURES / "tmr_bgemm_case0_l4_depgen").glob("name_map_*.json")))
    assert nm.names == {0: "GEMM", 1: "ADD"}
    p = tmp_path / "deps.json"
    p.write_text(json.dumps({"tasks": [{"task_id": "x1"}], "edges": []}))
    with pytest.raises(TraceInputError, match="task id"):
        sr.read_deps(p)
    p.write_text(json.dumps({"tasks": [], "edges": [{"pred": "1"}]}))
    with pytest.raises(TraceInputError, match="missing 'succ'"):
        sr.read_deps(p)
    p.write_text(json.dumps({"callable_id_to_name": {"zero": "QK"}}))
    with pytest.raises(TraceInputError, match="not an integer id"):
        sr.read_name_map(p)
    p.write_text(json.dumps({"program": "paged_attention"}))
    assert sr.read_dispatch_program(p).program == "paged_attention"
    p.write_text(json.dumps({"program": 3}))
    with pytest.raises(TraceInputError, match="program"):
        sr.read_dispatch_program(p)


@pytest.mark.parametrize("case", CASES)
def test_host_log_and_phase_records(case):
    hl = sr.read_host_log(FIXTURES / case / "host_log.txt")
    strace = json.loads((FIXTURES / case / "strace_trace.json").read_text())
    xs = [e for e in strace["traceEvents"] if e["ph"] == "X"]
    assert sorted(s.name for s in hl.spans) == sorted(e["name"] for e in xs)
    for s in hl.spans:
        if not s.device_clock:  # Simpler's own conversion: µs of the same ns values
            ev = next(e for e in xs if e["name"] == s.name and e["tid"] == 0)
            assert abs(ev["ts"] * 1000 - s.ts_ns) < 1
    assert [(a.pid, a.mono_ns, a.wall_ns) for a in hl.clock_anchors] == [
        (a["pid"], int(a["mono_ns"]), int(a["wall_ns"])) for a in strace["clockAnchors"]
    ]
    assert any(s.device_clock and s.attrs["clk"] == "dev" for s in hl.spans)
    if (FIXTURES / case / "host_phase_records.jsonl").exists():
        batches = sr.read_host_phase_records(FIXTURES / case / "host_phase_records.jsonl")
        assert batches[0].phases.names[0] == "args"


def test_host_log_rejects_unknown_version_and_garbage(tmp_path):
    p = tmp_path / "host_log.txt"
    p.write_text("prefix [STRACE] v=2 pid=1 tid=1 name=a ts=1 dur=2\n")
    with pytest.raises(TraceInputError, match="line 1: unknown \\[STRACE\\] version"):
        sr.read_host_log(p)
    p.write_text("[STRACE] v=1 pid=1 tid=1 name=a ts=1 dur=-2\n")
    with pytest.raises(TraceInputError, match="negative duration"):
        sr.read_host_log(p)
    p.write_text("[STRACE] v=1 pid=1 tid=x name=a ts=1 dur=2\n")
    with pytest.raises(TraceInputError, match="tid='x'"):
        sr.read_host_log(p)
    p.write_text("nothing here\n")
    with pytest.raises(TraceInputError, match="not a Simpler run log"):
        sr.read_host_log(p)


def test_discovery_of_work_dir_dfx_outputs_leaf_and_distributed_layout(tmp_path):
    work = tmp_path / "work"
    for r, k, case in (
        (0, 0, "hbg_vector_example_l4_depgen"),
        (1, 0, "tmr_vector_example_l4_depgen"),
        (1, 1, "tmr_mixed_example_case1_l4_depgen"),
    ):
        leaf = work / "dfx_outputs" / f"rank{r}" / f"d{k}"
        shutil.copytree(FIXTURES / case, leaf)
        (leaf / "dispatch_program.json").write_text(json.dumps({"program": case}))
    (work / "dfx_outputs" / "rank0" / "d0" / "pmu.csv").write_text("a,b\n")
    (work / "dfx_outputs" / "rank0" / "d0" / "args_dump").mkdir()
    found = sr.discover_captures(work)
    assert [(f.rank, f.dispatch) for f in found] == [(0, 0), (1, 0), (1, 1)]
    assert [f.label for f in found] == ["r0d0", "r1d0", "r1d1"]
    assert len(found[0].listed_only) == 2
    assert sr.discover_captures(work / "dfx_outputs") == found
    leaf = sr.discover_captures(work / "dfx_outputs" / "rank1" / "d1")
    assert len(leaf) == 1 and leaf[0].rank == 1 and leaf[0].dispatch == 1
    cap = sr.load_capture(found[2])
    assert cap.dispatch_program.program == "tmr_mixed_example_case1_l4_depgen"
    assert cap.name_map.names[0] == "MATMUL"
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "pmu.csv").write_text("x")
    with pytest.raises(TraceInputError, match="no Simpler capture files"):
        sr.discover_captures(empty)
    with pytest.raises(TraceInputError, match="no such"):
        sr.discover_captures(tmp_path / "nope")


# ---------------------------------------------------------------- property-based tests

_u32 = st.integers(0, 2**32 - 1)
_cyc = st.integers(1, 2**40)


@st.composite
def _records(draw):
    ncores = draw(st.integers(1, 6))
    core_types = draw(st.lists(st.sampled_from(["aic", "aiv"]), min_size=ncores, max_size=ncores))
    six = draw(st.booleans())
    rows, cpu = [], []
    for _ in range(draw(st.integers(0, 12))):
        core = draw(st.integers(0, ncores - 1))
        start = draw(_cyc)
        end = start + draw(st.integers(0, 10**6))
        r2s = draw(st.integers(0, start))
        row = [core, draw(st.integers(0, 2**40)), draw(_u32), start, end]
        rows.append(row + [r2s] if six else row)
        d = draw(st.integers(0, start))
        cpu.append([core, row[2], d, end + draw(st.integers(0, 1000))])
    phases = [
        [
            {
                "kind": draw(st.sampled_from(["complete", "dispatch", "scan", "idle", "x"])),
                "start_cycles": (s := draw(_cyc)),
                "end_cycles": s + draw(st.integers(0, 500)),
                "loop_iter": 1,
                "tasks_processed": draw(st.integers(0, 3)),
            }
            for _ in range(draw(st.integers(0, 4)))
        ]
        for _ in range(draw(st.integers(0, 3)))
    ]
    return {
        "chip_swimlane_level": 4,
        "metadata": {
            "clock_freq_hz": draw(st.sampled_from([50_000_000, 10**9])),
            "num_cores": ncores,
            "core_types": core_types,
        },
        "aicore_tasks": rows,
        "aicpu_tasks": cpu,
        "aicpu_scheduler_phases": phases,
        "aicpu_orchestrator_phases": [
            [{"submit_idx": 0, "task_id": 1, "start_cycles": 5, "end_cycles": 9}]
        ],
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records())
def test_random_valid_records_round_trip(data):
    rec = sr.read_swimlane_records("mem.json", data=json.loads(json.dumps(data)))
    width = len(data["aicore_tasks"][0]) if data["aicore_tasks"] else 6
    got = rec.aicore.tolist()
    assert [r[:width] for r in got] == data["aicore_tasks"]
    assert rec.aicpu.tolist() == data["aicpu_tasks"]
    assert [s.names for s in rec.scheduler_phases] == [
        [p["kind"] for p in t] for t in data["aicpu_scheduler_phases"]
    ]
    assert [s.ends.tolist() for s in rec.scheduler_phases] == [
        [p["end_cycles"] for p in t] for t in data["aicpu_scheduler_phases"]
    ]


_junk = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.integers(-5, 5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_corruptions_raise_trace_input_error_or_read(data):
    base = _raw("hbg_vector_example_l4_depgen")
    doc = copy.deepcopy(base)
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_junk)
    try:
        sr.read_swimlane_records("corrupt.json", data=doc)
    except TraceInputError as exc:
        assert "\n" not in str(exc) and exc.problem


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_random_bytes_never_raise_anything_but_trace_input_error(blob):
    try:
        doc = sr.parse_json_bytes(blob, "x.json")
    except TraceInputError:
        return
    for reader in (
        sr.read_swimlane_records,
        sr.read_deps,
        sr.read_name_map,
        sr.read_merged_swimlane,
        sr.read_dispatch_program,
    ):
        try:
            reader("x.json", data=doc)
        except TraceInputError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=5))
def test_random_log_lines_never_raise_anything_but_trace_input_error(tmp_path_factory, lines):
    p = tmp_path_factory.mktemp("log") / "host_log.txt"
    p.write_text("\n".join("[STRACE] " + line if i % 2 else line for i, line in enumerate(lines)))
    try:
        sr.read_host_log(p)
    except TraceInputError:
        pass


# ---------------------------------------------------------------- columns and chunked reading

@pytest.mark.parametrize("case", CASES)
def test_phase_records_read_back_with_the_same_keys_order_and_values(case):
    raw = _raw(case)
    rec = sr.read_swimlane_records(FIXTURES / case / "chip_swimlane_records.json")
    for streams, name in ((rec.scheduler_phases, "aicpu_scheduler_phases"),
                          (rec.orchestrator_phases, "aicpu_orchestrator_phases"),
                          (rec.host_orchestrator_phases, "host_orchestrator_phases")):
        for s, thread in zip(streams, raw.get(name, [])):
            got = [list(r.items()) for r in s.records]
            assert got == [list(r.items()) for r in thread]
            assert all(type(v) is type(w) for r, t in zip(s.records, thread)
                       for v, w in zip(r.values(), t.values()))


def test_compact_phase_records_keep_mixed_and_unusual_values_exactly():
    recs = [{"kind": "a", "start_cycles": 1, "end_cycles": 2, "x": [1, 2], "f": 1.5},
            {"start_cycles": 3, "kind": "b", "end_cycles": 4, "x": [True, 0], "n": None,
             "tasks_processed": 3},
            {"kind": "a", "start_cycles": 5, "end_cycles": 6, "x": [1, 2, 3], "big": 2**63,
             "s": "\u00e9\"}"}]
    b = simpler_records._PhaseStreamBuilder(0, "m.json", "w", start_key="start_cycles",
                               end_key="end_cycles", name_key="kind", default_name="",
                               clock="device_cycles")
    for part in (recs[:1], recs[1:]):
        text = json.dumps(part, indent=1).encode()
        b.add(json.loads(text), text)
    s = b.finish()
    assert all(isinstance(r, sr.PhaseRecord) for r in s.records)
    assert [list(r.items()) for r in s.records] == [list(r.items()) for r in recs]
    assert type(s.records[1]["x"][0]) is bool
    assert "f" not in s.records[1] and s.records[0]["f"] == 1.5
    with pytest.raises(KeyError):
        s.records[1]["f"]
    assert s.values("tasks_processed") == [None, 3, None]
    assert s.values("task_id") == [None, None, None]
    assert s.values("f") == [1.5, None, None]
    assert s.names == ["a", "b", "a"] and s.ends.tolist() == [2, 4, 6]


def _pretty(doc) -> str:
    return json.dumps(doc, indent=2)


@pytest.mark.parametrize("case", [c for c in CASES if (FIXTURES / c / "deps.json").exists()])
def test_deps_read_in_pieces_equals_deps_read_whole(case, monkeypatch, tmp_path):
    path = FIXTURES / case / "deps.json"
    whole = sr.read_deps(path, json.loads(path.read_text()))
    monkeypatch.setattr(simpler_json, "_CHUNK_BYTES", 64)           # force many pieces
    for text in (path.read_text(), _pretty(json.loads(path.read_text())),
                 json.dumps(json.loads(path.read_text()), separators=(",", ":"))):
        p = tmp_path / "deps.json"
        p.write_text(text)
        got = simpler_deps._read_deps_chunked(p.read_bytes(), p)
        assert (got.task_ids, got.kernel_ids, got.block_num, got.edges) == (
            whole.task_ids, whole.kernel_ids, whole.block_num, whole.edges)


def test_chunked_reader_falls_back_and_words_errors_like_the_plain_one(tmp_path, monkeypatch):
    monkeypatch.setattr(simpler_json, "_CHUNK_BYTES", 16)
    p = tmp_path / "deps.json"
    doc = {"tasks": [{"task_id": str(i), "args": [{"a": "},{\"task_id\""}]}
                     for i in range(20)], "edges": [{"pred": "1", "succ": "2"}]}
    p.write_text(json.dumps(doc))
    assert sr.read_deps(p).task_ids == list(range(20))   # separators inside strings
    doc["tasks"][7]["kernel_ids"] = ["x"]
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceInputError, match=r"tasks\[7\]\.kernel_ids"):
        sr.read_deps(p)
    for cut in (-9, -40, 100):
        p.write_text(json.dumps(doc)[:cut])
        with pytest.raises(TraceInputError) as plain:
            sr.parse_json_bytes(p.read_bytes(), p)
        with pytest.raises(TraceInputError) as got:
            sr.read_deps(p)
        assert str(got.value) == str(plain.value)


def _records_view(rec: sr.SwimlaneRecords) -> tuple:
    def streams(group):
        return [(s.thread, s.clock, s.names, s.starts.tolist(), s.ends.tolist(),
                 [list(r.items()) for r in s.records]) for s in group]
    up = rec.host_device_uploads
    return (rec.level, rec.level_key, rec.metadata.raw, rec.aicore.tolist(), rec.aicore_columns,
            rec.aicpu.tolist(), streams(rec.scheduler_phases), streams(rec.orchestrator_phases),
            streams(rec.host_orchestrator_phases), streams([up]) if up else None,
            rec.ignored_streams)


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_records_read_in_pieces_equal_records_read_whole(case, compact, monkeypatch, tmp_path):
    path = FIXTURES / case / "chip_swimlane_records.json"
    raw = json.loads(path.read_text())
    whole = _records_view(sr.read_swimlane_records(path, copy.deepcopy(raw)))
    monkeypatch.setattr(simpler_json, "_CHUNK_BYTES", 200)          # force many pieces
    monkeypatch.setattr(simpler_records, "_PHASE_PIECE_BYTES", 300)
    monkeypatch.setattr(simpler_records, "_DECODED_BLOCKS", 2)
    monkeypatch.setattr(simpler_records, "_COMPACT_FILE_BYTES", 0 if compact else 1 << 40)
    for text in (path.read_text(), json.dumps(raw, separators=(",", ":"))):
        p = tmp_path / "chip_swimlane_records.json"
        p.write_text(text)
        rec = simpler_records._read_records_chunked(p.read_bytes(), p)
        assert _records_view(rec) == whole
        assert rec.compact == compact
        for s in rec.scheduler_phases:
            assert all(isinstance(r, sr.PhaseRecord if compact else dict) for r in s.records)


def test_records_read_in_pieces_fall_back_on_bad_rows_with_the_plain_message(tmp_path, monkeypatch):
    monkeypatch.setattr(simpler_json, "_CHUNK_BYTES", 64)
    raw = _raw("tmr_bgemm_case0_l4_depgen")
    raw["aicore_tasks"][500][3] = -5
    p = tmp_path / "chip_swimlane_records.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(TraceInputError, match=r"aicore_tasks\[500\]\[3\]: negative value -5"):
        sr.read_swimlane_records(p)
    raw = _raw("tmr_bgemm_case0_l4_depgen")
    raw["aicpu_scheduler_phases"][1][300]["end_cycles"] = 0
    p.write_text(json.dumps(raw))
    with pytest.raises(TraceInputError, match=r"aicpu_scheduler_phases\[1\]\[300\]: end_cycles 0"):
        sr.read_swimlane_records(p)


def test_deps_read_in_a_child_equals_deps_read_here(tmp_path, monkeypatch):
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    for f in ("chip_swimlane_records.json", "deps.json"):
        shutil.copy(case / f, tmp_path / f)
    monkeypatch.setattr(sr, "_PARALLEL_DEPS_BYTES", 0)
    files = sr.discover_captures(tmp_path)[0]
    pending = sr._deps_in_child(files)
    assert pending is not None
    got = pending.result()
    want = sr.read_deps(case / "deps.json")
    assert (got.task_ids, got.kernel_ids, got.block_num, got.edges) == (
        want.task_ids, want.kernel_ids, want.block_num, want.edges)
    assert sr.load_capture(files).deps.edges == want.edges
    # an error found by the child is raised when the graph is first used, naming the file
    doc = json.loads((case / "deps.json").read_text())
    doc["tasks"][3]["block_num"] = -1
    (tmp_path / "deps.json").write_text(json.dumps(doc))
    cap = sr.load_capture(files)
    assert cap.deps_pending is not None and cap.records is not None
    with pytest.raises(TraceInputError, match=r"deps\.json: tasks\[3\]\.block_num"):
        cap.deps  # noqa: B018
    cap = sr.load_capture(files)
    cap.deps = None                      # replacing it stops the child
    assert cap.deps is None and cap.deps_pending is None
    # a bad records file wins, and the child is reaped
    (tmp_path / "chip_swimlane_records.json").write_text("{")
    with pytest.raises(TraceInputError, match="chip_swimlane_records.json"):
        sr.load_capture(files)


def test_args_stripping_follows_json_grammar_and_keeps_invalid_args_an_error(tmp_path, monkeypatch):
    strip = simpler_deps._STRIP_TASK_ARGS
    for text in (b',"args":[]', b', "args" : [ {"a": 1, "b": [1, -2.5e3, "x"], "c": null} , {} ]',
                 b',"args":[{"t":"FLOAT32","n":0,"s":[65536],"o":"0"}]'):
        assert strip.fullmatch(text), text
    for text in (b',"args":[{"t":FLOAT32}]', b',"args":[{"t":01}]', b',"args":[{"t":"a\\"b"}]',
                 b',"args":[{"t":[{"x":1}]}]', b',"args":[{"t":tru}]', b',"args":[{"t":1.}]',
                 b',"args":[{"t":"\xc3\xa9"}]', b',"args":[{"t":"a\x01"}]'):
        assert not strip.fullmatch(text), text
    monkeypatch.setattr(simpler_json, "_CHUNK_BYTES", 64)
    good = json.dumps({"tasks": [{"task_id": str(i), "kernel_ids": [i, -1, -1],
                                  "args": [{"dtype": "FLOAT32", "shape": [4]}]}
                                 for i in range(30)], "edges": []})
    p = tmp_path / "deps.json"
    p.write_text(good)
    assert sr.read_deps(p).kernel_ids[29] == (29, -1, -1)
    p.write_text(good.replace('"FLOAT32"', "FLOAT32", 1))   # invalid JSON inside an args list
    with pytest.raises(TraceInputError, match="invalid JSON"):
        sr.read_deps(p)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.fixed_dictionaries(
    {"task_id": st.integers(0, 40).map(str)},
    optional={"kernel_ids": st.lists(st.integers(-1, 3), max_size=3),
              "block_num": st.integers(0, 4), "args": st.just([{"idx": 0}])}), max_size=30),
       st.lists(st.tuples(st.integers(0, 40).map(str), st.integers(0, 40).map(str)), max_size=30))
def test_column_wise_deps_reading_equals_the_per_item_loop(tasks, edges):
    edges = [{"pred": p, "succ": q} for p, q in edges]
    fast = simpler_deps._DepsBuilder("d.json")
    fast.add_tasks(tasks[:10])
    fast.add_tasks(tasks[10:])
    fast.add_edges(edges)
    slow = simpler_deps._DepsBuilder("d.json")
    slow._add_tasks_checked(tasks)
    slow._add_edges_checked(edges)
    a, b = fast.result(), slow.result()
    assert (a.task_ids, a.kernel_ids, a.block_num, a.edges) == (
        b.task_ids, b.kernel_ids, b.block_num, b.edges)
    assert list(a.kernel_ids) == list(b.kernel_ids) and list(a.block_num) == list(b.block_num)
