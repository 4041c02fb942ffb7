"""Step 2 of a merge: every clock decision, per source, before anything is laid out.

One axis: host CLOCK_MONOTONIC ns of the reference host (the first compile trace's host,
else the first run log's). For each source this step decides how its times map onto it:

- host-clock sources (compile traces, `[STRACE]` host spans, host orchestrator phases) are
  exact on their own host; another host's are moved by wall-clock anchors
  (`otherData.clock_anchor`, `[CLOCK_ANCHOR]`), which assumes synchronised wall clocks;
- each capture is first paired with the run-log invocation that ran it (`pairing`: its
  dispatch identity, else its own run log, else a window fit);
- a capture with usable clock anchors is calibrated (`clock_alignment`), with the
  anchors' uncertainty; its invocation, when it has one, is checked to be its run;
- a capture without them paired with an invocation is placed by span containment
  (`containment`, Simpler's `span_containment_v1`): inside that invocation's
  `chip.run.runner_run`, joined to its `device_wall` sub-phases, after its `aicpu_launch`
  marker and inside its run's `device_execution` stage; drawn at the earliest placement,
  the remaining width is its stated bound ("contained, slack 137.0 ms"). A log and a
  capture that cannot describe one run are refused;
- a capture with neither (no run log) is an estimate bounded by its run's
  `device_execution` stage (the compile process with the run's pid, or the n-th stage for
  the n-th capture), put in the middle ("estimated ±85.6 ms"). `--offset-us` replaces
  both by the user's own placement;
- `pipeline_profile.json` has durations only: its `device_execution` goes to the first
  record of the earliest calibrated capture, else its start to the start of the other
  inputs, else 0 (estimated).

Last, nothing may land before time 0 (Perfetto drops it), and sources whose clocks were
joined only through wall-clock anchors must share some time with the reference host's:
otherwise they cannot be from one run and the merge is refused, unless `align="start"`
puts their starts together.

This module runs the step in that order; the jobs are its parts: `place_host` (host clocks,
a capture's own run, clk=dev spans, reports), `place_device` (each capture's evidence in, one
`DeviceClock` with its interval and reason out), `place_check` (one run, time >= 0). The
decisions are the types of `plan`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pypto.compile_profiling.trace_merge.place.containment import (
    HostWindow,
    host_windows,
)
from pypto.compile_profiling.trace_merge.place.pairing import Candidate, PairingError, pair
from pypto.compile_profiling.trace_merge.place.place_check import check_times
from pypto.compile_profiling.trace_merge.place.place_device import (
    PlaceContext,
    capture_windows,
    place_capture,
)
from pypto.compile_profiling.trace_merge.place.place_host import (
    EXACT,
    device_execution_stages,
    host_clock,
    own_run_pid,
    place_reports,
    place_traces,
    place_walls,
)
from pypto.compile_profiling.trace_merge.place.plan import (
    CapturePlan,
    HostClock,
    Plan,
)
from pypto.compile_profiling.trace_merge.place.run_log_choice import LogChoice, choose_run_log
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read.read_inputs import Inputs
from pypto.compile_profiling.trace_merge.read.wall_anchor import wall_anchor_from_log
from pypto.errors import TraceInputError

# --------------------------------------------------------------------------- the step

ALIGN_CHOICES = ("clock", "start")


def place(inputs: Inputs, *, offset_us: float | None = None, align: str = "clock") -> Plan:
    """Decide every source's clock mapping (see the module docstring). `align="start"`:
    sources that share no time with the reference host's, and were joined to it only
    through wall-clock anchors, are moved to start with it (else they are refused)."""
    if align not in ALIGN_CHOICES:
        raise ValueError(f"align must be one of {ALIGN_CHOICES}, got {align!r}")
    plan = Plan(None, None)
    place_traces(inputs, plan)
    choices = _choose_run_logs(inputs, plan)
    if plan.reference_anchor is None:
        for cap in inputs.captures:
            if cap.run_log is not None and cap.run_log.clock_anchors:
                plan.reference_anchor = wall_anchor_from_log(cap.run_log.clock_anchors[0])
                break
    hosts = {cap.run_log: host_clock(cap.run_log, plan)
             for cap in inputs.captures if cap.run_log is not None}
    windows = {cap: host_windows(cap.run_log) if cap.run_log is not None else []
               for cap in inputs.captures}
    ctx = PlaceContext(device_execution_stages(plan), [], offset_us)
    pairs = _pair(inputs, windows, plan, ctx)
    ctx.unmatched = [c for c in inputs.captures if (c.records is not None or c.converted)
                     and c not in pairs and own_run_pid(c) is None]
    labels = _labels(inputs.captures)
    for cap, label in zip(inputs.captures, labels):
        found = pairs.get(cap)
        log = found[0].log if found is not None else cap.run_log
        host = hosts.get(log) if log is not None else None
        capture_plan = CapturePlan(cap, label, host or HostClock(0, EXACT), None, None,
                                   found[0].pid if found is not None else own_run_pid(cap),
                                   *(found or (None, None)), choices.get(cap))
        place_capture(capture_plan, ctx, plan)
        plan.captures.append(capture_plan)
    if offset_us is not None and not any(c.device is not None or c.converted is not None
                                         for c in plan.captures):
        plan.warnings.append(f"--offset-us {offset_us:g}: not applied: no device capture "
                             "among the inputs")
    check_times(plan, align, ctx)
    place_walls(plan, windows)
    place_reports(inputs, plan)
    return plan


def _choose_run_logs(inputs: Inputs, plan: Plan) -> dict[int, LogChoice]:
    """Of several run logs beside a capture, its own run's (`run_log_choice`), set as its
    `run_log`; none when nothing tells them apart (said as a warning). Never another run's."""
    out = {}
    stages = device_execution_stages(plan)
    for cap in inputs.captures:
        if len(cap.run_logs) < 2:
            continue
        ident = cap.dispatch_identity
        choice = choose_run_log(
            cap.run_logs, capture_windows(cap), records=cap.records,
            identity=(ident.host_pid, ident.key) if ident else (None, None), stages=stages,
            host_offset=lambda log: host_clock(log, plan).offset_ns)
        cap.run_log = choice.log
        out[cap] = choice
        if choice.log is None:
            plan.warnings.append(f"{cap.files.directory}: {choice.how}: no run log used, the "
                                 "capture is placed without one (never another run's)")
    return out


