"""Today's Simpler records layout, as its writer's golden lays it out (our field-for-field copy
under tests/fixtures/simpler_today/writer_golden/): it merges and every record is drawn; run
identity, capture accounting, resolution and AICore schedulers, lifecycle records, unknown
kinds and keys; and the input it refuses, one line with the file and the JSON path, with one
range rule for every value that reaches a clock conversion (issue 22, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_paths import TEST_FIXTURES
from simpler_fixtures import FIXTURES

from pypto.compile_profiling.cli.merge_traces import main
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.read.read_records import read_records
from pypto.compile_profiling.trace_merge.read.simpler_schema import MAX_CLOCK_NS, max_cycles
from pypto.errors import TraceInputError

GOLDEN_DIR = TEST_FIXTURES / "simpler_today" / "writer_golden"
GOLDEN = GOLDEN_DIR / "chip_swimlane_records.json"
RECORDS = "chip_swimlane_records.json"


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def write(tmp_path: Path, doc: dict) -> Path:
    d = tmp_path / "dfx_outputs"
    d.mkdir(parents=True, exist_ok=True)
    (d / RECORDS).write_text(json.dumps(doc))     # json: integers past 64 bits too
    return d


def problem(path: Path) -> str:
    with pytest.raises(TraceInputError) as info:
        read_records(path)
    assert info.value.path == str(path)
    return info.value.problem


def skipped(path: Path) -> str:
    """The one warning a records file with bad records gets (they are skipped alone)."""
    rec = read_records(path)
    (line,) = [w for w in rec.warnings if "bad record(s) skipped, each alone" in w]
    assert line.startswith(f"{path}: ")
    return line


def slices(tl, cat=None) -> list[tuple[str, str, str, dict]]:
    """(process, track, name, args) of every slice (of category `cat`)."""
    out = []
    for b in tl.blocks:
        if cat is None or b.cat == cat:
            args = b.row_args()
            for i, (t, n) in enumerate(zip(b.track.tolist(), b.name.tolist())):
                tr = b.tracks[t]
                out.append((tr.process.name, tr.name, b.names[n], args[i]))
    return out


def process(tl, suffix: str):
    (p,) = [p for p in tl.processes if suffix in p.name]
    return p


# --------------------------------------------------------------------------- the golden

def test_the_golden_is_the_writer_golden_field_for_field():
    """Our copy keeps the pinned text's layout: member order and row widths."""
    doc = golden()
    assert list(doc) == ["chip_swimlane_level", "metadata", "aicore_tasks", "scheduler_tasks",
                         "scheduler_records", "aicpu_orchestrator_phases",
                         "host_orchestrator_phases", "host_device_uploads",
                         "aicpu_lifecycle_records"]
    assert list(doc["metadata"])[:2] == ["runtime", "clock_freq_hz"]
    assert {len(r) for r in doc["aicore_tasks"]} == {7}
    assert {len(r) for r in doc["scheduler_tasks"]["records"]} == {5}
    (stream,) = doc["scheduler_records"]["streams"]
    assert list(stream) == ["platform", "producer", "scheduler_id", "worker_id", "core_type",
                            "physical_core_id", "capture", "records", "metrics"]
    assert list(stream["records"][0]) == ["start_cycles", "end_cycles", "run_epoch",
                                          "loop_iter", "kind", "tasks_processed", "task_id"]


