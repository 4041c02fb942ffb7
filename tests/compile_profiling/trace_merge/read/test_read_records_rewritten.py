"""Today's Simpler records layout: the 9 real captures rewritten into it (tests/support/simpler_today.py)
read into the same columns and draw the same slices, arrows and counters as the originals,
and the rewrite is undone exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from simpler_fixtures import CASES, FIXTURES
from simpler_today import RUN_EPOCH, to_august, to_today, write_today

from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.read.read_records import read_records


def _doc(case: str) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


@pytest.fixture(scope="module")
def today_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("today")
    return {case: write_today(FIXTURES / case, root / case) for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_rewrite_is_undone_exactly(case):
    old = _doc(case)
    new = to_today(old)
    assert "aicpu_tasks" not in new and "aicpu_scheduler_phases" not in new
    assert {len(r) for r in new["aicore_tasks"]} == {7}
    back = to_august(new)
    assert back == old
    assert json.dumps(back) == json.dumps(old)          # member order too


def _columns(rec) -> dict:
    """Everything a SwimlaneRecords holds for drawing, as plain values."""
    def phases(group):
        return [(s.thread, s.clock, s.start.tolist(), s.end.tolist(), s.kind.tolist(),
                 s.kinds, [(a.key, a.values_at(slice(None)),
                            None if a.present is None else a.present.tolist())
                           for a in s.args]) for s in group if len(s)]
    return {"aicore": {k: v.tolist() for k, v in rec.aicore.items() if k != "run_epoch"},
            "aicpu": {k: v.tolist() for k, v in rec.aicpu.items() if k != "run_epoch"},
            "scheduler": phases(rec.scheduler), "orchestrator": phases(rec.orchestrator),
            "host_orchestrator": phases(rec.host_orchestrator),
            "host_uploads": phases(rec.host_uploads),
            "meta": (rec.level, rec.freq_hz, rec.core_types, rec.core_to_thread,
                     rec.orchestrator_source, rec.host_orchestration_origin_ns)}


@pytest.mark.parametrize("case", CASES)
def test_both_layouts_read_into_the_same_columns(case, today_dirs):
    old = read_records(FIXTURES / case / "chip_swimlane_records.json")
    new = read_records(today_dirs[case] / "chip_swimlane_records.json")
    assert (old.layout, new.layout) == ("august", "today")
    assert (old.run_epoch, new.run_epoch) == (None, RUN_EPOCH)
    assert new.aicore_columns == 7 and old.aicore_columns == 6
    assert (new.aicore["run_epoch"] == RUN_EPOCH).all()
    assert (old.aicore["run_epoch"] == -1).all()
    assert _columns(old) == _columns(new)
    assert not new.set_aside and not new.warnings and not old.warnings
    for s in new.scheduler:
        assert s.capture == {"committed": len(s), "dropped": 0, "truncated": False}


def _drawn(tl) -> dict:
    """What a timeline draws: every slice (track, time, name, args), arrow and counter
    sample, with process and track names; not the process args (they name the file)."""
    ids = {id(b): i for i, b in enumerate(tl.blocks)}
    blocks = []
    for b in tl.blocks:
        tracks = [(t.process.name, t.name, t.sort_index) for t in b.tracks]
        blocks.append((b.cat, [tracks[i] for i in b.track.tolist()], b.start_ns.tolist(),
                       b.dur_ns.tolist(), [b.names[i] for i in b.name.tolist()],
                       b.row_args()))
    flows = sorted((f.name, f.cat, ids[id(f.src)], f.src_row.tolist(), ids[id(f.dst)],
                    f.dst_row.tolist()) for f in tl.flows)
    counters = [(c.process.name, c.name, c.ts_ns.tolist(), np.asarray(c.values).tolist())
                for c in tl.counters]
    return {"blocks": blocks, "flows": flows, "counters": counters,
            "processes": [p.name for p in tl.processes], "tracks": [t.name for t in tl.tracks]}


@pytest.mark.parametrize("case", CASES)
def test_both_layouts_draw_the_same(case, today_dirs):
    old = merge_traces([FIXTURES / case])
    new = merge_traces([today_dirs[case]])
    a, b = _drawn(old.timeline), _drawn(new.timeline)
    assert a["processes"] == b["processes"] and a["tracks"] == b["tracks"]
    assert len(a["blocks"]) == len(b["blocks"])
    for x, y in zip(a["blocks"], b["blocks"]):
        assert x == y, x[0]
    assert a["flows"] == b["flows"]
    assert a["counters"] == b["counters"]
    assert sum(len(x[2]) for x in a["blocks"]) > 0
    assert [w.replace(str(FIXTURES / case), "") for w in old.warnings] == \
        [w.replace(str(today_dirs[case]), "") for w in new.warnings]


def test_every_view_and_arrow_kind_is_drawn_from_todays_layout(today_dirs):
    """The capture with every kind of arrow, in today's layout: each view draws (the
    ready queue from the streams' metrics) and each of the five arrow kinds is there."""
    tl = merge_traces([today_dirs["tmr_vector_example_l4_depgen"]]).timeline
    assert {b.cat for b in tl.blocks} >= {"aicore", "aicore_setup", "scheduler_view",
                                          "scheduler", "orchestrator"}
    assert {f.cat for f in tl.flows} == {"dependency", "dispatch", "complete",
                                         "submit_dispatch", "complete_ready"}
    names = {c.name for c in tl.counters}
    assert {"shared_ready_queue AIC", "shared_ready_queue AIV", "shared_ready_queue MIX"} <= names
    assert any(n.endswith(" busy") for n in names)
    queue = next(c for c in tl.counters if c.name == "shared_ready_queue AIV")
    assert queue.values.max() > 0
