"""Both timeline exporters: parse their output back and check events, nesting, escaping, flows;
then load both into the offline Perfetto UI and check what it imported."""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from pypto.compile_profiling import timeline_proto
from pypto.compile_profiling.timeline import Timeline
from pypto.compile_profiling.timeline_json import write_chrome_json
from pypto.compile_profiling.timeline_proto import write_perfetto_trace
from pypto.errors import ProfileWriteError

TRICKY = 'say "hi"\nnew line \\ tab\t ü 編譯 \u2028'


def sample_timeline() -> Timeline:
    """A compile process with a host thread, a device process with two hardware lanes."""
    tl = Timeline()
    host = tl.add_process("pypto compile", os_pid=4242)
    main = tl.add_track(host, "MainThread", os_tid=4243)
    dev = tl.add_process("Device r0 · AICore (calibrated)", args={"alignment": "anchors"})
    aic0 = tl.add_track(dev, "AIC_0", sort_index=0)
    aiv0 = tl.add_track(dev, "AIV_0", sort_index=1)
    base = 1_000_000_000.0
    # parent 0..1000.4, child 100.3..1000.4 (ends together), zero-length slice at 500.6
    tl.add_slice(main, "compile", base, 1000.4, "compile")
    kc = tl.add_slice(main, "kernel_codegen:QK", base + 100.3, 900.1, "codegen",
                      {"kernel": TRICKY})
    tl.add_slice(main, "instant-ish", base + 100.3 + 400.3, 0.0, "user")
    t1 = tl.add_slice(aic0, "QK(t1)", base + 2000.25, 500.5, "aicore",
                      {"task_id": 1, "core": 0, "kernel_id": 7, "big": 1 << 63,
                       "ratio": 0.5, "nan": float("nan"), "ok": True, "none": None,
                       "nested": {"a": [1, 2]}})
    t2 = tl.add_slice(aiv0, TRICKY, base + 2600.0, 100.0, "aicore", {"task_id": 2})
    tl.add_slice(aiv0, "QK(t1)", base + 2800.0, 100.0, "aicore", {"task_id": 3})
    tl.add_flow(kc, t1, "kernel")
    tl.add_flow(t1, t2, "dependency")
    tl.metadata.update({"clock": "CLOCK_MONOTONIC", "alignment": {"r0": "calibrated"},
                        "note": TRICKY})
    return tl


# ---------------------------------------------------------------- Chrome JSON

