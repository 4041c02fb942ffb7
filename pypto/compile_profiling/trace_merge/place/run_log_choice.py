"""Which of several run logs beside a capture is its own: never another run's.

A capture directory can hold the logs of several runs (a work dir run again, a user's folder
of captures). Each log is kept only when the evidence says it can be this capture's run, in
this order, each narrowing what the one before left (a step that no log passes says nothing,
and is skipped):

1. the capture's `dispatch_identity.json`: logs holding the invocation it names;
2. `device_wall`'s cycles: logs with an invocation whose cycles join this capture's records
   (a run's counter readings, not another's);
3. the capture's clock anchors: logs with an invocation whose `runner_run` holds the device
   time the anchors give (within their uncertainty);
4. the run's `device_execution` stage in a compile trace: logs with an invocation inside it;
5. and, always, a log none of whose invocations can hold the capture (span containment
   refuses every one) is out.

One log left: it is the capture's, and the choice says why. None, or several that nothing
tells apart: no log is used (the capture is placed without one), and the merge says so. The
others are never drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.compile_profiling.trace_merge.place.clock_alignment import (
    ClockAnchorsUnusable,
    build_clock_mapping,
)
from pypto.compile_profiling.trace_merge.place.containment import (
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
    host_windows,
)
from pypto.compile_profiling.trace_merge.read.read_run_log import RunLog

__all__ = ["ANCHOR_SLACK_NS", "LogChoice", "choose_run_log"]

# How far outside runner_run anchored device time may lie (beyond the anchors' uncertainty)
# and still be that run's: none. On the three real captures with anchors the device time lies
# 5.7-25.6 ms inside runner_run's start and 103-118 ms inside its end; runs made back to back
# are about 10 ms apart.
ANCHOR_SLACK_NS = 0


@dataclass(slots=True)
class LogChoice:
    """The capture's log (None: none used), why, and every log left out with its reason."""

    log: RunLog | None
    how: str
    left_out: list[tuple[str, str]] = field(default_factory=list)    # (path, why)


def choose_run_log(logs: list[RunLog], windows: CaptureWindows | None, *, records=None,
                   identity: tuple[int | None, tuple | None] = (None, None),
                   stages: list[tuple[int, float, float]] = (),
                   host_offset: Callable[[RunLog], int] = lambda log: 0) -> LogChoice:
    """Choose among `logs` (see the module docstring). `records`: the capture's
    `SwimlaneRecords` (for its clock anchors); `identity`: (host_pid, dispatch key) of its
    sidecar; `stages`: (pid, start, end) of device_execution stages on the reference axis;
    `host_offset(log)`: its host clock's offset onto that axis."""
    inv = {log: host_windows(log) for log in logs}
    left = list(logs)
    out: list[tuple[str, str]] = []
    reasons: list[str] = []

    def narrow(keep: Callable[[HostWindow], bool], why_in: str, why_out: str) -> None:
        nonlocal left
        passing = [log for log in left if any(keep(w) for w in inv[log])]
        if passing and len(passing) < len(left):
            out.extend((log.path, why_out) for log in left if log not in passing)
            reasons.append(why_in)
            left = passing

    host_pid, key = identity
    if host_pid is not None or key is not None:
        narrow(lambda w: (host_pid is None or w.pid == host_pid)
               and (key is None or w.identity == key),
               "it holds the invocation dispatch_identity.json names",
               "holds no invocation dispatch_identity.json names")
    if windows is not None:
        narrow(lambda w: _joined_by_cycles(w, windows),
               "device_wall's cycles join the capture's records",
               "device_wall's cycles do not join the capture's records (another run's "
               "counter readings)")
    anchored = _anchored_extent(records, windows)
    if anchored is not None:
        lo, hi, sure = anchored
        # both on the run's own host clock: no offset between them
        narrow(lambda w: (w.start_ns - sure - ANCHOR_SLACK_NS <= lo
                          and hi <= w.end_ns + sure + ANCHOR_SLACK_NS),
               "its runner_run holds the device time the clock anchors give",
               f"its runner_run does not hold the device time the capture's clock anchors "
               f"give ({lo / 1e9:.3f}-{hi / 1e9:.3f} s)")
    if stages:
        narrow(lambda w: any(pid == w.pid and s <= w.start_ns + host_offset(w.log)
                             and w.end_ns + host_offset(w.log) <= e for pid, s, e in stages),
               "its runner_run lies in the run's device_execution stage",
               "its runner_run lies in no device_execution stage of the compile trace")
    if windows is not None:
        fits = [log for log in left if any(_holds(w, windows) for w in inv[log])]
        out.extend((log.path, ("none of its invocations can hold the capture (span "
                              "containment)")) for log in left if log not in fits)
        left = fits
    if len(left) == 1:
        how = "; ".join(reasons) or "the only run log that can hold it"
        return LogChoice(left[0], how, out)
    if not left:
        return LogChoice(None, "no run log here can be its run's", out)
    names = ", ".join(Path(log.path).name for log in left)
    out.extend((log.path, f"cannot be told apart from the others ({names})") for log in left)
    return LogChoice(None, f"{len(left)} run logs fit it equally ({names})", out)


def _joined_by_cycles(w: HostWindow, windows: CaptureWindows) -> bool:
    if w.wall_cycles is None:
        return False
    try:
        return contain(w, windows).join.by_cycles
    except NotOneRun:
        return False


def _holds(w: HostWindow, windows: CaptureWindows) -> bool:
    try:
        contain(w, windows)
    except NotOneRun:
        return False
    return True


def _anchored_extent(records, windows: CaptureWindows | None
                     ) -> tuple[float, float, float] | None:
    """(first, last, uncertainty) host ns of the capture's device time by its anchors."""
    if records is None or windows is None or records.clock_anchors is None:
        return None
    try:
        mapping = build_clock_mapping(records.clock_anchors, records.freq_hz,
                                      host_quantization_ns=records.host_timestamp_quantization_ns)
    except ClockAnchorsUnusable:
        return None
    lo, hi = mapping.to_host_ns(np.array(windows.extent, dtype=np.int64)).tolist()
    return lo, hi, mapping.uncertainty_ns
