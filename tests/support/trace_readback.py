"""Both trace formats parsed back strictly, for the writers' tests: JSON with exact decimals
and no NaN/Infinity, protobuf as its packets."""

from __future__ import annotations

import decimal
import json

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def load_json(data: bytes) -> dict:
    text = data.decode("utf-8")  # strict: raises on invalid UTF-8
    return json.loads(text, parse_float=decimal.Decimal, parse_constant=_reject)


def _reject(name):
    raise AssertionError(f"not strict JSON: {name}")


def read_packets(data: bytes) -> list:
    trace = pb.Trace()
    trace.ParseFromString(data)
    return list(trace.packet)
