"""`pypto-merge-traces --per-rank` on a real Dask `LocalCluster` of 2 worker processes: a
two-rank layout built from real captures (`rank0/d0` calibrated, `rank1/d0` estimated) gives
the same slices, flows, counters and times as the single-process merge of the same inputs;
its protobuf shards have ids of their own and concatenate into one trace that the offline
Perfetto UI loads without an import error; the cluster summary is the makespan preset's."""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest
from merge_inputs import FIXTURES, compile_trace_around
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from pypto.compile_profiling.cli.merge_traces import main as merge_main
from pypto.compile_profiling.query.per_rank import merge_per_rank
from pypto.compile_profiling.query.run import run_preset
from pypto.compile_profiling.query.tables import open_run, tables_of
from pypto.compile_profiling.timeline.write_parquet import read_parquet_dataset
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.errors import OutputPathError

RANKS = ["hbg_benchmark_bgemm_case0_l4_depgen", "tmr_bgemm_case0_l4_depgen"]


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0", scheduler_kwargs={"dashboard": False}) as c:
        yield c


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ranks") / "dfx_outputs"
    for r, case in enumerate(RANKS):
        shutil.copytree(FIXTURES / case, root / f"rank{r}" / "d0")
    return root


@pytest.fixture(scope="module")
def per_rank(layout, cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "merged"
    result = merge_per_rank([layout], out, scheduler=cluster.scheduler_address,
                            merge_shards=True)
    return result


def _keyed(t: dict):
    """Slices, flows and counters by what they are (names, times, args), not by id."""
    procs = {r["upid"]: r["name"] for r in t["process"].to_pylist()}
    tracks = {r["utid"]: (procs[r["upid"]], r["name"]) for r in t["thread"].to_pylist()}
    key_of, slices = {}, collections.Counter()
    for r in t["slice"].to_pylist():
        args = {k: v for k, v in (r.get("args") or {}).items() if v is not None}
        key = (*tracks[r["track_id"]], r["name"], r["category"], r["ts"], r["dur"],
               r["depth"], json.dumps(args, sort_keys=True))
        key_of[r["id"]] = key
        slices[key] += 1
    flows = collections.Counter((key_of[r["slice_out"]], key_of[r["slice_in"]], r["name"])
                                for r in t["flow"].to_pylist())
    names = {r["id"]: (procs[r["upid"]], r["name"]) for r in t["counter_track"].to_pylist()}
    counters = collections.Counter((names[r["track_id"]], r["ts"], r["value"])
                                   for r in t["counter"].to_pylist())
    return slices, flows, counters


def test_per_rank_equals_the_single_process_merge(layout, per_rank):
    single = _keyed(tables_of(merge_traces([str(layout)]).timeline))
    got = _keyed(read_parquet_dataset(per_rank.out_dir / "tables"))
    for what, a, b in zip(("slices", "flows", "counters"), single, got):
        assert sum(a.values()) > 1000, what
        assert a == b, what
    assert per_rank.counts["slices"] == sum(single[0].values())
    parts = sorted(p.name for p in (per_rank.out_dir / "tables" / "slice").iterdir())
    assert parts == ["rank=0", "rank=1", "rank=none"]     # none: the host shard (empty here)


def _packets(path: Path):
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    return trace.packet


def test_shards_have_their_own_ids_and_concatenate_byte_for_byte(per_rank):
    shards = per_rank.shards
    assert [p.name for p in shards] == ["00000-host.pftrace", "00001-r0.pftrace",
                                        "00002-r1.pftrace"]
    assert per_rank.merged.read_bytes() == b"".join(p.read_bytes() for p in shards)
    seqs, uuids, pids, flows = [], [], [], []
    for p in shards:
        packets = _packets(p)
        seqs.append({k.trusted_packet_sequence_id for k in packets
                     if k.trusted_packet_sequence_id})
        uuids.append({k.track_descriptor.uuid for k in packets if k.HasField("track_descriptor")})
        pids.append({k.track_descriptor.process.pid for k in packets
                     if k.track_descriptor.HasField("process")})
        flows.append({f for k in packets for f in k.track_event.flow_ids})
    for sets in (seqs, uuids, pids, flows):
        assert all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])
    assert sum(len(s) for s in flows) == per_rank.counts["flows"]
    metadata = [p for p in shards if any(k.HasField("chrome_events") for k in _packets(p))]
    assert [p.name for p in metadata] == ["00000-host.pftrace"]
    names = read_parquet_dataset(per_rank.out_dir / "tables")["metadata"]["name"].to_pylist()
    assert len(names) == len(set(names)) and "per_rank" in names


