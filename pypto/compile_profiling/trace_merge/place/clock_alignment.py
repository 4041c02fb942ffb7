"""Clock alignment: device cycles -> host CLOCK_MONOTONIC ns, and host <-> host offsets.

Device side (formats.md §2.2, Simpler's `nominal_frequency_offset_interp_v1`):
per anchor position (`pre_host_orchestration`, `post_device_execution`) keep the valid
sample with the smallest round trip; its host time is `host_before_ns + rtt/2`. A cycle
count `c` maps to

    host_ns(c) = H0 + (c - D0) * 1e9 / f  +  corr * (c - D0) / (D1 - D0)
    corr       = H1 - (H0 + (D1 - D0) * 1e9 / f)          # measured end-point correction

i.e. the nominal frequency plus a linear correction that makes both anchors exact. The
uncertainty is the larger half round trip of the two chosen samples (plus the device
timestamp quantization and the host timestamp quantization). Only timestamps between the
two anchors are calibrated; `ClockMapping.outside_window` tells which are not.

Host side: each host's monotonic<->wall relation, as read (`read.wall_anchor`: Simpler's
`[CLOCK_ANCHOR]` lines, our trace.json's `otherData.clock_anchor`), gives the offset between
two hosts' monotonic clocks (`monotonic_offset_ns`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementMethod, PlacementStatus
from pypto.compile_profiling.trace_merge.read.wall_anchor import WallClockAnchor
from pypto.errors import PyptoError

METHOD = PlacementMethod.CLOCK_ANCHORS
PRE_POSITION = "pre_host_orchestration"
POST_POSITION = "post_device_execution"
# Quantization (ns) of the raw device timestamp, by unit.
_RAW_UNIT_QUANTIZATION_NS = {"syscnt_cycles": 0, "device_uptime_us": 1_000}


class ClockAnchorsUnusable(PyptoError):
    """The capture's clock anchors cannot calibrate it; `reason` is a short code."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason = reason
        super().__init__(f"clock anchors unusable: {reason}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True, slots=True)
class AnchorPoint:
    """The selected sample of one anchor position."""

    position: str
    sample_idx: int
    host_mid_ns: float
    device_cycles: int
    rtt_ns: int
    uncertainty_ns: float


@dataclass(frozen=True, slots=True)
class ClockMapping:
    """A calibrated device-cycle -> host-ns map between two anchors."""

    start: AnchorPoint
    end: AnchorPoint
    frequency_hz: int
    host_quantization_ns: int = 0
    method: str = METHOD

    @property
    def uncertainty_ns(self) -> float:
        return max(self.start.uncertainty_ns, self.end.uncertainty_ns) + self.host_quantization_ns

    @property
    def window_cycles(self) -> tuple[int, int]:
        return self.start.device_cycles, self.end.device_cycles

    @property
    def end_correction_ns(self) -> float:
        """How far the nominal frequency misses the end anchor (drift over the window)."""
        span = self.end.device_cycles - self.start.device_cycles
        return self.end.host_mid_ns - (self.start.host_mid_ns + span * 1e9 / self.frequency_hz)

    def to_host_ns(self, cycles):
        """Map cycles (int, or NumPy array) to host ns (float / float64 array)."""
        d0 = self.start.device_cycles
        span = self.end.device_cycles - d0
        slope = 1e9 / self.frequency_hz + self.end_correction_ns / span
        if isinstance(cycles, np.ndarray):
            return self.start.host_mid_ns + (cycles - d0).astype(np.float64) * slope
        return self.start.host_mid_ns + (cycles - d0) * slope

    def outside_window(self, cycles: np.ndarray) -> np.ndarray:
        """Boolean mask of timestamps outside the anchors (not calibrated)."""
        d0, d1 = self.window_cycles
        return (cycles < d0) | (cycles > d1)

    def describe(self) -> dict:
        """Plain dict for trace metadata / process args."""
        return {
            "status": PlacementStatus.CALIBRATED,
            "method": self.method,
            "uncertainty_ns": self.uncertainty_ns,
            "frequency_hz": self.frequency_hz,
            "end_correction_ns": round(self.end_correction_ns, 3),
            "selected_sample_idx": {self.start.position: self.start.sample_idx,
                                    self.end.position: self.end.sample_idx},
            "anchor_window_host_ns": [self.start.host_mid_ns, self.end.host_mid_ns],
        }


def _sample_field(sample, name):
    return sample.get(name) if isinstance(sample, dict) else getattr(sample, name, None)


def _select(samples, position: str, quant_ns: int) -> AnchorPoint | None:
    best = None
    for s in samples:
        if _sample_field(s, "position") != position:
            continue
        if _sample_field(s, "error") not in (None, 0, ""):
            continue
        hb, ha = _sample_field(s, "host_before_ns"), _sample_field(s, "host_after_ns")
        dev, idx = _sample_field(s, "device_cycles"), _sample_field(s, "sample_idx")
        if not all(type(v) is int for v in (hb, ha, dev, idx)):
            continue
        if hb <= 0 or dev <= 0 or ha < hb or idx < 0:
            continue
        rtt = ha - hb
        point = AnchorPoint(position, idx, hb + rtt / 2, dev, rtt, rtt / 2 + quant_ns)
        if best is None or (rtt, idx) < (best.rtt_ns, best.sample_idx):
            best = point
    return best


def build_clock_mapping(anchors, frequency_hz: int, *,
                        host_quantization_ns: int = 0) -> ClockMapping:
    """Anchors (the records' `clock_anchors`, or the raw dict) -> `ClockMapping`.

    Raises `ClockAnchorsUnusable` (with a reason code) when they cannot calibrate.
    """
    if anchors is None:
        raise ClockAnchorsUnusable("missing_clock_anchors")
    if frequency_hz is None or frequency_hz <= 0:
        raise ClockAnchorsUnusable("invalid_device_frequency", str(frequency_hz))
    samples = _sample_field(anchors, "samples")
    if not isinstance(samples, list):
        raise ClockAnchorsUnusable("missing_clock_anchor_samples")
    unit = _sample_field(anchors, "device_timestamp_unit")
    if unit != "syscnt_cycles":
        raise ClockAnchorsUnusable("unsupported_device_timestamp_unit", repr(unit))
    raw_unit = _sample_field(anchors, "raw_device_timestamp_unit") or "syscnt_cycles"
    if raw_unit not in _RAW_UNIT_QUANTIZATION_NS:
        raise ClockAnchorsUnusable("unsupported_raw_device_timestamp_unit", repr(raw_unit))
    quant = _RAW_UNIT_QUANTIZATION_NS[raw_unit]
    start = _select(samples, PRE_POSITION, quant)
    if start is None:
        raise ClockAnchorsUnusable("no_valid_pre_host_orchestration_anchor")
    end = _select(samples, POST_POSITION, quant)
    if end is None:
        raise ClockAnchorsUnusable("no_valid_post_device_execution_anchor")
    if end.host_mid_ns <= start.host_mid_ns:
        raise ClockAnchorsUnusable("host_anchor_order_invalid")
    if end.device_cycles <= start.device_cycles:
        raise ClockAnchorsUnusable("device_anchor_order_invalid")
    return ClockMapping(start, end, int(frequency_hz), int(host_quantization_ns))


# --------------------------------------------------------------------------- host <-> host

def monotonic_offset_ns(reference: WallClockAnchor, other: WallClockAnchor) -> int:
    """Nanoseconds to add to `other`'s monotonic times to put them on `reference`'s axis.

    Both hosts' wall clocks are assumed to agree (NTP-synchronised); the result is only as
    good as that agreement, which callers should state. Two anchors of one host give
    (nearly) zero.
    """
    return other.wall_minus_mono_ns - reference.wall_minus_mono_ns
