"""The placement plan: what step 2 of a merge (`place`) decides for each source, and what
the layout, the analysis and the per-rank merge read. Types only: the evidence and the
decisions are made in `place` and the modules it calls."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from pypto.compile_profiling.trace_merge.kinds import PlacementMethod, PlacementStatus
from pypto.compile_profiling.trace_merge.place.clock_alignment import ClockMapping
from pypto.compile_profiling.trace_merge.place.containment import Containment, HostWindow, fmt_ns
from pypto.compile_profiling.trace_merge.place.run_log_choice import LogChoice
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read.read_inputs import CompileTrace, ProfileReport
from pypto.compile_profiling.trace_merge.read.wall_anchor import WallClockAnchor

__all__ = ["DEVICE_EXECUTION", "DEVICE_WALL_SUFFIX", "RUNNER_RUN_SUFFIX",
           "SAME_HOST_TOLERANCE_NS", "CapturePlan", "DeviceClock", "HostClock", "Interval",
           "Plan", "ReportPlan", "fmt_interval"]

SAME_HOST_TOLERANCE_NS = 1_000_000_000   # wall-minus-monotonic agreement meaning "one host"
DEVICE_EXECUTION = "device_execution"
RUNNER_RUN_SUFFIX = "runner_run"
DEVICE_WALL_SUFFIX = ".device_wall"


@dataclass(slots=True)
class HostClock:
    """A source's host CLOCK_MONOTONIC times + `offset_ns` = reference-axis times."""

    offset_ns: int
    how: str


@dataclass(slots=True)
class Interval:
    """A closed interval of offsets (ns) and where it came from."""

    lo: float
    hi: float
    why: str

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


