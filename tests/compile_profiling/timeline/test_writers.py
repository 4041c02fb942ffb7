"""The columnar timeline's two writers: Chrome JSON and Perfetto protobuf, parsed back; then
both formats of one timeline loaded in the offline Perfetto UI."""

from __future__ import annotations

import decimal
import gzip
import io
import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from timeline_strategies import column_blocks, nested_timelines
from trace_readback import load_json, read_packets

from pypto.compile_profiling.timeline import proto_packets, write_json, write_proto
from pypto.compile_profiling.timeline.arg_values import arg_key, json_text
from pypto.compile_profiling.timeline.json_values import safe_text
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    CounterTrack,
    FlowBlock,
    Process,
    SliceBlock,
    Timeline,
    Track,
)
from pypto.compile_profiling.timeline.write_json import write_chrome_json
from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace
from pypto.errors import ProfileWriteError

TRICKY = 'say "hi"\nnew line \\ tab\t ü 編譯 \u2028'
BASE = 1_000_000_000_123  # ns: not a whole microsecond, so ns precision shows


def block(cat, tracks, rows, names, args=(), extra_args=None) -> SliceBlock:
    """A SliceBlock from rows (track index, start ns, dur ns, name index)."""
    tr, st, du, nm = zip(*rows)
    return SliceBlock(cat, tracks, np.array(tr, np.int32), np.array(st, np.int64),
                      np.array(du, np.int64), names, np.array(nm, np.int32), list(args),
                      extra_args)


def sample_timeline() -> Timeline:
    """A compile process (real pid, one thread) and a device view with two lanes; the
    compile thread gets rows from two blocks (stages, then user spans) that nest together.

    No child starts at the same nanosecond as a flow's source: Chrome JSON flow events bind
    to the deepest slice open at their time, so they could not tell the two apart."""
    host = Process(4242, "pypto compile", 0, os_pid=4242)
    main = Track(4243, host, "MainThread", 0, os_tid=4243)
    dev = Process(90001, "Device r0 · AICore (calibrated)", 1,
                  args={"alignment": "anchors"})
    aic0 = Track(90002, dev, "AIC_0", 0)
    aiv0 = Track(90003, dev, "AIV_0", 1)
    stages = block("compile", [main], [(0, BASE, 1000, 0), (0, BASE + 100, 900, 1)],
                   ["compile", "kernel_codegen:QK"],
                   extra_args=[None, {"kernel": TRICKY, "nested": {"a": [1, 2]}}])
    user = block("user", [main], [(0, BASE + 500, 0, 0), (0, BASE + 120, 50, 1)],
                 ["instant-ish", "inner"])
    tasks = block("aicore", [aic0, aiv0],
                  [(0, BASE + 2000, 501, 0), (1, BASE + 2600, 100, 1), (1, BASE + 2800, 100, 0)],
                  ["QK(t1)", TRICKY],
                  [ArgColumn("task_id", np.array([1, 2, 3], np.int64)),
                   ArgColumn("ratio", np.array([0.5, math.nan, 2.0])),
                   ArgColumn("ok", np.array([True, False, True])),
                   ArgColumn("label", ["a", TRICKY, "c"], np.array([True, True, False])),
                   ArgColumn("big", np.array([1 << 63, 0, 1], np.uint64),
                             np.array([True, False, False])),
                   ArgColumn("shared", np.array([[3, 0], [2, 1], [0, 0]])),
                   ArgColumn("kind", np.array([1, 0, 1], np.int32), np.array([True, False, True]),
                             table=["unused", TRICKY])])
    flows = [FlowBlock("kernel", "launch", stages, np.array([1]), tasks, np.array([0])),
             FlowBlock("dependency", "dep", tasks, np.array([0, 0]), tasks, np.array([1, 2]))]
    depth = CounterTrack(dev, "ready queue", np.array([BASE + 2000, BASE + 2600], np.int64),
                         np.array([3, 1], np.int64), unit="tasks")
    util = CounterTrack(dev, "utilisation", np.array([BASE + 2000], np.int64),
                        np.array([0.25]))
    return Timeline([host, dev], [main, aic0, aiv0], [stages, user, tasks], flows,
                    [depth, util], {"clock": "CLOCK_MONOTONIC",
                                    "alignment": {"r0": "calibrated"}, "note": TRICKY})


def ns(us) -> int:
    """Microseconds as parsed (Decimal, exact) back to integer ns."""
    return int(decimal.Decimal(us) * 1000)


# ---------------------------------------------------------------- Chrome JSON