def test_writer_golden_merges_and_every_record_is_drawn(tmp_path, capsys):
    out = tmp_path / "merged.json"
    assert main([str(GOLDEN_DIR), "-o", str(out), "-v"]) == 0
    err = capsys.readouterr().err
    assert "scheduler capture: 2 committed, 5 dropped, truncated: Sched_0" in err
    assert "the device dropped 5 scheduler records (Sched_0 truncated)" in err
    assert "$.aicpu_lifecycle_records: 1 entries are not lifecycle records" in err
    doc = golden()
    by_cat: dict[str, int] = {}
    for e in json.loads(out.read_text())["traceEvents"]:
        if e["ph"] == "X":
            by_cat[e["cat"]] = by_cat.get(e["cat"], 0) + 1
    (stream,) = doc["scheduler_records"]["streams"]
    assert by_cat == {
        "aicore": len(doc["aicore_tasks"]),
        "aicore_setup": sum(r[5] > 0 for r in doc["aicore_tasks"]),
        "scheduler_view": len(doc["scheduler_tasks"]["records"]),
        "scheduler": sum(r["kind"] != "dummy_task" for r in stream["records"]),
        "aicpu_worker": sum(r["kind"] == "dummy_task" for r in stream["records"]),
        "orchestrator": sum(map(len, doc["aicpu_orchestrator_phases"])),
        "host_orchestrator": sum(map(len, doc["host_orchestrator_phases"])),
        "host_h2d": len(doc["host_device_uploads"])}
    assert main([str(GOLDEN_DIR), "-o", str(tmp_path / "merged.pftrace")]) == 0


def test_writer_golden_process_args_and_labels():
    r = merge_traces([GOLDEN_DIR])
    tl = r.timeline
    sched = process(tl, "AICPU scheduler")
    assert sched.args["run_epoch"] == 7700
    assert sched.args["capture"] == {
        "scheduler_records": {"Sched_0": {"committed": 2, "dropped": 5, "truncated": True}}}
    assert process(tl, "AICore").args["capture"] == sched.args["capture"]
    rows = slices(tl, "scheduler") + slices(tl, "aicpu_worker")
    assert [(p.split(" · ")[1], t, n) for p, t, n, _ in rows] == [
        ("AICPU scheduler (estimated)", "Sched_0", "dispatch(1)"),
        ("AICore (estimated)", "AICPU_0", "dummy(t20816)")]     # a marker: the AICPU's lane
    assert rows[0][3]["pop_hit"] == 3 and rows[0][3]["shared_at_end"] == [2, 3, 4]
    assert rows[1][3]["task_id"] == 20816 and "pop_hit" not in rows[1][3]
    assert [a.get("kind", "dispatch") for *_, a in rows] == ["dispatch", "dummy_task"]
    # queue depths come from the metrics: the dispatch record's end (dummy_task does not sample)
    q = {c.name: c.values.tolist() for c in tl.counters if c.name.startswith("shared_ready")}
    assert q == {"shared_ready_queue AIC": [2], "shared_ready_queue AIV": [3],
                 "shared_ready_queue MIX": [4]}
    assert any("2 committed, 5 dropped" in line for line in r.summary_lines)


# --------------------------------------------------------------------------- run identity

def test_records_of_another_run_are_set_aside_and_counted(tmp_path):
    doc = golden()
    doc["aicore_tasks"].append([1, 7, 3, 1100, 1200, 0, 7600])
    doc["scheduler_tasks"]["records"].append([1, 3, 1050, 1250, 7600])
    doc["scheduler_records"]["streams"][0]["records"].append(
        {"start_cycles": 2200, "end_cycles": 2300, "run_epoch": 7600, "loop_iter": 2,
         "kind": "complete", "tasks_processed": 1, "task_id": None})
    d = write(tmp_path, doc)
    rec = read_records(d / RECORDS)
    assert rec.run_epoch == 7700
    assert rec.set_aside == {"aicore_tasks": 1, "scheduler_tasks": 1, "scheduler_records": 1}
    assert len(rec.aicore["core_id"]) == 4 and 7 not in rec.aicore["task_id"].tolist()
    (w,) = [w for w in rec.warnings if "another run" in w]
    assert "3 records of another run" in w and "7700" in w
    r = merge_traces([d])
    assert len(slices(r.timeline, "aicore")) == 4
    assert len(slices(r.timeline, "scheduler")) + len(slices(r.timeline, "aicpu_worker")) == 2
    assert process(r.timeline, "AICore").args["set_aside_other_runs"] == rec.set_aside
    assert any("3 records of other runs set aside" in s for s in r.summary_lines)


