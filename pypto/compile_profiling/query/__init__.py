"""The merged run as tables, and queries over it: SQL with DuckDB over one run or many, and
the per-rank merge of a distributed run on Dask.

    con = open_run(["build/work"])                 # or a Parquet dataset directory
    result = run_query(con, "select name, count(*) from slice group by 1")
    result = run_preset(con, "kernels")
    table = aggregate(["runs/"])                   # many profiles / work dirs / runs

- `tables`: a run (a Parquet dataset written by `timeline.write_parquet`, or a merge's
  inputs read and placed as `merge_traces` does) as DuckDB views named as in docs/tables.md;
- `presets`: named ready-made queries (`PRESETS`);
- `aggregate`: per stage, pass and kernel statistics across many runs;
- `per_rank`: `pypto-merge-traces --per-rank`: placement in the driver, one Dask task per
  rank (read, lay out, write its Parquet partition and Perfetto shard).

pyarrow, duckdb and dask come with the `scale` extra (installed from the checkout:
`pip install -e '<checkout>[scale]'`, see `pypto.about`);
`require` turns a missing one into one `MissingDependencyError` line naming that command.
This package may import `timeline`, `trace_merge` and the profile readers, never the CLIs.
"""

from __future__ import annotations

import importlib

from pypto.about import install_extra_hint
from pypto.errors import MissingDependencyError

__all__ = ["PIP_EXTRA", "require"]

PIP_EXTRA = install_extra_hint("scale")


def require(*modules: str) -> None:
    """Import `modules` (e.g. "duckdb", "pyarrow"), or raise one line naming the extra."""
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m.split(".")[0])
    if missing:
        raise MissingDependencyError(f"{', '.join(dict.fromkeys(missing))} not installed: "
                                     f"{PIP_EXTRA}")