def test_cluster_summary_is_the_makespan_preset(per_rank):
    rows = run_preset(open_run([per_rank.out_dir]), "makespan").records()
    by_rank = {r["rank"]: r for r in rows}
    assert sorted(by_rank) == [0, 1]
    for st in per_rank.stats:
        r = by_rank[st.rank]
        assert r["makespan_ms"] == pytest.approx(st.makespan_ns / 1e6, rel=1e-12)
        assert r["busy_share"] == pytest.approx(st.busy_share, rel=1e-9)
        assert (r["tasks"], r["cores"]) == (st.tasks, st.cores)
    slowest = max(per_rank.stats, key=lambda s: s.makespan_ns)
    line = next(ln for ln in per_rank.summary_lines if ln.startswith("slowest:"))
    assert line.startswith(f"slowest: r{slowest.rank}, ")
    assert rows[0]["rank"] == slowest.rank and rows[0]["behind_fastest_ms"] > 0


def test_the_cli_with_a_compile_trace_and_the_scheduler(layout, cluster, tmp_path, capsys):
    trace = tmp_path / "trace.json"
    compile_trace_around(FIXTURES / RANKS[0], trace)
    out = tmp_path / "out"
    code = merge_main([str(trace), str(layout), "--per-rank", str(out), "--scheduler",
                       cluster.scheduler_address])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "cluster: 2 rank(s)" in err and "slowest: r" in err
    host = read_parquet_dataset(out / "tables")
    categories = host["slice"]["category"].to_pylist()
    assert categories.count("compile") == 1 and categories.count("device") == 1
    assert categories.count("codegen") >= 2
    with pytest.raises(SystemExit) as exc:
        merge_main([str(layout), "--per-rank", str(out), "-o", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("x")
    code = merge_main([str(layout), "--per-rank", str(tmp_path / "taken"), "--scheduler",
                       cluster.scheduler_address])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines()[-1].startswith(str(tmp_path / "taken"))
    assert (tmp_path / "taken" / "keep.txt").read_text() == "x"


@pytest.mark.perfetto_ui
def test_concatenated_shards_load_in_the_perfetto_ui(per_rank, perfetto_ui):
    t = perfetto_ui.load(per_rank.merged)
    assert t.import_errors() == []
    assert t.slice_count() == per_rank.counts["slices"]
    assert t.flow_count() == per_rank.counts["flows"]
    names = t.process_names()
    assert any(n.startswith("Device r0") for n in names)
    assert any(n.startswith("Device r1") for n in names)
    assert len([n for n in names if n.startswith("Device ")]) == len(
        {p for p in names if p.startswith("Device ")})


def test_a_bad_capture_is_one_line_and_nothing_written(cluster, tmp_path, capsys):
    leaf = tmp_path / "dfx_outputs" / "rank0" / "d0"
    shutil.copytree(FIXTURES / "tmr_vector_example_l1", leaf)
    records = leaf / "chip_swimlane_records.json"
    records.chmod(0o644)
    records.write_text('{"chip_swimlane_level": 1, "metadata": {"clock_freq_hz": "x"}}')
    code = merge_main([str(tmp_path / "dfx_outputs"), "--per-rank", str(tmp_path / "out"),
                       "--scheduler", cluster.scheduler_address])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"{records}: $.metadata.clock_freq_hz: expected int, got str"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dfx_outputs"]


def test_todays_layout_paired_by_dispatch_identity_equals_the_single_merge(cluster, tmp_path):
    """Issue 23's layout through the per-rank driver: records in today's layout (7-column
    AICore rows, scheduler streams) and ranks paired with their host invocation by
    dispatch identity. The driver's placement read took neither (7 columns were refused,
    the sidecar was not read): each rank must land where the single merge puts it."""
    import orjson
    from host_log_rewrite import multi_rank_tree
    from simpler_today import to_today

    multi_rank_tree(tmp_path)
    dfx = tmp_path / "dfx_outputs"
    for records in dfx.glob("rank*/d0/chip_swimlane_records.json"):
        records.write_bytes(orjson.dumps(to_today(orjson.loads(records.read_bytes()))))
    single_result = merge_traces([str(dfx)])
    reasons = [p.args.get("alignment", {}) for p in single_result.timeline.processes]
    assert any("paired by dispatch identity" in str(r) for r in reasons)
    result = merge_per_rank([dfx], tmp_path / "out", scheduler=cluster.scheduler_address)
    single = _keyed(tables_of(single_result.timeline))
    got = _keyed(read_parquet_dataset(result.out_dir / "tables"))
    for what, a, b in zip(("slices", "flows", "counters"), single, got):
        assert sum(a.values()) > 100, what
        assert a == b, what


def test_an_earlier_output_is_replaced_only_when_every_file_is_ours(layout, cluster, tmp_path):
    """The output directory written twice is replaced (its manifest lists every file); a
    user's notes or a capture kept in it stop the third write, and nothing is deleted."""
    out = tmp_path / "out"
    for _ in range(2):
        merge_per_rank([layout], out, scheduler=cluster.scheduler_address)
    listed = (out / "_pypto_per_rank").read_text().splitlines()
    assert listed[0] == "pypto-merge-traces --per-rank"
    assert sorted(listed[1:]) == sorted(p.relative_to(out).as_posix()
                                        for p in out.rglob("*") if p.is_file()
                                        and p.name != "_pypto_per_rank")
    (out / "notes.txt").write_text("mine")
    shutil.copytree(layout / "rank0", out / "rank0")
    kept = sorted(p for p in out.rglob("*") if p.is_file())
    with pytest.raises(OutputPathError, match="holds notes.txt and .* more, which the "
                                              "earlier --per-rank output here did not write"):
        merge_per_rank([layout], out, scheduler=cluster.scheduler_address)
    assert sorted(p for p in out.rglob("*") if p.is_file()) == kept


def test_two_hosts_reusing_a_pid_keep_their_own_ranks(cluster, tmp_path):
    """rank1's run log rewritten to the pid of rank0's process but on another host (its
    CLOCK_ANCHOR's wall clock 213 s off, so its times land on rank0's): one process per host,
    each named by its own rank, as the single merge names them (they were merged, keyed by
    the pid alone)."""
    import re

    root = tmp_path / "dfx_outputs"
    shutil.copytree(FIXTURES / "tmr_vector_example_l4_depgen", root / "rank0" / "d0")
    shutil.copytree(FIXTURES / "tmr_mixed_example_case1_l4_depgen", root / "rank1" / "d0")
    log = root / "rank1" / "d0" / "host_log.txt"
    text = log.read_text().replace("pid=22981", "pid=16547").replace("tid=22981", "tid=16547")
    # the anchor (mono 874229009130, wall 1795979133262674619) put 213.5 s earlier in wall
    # time: another host, whose run lands on rank0's
    text = re.sub(r"wall_ns=1795979133262674619",
                  f"wall_ns={1795979133262674619 - 213_500_000_000}", text)
    log.write_text(text)

    def simpler_hosts(tables) -> list[str]:
        return sorted(r["name"] for r in tables["process"].to_pylist()
                      if r["name"].startswith("Simpler host"))

    single = simpler_hosts(tables_of(merge_traces([str(root)]).timeline))
    out = merge_per_rank([root], tmp_path / "out", scheduler=cluster.scheduler_address)
    sharded = simpler_hosts(read_parquet_dataset(out.out_dir / "tables"))
    # the single merge also names the second process's host, to tell the two pids apart
    assert single == ["Simpler host r0d0 (pid 16547)",
                      "Simpler host r1d0 (pid 16547) (pid 16547 on r1d0 host)"]
    assert sharded == ["Simpler host r0d0 (pid 16547)", "Simpler host r1d0 (pid 16547)"]


@pytest.mark.parametrize("after_s", [0.5, 1.5, 2.5])
def test_ctrl_c_is_one_line_130_nothing_left_running_or_written(layout, tmp_path, after_s):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it (the local
    cluster's processes get it too), while the cluster starts or works: one line, 130,
    no Dask traceback, no process of the group left, no output or staging directory."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from repo_paths import REPO_ROOT

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "tools" / "merge_traces.py"),
                             str(layout), "--per-rank", str(out), "--workers", "2"],
                            cwd=REPO_ROOT,      # a local cluster, however small the input
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        time.sleep(after_s)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    # -SIGINT: the signal came while the interpreter shut down, the work done and said
    assert code in (0, 130, -signal.SIGINT) and "Traceback" not in err, (code, err)
    last = err.splitlines()[-1]
    if code != 130 or last == f"{out}: written, then interrupted by SIGINT":
        assert (out / "_pypto_per_rank").is_file()   # it finished first: written, whole
        return
    assert err.splitlines() == [f"{out}: not written (interrupted by SIGINT)"], err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:        # the group's processes are reaped by now
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a process of the merge's group is still running")
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if "pypto" in p.name] == []


def test_a_small_input_is_merged_in_this_process_and_says_why(layout, tmp_path):
    """The 3-rank layout is a few MB: starting a cluster would cost more than the merge. The
    result is the same as the cluster's, and the summary says where it ran and why."""
    from pypto.compile_profiling.query import per_rank as module

    out = tmp_path / "out"
    result = merge_per_rank([layout], out)
    line = next(ln for ln in result.summary_lines if ln.startswith("merged in this process"))
    assert f"under {module.IN_PROCESS_BYTES >> 20} MB" in line and "--workers N" in line
    assert result.workers["workers_peak_rss"].keys() == {"in-process"}
    single = merge_traces([layout])
    assert result.counts["slices"] == single.timeline.slice_count
