"""`pypto-merge-traces INPUT... --per-rank OUTDIR`: a distributed run merged rank by rank on
Dask distributed.

1. The driver reads what placement needs (`placement_read`, one Dask task per capture
   leaf: run logs, the records' metadata and time envelope) and the host inputs (compile
   traces, profiles), and `trace_merge.place.placement` decides every clock, as in one merge.
2. Each rank is then an independent task: it reads its capture leaves whole, lays them out
   under the driver's placement (`trace_merge.lay_out.layout.lay_out` of a plan holding only that
   rank's captures) and writes its Parquet partition (`tables/<table>/rank=<r>/`) and its
   Perfetto protobuf shard (`shards/<shard>-r<r>.pftrace`). Shard 0 is the host inputs
   (compile stages) and the trace metadata; it is written last, by the driver.
3. Each shard draws its ids from a range of its own: track uuids, packet sequence ids and
   flow ids (`write_proto`'s shard ranges), and fresh process/thread ids (a rank's device
   views and lanes: `FRESH_ID_BASE + shard * FRESH_IDS_PER_SHARD + n`, above every Linux
   pid); real OS pids and tids stay. So the shards concatenate byte for byte into one valid
   trace (`cat OUTDIR/shards/*.pftrace`, or `--merge-shards` -> `OUTDIR/merged.pftrace`).
4. A cluster summary closes the run: per rank its makespan (first to last AICore kernel),
   busy share of its cores, and the slowest rank and by how much.

What differs from one merge of the same inputs: the ids above, and what joins a rank to
the host inputs: no `kernel_codegen -> its tasks` arrows, and a run log whose process is
a compile process (an in-process run) is drawn as its own process of the same pid (the
trace processor shows them as one process). Slices, arrows within a rank, counters and
every time are the same (tests/compile_profiling/query/test_per_rank.py).

Tasks run on a local cluster of processes sized to the usable CPUs (one thread each, a
memory limit per worker), or on the cluster at `scheduler` (its workers must see the inputs
and OUTDIR at the same paths). The output directory is written as a hidden sibling and
renamed into place when complete.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import resource
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.compile_profiling.foundation.owned_dir import (
    check_replaceable,
    naming_output,
    replace_owned,
    stage_beside,
    write_manifest,
)
from pypto.compile_profiling.query import require
from pypto.errors import ProfileWriteError, TraceInputError

__all__ = ["FRESH_IDS_PER_SHARD", "FRESH_ID_BASE", "OUTPUT_MARKER", "PerRankResult",
           "RankStats", "cluster_summary", "merge_per_rank", "rank_stats"]

FRESH_ID_BASE = 1 << 22            # above Linux's largest pid_max (4,194,304)
FRESH_IDS_PER_SHARD = 1 << 16
OUTPUT_MARKER = "_pypto_per_rank"
MEMORY_SHARE = 0.9                 # of the machine's memory, split between the local workers


@dataclass
class RankStats:
    """One rank's device time (AICore kernels), as the `makespan` preset computes it."""

    label: str
    rank: int | None
    tasks: int
    cores: int
    first_ns: int
    last_ns: int
    busy_ns: int

    @property
    def makespan_ns(self) -> int:
        return self.last_ns - self.first_ns

    @property
    def busy_share(self) -> float:
        span = self.makespan_ns * self.cores
        return self.busy_ns / span if span > 0 else 0.0


@dataclass
class PerRankResult:
    out_dir: Path
    shards: list[Path]
    merged: Path | None
    stats: list[RankStats]
    summary_lines: list[str]          # every line, the cluster summary's last
    cluster_lines: list[str]          # the cluster summary alone
    warnings: list[str]
    counts: dict = field(default_factory=dict)     # slices, flows, counter samples, bytes
    workers: dict = field(default_factory=dict)    # worker address -> peak RSS (bytes)


# --------------------------------------------------------------------------- statistics