def test_the_collection_names_the_run(tmp_path):
    doc = golden()
    doc["metadata"]["collection"] = {"run_epoch": 7600, "session_id": 1, "verdict": "complete"}
    for row in doc["aicore_tasks"][:1]:
        row[6] = 7600
    rec = read_records(write(tmp_path, doc) / RECORDS)
    assert rec.run_epoch == 7600
    assert len(rec.aicore["core_id"]) == 1
    assert rec.set_aside["aicore_tasks"] == 3 and rec.set_aside["scheduler_records"] == 2


def test_august_files_have_no_run_identity():
    rec = read_records(FIXTURES / "tmr_vector_example_l4_depgen" / RECORDS)
    assert rec.layout == "august" and rec.run_epoch is None and not rec.set_aside


# --------------------------------------------------------------------------- what is drawn

def test_unknown_kinds_are_drawn_under_their_names_with_one_warning(tmp_path):
    doc = golden()
    recs = doc["scheduler_records"]["streams"][0]["records"]
    for i, kind in enumerate(("zz_new", "yy_other", "zz_new")):
        recs.append({"start_cycles": 2200 + 100 * i, "end_cycles": 2250 + 100 * i,
                     "run_epoch": 7700, "loop_iter": 3 + i, "kind": kind,
                     "tasks_processed": 1, "task_id": None})
    d = write(tmp_path, doc)
    r = merge_traces([d])
    names = [n for _, _, n, _ in slices(r.timeline, "scheduler")]
    assert names.count("zz_new(1)") == 2 and names.count("yy_other(1)") == 1
    (w,) = [w for w in r.warnings if "does not know" in w]
    assert "3 scheduler phases of 2 kind(s) this reader does not know (yy_other, zz_new)" in w


def test_unknown_members_are_ignored(tmp_path):
    doc = golden()
    doc["a_future_section"] = {"records": [[1, 2, 3]]}
    doc["scheduler_tasks"]["a_future_member"] = [1]
    doc["scheduler_records"]["a_future_member"] = {"x": 1}
    doc["scheduler_records"]["streams"][0]["a_future_member"] = "x"
    doc["metadata"]["a_future_member"] = 1
    rec = read_records(write(tmp_path, doc) / RECORDS)
    assert len(rec.scheduler[0]) == 2 and len(rec.aicpu["core_id"]) == 2


def test_phase_kinds_of_today_and_a_resolution_thread(tmp_path):
    doc = golden()
    kinds = ["complete", "async_poll", "state_probe", "worksteal", "refill", "release",
             "dummy", "early_dispatch", "drain", "graph_prepare", "resolve"]
    recs = doc["scheduler_records"]["streams"][0]["records"]
    for i, kind in enumerate(kinds):
        recs.append({"start_cycles": 3000 + 100 * i, "end_cycles": 3050 + 100 * i,
                     "run_epoch": 7700, "loop_iter": 10 + i, "kind": kind,
                     "tasks_processed": i, "task_id": None})
    resolution = {"platform": "a2a3", "producer": "aicpu", "scheduler_id": 3, "worker_id": 3,
                  "core_type": "aicpu", "physical_core_id": None,
                  "capture": {"committed": 3, "dropped": 0, "truncated": False},
                  "records": [{"start_cycles": 4000 + 100 * i, "end_cycles": 4050 + 100 * i,
                               "run_epoch": 7700, "loop_iter": i, "kind": k,
                               "tasks_processed": 1, "task_id": None}
                              for i, k in enumerate(("resolve_standalone", "async_poll",
                                                     "dummy"))],
                  "metrics": [{"record_index": i, "shared_at_start": [0, i, 0],
                               "shared_at_end": [0, i + 5, 0]} for i in range(3)]}
    doc["scheduler_records"]["streams"].append(resolution)
    r = merge_traces([write(tmp_path, doc)])
    assert not [w for w in r.warnings if "does not know" in w]
    rows = slices(r.timeline, "scheduler")
    on = {(t, n) for _, t, n, _ in rows}
    assert {("Sched_0", f"{k}({i})") for i, k in enumerate(kinds)} <= on
    assert {("Sched_3 (resolution)", "resolve(1)"), ("Sched_3 (resolution)", "async_poll(1)"),
            ("Sched_3 (resolution)", "dummy(1)")} <= on
    # a resolution thread's phases sample the ready queue too
    aiv = next(c for c in r.timeline.counters if c.name == "shared_ready_queue AIV")
    assert [5, 6, 7] == [v for v in aiv.values.tolist() if v >= 5]


