"""Today's Simpler records layout in the offline Perfetto UI: a real capture rewritten into it
(JSON and protobuf) and a file with everything today's layout adds (resolution and AICore
schedulers, markers, lifecycle records, an unknown kind) load with zero import errors and show
what the merge drew. Three loads in all (each costs 1-2.5 CPU-seconds)."""

from __future__ import annotations

import json

import pytest
from repo_paths import TEST_FIXTURES
from simpler_fixtures import FIXTURES
from simpler_today import write_today
from timeline_checks import check_matches_timeline

from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces

pytestmark = pytest.mark.perfetto_ui
GOLDEN_DIR = TEST_FIXTURES / "simpler_today" / "writer_golden"


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_real_capture_in_todays_layout_loads(perfetto_ui, tmp_path, suffix):
    case = write_today(FIXTURES / "tmr_vector_example_l4_depgen", tmp_path / "today")
    tl = merge_traces([case]).timeline
    assert {f.cat for f in tl.flows} == {"dependency", "dispatch", "complete",
                                         "submit_dispatch", "complete_ready"}
    out = tmp_path / f"merged{suffix}"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    rows = check_matches_timeline(t, tl)
    assert any(r["thread_name"] == "Sched_0" or r["track_name"] == "Sched_0" for r in rows)


def _everything() -> dict:
    doc = json.loads((GOLDEN_DIR / "chip_swimlane_records.json").read_text())
    streams = doc["scheduler_records"]["streams"]

    def rec(start, kind, task=None, loop=0):
        return {"start_cycles": start, "end_cycles": start + 40, "run_epoch": 7700,
                "loop_iter": loop, "kind": kind, "tasks_processed": 1, "task_id": task}

    streams[0]["records"] += [rec(2200, "complete"), rec(2210, "resolve"),
                              rec(2300, "a_new_kind"), rec(2400, "drain"),
                              rec(2405, "drain_prepare")]
    streams.append({"platform": "a2a3", "producer": "aicpu", "scheduler_id": 2,
                    "worker_id": 2, "core_type": "aicpu", "physical_core_id": None,
                    "capture": {"committed": 3, "dropped": 0, "truncated": False},
                    "records": [rec(2000 + 100 * i, k) for i, k in
                                enumerate(("resolve_standalone", "async_poll", "dummy"))],
                    "metrics": [{"record_index": i, "shared_at_start": [0, 0, 0],
                                 "shared_at_end": [0, i, 0]} for i in range(3)]})
    streams.append({"platform": "a5", "producer": "aicore", "scheduler_id": 3,
                    "worker_id": 5, "core_type": "aiv", "physical_core_id": 9,
                    "capture": {"committed": 2, "dropped": 0, "truncated": False},
                    "records": [rec(2000, "state_probe", 7), rec(2050, "dispatch", 7)],
                    "metrics": []})
    doc["aicpu_lifecycle_records"] = [
        {"aicpu_thread_id": 0, "handshake_start_cycles": 100, "handshake_complete_cycles": 200,
         "bootstrap_wait_start_cycles": 210, "bootstrap_complete_cycles": 400,
         "exit_wait_start_cycles": 5000, "exit_wait_end_cycles": 5100}]
    return doc


def test_everything_todays_layout_adds_loads(perfetto_ui, tmp_path):
    d = tmp_path / "dfx_outputs"
    d.mkdir()
    (d / "chip_swimlane_records.json").write_text(json.dumps(_everything()))
    r = merge_traces([d])
    tl = r.timeline
    out = tmp_path / "merged.pftrace"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    rows = check_matches_timeline(t, tl)
    lanes = {(r["track_name"] or r["thread_name"]) for r in rows}
    assert {"Sched_0", "Sched_2 (resolution)", "Scheduler_5", "AICPU_0"} <= lanes
    names = {r["name"] for r in rows}
    assert {"a_new_kind(1)", "resolve(1)", "StateProbe(t7)", "Dispatch(t7)", "dummy(t20816)",
            "handshake", "drain_prepare(1)"} <= names
    assert any("does not know (a_new_kind)" in w for w in r.warnings)
