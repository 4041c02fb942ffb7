"""The merged run as Parquet tables: a round trip through the dataset directory gives back
the Timeline (counts, times, names, categories, args, flows, counters) on every real
capture, with a compile trace around it; nesting (depth, parent) is the one the tracks hold."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from merge_inputs import CASES, FIXTURES, compile_trace_around

from pypto.compile_profiling.timeline import format_for_path, write_timeline
from pypto.compile_profiling.timeline.write_parquet import (
    JSON_ARGS,
    read_parquet_dataset,
    write_parquet_dataset,
)
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.errors import OutputPathError


def _merged(case, tmp_path):
    trace = tmp_path / "trace.json"
    compile_trace_around(FIXTURES / case, trace)
    return merge_traces([str(trace), str(FIXTURES / case)]).timeline


def _expected_args(args: dict) -> dict:
    return {k: v for k, v in args.items() if v is not None}


def _read_args(row_args: dict | None, json_keys: set) -> dict:
    out = {}
    for k, v in (row_args or {}).items():
        if v is None:
            continue
        out[k] = json.loads(v) if k in json_keys else v
    return out


@pytest.mark.parametrize("case", CASES)
def test_round_trip_equals_the_timeline(case, tmp_path):
    tl = _merged(case, tmp_path)
    size = write_parquet_dataset(tl, tmp_path / "tables")
    assert size > 0
    got = read_parquet_dataset(tmp_path / "tables")
    assert got["slice"].num_rows == tl.slice_count
    assert got["flow"].num_rows == tl.flow_count
    assert got["process"].num_rows == len(tl.processes)
    assert got["thread"].num_rows == len(tl.tracks)
    assert got["counter"].num_rows == sum(len(c.ts_ns) for c in tl.counters)
    assert got["capture"].num_rows == 1
    json_keys = set()
    for f in (tmp_path / "tables" / "slice").glob("*/*.parquet"):
        meta = pq.read_schema(f).metadata or {}
        json_keys |= set(json.loads(meta.get(JSON_ARGS, b"[]")))
    slices = {r["id"]: r for r in got["slice"].to_pylist()}
    tracks = {r["utid"]: r for r in got["thread"].to_pylist()}
    procs = {r["upid"]: r for r in got["process"].to_pylist()}
    row = 0
    for block in tl.blocks:
        args = block.row_args()
        for i in range(len(block)):
            s = slices[row]
            tr = block.tracks[block.track[i]]
            assert (s["ts"], s["dur"], s["name"], s["category"]) == (
                int(block.start_ns[i]), int(block.dur_ns[i]), block.names[block.name[i]],
                block.cat)
            assert tracks[s["track_id"]]["name"] == tr.name
            assert procs[tracks[s["track_id"]]["upid"]]["name"] == tr.process.name
            assert _read_args(s["args"], json_keys) == _expected_args(args[i])
            row += 1
    # nesting: a parent is on the same track, one level up, and holds its child
    for s in slices.values():
        if s["parent_id"] is None:
            assert s["depth"] == 0
        else:
            p = slices[s["parent_id"]]
            assert p["track_id"] == s["track_id"] and p["depth"] == s["depth"] - 1
            assert p["ts"] <= s["ts"] and s["ts"] + s["dur"] <= p["ts"] + p["dur"]
    offsets, total = {}, 0
    for b in tl.blocks:
        offsets[id(b)] = total
        total += len(b)
    want = sorted((offsets[id(f.src)] + int(a), offsets[id(f.dst)] + int(b), f.name, f.cat)
                  for f in tl.flows for a, b in zip(f.src_row, f.dst_row))
    assert sorted((r["slice_out"], r["slice_in"], r["name"], r["category"])
                  for r in got["flow"].to_pylist()) == want
    counters = got["counter"].to_pydict()
    for j, c in enumerate(tl.counters):
        at = [k for k, t in enumerate(counters["track_id"]) if t == len(tl.tracks) + j]
        assert [counters["ts"][k] for k in at] == c.ts_ns.tolist()
        assert [counters["value"][k] for k in at] == c.values.astype(float).tolist()


def test_partitions_by_rank(tmp_path):
    cases = ["hbg_vector_example_l4_depgen", "tmr_vector_example_l4_depgen"]
    for r, case in enumerate(cases):
        shutil.copytree(FIXTURES / case, tmp_path / "dfx_outputs" / f"rank{r}" / "d0")
    tl = merge_traces([str(tmp_path / "dfx_outputs")]).timeline
    write_parquet_dataset(tl, tmp_path / "tables")
    parts = sorted(p.name for p in (tmp_path / "tables" / "slice").iterdir())
    assert parts == ["rank=0", "rank=1"]
    got = read_parquet_dataset(tmp_path / "tables")
    cap = got["capture"].to_pydict()
    assert sorted(zip(cap["rank"], cap["device"])) == [(0, 0), (1, 0)]
    per_rank = dict(zip(*got["slice"].group_by("rank").aggregate(
        [("id", "count")]).to_pydict().values()))
    alone = [merge_traces([str(FIXTURES / c)]).timeline.slice_count for c in cases]
    assert [per_rank[0], per_rank[1]] == alone


def test_format_from_the_extension_and_refusals(tmp_path):
    assert format_for_path("out/tables", "parquet") == "parquet"
    assert format_for_path("out/run.parquet") == "parquet"
    tl = merge_traces([str(FIXTURES / "tmr_vector_example_l1")]).timeline
    out = tmp_path / "run.parquet"
    assert write_timeline(tl, out) > 0
    assert (out / "slice").is_dir()
    write_timeline(tl, out)                  # a dataset of ours is replaced whole
    other = tmp_path / "mine"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(OutputPathError):
        write_timeline(tl, other, "parquet")
    assert (other / "keep.txt").read_text() == "x"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_tabled_column_with_absent_rows_reads_back_null():
    import numpy as np

    from pypto.compile_profiling.timeline.model import (
        ArgColumn,
        Process,
        SliceBlock,
        Timeline,
        Track,
    )
    from pypto.compile_profiling.timeline.write_parquet import timeline_tables

    p = Process(1, "p", 0)
    t = Track(2, p, "t", 0)
    block = SliceBlock("c", [t], np.zeros(3, np.int32), np.array([0, 10, 20]),
                       np.array([5, 5, 5]), ["a"], np.zeros(3, np.int32),
                       [ArgColumn("k", np.array([0, 1, 0]), np.array([True, False, True]),
                                  table=["x", "y"]),
                        ArgColumn("list", [{"a": 1}, None, [1, "b"]])])
    got = timeline_tables(Timeline([p], [t], [block]))["slice"][0][1]
    assert got.column("args").to_pylist() == [{"k": "x", "list": '{"a":1}'},
                                              {"k": None, "list": None},
                                              {"k": "x", "list": '[1,"b"]'}]
    assert json.loads(got.schema.metadata[JSON_ARGS]) == ["list"]


@pytest.mark.parametrize("how", ["dataset", "per-rank", "archive"])
def test_a_full_disk_names_the_output_never_our_staging(how, tmp_path, monkeypatch, capsys):
    """Outputs written as a tree (a dataset, a `--per-rank` directory, a ZIP of parts) are
    staged beside the target; a full disk must name what the user asked for, since the
    staging directory is gone when they read the line."""
    from pypto.compile_profiling.cli.merge_traces import main as merge_main

    real_fdopen = os.fdopen

    class Full(io.RawIOBase):
        def writable(self):
            return True

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def full_fdopen(fd, mode="r", *args, **kwargs):
        if "w" in mode:
            os.close(fd)
            return io.BufferedWriter(Full()) if "b" in mode else io.TextIOWrapper(
                io.BufferedWriter(Full()))
        return real_fdopen(fd, mode, *args, **kwargs)

    case = str(FIXTURES / "tmr_vector_example_l4_depgen")
    out = tmp_path / {"dataset": "ds", "per-rank": "pr", "archive": "c.zip"}[how]
    argv = {"dataset": [case, "-o", str(out), "--format", "parquet"],
            "per-rank": [case, "--per-rank", str(out)],
            "archive": ["--compare", case, case, "-o", str(out)]}[how]
    monkeypatch.setattr(os, "fdopen", full_fdopen)
    assert merge_main([*argv, "-q"]) == 1      # a write that failed (2: a usage mistake)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(str(out)), err
    assert "No space left on device" in err[0] and ".pypto-" not in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == []      # nothing left behind
