"""The Perfetto UI harness reads back what the real UI imported, and reports broken traces.

Traces are built here by hand (Chrome JSON) or with the perfetto package's protobuf classes,
so these tests check the harness against known content, independent of our exporters.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from perfetto_ui import (
    PerfettoUI,
    PerfettoUIUnavailable,
    QueryError,
    TraceLoadError,
    missing_requirements,
)

HOST_PID, DEVICE_PID = 10, 20


def _chrome_json_events() -> list[dict]:
    """Two processes, three named threads, nested X slices, one flow host -> device."""
    meta = [
        {"ph": "M", "pid": HOST_PID, "tid": 11, "name": "process_name", "args": {"name": "host"}},
        {
            "ph": "M",
            "pid": DEVICE_PID,
            "tid": 21,
            "name": "process_name",
            "args": {"name": "device"},
        },
        {"ph": "M", "pid": HOST_PID, "tid": 11, "name": "thread_name", "args": {"name": "main"}},
        {
            "ph": "M",
            "pid": HOST_PID,
            "tid": 12,
            "name": "thread_name",
            "args": {"name": "codegen-worker"},
        },
        {"ph": "M", "pid": DEVICE_PID, "tid": 21, "name": "thread_name", "args": {"name": "AIC_0"}},
    ]
    slices = [
        {
            "ph": "X",
            "pid": HOST_PID,
            "tid": 11,
            "name": "compile",
            "cat": "compile",
            "ts": 0,
            "dur": 100,
            "args": {"program": "paged_attention"},
        },
        {
            "ph": "X",
            "pid": HOST_PID,
            "tid": 11,
            "name": "passes",
            "cat": "compile",
            "ts": 10,
            "dur": 40,
        },
        {
            "ph": "X",
            "pid": HOST_PID,
            "tid": 11,
            "name": "ConvertToSSA",
            "cat": "pass",
            "ts": 12,
            "dur": 5.5,
        },
        {
            "ph": "X",
            "pid": HOST_PID,
            "tid": 12,
            "name": "kernel_codegen:QK",
            "cat": "compile",
            "ts": 60,
            "dur": 20,
        },
        {
            "ph": "X",
            "pid": DEVICE_PID,
            "tid": 21,
            "name": "QK(t3)",
            "cat": "task",
            "ts": 120,
            "dur": 30,
            "args": {"task_id": "t3", "block_num": 4},
        },
    ]
    flow = [
        # At the start of "compile": UI v52 binds "s" to the innermost slice begun before it
        # that was not yet popped, even one that already ended (see the quirk test below).
        {"ph": "s", "id": 7, "pid": HOST_PID, "tid": 11, "name": "dep", "cat": "flow", "ts": 0},
        {
            "ph": "f",
            "id": 7,
            "bp": "e",
            "pid": DEVICE_PID,
            "tid": 21,
            "name": "dep",
            "cat": "flow",
            "ts": 130,
        },
    ]
    return meta + slices + flow


def _write_json(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    return path


def _write_protobuf_trace(path: Path) -> Path:
    """Process track, thread track, process-scoped custom track; slices, a flow, annotations."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    sequence_id = 1
    trace = pb.Trace()

    def packet() -> pb.TracePacket:
        p = trace.packet.add()
        p.trusted_packet_sequence_id = sequence_id
        return p

    process = packet().track_descriptor
    process.uuid = 1000
    process.process.pid = 42
    process.process.process_name = "device"
    thread = packet().track_descriptor
    thread.uuid = 1001
    thread.parent_uuid = 1000
    thread.thread.pid = 42
    thread.thread.tid = 43
    thread.thread.thread_name = "host-main"
    lane = packet().track_descriptor
    lane.uuid = 1002
    lane.parent_uuid = 1000
    lane.name = "AIC_0"

    def event(ts: int, kind: int, track: int, name: str = "", **fields: object) -> None:
        p = packet()
        p.timestamp = ts
        e = p.track_event
        e.type = kind
        e.track_uuid = track
        if name:
            e.name = name
        e.flow_ids.extend(fields.get("flow_ids", ()))
        e.terminating_flow_ids.extend(fields.get("terminating_flow_ids", ()))
        for key, value in dict(fields.get("annotations", {})).items():
            annotation = e.debug_annotations.add()
            annotation.name = key
            if isinstance(value, int):
                annotation.int_value = value
            else:
                annotation.string_value = str(value)

    begin, end = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
    event(1_000, begin, 1001, "submit", flow_ids=[5], annotations={"task": "t3", "kernel_id": 2})
    event(2_000, end, 1001)
    event(3_000, begin, 1002, "QK(t3)", terminating_flow_ids=[5])
    event(3_500, begin, 1002, "phase")
    event(3_600, end, 1002)
    event(4_000, end, 1002)
    path.write_bytes(trace.SerializeToString())
    return path


