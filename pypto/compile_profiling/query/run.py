"""Run SQL (or a preset) on a run's DuckDB connection, and render the result: an aligned
text table, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass

from pypto.errors import QueryError

__all__ = ["FORMATS", "QueryResult", "format_result", "run_preset", "run_query"]

FORMATS = ("text", "csv", "json")


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def run_query(con, sql: str, limit: int | None = None) -> QueryResult:
    """`sql` on `con`; a DuckDB error becomes one `QueryError` line with its message."""
    import duckdb

    if limit is not None:
        sql = f"select * from ({sql}) limit {int(limit)}"
    try:
        rel = con.sql(sql)
        if rel is None:                      # a statement without a result (e.g. SET)
            return QueryResult([], [])
        return QueryResult(list(rel.columns), rel.fetchall())
    except duckdb.Error as e:
        first = " ".join(str(e).split("\n")[0].split())
        raise QueryError(f"SQL error: {first}") from None


def run_preset(con, name: str, limit: int | None = None) -> QueryResult:
    from pypto.compile_profiling.query.presets import PRESETS, preset_sql

    preset = PRESETS.get(name)
    if preset is None:
        raise QueryError(f"unknown preset {name!r} (known: {', '.join(PRESETS)}; "
                         "--preset list describes them)")
    sql = preset_sql(con, preset)
    if sql is None:
        return QueryResult([], [])
    return run_query(con, sql, limit)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:.6g}" if v and abs(v) < 1e-3 else f"{v:.3f}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, default=str)
    return str(v)


def format_result(result: QueryResult, fmt: str = "text") -> str:
    """`text` (aligned columns, numbers right-aligned), `csv` or `json` (a list of rows)."""
    if fmt == "json":
        from pypto.compile_profiling.timeline.json_values import dumps_strict

        return dumps_strict(result.records()).decode("utf-8") + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(result.columns)
        for r in result.rows:
            w.writerow(["" if v is None else v for v in r])
        return buf.getvalue()
    if not result.columns:
        return "(no rows)\n"
    cells = [[_cell(v) for v in r] for r in result.rows]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in result.rows)
               and result.rows for i in range(len(result.columns))]
    widths = [max([len(c)] + [len(row[i]) for row in cells])
              for i, c in enumerate(result.columns)]
    lines = []
    for row in [list(result.columns), *cells]:
        lines.append("  ".join(v.rjust(w) if num else v.ljust(w)
                               for v, w, num in zip(row, widths, numeric)).rstrip())
    if not result.rows:
        lines.append("(no rows)")
    return "\n".join(lines) + "\n"