def test_a_tmr_resolve_nested_in_complete_stays_on_its_scheduler(tmp_path):
    doc = golden()
    (stream,) = doc["scheduler_records"]["streams"]
    stream["scheduler_id"] = 1                 # not owning a core would make it resolution...
    stream["records"] = [
        {"start_cycles": 2000, "end_cycles": 2100, "run_epoch": 7700, "loop_iter": 0,
         "kind": "dummy", "tasks_processed": 1, "task_id": None},
        {"start_cycles": 2010, "end_cycles": 2050, "run_epoch": 7700, "loop_iter": 0,
         "kind": "resolve", "tasks_processed": 2, "task_id": None}]
    stream["metrics"] = []
    doc["metadata"]["core_to_thread"] = [1, 1]   # ...but it owns both
    r = merge_traces([write(tmp_path, doc)])
    assert {t for _, t, _, _ in slices(r.timeline, "scheduler")} == {"Sched_1"}


def test_an_aicore_scheduler_is_drawn_as_simpler_names_it(tmp_path):
    doc = golden()
    doc["scheduler_tasks"]["producer"] = "aicore"
    (stream,) = doc["scheduler_records"]["streams"]
    stream.update(producer="aicore", scheduler_id=0, worker_id=5, core_type="aiv",
                  physical_core_id=17)
    stream["records"] = [
        {"start_cycles": 2000 + 10 * i, "end_cycles": 2005 + 10 * i, "run_epoch": 7700,
         "loop_iter": i, "kind": k, "tasks_processed": 1, "task_id": t}
        for i, (k, t) in enumerate((("bootstrap", None), ("state_probe", 7), ("dispatch", 7),
                                    ("complete", 7), ("idle", None)))]
    stream["metrics"] = []
    r = merge_traces([write(tmp_path, doc)])
    rows = slices(r.timeline, "scheduler")
    assert {p.split(" · ")[1] for p, *_ in rows} == {"AICore scheduler (estimated)"}
    assert [(t, n) for _, t, n, _ in rows] == [
        ("Scheduler_5", "bootstrap"), ("Scheduler_5", "StateProbe(t7)"),
        ("Scheduler_5", "Dispatch(t7)"), ("Scheduler_5", "Completion(t7)"),
        ("Scheduler_5", "idle")]
    rec = read_records(write(tmp_path, doc) / RECORDS)
    assert rec.scheduler_task_producer == "aicore"
    assert rec.scheduler[0].stream == {"platform": "a2a3", "scheduler_id": 0, "worker_id": 5,
                                       "core_type": "aiv", "physical_core_id": 17}


def test_lifecycle_records_are_drawn_per_aicpu_thread(tmp_path):
    doc = golden()
    doc["aicpu_lifecycle_records"] = [
        {"aicpu_thread_id": t, "handshake_start_cycles": 100 + t,
         "handshake_complete_cycles": 200, "config_start_cycles": 210 if t == 0 else 0,
         "topology_complete_cycles": 260 if t == 0 else 0,
         "context_publish_start_cycles": 300, "context_publish_complete_cycles": 320,
         "bootstrap_wait_start_cycles": 330, "bootstrap_complete_cycles": 400,
         "register_release_start_cycles": 410, "register_release_end_cycles": 420,
         "exit_signal_start_cycles": 5000, "exit_signal_end_cycles": 5010,
         "exit_wait_start_cycles": 5010, "exit_wait_end_cycles": 5100} for t in (0, 1)]
    r = merge_traces([write(tmp_path, doc)])
    assert not [w for w in r.warnings if "not lifecycle records" in w]
    rows = slices(r.timeline, "aicpu_lifecycle")
    assert {p.split(" · ")[1] for p, *_ in rows} == {"AICPU lifecycle (estimated)"}
    assert [n for _, t, n, _ in rows if t == "AICPU_0"] == [
        "handshake", "config", "context_publish", "bootstrap_wait", "register_release",
        "exit_signal", "exit_wait"]
    assert "config" not in [n for _, t, n, _ in rows if t == "AICPU_1"]
    r2 = merge_traces([write(tmp_path, doc)], views=["worker"])
    assert not slices(r2.timeline, "aicpu_lifecycle")


