"""Render a `Timeline` as tables: Arrow in memory (`timeline_tables`), a Parquet dataset
directory on disk (`write_parquet_dataset`). The schema is documented in docs/tables.md.

Tables and columns follow Perfetto's trace processor where it has one (`process`, `thread`,
`slice`, `flow`, `counter_track`, `counter`, `metadata`), plus `capture` (one row per
Simpler capture: rank, device, alignment, its files) and `kernel` (kernel names by id per
capture). Every column is built from the model's NumPy arrays by Arrow (`pa.array`,
`take`, `StructArray.from_arrays`); only args that the model itself holds as Python
values (free-form compile stage args, JSON-valued columns) are converted value by value.

On disk: `<dir>/<table>/rank=<r>/part-<shard>.parquet` (`rank=none` for rows of no rank:
compile processes, single-capture runs), one row group per slice block. Ids are unique in a
dataset made of several shards (`shard`: the per-rank merge writes one shard per rank):
process, track and capture ids are `shard << 32 | index`, slice ids `shard << 40 | row`,
row being the slice's position in the timeline's blocks (as the protobuf writer counts).
The files of one table may differ in their `args` fields: read them with DuckDB's
`read_parquet(..., union_by_name = true)`, which unites the struct fields.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np

from pypto.compile_profiling.foundation.owned_dir import (
    check_replaceable,
    replace_owned,
    stage_beside,
    write_manifest,
    writing_into,
)
from pypto.compile_profiling.timeline.json_values import dumps_strict
from pypto.compile_profiling.timeline.model import ArgColumn, SliceBlock, Timeline

__all__ = ["DATASET_MARKER", "DATASET_TITLE", "TABLES", "TABLE_COLUMNS", "TABLE_COLUMN_KINDS",
           "is_dataset_file", "partition_name", "read_parquet_dataset", "timeline_tables", "write_parquet_dataset", "write_tables"]

TABLES = ("process", "thread", "slice", "flow", "counter_track", "counter", "capture",
          "kernel", "metadata")
DATASET_MARKER = "_pypto_tables"     # the dataset's manifest: what wrote it, its files
# the columns each table always has (docs/tables.md); a reader checks them before it queries
TABLE_COLUMNS = {
    "process": ("rank", "upid", "pid", "os_pid", "name", "sort_index", "estimated",
                "capture_id", "args"),
    "thread": ("rank", "utid", "tid", "os_tid", "name", "upid", "sort_index", "is_thread"),
    "slice": ("rank", "id", "ts", "dur", "track_id", "category", "name", "depth",
              "parent_id"),
    "flow": ("rank", "slice_out", "slice_in", "name", "category"),
    "counter_track": ("rank", "id", "name", "upid", "unit"),
    "counter": ("rank", "track_id", "ts", "value"),
    "capture": ("rank", "id", "device", "label"),
    "kernel": ("rank", "capture_id", "kernel_id", "name"),
    "metadata": ("rank", "name", "value"),
}
# what kind of value each of those columns holds (a reader refuses a file that disagrees, naming
# it, before DuckDB fails on the mix without a file name): "int", "float" (ints read too),
# "string", "bool"; every other column is "int" but these
COLUMN_KINDS = {
    "name": "string", "args": "string", "category": "string", "unit": "string",
    "label": "string", "value": "string", "estimated": "bool", "is_thread": "bool",
}
TABLE_COLUMN_KINDS = {
    table: {c: ("float" if (table, c) == ("counter", "value") else COLUMN_KINDS.get(c, "int"))
            for c in cols}
    for table, cols in TABLE_COLUMNS.items()
}
JSON_ARGS = b"pypto.json_args"        # schema metadata: arg keys whose values are JSON text
SHARD_BITS, SLICE_SHARD_BITS = 32, 40


def _pa():
    import pyarrow as pa

    return pa


def partition_name(rank: int | None) -> str:
    return "rank=none" if rank is None else f"rank={rank}"


# --------------------------------------------------------------------------- nesting

def _nesting(timeline: Timeline, track_of: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent (global row, -1 for none) of every slice, as Perfetto computes them
    for properly nested tracks: per track, slices sorted by (start, longest first; ties in
    block then row order, as the protobuf writer sorts them), the depth of a slice is the
    number of slices before it still open at its start (a slice ending where the next
    starts is closed). NumPy per track, no Python per row."""
    n = timeline.slice_count
    depth = np.zeros(n, np.int32)
    parent = np.full(n, -1, np.int64)
    if not n:
        return depth, parent
    track = np.concatenate([np.array([track_of[t] for t in b.tracks], np.int64)[b.track]
                            if len(b) else np.zeros(0, np.int64) for b in timeline.blocks])
    start = np.concatenate([b.start_ns for b in timeline.blocks]).astype(np.int64)
    dur = np.concatenate([b.dur_ns for b in timeline.blocks]).astype(np.int64)
    order = np.lexsort((-dur, start, track))
    t_sorted = track[order]
    bounds = np.flatnonzero(np.diff(t_sorted)) + 1
    for lo, hi in zip(np.r_[0, bounds].tolist(), np.r_[bounds, n].tolist()):
        rows = order[lo:hi]
        s, e = start[rows], start[rows] + dur[rows]
        k = len(rows)
        closed = np.searchsorted(np.sort(e), s, "right")        # ends <= each start
        # zero-length slices at the same start that come at or after a slice are counted in
        # `closed` though they are not before it: take them out again
        zero = np.r_[np.cumsum((e == s)[::-1])[::-1], 0]
        group_end = np.searchsorted(s, s, "right")
        d = np.arange(k) - closed + (zero[:k] - zero[group_end])
        d = np.maximum(d, 0)
        depth[rows] = d
        for level in range(1, int(d.max()) + 1 if k else 0):
            here = np.flatnonzero(d == level)
            above = np.flatnonzero(d == level - 1)
            if len(here) and len(above):
                at = np.searchsorted(above, here) - 1
                ok = at >= 0
                parent[rows[here[ok]]] = rows[above[at[ok]]]
    return depth, parent


