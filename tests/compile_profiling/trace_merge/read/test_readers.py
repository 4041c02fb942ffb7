"""The trace_merge readers of Simpler's files: every real capture read and checked against
independent plain reads (orjson) of the same files, the distributed layout, and bad input
(one case per rule) with the exact `<path>: <problem>` line."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling.foundation.input_files import read_input_bytes
from pypto.compile_profiling.trace_merge.lay_out.lanes import sublanes
from pypto.compile_profiling.trace_merge.place.clock_alignment import build_clock_mapping
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read.json_pieces import SEP_OBJECTS, SEP_ROWS, JsonPieces
from pypto.compile_profiling.trace_merge.read.read_run_log import (
    read_host_phase_records,
    read_run_log,
)
from pypto.errors import TraceInputError

BGEMM = FIXTURES / "tmr_bgemm_case0_l4_depgen"
HBG = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"


def _load(path):
    return orjson.loads(path.read_bytes())


def _error(fn, path) -> str:
    with pytest.raises(TraceInputError) as info:
        fn(path)
    assert info.value.path == str(path)
    return info.value.problem


# --------------------------------------------------------------------------- real captures

@pytest.mark.parametrize("case", CASES)
def test_real_capture_matches_plain_reads(case):
    leaf = FIXTURES / case
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in leaf.iterdir()}
    (files,) = rs.discover_captures(leaf)
    cap = rs.read_capture(files)
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in leaf.iterdir()} == before
    raw = _load(leaf / "chip_swimlane_records.json")
    rec = cap.records
    meta = raw["metadata"]
    assert (rec.level, rec.freq_hz, rec.core_types) == (
        raw["chip_swimlane_level"], meta["clock_freq_hz"], meta["core_types"])
    assert rec.metadata == meta
    assert rec.num_cores == meta["num_cores"]
    assert rec.core_to_thread == meta.get("core_to_thread")

    rows = np.array(raw["aicore_tasks"], dtype=np.int64).reshape(-1, 6)
    assert rec.aicore_columns == 6
    for j, key in enumerate(("core_id", "task_id", "reg_task_id", "start_cycles",
                             "end_cycles", "receive_to_start_cycles")):
        assert rec.aicore[key].dtype == np.int64
        assert rec.aicore[key].tolist() == rows[:, j].tolist()
    cpu = np.array(raw["aicpu_tasks"], dtype=np.int64).reshape(-1, 4)
    for j, key in enumerate(("core_id", "reg_task_id", "dispatch_cycles", "finish_cycles")):
        assert rec.aicpu[key].tolist() == cpu[:, j].tolist()

    for stream, got in (("aicpu_scheduler_phases", rec.scheduler),
                        ("aicpu_orchestrator_phases", rec.orchestrator),
                        ("host_orchestrator_phases", rec.host_orchestrator)):
        threads = raw.get(stream, [])
        assert len(got) == len(threads)
        for t, (phases, cols) in enumerate(zip(threads, got)):
            assert cols.thread == t and len(cols) == len(phases)
            _assert_phases(phases, cols, "start_host_ns" if "host" in stream else "start_cycles")
    uploads = raw.get("host_device_uploads")
    assert len(rec.host_uploads) == (1 if uploads is not None else 0)
    if uploads is not None:
        _assert_phases(uploads, rec.host_uploads[0], "start_host_ns")
        assert rec.host_uploads[0].clock == "host_ns"

    anchors = meta.get("clock_anchors")
    if anchors is None:
        assert rec.clock_anchors is None
    else:
        assert rec.orchestrator_source == "host"
        assert rec.host_orchestration_origin_ns == meta["host_orchestration_origin_ns"]
        assert [s.host_before_ns for s in rec.clock_anchors.samples] == \
            [s["host_before_ns"] for s in anchors["samples"]]
        # the same mapping as from the file's own dict
        assert build_clock_mapping(rec.clock_anchors, rec.freq_hz) == \
            build_clock_mapping(anchors, meta["clock_freq_hz"])

    if (leaf / "deps.json").exists():
        _assert_deps(_load(leaf / "deps.json"), cap.deps)
    else:
        assert cap.deps is None
    maps = sorted(leaf.glob("name_map_*.json"))
    if maps:
        nm = _load(maps[0])
        assert cap.name_map.names == {int(k): v for k, v in nm["callable_id_to_name"].items()}
        assert cap.name_map.orchestrator_name == nm["orchestrator_name"]
    else:
        assert cap.name_map is None
    _assert_run_log(leaf / "host_log.txt", cap.run_log)
    _assert_converted(_load(leaf / "merged_swimlane.json"), cap.converted)
    if (leaf / "host_phase_records.jsonl").exists():
        lines = [orjson.loads(ln) for ln in (leaf / "host_phase_records.jsonl").read_bytes()
                 .splitlines() if ln.strip()]
        assert [b.pid for b in cap.host_phases] == [ln["pid"] for ln in lines]
        assert cap.host_phases[0].phase == [r["phase"] for r in lines[0]["records"]]
        assert cap.host_phases[0].start_ns.tolist() == [r["start_ns"] for r in lines[0]["records"]]


def _assert_phases(phases: list, cols: rs.PhaseColumns, start_key: str):
    end_key = start_key.replace("start", "end")
    assert cols.start.tolist() == [p[start_key] for p in phases]
    assert cols.end.tolist() == [p[end_key] for p in phases]
    names = [cols.kinds[k] for k in cols.kind.tolist()]
    kind_key = "kind" if "kind" in (phases[0] if phases else {}) else \
        "phase" if phases and "phase" in phases[0] else None
    assert names == ([p[kind_key] for p in phases] if kind_key else ["submit"] * len(phases))
    keys = {k for p in phases for k in p} - {start_key, end_key, kind_key}
    assert {a.key for a in cols.args} == keys
    for a in cols.args:
        values = a.values.tolist() if isinstance(a.values, np.ndarray) else a.values
        present = [True] * len(phases) if a.present is None else a.present.tolist()
        assert [v for v, ok in zip(values, present) if ok] == \
            [p[a.key] for p in phases if a.key in p]
        assert present == [a.key in p for p in phases]


def _assert_deps(raw: dict, deps: rs.DepsGraph):
    tasks = raw["tasks"]
    assert deps.task_id.tolist() == [int(t["task_id"]) for t in tasks]
    assert deps.kernel_ids.tolist() == [t["kernel_ids"] for t in tasks]
    assert deps.block_num.tolist() == [max(1, t["block_num"]) for t in tasks]
    pairs = list(dict.fromkeys((int(e["pred"]), int(e["succ"])) for e in raw["edges"]))
    assert list(zip(deps.pred.tolist(), deps.succ.tolist())) == pairs


def _assert_run_log(path, log):
    text = path.read_text()
    strace = [ln[ln.index("[STRACE] ") + 9:].split() for ln in text.splitlines()
              if "[STRACE] " in ln]
    anchors = [ln for ln in text.splitlines() if "[CLOCK_ANCHOR] " in ln]
    assert len(log.spans) == len(strace) and len(log.clock_anchors) == len(anchors)
    for fields, span in ((strace[0], log.spans[0]), (strace[-1], log.spans[-1])):
        f = dict(x.split("=", 1) for x in fields)
        assert (span.name, span.ts_ns, span.dur_ns, span.pid, span.tid) == (
            f["name"], int(f["ts"]), int(f["dur"]), int(f["pid"]), int(f["tid"]))
        assert span.device_clock == (f.get("clk") == "dev")
    assert sum(s.device_clock for s in log.spans) == text.count(" clk=dev")
    a = dict(x.split("=", 1) for x in anchors[0].split("[CLOCK_ANCHOR] ")[1].split())
    assert (log.clock_anchors[0].pid, log.clock_anchors[0].mono_ns,
            log.clock_anchors[0].wall_ns) == (int(a["pid"]), int(a["mono_ns"]), int(a["wall_ns"]))


def _assert_converted(raw: dict, converted: list):
    (conv,) = converted
    events = raw["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert sorted((s.pid, s.tid, s.name, s.start_ns, s.end_ns) for s in conv.slices) == sorted(
        (e["pid"], e["tid"], e["name"], round(e["ts"] * 1000),
         round((e["ts"] + e["dur"]) * 1000)) for e in xs)
    assert conv.metadata == raw.get("metadata")
    assert conv.process_names == {e["pid"]: e["args"]["name"] for e in events
                                  if e["ph"] == "M" and e["name"] == "process_name"}
    flow_ids = {(e["id"], e["cat"], e["name"]) for e in events if e["ph"] in "sf"}
    assert len(conv.flows) + conv.unbound_flows == len(flow_ids)
    assert conv.unbound_flows == 0
    for f in conv.flows[:50]:      # a flow starts where its source slice is
        assert conv.slices[f.src].start_ns <= conv.slices[f.dst].end_ns
    cs = [e for e in events if e["ph"] == "C"]
    assert sum(len(c.ts_ns) for c in conv.counters) == sum(len(e["args"]) for e in cs)
    assert (conv.start_ns, conv.end_ns) == (
        min(s.start_ns for s in conv.slices), max(s.end_ns for s in conv.slices))


def test_converted_trace_touching_slices_still_touch(tmp_path):
    """Issue 8 placement item 5: float µs put touching slices into overlap lanes; times are
    integer ns from the reader on."""
    p = tmp_path / "merged_swimlane.json"
    events = [{"ph": "X", "name": "a", "pid": 4, "tid": 1, "ts": 0.1, "dur": 0.2},
              {"ph": "X", "name": "b", "pid": 4, "tid": 1, "ts": 0.3, "dur": 0.7},
              {"ph": "X", "name": "c", "pid": 4, "tid": 2, "ts": 37081215.598, "dur": 0.001}]
    assert 0.1 + 0.2 > 0.3                   # in float µs, a overlaps b
    p.write_bytes(orjson.dumps({"traceEvents": events}))
    a, b, c = rs.read_converted_trace(p).slices
    assert a.end_ns == b.start_ns == 300 and b.end_ns == 1000
    assert (c.start_ns, c.end_ns) == (37081215598, 37081215599)


def test_converted_bgemm_needs_no_overlap_lanes():
    """72 touching slices of this capture went to overlap lanes with float µs; none now."""
    conv = rs.read_converted_trace(BGEMM / "merged_swimlane.json")
    tracks: dict = {}
    for s in conv.slices:
        tracks.setdefault((s.pid, s.tid), []).append((s.start_ns, s.end_ns))
    moved = sum(int(sublanes(np.array([a for a, _ in v]), np.array([b for _, b in v]),
                             allow_nesting=True).any()) for v in tracks.values())
    assert moved == 0


def test_converted_flows_bound_and_counters(tmp_path):
    p = tmp_path / "merged_swimlane.json"
    events = [
        {"ph": "M", "name": "thread_name", "pid": 4, "tid": 1, "args": {"name": "AIC_0"}},
        {"ph": "X", "name": "a", "pid": 4, "tid": 1, "ts": 1, "dur": 2, "id": 7},
        {"ph": "X", "name": "b", "pid": 4, "tid": 2, "ts": 5, "dur": 2},
        {"ph": "s", "name": "dep", "cat": "flow", "id": 1, "pid": 4, "tid": 1, "ts": 2,
         "bind_id": 7},
        {"ph": "f", "name": "dep", "cat": "flow", "id": 1, "pid": 4, "tid": 2, "ts": 6, "bp": "e"},
        {"ph": "s", "name": "dep", "cat": "flow", "id": 2, "pid": 4, "tid": 1, "ts": 2},
        {"ph": "C", "name": "q", "pid": 2, "tid": 9, "ts": 3, "args": {"AIC": 4, "AIV": 1.5}},
        {"ph": "C", "name": "q", "pid": 2, "tid": 9, "ts": 1, "args": {"AIC": 2, "AIV": 0}},
        {"ph": "i", "name": "instant", "pid": 4, "tid": 1, "ts": 1},
    ]
    p.write_bytes(orjson.dumps({"traceEvents": events}))
    conv = rs.read_converted_trace(p)
    (flow,) = conv.flows
    assert (conv.slices[flow.src].name, conv.slices[flow.dst].name, flow.name) == ("a", "b", "dep")
    assert conv.unbound_flows == 1 and conv.ignored_events == 1
    assert conv.thread_names == {(4, 1): "AIC_0"}
    aic, aiv = conv.counters
    assert (aic.name, aic.ts_ns.tolist(), aic.values.tolist()) == ("q AIC", [1000, 3000], [2, 4])
    assert aic.values.dtype == np.int64 and aiv.values.dtype == np.float64
    assert aiv.values.tolist() == [0.0, 1.5]


def test_level_gating_and_five_column_rows(tmp_path):
    raw = _load(BGEMM / "chip_swimlane_records.json")
    raw["chip_swimlane_level"] = 2
    raw["aicore_tasks"] = [r[:5] for r in raw["aicore_tasks"]]
    del raw["chip_swimlane_level"]
    raw = {"l2_swimlane_level": 2, **raw}
    p = tmp_path / "l2_swimlane_records.json"
    p.write_bytes(orjson.dumps(raw))
    rec = rs.read_records(p)
    assert (rec.level, rec.level_key, rec.aicore_columns) == (2, "l2_swimlane_level", 5)
    assert rec.aicore["receive_to_start_cycles"].tolist() == [0] * 1000
    assert len(rec.aicpu["core_id"]) == 1000
    assert rec.scheduler == [] and rec.orchestrator == []
    assert rec.ignored_streams == ["aicpu_scheduler_phases", "aicpu_orchestrator_phases"]


def test_unknown_record_fields_are_kept(tmp_path):
    raw = _load(BGEMM / "chip_swimlane_records.json")
    raw["aicpu_scheduler_phases"][1][5]["zz_new"] = "hi"
    raw["aicpu_scheduler_phases"][1][7]["zz_new"] = 3
    p = tmp_path / "chip_swimlane_records.json"
    p.write_bytes(orjson.dumps(raw))
    col = rs.read_records(p).scheduler[1].arg("zz_new")
    assert col.present.nonzero()[0].tolist() == [5, 7]
    assert (col.values[5], col.values[7]) == ("hi", 3)


@pytest.mark.parametrize("piece_bytes", [64, 1000, 1 << 20])
def test_pieces_cut_anywhere_give_the_whole_arrays(piece_bytes):
    """Cuts at every few elements, inside nested `args` objects of deps.json too."""
    import msgspec

    for path, key, sep in ((BGEMM / "chip_swimlane_records.json", "aicore_tasks", SEP_ROWS),
                           (BGEMM / "deps.json", "tasks", SEP_OBJECTS)):
        with open(path, "rb") as f:
            jp = JsonPieces(f, path, block_bytes=333)
            got = []
            for k in jp.members("test"):
                if k == key:
                    for base, items in jp.array(f"$.{k}", msgspec.json.Decoder(list), sep,
                                                piece_bytes):
                        assert base == len(got)
                        got.extend(items)
                else:
                    jp.skip(f"$.{k}")
        assert got == _load(path)[key]


# --------------------------------------------------------------------------- layouts

def _leaf(dst, src=BGEMM, program=None):
    dst.mkdir(parents=True)
    for name in ("chip_swimlane_records.json", "deps.json", "host_log.txt"):
        shutil.copy(src / name, dst / name)
    if program:
        (dst / "dispatch_program.json").write_text(orjson.dumps({"program": program}).decode())


def test_distributed_layout(tmp_path):
    out = tmp_path / "work" / "dfx_outputs"
    _leaf(out / "rank1" / "d0", program="gemm")
    _leaf(out / "rank0" / "d1", HBG, program="add")
    _leaf(out / "rank0" / "d0", program="gemm")
    (out / "rank0" / "d0" / "pmu.csv").write_text("x\n")
    (out / "rank0" / "d0" / "args_dump").mkdir()
    found = rs.discover_captures(tmp_path / "work")
    assert [f.label for f in found] == ["r0d0", "r0d1", "r1d0"]
    assert [os.path.basename(p) for p in found[0].listed_only] == ["args_dump", "pmu.csv"]
    caps = [rs.read_capture(f) for f in found]
    assert [c.dispatch_program.program for c in caps] == ["gemm", "add", "gemm"]
    assert caps[1].records.orchestrator_source == "host"
    assert len(caps[2].deps.task_id) == 1000


def test_converted_traces_left_unread_on_request():
    (files,) = rs.discover_captures(FIXTURES / "tmr_vector_example_l1")
    assert [os.path.basename(p) for p in files.converted] == ["merged_swimlane.json"]
    assert len(rs.read_capture(files).converted) == 1
    cap = rs.read_capture(files, converted=False)
    assert cap.converted == [] and cap.records is not None and cap.run_log is not None


def test_discovery_of_a_flat_work_dir(tmp_path):
    _leaf(tmp_path / "w" / "dfx_outputs")
    (found,) = rs.discover_captures(tmp_path / "w")
    assert found.directory == str(tmp_path / "w" / "dfx_outputs") and found.rank is None
    assert found.label == "dfx_outputs"
    assert _error(rs.discover_captures, tmp_path / "nothing") == (
        "cannot read: no such file or directory")
    (tmp_path / "empty").mkdir()
    assert _error(rs.discover_captures, tmp_path / "empty").startswith(
        "no Simpler capture files found")


# --------------------------------------------------------------------------- bad input

def _outcome(p) -> str:
    """"refused: <problem>" (the file), or "skipped: <reason>" (one bad record, skipped
    alone: the reason of the first, as the one warning quotes it)."""
    try:
        rec = rs.read_records(p)
    except TraceInputError as e:
        assert e.path == str(p)
        return f"refused: {e.problem}"
    (line,) = [w for w in rec.warnings if "bad record(s) skipped, each alone" in w]
    assert line.startswith(f"{p}: 1 bad record(s) skipped")
    return "skipped: " + line.split("(the first: ", 1)[1][:-1]


def _records_with(tmp_path, change) -> str:
    raw = _load(BGEMM / "chip_swimlane_records.json")
    change(raw)
    p = tmp_path / "chip_swimlane_records.json"
    p.write_bytes(orjson.dumps(raw))
    return _outcome(p)


@pytest.mark.parametrize("change, problem", [
    (lambda r: r["aicore_tasks"][1].__setitem__(3, -5),
     "skipped: $.aicore_tasks[1][3]: expected int >= 0, got -5"),
    (lambda r: r["aicore_tasks"][1].__setitem__(4, 1e308),
     "skipped: $.aicore_tasks[1][4]: expected int, got float"),
    (lambda r: r["aicore_tasks"][999].__setitem__(1, 1 << 63),
     ("skipped: $.aicore_tasks[999][1]: expected int <= 9223372036854775807, got "
      "9223372036854775808")),
    (lambda r: r["aicore_tasks"][3].extend([1, 2]),
     "skipped: $.aicore_tasks[3]: 8 columns, expected 5, 6 or 7"),
    (lambda r: r["aicore_tasks"][3].append(1),
     "skipped: $.aicore_tasks[3]: 7 columns, expected 6, like the rows before it"),
    (lambda r: r["aicore_tasks"][3].pop(),
     "skipped: $.aicore_tasks[3]: 5 columns, expected 6, like the rows before it"),
    (lambda r: r["aicore_tasks"][9].__setitem__(4, 5),
     ("skipped: $.aicore_tasks[9]: end_cycles 5 is before start_cycles 37108535234 "
      "(negative duration)")),
    (lambda r: r["aicore_tasks"][9].__setitem__(0, 99),
     "skipped: $.aicore_tasks[9][0]: core_id 99 is not in metadata.core_types (24 cores)"),
    (lambda r: r["metadata"].__setitem__("clock_freq_hz", 0),
     "refused: $.metadata.clock_freq_hz: expected int >= 1, got 0"),
    (lambda r: r["metadata"].pop("clock_freq_hz"),
     "refused: $.metadata: object missing required field clock_freq_hz"),
    (lambda r: r["aicpu_scheduler_phases"][0][3].__setitem__("tasks_processed", {"a": 1}),
     "skipped: $.aicpu_scheduler_phases[0][3].tasks_processed: expected int, got object"),
    (lambda r: r["aicpu_scheduler_phases"][2][600].__setitem__("tasks_processed", [1]),
     "skipped: $.aicpu_scheduler_phases[2][600].tasks_processed: expected int, got array"),
    (lambda r: r["aicpu_scheduler_phases"][1][5].__setitem__("end_cycles", 3),
     ("skipped: $.aicpu_scheduler_phases[1][5]: end_cycles 3 is before start_cycles "
      "37083606372 (negative duration)")),
    (lambda r: r.__setitem__("chip_swimlane_level", 7),
     "refused: $.chip_swimlane_level: invalid enum value 7"),
    (lambda r: r.pop("chip_swimlane_level"),
     ("refused: missing 'chip_swimlane_level' (or the older 'l2_swimlane_level'): not a "
      "Simpler swimlane records file")),
    (lambda r: r["metadata"].__setitem__("clock_anchors", {"schema_version": 2, "samples": []}),
     "refused: $.metadata.clock_anchors.schema_version: invalid enum value 2"),
])
def test_bad_records(tmp_path, change, problem):
    assert _records_with(tmp_path, change) == problem


def test_bad_bytes(tmp_path):
    p = tmp_path / "chip_swimlane_records.json"
    good = (BGEMM / "chip_swimlane_records.json").read_bytes()
    for data, problem in [
        (b"", "file is empty, expected JSON"),
        (good[:300_000], "truncated JSON (file ends before the document is complete)"),
        (b"\x18\x99garbage", ("expected a JSON object at the top level (a Simpler swimlane "
                             "records file), found byte 0x18 (not JSON)")),
        (good + b" x", "invalid JSON at byte 658580: data after the end of the document"),
    ]:
        p.write_bytes(data)
        assert _error(rs.read_records, p) == problem
    # NaN is no JSON number: Python's json reads it as a float, one record's bad value
    p.write_bytes(good.replace(b'"start_cycles": 37082208422', b'"start_cycles": NaN', 1))
    assert _outcome(p) == ("skipped: $.aicpu_scheduler_phases[0][0].start_cycles: expected "
                           "int, got float")


def test_sparse_2gb_file_rejected_at_once(tmp_path):
    p = tmp_path / "chip_swimlane_records.json"
    with open(p, "wb") as f:
        f.truncate(2 << 30)
    t = time.process_time()
    assert _error(rs.read_records, p) == ("expected a JSON object at the top level (a Simpler "
                                          "swimlane records file), found byte 0x00 (not JSON)")
    assert time.process_time() - t < 1.0     # one block read, not 2 GB


def test_special_files_refused_before_opening(tmp_path):
    fifo = tmp_path / "chip_swimlane_records.json"
    os.mkfifo(fifo)       # open() would block forever without a writer
    fifo_problem = "is a FIFO (named pipe), expected a regular file or a directory"
    assert _error(rs.read_records, fifo) == fifo_problem
    assert _error(read_run_log, fifo) == fifo_problem
    dev = tmp_path / "deps.json"
    dev.symlink_to("/dev/zero")
    assert _error(rs.read_deps, dev) == ("is a character device, expected a regular file or "
                                         "a directory")
    loop = tmp_path / "name_map_x.json"
    loop.symlink_to(loop.name)
    assert _error(rs.read_name_map, loop) == ("cannot read: symlink loop (too many levels of "
                                              "symbolic links)")
    assert _error(read_input_bytes, tmp_path) == "is a directory, expected a file"
    assert _error(rs.discover_captures, fifo) == "is a FIFO (named pipe), expected a directory"


def test_size_limit(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b"{}" * 10)
    assert _error(lambda q: read_input_bytes(q, max_bytes=8), p) == \
        "is 20 bytes, more than this kind of file may have (8 bytes): cannot read it"


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody: needs root")
def test_unreadable_file_and_dir_as_another_user():
    """Root reads everything, so the readers run in a forked child that became `nobody`
    (in a directory `nobody` may traverse: pytest's tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as top:
        os.chmod(top, 0o755)
        _unreadable_as_nobody(Path(top))


def _unreadable_as_nobody(top: Path) -> None:
    d = top / "cap"
    _leaf(d)
    os.chmod(d / "deps.json", 0)
    locked = top / "locked"
    locked.mkdir(mode=0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                     # child: no exec, the readers are already imported
        try:
            os.setgid(65534)
            os.setuid(65534)
            lines = []
            for fn, p in ((rs.read_deps, d / "deps.json"), (rs.discover_captures, locked)):
                try:
                    fn(p)
                    lines.append("read")
                except TraceInputError as exc:
                    lines.append(str(exc))
            os.write(w, "\n".join(lines).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    assert out.splitlines() == [f"{d / 'deps.json'}: cannot read: permission denied",
                                f"{locked}: cannot list directory: permission denied"]


def _nested(depth: int) -> list:
    v: list = [1]
    for _ in range(depth):
        v = [v]
    return v


def _deps_with(tmp_path, change, copies=5) -> str:
    raw = _load(BGEMM / "deps.json")
    raw["tasks"] = orjson.loads(orjson.dumps(raw["tasks"] * copies))   # > 2 MB: several pieces
    change(raw)
    p = tmp_path / "deps.json"
    p.write_bytes(orjson.dumps(raw))
    assert p.stat().st_size > 2 << 20
    return _error(rs.read_deps, p)


@pytest.mark.parametrize("change, problem", [
    (lambda d: d["tasks"][3017]["kernel_ids"].__setitem__(2, "x"),
     "$.tasks[3017].kernel_ids[2]: expected int, got str"),
    (lambda d: d["tasks"][3500].__setitem__("task_id", "\u00b2"),
     "$.tasks[3500].task_id: expected int, got str"),
    (lambda d: d["tasks"][2].__setitem__("task_id", str(1 << 64)),
     "$.tasks[2].task_id: expected int <= 9223372036854775807, got '18446744073709551616'"),
    (lambda d: d["tasks"][2]["kernel_ids"].append(0),
     "$.tasks[2].kernel_ids: expected array of length <= 3"),
    (lambda d: d["edges"][700].__setitem__("succ", -3),
     "$.edges[700].succ: expected int >= 0, got -3"),
    (lambda d: d.pop("edges"), "$: missing 'edges' (not a Simpler deps.json)"),
    (lambda d: d["tasks"][5]["args"].append({"deep": _nested(50)}), None),
])
def test_bad_deps(tmp_path, change, problem):
    if problem is None:     # deep but legal nesting in skipped args: fine
        raw = _load(BGEMM / "deps.json")
        change(raw)
        p = tmp_path / "deps.json"
        p.write_bytes(orjson.dumps(raw))
        assert len(rs.read_deps(p).task_id) == 1000
        return
    assert _deps_with(tmp_path, change) == problem


def test_deep_nesting_is_an_error_not_a_crash(tmp_path):
    p = tmp_path / "deps.json"
    deep = b"[" * 100_000 + b"]" * 100_000
    p.write_bytes(b'{"tasks":[{"task_id":"1","args":' + deep + b'}],"edges":[]}')
    assert _error(rs.read_deps, p) == ("$.tasks[0] or after: JSON nested too deeply (over "
                                       "about 1,000 levels)")
    p2 = tmp_path / "name_map_x.json"
    p2.write_bytes(b'{"callable_id_to_name":{},"level":' + deep + b"}")
    assert _error(rs.read_name_map, p2).startswith("JSON nested too deeply (over about 1,000 "
                                                   "levels) at byte ")


def test_name_map_keys_and_unsafe_names(tmp_path):
    p = tmp_path / "name_map_x.json"
    p.write_text('{"callable_id_to_name": {"\u00b2": "A"}}')
    assert _error(rs.read_name_map, p) == "$.callable_id_to_name: key '\u00b2' is not an integer id"
    p.write_text('{"callable_id_to_name": {"1": 5}}')
    assert _error(rs.read_name_map, p) == "$.callable_id_to_name[...]: expected str, got int"
    p.write_bytes(b'{"callable_id_to_name": {"0": "Q\\ud800K", "1": "a\\u0001b", "-1": "x"},'
                  b' "orchestrator_name": "o\\udc00"}')
    nm = rs.read_name_map(p)
    assert nm.names == {0: "Q\\ud800K", 1: "a\x01b", -1: "x"}   # visible escapes
    assert nm.orchestrator_name == "o\\udc00"
    "".join(nm.names.values()).encode("utf-8")       # strict UTF-8 from here on


def test_lone_surrogates_anywhere_become_safe(tmp_path):
    """msgspec refuses them, Python's json reads them: any string read is valid UTF-8, the
    surrogate written as its visible escape (the one rule, `safe_json.clean_text`)."""
    raw = (BGEMM / "chip_swimlane_records.json").read_bytes().replace(
        b'"kind": "dispatch"', b'"kind": "dis\\ud800patch"', 1)
    p = tmp_path / "chip_swimlane_records.json"
    p.write_bytes(raw)
    kinds = rs.read_records(p).scheduler[0].kinds
    assert "dis\\ud800patch" in kinds and "dispatch" in kinds
    c = tmp_path / "merged_swimlane.json"
    c.write_bytes(b'{"traceEvents":[{"ph":"X","ts":1,"dur":1,"name":"a\\ud800",'
                  b'"args":{"k\\udc00":["v\\udc00", {"x": "\\ud83d"}]}}]}')
    (s,) = rs.read_converted_trace(c).slices
    assert (s.name, s.args) == ("a\\ud800", {"k\\udc00": ["v\\udc00", {"x": "\\ud83d"}]})


def test_bad_dispatch_program_and_converted(tmp_path):
    p = tmp_path / "dispatch_program.json"
    p.write_text('{"program": ""}')
    assert _error(rs.read_dispatch_program, p) == "$.program: expected str of length >= 1, got ''"
    c = tmp_path / "merged_swimlane.json"
    for events, problem in [
        ([{"ph": "X", "ts": 1e308, "dur": 1}],
         "$.traceEvents[0].ts: expected float <= 1000000000000000.0, got 1e+308"),
        ([{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2, "dur": -1}],
         "$.traceEvents[1].dur: expected float >= 0.0, got -1"),
        ([{"ph": "X"}], "$.traceEvents[0]: missing 'ts'"),
        ([{"ph": "X", "ts": 1, "pid": "a"}], "$.traceEvents[0].pid: expected int, got str"),
        ([{"ph": "C", "ts": 1, "name": "q", "args": {"a": "x"}}],
         "$.traceEvents[0].args.a: expected a finite number, got 'x'"),
    ]:
        c.write_bytes(orjson.dumps({"traceEvents": events}))
        assert _error(rs.read_converted_trace, c) == problem


# --------------------------------------------------------------------------- run logs

def test_run_log_bad_lines(tmp_path):
    p = tmp_path / "host_log.txt"
    for text, problem in [
        ("[STRACE] v=1 pid=1 tid=1 name=a ts=\u00b2 dur=5\n",
         "line 1: [STRACE] ts='\u00b2' is not a non-negative 64-bit integer"),
        ("x\n[STRACE] v=1 pid=1 tid=1 name=a ts=5 dur=-5\n",
         "line 2: [STRACE] dur='-5' is not a non-negative 64-bit integer"),
        ("[STRACE] v=2 pid=1\n", "line 1: unknown [STRACE] version v=2"),
        ("[CLOCK_ANCHOR] v=1 pid=1 mono_ns=5\n", "line 1: [CLOCK_ANCHOR] without wall_ns="),
        ("hello\n", "no [STRACE] or [CLOCK_ANCHOR] lines: not a Simpler run log"),
        ("ok\n\0\0", "binary data (a NUL byte at byte 3): not a text run log"),
    ]:
        p.write_text(text)
        assert _error(read_run_log, p) == problem


def test_run_log_is_kept_as_columns_not_an_object_per_span(tmp_path):
    """Issue 22: the reader held about 9x the log's size (an object, a dict and a dozen ints
    per span). Its spans are columns now: what a read keeps, counted by tracemalloc (bytes
    allocated, not timing), is under 120 bytes a span (an object per span kept ~600), and
    the columns say what the lines say, the spans handed out one at a time included."""
    import tracemalloc

    text = (BGEMM / "host_log.txt").read_text()
    lines = [ln for ln in text.splitlines() if "[STRACE] " in ln]
    n = 20 * len(lines) * 100
    p = tmp_path / "host_log.txt"
    p.write_text("\n".join(lines * (n // len(lines))) + "\n")
    tracemalloc.start()
    try:
        log = read_run_log(p)
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(log.spans) == n and kept / n < 120, kept / n
    want = [ln[ln.index("[STRACE] ") + 9:].split() for ln in lines]
    for i in (0, len(lines) - 1, n - 1):
        f = dict(x.split("=", 1) for x in want[i % len(lines)])
        assert (int(log.ts_ns[i]), int(log.dur_ns[i]), int(log.pid[i]), log.names[log.name[i]],
                bool(log.device_clock[i])) == (int(f["ts"]), int(f["dur"]), int(f["pid"]),
                                               f["name"], f.get("clk") == "dev")
        sp = log.spans[i]
        assert (sp.ts_ns, sp.name, sp.inv, sp.hid, sp.line) == (
            int(f["ts"]), f["name"], int(f["inv"]), f["hid"], i + 1)
    assert [s.ts_ns for s in log.spans] == log.ts_ns.tolist()


def test_run_log_parsing_is_linear_in_line_length(tmp_path):
    """Issue 11: a backtracking pattern took 25 s on one 50,000-character token. Measured as
    a ratio in one run: 10x the characters must cost about 10x, not 100x."""
    def cost(n: int) -> float:
        p = tmp_path / f"log{n}.txt"
        p.write_text("[STRACE] v=1 pid=1 tid=1 name=a ts=1 dur=5 " + "a" * n + "\n")
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(20):
                read_run_log(p)
            best = min(best, time.perf_counter() - t)
        return best

    short, long = cost(5_000), cost(50_000)
    assert long / short < 25, (short, long)   # quadratic would be ~100


def test_host_phase_records_bad_line(tmp_path):
    p = tmp_path / "host_phase_records.jsonl"
    p.write_text('{"pid": 1, "records": []}\n{"pid": 1, "records": [{"phase": "a", '
                 '"start_ns": 5, "end_ns": "x"}]}\n')
    with pytest.raises(TraceInputError) as info:
        read_host_phase_records(p)
    assert str(info.value) == f"{p}:2: $.records[0].end_ns: expected int, got str"


# --------------------------------------------------------------------------- fuzzing

_HOSTILE = [None, True, "x", "\u00b2", "\ud800", -1, -(1 << 63) - 1, 1 << 63, 1 << 64, 1.5,
            1e308, [], {}, [[[[[1]]]]], {"a": {"b": [1, "x"]}}, "9" * 30]


def _paths(doc, prefix=()):
    """Every (container path, key) of a decoded JSON document."""
    out = []
    todo = [(doc, prefix)]
    while todo:
        v, p = todo.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, c in items:
            out.append(p + (k,))
            if len(out) < 5000:
                todo.append((c, p + (k,)))
    return out


def _fuzz_case(tmp_path, name, reader):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    src = FIXTURES / "tmr_vector_example_l4_depgen" / name
    if not src.exists():
        src = HBG / name
    text = src.read_bytes()
    doc = orjson.loads(text)
    paths = sorted(_paths(doc), key=repr)

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None,
              derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.sampled_from(paths), st.sampled_from(_HOSTILE), st.integers(0, 2))
    def run(path, value, how):
        d = orjson.loads(text)
        c = d
        for k in path[:-1]:
            c = c[k]
        if how == 2 and isinstance(c, dict):
            del c[path[-1]]
        else:
            c[path[-1]] = value
        p = tmp_path / name
        data = json_dumps(d)
        if how == 1:
            data = data[:len(data) * 2 // 3]         # and truncated
        p.write_bytes(data)
        try:
            reader(p)
        except TraceInputError as exc:
            assert exc.path == str(p) and "\n" not in exc.problem and exc.problem

    run()


def json_dumps(d) -> bytes:
    import json

    return json.dumps(d, ensure_ascii=True).encode()   # lone surrogates as escapes


@pytest.mark.parametrize("name, reader", [
    ("chip_swimlane_records.json", rs.read_records),
    ("deps.json", rs.read_deps),
    ("merged_swimlane.json", rs.read_converted_trace),
    ("name_map_TestBenchmarkBgemmHostBuildGraph_Case0.json", rs.read_name_map),
])
def test_fuzzed_fields_give_one_line_errors(tmp_path, name, reader):
    """Issue 11: any field of a real file replaced by a hostile value (or removed, or the file
    truncated) is read or refused with one `TraceInputError` line, never another exception."""
    _fuzz_case(tmp_path, name, reader)


def test_two_records_files_in_one_capture_say_which_was_read(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(BGEMM, cap)
    shutil.copy(cap / "chip_swimlane_records.json", cap / "l2_swimlane_records.json")
    (files,) = rs.discover_captures(cap)
    c = rs.read_capture(files)
    assert c.records.path == str(cap / "chip_swimlane_records.json")
    assert (f"{cap}: read chip_swimlane_records.json; l2_swimlane_records.json beside it was "
            "ignored (one records file per capture; chip_swimlane_records.json is today's "
            "name)") in c.warnings


def test_host_log_drop_reports_keep_each_processs_latest_running_total(tmp_path):
    """Simpler reports growth at each quiescent boundary with a running total: the reader keeps
    the latest (largest) per process and never sums the reports; a bad report is one line."""
    from pypto.compile_profiling.trace_merge.read.read_run_log import read_run_log

    def drops(pid, new, total, **reasons):
        why = " ".join(f"{k}={reasons.get(k, 0)}" for k in
                       ("queue_full", "claim_exhausted", "output_failed", "not_admitted"))
        return (f"[mono_ns=1][T0xabc][ERROR] host_log_drops: [HOSTLOG_DROPS] v=1 pid={pid} "
                f"new={new} total={total} {why}\n")

    log = tmp_path / "host.71.log"
    log.write_text(drops(71, 2, 2, queue_full=2) + drops(72, 1, 1, output_failed=1)
                   + "[STRACE] v=1 pid=71 tid=71 inv=1 hid=ab depth=0 name=chip.run ts=5 dur=1\n"
                   + drops(71, 3, 5, queue_full=5))
    got = read_run_log(log).host_log_drops
    assert {p: (d.total, d.by_reason["queue_full"], d.by_reason["output_failed"], d.line)
            for p, d in got.items()} == {71: (5, 5, 0, 4), 72: (1, 0, 1, 2)}
    log.write_text(drops(71, 1, "many"))
    with pytest.raises(TraceInputError, match=r"line 1: \[HOSTLOG_DROPS\] total='many'"):
        read_run_log(log)