@pytest.mark.perfetto_ui
def test_chrome_json_processes_threads_slices_and_flow_read_back(perfetto_ui, tmp_path):
    t = perfetto_ui.load(_write_json(tmp_path / "good.json", _chrome_json_events()))

    assert t.import_errors() == []
    assert t.process_names() == ["device", "host"]
    assert {(p["pid"], p["name"]) for p in t.processes()} >= {
        (HOST_PID, "host"),
        (DEVICE_PID, "device"),
    }
    assert t.thread_names() == ["AIC_0", "codegen-worker", "main"]
    assert t.slice_count() == 5
    assert t.flow_count() == 1
    assert [(f["name_out"], f["name_in"]) for f in t.flows()] == [("compile", "QK(t3)")]

    by_name = {s["name"]: s for s in t.slices()}
    assert by_name["compile"]["depth"] == 0
    assert by_name["passes"]["depth"] == 1
    assert by_name["passes"]["parent_id"] == by_name["compile"]["id"]
    assert by_name["ConvertToSSA"]["depth"] == 2
    # Microseconds in, nanoseconds out; the fractional microsecond survives.
    assert (by_name["ConvertToSSA"]["ts"], by_name["ConvertToSSA"]["dur"]) == (12_000, 5_500)
    assert by_name["compile"]["category"] == "compile"
    assert (
        by_name["kernel_codegen:QK"]["thread_name"],
        by_name["kernel_codegen:QK"]["process_name"],
    ) == ("codegen-worker", "host")
    assert (by_name["QK(t3)"]["pid"], by_name["QK(t3)"]["tid"]) == (DEVICE_PID, 21)

    device = t.slices("process_name = 'device'")
    assert [s["name"] for s in device] == ["QK(t3)"]
    assert t.slice_args("QK(t3)") == {"args.task_id": "t3", "args.block_num": 4}
    assert t.slice_args("passes") == {}
    assert t.metadata()["trace_type"] == "json"


@pytest.mark.perfetto_ui
def test_protobuf_thread_and_process_scoped_tracks_read_back(perfetto_ui, tmp_path):
    t = perfetto_ui.load(_write_protobuf_trace(tmp_path / "good.pftrace"))

    assert t.import_errors() == []
    assert "device" in t.process_names()
    assert {(p["pid"], p["name"]) for p in t.processes()} >= {(42, "device")}
    assert {(th["tid"], th["name"], th["pid"]) for th in t.threads()} >= {(43, "host-main", 42)}
    assert t.slice_count() == 3
    assert [(f["name_out"], f["name_in"]) for f in t.flows()] == [("submit", "QK(t3)")]

    rows = [
        (
            s["name"],
            s["ts"],
            s["dur"],
            s["depth"],
            s["track_name"],
            s["process_name"],
            s["thread_name"],
        )
        for s in t.slices()
    ]
    assert rows == [
        ("submit", 1_000, 1_000, 0, None, "device", "host-main"),
        ("QK(t3)", 3_000, 1_000, 0, "AIC_0", "device", None),
        ("phase", 3_500, 100, 1, "AIC_0", "device", None),
    ]
    assert t.slice_args("submit") == {"debug.task": "t3", "debug.kernel_id": 2}
    lanes = [tr for tr in t.tracks() if tr["name"] == "AIC_0"]
    assert len(lanes) == 1 and lanes[0]["upid"] is not None and lanes[0]["utid"] is None
    assert t.metadata()["trace_type"] == "proto"


@pytest.mark.perfetto_ui
def test_badly_nested_json_slices_show_up_as_import_errors(perfetto_ui, tmp_path):
    events = [
        {"ph": "X", "pid": 1, "tid": 1, "name": "parent", "ts": 0, "dur": 100},
        # Starts inside "parent" but ends after it: not nested, Perfetto drops it.
        {"ph": "X", "pid": 1, "tid": 1, "name": "sticks_out", "ts": 50, "dur": 100},
    ]
    t = perfetto_ui.load(_write_json(tmp_path / "overlap.json", events))

    errors = t.import_errors()
    assert [e["name"] for e in errors] == ["slice_drop_overlapping_complete_event"]
    assert errors[0]["value"] == 1
    assert [s["name"] for s in t.slices()] == ["parent"]