def _pair(inputs: Inputs, windows: dict, plan: Plan, ctx: PlaceContext
          ) -> dict[int, tuple[HostWindow, str]]:
    """capture -> (its run-log invocation, how it was found), for every capture that
    draws device records; `PairingError` becomes the one-line input error."""
    drawn = [c for c in inputs.captures if c.records is not None or c.converted]
    pool = [w for cap in inputs.captures for w in windows[cap]]
    if not pool:
        return {}
    cands = []
    for cap in drawn:
        ident = cap.dispatch_identity
        cands.append(Candidate(cap.records.path if cap.records is not None else
                               cap.converted[0].path, ctx.windows(cap), windows[cap],
                               ident.host_pid if ident else None, ident.key if ident else None,
                               ident.path if ident else None))
    try:
        found, warnings = pair(cands, pool)
    except PairingError as e:
        raise TraceInputError(e.path, e.problem) from None
    plan.warnings.extend(warnings)
    return {drawn[i]: (p.window, p.how) for i, p in found.items()}


def _labels(captures: list[rs.Capture]) -> list[str]:
    """Per capture: `r<rank>[d<k>]` in the distributed layout; a lone flat `dfx_outputs/` is
    `r0`; else the work dir's (or capture dir's) name. Captures that would share a label
    (two work dirs both called `work`, or two runs' `rank0/d0`) are named by the path that
    tells them apart instead (`a/work`, `b/work`), so their device processes differ."""
    flat = [c for c in captures if _flat(c.files)]
    labels = [("r0" if len(flat) == 1 else Path(_named_dir(c.files)).name) if _flat(c.files)
              else c.files.label for c in captures]
    for label in {x for x in labels if labels.count(x) > 1}:
        alike = [i for i, x in enumerate(labels) if x == label]
        named = [os.path.abspath(_named_dir(captures[i].files)) for i in alike]
        common = os.path.commonpath(named)
        for i, d in zip(alike, named):
            where = os.path.relpath(d, common)
            labels[i] = where if _flat(captures[i].files) or captures[i].files.rank is None \
                else f"{where} {label}"
    return labels


def _flat(files: rs.CaptureFiles) -> bool:
    return files.rank is None and Path(files.directory).name.endswith("dfx_outputs")


def _named_dir(files: rs.CaptureFiles) -> str:
    """The directory a capture's label comes from: a flat `dfx_outputs/`'s work dir, the
    work dir above a distributed layout's `dfx_outputs/rank<r>/...`, else the capture dir."""
    d = Path(files.directory)
    if _flat(files):
        return str(d.parent)
    if files.rank is not None:
        parts = d.parts
        if "dfx_outputs" in parts:
            at = len(parts) - 1 - parts[::-1].index("dfx_outputs")
            return str(Path(*parts[:at]))
    return str(d)


# --------------------------------------------------------------------------- device clocks


# --------------------------------------------------------------------------- one run, time >= 0


# --------------------------------------------------------------------------- reports