def rank_stats(timeline, label: str, rank: int | None) -> RankStats | None:
    """Makespan and busy time of a rank's AICore kernel bars (the union per core)."""
    starts, ends, cores, tasks = [], [], [], []
    for n, b in enumerate(timeline.blocks):
        if b.cat != "aicore" or not len(b):
            continue
        col = {c.key: c for c in b.args}
        starts.append(b.start_ns.astype(np.int64))
        ends.append((b.start_ns + b.dur_ns).astype(np.int64))
        cores.append(n * (1 << 20) + np.asarray(col["core_id"].values, np.int64))
        tasks.append(np.asarray(col["task_id"].values, np.int64))   # one block per capture
    if not starts:
        return None
    s, e, c = np.concatenate(starts), np.concatenate(ends), np.concatenate(cores)
    busy = 0
    order = np.lexsort((e, s, c))
    s, e, c = s[order], e[order], c[order]
    bounds = np.r_[0, np.flatnonzero(np.diff(c)) + 1, len(c)]
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        run_end = np.maximum.accumulate(e[lo:hi])
        new = np.ones(hi - lo, bool)
        new[1:] = s[lo + 1:hi] > run_end[:-1]
        heads = np.flatnonzero(new)
        tails = np.r_[heads[1:], hi - lo] - 1
        busy += int((run_end[tails] - s[lo:hi][heads]).sum())
    n_tasks = sum(len(np.unique(t)) for t in tasks)
    return RankStats(label, rank, n_tasks, len(np.unique(c)), int(s.min()), int(e.max()), busy)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def cluster_summary(stats: list[RankStats]) -> list[str]:
    """Per rank makespan and busy share; the slowest rank and by how much."""
    if not stats:
        return ["cluster: no AICore kernels in any rank"]
    lines = [f"cluster: {len(stats)} rank(s)"]
    for st in sorted(stats, key=lambda x: (x.rank is None, x.rank or 0, x.label)):
        lines.append(f"  {st.label}: makespan {_ms(st.makespan_ns)}, busy "
                     f"{100 * st.busy_share:.1f}% of {st.cores} cores, {st.tasks} tasks")
    spans = np.array([st.makespan_ns for st in stats], np.float64)
    slow = stats[int(np.argmax(spans))]
    fast = stats[int(np.argmin(spans))]
    median = float(np.median(spans))
    over = slow.makespan_ns - fast.makespan_ns
    lines.append(f"slowest: {slow.label}, {_ms(slow.makespan_ns)}: {_ms(over)} "
                 f"({100 * over / fast.makespan_ns if fast.makespan_ns else 0:.1f}%) longer "
                 f"than the fastest ({fast.label}), "
                 f"{100 * (slow.makespan_ns / median - 1) if median else 0:.1f}% over the median")
    return lines


# --------------------------------------------------------------------------- ids

def _fresh_ids(timeline, shard: int) -> None:
    """Move the shard's fresh process and lane ids into its own range (real ids stay)."""
    base = FRESH_ID_BASE + shard * FRESH_IDS_PER_SHARD
    n = 0
    for p in timeline.processes:
        if p.os_pid is None:
            p.pid, n = base + n, n + 1
    for t in timeline.tracks:
        if t.os_tid is None:
            t.tid, n = base + n, n + 1
    if n >= FRESH_IDS_PER_SHARD:
        raise ProfileWriteError(f"shard {shard}: {n} processes and lanes, more than the "
                                f"{FRESH_IDS_PER_SHARD} ids of a shard")


# --------------------------------------------------------------------------- tasks

def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _write_shard(timeline, stage: Path, shard: int, label: str, metadata: bool) -> dict:
    from pypto.compile_profiling.timeline.write_parquet import write_tables
    from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace

    _fresh_ids(timeline, shard)
    # one shard (the host's) holds the run's metadata, for all ranks
    pq_bytes = write_tables(timeline, stage / "tables", shard, keep_metadata=metadata)
    shard_path = stage / "shards" / f"{shard:05d}-{label}.pftrace"
    pf_bytes = write_perfetto_trace(timeline, shard_path, shard=shard, metadata=metadata)
    return {"shard": str(shard_path), "parquet_bytes": pq_bytes, "pftrace_bytes": pf_bytes,
            "slices": timeline.slice_count, "flows": timeline.flow_count,
            "counter_samples": sum(len(c.ts_ns) for c in timeline.counters)}