def test_schema_version_1_is_read(tmp_path):
    doc = golden()
    doc["scheduler_records"] = {"schema_version": 1, **doc["scheduler_records"]}
    doc["scheduler_tasks"]["schema_version"] = 1
    assert len(read_records(write(tmp_path, doc) / RECORDS).scheduler[0]) == 2


def test_an_intermediate_file_without_run_identity_is_read(tmp_path):
    """Between August and today: the new sections, 6-column AICore and 4-column scheduler
    rows, no run_epoch on records (Simpler's tests still write such files)."""
    doc = golden()
    doc["aicore_tasks"] = [r[:6] for r in doc["aicore_tasks"]]
    doc["scheduler_tasks"]["records"] = [r[:4] for r in doc["scheduler_tasks"]["records"]]
    for s in doc["scheduler_records"]["streams"]:
        s["runtime"] = "host_build_graph"
        for rec in s["records"]:
            del rec["run_epoch"]
    for t in doc["aicpu_orchestrator_phases"]:
        for rec in t:
            del rec["run_epoch"]
    rec = read_records(write(tmp_path, doc) / RECORDS)
    assert (rec.layout, rec.run_epoch, rec.aicore_columns) == ("today", None, 6)
    assert len(rec.aicpu["core_id"]) == 2 and len(rec.scheduler[0]) == 2


def test_idle_streams_left_out_keep_their_scheduler_id(tmp_path):
    doc = golden()
    doc["scheduler_records"]["streams"][0]["scheduler_id"] = 2
    rec = read_records(write(tmp_path, doc) / RECORDS)
    assert [s.thread for s in rec.scheduler] == [2]
    r = merge_traces([write(tmp_path, doc)])
    assert {t for _, t, _, _ in slices(r.timeline, "scheduler")} == {"Sched_2"}


# --------------------------------------------------------------------------- refused

def _with(change):
    doc = golden()
    change(doc)
    return doc


def _stream0(doc):
    return doc["scheduler_records"]["streams"][0]


# what makes the file as a whole uninterpretable: refused, one line naming the JSON path
BAD = [
    (lambda d: _stream0(d)["records"][0].__setitem__("shared_at_end", [1, 1, 1]),
     ("$.scheduler_records.streams[0].metrics: metric 'shared_at_end' would overwrite the "
     "records' own field")),
    (lambda d: _stream0(d).pop("records"), "$.scheduler_records.streams[0]: missing 'records'"),
    (lambda d: _stream0(d).__setitem__("producer", "gpu"),
     "$.scheduler_records.streams[0].producer: invalid enum value 'gpu'"),
    (lambda d: _stream0(d)["capture"].__setitem__("dropped", -1),
     "$.scheduler_records.streams[0].capture.dropped: expected int >= 0, got -1"),
    (lambda d: d["scheduler_records"].__setitem__("streams", {}),
     "$.scheduler_records.streams: expected array, got object"),
    (lambda d: d["scheduler_records"].pop("streams"), "$.scheduler_records: missing 'streams'"),
    (lambda d: d["scheduler_records"].__setitem__("schema_version", 2),
     "$.scheduler_records.schema_version: invalid enum value 2"),
    (lambda d: d.__setitem__("scheduler_records", [1]),
     "$.scheduler_records: expected object, got array"),
    (lambda d: d["scheduler_tasks"].pop("producer"), "$.scheduler_tasks: missing 'producer'"),
    (lambda d: d.__setitem__("aicpu_tasks", []),
     ("$: both 'aicpu_tasks' (August layout) and 'scheduler_tasks' (today's) are present; "
     "which one is this run's is ambiguous")),
    (lambda d: d["metadata"].__setitem__("collection", {"run_epoch": -3}),
     "$.metadata.collection.run_epoch: expected int >= 0, got -3"),
]


