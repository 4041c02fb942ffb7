"""`timeline/arg_values`: the one rule for an argument value, and both writers following it
for hostile values wherever a timeline may hold them (a list column, a NumPy column, a
table, `extra_args`)."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from trace_readback import load_json, read_packets

from pypto.compile_profiling.timeline.arg_values import (
    BOOL,
    DOUBLE,
    INT,
    JSON,
    PROTO_FIELD,
    STRING,
    UINT,
    arg_value,
    json_text,
    proto_field,
)
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    Process,
    SliceBlock,
    Timeline,
    Track,
)
from pypto.compile_profiling.timeline.write_json import write_chrome_json
from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace

# value, its kind, the value protobuf holds, the value JSON reads back
CASES = [
    (0, INT, 0, 0),
    (-(1 << 63), INT, -(1 << 63), -(1 << 63)),
    ((1 << 63) - 1, INT, (1 << 63) - 1, (1 << 63) - 1),
    (1 << 63, UINT, 1 << 63, 1 << 63),
    ((1 << 64) - 1, UINT, (1 << 64) - 1, (1 << 64) - 1),
    (1 << 64, STRING, "18446744073709551616", "18446744073709551616"),
    (-(1 << 63) - 1, STRING, "-9223372036854775809", "-9223372036854775809"),
    (np.int8(-3), INT, -3, -3),
    (np.uint8(5), UINT, 5, 5),
    (np.uint64((1 << 64) - 1), UINT, (1 << 64) - 1, (1 << 64) - 1),
    (True, BOOL, True, True),
    (np.bool_(False), BOOL, False, False),
    (0.5, DOUBLE, 0.5, 0.5),
    (-0.0, DOUBLE, -0.0, -0.0),
    (5e-324, DOUBLE, 5e-324, 5e-324),
    (math.nan, DOUBLE, math.nan, None),
    (-math.inf, DOUBLE, -math.inf, None),
    (np.float32(0.1), DOUBLE, float(np.float32(0.1)), float(np.float32(0.1))),
    ("", STRING, "", ""),
    ('q"uote\n\\', STRING, 'q"uote\n\\', 'q"uote\n\\'),
    ("\udc80 lone", STRING, "\\udc80 lone", "\\udc80 lone"),
    (np.str_("編譯 \u2028"), STRING, "編譯 \u2028", "編譯 \u2028"),
    (None, JSON, "null", None),
    ([1, "a", None, math.inf], JSON, '[1,"a",null,null]', [1, "a", None, None]),
    ({"k": math.nan, 3: "x"}, JSON, '{"k":null,"3":"x"}', {"k": None, "3": "x"}),
    ((1, 2), JSON, "[1,2]", [1, 2]),
    ([1 << 80], JSON, '["1208925819614629174706176"]', ["1208925819614629174706176"]),
    (np.arange(2), JSON, "[0,1]", [0, 1]),
    ([[1.5, -2], [True]], JSON, "[[1.5,-2],[true]]", [[1.5, -2], [True]]),
]
IDS = [repr(c[0])[:30] for c in CASES]


def same(a, b) -> bool:
    """Equal, NaN equal to NaN, -0.0 told from 0.0, bool told from int."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a)
                                                      == math.copysign(1, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("value", "kind", "proto", "from_json"), CASES, ids=IDS)
def test_the_rule_gives_each_value_its_kind(value, kind, proto, from_json):
    got_kind, got = arg_value(value)
    assert got_kind == kind
    assert same(got.decode() if kind == JSON else got, proto)
    assert json.loads(json_text(value)) == from_json
    field, got = proto_field(value)
    assert field == PROTO_FIELD[kind] and same(got, proto)


def placements(value) -> list[tuple[str, list, list | None]]:
    """The ways a timeline may hold `value` as row 0's argument "v": (name, columns, extra
    args)."""
    objects = np.empty(2, dtype=object)
    objects[:] = [None, "other"]
    objects[0] = value
    ways = [("list column", [ArgColumn("v", [value, "other"])], None),
            ("extra args", [], [{"v": value}, {"v": "other"}]),
            ("table column", [ArgColumn("v", np.array([0, 1], np.int32),
                                        table=[value, "other"])], None),
            ("object array", [ArgColumn("v", objects)], None)]
    kind, _ = arg_value(value)
    if kind in (INT, UINT, DOUBLE, BOOL):  # a NumPy column of the value's own type
        dtype = {INT: np.int64, UINT: np.uint64, DOUBLE: np.float64, BOOL: bool}[kind]
        arr = np.array([value, value], dtype=getattr(value, "dtype", dtype))
        ways.append(("numpy column", [ArgColumn("v", arr)], None))
    if isinstance(value, (list, np.ndarray)):
        try:
            arr = np.array([value, value])
        except ValueError:
            arr = None
        if arr is not None and arr.ndim == 2 and arr.dtype.kind in "iufb":
            ways.append(("2D column", [ArgColumn("v", arr)], None))
    if isinstance(value, str):
        ways.append(("unicode array", [ArgColumn("v", np.array([value, "other"]))], None))
    return ways


def one_slice(cols: list, extra: list | None) -> Timeline:
    host = Process(1, "p", 0)
    lane = Track(2, host, "lane", 0)
    block = SliceBlock("c", [lane], np.zeros(2, np.int32), np.array([10, 20], np.int64),
                       np.array([5, 5], np.int64), ["s"], np.zeros(2, np.int32), cols, extra)
    return Timeline([host], [lane], [block])


@pytest.mark.parametrize(("value", "kind", "proto", "from_json"), CASES, ids=IDS)
def test_json_writer_follows_the_rule_wherever_the_value_is(value, kind, proto, from_json):
    for where, cols, extra in placements(value):
        buf = io.BytesIO()
        write_chrome_json(one_slice(cols, extra), buf)
        first = next(e for e in load_json(buf.getvalue())["traceEvents"] if e["ph"] == "X")
        got = json.loads(json.dumps(first["args"]["v"], default=float))  # Decimal -> float
        assert got == from_json, where


def first_slice_annotations(data: bytes) -> dict[str, tuple[str, object]]:
    """key -> (field, value) of the debug annotations of the slice beginning at 10 ns."""
    keys: dict[int, str] = {}
    for p in read_packets(data):
        for e in p.interned_data.debug_annotation_names:
            keys[e.iid] = e.name
        te = p.track_event
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN and p.timestamp == 10:
            return {keys[a.name_iid]: (a.WhichOneof("value"), getattr(a, a.WhichOneof("value")))
                    for a in te.debug_annotations}
    raise AssertionError("no slice at 10 ns")


@pytest.mark.parametrize(("value", "kind", "proto", "from_json"), CASES, ids=IDS)
def test_proto_writer_follows_the_rule_wherever_the_value_is(value, kind, proto, from_json):
    for where, cols, extra in placements(value):
        buf = io.BytesIO()
        write_perfetto_trace(one_slice(cols, extra), buf)
        field, got = first_slice_annotations(buf.getvalue())["v"]
        assert field == PROTO_FIELD[kind] and same(got, proto), where