def _rank_task(shard: int, label: str, rank, plans: list, template, sel,
               stage: str) -> dict:
    """One rank: read its leaves whole, lay them out as placed (`template`: the driver's
    plan without its sources, holding every decision that is not a capture's own), write
    its shard."""
    import dataclasses

    from pypto.compile_profiling.foundation.gc_pause import gc_paused
    from pypto.compile_profiling.trace_merge.lay_out.layout import lay_out
    from pypto.compile_profiling.trace_merge.read import read_simpler as rs

    t0, c0 = time.perf_counter(), time.process_time()
    with gc_paused():
        for cp in plans:
            files = cp.capture.files
            cp.capture = rs.read_capture(files, converted=not files.records)
        plan = dataclasses.replace(template, captures=plans)
        timeline, summary, warnings, kernel_lines = lay_out(plan, sel)
        stats = rank_stats(timeline, label, rank)
        out = _write_shard(timeline, Path(stage), shard, label, metadata=False)
    out.update(label=label, rank=rank, summary=summary + kernel_lines, warnings=warnings,
               stats=stats,
               sources=timeline.metadata.get("sources", []),
               captures=timeline.metadata.get("captures", []),
               wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
               peak_rss=_peak_rss(), pid=os.getpid())
    return out


# --------------------------------------------------------------------------- the driver

def _split_inputs(inputs: list[str]) -> tuple[list[str], list]:
    """(host inputs for read_inputs, capture leaves) of the given paths."""
    from pypto.compile_profiling.foundation.input_files import stat_input
    from pypto.compile_profiling.trace_merge.read import read_simpler as rs

    host, leaves = [], []
    for raw in inputs:
        p = Path(raw)
        if not stat.S_ISDIR(stat_input(p).st_mode):    # special files refused here
            if rs.file_kind(p.name) not in (None, "listed_only"):
                raise TraceInputError(p, "--per-rank takes capture directories (dfx_outputs/, "
                                         "rank<r>/d<k>/, work dirs), not loose Simpler files")
            host.append(str(p))
            continue
        report = next((d for d in (p, p / "report") if (d / "trace.json").exists()
                       or (d / "pipeline_profile.json").exists()), None)
        if report is not None:
            host.append(str(report))
        if report is None or (p / "dfx_outputs").is_dir():
            leaves.extend(rs.discover_captures(p))
    if not leaves:
        raise TraceInputError(inputs[0], "no Simpler captures among the inputs (--per-rank "
                                         "merges a distributed run rank by rank)")
    return host, leaves


_OUTPUT_TITLE = "pypto-merge-traces --per-rank"
_OURS = re.compile(r"^(tables/[a-z_]+/rank=[^/]+/part-\d+\.parquet|tables/_pypto_tables|"
                   r"shards/\d+-[^/]+\.pftrace|merged\.pftrace)$")
_WHAT = "--per-rank output"


def _ours(relative: str) -> bool:
    """A file name a --per-rank output of ours has (for an older manifest listing none)."""
    return bool(_OURS.match(relative))


def _check_out_dir(out: Path) -> None:
    check_replaceable(out, OUTPUT_MARKER, _ours, _WHAT)


