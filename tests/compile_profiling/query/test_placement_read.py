"""The per-rank driver's placement read: what it keeps of a capture gives placement the same
extents and windows as the whole capture, in both Simpler layouts, and it is a few rows."""

from __future__ import annotations

import json

import pytest
from simpler_fixtures import CASES, FIXTURES
from simpler_today import to_today, write_today

from pypto.compile_profiling.query.placement_read import placement_capture
from pypto.compile_profiling.trace_merge.place.place_device import capture_windows, stream_extents
from pypto.compile_profiling.trace_merge.place.placement import place
from pypto.compile_profiling.trace_merge.read.read_inputs import Inputs
from pypto.compile_profiling.trace_merge.read.read_simpler import discover_captures, read_capture

RECORDS = "chip_swimlane_records.json"


def _row_counts(rec) -> list[int]:
    return [len(rec.aicore["start_cycles"]), len(rec.aicpu["dispatch_cycles"]),
            *(len(s) for g in (rec.scheduler, rec.orchestrator, rec.host_orchestrator,
                               rec.host_uploads, rec.lifecycle) for s in g)]


def _placed(cap) -> list:
    plan = place(Inputs([], [], [cap]))
    return [(d.status, d.offset_ns, d.host_offset_ns, d.uncertainty_ns, d.how, cp.run_pid)
            for cp in plan.captures for d in [cp.device]]


@pytest.mark.parametrize("layout", ["august", "today"])
@pytest.mark.parametrize("case", CASES)
def test_the_placement_read_places_as_the_whole_capture(case, layout, tmp_path):
    leaf = FIXTURES / case if layout == "august" else write_today(FIXTURES / case,
                                                                  tmp_path / case)
    (files,) = discover_captures(leaf)
    whole, envelope = read_capture(files), placement_capture(files)
    assert stream_extents(envelope) == stream_extents(whole)
    assert capture_windows(envelope) == capture_windows(whole)
    assert _placed(envelope) == _placed(whole)
    assert envelope.records.layout == whole.records.layout == layout
    if layout == "today":       # each stream cut to its extreme records
        counts, all_rows = _row_counts(envelope.records), _row_counts(whole.records)
        assert all(n <= min(w, 9) for n, w in zip(counts, all_rows))
        assert sum(all_rows) < 1000 or sum(counts) * 20 < sum(all_rows)


def test_another_runs_records_never_move_the_envelope(tmp_path):
    """Records of an earlier run (run_epoch 1), far before and after this run's, in every
    section: the full read sets them aside, and so does the placement read."""
    doc = to_today(json.loads((FIXTURES / CASES[0] / RECORDS).read_text()))
    epoch = doc["aicore_tasks"][0][6]
    lo = min(r[3] for r in doc["aicore_tasks"])
    doc["aicore_tasks"] += [[0, 1, 1, 5, 6, 0, epoch - 1],
                            [0, 2, 2, lo * 4, lo * 4 + 1, 0, epoch - 1]]
    doc["scheduler_tasks"]["records"].append([0, 1, 3, lo * 4, epoch - 1])
    stream = doc["scheduler_records"]["streams"][0]
    stream["records"].append({**stream["records"][0], "start_cycles": 1, "end_cycles": 2,
                              "run_epoch": epoch - 1})
    leaf = tmp_path / "dfx_outputs"
    leaf.mkdir()
    (leaf / RECORDS).write_text(json.dumps(doc))
    (files,) = discover_captures(leaf)
    whole, envelope = read_capture(files), placement_capture(files)
    assert whole.records.set_aside == envelope.records.set_aside == {
        "aicore_tasks": 2, "scheduler_tasks": 1, "scheduler_records": 1}
    assert stream_extents(envelope) == stream_extents(whole)
    assert stream_extents(envelope)["all"][0] > 6