# --------------------------------------------------------------------------- args

def _json_text(v) -> str | None:
    return None if v is None else dumps_strict(v).decode("utf-8")


def _infer(values: list):
    """Arrow type of a list of JSON values, and whether they go as JSON text."""
    pa = _pa()
    types = set(map(type, values)) - {type(None)}
    if not types:
        return pa.null(), False
    if types == {str}:
        return pa.string(), False
    if types == {bool}:
        return pa.bool_(), False
    if types == {int}:
        if all(-(1 << 63) <= v < (1 << 63) for v in values if v is not None):
            return pa.int64(), False
        return pa.string(), True
    if types <= {int, float}:
        return pa.float64(), False
    if types == {list} and all(type(x) is int and -(1 << 63) <= x < (1 << 63)
                               for v in values if v is not None for x in v):
        return pa.list_(pa.int64()), False      # as a 2-D int column gives (a queue depth)
    return pa.string(), True


def _column_type(col: ArgColumn):
    pa = _pa()
    v = col.values
    if col.table is not None:
        return pa.string(), False
    if isinstance(v, np.ndarray):
        kind = v.dtype.kind
        base = {"i": pa.int64(), "u": pa.int64(), "f": pa.float64(), "b": pa.bool_(),
                "U": pa.string()}.get(kind)
        if base is None:
            return pa.string(), True
        if v.ndim == 2:
            return pa.list_(base), False
        if kind == "u" and len(v) and int(v.max()) >= 1 << 63:
            return pa.string(), True
        return base, False
    return _infer(v)


def _unite(a, b):
    pa = _pa()
    if a is None or a == b or pa.types.is_null(b):
        return b if a is None or pa.types.is_null(a) else a
    if pa.types.is_null(a):
        return b
    if {a, b} == {pa.int64(), pa.float64()}:
        return pa.float64()
    return pa.string()


