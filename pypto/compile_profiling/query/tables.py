"""A run as DuckDB tables: the views `process`, `thread`, `slice`, `flow`, `counter_track`,
`counter`, `capture`, `kernel`, `metadata` (docs/tables.md) over

- a Parquet dataset directory (`timeline.write_parquet`, or the `tables/` of a
  `pypto-merge-traces --per-rank` output directory): DuckDB reads the files where they
  are (`read_parquet(..., union_by_name = true)`), nothing is loaded up front. Each file is
  checked first (a regular file, a Parquet footer that reads, the columns its table always
  has, each holding its kind of value; the files its manifest lists all there): a damaged dataset, or somebody else's
  Parquet, is one line naming the file;
- anything else: a merge's inputs (capture directories, work dirs, compile traces,
  profiles), read and placed by `merge_traces`, its timeline as Arrow tables in memory.

Then the connection is locked (`lock`): the SQL sees the run's tables and nothing else. No
file outside the dataset can be read or written (`enable_external_access` off, the
dataset's files the only `allowed_paths`), no extension installed or loaded, and no setting
changed after that (`lock_configuration`).
"""

from __future__ import annotations

import os
from pathlib import Path

from pypto.compile_profiling.query import require
from pypto.errors import TraceInputError

__all__ = ["check_dataset", "dataset_dir", "lock", "open_run", "register_timeline",
           "tables_of"]


def dataset_dir(path: str | os.PathLike) -> Path | None:
    """The Parquet dataset directory `path` is (or holds as `tables/`), else None."""
    from pypto.compile_profiling.timeline.write_parquet import DATASET_MARKER

    p = Path(path)
    for d in (p, p / "tables"):
        if d.is_dir() and (d / DATASET_MARKER).is_file():
            return d
    return None


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def check_dataset(directory: Path) -> dict[str, list[Path]]:
    """{table: its Parquet files} of a dataset directory, each file checked (see the module
    docstring); `TraceInputError` naming the file for the first that fails."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pypto.compile_profiling.foundation.input_files import note_input, open_input
    from pypto.compile_profiling.foundation.owned_dir import read_manifest
    from pypto.compile_profiling.timeline.write_parquet import (
        DATASET_MARKER,
        TABLE_COLUMN_KINDS,
        TABLE_COLUMNS,
        TABLES,
    )

    note_input(directory / DATASET_MARKER)
    listed = read_manifest(directory, DATASET_MARKER) or []
    for rel in listed:
        if not os.path.lexists(directory / rel):
            raise TraceInputError(directory / rel, "is listed in the dataset's manifest but "
                                                   "missing: the dataset is incomplete")
    out = {}
    for name in TABLES:
        files = sorted((directory / name).glob("*/*.parquet"))
        if not files:
            raise TraceInputError(directory, f"no {name}/ table here (an incomplete dataset)")
        for f in files:
            try:
                with open_input(f) as fh:
                    schema = pq.read_schema(fh)
            except (pa.ArrowException, OSError, ValueError) as e:
                why = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
                raise TraceInputError(f, f"not a readable Parquet file ({why})") from None
            missing = [c for c in TABLE_COLUMNS[name] if c not in schema.names]
            if missing:
                raise TraceInputError(f, f"not a {name} table of a pypto dataset (no column "
                                         f"{', '.join(missing)})")
            for column, kind in TABLE_COLUMN_KINDS[name].items():
                held = _kind(schema.field(column).type)
                if held not in (kind, "null") and (kind, held) != ("float", "int"):
                    raise TraceInputError(f, f"its {name} column {column} holds "
                                             f"{schema.field(column).type}, where a pypto "
                                             f"dataset has {kind} values")
        out[name] = files
    return out


def _kind(arrow_type) -> str:
    """"int", "float", "string", "bool", "null" or the type's own name."""
    import pyarrow.types as t

    for kind, test in (("int", t.is_integer), ("float", t.is_floating),
                       ("string", lambda x: t.is_string(x) or t.is_large_string(x)),
                       ("bool", t.is_boolean), ("null", t.is_null)):
        if test(arrow_type):
            return kind
    return str(arrow_type)


def _register_dataset(con, directory: Path) -> list[str]:
    """The dataset's tables as views over its files; -> the files (absolute). DuckDB reads
    each file's metadata here: one it cannot read (damage past the footer) is named."""
    import duckdb

    everything = []
    for name, files in check_dataset(directory).items():
        paths = [str(f.resolve()) for f in files]
        everything += paths
        listing = "[" + ", ".join(map(_quoted, paths)) + "]"
        try:
            con.execute(f"create or replace view {name} as select * from read_parquet("
                        f"{listing}, union_by_name = true, hive_partitioning = false)")
        except duckdb.Error as e:
            raise _unreadable(con, files, directory / name, e) from None
    return everything


def _unreadable(con, files: list[Path], table: Path, error: Exception) -> TraceInputError:
    """The one-line error for files DuckDB cannot read: the first file that fails alone,
    else the table (files that fail only together)."""
    import duckdb

    def why(e: Exception) -> str:
        return " ".join(str(e).split("\n")[0].split())

    for f in files:
        try:
            con.execute(f"select * from read_parquet({_quoted(str(f.resolve()))}) limit 0")
        except duckdb.Error as e:
            return TraceInputError(f, f"not a readable Parquet file ({why(e)})")
    return TraceInputError(table, f"its files cannot be read together ({why(error)})")


def lock(con, allowed: list[str]) -> None:
    """From now on `con` reads only `allowed` files and its registered tables: no other
    file, no extension, no setting changes (see the module docstring)."""
    if allowed:
        con.execute("set allowed_paths = [" + ", ".join(map(_quoted, allowed)) + "]")
    con.execute("set enable_external_access = false")
    con.execute("set autoinstall_known_extensions = false")
    con.execute("set autoload_known_extensions = false")
    con.execute("set lock_configuration = true")


def tables_of(timeline) -> dict:
    """{table name: one pa.Table} of a timeline (its rank partitions concatenated)."""
    import pyarrow as pa

    from pypto.compile_profiling.timeline.write_parquet import timeline_tables

    out = {}
    for name, parts in timeline_tables(timeline).items():
        tables = [t for _, t in parts]
        out[name] = tables[0] if len(tables) == 1 else pa.concat_tables(
            tables, promote_options="permissive")
    return out


def register_timeline(con, timeline) -> None:
    """`timeline`'s tables as DuckDB views of in-memory Arrow tables."""
    for name, table in tables_of(timeline).items():
        con.register(f"_arrow_{name}", table)
        con.execute(f"create or replace view {name} as select * from _arrow_{name}")


def open_run(paths: list[str | os.PathLike], *, merge_options: dict | None = None):
    """A DuckDB connection with the run at `paths` registered (see the module docstring).
    One Parquet dataset, or any mix of merge inputs (merged as one run)."""
    require("duckdb", "pyarrow")
    import duckdb

    if not paths:
        raise TraceInputError("<inputs>", "no inputs given")
    datasets = [dataset_dir(p) for p in paths]
    con = duckdb.connect()
    if any(d is not None for d in datasets):
        if len(paths) > 1:
            raise TraceInputError(paths[1] if datasets[0] is not None else paths[0],
                                  "a Parquet dataset is queried alone (pypto-profile "
                                  "aggregate reads many runs)")
        lock(con, _register_dataset(con, datasets[0]))
        return con
    from pypto.compile_profiling.trace_merge import merge_traces

    result = merge_traces([str(p) for p in paths], **(merge_options or {}))
    register_timeline(con, result.timeline)
    lock(con, [])
    return con
