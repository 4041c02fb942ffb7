"""Device views on the merged timeline, against Simpler's own converter output stored beside
each real capture (`merged_swimlane.json`): at least its slices, arrows of each kind and
counter samples, with the same task times; plus what the converter lacks (setup waits,
utilisation, per-kernel totals), and `--views` / `--flows`. Loading every capture with every
view in the offline Perfetto UI: `test_e2e_perfetto_merge.py`."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from merge_inputs import CALIBRATED, CASES, FIXTURES

from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.lay_out.device_labels import kernel_name

CONVERTER_FLOW_NAMES = ("dependency", "dispatch", "complete", "submit→dispatch", "complete→ready")


def converter(case: str) -> list[dict]:
    return json.loads((FIXTURES / case / "merged_swimlane.json").read_text())["traceEvents"]


def records(case: str) -> dict:
    return json.loads((FIXTURES / case / "chip_swimlane_records.json").read_text())


def flows_by_name(tl) -> collections.Counter:
    c = collections.Counter()
    for f in tl.flows:
        c[f.name] += len(f)
    return c


def block(tl, cat: str):
    (b,) = [b for b in tl.blocks if b.cat == cat]
    return b


def arg(b, key: str) -> np.ndarray:
    return next(c.values for c in b.args if c.key == key)


@pytest.mark.parametrize("case", CASES)
def test_at_least_the_converters_slices_arrows_of_each_kind_and_counter_samples(case):
    conv = converter(case)
    tl = merge_traces([FIXTURES / case]).timeline
    assert tl.slice_count >= sum(e["ph"] == "X" for e in conv)
    ours = flows_by_name(tl)
    theirs = collections.Counter(e["name"] for e in conv if e["ph"] == "s")
    assert set(theirs) <= set(CONVERTER_FLOW_NAMES)
    for name, n in theirs.items():
        assert ours[name] >= n, name
        if name != "complete":   # ours: one per task row (theirs: per SPMD anchor)
            assert ours[name] == n, name
    samples = sum(e["ph"] == "C" for e in conv)
    queue = [c for c in tl.counters if c.name.startswith("shared_ready_queue ")]
    if samples:
        assert [c.name for c in queue] == [f"shared_ready_queue {t}" for t in ("AIC", "AIV", "MIX")]
        assert all(len(c.ts_ns) == samples for c in queue)
    assert sum(len(c.ts_ns) for c in tl.counters) >= samples
    # each kind of arrow its own category, so Perfetto can filter them
    cats = {f.name: f.cat for f in tl.flows}
    assert len(set(cats.values())) == len(cats)


@pytest.mark.parametrize("case", CASES)
def test_task_times_are_the_converters_to_the_ns(case):
    """Worker bars (receive, kernel start, end) and Scheduler view bars (dispatch, finish)
    equal the converter's, up to one offset per capture (its origin is its first time
    point, ours the host clock): exactly without anchors, within 1 ns calibrated."""
    tl = merge_traces([FIXTURES / case]).timeline
    kern, ours_sv = block(tl, "aicore"), None
    if any(b.cat == "scheduler_view" for b in tl.blocks):
        ours_sv = block(tl, "scheduler_view")
    setups = np.sort(block(tl, "aicore_setup").start_ns)

    def ours(b):
        out = collections.defaultdict(list)
        for t, c, s, d in zip(arg(b, "task_id").tolist(), arg(b, "core_id").tolist(),
                              b.start_ns.tolist(), b.dur_ns.tolist()):
            out[(t, c)].append((s, s + d))
        return out

    o_k = ours(kern)
    o_s = ours(ours_sv) if ours_sv is not None else {}
    theirs = collections.defaultdict(list)
    for e in converter(case):
        if e["ph"] == "X" and e["pid"] in (3, 4):
            core = int(re.search(r"CoreId:(\d+)", e["args"]["event-hint"]).group(1))
            theirs[(e["pid"], e["args"]["taskId"], core)].append(e)
    diffs = []
    for (pid, task, core), evs in theirs.items():
        evs.sort(key=lambda e: e["ts"])
        mine = sorted((o_k if pid == 4 else o_s)[(task, core)])
        assert len(mine) == len(evs)
        for e, (s, end) in zip(evs, mine):
            c_start, c_end = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
            diffs.append(end - c_end)
            if pid == 4:    # their bar: receive -> end; ours: setup (receive) + kernel
                kernel = round(e["args"]["kernel-duration-us"] * 1000)
                diffs.append(s - (c_end - kernel))
            else:
                diffs.append(s - c_start)
    assert len(diffs) >= 2 * len(records(case)["aicore_tasks"])
    spread = max(diffs) - min(diffs)
    assert spread <= (1 if case in CALIBRATED else 0), spread
    # the receive -> start waits start where the converter's bars do
    starts = np.sort([round(e["ts"] * 1000) + diffs[0] for (pid, _, _), evs in theirs.items()
                      if pid == 4 for e in evs if e["args"]["local_setup_us"] > 0])
    assert len(setups) == len(starts)
    assert np.abs(setups - starts).max() <= (1 if case in CALIBRATED else 0)


def aiv1_kernel_names(case: str) -> dict[tuple[int, int], str]:
    """(task, core) -> kernel name of each AIV1 block of a MIX task whose AIV subtasks run
    different kernels: Simpler's converter names those after AIV0's kernel, the merge after
    their own (the runtime pairs the AIV cores in core order: cluster c's AIV1 is the
    (2c+1)-th)."""
    deps = FIXTURES / case / "deps.json"
    if not deps.exists():
        return {}
    names = {}
    for name_map in (FIXTURES / case).glob("name_map_*.json"):
        names = {int(k): v for k, v in
                 json.loads(name_map.read_text())["callable_id_to_name"].items()}
    kernels = {int(t["task_id"]): t.get("kernel_ids") or [-1, -1, -1]
               for t in json.loads(deps.read_text())["tasks"]}
    aiv = [c for c, t in enumerate(records(case)["metadata"]["core_types"]) if t == "aiv"]
    out = {}
    for row in records(case)["aicore_tasks"]:
        core, task = row[0], row[1]
        _, aiv0, aiv1 = kernels.get(task, [-1, -1, -1])
        if core in aiv and aiv.index(core) % 2 and min(aiv0, aiv1) >= 0 and aiv0 != aiv1:
            out[(task, core)] = kernel_name(aiv1, names)
    return out


@pytest.mark.parametrize("case", CASES)
def test_task_and_submit_labels_are_the_converters(case):
    """Every kernel bar, Scheduler-view bar, orchestrator submit and scheduler phase is named
    as Simpler's converter names it (`MATMUL(r1t0)`, `PA_spmd(t2)`, `submit(r1t3)`,
    `dispatch(7)`), and each kernel and Scheduler-view bar's `task` arg is its task's
    display."""
    theirs = collections.defaultdict(collections.Counter)
    own_kernel = aiv1_kernel_names(case)
    for e in converter(case):
        if e["ph"] == "X":
            name = e["name"]
            if e["pid"] in (3, 4):      # an AIV1 block of a MIX task: its own kernel, not AIV0's
                hint = dict(f.split(":") for f in e["args"]["event-hint"].split(", "))
                fixed = own_kernel.get((e["args"]["taskId"], int(hint["CoreId"])))
                name = name if fixed is None else fixed + name[name.index("("):]
            theirs[{4: "aicore", 3: "scheduler_view", 2: "scheduler", 1: "orchestrator"}
                   .get(e["pid"])][name] += 1
    ours = collections.defaultdict(collections.Counter)
    tl = merge_traces([FIXTURES / case]).timeline
    same = {"host_orchestrator": "orchestrator", "host_h2d": "orchestrator"}
    for b in tl.blocks:
        ours[same.get(b.cat, b.cat)].update(b.names[k] for k in b.name.tolist())
        if b.cat in ("aicore", "scheduler_view"):
            labels = [b.names[k] for k in b.name.tolist()]
            assert [lab[lab.index("(") + 1:-1] for lab in labels] == \
                [a["task"] for a in b.row_args()]
    for cat in ("aicore", "scheduler_view", "orchestrator", "scheduler"):
        assert ours[cat] == theirs[cat], cat
    assert theirs["aicore"]


def phase_kind(tl, blk, row: int) -> str:
    return blk.names[blk.name[row]].split("(")[0]


@pytest.mark.parametrize("case", ["tmr_bgemm_case0_l4_depgen", "hbg_bgemm_l4_depgen",
                                  "tmr_spmd_paged_attention_b1_s128_l4_depgen"])
def test_each_arrow_joins_what_its_kind_says(case):
    tl = merge_traces([FIXTURES / case]).timeline
    by_kind = collections.defaultdict(list)
    for f in tl.flows:
        by_kind[f.name].append(f)
    for f in by_kind["dispatch"]:       # the dispatch phase containing the AICPU's dispatch
        assert f.src.cat == "scheduler" and f.dst.cat in ("aicore", "scheduler_view")
        disp = arg(f.dst, "dispatch_ts_ns") if f.dst.cat == "aicore" else f.dst.start_ns
        for s, d in zip(f.src_row.tolist(), f.dst_row.tolist()):
            assert phase_kind(tl, f.src, s) == "dispatch"
            assert f.src.start_ns[s] <= disp[d] <= f.src.start_ns[s] + f.src.dur_ns[s]
    for f in by_kind["complete"]:       # the complete phase that saw the finish
        assert f.dst.cat == "scheduler" and f.src.cat in ("aicore", "scheduler_view")
        fin = arg(f.src, "finish_ts_ns") if f.src.cat == "aicore" else \
            f.src.start_ns + f.src.dur_ns
        for s, d in zip(f.src_row.tolist(), f.dst_row.tolist()):
            assert phase_kind(tl, f.dst, d) == "complete"
            assert f.dst.start_ns[d] <= fin[s] <= f.dst.start_ns[d] + f.dst.dur_ns[d]
    for f in by_kind["complete→ready"]:  # released before the consumer was dispatched
        for s, d in zip(f.src_row.tolist(), f.dst_row.tolist()):
            assert phase_kind(tl, f.src, s) == "complete"
            assert phase_kind(tl, f.dst, d) == "dispatch"
            assert f.src.start_ns[s] + f.src.dur_ns[s] <= f.dst.start_ns[d] + f.dst.dur_ns[d]
    for f in by_kind["submit→dispatch"]:
        assert f.src.cat in ("orchestrator", "host_orchestrator")
        for s, d in zip(f.src_row.tolist(), f.dst_row.tolist()):
            assert f.src.names[f.src.name[s]].startswith("submit(")
            assert phase_kind(tl, f.dst, d) == "dispatch"
    assert by_kind["dispatch"] and by_kind["complete"] and by_kind["submit→dispatch"]


def test_ready_queue_counters_are_the_depths_the_phases_saw():
    case = "tmr_mixed_example_case1_l4_depgen"
    tl = merge_traces([FIXTURES / case]).timeline
    want = sorted(tuple(p["shared_at_end"]) for th in records(case)["aicpu_scheduler_phases"]
                  for p in th if p["kind"] in ("complete", "dispatch"))
    queue = {c.name.split()[-1]: c for c in tl.counters if c.name.startswith("shared_ready")}
    got = sorted(zip(*(queue[t].values.tolist() for t in ("AIC", "AIV", "MIX"))))
    assert got == want
    assert all(np.all(np.diff(c.ts_ns) >= 0) for c in queue.values())
    assert all(c.process.name.startswith(f"Device {case} · AICPU scheduler")
               for c in queue.values())


def test_utilisation_counters_add_up_to_each_cores_busy_time():
    case = "tmr_bgemm_case0_l4_depgen"
    tl = merge_traces([FIXTURES / case]).timeline
    kern = block(tl, "aicore")
    busy = [c for c in tl.counters if c.name.endswith(" busy")]
    width = busy[0].process.args["utilisation_bin_ns"]
    assert len(busy) == len(np.unique(arg(kern, "core_id")))
    for c in busy:
        core = int(c.name.split()[0].split("_")[1])
        sel = arg(kern, "core_id") == core
        total = int(kern.dur_ns[sel].sum())     # a core's tasks do not overlap here
        assert 0 <= c.values.min() and c.values.max() <= 1
        assert np.all(np.diff(c.ts_ns) == width)
        assert abs(float(c.values.sum()) * width - total) <= len(c.values) * width * 5e-5
        assert c.values[-1] == 0     # ends at the end of the last bin


def test_per_kernel_totals_in_the_kernel_lines_and_metadata():
    case = "tmr_bgemm_case0_l4_depgen"
    r = merge_traces([FIXTURES / case])
    rec = records(case)
    scale = 1e9 / rec["metadata"]["clock_freq_hz"]
    line = next(s for s in r.kernel_lines if " kernel GEMM (AIC): " in s)
    assert "500 tasks, 500 runs, device time total" in line
    (src,) = [s for s in r.timeline.metadata["sources"] if s.get("kernels")]
    gemm = next(k for k in src["kernels"] if k["kernel"] == "GEMM")
    kern = block(r.timeline, "aicore")
    names = np.array(kern.names, dtype=object)[kern.name]
    sel = np.array([n.startswith("GEMM(") for n in names])
    assert gemm["tasks"] == 500 and gemm["core_types"] == ["aic"]
    assert abs(gemm["total_ns"] - int(kern.dur_ns[sel].sum())) <= 500 * scale
    assert gemm["max_ns"] == pytest.approx(int(kern.dur_ns[sel].max()), abs=scale)


def test_the_host_orchestrator_is_called_what_simpler_calls_it():
    """Issue 22: a host-orchestrated run's own submits and H2D uploads sat in "Device r0d0 ·
    Orchestrator". They are host work on the host clock: Simpler's "Host Orchestrator"
    process (its Host_<n> and H2D lanes), exact, not a device view; the AICPU orchestrator of
    a device-orchestrated run stays "Device ... · Orchestrator" on the device clock."""
    for case in CALIBRATED:
        tl = merge_traces([FIXTURES / case]).timeline
        (proc,) = [p for p in tl.processes if "Orchestrator" in p.name]
        assert proc.name == f"{case} · Host Orchestrator" and not proc.estimated
        assert proc.args["alignment"]["status"] == "exact"
        lanes = {t.name for t in tl.tracks if t.process is proc}
        assert lanes == {"Host_0", "H2D"}
        cats = {b.cat for b in tl.blocks if b.tracks[b.track[0]].process is proc}
        assert cats == {"host_orchestrator", "host_h2d"}
        names = {e["args"]["name"] for e in converter(case) if e.get("name") == "process_name"
                 and e["pid"] == 1}
        assert "Host Orchestrator" in names      # Simpler's own converter, beside the capture
    tl = merge_traces([FIXTURES / "tmr_bgemm_case0_l4_depgen"]).timeline
    (proc,) = [p for p in tl.processes if "Orchestrator" in p.name]
    assert proc.name.startswith("Device tmr_bgemm_case0_l4_depgen · Orchestrator (contained")
    assert {t.name for t in tl.tracks if t.process is proc} == {"Orch_0"}


def test_views_and_flows_choose_what_is_drawn():
    case = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    full = merge_traces([case]).timeline
    names = {p.name.split(" · ")[1].split(" (")[0] for p in full.processes
             if p.name.startswith("Device")}
    assert names == {"AICore", "Scheduler view", "AICPU scheduler", "Orchestrator"}
    tl = merge_traces([case], views=["worker"], flows=["dependency", "dispatch"]).timeline
    assert {p.name.split(" · ")[1].split(" (")[0] for p in tl.processes
            if p.name.startswith("Device")} == {"AICore"}
    assert not tl.counters and {b.cat for b in tl.blocks if b.tracks[0].process.name
                                .startswith("Device")} == {"aicore"}
    # dispatch arrows need the scheduler view drawn: only dependency arrows remain
    assert flows_by_name(tl) == {"dependency": 750}
    none = merge_traces([case], views=["scheduler", "ready-queue"], flows=[]).timeline
    assert not none.flows and len(none.counters) == 3
    with pytest.raises(ValueError, match="unknown view 'gantt'"):
        merge_traces([case], views=["gantt"])


def test_cli_views_and_flows_options(tmp_path):
    out = tmp_path / "m.json"
    cmd = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
           str(FIXTURES / "tmr_vector_example_l4_depgen"), "-o", str(out), "-q"]
    ok = subprocess.run([*cmd, "--views", "worker,setup", "--flows", "none"],
                        check=False, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    events = json.loads(out.read_text())["traceEvents"]
    assert not [e for e in events if e["ph"] in ("s", "f", "C")]
    assert {e["cat"] for e in events if e["ph"] == "X" and e["pid"] != 0} >= {"aicore",
                                                                             "aicore_setup"}
    bad = subprocess.run([*cmd, "--flows", "dispatch,arrows"], check=False,
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "argument --flows: unknown flow 'arrows' (choose from dependency, " in bad.stderr
    assert "Traceback" not in bad.stderr


def test_all_captures_in_one_file_have_zero_overlaps_on_any_lane():
    """The converter's Scheduler view overlaps on the SPMD capture (8 import errors in
    Perfetto); ours puts a second dispatch of one core on its own lane."""
    tl = merge_traces([FIXTURES / c for c in CASES]).timeline
    by_track = collections.defaultdict(list)
    for s in tl.slices():
        by_track[id(s.track)].append((s.start_ns, s.end_ns))
    for rows in by_track.values():
        stack: list[int] = []
        for a, b in sorted(rows, key=lambda r: (r[0], -r[1])):
            while stack and stack[-1] <= a:
                stack.pop()
            assert not stack or b <= stack[-1]
            stack.append(b)


def _mutated_capture(tmp_path, mutate):
    src = FIXTURES / "tmr_bgemm_case0_l4_depgen"
    rec = records("tmr_bgemm_case0_l4_depgen")
    mutate(rec)
    (tmp_path / "chip_swimlane_records.json").write_text(json.dumps(rec))
    (tmp_path / "deps.json").write_bytes((src / "deps.json").read_bytes())
    return merge_traces([tmp_path])


def test_without_core_to_thread_the_phases_are_found_on_any_thread(tmp_path):
    r = _mutated_capture(tmp_path, lambda rec: rec["metadata"].pop("core_to_thread"))
    assert flows_by_name(r.timeline) == flows_by_name(
        merge_traces([FIXTURES / "tmr_bgemm_case0_l4_depgen" / n for n in
                      ("chip_swimlane_records.json", "deps.json")]).timeline)


def test_arrows_with_no_phase_to_bind_to_are_counted_not_guessed(tmp_path):
    def wrong_threads(rec):
        rec["metadata"]["core_to_thread"] = [7] * len(rec["metadata"]["core_to_thread"])
    r = _mutated_capture(tmp_path, wrong_threads)
    assert set(flows_by_name(r.timeline)) == {"dependency"}
    assert any("1000 dispatch arrows have no scheduler phase to bind to" in w
               for w in r.warnings)