def _column_array(col: ArgColumn, rows: np.ndarray | None, typ, as_json: bool):
    """One arg column (rows `rows` of it, None: all) as an Arrow array of type `typ`."""
    pa = _pa()
    v = col.values
    mask = None
    if col.present is not None:
        mask = ~(col.present if rows is None else col.present[rows])
    if col.table is not None:       # null indices take nulls
        ix = v if rows is None else v[rows]
        return pa.array(col.table, pa.string()).take(pa.array(ix.astype(np.int64), mask=mask))
    if isinstance(v, np.ndarray):
        sel = v if rows is None else v[rows]
        if v.ndim == 2 and pa.types.is_string(typ):   # united with JSON text elsewhere
            return pa.array([_json_text(r) for r in sel.tolist()], pa.string(), mask=mask)
        if v.ndim == 2:
            flat = pa.array(np.ascontiguousarray(sel).reshape(-1))
            offsets = pa.array(np.arange(0, sel.size + 1, max(sel.shape[1], 1), dtype=np.int32)
                               if sel.shape[1] else np.zeros(len(sel) + 1, np.int32))
            arr = pa.ListArray.from_arrays(offsets, flat, mask=None if mask is None
                                           else pa.array(mask))
        elif as_json or v.dtype.kind == "u" and pa.types.is_string(typ):
            arr = pa.array([str(x) for x in sel.tolist()], pa.string(), mask=mask)
        else:
            arr = pa.array(sel, mask=mask)
        return arr if arr.type == typ else arr.cast(typ)
    vals = v if rows is None else [v[r] for r in rows.tolist()]
    if mask is not None:
        vals = [None if m else x for x, m in zip(vals, mask.tolist())]
    return _values_array(vals, typ, as_json)


def _values_array(vals: list, typ, as_json: bool):
    pa = _pa()
    if as_json or (pa.types.is_string(typ) and any(type(x) not in (str, type(None))
                                                   for x in vals)):
        return pa.array([x if type(x) is str else _json_text(x) for x in vals], pa.string())
    return pa.array(vals, typ)


class _BlockArgs:
    """The arg keys, types and values of one block (columns, then `extra_args` keys)."""

    def __init__(self, block: SliceBlock) -> None:
        self.block = block
        self.types: dict[str, tuple] = {}
        for col in block.args:
            self.types[col.key] = _column_type(col)
        self.extra: dict[str, list] = {}
        if block.extra_args is not None:
            keys = dict.fromkeys(k for d in block.extra_args if d for k in d)
            for k in keys:
                if k in self.types:
                    continue
                vals = [d.get(k) if d else None for d in block.extra_args]
                self.extra[str(k)] = vals
                self.types[str(k)] = _infer(vals)

    def arrays(self, rows: np.ndarray | None, fields: dict[str, tuple]) -> list:
        pa = _pa()
        n = len(self.block) if rows is None else len(rows)
        cols = {c.key: c for c in self.block.args}
        out = []
        for key, (typ, as_json) in fields.items():
            if key in cols:
                out.append(_column_array(cols[key], rows, typ, as_json))
            elif key in self.extra:
                vals = self.extra[key]
                if rows is not None:
                    vals = [vals[r] for r in rows.tolist()]
                out.append(_values_array(vals, typ, as_json))
            else:
                out.append(pa.nulls(n, typ))
        return out


# --------------------------------------------------------------------------- tables

class _Tables(dict):
    """{table name: [(rank, pa.Table), ...]}: what `_emit` gives, kept in memory."""

    def add(self, name: str, rank: int | None, table) -> None:
        self.setdefault(name, []).append((rank, table))


def _shown(text: str | None) -> str | None:
    """A path as text Arrow can store (undecodable bytes as U+FFFD: `streams.shown`)."""
    from pypto.compile_profiling.foundation.streams import shown

    return None if text is None else shown(text)