def test_chrome_json_round_trip_keeps_events_escaping_and_metadata(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"]["note"] == TRICKY
    assert doc["otherData"]["alignment"] == {"r0": "calibrated"}
    procs = {p["name"]: p for p in doc["otherData"]["processes"]}
    assert procs["pypto compile"]["os_pid"] == 4242
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    names = {a["name"] for (n, _, _), a in meta.items() if n in ("process_name", "thread_name")}
    assert names == {"pypto compile", "MainThread", "Device r0 · AICore (calibrated)",
                     "AIC_0", "AIV_0"}
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == 6
    by_name = {}
    for e in sorted(xs, key=lambda e: e["ts"], reverse=True):
        by_name[e["name"]] = e  # the earliest of equal names wins
    assert by_name["kernel_codegen:QK"]["args"]["kernel"] == TRICKY
    assert TRICKY in by_name  # a slice name with quotes, newline, non-ASCII survives
    qk = by_name["QK(t1)"]
    assert qk["args"]["big"] == 1 << 63 and qk["args"]["nan"] is None
    assert qk["args"]["nested"] == {"a": [1, 2]} and qk["args"]["ok"] is True
    assert qk["ts"] == pytest.approx(1_000_002.000) and qk["dur"] == pytest.approx(0.501)
    # pids/tids are the timeline uids: unique, never the OS ids
    assert {e["pid"] for e in xs} == {1, 3}


def test_chrome_json_rounds_time_points_so_children_stay_inside(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    xs = {e["name"]: e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"}
    parent, child = xs["compile"], xs["kernel_codegen:QK"]
    ns = lambda us: round(us * 1000)
    assert ns(child["ts"]) >= ns(parent["ts"])
    assert ns(child["ts"]) + ns(child["dur"]) <= ns(parent["ts"]) + ns(parent["dur"])
    # start 100.3 -> 100, end 1000.4 -> 1000: the child ends exactly with its parent
    assert ns(child["ts"]) + ns(child["dur"]) == ns(parent["ts"]) + ns(parent["dur"])


def test_chrome_json_flows_bind_source_and_destination(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    events = json.loads(out.read_text())["traceEvents"]
    starts = [e for e in events if e["ph"] == "s"]
    ends = [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(ends) == 2
    assert len({e["id"] for e in starts}) == 2
    assert all(e["bp"] == "e" for e in ends)
    xs = {(e["pid"], e["tid"], e["ts"]): e["name"] for e in events if e["ph"] == "X"}
    for s in starts:
        assert (s["pid"], s["tid"], s["ts"]) in xs
    flow_names = {e["name"] for e in starts}
    assert flow_names == {"kernel", "dependency"}


def test_chrome_json_write_is_atomic_on_failure(tmp_path, monkeypatch):
    out = tmp_path / "t.json"
    tl = sample_timeline()
    tl.slices[0].name = object()  # not a string: the writer fails midway
    with pytest.raises(TypeError):
        write_chrome_json(tl, out)
    assert os.listdir(tmp_path) == []


def test_chrome_json_of_empty_timeline_is_valid(tmp_path):
    out = tmp_path / "e.json"
    write_chrome_json(Timeline(), out)
    doc = json.loads(out.read_text())
    assert doc["traceEvents"] == []


# ---------------------------------------------------------------- protobuf

def read_packets(path) -> list:
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    return list(trace.packet)


def decode_slices(packets) -> tuple[dict, list[dict]]:
    """Replay the packets like a trace processor: descriptors, interning, begin/end stacks."""
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in packets
              if p.HasField("track_descriptor")}
    seq_state: dict[int, dict] = {}
    stacks: dict[int, list] = {}
    done = []
    for p in packets:
        if not p.HasField("track_event") and not p.HasField("trace_packet_defaults"):
            continue
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            seq_state[seq] = {"names": {}, "cats": {}, "keys": {}, "track": None}
        st = seq_state[seq]
        if p.HasField("trace_packet_defaults"):
            st["track"] = p.trace_packet_defaults.track_event_defaults.track_uuid
        for e in p.interned_data.event_names:
            st["names"][e.iid] = e.name
        for e in p.interned_data.event_categories:
            st["cats"][e.iid] = e.name
        for e in p.interned_data.debug_annotation_names:
            st["keys"][e.iid] = e.name
        if not p.HasField("track_event"):
            continue
        te = p.track_event
        track = te.track_uuid or st["track"]
        stack = stacks.setdefault(track, [])
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            args = {}
            for a in te.debug_annotations:
                kind = a.WhichOneof("value")
                args[st["keys"][a.name_iid]] = getattr(a, kind)
            stack.append({"track": track, "ts": p.timestamp, "depth": len(stack),
                          "name": te.name if te.HasField("name") else st["names"][te.name_iid],
                          "cats": [st["cats"][c] for c in te.category_iids], "args": args,
                          "flow_ids": list(te.flow_ids),
                          "terminating_flow_ids": list(te.terminating_flow_ids)})
        else:
            s = stack.pop()
            s["end"] = p.timestamp
            done.append(s)
    assert all(not s for s in stacks.values()), "unbalanced begin/end"
    return tracks, done


def test_protobuf_round_trip_tracks_slices_args_and_flows(tmp_path):
    out = tmp_path / "t.pftrace"
    size = write_perfetto_trace(sample_timeline(), out)
    assert size == out.stat().st_size > 0
    packets = read_packets(out)
    tracks, slices = decode_slices(packets)
    procs = {t.process.process_name: t for t in tracks.values() if t.HasField("process")}
    assert set(procs) == {"pypto compile", "Device r0 · AICore (calibrated)"}
    dev_uuid = procs["Device r0 · AICore (calibrated)"].uuid
    lanes = {t.name: t for t in tracks.values() if t.name}
    # hardware lanes are plain tracks under the device process, not fake threads
    assert set(lanes) == {"AIC_0", "AIV_0"}
    assert all(t.parent_uuid == dev_uuid and not t.HasField("thread") for t in lanes.values())
    threads = [t for t in tracks.values() if t.HasField("thread")]
    assert [t.thread.thread_name for t in threads] == ["MainThread"]
    by_name = {}
    for s in slices:
        by_name.setdefault(s["name"], []).append(s)
    assert len(slices) == 6 and len(by_name[TRICKY]) == 1 and len(by_name["QK(t1)"]) == 2
    kc = by_name["kernel_codegen:QK"][0]
    assert kc["depth"] == 1 and kc["args"] == {"kernel": TRICKY} and kc["cats"] == ["codegen"]
    parent = by_name["compile"][0]
    assert parent["ts"] <= kc["ts"] and kc["end"] <= parent["end"]
    qk = min(by_name["QK(t1)"], key=lambda s: s["ts"])
    assert qk["args"]["task_id"] == 1 and qk["args"]["big"] == 1 << 63
    assert qk["args"]["ratio"] == 0.5 and qk["args"]["ok"] is True
    assert qk["ts"] == 1_000_002_000 and qk["end"] == 1_000_002_501
    assert qk["track"] == lanes["AIC_0"].uuid
    # flows: kc -> qk (terminates on qk), qk -> tricky
    assert kc["flow_ids"] and kc["flow_ids"] == qk["terminating_flow_ids"]
    assert qk["flow_ids"] == by_name[TRICKY][0]["terminating_flow_ids"] != kc["flow_ids"]
    meta = {m.name: m for p in packets if p.HasField("chrome_events")
            for m in p.chrome_events.metadata}
    assert meta["clock"].string_value == "CLOCK_MONOTONIC"
    assert json.loads(meta["alignment"].json_value) == {"r0": "calibrated"}


def test_protobuf_streams_in_batches(tmp_path, monkeypatch):
    """With PACKETS_PER_BATCH = 3 the file is written as many small Trace messages (memory
    stays bounded), and reads back exactly as the same timeline written in one batch."""
    whole = tmp_path / "whole.pftrace"
    write_perfetto_trace(sample_timeline(), whole, parallel=False)

    writes: list[bytes] = []
    real_writer = timeline_proto.atomic_writer

    class RecordingFile:
        def __init__(self, file):
            self._file = file

        def write(self, data):
            writes.append(bytes(data))
            return self._file.write(data)

        def __getattr__(self, name):
            return getattr(self._file, name)

    @contextlib.contextmanager
    def recording_writer(*args, **kwargs):
        with real_writer(*args, **kwargs) as file:
            yield RecordingFile(file)

    monkeypatch.setattr(timeline_proto, "atomic_writer", recording_writer)
    monkeypatch.setattr(timeline_proto, "PACKETS_PER_BATCH", 3)
    out = tmp_path / "t.pftrace"
    write_perfetto_trace(sample_timeline(), out, parallel=False)

    batches = [list(pb.Trace.FromString(data).packet) for data in writes]
    packets = read_packets(out)
    assert sum(map(len, batches)) == len(packets) == len(read_packets(whole))
    # a batch ends at the first check past 3 packets (a slice's begin may follow its ends)
    assert len(batches) >= len(packets) // 6 > 1 and max(map(len, batches)) < 2 * 3
    _, slices = decode_slices(packets)
    assert len(slices) == 6
    assert slices == decode_slices(read_packets(whole))[1]


def test_protobuf_refuses_negative_time_and_leaves_no_file(tmp_path):
    tl = sample_timeline()
    tl.slices[0].ts_ns = -5.0
    out = tmp_path / "t.pftrace"
    with pytest.raises(ProfileWriteError, match="before time 0"):
        write_perfetto_trace(tl, out)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- offline Perfetto UI

@pytest.mark.perfetto_ui
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_both_formats_load_in_perfetto_with_same_slices_and_flows(perfetto_ui, tmp_path, suffix):
    tl = sample_timeline()
    out = tmp_path / f"t{suffix}"
    (write_chrome_json if suffix == ".json" else write_perfetto_trace)(tl, out)
    t = perfetto_ui.load(out)
    assert t.import_errors() == []
    assert t.slice_count() == 6
    assert {"pypto compile", "Device r0 · AICore (calibrated)"} <= set(t.process_names())
    rows = t.slices()
    names = sorted(r["name"] for r in rows)
    assert names == sorted(["compile", "kernel_codegen:QK", "instant-ish", "QK(t1)", TRICKY,
                            "QK(t1)"])
    by_id = {r["id"]: r for r in rows}
    kc = next(r for r in rows if r["name"] == "kernel_codegen:QK")
    assert kc["depth"] == 1
    lanes = {r["name"]: r["track_name"] or r["thread_name"] for r in rows}
    assert lanes["QK(t1)"] in ("AIC_0", "AIV_0") and lanes[TRICKY] == "AIV_0"
    flows = {(by_id[f["slice_out"]]["name"], by_id[f["slice_in"]]["name"]) for f in t.flows()}
    assert flows == {("kernel_codegen:QK", "QK(t1)"), ("QK(t1)", TRICKY)}
    qk = min((r for r in rows if r["name"] == "QK(t1)"), key=lambda r: r["ts"])
    assert qk["ts"] == 1_000_002_000 and qk["dur"] == 501
    args = t.slice_args("QK(t1)")
    assert any(k.endswith("task_id") and v == 1 for k, v in args.items())


def test_args_may_be_any_mapping(tmp_path):
    """Sources may hand args as a read-only Mapping built on demand, not only a dict."""
    from types import MappingProxyType

    tl = Timeline()
    tr = tl.add_track(tl.add_process("p"), "lane")
    tl.add_slice(tr, "s", 1000.0, 10.0, "c", MappingProxyType({"task_id": 7, "core": "aic"}))
    write_chrome_json(tl, tmp_path / "t.json")
    (x,) = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
            if e["ph"] == "X"]
    assert x["args"] == {"task_id": 7, "core": "aic"}
    write_perfetto_trace(tl, tmp_path / "t.pftrace")
    _, (s,) = decode_slices(read_packets(tmp_path / "t.pftrace"))
    assert s["args"] == {"task_id": 7, "core": "aic"}


# ---------------------------------------------------------------- properties

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

names = st.text(min_size=1, max_size=12)
arg_values = st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.text(max_size=8),
                       st.booleans(), st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def nested_timelines(draw):
    """Tracks of properly nested slices at fractional-ns times, plus flows between them."""
    tl = Timeline()
    proc = tl.add_process(draw(names))
    for lane in range(draw(st.integers(1, 3))):
        track = tl.add_track(proc, f"lane{lane}", os_tid=draw(st.sampled_from([None, 100 + lane])))
        t = float(draw(st.integers(0, 10**12)))

        def fill(start: float, end: float, depth: int, track=track) -> None:
            cur = start
            for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
                gap = draw(st.floats(0, 50))
                length = draw(st.floats(0, 500))
                s0, s1 = cur + gap, min(cur + gap + length, end)
                if s0 > end:
                    return
                args = draw(st.none() | st.dictionaries(st.text(min_size=1, max_size=6),
                                                        arg_values, max_size=3))
                tl.add_slice(track, draw(names), s0, s1 - s0, draw(names), args)
                fill(s0, s1, depth + 1, track)
                cur = s1
        fill(t, t + 5000.0, 0)
    if len(tl.slices) >= 2:
        for _ in range(draw(st.integers(0, 3))):
            a, b = draw(st.permutations(tl.slices))[:2]
            tl.add_flow(a, b, draw(names))
    return tl


def expected_slices(tl: Timeline) -> list[tuple]:
    """(track uid, name, start ns, end ns) as both exporters must write them."""
    return sorted((s.track.uid, s.name, round(s.ts_ns), max(round(s.ts_ns + s.dur_ns),
                                                              round(s.ts_ns)))
                  for s in tl.slices)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(tl=nested_timelines())
def test_property_both_exporters_keep_every_slice_and_flow(tmp_path, tl):
    js, pf = tmp_path / "p.json", tmp_path / "p.pftrace"
    write_chrome_json(tl, js)
    doc = json.loads(js.read_text(encoding="utf-8"))
    got = sorted((e["tid"], e["name"], round(e["ts"] * 1000), round(e["ts"] * 1000)
                  + round(e["dur"] * 1000)) for e in doc["traceEvents"] if e["ph"] == "X")
    assert got == expected_slices(tl)
    assert sum(e["ph"] == "s" for e in doc["traceEvents"]) == len(tl.flows)
    write_perfetto_trace(tl, pf)
    _, decoded = decode_slices(read_packets(pf))
    assert sorted((s["track"], s["name"], s["ts"], s["end"]) for s in decoded) == \
        expected_slices(tl)
    out_ids = sorted(i for s in decoded for i in s["flow_ids"])
    in_ids = sorted(i for s in decoded for i in s["terminating_flow_ids"])
    assert out_ids == in_ids == sorted(f.id for f in tl.flows)


# ---------------------------------------------------------------- two-process writing

_PARALLEL_SCRIPT = r"""
import sys
import threading
from pypto.compile_profiling import timeline_json as tj
from pypto.compile_profiling.timeline import Timeline
from pypto.compile_profiling.timeline_proto import write_perfetto_trace

tl = Timeline()
proc = tl.add_process("Device r0 · AICore")
prev = None
for lane in range(5):
    track = tl.add_track(proc, f"AIC_{lane}")
    for i in range(40 - 5 * lane):  # uneven tracks, so the split has work to balance
        start = 1_000_000.0 + i * 1000.5 + lane
        s = tl.add_slice(track, f"QK(t{lane}_{i})", start, 700.25, "aicore",
                         {"task_id": i, "core": f"aic{lane}", "shared": [i, 0], "r": 0.5})
        if i % 3 == 0:  # a child slice, so nesting crosses nothing between processes
            tl.add_slice(track, "inner", start + 10, 100.0, "aicore")
        if prev is not None and i % 7 == 0:
            tl.add_flow(prev, s, "dependency")
        prev = s
if sys.argv[2] == "negative":  # on the second-biggest track: rendered by the child
    next(s for s in tl.slices if s.track.name == "AIC_1").ts_ns = -5.0
tj.PARALLEL_MIN_SLICES = 1
n = len(tl.slices)
assert tj.parallel_parts_possible(n) and not tj.parallel_parts_possible(n, False)
# like the CLI's progress timer: another thread makes "automatic" decline, "True" goes ahead
timer = threading.Timer(600, lambda: None)
timer.daemon = True
timer.start()
assert not tj.parallel_parts_possible(n) and tj.parallel_parts_possible(n, True)
out = sys.argv[1]
try:
    tj.write_chrome_json(tl, out + ".json", parallel=True)
    write_perfetto_trace(tl, out + ".pftrace", parallel=True)
except Exception as e:
    print(type(e).__name__, e)
    sys.exit(3)
timer.cancel()
tj.PARALLEL_MIN_SLICES = 1 << 60
tj.write_chrome_json(tl, out + ".seq.json")
write_perfetto_trace(tl, out + ".seq.pftrace")
"""


def _run_parallel_script(tmp_path, mode: str):
    import subprocess
    import sys

    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("two-process writing needs fork and a second core")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", _PARALLEL_SCRIPT, str(tmp_path / "t"), mode],
                          capture_output=True, text=True, cwd=repo, check=False,
                          env={**os.environ, "PYTHONPATH": repo})


def test_two_process_writes_match_sequential_ones(tmp_path):
    """Big timelines are written by two processes; the files must say the same thing."""
    r = _run_parallel_script(tmp_path, "ok")
    assert r.returncode == 0, r.stderr
    # the child's slices are appended where they belong: the very same bytes
    assert (tmp_path / "t.json").read_bytes() == (tmp_path / "t.seq.json").read_bytes()
    par = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    seq = json.loads((tmp_path / "t.seq.json").read_text(encoding="utf-8"))
    key = lambda e: json.dumps(e, sort_keys=True)
    assert len(par["traceEvents"]) == len(seq["traceEvents"]) > 240
    assert sorted(map(key, par["traceEvents"])) == sorted(map(key, seq["traceEvents"]))
    assert par["otherData"] == seq["otherData"]
    # slices first, then the flows (which bind to slices already open at their timestamp)
    phases = [e["ph"] for e in par["traceEvents"] if e["ph"] != "M"]
    assert phases.index("s") > max(i for i, p in enumerate(phases) if p == "X")

    def norm(path):
        tracks, slices = decode_slices(read_packets(path))
        rows = sorted((s["track"], s["ts"], s["end"], s["depth"], s["name"], tuple(s["cats"]),
                       tuple(sorted(s["args"].items())), tuple(s["flow_ids"]),
                       tuple(s["terminating_flow_ids"])) for s in slices)
        return sorted(str(t) for t in tracks.values()), rows

    assert norm(tmp_path / "t.pftrace") == norm(tmp_path / "t.seq.pftrace")
    assert len(norm(tmp_path / "t.pftrace")[1]) > 150
    size = (tmp_path / "t.pftrace").stat().st_size
    assert size == (tmp_path / "t.seq.pftrace").stat().st_size


def test_two_process_write_reports_the_childs_error_and_leaves_no_file(tmp_path):
    r = _run_parallel_script(tmp_path, "negative")
    assert r.returncode == 3, r.stderr
    assert r.stdout.startswith("ProfileWriteError") and "before time 0" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["t.json"]  # the JSON went fine; no .pftrace


def test_json_split_point_balances_args_not_counts():
    """Slices with many args cost more: the two processes get about equal work, not count."""
    from pypto.compile_profiling.timeline_json import _balanced_split

    tl = Timeline()
    tr = tl.add_track(tl.add_process("p"), "t")
    for i in range(4000):  # the first quarter has 10 args (weight 12), the rest none (2)
        tl.add_slice(tr, "s", i, 1, "c", dict.fromkeys("abcdefghij", i) if i < 1000 else None)
    mid = _balanced_split(tl.slices)
    total = 1000 * 12 + 3000 * 2
    first = 12 * min(mid, 1000) + 2 * max(mid - 1000, 0)
    assert abs(first - total / 2) <= 0.02 * total and 0 < mid < 1000
    assert _balanced_split(tl.slices[:2]) == 1
