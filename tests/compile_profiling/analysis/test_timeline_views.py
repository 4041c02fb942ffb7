"""The `critical-path` and `overhead` views of `pypto-merge-traces`: what they draw, and that
the offline Perfetto UI imports them with zero import errors, in JSON and in protobuf."""

from __future__ import annotations

import numpy as np
import pytest
from example_runs import run_many_kernels
from simpler_fixtures import FIXTURES

from pypto.compile_profiling.analysis import TIMELINE_VIEWS, analyze
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.place.placement import place
from pypto.compile_profiling.trace_merge.read.read_inputs import read_inputs


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The README's main example, compiled and run with profiling, level 4 and dep_gen."""
    return run_many_kernels(tmp_path_factory.mktemp("views") / "many_kernels",
                            runtime="host_build_graph")


def _merge(work, views="critical-path,overhead"):
    return merge_traces([work / "report" / "trace.json", work / "dfx_outputs"], views=views,
                        derived_views=TIMELINE_VIEWS)


def test_views_draw_the_path_the_analysis_finds(work):
    tl = _merge(work).timeline
    (ra,) = analyze([work / "report" / "trace.json", work / "dfx_outputs"]).ranks
    (path,) = [b for b in tl.blocks if b.cat == "critical_path"]
    obs = ra.observed
    # one slice per path task's compute and one per piece of each stall, touching end to end
    assert len(path) == np.count_nonzero(obs.compute) + np.count_nonzero(obs.parts)
    assert (path.start_ns[1:] == path.start_ns[:-1] + path.dur_ns[:-1]).all()
    parts = {"completion", "dispatch", "launch", "front", "unknown"}
    stalls = {path.names[k] for k in path.name.tolist()} & parts
    assert stalls and stalls == {k for k, v in obs.stall_by_part().items() if v}
    (arrows,) = [f for f in tl.flows if f.name == "critical path"]
    assert len(arrows) == np.count_nonzero(obs.compute) - 1
    (e2e,) = [b for b in tl.blocks if b.cat == "critical_path_e2e"]
    assert int(e2e.dur_ns.sum()) == ra.end_to_end.wall_ns          # tiles the wall time
    assert e2e.tracks[0].process.os_pid is not None                # on the compile process
    names = {c.name for c in tl.counters}
    assert {"AIV starved", "all engines starved", "some engine starved"} <= names
    starved = next(c for c in tl.counters if c.name == "some engine starved")
    # in device cycles, the flag's time at 1 is the share the analysis reports
    cyc = ra.overhead.timeline
    flag = cyc["some engine starved"]
    on_cycles = int((np.diff(cyc["ts"]) * (flag == 1)).sum())
    span_cycles = int(cyc["ts"][-1] - cyc["ts"][0])             # the makespan
    assert on_cycles / span_cycles == pytest.approx(ra.overhead.some_starved_share, rel=1e-9)
    # drawn: those cycles through the capture's own clock mapping, to the nanosecond (the
    # calibrated mapping is not proportional to cycles, so a share of ns is only near it)
    (cp,) = place(read_inputs([work / "report" / "trace.json", work / "dfx_outputs"])).captures
    ts_ns = cp.device.to_ns(cyc["ts"])
    values = np.append(flag, 0)
    last = np.concatenate((ts_ns[1:] > ts_ns[:-1], [True]))
    t, v = ts_ns[last], values[last]
    on = np.diff(starved.ts_ns)[starved.values[:-1] == 1].sum()
    assert on == np.diff(t)[v[:-1] == 1].sum()


def test_asking_for_a_derived_view_without_its_drawer_is_an_error(work):
    with pytest.raises(ValueError, match="critical-path"):
        merge_traces([work / "dfx_outputs"], views="critical-path")
    for derived in (None, TIMELINE_VIEWS):                    # not drawn by default
        tl = merge_traces([work / "dfx_outputs"], derived_views=derived).timeline
        assert not [b for b in tl.blocks if b.cat.startswith("critical_path")]
    tl = merge_traces([work / "dfx_outputs"], views="all", derived_views=TIMELINE_VIEWS)
    assert [b for b in tl.timeline.blocks if b.cat == "critical_path"]


def test_level1_capture_has_a_path_but_no_overhead_counters():
    tl = merge_traces([FIXTURES / "tmr_vector_example_l1"], views="all",
                      derived_views=TIMELINE_VIEWS).timeline
    assert [b for b in tl.blocks if b.cat == "critical_path"]
    assert not [c for c in tl.counters if "starved" in c.name]


@pytest.mark.perfetto_ui
@pytest.mark.parametrize("ext", [".json", ".pftrace"])
def test_both_views_load_in_the_perfetto_ui(perfetto_ui, work, tmp_path, ext):
    tl = _merge(work, views="all").timeline
    out = tmp_path / f"merged{ext}"
    write_timeline(tl, out)
    t = perfetto_ui.load(out)
    assert t.import_errors() == []
    path = next(b for b in tl.blocks if b.cat == "critical_path")
    got = t.slices("coalesce(thread_name, track_name) = 'observed path'")
    assert len(got) == len(path)
    assert {s["name"] for s in got} == {path.names[k] for k in path.name.tolist()}
    assert len(t.slices("coalesce(thread_name, track_name) = 'critical path (end to end)'")) == \
        len(next(b for b in tl.blocks if b.cat == "critical_path_e2e"))
    counters = t.query("select t.name as name, count(*) as n from counter c join "
                       "counter_track t on c.track_id = t.id group by t.name")
    # a counter track is "<name> <unit>" in both formats (as Perfetto names the JSON one)
    want = {f"{c.name} {c.unit}": len(c.ts_ns) for c in tl.counters if "starved" in c.name}
    assert {r["name"]: r["n"] for r in counters if r["name"] in want} == want
    assert any("Critical path" in n for n in t.process_names())