def timeline_tables(timeline: Timeline, *, shard: int = 0) -> dict[str, list]:
    """The timeline as Arrow tables: {table name: [(rank, pa.Table), ...]}, a slice block
    or more per rank partition (rank None: rows of no rank). See the module docstring."""
    out = _Tables()
    _emit(timeline, out, shard)
    return dict(out)


class _Sink:
    """Where `_emit` hands its tables: `out.add(name, rank, table)`, remembering which
    tables were made (the rest are added empty at the end)."""

    def __init__(self, out) -> None:
        self.out, self.made = out, set()

    def add(self, name: str, rank, table) -> None:
        self.made.add(name)
        self.out.add(name, rank, table)

    def split(self, table: str, ranks: list, columns: dict, schema=None) -> None:
        """Rows of `columns` (all of one length) into one table per rank in `ranks`."""
        pa = _pa()
        key = np.array([-1 if r is None else r for r in ranks], np.int64)
        columns = {"rank": pa.array(ranks, pa.int32()), **columns}
        whole = pa.table(columns, schema=schema)
        if not ranks:                 # an empty table keeps its columns
            self.add(table, None, whole)
        for r in sorted(set(ranks), key=lambda r: (r is not None, r or 0)):
            sel = np.flatnonzero(key == (-1 if r is None else r))
            self.add(table, r, whole if len(sel) == len(key) else whole.take(sel))


def _emit(timeline: Timeline, out, shard: int) -> None:
    """Every table of `timeline`, one piece at a time, to `out.add(name, rank, table)`:
    a slice block's table is made, handed on and dropped before the next is made."""
    base = shard << SHARD_BITS
    sink = _Sink(out)
    captures = timeline.metadata.get("captures") or []
    _process_tables(timeline, sink, base, captures)
    track_ix = {t: i for i, t in enumerate(timeline.tracks)}
    track_rank = [t.process.rank for t in timeline.tracks]
    _counter_tables(timeline, sink, base)
    _slices(timeline, sink.add, shard << SLICE_SHARD_BITS, base, track_ix, track_rank)
    _capture_tables(timeline, sink, base, captures)
    for name, schema in _empty_schemas().items():
        if name not in sink.made:   # every table exists, so that queries of it work
            sink.add(name, None, schema.empty_table())


def _process_tables(timeline: Timeline, sink: _Sink, base: int, captures: list) -> None:
    """`process` and `thread`."""
    pa = _pa()
    procs, tracks = timeline.processes, timeline.tracks
    proc_ix = {p: i for i, p in enumerate(procs)}
    by_source = {}
    for c in captures:
        for f in c.get("files", ()):
            by_source.setdefault(f, c["capture"])
    sink.split("process", [p.rank for p in procs], {
        "upid": pa.array([base + i for i in range(len(procs))], pa.int64()),
        "pid": pa.array([p.pid for p in procs], pa.int64()),
        "os_pid": pa.array([p.os_pid for p in procs], pa.int64()),
        "name": pa.array([p.name for p in procs], pa.string()),
        "sort_index": pa.array([p.sort_index for p in procs], pa.int64()),
        "estimated": pa.array([bool(p.estimated) for p in procs], pa.bool_()),
        "capture_id": pa.array([None if by_source.get(p.args.get("source")) is None
                                else base + by_source[p.args.get("source")]
                                if isinstance(p.args.get("source"), str) else None
                                for p in procs], pa.int64()),
        "args": pa.array([_json_text(p.args) for p in procs], pa.string()),
    })
    sink.split("thread", [t.process.rank for t in tracks], {
        "utid": pa.array([base + i for i in range(len(tracks))], pa.int64()),
        "tid": pa.array([t.tid for t in tracks], pa.int64()),
        "os_tid": pa.array([t.os_tid for t in tracks], pa.int64()),
        "name": pa.array([t.name for t in tracks], pa.string()),
        "upid": pa.array([base + proc_ix[t.process] for t in tracks], pa.int64()),
        "sort_index": pa.array([t.sort_index for t in tracks], pa.int64()),
        "is_thread": pa.array([t.os_tid is not None for t in tracks], pa.bool_()),
    })


