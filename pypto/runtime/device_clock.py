"""The simulated device's free-running counter and Simpler-style clock anchors.

The counter ticks at the platform frequency (50 MHz on a2a3) and advances with real elapsed
time, so device durations are real; like a real device's counter it did not start with the
host's clock: it reads the host's uptime in cycles shifted by a random 2^36 to 2^39 cycles
(23 minutes to 3 hours at 50 MHz; earlier only when the result still leaves the device up
for a while), so nothing can line device time up with host time except the anchors.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

_pc = time.perf_counter_ns

ANCHOR_POSITIONS = ("pre_host_orchestration", "post_device_execution")
SAMPLES_PER_POSITION = 3
# How far (in cycles) a default counter's origin lies from the host clock read in cycles.
HOST_DISTANCE_CYCLES = (1 << 36, 1 << 39)
MIN_ORIGIN_CYCLES = 1 << 34  # an origin before the host's still reads at least this


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
    def start(cls, freq_hz: int, drift_ppm: float = 0.0, seed: int | None = None,
              origin_cycles: int | None = None) -> DeviceCounter:
        """A counter started now; `origin_cycles` is its value now (default: random, below).

        The default origin is the host's `CLOCK_MONOTONIC` in cycles moved by
        `HOST_DISTANCE_CYCLES` (a random distance in that range, `seed` makes it repeatable),
        so the counter never happens to read close to host time; it lies before the host's
        value only when that leaves at least `MIN_ORIGIN_CYCLES`.
        """
        epoch = _pc()
        if origin_cycles is None:
            rng = random.Random(seed)
            host_cycles = epoch * freq_hz // 1_000_000_000
            distance = rng.randrange(*HOST_DISTANCE_CYCLES)
            earlier = host_cycles - distance
            use_earlier = rng.getrandbits(1) and earlier >= MIN_ORIGIN_CYCLES
            origin_cycles = earlier if use_earlier else host_cycles + distance
        if origin_cycles < 0:
            raise ValueError(f"origin_cycles must not be negative, got {origin_cycles}")
        return cls(freq_hz, origin_cycles, epoch, drift_ppm)

    def cycles_at(self, host_ns: int) -> int:
        if not self.drift_ppm:      # exact: a stamp on a tick boundary reads that tick
            return self.origin_cycles + (host_ns - self.epoch_ns) * self.freq_hz // 1_000_000_000
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
