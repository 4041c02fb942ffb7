"""Each host's monotonic <-> wall-clock relation, as its inputs record it: Simpler's
`[CLOCK_ANCHOR] mono_ns/wall_ns` log lines and our trace.json's `otherData.clock_anchor`.
Read here; `place.clock_alignment` turns two of them into an offset between hosts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WallClockAnchor:
    """One host's monotonic <-> wall-clock relation, read at one instant."""

    mono_ns: int
    wall_ns: int
    pid: int | None = None
    source: str = ""

    @property
    def wall_minus_mono_ns(self) -> int:
        return self.wall_ns - self.mono_ns


def wall_anchor_from_other_data(other_data: dict, source: str = "") -> WallClockAnchor | None:
    """Our trace.json's `otherData.clock_anchor = {"monotonic_ns", "wall_ns"}`, if present."""
    if not isinstance(other_data, dict):
        return None
    a = other_data.get("clock_anchor")
    if not isinstance(a, dict):
        return None
    mono, wall = a.get("monotonic_ns"), a.get("wall_ns")
    if type(mono) is not int or type(wall) is not int:
        return None
    pid = a.get("pid") if type(a.get("pid")) is int else None
    return WallClockAnchor(mono, wall, pid, source)


def wall_anchor_from_log(anchor) -> WallClockAnchor:
    """A run log's `LogClockAnchor` (`[CLOCK_ANCHOR]` line) -> `WallClockAnchor`."""
    return WallClockAnchor(anchor.mono_ns, anchor.wall_ns, anchor.pid, "[CLOCK_ANCHOR]")