@dataclass(slots=True)
class DeviceClock:
    """Device cycles -> reference-axis ns, and how sure that is: the true offset (`ns =
    cycles * 1e9 / f + offset`) lies in `[offset_lo_ns, offset_hi_ns]` (None: no bound)."""

    status: PlacementStatus
    freq_hz: int
    how: str                          # for the summary and the process args
    mapping: ClockMapping | None = None
    offset_ns: float = 0.0            # otherwise: ns = cycles * 1e9 / f + offset_ns
    host_offset_ns: int = 0           # calibrated: the run's host onto the reference axis
    uncertainty_ns: float | None = None   # None: unbounded; else the largest error drawn
    containment: Containment | None = None
    cross_check: str | None = None    # calibrated: what span containment says of it
    offset_lo_ns: float | None = None     # reference axis
    offset_hi_ns: float | None = None
    drawn_offset_ns: float | None = None  # the offset drawn (calibrated: at the first record)

    def to_ns(self, cycles: np.ndarray) -> np.ndarray:
        """int64 ns on the reference axis (time points rounded once, here)."""
        if self.mapping is not None:
            ns = self.mapping.to_host_ns(cycles) + self.host_offset_ns
        elif type(self.offset_ns) is int and 1_000_000_000 % self.freq_hz == 0:
            # exact: an integer ns per cycle and an integer offset (containment)
            return cycles.astype(np.int64) * (1_000_000_000 // self.freq_hz) + self.offset_ns
        else:
            ns = cycles.astype(np.float64) * (1e9 / self.freq_hz) + self.offset_ns
        return np.rint(ns).astype(np.int64)

    def shifted(self, by_ns: int) -> DeviceClock:
        """The same mapping with the device `by_ns` later: where the records would go at
        another offset the evidence allows."""
        if self.mapping is not None:
            return replace(self, host_offset_ns=self.host_offset_ns + by_ns)
        return replace(self, offset_ns=self.offset_ns + by_ns)

    @property
    def interval(self) -> tuple[float, float] | None:
        """(earliest, latest) shift from the drawn placement that the evidence allows, ns
        (earliest <= 0 <= latest); None: unbounded."""
        if self.offset_lo_ns is None or self.offset_hi_ns is None:
            return None
        drawn = self.offset_ns if self.drawn_offset_ns is None else self.drawn_offset_ns
        return self.offset_lo_ns - drawn, self.offset_hi_ns - drawn

    def describe(self) -> dict:
        if self.mapping is not None:
            info = self.mapping.describe()
        elif self.containment is not None:
            info = {"status": self.status, **self.containment.metadata(self.host_offset_ns),
                    "reason": self.how, "frequency_hz": self.freq_hz,
                    "offset_ns": self.offset_ns, "uncertainty_ns": self.uncertainty_ns}
            return info
        else:
            info = {"status": PlacementStatus.ESTIMATED, "method": PlacementMethod.BOUNDED_OFFSET, "reason": self.how,
                    "frequency_hz": self.freq_hz, "offset_ns": round(self.offset_ns)}
            if self.uncertainty_ns is not None:
                info["uncertainty_ns"] = round(self.uncertainty_ns)
        if self.offset_lo_ns is not None:
            info["offset_lo_ns"] = math.floor(self.offset_lo_ns)
            info["offset_hi_ns"] = math.ceil(self.offset_hi_ns)
        if self.host_offset_ns:
            info["host_offset_ns"] = self.host_offset_ns
        return info

    @property
    def bound(self) -> str:
        """The interval as a figure: "±386 ns", "-2.1 us/+334.0 ms", "unbounded"."""
        iv = self.interval
        if iv is None:
            return "unbounded"
        return fmt_interval(*iv)

    @property
    def label(self) -> str:
        """What the device processes' names say: "calibrated ±386 ns", "contained -2.1 us/
        +334.0 ms" (the records may lie that much earlier or later than drawn), "joined by
        device_wall cycles -12 us/+40 us", "estimated ±85.6 ms"."""
        if self.containment is not None:
            if self.status is PlacementStatus.JOINED:
                return f"joined by device_wall cycles {self.bound}"
            return f"contained {self.bound}"
        sure = "" if self.uncertainty_ns is None else f" ±{fmt_ns(self.uncertainty_ns)}"
        return f"{self.status}{sure}"


def fmt_interval(earlier: float, later: float) -> str:
    """A shift interval around a drawn point: "±25 ns" when symmetric as written, else
    "-2.1 us/+334.0 ms" (signed: an interval that misses the point reads "+3 ns/+9 ns")."""
    a, b = fmt_ns(earlier), fmt_ns(later)
    if a == b and earlier <= 0 <= later:
        return f"±{a}"
    return f"{'-' if earlier <= 0 else '+'}{a}/{'+' if later >= 0 else '-'}{b}"


@dataclass(slots=True, eq=False)   # identity: plans key the layout's and analysis's dicts
class CapturePlan:
    """Where one capture leaf goes."""

    capture: rs.Capture
    label: str                        # "r0", "r1d0", or the work dir's name
    host: HostClock                   # its host streams and run log
    device: DeviceClock | None        # its records (None without records)
    converted: DeviceClock | None     # its merged_swimlane*.json (ns from its own origin)
    run_pid: int | None               # the OS pid of its run, when known
    window: HostWindow | None = None  # the run-log invocation that ran it
    paired_by: str | None = None      # how that invocation was found
    log_choice: LogChoice | None = None   # of several run logs beside it: which, and why


@dataclass(slots=True)
class ReportPlan:
    report: ProfileReport
    origin_ns: float
    how: str


@dataclass(slots=True)
class Plan:
    reference_host: str | None
    reference_anchor: WallClockAnchor | None
    traces: list[tuple[CompileTrace, HostClock]] = field(default_factory=list)
    reports: list[ReportPlan] = field(default_factory=list)
    captures: list[CapturePlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # clk=dev spans of each run-log invocation: (log path, pid, inv) -> (offset, lane label)
    wall_offsets: dict[tuple[str, int, int | None], tuple[int, str]] = field(
        default_factory=dict)
    # a per-rank shard's plan holds its own captures only: the labels of every capture
    # each Simpler process ran (by its host key and pid, `layout_host.run_host_key`), from
    # the whole plan, to name the process by
    run_ranks: dict[tuple[str, int], list[str]] | None = None