@contextlib.contextmanager
def _children_silent() -> Iterator[None]:
    """The processes started in the block (the local cluster's: Dask starts them from its
    own threads) get /dev/null as stderr. A terminal's Ctrl-C reaches the whole process
    group, so they see it too: they end without a word, and this process, which answers
    it, says the one line. Their failures reach us through Dask's futures, not stderr.
    Dask's own warnings in this process meanwhile (a dashboard port taken) go nowhere too,
    whether they are written to fd 2 or to a `sys.stderr` that is not fd 2."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    old = sys.stderr
    try:
        old.flush()
        os.dup2(null, 2)
        with open(os.devnull, "w") as quiet:
            sys.stderr = quiet
            try:
                yield
            finally:
                sys.stderr = old
    finally:
        old.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _sigint_blocked() -> Callable[[], None]:
    """Block SIGINT in this (the main) thread while the local cluster starts; returns what
    unblocks it. Dask's loop thread, made meanwhile, keeps it blocked, and so does every
    worker process started from that thread (a mask is inherited across fork and exec): a
    terminal's Ctrl-C then reaches this process alone, which tears the cluster down, instead
    of killing workers that Dask would start again mid-exit (their spawn cut short is a
    traceback). Elsewhere (another thread, no pthread_sigmask): nothing changes."""
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_sigmask")):
        return lambda: None
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    done = []

    def unblock() -> None:
        if not done:
            done.append(True)
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    return unblock


class _InProcess:
    """The part of a Dask client the merge uses, run here and now, one task after another:
    for inputs too small to pay for starting a cluster (`IN_PROCESS_BYTES`)."""

    def map(self, fn, items, pure=False):
        return [fn(x) for x in items]

    def submit(self, fn, *args, pure=False):
        return fn(*args)

    def gather(self, results):
        return results

    def run(self, fn):
        return {"in-process": fn()}

    def scheduler_info(self) -> dict:
        return {"workers": {"in-process": {}}}

    def close(self, timeout=None) -> None:
        pass


# Inputs smaller than this are merged in this process: a local cluster takes seconds to
# start and its workers import everything again, which a small run does not repay. The main
# job's work dir (0.1 MB of captures, 1 rank; 2 cores): in this process 0.59-0.74 s wall,
# on a local cluster of 2 workers 2.36-2.56 s, a plain merge 0.25-0.34 s (3 runs each).
IN_PROCESS_BYTES = 64 << 20


def _input_bytes(leaves: list) -> int:
    """Bytes of the capture files the ranks will read."""
    from pypto.compile_profiling.trace_merge.read.read_simpler import files_of

    total = 0
    for files in leaves:
        for f in files_of(files):
            with contextlib.suppress(OSError):
                total += os.stat(f).st_size
    return total


def _client(scheduler: str | None, workers: int | None, input_bytes: int = 0):
    """A Dask client: to `scheduler`, or to a new local cluster of processes, started
    silent (`_children_silent`), or none for small inputs (`_InProcess`: no scheduler or
    worker count given, and under `IN_PROCESS_BYTES`). Ctrl-C while a cluster starts: what
    was started is torn down. -> (client, cluster or None, what to say of it)."""
    if scheduler is None and workers is None and input_bytes < IN_PROCESS_BYTES:
        return _InProcess(), None, {"in_process": input_bytes}
    require("distributed", "pyarrow")
    import logging

    from distributed import Client, LocalCluster
    from distributed.system import MEMORY_LIMIT

    # distributed logs at INFO through its own loggers, which reach a root handler whatever
    # the root's level: only its errors are for the user
    logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler is not None:
        return Client(scheduler), None, {}
    n = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else os.cpu_count() or 1)
    limit = int(MEMORY_LIMIT * MEMORY_SHARE / n)
    with _children_silent():
        unblock = _sigint_blocked()
        try:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   memory_limit=limit, host="127.0.0.1",
                                   dashboard_address=None,
                                   silence_logs=logging.CRITICAL)   # failures: ours to tell
        except BaseException as e:
            unblock()
            if isinstance(e, KeyboardInterrupt):
                # torn down while stderr is still /dev/null: Dask's threads may start a
                # worker after the interrupt, and a worker whose parent stopped mid-spawn
                # says so
                _quiet_teardown(None, None)
            raise
    try:
        unblock()           # a Ctrl-C while the cluster started is raised from here on
        why = (f"--workers {workers}" if workers is not None else
               f"{input_bytes / 2**20:.0f} MB of captures, over {IN_PROCESS_BYTES >> 20} MB")
        return Client(cluster), cluster, {"workers": n, "memory_limit": limit, "why": why}
    except KeyboardInterrupt:
        with _children_silent():
            _quiet_teardown(None, cluster)
        raise


def _quiet_teardown(client, cluster) -> None:
    """After Ctrl-C: close the client and the local cluster without a word (Dask reports a
    cancelled gather and a closing cluster as errors, none of them ours, also from its
    exit hook for a cluster cut short while starting), then make sure no process of the
    cluster is left running."""
    import atexit
    import logging
    import multiprocessing

    from distributed.deploy import spec

    logging.disable(logging.CRITICAL)        # for good: the process is on its way out
    atexit.unregister(spec.close_clusters)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close(timeout=2)
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close(timeout=5)
    for child in multiprocessing.active_children():
        child.terminate()
        child.join(2)
        if child.is_alive():
            child.kill()
            child.join()


def merge_per_rank(inputs: list[str | os.PathLike], out_dir: str | os.PathLike, *,
                   scheduler: str | None = None, workers: int | None = None,
                   merge_shards: bool = False, offset_us: float | None = None,
                   views=None, flows=None, align: str = "clock",
                   progress=None) -> PerRankResult:
    """Merge `inputs` rank by rank into `out_dir` (see the module docstring)."""
    require("pyarrow", "duckdb")         # and distributed, when a cluster is used
    from pypto.compile_profiling.query.placement_read import placement_capture
    from pypto.compile_profiling.timeline.write_parquet import DATASET_MARKER, DATASET_TITLE
    from pypto.compile_profiling.trace_merge.place.placement import place
    from pypto.compile_profiling.trace_merge.read.read_inputs import Inputs, read_inputs
    from pypto.compile_profiling.trace_merge.views import (
        DERIVED_VIEWS,
        FLOWS,
        VIEWS,
        Selection,
        parse_names,
    )

    say = progress or (lambda _msg: None)
    # the analysis's views (critical path, overhead) are not drawn per rank
    sel = Selection(
        (frozenset(VIEWS) if views is None else parse_names(views, VIEWS, "views"))
        - frozenset(DERIVED_VIEWS),
        frozenset(FLOWS) if flows is None else parse_names(flows, FLOWS, "flows"))
    out = Path(out_dir)
    _check_out_dir(out)
    host_paths, leaves = _split_inputs([str(p) for p in inputs])
    host = read_inputs(host_paths) if host_paths else Inputs()
    client, cluster, local = _client(scheduler, workers, _input_bytes(leaves))
    stage = None
    interrupted = False
    try:
        stage = stage_beside(out)
        say(f"reading what placement needs of {len(leaves)} capture(s)")
        envelopes = client.gather(client.map(placement_capture, leaves, pure=False))
        inputs_ = Inputs(host.traces, host.reports, envelopes)
        plan = place(inputs_, offset_us=offset_us, align=align)
        results = _rank_results(client, plan, sel, stage, say)
        workers_rss = client.run(_peak_rss)
        say("writing the host shard and the metadata")
        host_out, summary, stats, lines, timeline = _host_shard(plan, sel, results, stage)
        shards = sorted((stage / "shards").glob("*.pftrace"))
        if merge_shards:
            _concatenate(shards, stage / "merged.pftrace")
        write_manifest(stage / "tables", DATASET_MARKER, DATASET_TITLE)
        write_manifest(stage, OUTPUT_MARKER, _OUTPUT_TITLE)
        replace_owned(stage, out, OUTPUT_MARKER, _ours, _WHAT)
    except (ProfileWriteError, OSError) as e:
        raise naming_output(e, stage, out) from e
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if interrupted:
            with _children_silent():        # a worker restarted meanwhile says nothing
                _quiet_teardown(client, cluster)
        else:
            client.close()
            if cluster is not None:
                cluster.close()
        if stage is not None and stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    every = [host_out, *results]
    counts = {k: sum(r[k] for r in every) for k in ("slices", "flows", "counter_samples",
                                                     "parquet_bytes", "pftrace_bytes")}
    summary_all = _summary(summary, results, local)
    return PerRankResult(out, [out / "shards" / p.name for p in shards],
                         out / "merged.pftrace" if merge_shards else None, stats,
                         summary_all + lines, lines, timeline.metadata["warnings"], counts,
                         {"tasks": [{k: r[k] for k in ("label", "pid", "wall_s", "cpu_s",
                                                       "peak_rss")} for r in results],
                          "workers_peak_rss": workers_rss})


def _rank_results(client, plan, sel, stage: Path, say) -> list[dict]:
    """Each rank (or capture leaf) merged by a Dask task into its own shard and tables;
    -> the tasks' results, in shard order."""
    from pypto.compile_profiling.trace_merge.lay_out.layout_host import run_host_key

    groups: dict = {}
    for cp in plan.captures:
        f = cp.capture.files
        key = ("rank", f.rank) if f.rank is not None else ("leaf", f.directory)
        groups.setdefault(key, []).append(cp)
    (stage / "tables").mkdir()
    (stage / "shards").mkdir()
    say(f"merging {len(groups)} rank(s) on {len(client.scheduler_info()['workers'])} "
        "worker(s)")
    run_ranks: dict[tuple[str, int], list[str]] = {}
    for cp in plan.captures:       # by host and pid: two hosts may reuse a pid
        if cp.run_pid is not None and (cp.capture.records is not None
                                       or cp.capture.converted):
            run_ranks.setdefault((run_host_key(cp), cp.run_pid), []).append(cp.label)
    plan.run_ranks = run_ranks
    template = dataclasses.replace(plan, traces=[], reports=[], captures=[], warnings=[])
    futures = []
    for shard, (key, cps) in enumerate(groups.items(), start=1):
        rank = key[1] if key[0] == "rank" else None
        label = f"r{rank}" if rank is not None else cps[0].label
        futures.append(client.submit(_rank_task, shard, label, rank, cps, template, sel,
                                     str(stage), pure=False))
    results = client.gather(futures)
    return results