@pytest.mark.parametrize("change, want", BAD, ids=[w.split(":")[0] for _, w in BAD])
def test_uninterpretable_input_is_refused_with_file_and_json_path(tmp_path, change, want):
    d = write(tmp_path, _with(change))
    assert problem(d / RECORDS) == want


# one record that cannot be interpreted: that record alone is skipped, counted, and said
# once per file with the reason the strict reader gave; the rest is read as usual
BAD_RECORD = [
    (lambda d: _stream0(d)["metrics"][1].__setitem__("record_index", 5),
     "$.scheduler_records.streams[0].metrics[1]: record_index 5 is out of range (2 records)"),
    (lambda d: _stream0(d)["metrics"][1].__setitem__("record_index", 0),
     "$.scheduler_records.streams[0].metrics[1]: record_index 0 appears twice"),
    (lambda d: _stream0(d)["metrics"][0].__setitem__("pop_hit", "three"),
     "$.scheduler_records.streams[0].metrics[0].pop_hit: expected int, got str"),
    (lambda d: _stream0(d)["records"][1].__setitem__("end_cycles", 5),
     ("$.scheduler_records.streams[0].records[1]: end_cycles 5 is before start_cycles 2001 "
     "(negative duration)")),
    (lambda d: d["scheduler_tasks"]["records"][1].append(1),
     "$.scheduler_tasks.records[1]: 6 columns, expected 4 or 5"),
    (lambda d: d["scheduler_tasks"]["records"][1].pop(),
     "$.scheduler_tasks.records[1]: 4 columns, expected 5, like the rows before it"),
    (lambda d: d["scheduler_tasks"]["records"][0].__setitem__(0, 2),
     "$.scheduler_tasks.records[0][0]: core_id 2 is not in metadata.core_types (2 cores)"),
    (lambda d: d["aicore_tasks"][2].pop(),
     "$.aicore_tasks[2]: 6 columns, expected 7, like the rows before it"),
    (lambda d: d["aicpu_orchestrator_phases"][0][1].__setitem__("run_epoch", "x"),
     "$.aicpu_orchestrator_phases[0][1].run_epoch: expected int, got str"),
    (lambda d: d.__setitem__("aicpu_lifecycle_records", [{"aicpu_thread_id": "zero"}]),
     "$.aicpu_lifecycle_records[0].aicpu_thread_id: expected int, got str"),
    (lambda d: d.__setitem__("aicpu_lifecycle_records", [
        {"aicpu_thread_id": 0, "exit_wait_start_cycles": 9, "exit_wait_end_cycles": 3}]),
     ("$.aicpu_lifecycle_records[0]: exit_wait_end_cycles 3 is before exit_wait_start_cycles 9 "
     "(negative duration)")),
]


@pytest.mark.parametrize("change, want", BAD_RECORD, ids=[w.split(":")[0] for _, w in BAD_RECORD])
def test_one_bad_record_costs_that_record_alone(tmp_path, change, want):
    d = write(tmp_path, _with(change))
    line = skipped(d / RECORDS)
    assert "1 bad record(s) skipped, each alone, the rest read as usual: 1 in " in line
    assert f"(the first: {want})" in line
    ok = read_records(write(tmp_path / "ok", golden()) / RECORDS)
    got = read_records(d / RECORDS)
    assert len(got.aicore["task_id"]) + len(got.aicpu["core_id"]) + sum(
        len(s) for s in got.scheduler + got.orchestrator) >= len(ok.aicore["task_id"]) + len(
        ok.aicpu["core_id"]) + sum(len(s) for s in ok.scheduler + ok.orchestrator) - 1


