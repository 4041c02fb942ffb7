"""The column encoder (`proto_columns`) writes the packet templates' bytes, byte for byte:
on the real captures, on our own runs, and on generated timelines of every column kind."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from simpler_fixtures import CASES, FIXTURES
from timeline_strategies import column_blocks, nested_timelines

from pypto.compile_profiling.analysis import TIMELINE_VIEWS
from pypto.compile_profiling.timeline import proto_packets
from pypto.compile_profiling.timeline.proto_columns import text_matrix, varints
from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.errors import ProfileWriteError


def both_encoders(timeline, monkeypatch) -> tuple[bytes, bytes]:
    """(templates' bytes, columns' bytes) of `timeline`, or the errors' texts (an id out of
    protobuf's range fails both the same way, at the descriptors)."""
    out = []
    for columns in (False, True):
        monkeypatch.setattr(proto_packets, "COLUMN_ENCODER", columns)
        buf = io.BytesIO()
        try:
            write_perfetto_trace(timeline, buf)
        except (ProfileWriteError, ValueError, TypeError) as e:
            out.append(f"{type(e).__name__}: {e}".encode())
            continue
        out.append(buf.getvalue())
    return out[0], out[1]


def in_protobuf_range(timeline):
    """Times a protobuf trace can hold (unsigned ns; the merge makes no others): the
    generated blocks' hostile times folded into range, everything else kept."""
    for b in timeline.blocks:
        b.start_ns = b.start_ns % 10**15
        b.dur_ns = b.dur_ns % 10**9
    for c in timeline.counters:
        c.ts_ns = c.ts_ns % 10**15
    return timeline


@pytest.mark.parametrize("views, chunk", [(None, 4096), ("all", 4096), ("all", 7)])
@pytest.mark.parametrize("case", CASES)
def test_real_captures_byte_for_byte(case, views, chunk, monkeypatch):
    """`chunk` 7: many chunks a track, so blocks met in later chunks and names first used
    across chunk edges carry their interned data where the templates put it."""
    monkeypatch.setattr(proto_packets, "ROWS_PER_CHUNK", chunk)
    result = merge_traces([FIXTURES / case], views=views,
                          derived_views=TIMELINE_VIEWS if views else None)
    templates, columns = both_encoders(result.timeline, monkeypatch)
    assert columns == templates
    assert len(columns) > 10_000


def test_a_whole_run_byte_for_byte(tmp_path, monkeypatch):
    """Compile stages (host slices with free-form args: the templates' path) beside the
    device's (columns), flows between them, counters."""
    from example_runs import run_many_kernels

    work = run_many_kernels(tmp_path / "w")
    result = merge_traces([work / "report" / "trace.json", work / "dfx_outputs"], views="all",
                          derived_views=TIMELINE_VIEWS)
    templates, columns = both_encoders(result.timeline, monkeypatch)
    assert columns == templates


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=column_blocks())
def test_every_column_kind_byte_for_byte(case):
    timeline, _ = case
    with pytest.MonkeyPatch.context() as mp:
        templates, columns = both_encoders(in_protobuf_range(timeline), mp)
    assert columns == templates


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tl=nested_timelines())
def test_nesting_clipping_and_flows_byte_for_byte(tl):
    with pytest.MonkeyPatch.context() as mp:
        templates, columns = both_encoders(tl, mp)
    assert columns == templates


def test_varints_are_protobuf_s():
    values = np.array([0, 1, 127, 128, 300, (1 << 35) + 5, (1 << 63) - 1, -1, -(1 << 63)],
                      np.int64)
    mat, lens = varints(values)
    for i, v in enumerate(values.tolist()):
        ann = pb.DebugAnnotation(int_value=v)
        want = ann.SerializeToString()[1:]            # the field's tag byte left out
        assert bytes(mat[:lens[i], i]) == want


def test_text_matrix_holds_utf8_and_lengths():
    mat, lens = text_matrix(["ab", "", "é", "x\x00y"])
    assert lens.tolist() == [2, 0, 2, 3]
    assert [bytes(mat[:n, i]) for i, n in enumerate(lens.tolist())] == \
        [b"ab", b"", "é".encode(), b"x\x00y"]


@pytest.mark.parametrize("n_flows", [1, 17])
def test_many_flows_at_one_slice(n_flows, monkeypatch):
    """More flows at one end than the columns make (`MAX_FLOWS`): that slice goes through
    upb, the rest through the columns; the bytes are the templates'."""
    from pypto.compile_profiling.timeline.model import (
        ArgColumn,
        FlowBlock,
        Process,
        SliceBlock,
        Timeline,
        Track,
    )

    proc = Process(1, "p", 0)
    lane = Track(2, proc, "lane", 0)
    n = 40
    block = SliceBlock("c", [lane], np.zeros(n, np.int32), np.arange(n, dtype=np.int64) * 100,
                       np.full(n, 50, np.int64), [f"t{i}" for i in range(n)],
                       np.arange(n, dtype=np.int32), [ArgColumn("i", np.arange(n))])
    flows = FlowBlock("f", "flow", block, np.zeros(n_flows, np.int64), block,
                      np.arange(1, n_flows + 1, dtype=np.int64) % n)
    templates, columns = both_encoders(Timeline([proc], [lane], [block], [flows]), monkeypatch)
    assert columns == templates


@pytest.mark.parametrize("values", [
    np.array([0, -1, 5, -(1 << 63), (1 << 63) - 1], np.int64),
    np.array([0.0, -0.0, np.nan, np.inf, 1e-300], np.float64),
    np.array([1, 2, 3, 4, 5], np.uint64),
    np.array([0.5, 1.5, 2.5, 3.5, 4.5], np.float32),
])
def test_counters_byte_for_byte(values, monkeypatch):
    from pypto.compile_profiling.timeline.model import CounterTrack, Process, Timeline

    proc = Process(1, "p", 0)
    counter = CounterTrack(proc, "c", np.arange(5, dtype=np.int64) * 1000, values, "u")
    templates, columns = both_encoders(Timeline([proc], counters=[counter]), monkeypatch)
    assert columns == templates and len(columns) > 100


@pytest.mark.parametrize("case", CASES[:3])
def test_a_block_encoded_a_few_rows_at_a_time(case, monkeypatch):
    """A block's rows in pieces of 3 (`COLUMN_ROWS`, 65,536 by default, caps the memory of
    a million-task lane): the same bytes."""
    from pypto.compile_profiling.timeline import proto_columns

    monkeypatch.setattr(proto_columns, "COLUMN_ROWS", 3)
    result = merge_traces([FIXTURES / case], views="all", derived_views=TIMELINE_VIEWS)
    templates, columns = both_encoders(result.timeline, monkeypatch)
    assert columns == templates