def _counter_tables(timeline: Timeline, sink: _Sink, base: int) -> None:
    """`counter_track`, and `counter` a track at a time."""
    pa = _pa()
    counters, n_tracks = timeline.counters, len(timeline.tracks)
    proc_ix = {p: i for i, p in enumerate(timeline.processes)}
    sink.split("counter_track", [c.process.rank for c in counters], {
        "id": pa.array([base + n_tracks + j for j in range(len(counters))], pa.int64()),
        "name": pa.array([c.name for c in counters], pa.string()),
        "upid": pa.array([base + proc_ix[c.process] for c in counters], pa.int64()),
        "unit": pa.array([c.unit for c in counters], pa.string()),
    })
    for j, c in enumerate(counters):
        n = len(c.ts_ns)
        sink.add("counter", c.process.rank, pa.table({
            "rank": pa.nulls(n, pa.int32()) if c.process.rank is None
            else pa.array(np.full(n, c.process.rank, np.int32)),
            "track_id": pa.array(np.full(n, base + n_tracks + j, np.int64)),
            "ts": pa.array(c.ts_ns.astype(np.int64)),
            "value": pa.array(c.values.astype(np.float64)),
        }))


def _capture_tables(timeline: Timeline, sink: _Sink, base: int, captures: list) -> None:
    """`capture`, `kernel` and `metadata`."""
    pa = _pa()
    sink.split("capture", [c.get("rank") for c in captures], {
        "id": pa.array([base + c["capture"] for c in captures], pa.int64()),
        "device": pa.array([c.get("device") for c in captures], pa.int64()),
        "label": pa.array([_shown(c.get("label")) for c in captures], pa.string()),
        "directory": pa.array([_shown(c.get("directory")) for c in captures], pa.string()),
        "alignment": pa.array([c.get("alignment") for c in captures], pa.string()),
        "method": pa.array([c.get("method") for c in captures], pa.string()),
        "uncertainty_ns": pa.array([c.get("uncertainty_ns") for c in captures], pa.int64()),
        "clock_freq_hz": pa.array([c.get("clock_freq_hz") for c in captures], pa.int64()),
        "files": pa.array([[_shown(f) for f in c.get("files", [])] for c in captures],
                          pa.list_(pa.string())),
    })
    kernels = [(c.get("rank"), base + c["capture"], int(k), name) for c in captures
               for k, name in (c.get("kernels") or {}).items()]
    sink.split("kernel", [k[0] for k in kernels], {
        "capture_id": pa.array([k[1] for k in kernels], pa.int64()),
        "kernel_id": pa.array([k[2] for k in kernels], pa.int64()),
        "name": pa.array([k[3] for k in kernels], pa.string()),
    })
    meta = {k: v for k, v in timeline.metadata.items() if k != "captures"}
    sink.split("metadata", [None] * len(meta), {
        "name": pa.array(list(meta), pa.string()),
        "value": pa.array([_json_text(v) for v in meta.values()], pa.string()),
    })


def _empty_schemas() -> dict:
    pa = _pa()
    i64, i32, s = pa.int64(), pa.int32(), pa.string()
    return {
        "slice": pa.schema([("rank", i32), ("id", i64), ("ts", i64), ("dur", i64),
                            ("track_id", i64), ("category", s), ("name", s), ("depth", i32),
                            ("parent_id", i64)]),
        "flow": pa.schema([("rank", i32), ("slice_out", i64), ("slice_in", i64),
                           ("name", s), ("category", s)]),
        "counter": pa.schema([("rank", i32), ("track_id", i64), ("ts", i64),
                              ("value", pa.float64())]),
    }