# --------------------------------------------------------------------------- one range rule

FREQ = 50_000_000


@pytest.mark.parametrize("change, want", [
    (lambda d: d["aicore_tasks"][1].__setitem__(4, max_cycles(FREQ)),
     f"$.aicore_tasks[1][4]: end_cycles {max_cycles(FREQ)} is out of range"),
    (lambda d: d["aicore_tasks"][1].__setitem__(4, 1 << 62),
     f"$.aicore_tasks[1][4]: end_cycles {1 << 62} is out of range"),
    (lambda d: d["scheduler_tasks"]["records"][0].__setitem__(3, 1 << 62),
     f"$.scheduler_tasks.records[0][3]: finish_cycles {1 << 62} is out of range"),
    (lambda d: _stream0(d)["records"][1].__setitem__("end_cycles", 1 << 62),
     f"$.scheduler_records.streams[0].records[1]: end_cycles {1 << 62} is out of range"),
    (lambda d: d["aicpu_orchestrator_phases"][0][0].__setitem__("end_cycles", 1 << 62),
     f"$.aicpu_orchestrator_phases[0][0]: end_cycles {1 << 62} is out of range"),
])
def test_device_cycles_past_the_range_rule_cost_their_record(tmp_path, change, want):
    got = skipped(write(tmp_path, _with(change)) / RECORDS)
    assert f"(the first: {want}" in got, got
    assert "2^62 ns" in got and str(max_cycles(FREQ)) in got


def test_the_range_rule_boundary():
    assert (max_cycles(FREQ) - 1) * 10**9 < MAX_CLOCK_NS * FREQ <= max_cycles(FREQ) * 10**9
    assert max_cycles(1_000_000_000) == MAX_CLOCK_NS


def test_the_largest_cycles_allowed_still_convert_without_overflow(tmp_path):
    doc = golden()
    doc["aicore_tasks"][1][4] = max_cycles(FREQ) - 1
    r = merge_traces([write(tmp_path, doc)], views=["worker"])
    ends = [int(s + d) for b in r.timeline.blocks for s, d in zip(b.start_ns, b.dur_ns)]
    assert max(ends) > 0 and all(0 <= e < 1 << 63 for e in ends)


@pytest.mark.parametrize("change, want", [
    (lambda d: d["host_orchestrator_phases"][0][0].__setitem__("end_host_ns", MAX_CLOCK_NS),
     (f"$.host_orchestrator_phases[0][0].end_host_ns: expected int <= {MAX_CLOCK_NS - 1}, "
      f"got {MAX_CLOCK_NS}")),
    (lambda d: d["host_device_uploads"][0].__setitem__("start_host_ns", 1 << 63),
     ("$.host_device_uploads[0].start_host_ns: expected int <= 4611686018427387903, "
      "got 9223372036854775808")),
    (lambda d: d["metadata"].__setitem__("host_orchestration_origin_ns", MAX_CLOCK_NS),
     (f"$.metadata.host_orchestration_origin_ns: expected int <= {MAX_CLOCK_NS - 1}, "
      f"got {MAX_CLOCK_NS}")),
])
def test_host_ns_past_the_range_rule_are_refused_or_cost_their_record(tmp_path, change, want):
    path = write(tmp_path, _with(change)) / RECORDS
    if want.startswith("$.metadata"):           # the file's own field: refused
        assert problem(path) == want
    else:
        assert f"(the first: {want})" in skipped(path)


@pytest.mark.parametrize("change, want", [
    (lambda d: d["metadata"].update(num_cores=0, core_types=[]),
     "$.aicore_tasks: 4 rows, but metadata.core_types lists no cores"),
    (lambda d: d["metadata"].update(num_cores=3),
     "$.metadata.num_cores: 3, but metadata.core_types lists 2 cores"),
    (lambda d: d["aicore_tasks"][3].__setitem__(0, 10 ** 6),
     "$.aicore_tasks[3][0]: core_id 1000000 is not in metadata.core_types (2 cores)"),
])
def test_core_ids_are_checked_against_the_core_table(tmp_path, change, want):
    path = write(tmp_path, _with(change)) / RECORDS
    if "core_id" in want:                       # one row: skipped alone
        assert f"(the first: {want})" in skipped(path)
    else:                                       # the core table itself: refused
        assert problem(path) == want


