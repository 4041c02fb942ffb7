"""A `CompileProfiler`'s stages as a `Timeline` (for the Perfetto protobuf export)."""

from __future__ import annotations

import orjson

from pypto.compile_profiling.trace_merge.layout import lay_out
from pypto.compile_profiling.trace_merge.place import HostClock, Plan
from pypto.compile_profiling.trace_merge.read_inputs import compile_trace_from_doc
from pypto.compile_profiling.trace_merge.timeline import Timeline


def profile_to_timeline(profiler) -> Timeline:
    """The profile's stages on their real pid/tid, as in its `trace.json`."""
    from pypto.compile_profiling.chrome_trace import trace_text

    ct = compile_trace_from_doc("<profile>", orjson.loads(trace_text(profiler)))
    plan = Plan(ct.host, ct.wall_anchor)
    plan.traces.append((ct, HostClock(0, "exact (host CLOCK_MONOTONIC)")))
    timeline, _, _ = lay_out(plan)
    timeline.metadata = dict(ct.other)
    return timeline