def _slices(timeline: Timeline, add, slice_base: int, base: int,
            track_ix: dict[int, int], track_rank: list) -> None:
    pa = _pa()
    depth, parent = _nesting(timeline, track_ix)
    rank_key = np.array([-1 if r is None else r for r in track_rank] or [0], np.int64)
    offsets = {}
    total = 0
    for b in timeline.blocks:
        offsets[b] = total
        total += len(b)
    # arg fields per rank partition: the union over the blocks that have rows there
    parts: dict[int, list] = {}
    for b in timeline.blocks:
        if not len(b):
            continue
        tix = np.array([track_ix[t] for t in b.tracks], np.int64)[b.track]
        key = rank_key[tix]
        ranks = np.unique(key).tolist()
        args = _BlockArgs(b)
        for r in ranks:
            rows = None if len(ranks) == 1 else np.flatnonzero(key == r)
            parts.setdefault(r, []).append((b, args, tix, rows))
    for r, blocks in sorted(parts.items()):
        fields: dict[str, tuple] = {}
        for _, args, _, _ in blocks:
            for k, (typ, as_json) in args.types.items():
                old = fields.get(k)
                typ = _unite(old[0] if old else None, typ)
                fields[k] = (typ, (old[1] if old else False) or as_json
                             or (pa.types.is_string(typ) and old is not None
                                 and not pa.types.is_string(old[0])))
        fields = {k: (pa.string() if pa.types.is_null(t) else t, j)
                  for k, (t, j) in fields.items()}
        rank = None if r == -1 else r
        json_keys = [k for k, (_, j) in fields.items() if j]
        meta = {JSON_ARGS: dumps_strict(json_keys)} if json_keys else None
        for b, args, tix, rows in blocks:
            sel = np.arange(len(b)) if rows is None else rows
            g = offsets[b] + sel
            n = len(sel)
            par = parent[g]
            cols = {
                "rank": pa.nulls(n, pa.int32()) if rank is None
                else pa.array(np.full(n, rank, np.int32)),
                "id": pa.array(slice_base + g),
                "ts": pa.array(b.start_ns[sel].astype(np.int64)),
                "dur": pa.array(b.dur_ns[sel].astype(np.int64)),
                "track_id": pa.array(base + tix[sel]),
                "category": pa.array([b.cat], pa.string()).take(
                    pa.array(np.zeros(n, np.int64))),
                "name": pa.array(b.names, pa.string()).take(
                    pa.array(b.name[sel].astype(np.int64))),
                "depth": pa.array(depth[g]),
                "parent_id": pa.array(slice_base + par, mask=par < 0),
            }
            if fields:
                arrays = args.arrays(rows, fields)
                cols["args"] = pa.StructArray.from_arrays(
                    arrays, fields=[pa.field(k, t) for k, (t, _) in fields.items()])
            add("slice", rank, pa.table(cols).replace_schema_metadata(meta))
    _flows(timeline, add, slice_base, offsets, track_ix, rank_key)


def _flows(timeline: Timeline, add, slice_base: int, offsets: dict,
           track_ix: dict[int, int], rank_key: np.ndarray) -> None:
    pa = _pa()
    for f in timeline.flows:
        if not len(f):
            continue
        tix = np.array([track_ix[t] for t in f.src.tracks], np.int64)[f.src.track[f.src_row]]
        key = rank_key[tix]
        src = slice_base + offsets[f.src] + f.src_row.astype(np.int64)
        dst = slice_base + offsets[f.dst] + f.dst_row.astype(np.int64)
        for r in np.unique(key).tolist():
            sel = np.flatnonzero(key == r)
            n = len(sel)
            rank = None if r == -1 else r
            add("flow", rank, pa.table({
                "rank": pa.nulls(n, pa.int32()) if rank is None
                else pa.array(np.full(n, rank, np.int32)),
                "slice_out": pa.array(src[sel]),
                "slice_in": pa.array(dst[sel]),
                "name": pa.array([f.name], pa.string()).take(pa.array(np.zeros(n, np.int64))),
                "category": pa.array([f.cat], pa.string()).take(
                    pa.array(np.zeros(n, np.int64))),
            }))


# --------------------------------------------------------------------------- files

