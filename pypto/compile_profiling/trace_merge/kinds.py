"""The words a merge writes about how it placed each source, as enums: a member is its text
(`StrEnum`), so it goes into the summary, the trace metadata and JSON as that text, while a
typo in code is an `AttributeError` instead of a comparison that is silently never true."""

from __future__ import annotations

from pypto.compile_profiling.foundation.str_enum import StrEnum

__all__ = ["PlacementMethod", "PlacementStatus", "SourceKind"]


class PlacementStatus(StrEnum):
    """How sure a source's placement on the reference axis is (docs/placement.md)."""

    EXACT = "exact"              # host CLOCK_MONOTONIC of the reference host
    CALIBRATED = "calibrated"    # device cycles through the capture's clock anchors
    JOINED = "joined"            # device_wall's cycles inside its runner_run span
    CONTAINED = "contained"      # inside the run log's host spans (Simpler's rule)
    ESTIMATED = "estimated"      # bounded by a device_execution stage, or --offset-us


class PlacementMethod(StrEnum):
    """The rule that placed it, as written in `alignment.method` (Simpler's names where
    Simpler has the rule)."""

    CLOCK_ANCHORS = "nominal_frequency_offset_interp_v1"
    SPAN_CONTAINMENT = "span_containment_v1"
    DEVICE_WALL_CYCLES = "device_wall_cycles"
    BOUNDED_OFFSET = "bounded_offset"
    HOST_MONOTONIC = "host_monotonic_ns"


class SourceKind(StrEnum):
    """What an input of the merge is (`otherData.sources[].kind`)."""

    COMPILE_TRACE = "compile_trace"
    PIPELINE_PROFILE = "pipeline_profile"
    RUN_LOG = "run_log"
    HOST_PHASE_RECORDS = "host_phase_records"
    SWIMLANE_RECORDS = "swimlane_records"
    MERGED_SWIMLANE = "merged_swimlane"


# Where `pypto-merge-traces --compare` lines two runs up (`side_by_side`): their first device
# task, or their first compile stage. Here, not there, so `--help` loads no NumPy.
ALIGN_AT = ("device", "compile")