@pytest.mark.perfetto_ui
def test_truncated_json_fails_to_load_with_the_ui_message(perfetto_ui, tmp_path):
    text = json.dumps({"traceEvents": _chrome_json_events()})
    path = tmp_path / "truncated.json"
    path.write_text(text[: len(text) // 2])

    with pytest.raises(TraceLoadError, match="JSON trace file is incomplete") as failure:
        perfetto_ui.load(path)
    assert str(path) in str(failure.value)


@pytest.mark.perfetto_ui
def test_file_that_is_no_trace_fails_to_load(perfetto_ui, tmp_path):
    path = tmp_path / "noise.pftrace"
    path.write_bytes(bytes(range(256)) * 4)

    with pytest.raises(TraceLoadError, match="could not open the trace"):
        perfetto_ui.load(path)


@pytest.mark.perfetto_ui
def test_file_names_with_url_special_characters_load(perfetto_ui, tmp_path):
    path = _write_json(tmp_path / "a&b #1%?.json", _chrome_json_events())
    with perfetto_ui.load(path) as t:
        assert t.slice_count() == 5


@pytest.mark.perfetto_ui
def test_missing_file_fails_before_the_browser_is_asked(perfetto_ui, tmp_path):
    with pytest.raises(TraceLoadError, match="no such file"):
        perfetto_ui.load(tmp_path / "absent.json")


@pytest.mark.perfetto_ui
def test_queries_keep_exact_values_and_report_sql_errors(perfetto_ui, tmp_path):
    with perfetto_ui.load(_write_json(tmp_path / "one.json", _chrome_json_events()[:6])) as t:
        sql = "select 9007199254740993 as big, x'0102' as blob, null as missing, 1e999 as inf"
        assert t.query(sql) == [
            {"big": 9007199254740993, "blob": b"\x01\x02", "missing": None, "inf": float("inf")}
        ]
        with pytest.raises(QueryError, match="no_such_table"):
            t.query("select * from no_such_table")
    with pytest.raises(QueryError, match="no longer open"):
        t.slice_count()


def test_missing_chromium_is_reported_not_hidden(monkeypatch):
    import perfetto_ui as harness

    monkeypatch.setattr(harness, "CHROMIUM_PATH", "/nonexistent/chromium")
    assert "/nonexistent/chromium" in (missing_requirements() or "")
    with pytest.raises(PerfettoUIUnavailable, match="/nonexistent/chromium"):
        PerfettoUI().start()


@pytest.mark.perfetto_ui
def test_json_flow_start_binds_to_stale_innermost_slice_but_bind_id_is_exact(perfetto_ui, tmp_path):
    """A UI v52 quirk exporters must know: an "s" event inside a parent, after a child ended,
    binds to the ended child; flow v2 (`bind_id` + `flow_out`/`flow_in` on X events) is exact."""
    slices = [
        {"ph": "X", "pid": 1, "tid": 1, "name": "parent", "ts": 0, "dur": 100},
        {"ph": "X", "pid": 1, "tid": 1, "name": "child", "ts": 10, "dur": 5},
        {"ph": "X", "pid": 2, "tid": 2, "name": "target", "ts": 120, "dur": 30},
    ]
    v1 = [
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "name": "dep", "ts": 95},
        {"ph": "f", "id": 1, "bp": "e", "pid": 2, "tid": 2, "name": "dep", "ts": 130},
    ]
    with perfetto_ui.load(_write_json(tmp_path / "v1.json", slices + v1)) as t:
        assert [(f["name_out"], f["name_in"]) for f in t.flows()] == [("child", "target")]

    v2 = [dict(e) for e in slices]
    v2[0].update(bind_id=1, flow_out=True)
    v2[2].update(bind_id=1, flow_in=True)
    with perfetto_ui.load(_write_json(tmp_path / "v2.json", v2)) as t:
        assert [(f["name_out"], f["name_in"]) for f in t.flows()] == [("parent", "target")]
        assert t.import_errors() == []


@pytest.mark.perfetto_ui
def test_loading_beyond_max_open_closes_the_oldest_trace_with_a_reason(
    perfetto_ui, tmp_path, monkeypatch
):
    monkeypatch.setattr(perfetto_ui, "max_open", 1)
    path = _write_json(tmp_path / "small.json", _chrome_json_events())
    first = perfetto_ui.load(path)
    with perfetto_ui.load(path) as second:
        assert second.slice_count() == 5
        with pytest.raises(QueryError, match="more than 1 traces were open"):
            first.slice_count()
