"""A run as DuckDB tables: the views `process`, `thread`, `slice`, `flow`, `counter_track`,
`counter`, `capture`, `kernel`, `metadata` (docs/tables.md) over

- a Parquet dataset directory (`timeline.write_parquet`, or the `tables/` of a
  `pypto-merge-traces --per-rank` output directory): DuckDB reads the files where they
  are (`read_parquet(..., union_by_name = true)`), nothing is loaded up front;
- anything else: a merge's inputs (capture directories, work dirs, compile traces,
  profiles), read and placed by `merge_traces`, its timeline as Arrow tables in memory.
"""

from __future__ import annotations

import os
from pathlib import Path

from pypto.compile_profiling.query import require
from pypto.errors import TraceInputError

__all__ = ["dataset_dir", "open_run", "register_timeline", "tables_of"]


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


def _register_dataset(con, directory: Path) -> None:
    from pypto.compile_profiling.timeline.write_parquet import TABLES

    for name in TABLES:
        files = sorted(str(f) for f in (directory / name).glob("*/*.parquet"))
        if not files:
            raise TraceInputError(directory, f"no {name}/ table here (an incomplete dataset)")
        listing = "[" + ", ".join(map(_quoted, files)) + "]"
        con.execute(f"create or replace view {name} as select * from read_parquet("
                    f"{listing}, union_by_name = true, hive_partitioning = false)")


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
        _register_dataset(con, datasets[0])
        return con
    from pypto.compile_profiling.trace_merge import merge_traces

    result = merge_traces([str(p) for p in paths], **(merge_options or {}))
    register_timeline(con, result.timeline)
    return con
