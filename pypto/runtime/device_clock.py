"""The simulated device's free-running counter and Simpler-style clock anchors.

The counter ticks at the platform frequency (50 MHz on a2a3) and advances with real elapsed
time, so device durations are real; its origin is a random large offset unrelated to the
host clock, so nothing can line device time up with host time except the anchors.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

_pc = time.perf_counter_ns

ANCHOR_POSITIONS = ("pre_host_orchestration", "post_device_execution")
SAMPLES_PER_POSITION = 3


@dataclass(slots=True)
class DeviceCounter:
    """`cycles = origin + (host_ns - epoch_ns) * freq / 1e9 * (1 + drift_ppm / 1e6)`.

    The device threads stamp events with `time.perf_counter_ns()` (cheap) and the writer turns
    them into counter values with `cycles_at`, which gives exactly what `read()` would have
    returned at that instant. `drift_ppm` lets tests give the counter a rate error that only
    the two-anchor correction removes.
    """

    freq_hz: int
    origin_cycles: int
    epoch_ns: int
    drift_ppm: float = 0.0

    @classmethod
    def start(cls, freq_hz: int, drift_ppm: float = 0.0, seed: int | None = None) -> DeviceCounter:
        """A counter with a random origin between 2^34 and 2^36 cycles (hours of uptime)."""
        rng = random.Random(seed)
        return cls(freq_hz, rng.randrange(1 << 34, 1 << 36), _pc(), drift_ppm)

    def cycles_at(self, host_ns: int) -> int:
        scale = self.freq_hz * (1.0 + self.drift_ppm * 1e-6) / 1e9
        return self.origin_cycles + int((host_ns - self.epoch_ns) * scale)

    def read(self) -> int:
        """The counter now (what a device-side `get_sys_cnt()` returns)."""
        return self.cycles_at(_pc())


def sample_anchors(counter: DeviceCounter, position: str,
                   samples: int = SAMPLES_PER_POSITION) -> list[dict]:
    """`samples` anchor samples at `position`: host CLOCK_MONOTONIC ns around a counter read."""
    out = []
    for i in range(samples):
        before = _pc()
        cycles = counter.read()
        after = _pc()
        rtt = after - before
        out.append({"position": position, "sample_idx": i, "host_before_ns": before,
                    "raw_device_timestamp": cycles, "device_cycles": cycles,
                    "host_after_ns": after, "rtt_ns": rtt, "uncertainty_ns": (rtt + 1) // 2,
                    "error": None})
    return out


def clock_anchors_block(samples: list[dict]) -> dict:
    """`metadata.clock_anchors` in the layout of Simpler's host-orchestrated captures."""
    return {"schema_version": 1, "provider": "sim_syscnt",
            "device_timestamp_unit": "syscnt_cycles",
            "raw_device_timestamp_unit": "syscnt_cycles",
            "samples_per_position": SAMPLES_PER_POSITION, "samples": samples}