def test_json_events_names_ids_and_exact_ns_times(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    doc = load_json(out.read_bytes())
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert meta[("process_name", 4242, 0)] == {"name": "pypto compile"}
    assert meta[("process_sort_index", 90001, 0)] == {"sort_index": 1}
    assert meta[("thread_name", 4242, 4243)] == {"name": "MainThread"}
    assert meta[("thread_name", 90001, 90003)] == {"name": "AIV_0"}
    assert meta[("thread_sort_index", 90001, 90003)] == {"sort_index": 1}
    xs = [e for e in events if e["ph"] == "X"]
    got = sorted((e["pid"], e["tid"], e["name"], e["cat"], ns(e["ts"]), ns(e["dur"]))
                 for e in xs)
    assert got == sorted([
        (4242, 4243, "compile", "compile", BASE, 1000),
        (4242, 4243, "kernel_codegen:QK", "compile", BASE + 100, 900),
        (4242, 4243, "instant-ish", "user", BASE + 500, 0),
        (4242, 4243, "inner", "user", BASE + 120, 50),
        (90001, 90002, "QK(t1)", "aicore", BASE + 2000, 501),
        (90001, 90003, TRICKY, "aicore", BASE + 2600, 100),
        (90001, 90003, "QK(t1)", "aicore", BASE + 2800, 100)])


def test_json_args_follow_columns_presence_and_extra_args(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    xs = [e for e in load_json(out.read_bytes())["traceEvents"] if e["ph"] == "X"]
    args = {(e["name"], ns(e["ts"])): e.get("args") for e in xs}
    assert args[("QK(t1)", BASE + 2000)] == {"task_id": 1, "ratio": decimal.Decimal("0.5"),
                                            "ok": True, "label": "a", "big": 1 << 63,
                                            "shared": [3, 0], "kind": TRICKY}
    # NaN is null; `big` absent where not present, `label` and `kind` too; `kind` from its
    # table
    assert args[(TRICKY, BASE + 2600)] == {"task_id": 2, "ratio": None, "ok": False,
                                          "label": TRICKY, "shared": [2, 1]}
    assert args[("QK(t1)", BASE + 2800)] == {"task_id": 3, "ratio": 2, "ok": True,
                                            "shared": [0, 0], "kind": TRICKY}
    assert list(args[("QK(t1)", BASE + 2000)]) == ["task_id", "ratio", "ok", "label", "big",
                                                  "shared", "kind"]
    assert args[("kernel_codegen:QK", BASE + 100)] == {"kernel": TRICKY,
                                                      "nested": {"a": [1, 2]}}
    assert "args" not in next(e for e in xs if e["name"] == "compile")  # no args at all
    assert "args" not in next(e for e in xs if e["name"] == "inner")


def test_json_flows_pair_on_source_and_destination_starts(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    events = load_json(out.read_bytes())["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(ends) == 3 and set(starts) == set(ends)
    pairs = sorted((s["name"], s["cat"], s["tid"], ns(s["ts"]), ends[i]["tid"],
                    ns(ends[i]["ts"]), ends[i]["bp"]) for i, s in starts.items())
    assert pairs == [
        ("dependency", "dep", 90002, BASE + 2000, 90003, BASE + 2600, "e"),
        ("dependency", "dep", 90002, BASE + 2000, 90003, BASE + 2800, "e"),
        ("kernel", "launch", 4243, BASE + 100, 90002, BASE + 2000, "e")]


def test_json_counters_and_other_data(tmp_path):
    out = tmp_path / "t.json"
    write_chrome_json(sample_timeline(), out)
    doc = load_json(out.read_bytes())
    cs = [(e["pid"], e["name"], ns(e["ts"]), e["args"]) for e in doc["traceEvents"]
          if e["ph"] == "C"]
    assert cs == [(90001, "ready queue", BASE + 2000, {"tasks": 3}),
                  (90001, "ready queue", BASE + 2600, {"tasks": 1}),
                  (90001, "utilisation", BASE + 2000, {"value": decimal.Decimal("0.25")})]
    other = doc["otherData"]
    assert other["clock"] == "CLOCK_MONOTONIC" and other["note"] == TRICKY
    assert other["alignment"] == {"r0": "calibrated"}
    assert other["processes"] == [
        {"pid": 4242, "name": "pypto compile", "os_pid": 4242, "estimated": False, "args": {}},
        {"pid": 90001, "name": "Device r0 · AICore (calibrated)", "os_pid": None,
         "estimated": False, "args": {"alignment": "anchors"}}]


def test_json_keeps_ns_beyond_float_precision():
    """CLOCK_MONOTONIC after ~52 days of uptime: floats would lose the nanosecond digit."""
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    late = (1 << 53) + 7  # ~104 days
    tl = Timeline([host], [lane], [block("c", [lane], [(0, late, 3, 0), (0, late + 10, 1, 0)],
                                         ["s"])])
    tl.flows.append(FlowBlock("f", "flow", tl.blocks[0], np.array([0]), tl.blocks[0],
                              np.array([1])))
    buf = io.BytesIO()
    write_chrome_json(tl, buf)
    events = load_json(buf.getvalue())["traceEvents"]
    assert sorted(ns(e["ts"]) for e in events if e["ph"] == "X") == [late, late + 10]
    assert [ns(e["ts"]) for e in events if e["ph"] in "sf"] == [late, late + 10]


def test_json_gz_and_stream_outputs_hold_the_same_document(tmp_path):
    tl = sample_timeline()
    write_chrome_json(tl, tmp_path / "t.json")
    write_chrome_json(tl, tmp_path / "t.json.gz")
    buf = io.BytesIO()
    write_chrome_json(tl, buf)
    plain = (tmp_path / "t.json").read_bytes()
    assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()) == plain == buf.getvalue()
    assert not buf.closed
    assert sorted(os.listdir(tmp_path)) == ["t.json", "t.json.gz"]  # no temp file left


def test_json_bad_text_nan_and_deep_values_still_give_strict_json():
    deep: list = []
    for _ in range(400):
        deep = [deep]
    cyclic: dict = {}
    cyclic["self"] = cyclic
    host = Process(1, "proc \udcff", 0, args={"path": "/tmp/\udc80x"})
    lane = Track(2, host, "lane \ud800", 0)
    b = block("cat \udfff", [lane], [(0, 10, 5, 0), (0, 20, 5, 1)], ["ok", "bad \udcfe"],
              [ArgColumn("s", ["\udc81", math.inf]),
               ArgColumn("k \udc82", np.array([math.nan, -math.inf]))],
              [{"deep": deep, "obj": object(), "huge": 1 << 80, 3: "int key"},
               {"cyclic": cyclic, "inf": [math.inf, -math.inf], "np": np.int32(5),
                "np_text": np.str_("t \udc85")}])
    tl = Timeline([host], [lane], [b], [], [], {"m \udc83": "\udc84", "n": math.nan})
    buf = io.BytesIO()
    write_chrome_json(tl, buf)
    doc = load_json(buf.getvalue())
    a0, a1 = (e["args"] for e in doc["traceEvents"] if e["ph"] == "X")
    assert a0["s"] == "\\udc81" and a0["k \\udc82"] is None and a1["s"] is None
    assert a0["huge"] == str(1 << 80) and a0["3"] == "int key"
    assert a0["obj"].startswith("<object object")
    assert isinstance(a0["deep"], list) and "[[[" in json.dumps(a0["deep"])
    assert a1["inf"] == [None, None] and a1["np"] == 5 and a1["np_text"] == "t \\udc85"
    assert "{...}" in json.dumps(a1["cyclic"])
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert names == {"ok", "bad \\udcfe"}
    assert doc["otherData"]["m \\udc83"] == "\\udc84" and doc["otherData"]["n"] is None
    assert doc["otherData"]["processes"][0]["args"] == {"path": "/tmp/\\udc80x"}


def test_json_write_failure_leaves_no_file(tmp_path, monkeypatch):
    from pypto.compile_profiling.timeline import json_rows

    def broken(counter, chunk):
        raise RuntimeError("disk on fire")

    # the counters come last: the slices and flows are written by then
    monkeypatch.setattr(json_rows, "counter_rows", lambda c, n: (broken(c, n) for _ in [0]))
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_chrome_json(sample_timeline(), tmp_path / "t.json")
    assert os.listdir(tmp_path) == []


def test_json_of_empty_timeline_is_valid():
    buf = io.BytesIO()
    write_chrome_json(Timeline(), buf)
    assert load_json(buf.getvalue()) == {"displayTimeUnit": "ms", "traceEvents": [],
                                         "otherData": {"processes": []}}


def test_json_many_rows_span_several_chunks(monkeypatch):
    from pypto.compile_profiling.timeline import write_json

    monkeypatch.setattr(write_json, "CHUNK_ROWS", 7)
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    n = 50
    b = block("c", [lane], [(0, 1000 * i, 10, i % 3) for i in range(n)], ["a", "b", "c"],
              [ArgColumn("i", np.arange(n), np.arange(n) % 2 == 0)])
    flows = FlowBlock("f", "flow", b, np.arange(n - 1), b, np.arange(1, n))
    buf = io.BytesIO()
    write_chrome_json(Timeline([host], [lane], [b], [flows]), buf)
    events = load_json(buf.getvalue())["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert [ns(e["ts"]) for e in xs] == [1000 * i for i in range(n)]
    assert [e.get("args") for e in xs] == [{"i": i} if i % 2 == 0 else None for i in range(n)]
    assert sorted(e["id"] for e in events if e["ph"] == "s") == list(range(1, n))


# ---------------------------------------------------------------- Chrome JSON: what the model holds

def us_of(ns_: int) -> decimal.Decimal:
    """Integer ns as the exact decimal microseconds the JSON holds."""
    return decimal.Decimal(ns_) / 1000


def model_events(tl: Timeline) -> list[dict]:
    """The events `tl` holds, as the JSON must read back: slices in block and row order with
    `row_args` rendered by `arg_values`, then each arrow's `s` and `f`, then the counters."""
    events: list[dict] = []
    for b in tl.blocks:
        for r in Timeline(blocks=[b]).slices():
            e = {"ph": "X", "pid": r.track.process.pid, "tid": r.track.tid,
                 "ts": us_of(r.start_ns), "dur": us_of(r.dur_ns), "name": safe_text(r.name),
                 "cat": safe_text(r.cat)}
            if r.args:
                e["args"] = {arg_key(k): load_json(json_text(v)) for k, v in r.args.items()}
            events.append(e)
    next_id = 1
    for f in tl.flows:
        for s_row, d_row in zip(f.src_row.tolist(), f.dst_row.tolist()):
            for ph, b, row in (("s", f.src, s_row), ("f", f.dst, d_row)):
                t = b.tracks[b.track[row]]
                e = {"ph": ph} | ({"bp": "e"} if ph == "f" else {})
                events.append(e | {"id": next_id, "pid": t.process.pid, "tid": t.tid,
                                   "ts": us_of(int(b.start_ns[row])), "name": safe_text(f.name),
                                   "cat": safe_text(f.cat)})
            next_id += 1
    for c in tl.counters:
        for ts, v in zip(c.ts_ns.tolist(), list(c.values)):
            events.append({"ph": "C", "pid": c.process.pid, "tid": 0, "name": safe_text(c.name),
                           "ts": us_of(ts), "args": {safe_text(c.unit or "value"):
                                                     load_json(json_text(v))}})
    return events


def same_as_model(tl: Timeline) -> dict:
    """Write `tl` as JSON: it reads back as the events the model holds, keys in order."""
    out = io.BytesIO()
    write_chrome_json(tl, out)
    doc = load_json(out.getvalue())
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    want = model_events(tl)
    assert events == want
    for got, expected in zip(events, want, strict=True):
        assert list(got) == list(expected)
        assert list(got.get("args", ())) == list(expected.get("args", ()))
    json.loads(out.getvalue())  # and the standard parser agrees it is JSON
    return doc


def test_json_of_the_sample_timeline_is_what_the_model_holds():
    same_as_model(sample_timeline())


def test_json_extremes_and_hostile_text_are_what_the_model_holds(monkeypatch):
    monkeypatch.setattr(write_json, "CHUNK_ROWS", 3)  # chunks of different widths
    big = (1 << 63) - 1
    host = Process(-7, "p", 0)
    lanes = [Track(0, host, "a", 0), Track(1 << 40, host, 'b"\n', 1)]
    ns_ = [-(1 << 63), -1500, -1, 0, 1, 999, 1000, 1001, 1010, 1100, (1 << 52) + 1, big,
           9_999_999, 10**8, 10**16 + 5]
    n = len(ns_)
    hostile = ['q"uote', "new\nline", "\udc80 lone", "\x00\x1f ctl", "", "編譯 \u2028", "\\"]
    names = hostile + ["x" * 70]
    cols = [ArgColumn("i64", np.array(ns_[::-1], np.int64)),
            ArgColumn("u64", np.array([(1 << 64) - 1 - i for i in range(n)], np.uint64)),
            ArgColumn("i8", np.arange(n, dtype=np.int8) - 7, np.arange(n) % 3 == 0),
            ArgColumn("f", np.array([0.1, -2.5e300, math.nan, math.inf, -0.0, 1e-300, 3.0] * 3)
                      [:n]),
            ArgColumn("f32", np.linspace(-1, 1, n, dtype=np.float32)),
            ArgColumn('k"ey\n', np.arange(n) % 2 == 0, np.arange(n) % 4 != 1),
            ArgColumn("pair", np.arange(2 * n, dtype=np.int64).reshape(n, 2) - n),
            ArgColumn("fpair", np.array([[0.5, math.nan]] * n)),
            ArgColumn("flags", np.arange(2 * n).reshape(n, 2) % 3 == 0),
            ArgColumn("none", np.zeros((n, 0), np.int64)),
            ArgColumn("s", [hostile[i % len(hostile)] for i in range(n)],
                      np.arange(n) % 5 != 0),
            ArgColumn("mixed", ([None, 1 << 80, -(1 << 70), "x\udc80", [1, None],
                                 {"a": math.nan, 3: "k"}, 2.5, True] * 2)[:n]),
            ArgColumn("unicode", np.array(hostile * 3)[:n]),
            ArgColumn("objects", np.array([{"k": 1}, None, 5] * 5, dtype=object)[:n]),
            ArgColumn(7, np.arange(n, dtype=np.int32) % 3, table=[1 << 70, None, "t\udc81"])]
    b = SliceBlock("c\udcff", lanes, np.arange(n, dtype=np.int32) % 2, np.array(ns_, np.int64),
                   np.abs(np.array(ns_[::-1], np.int64)) // 3, names,
                   np.arange(n, dtype=np.int32) % len(names), cols)
    # rows with none of their args: only columns with `present`, none present in some rows;
    # extra args after the columns, some rows without, one repeating a column's key
    sparse = SliceBlock("s", lanes, np.zeros(n, np.int32), np.arange(n, dtype=np.int64),
                        np.ones(n, np.int64), ["n"], np.zeros(n, np.int32),
                        [ArgColumn("a", np.arange(n), np.arange(n) % 3 == 1),
                         ArgColumn("b", ["x"] * n, np.arange(n) % 3 == 2)],
                        [None, {}, {"e": 1}, {"a": "again"}, {"n": np.int64(4), 5: [1 << 90]}]
                        * 3)
    empty = SliceBlock("e", lanes, np.zeros(0, np.int32), np.zeros(0, np.int64),
                       np.zeros(0, np.int64), [], np.zeros(0, np.int32),
                       [ArgColumn("a", np.zeros(0, np.int64))])
    flows = [FlowBlock("f\n", "fl", b, np.arange(n)[::-1], sparse, np.arange(n)),
             FlowBlock("g", "g", empty, np.zeros(0, np.int64), b, np.zeros(0, np.int64))]
    counters = [CounterTrack(host, "c", np.array(ns_, np.int64), np.arange(n) - 3),
                CounterTrack(host, "f", np.array(ns_, np.int64),
                             np.linspace(-1e20, 1e20, n), unit='u"'),
                CounterTrack(host, "b", np.array(ns_[:2], np.int64), np.array([True, False]))]
    tl = Timeline([host], lanes, [b, sparse, empty], flows, counters)
    doc = same_as_model(tl)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert [ns(e["ts"]) for e in xs[:n]] == ns_
    assert [e.get("args") for e in xs[n:n + 5]] == [None, {"a": 1}, {"b": "x", "e": 1},
                                                    {"a": "again"}, {"a": 4, "n": 4,
                                                                     "5": [str(1 << 90)]}]
    assert xs[0]["args"]["mixed"] is None and xs[1]["args"]["mixed"] == str(1 << 80)
    assert xs[0]["args"]["7"] == str(1 << 70)


@settings(max_examples=150, deadline=None)
@given(case=column_blocks())
def test_property_json_is_what_the_model_holds(case):
    tl, chunk = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(write_json, "CHUNK_ROWS", chunk)
        same_as_model(tl)


# ---------------------------------------------------------------- protobuf

def decode_slices(packets) -> tuple[dict, list[dict]]:
    """Replay the packets like a trace processor: descriptors, interning, begin/end stacks.
    Slices come out in the order they end, each with its track, depth and begin order."""
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in packets
              if p.HasField("track_descriptor")}
    seq_state: dict[int, dict] = {}
    stacks: dict[int, list] = {}
    done = []
    begun = 0
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
        if te.type == pb.TrackEvent.TYPE_COUNTER:
            continue
        stack = stacks.setdefault(track, [])
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            assert not stack or stack[-1]["ts"] <= p.timestamp, "begins out of order"
            args = {st["keys"][a.name_iid]: getattr(a, a.WhichOneof("value"))
                    for a in te.debug_annotations}
            stack.append({"track": track, "ts": p.timestamp, "depth": len(stack),
                          "order": begun,
                          "name": te.name if te.HasField("name") else st["names"][te.name_iid],
                          "cats": [st["cats"][c] for c in te.category_iids], "args": args,
                          "flow_ids": list(te.flow_ids),
                          "terminating_flow_ids": list(te.terminating_flow_ids)})
            begun += 1
        else:
            s = stack.pop()
            assert p.timestamp >= s["ts"]
            s["end"] = p.timestamp
            done.append(s)
    assert all(not s for s in stacks.values()), "unbalanced begin/end"
    return tracks, done


def counter_values(packets) -> dict[int, list]:
    """track uuid -> [(ts, value)] of the counter events."""
    defaults: dict[int, int] = {}
    got: dict[int, list] = {}
    for p in packets:
        if p.HasField("trace_packet_defaults"):
            defaults[p.trusted_packet_sequence_id] = \
                p.trace_packet_defaults.track_event_defaults.track_uuid
        if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_COUNTER:
            te = p.track_event
            value = te.double_counter_value if te.HasField("double_counter_value") \
                else te.counter_value
            got.setdefault(defaults[p.trusted_packet_sequence_id], []).append(
                (p.timestamp, value))
    return got


def test_proto_descriptors_real_ids_and_lane_tracks():
    buf = io.BytesIO()
    size = write_perfetto_trace(sample_timeline(), buf)
    assert size == len(buf.getvalue()) > 0
    tracks, _ = decode_slices(read_packets(buf.getvalue()))
    procs = {t.process.process_name: t for t in tracks.values() if t.HasField("process")}
    assert {n: t.process.pid for n, t in procs.items()} == {
        "pypto compile": 4242, "Device r0 · AICore (calibrated)": 90001}
    assert all(t.child_ordering == pb.TrackDescriptor.EXPLICIT for t in procs.values())
    dev, host = procs["Device r0 · AICore (calibrated)"], procs["pypto compile"]
    # every track is a thread track, as in the JSON output: a real thread and the device's
    # lanes alike (so the UI and SQL name them as they name the JSON's)
    threads = {t.thread.thread_name: t for t in tracks.values() if t.HasField("thread")}
    assert {n: (t.thread.pid, t.thread.tid) for n, t in threads.items()} == {
        "MainThread": (4242, 4243), "AIC_0": (90001, 90002), "AIV_0": (90001, 90003)}
    assert threads["MainThread"].parent_uuid == host.uuid
    assert threads["AIC_0"].parent_uuid == threads["AIV_0"].parent_uuid == dev.uuid
    assert [threads["AIC_0"].sibling_order_rank, threads["AIV_0"].sibling_order_rank] == [0, 1]
    assert not [t for t in tracks.values() if t.name and not t.HasField("counter")]
    # a counter is named as the UI names the JSON one: "<name> <unit>" ("value" without)
    counters = {t.name: t for t in tracks.values() if t.HasField("counter")}
    assert set(counters) == {"ready queue tasks", "utilisation value"}
    assert counters["ready queue tasks"].counter.unit_name == "tasks"
    assert all(t.parent_uuid == dev.uuid for t in counters.values())


def test_proto_slices_nest_across_blocks_with_args_and_flows():
    buf = io.BytesIO()
    write_perfetto_trace(sample_timeline(), buf)
    tracks, slices = decode_slices(read_packets(buf.getvalue()))
    by_name = {t.thread.thread_name or t.name: u for u, t in tracks.items()}
    main = sorted((s for s in slices if s["track"] == by_name["MainThread"]),
                  key=lambda s: s["order"])
    # stages block and user block merged on one thread, begun by (start, longest first)
    assert [(s["name"], s["depth"], s["ts"] - BASE, s["end"] - BASE, s["cats"]) for s in main] \
        == [("compile", 0, 0, 1000, ["compile"]),
            ("kernel_codegen:QK", 1, 100, 1000, ["compile"]),
            ("inner", 2, 120, 170, ["user"]),
            ("instant-ish", 2, 500, 500, ["user"])]
    kc = main[1]
    assert kc["args"] == {"kernel": TRICKY, "nested": '{"a":[1,2]}'}
    tasks = {(s["name"], s["ts"] - BASE): s for s in slices if s["cats"] == ["aicore"]}
    t1, t2, t3 = tasks[("QK(t1)", 2000)], tasks[(TRICKY, 2600)], tasks[("QK(t1)", 2800)]
    assert t1["track"] == by_name["AIC_0"] and t2["track"] == t3["track"] == by_name["AIV_0"]
    assert t1["end"] - t1["ts"] == 501
    assert t1["args"] == {"task_id": 1, "ratio": 0.5, "ok": True, "label": "a",
                          "big": 1 << 63, "shared": "[3,0]", "kind": TRICKY}
    assert t2["args"]["label"] == TRICKY and math.isnan(t2["args"]["ratio"])
    assert set(t2["args"]) == {"task_id", "ratio", "ok", "label", "shared"}
    assert t3["args"] == {"task_id": 3, "ratio": 2.0, "ok": True, "shared": "[0,0]", "kind": TRICKY}
    # flows: kc -> t1, t1 -> t2, t1 -> t3, ids unique and paired
    assert kc["flow_ids"] and kc["flow_ids"] == t1["terminating_flow_ids"]
    assert sorted(t1["flow_ids"]) == sorted(t2["terminating_flow_ids"]
                                            + t3["terminating_flow_ids"])
    assert len({*kc["flow_ids"], *t1["flow_ids"]}) == 3


def test_proto_counters_and_metadata():
    buf = io.BytesIO()
    write_perfetto_trace(sample_timeline(), buf)
    packets = read_packets(buf.getvalue())
    tracks, _ = decode_slices(packets)
    uuid = {t.name: u for u, t in tracks.items() if t.HasField("counter")}
    values = counter_values(packets)
    assert values[uuid["ready queue tasks"]] == [(BASE + 2000, 3), (BASE + 2600, 1)]
    assert values[uuid["utilisation value"]] == [(BASE + 2000, 0.25)]
    meta = {m.name: m for p in packets if p.HasField("chrome_events")
            for m in p.chrome_events.metadata}
    assert meta["clock"].string_value == "CLOCK_MONOTONIC"
    assert meta["note"].string_value == TRICKY
    assert json.loads(meta["alignment"].json_value) == {"r0": "calibrated"}
    assert [p["pid"] for p in json.loads(meta["processes"].json_value)] == [4242, 90001]


def test_proto_counter_values_serialized_several_at_a_time(monkeypatch):
    monkeypatch.setattr(proto_packets, "COUNTERS_PER_SERIALIZE", 3)
    dev = Process(1, "dev", 0)
    ints = CounterTrack(dev, "ints", np.arange(7, dtype=np.int64) * 10, np.arange(7) * -2)
    floats = CounterTrack(dev, "floats", np.arange(2, dtype=np.int64), np.array([0.5, 1.5]))
    one = CounterTrack(dev, "one", np.array([4], np.int64), np.array([9]))
    buf = io.BytesIO()
    write_perfetto_trace(Timeline([dev], [], [], [], [ints, floats, one]), buf)
    packets = read_packets(buf.getvalue())
    tracks, _ = decode_slices(packets)
    values = counter_values(packets)
    uuid = {t.name: u for u, t in tracks.items() if t.HasField("counter")}
    assert values[uuid["ints value"]] == [(10 * i, -2 * i) for i in range(7)]
    assert values[uuid["floats value"]] == [(0, 0.5), (1, 1.5)]
    assert values[uuid["one value"]] == [(4, 9)]


def test_proto_path_output_batches_and_bad_text(tmp_path, monkeypatch):
    monkeypatch.setattr(proto_packets, "PACKETS_PER_BATCH", 3)
    monkeypatch.setattr(proto_packets, "ROWS_PER_CHUNK", 2)
    tl = sample_timeline()
    tl.blocks[2].names[1] = "bad \udcfe"
    tl.tracks[1].name = "AIC \ud800"
    out = tmp_path / "t.pftrace"
    size = write_perfetto_trace(tl, out)
    assert size == out.stat().st_size and os.listdir(tmp_path) == ["t.pftrace"]
    tracks, slices = decode_slices(read_packets(out.read_bytes()))
    assert len(slices) == 7
    assert sum(s["name"] == "bad \\udcfe" for s in slices) == 1
    assert "AIC \\ud800" in {t.thread.thread_name for t in tracks.values()}


def test_proto_clips_a_slice_sticking_out_of_its_parent(caplog):
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    tl = Timeline([host], [lane], [block("c", [lane], [(0, 100, 50, 0), (0, 120, 100, 1)],
                                         ["parent", "child"])])
    buf = io.BytesIO()
    write_perfetto_trace(tl, buf)
    _, slices = decode_slices(read_packets(buf.getvalue()))
    assert {s["name"]: (s["ts"], s["end"], s["depth"]) for s in slices} == {
        "parent": (100, 150, 0), "child": (120, 150, 1)}
    assert "1 slices stuck out of their parent" in caplog.text


def test_proto_refuses_negative_time_and_leaves_no_file(tmp_path):
    tl = sample_timeline()
    tl.blocks[2].start_ns[1] = -5
    with pytest.raises(ProfileWriteError, match="before time 0"):
        write_perfetto_trace(tl, tmp_path / "t.pftrace")
    assert os.listdir(tmp_path) == []


def test_proto_refuses_a_counter_before_time_0():
    tl = sample_timeline()
    tl.counters[1].ts_ns[0] = -1
    with pytest.raises(ProfileWriteError, match="counter 'utilisation': a value before time 0"):
        write_perfetto_trace(tl, io.BytesIO())


def test_proto_of_empty_timeline_is_valid():
    buf = io.BytesIO()
    write_perfetto_trace(Timeline(), buf)
    packets = read_packets(buf.getvalue())
    assert [p.WhichOneof("data") for p in packets] == ["chrome_events"]


def test_proto_numpy_text_and_bool_values_in_list_columns():
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    b = block("c", [lane], [(0, 10, 5, 0), (0, 20, 5, 0)], ["s"],
              [ArgColumn("v", [np.str_("text"), np.bool_(True)]),
               ArgColumn("u", np.array(["a", "b"]))])
    buf = io.BytesIO()
    write_perfetto_trace(Timeline([host], [lane], [b]), buf)
    _, slices = decode_slices(read_packets(buf.getvalue()))
    assert sorted(((s["args"]["v"], s["args"]["u"]) for s in slices), key=lambda a: a[1]) \
        == [("text", "a"), (True, "b")]


def test_proto_text_columns_match_the_per_value_path(monkeypatch):
    """String columns and 2D numeric columns are made into text per chunk (`_texts`): the
    same bytes as through `proto_field` one value at a time, constant or not over a chunk."""
    monkeypatch.setattr(proto_packets, "ROWS_PER_CHUNK", 4)
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    n = 10
    rows = [(0, 10 * i, 5, i % 2) for i in range(n)]
    cols = [ArgColumn("kind", ["same"] * 4 + [f"k{i % 2}" for i in range(n - 4)]),
            ArgColumn("bad", ["é", "x \ud800"] * (n // 2)),
            ArgColumn("u", np.array([f"u{i // 4}" for i in range(n)])),
            ArgColumn("ints", np.arange(3 * n, dtype=np.int64).reshape(n, 3) // 7),
            ArgColumn("uints", np.full((n, 2), 2**64 - 1, np.uint64)),
            ArgColumn("floats", np.array([[0.1, math.nan, -math.inf]] * n)),
            ArgColumn("flags", np.arange(2 * n).reshape(n, 2) % 3 == 0),
            ArgColumn("mixed", ["a", 1] * (n // 2)),
            ArgColumn("tab", np.arange(n, dtype=np.int32) % 3, table=["é", "x \ud800", "t"])]
    tl = Timeline([host], [lane], [block("c", [lane], rows, ["a", "b"], cols)])
    fast = io.BytesIO()
    write_perfetto_trace(tl, fast)
    monkeypatch.setattr(proto_packets, "texts_of", lambda values, rows: None)
    monkeypatch.setattr(proto_packets, "COLUMN_ENCODER", False)
    slow = io.BytesIO()
    write_perfetto_trace(tl, slow)
    assert fast.getvalue() == slow.getvalue()
    _, slices = decode_slices(read_packets(fast.getvalue()))
    first = min(slices, key=lambda s: s["ts"])["args"]
    assert first == {"kind": "same", "bad": "é", "u": "u0", "ints": "[0,0,0]",
                     "uints": f"[{2**64 - 1},{2**64 - 1}]", "floats": "[0.1,null,null]",
                     "flags": "[true,false]", "mixed": "a", "tab": "é"}
    assert {s["args"]["bad"] for s in slices} == {"é", "x \\ud800"}
    assert {s["args"]["tab"] for s in slices} == {"é", "x \\ud800", "t"}


@pytest.mark.parametrize("writer", [write_chrome_json, write_perfetto_trace])
def test_write_errors_are_one_profile_write_error(tmp_path, writer):
    (tmp_path / "dir.out").mkdir()
    with pytest.raises(ProfileWriteError, match="dir.out: is a directory, not a regular file: refusing to replace it"):
        writer(sample_timeline(), tmp_path / "dir.out")
    assert os.listdir(tmp_path) == ["dir.out"]  # no temp file left

    class Full(io.RawIOBase):
        name = "<stdout>"

        def writable(self):
            return True

        def write(self, data):
            raise OSError(28, "No space left on device")

    with pytest.raises(ProfileWriteError, match="<stdout>: cannot write: No space left"):
        writer(sample_timeline(), Full())


def test_both_writers_agree_on_a_bigger_timeline(monkeypatch):
    """Many rows over several chunks and batches, interleaved blocks on the same lanes."""
    monkeypatch.setattr(proto_packets, "ROWS_PER_CHUNK", 16)
    monkeypatch.setattr(proto_packets, "PACKETS_PER_BATCH", 10)
    rng = np.random.default_rng(7)
    dev = Process(5, "dev", 0)
    lanes = [Track(10 + i, dev, f"L{i}", i) for i in range(3)]
    n = 300
    starts = np.arange(n, dtype=np.int64) * 1000
    a = SliceBlock("task", lanes, rng.integers(0, 3, n).astype(np.int32), starts,
                   np.full(n, 900, np.int64), [f"t{i}" for i in range(n)],
                   np.arange(n, dtype=np.int32),
                   [ArgColumn("id", np.arange(n, dtype=np.int64)),
                    ArgColumn("epoch", np.arange(n) // 40),  # constant over some chunks
                    ArgColumn("even", np.arange(n) % 2 == 0, np.arange(n) % 3 != 0),
                    ArgColumn("label", [f"l{i % 5}" for i in range(n)]),
                    ArgColumn("tabled", np.arange(n, dtype=np.int32) % 7,
                              table=[f"k{i}" for i in range(7)])])
    b = SliceBlock("phase", lanes, a.track.copy(), starts + 100, np.full(n, 200, np.int64),
                   ["phase"], np.zeros(n, np.int32))
    src = rng.integers(0, n, 40)
    fl = FlowBlock("dep", "dep", a, src, b, (src + 1) % n)
    tl = Timeline([dev], lanes, [b, a], [fl])
    js, pf = io.BytesIO(), io.BytesIO()
    write_chrome_json(tl, js)
    write_perfetto_trace(tl, pf)
    events = load_json(js.getvalue())["traceEvents"]
    from_json = sorted((e["tid"], e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
                       for e in events if e["ph"] == "X")
    tracks, slices = decode_slices(read_packets(pf.getvalue()))
    tid = {u: t.thread.tid for u, t in tracks.items()}
    from_proto = sorted((tid[s["track"]], s["name"], s["ts"], s["end"]) for s in slices)
    assert from_json == from_proto and len(from_json) == 2 * n
    json_args = sorted((e["name"], sorted(e.get("args", {}).items())) for e in events
                       if e["ph"] == "X")
    proto_args = sorted((s["name"], sorted(s["args"].items())) for s in slices)
    assert json_args == proto_args
    assert dict(json_args)["t41"] == [("epoch", 1), ("even", False), ("id", 41), ("label", "l1"),
                                      ("tabled", "k6")]
    assert dict(json_args)["t42"] == [("epoch", 1), ("id", 42), ("label", "l2"),
                                      ("tabled", "k0")]
    assert all(s["depth"] == (s["name"] == "phase") for s in slices)
    assert sorted(i for s in slices for i in s["flow_ids"]) == \
        sorted(i for s in slices for i in s["terminating_flow_ids"]) == list(range(1, 41))


# ---------------------------------------------------------------- offline Perfetto UI

@pytest.mark.perfetto_ui
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_both_formats_load_in_perfetto(perfetto_ui, tmp_path, suffix):
    out = tmp_path / f"t{suffix}"
    (write_chrome_json if suffix == ".json" else write_perfetto_trace)(sample_timeline(), out)
    t = perfetto_ui.load(out)
    assert t.import_errors() == []
    assert t.slice_count() == 7
    assert {"pypto compile", "Device r0 · AICore (calibrated)"} <= set(t.process_names())
    procs = {p["name"]: p["pid"] for p in t.processes()}
    assert procs["pypto compile"] == 4242 and procs["Device r0 · AICore (calibrated)"] == 90001
    rows = t.slices()
    by_id = {r["id"]: r for r in rows}
    flows = sorted((by_id[f["slice_out"]]["name"], by_id[f["slice_in"]]["name"])
                   for f in t.flows())
    assert flows == [("QK(t1)", "QK(t1)"), ("QK(t1)", TRICKY), ("kernel_codegen:QK", "QK(t1)")]
    depth = {r["name"]: r["depth"] for r in rows}
    assert depth["compile"] == 0 and depth["kernel_codegen:QK"] == 1 and depth["inner"] == 2
    qk = min((r for r in rows if r["name"] == "QK(t1)"), key=lambda r: r["ts"])
    assert qk["ts"] == BASE + 2000 and qk["dur"] == 501
    counters = t.query("select t.name as name, count(*) as n from counter c "
                       "join counter_track t on c.track_id = t.id group by t.name")
    # Chrome JSON counter tracks are named "<name> <arg key>"; protobuf ones the same
    assert {r["name"]: r["n"] for r in counters} == {"ready queue tasks": 2,
                                                     "utilisation value": 1}
    # the lanes are threads in both formats, named alike
    assert {(r["tid"], r["name"]) for r in t.threads()} >= {(4243, "MainThread"),
                                                            (90002, "AIC_0"), (90003, "AIV_0")}
    if suffix == ".pftrace":  # chrome_events metadata lands in the metadata table
        meta = t.metadata()
        assert meta["cr-clock"] == "CLOCK_MONOTONIC" and meta["cr-note"] == TRICKY


# ---------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tl=nested_timelines())
def test_property_both_writers_keep_every_slice_nesting_and_flow(tl):
    expected = sorted((b.tracks[t].tid, b.names[n], s, s + d)
                      for b in tl.blocks for t, s, d, n in zip(b.track.tolist(),
                                                               b.start_ns.tolist(),
                                                               b.dur_ns.tolist(),
                                                               b.name.tolist()))
    js, pf = io.BytesIO(), io.BytesIO()
    write_chrome_json(tl, js)
    events = load_json(js.getvalue())["traceEvents"]
    assert sorted((e["tid"], e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
                  for e in events if e["ph"] == "X") == expected
    assert sum(e["ph"] == "s" for e in events) == sum(e["ph"] == "f" for e in events) \
        == tl.flow_count
    write_perfetto_trace(tl, pf)
    tracks, slices = decode_slices(read_packets(pf.getvalue()))
    tid = {u: t.thread.tid if t.HasField("thread") else 100 + int(t.name[4:])
           for u, t in tracks.items() if not t.HasField("process")}
    assert sorted((tid[s["track"]], s["name"], s["ts"], s["end"]) for s in slices) == expected
    assert sorted(i for s in slices for i in s["flow_ids"]) == \
        sorted(i for s in slices for i in s["terminating_flow_ids"]) == \
        list(range(1, tl.flow_count + 1))


# ---------------------------------------------------------------- second writer process

def two_processes(monkeypatch, split=None):
    """Make `write_perfetto_trace` fork its second writer even for a small timeline (and
    whatever threads the test session runs); `split`: how many sequences the parent keeps."""
    monkeypatch.setattr(write_proto, "SPLIT_MIN_ROWS", 0)
    monkeypatch.setattr(write_proto, "_may_fork", lambda: True)
    if split is not None:
        monkeypatch.setattr(write_proto, "_split_point", lambda tl, jobs: split)
    forks = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        forks.append(pid)
        return pid

    monkeypatch.setattr(write_proto.os, "fork", fork)
    return forks


def clipping_timeline() -> Timeline:
    """`sample_timeline` plus a last track whose child sticks out of its parent."""
    tl = sample_timeline()
    lane = Track(90009, tl.processes[1], "clipped lane", 9)
    tl.tracks.append(lane)
    tl.blocks.append(block("c", [lane], [(0, BASE, 50, 0), (0, BASE + 20, 100, 1)],
                           ["parent", "child"]))
    return tl


@pytest.mark.parametrize("split", [None, 1, 4])
def test_proto_second_process_writes_the_same_file(tmp_path, monkeypatch, caplog, split):
    one = tmp_path / "one.pftrace"
    size = write_perfetto_trace(clipping_timeline(), one)
    assert "1 slices stuck out" in caplog.text
    caplog.clear()
    forks = two_processes(monkeypatch, split)
    two = tmp_path / "two.pftrace"
    assert write_perfetto_trace(clipping_timeline(), two) == size
    assert len(forks) == 1
    assert two.read_bytes() == one.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["one.pftrace", "two.pftrace"]  # no temp left
    assert "1 slices stuck out" in caplog.text  # counted by the child, logged here


def test_proto_second_process_is_not_used_for_streams_or_small_timelines(monkeypatch):
    forks = two_processes(monkeypatch)
    write_perfetto_trace(sample_timeline(), io.BytesIO())  # a stream: one process
    monkeypatch.setattr(write_proto, "SPLIT_MIN_ROWS", 1000)
    jobs = [(1, None, [])] * 5
    assert write_proto._split_point(sample_timeline(), jobs) == 5
    assert forks == []


def test_proto_no_fork_while_another_thread_runs():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not write_proto._may_fork()
    finally:
        stop.set()
        t.join()


def _in_child(parent: int, action) -> None:
    if os.getpid() != parent:
        action()


@pytest.mark.parametrize("failure", ["exception", "killed", "profile error"])
def test_proto_second_process_failure_leaves_no_file(tmp_path, monkeypatch, failure):
    import signal

    two_processes(monkeypatch, split=1)
    parent = os.getpid()
    real = write_proto.track_slices
    tl = sample_timeline()
    if failure == "profile error":
        tl.blocks[2].start_ns[2] = -5  # on AIV_0, written by the child
    else:
        def broken(*a):
            def fail():
                if failure == "killed":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError("disk on fire")
            _in_child(parent, fail)
            return real(*a)

        monkeypatch.setattr(write_proto, "track_slices", broken)
    (tmp_path / "t.pftrace").write_bytes(b"old")
    expected = {"exception": r"t.pftrace: the second writer process failed: "
                             r"RuntimeError\('disk on fire'\)",
                "killed": "the second writer process failed .killed by signal 9. without a "
                          "report",
                "profile error": "track 'AIV_0': a slice starts before time 0"}[failure]
    with pytest.raises(ProfileWriteError, match=expected):
        write_perfetto_trace(tl, tmp_path / "t.pftrace")
    assert os.listdir(tmp_path) == ["t.pftrace"]
    assert (tmp_path / "t.pftrace").read_bytes() == b"old"


def test_proto_parent_failure_stops_the_second_process(tmp_path, monkeypatch):
    two_processes(monkeypatch, split=1)
    forks = []
    real_enter = write_proto._SecondWriter.__enter__

    def enter(self):
        r = real_enter(self)
        forks.append(self._pid)
        return r

    monkeypatch.setattr(write_proto._SecondWriter, "__enter__", enter)
    parent = os.getpid()
    real = write_proto.track_slices

    def broken(*a):
        if os.getpid() == parent:
            raise RuntimeError("parent broke")
        return real(*a)

    monkeypatch.setattr(write_proto, "track_slices", broken)
    with pytest.raises(RuntimeError, match="parent broke"):
        write_perfetto_trace(sample_timeline(), tmp_path / "t.pftrace")
    assert os.listdir(tmp_path) == []
    with pytest.raises(ChildProcessError):  # reaped
        os.waitpid(forks[0], 0)
