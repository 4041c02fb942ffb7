"""Several runs' logs beside one capture: the merge keeps its own run's, says which, never
draws another run's spans, and never fails because a log that is not its own is there."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from simpler_fixtures import FIXTURES

from pypto.compile_profiling.trace_merge import merge_traces
from pypto.runtime import RunConfig, run


def _runs(tmp_path, n: int, **config) -> list:
    """`n` runs of the slotted program into one work dir: (the work dir, every run's log
    text, the pid each ran under is the same: this process), the logs kept aside as they
    are written (the runner itself leaves only its own run's)."""
    from runtime_support import slotted_program

    work = tmp_path / "work"
    logs = []
    for _ in range(n):
        a = np.ones((64, 64), np.float32)
        run(slotted_program(), a, a, np.zeros_like(a),
            config=RunConfig(work_dir=str(work), enable_chip_swimlane=2, **config))
        (log,) = (work / "dfx_outputs").glob("host.*.log")
        logs.append(log.read_text())
    return work, logs


def test_a_rerun_leaves_no_earlier_runs_log_beside_its_capture(tmp_path):
    work, _ = _runs(tmp_path, 3)
    dfx = work / "dfx_outputs"
    assert len(list(dfx.glob("host.*.log"))) == 1
    assert (dfx / ".pypto_dfx_outputs").read_text().splitlines()[1:] == sorted(
        p.name for p in dfx.iterdir() if not p.name.startswith("."))


def test_a_file_the_runs_did_not_write_is_never_deleted(tmp_path):
    work, _ = _runs(tmp_path, 1)
    notes = work / "dfx_outputs" / "notes.txt"
    notes.write_text("mine")
    a = np.ones((64, 64), np.float32)
    from runtime_support import slotted_program

    from pypto.errors import ExecutionError

    with pytest.raises(ExecutionError, match="holds notes.txt, which the earlier a simulated "
                                             "run's dfx_outputs here did not write"):
        run(slotted_program(), a, a, np.zeros_like(a),
            config=RunConfig(work_dir=str(work), enable_chip_swimlane=2))
    assert notes.read_text() == "mine"


def _with_old_logs(work, logs, strip=None):
    """The last run's capture, its own log and the earlier runs' logs, in one directory
    (as a user's folder, or a runner that kept them); `strip`: a pattern removed from every
    log (an older writer without those attributes)."""
    dfx = work / "dfx_outputs"
    for i, text in enumerate(logs[:-1]):
        (dfx / f"host_log_{i}.txt").write_text(text)
    if strip is not None:
        for log in [*dfx.glob("*.log"), *dfx.glob("host_log_*.txt")]:
            log.write_text(re.sub(strip, "", log.read_text()))
    return dfx


def test_device_walls_cycles_pick_the_captures_own_log(tmp_path):
    work, logs = _runs(tmp_path, 3)
    dfx = _with_old_logs(work, logs)
    m = merge_traces([dfx])
    (own,) = dfx.glob("host.*.log")
    drawn = {s.track.process.args["source"] for s in m.timeline.slices()
             if s.cat == "simpler_host"}
    assert drawn == {str(own)}
    line = next(x for x in m.summary_lines if "this capture's run log, of 3" in x)
    assert "device_wall's cycles join the capture's records" in line
    assert "host_log_0.txt (device_wall's cycles do not join" in line
    assert not any("run log" in w for w in m.warnings if "placed without" in w)


def test_clock_anchors_pick_the_own_log_when_the_cycles_are_not_there(tmp_path):
    """host_build_graph captures carry clock anchors: the earlier runs' runner_runs do not
    hold the device time they give."""
    work, logs = _runs(tmp_path, 3)
    dfx = _with_old_logs(work, logs, strip=r" dev_id=\d+ dev_start_cycle=\d+ dev_end_cycle=\d+ "
                                          r"dev_cnt_hz=\d+")
    m = merge_traces([dfx])
    (own,) = dfx.glob("host.*.log")
    assert {s.track.process.args["source"] for s in m.timeline.slices()
            if s.cat == "simpler_host"} == {str(own)}
    assert any("runner_run holds the device time the clock anchors give" in x
               for x in m.summary_lines)


def test_runs_nothing_tells_apart_are_placed_without_a_log_never_with_a_wrong_one(tmp_path):
    """tensormap_and_ringbuffer (no anchors), the cycles stripped, no compile trace: only
    span containment is left, and the earlier run's log may hold the capture too (same shape)
    or not (its runner_run too short, on a busy machine). Either way the merge succeeds and
    draws the capture's own log or none, never the other; none is said."""
    work, logs = _runs(tmp_path, 2, runtime="tensormap_and_ringbuffer")
    dfx = _with_old_logs(work, logs, strip=r" dev_id=\d+ dev_start_cycle=\d+ dev_end_cycle=\d+ "
                                          r"dev_cnt_hz=\d+")
    m = merge_traces([dfx])
    (own,) = dfx.glob("host.*.log")
    drawn = {s.track.process.args["source"] for s in m.timeline.slices()
             if s.cat == "simpler_host"}
    assert drawn <= {str(own)}
    if not drawn:
        (w,) = [w for w in m.warnings if "no run log used" in w]
        assert "2 run logs fit it equally" in w and "never another run's" in w


def test_a_real_capture_beside_another_captures_log_keeps_its_own(tmp_path):
    """The real tmr_vector_example_l4_depgen with tmr_mixed_example_case1_l4_depgen's log
    beside its own: alone, the other log is refused (not one run); beside its own, left out."""
    cap = tmp_path / "cap"
    shutil.copytree(FIXTURES / "tmr_vector_example_l4_depgen", cap)
    shutil.copy(FIXTURES / "tmr_mixed_example_case1_l4_depgen" / "host_log.txt",
                cap / "host_log_other.txt")
    m = merge_traces([cap])
    assert {s.track.process.args["source"] for s in m.timeline.slices()
            if s.cat == "simpler_host"} == {str(cap / "host_log.txt")}
    line = next(x for x in m.summary_lines if "this capture's run log, of 2" in x)
    assert "host_log_other.txt (none of its invocations can hold the capture" in line