def test_the_range_rule_applies_to_august_files_too(tmp_path):
    doc = json.loads((FIXTURES / "tmr_bgemm_case0_l4_depgen" / RECORDS).read_text())
    doc["aicore_tasks"][17][3] = 1 << 62
    doc["aicore_tasks"][17][4] = 1 << 62
    got = skipped(write(tmp_path, doc) / RECORDS)
    assert f"(the first: $.aicore_tasks[17][3]: start_cycles {1 << 62} is out of range" in got
    assert len(read_records(write(tmp_path, doc) / RECORDS).aicore["task_id"]) == 999
    doc = json.loads((FIXTURES / "tmr_bgemm_case0_l4_depgen" / RECORDS).read_text())
    doc["metadata"].update(num_cores=0, core_types=[])
    assert problem(write(tmp_path, doc) / RECORDS) == \
        "$.aicore_tasks: 1000 rows, but metadata.core_types lists no cores"


def test_a_huge_integer_in_the_python_fallback_is_one_clear_line(tmp_path):
    """A lone surrogate sends the piece to Python's json, whose int parser refuses over
    4,300 digits with a ValueError: that is bad input, not a traceback."""
    text = GOLDEN.read_text().replace('"<RUNTIME>"', '"\\ud800"').replace(
        '"clock_freq_hz": 50000000', '"clock_freq_hz": ' + "9" * 5000)
    d = tmp_path / "dfx_outputs"
    d.mkdir()
    (d / RECORDS).write_text(text)
    got = problem(d / RECORDS)
    assert "digit" in got and len(got) <= 200


def test_num_cores_zero_is_refused_by_pypto_profile_kernels(tmp_path, capsys):
    from pypto.compile_profiling.cli.profile import main as profile_main

    doc = golden()
    doc["metadata"].update(num_cores=0, core_types=[])
    work = tmp_path / "work"
    work.mkdir()
    write(work, doc)
    code = profile_main(["kernels", str(work)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "lists no cores" in err and err.count("\n") == 1


# --------------------------------------------------------------------------- hostile edits

def _leaves(o, path=()):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _leaves(v, (*path, i))
    if path:
        yield path


def test_edited_goldens_merge_or_are_refused_in_one_line(tmp_path):
    """Every member of the golden replaced by values of other types and ranges (a fixed
    seed, so the same 400 files every run): each merges (a bad record skipped alone, said
    in a warning) or is a TraceInputError (the file as a whole), never another exception."""
    import random

    base = golden()
    paths = list(_leaves(base))
    values = [-1, 0, 2 ** 62, 2 ** 63, 2 ** 64, "x", None, [], {}, 1.5, [1, 2, 3], {"a": 1},
              True, 7600, 10 ** 6]
    rnd = random.Random(23)
    outcomes = {"merged": 0, "refused": 0}
    for _ in range(400):
        doc = json.loads(json.dumps(base))
        for _ in range(rnd.randint(1, 2)):
            *head, last = rnd.choice(paths)
            o = doc
            try:
                for k in head:
                    o = o[k]
                o[last] = rnd.choice(values)
            except (KeyError, IndexError, TypeError):
                pass
        d = write(tmp_path, doc)
        try:
            merge_traces([d])
            outcomes["merged"] += 1
        except TraceInputError as exc:
            assert str(exc).startswith(str(d / RECORDS) + ": ") and "\n" not in str(exc)
            outcomes["refused"] += 1
    # measured: 265 merged, 135 refused (before bad records cost only themselves: 25 / 375)
    assert outcomes["merged"] > 200 and outcomes["refused"] > 100