def _host_shard(plan, sel, results: list[dict], stage: Path):
    """The host side laid out once, with every rank's sources, the cluster summary and the
    warnings in its metadata, written as shard 0; -> (its counts, the host summary, the
    ranks' stats, the cluster summary's lines, its timeline)."""
    from pypto.compile_profiling.foundation.gc_pause import gc_paused
    from pypto.compile_profiling.trace_merge.lay_out.layout import lay_out

    with gc_paused():
        host_plan = dataclasses.replace(plan, captures=[])
        timeline, summary, warnings, _ = lay_out(host_plan, sel)
        stats = [r["stats"] for r in results if r["stats"] is not None]
        lines = cluster_summary(stats)
        timeline.metadata["sources"] = timeline.metadata.get("sources", []) + [
            s for r in results for s in r["sources"]]
        timeline.metadata["per_rank"] = {
            "shards": [Path(r["shard"]).name for r in results],
            "ranks": [{"label": s.label, "rank": s.rank, "makespan_ns": s.makespan_ns,
                       "busy_share": round(s.busy_share, 6), "tasks": s.tasks,
                       "cores": s.cores} for s in stats],
            "cluster_summary": lines}
        timeline.metadata["warnings"] = list(dict.fromkeys(
            warnings + [w for r in results for w in r["warnings"]]))
        host_out = _write_shard(timeline, stage, 0, "host", metadata=True)
    return host_out, summary, stats, lines, timeline


def _summary(summary: list[str], results: list[dict], local: dict) -> list[str]:
    """The host's and every rank's summary lines, and where the merge ran."""
    summary_all = summary + [ln for r in results for ln in r["summary"]]
    if "in_process" in local:
        summary_all.append(
            f"merged in this process: {len(results)} rank(s), {local['in_process'] / 2**20:.1f}"
            f" MB of captures (under {IN_PROCESS_BYTES >> 20} MB, less work than starting a "
            "cluster; --workers N or --scheduler ADDRESS distribute it)")
    elif local:
        summary_all.append(f"local Dask cluster: {local['workers']} worker process(es), "
                           f"memory limit {local['memory_limit'] / 2**30:.1f} GiB each "
                           f"({local.get('why', 'as asked')})")
    return summary_all


def _concatenate(shards: list[Path], target: Path) -> None:
    """The shards, byte for byte one after the other (one valid trace)."""
    from pypto.compile_profiling.foundation.atomic_io import atomic_writer

    with atomic_writer(target, "wb") as f:
        for p in shards:
            with open(p, "rb") as src:
                shutil.copyfileobj(src, f, 1 << 20)