class _Files:
    """Tables written as `_emit` makes them: a Parquet writer per (table, rank) file, opened
    at its first piece (whose schema it takes), each file atomic: leaving `stack` renames
    them into place, or on an exception removes them. Tables named in `empty` are written
    with their columns and no rows."""

    def __init__(self, directory: Path, shard: int, empty: set[str]) -> None:
        import contextlib

        self.root, self.shard, self.empty = directory, shard, empty
        self.stack = contextlib.ExitStack()
        self.writers: dict = {}
        self.paths: list[Path] = []

    def add(self, name: str, rank: int | None, table) -> None:
        import pyarrow.parquet as pq

        from pypto.compile_profiling.foundation.atomic_io import atomic_writer

        if name in self.empty:
            table = table.slice(0, 0)
        w = self.writers.get((name, rank))
        if w is None:
            d = self.root / name / partition_name(rank)
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"part-{self.shard:05d}.parquet"
            f = self.stack.enter_context(atomic_writer(path, "wb"))
            w = self.writers[(name, rank)] = pq.ParquetWriter(f, table.schema,
                                                               compression="zstd")
            self.stack.callback(w.close)
            self.paths.append(path)
        if len(table):
            if not table.schema.equals(w.schema, check_metadata=False):
                table = table.cast(w.schema)
            w.write_table(table.replace_schema_metadata(w.schema.metadata),
                          row_group_size=1 << 20)


def write_tables(timeline: Timeline, directory: str | os.PathLike, shard: int = 0,
                 *, keep_metadata: bool = True) -> int:
    """Write `timeline`'s tables under `directory` (which exists) as
    `<table>/rank=<r>/part-<shard>.parquet`, each slice block written as it is made, each
    file atomically; -> bytes written. `keep_metadata=False`: the `metadata` table is
    written empty (another shard holds the run's)."""
    from pypto.compile_profiling.foundation.ctrl_c import ctrl_c_deferred

    sink = _Files(Path(directory), shard, set() if keep_metadata else {"metadata"})
    try:
        with sink.stack:
            _emit(timeline, sink, shard)
    finally:
        with ctrl_c_deferred():     # the closed writers' __del__ runs here: a Ctrl-C waits
            sink.writers.clear()
    return sum(p.stat().st_size for p in sink.paths)


DATASET_TITLE = "pypto.compile_profiling.timeline.write_parquet"
_PART = re.compile(r"^[a-z_]+/rank=[^/]+/part-\d+\.parquet$")


def is_dataset_file(relative: str) -> bool:
    """A file name one of our datasets has (for a manifest of an older version, which lists
    no files)."""
    return bool(_PART.match(relative))


def write_parquet_dataset(timeline: Timeline, directory: str | os.PathLike) -> int:
    """Write `timeline` as a Parquet dataset directory; -> bytes written.

    All or nothing (`foundation.owned_dir`): the dataset is written into a fresh staging
    directory beside it, with a manifest (`DATASET_MARKER`) listing every file, and renamed
    into place. A directory already there is replaced only when it is empty or an earlier
    dataset whose manifest lists every file in it; anything else there is refused, nothing
    deleted.
    """
    target = Path(directory)
    what = "Parquet dataset written by pypto"
    check_replaceable(target, DATASET_MARKER, is_dataset_file, what)
    stage = stage_beside(target)
    try:
        with writing_into(stage, target):
            size = write_tables(timeline, stage)
            write_manifest(stage, DATASET_MARKER, DATASET_TITLE)
            replace_owned(stage, target, DATASET_MARKER, is_dataset_file, what)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return size


def read_parquet_dataset(directory: str | os.PathLike) -> dict:
    """{table name: pa.Table} of a dataset directory (every partition; args united)."""
    import duckdb

    con = duckdb.connect()
    out = {}
    for name in TABLES:
        files = sorted(Path(directory, name).glob("*/*.parquet"))
        if files:
            out[name] = con.sql(
                "select * from read_parquet(?, union_by_name = true, hive_partitioning = false)",
                params=[[str(f) for f in files]]).to_arrow_table()
    return out
