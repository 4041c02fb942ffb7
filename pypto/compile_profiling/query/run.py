"""Run SQL (or a preset) on a run's DuckDB connection, and render the result: an aligned
text table, CSV or JSON.

`stream_query` renders as it fetches, in batches of `BATCH_ROWS` rows from DuckDB's Arrow
stream, so a 50-million-row result holds one batch in memory, not the result (measured: 148 MB
peak for 50 M rows to CSV).

Stopping it. DuckDB looks for Ctrl-C only between its tasks, and one task of a join can run
for minutes. So while a query runs in the main thread, Python's C-level signal handler also
writes each signal to a wakeup socket (`signal.set_wakeup_fd`), and a small thread waiting
on it calls `con.interrupt()` the moment SIGINT arrives: the query stops within
milliseconds, `KeyboardInterrupt` here. A `timeout_s` timer interrupts it the same way
(`QueryTimeout`). Closing a connection whose query was stopped waits, in DuckDB before 2.0,
until the task then running finishes (minutes for one task of a big join; 2.0 stops it at
once): a command about to exit calls `hold_stopped_connections` first and leaves without
closing them (`pypto-profile`'s `cli`). A statement that reaches outside the run (a file, an extension: the
connection is locked, `tables.lock`) is a `QueryError` that says so.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pypto.compile_profiling.foundation.terminal import printable
from pypto.errors import QueryError, QueryTimeout

__all__ = ["BATCH_ROWS", "FORMATS", "QueryResult", "QueryTimeout", "fit_text", "format_result",
           "hold_stopped_connections", "run_preset", "run_query", "stream_query"]

FORMATS = ("text", "csv", "json")
BATCH_ROWS = 65_536          # rows per fetch: ~10 MB of Python tuples at a few columns
TEXT_WIDTH_ROWS = BATCH_ROWS  # a text table's column widths come from its first batch


_stopped_connections: list | None = None     # see hold_stopped_connections


def hold_stopped_connections() -> list:
    """From now on, keep each connection whose query was stopped (Ctrl-C, timeout) in the
    list returned, instead of letting it close when dropped: DuckDB before 2.0 closes it only
    once its running task ends (module docstring). For a process about to exit, which then
    leaves without closing them (`os._exit`) when the list is not empty."""
    global _stopped_connections
    if _stopped_connections is None:
        _stopped_connections = []
    return _stopped_connections


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def _duck_error(e: Exception) -> QueryError:
    first = " ".join(str(e).split("\n")[0].split())
    if type(e).__name__ == "PermissionException":
        return QueryError("SQL refused: the query reaches outside the run (query is "
                          f"read-only and sees only the run's tables): {first}")
    return QueryError(f"SQL error: {first}")


@contextlib.contextmanager
def _interrupt_on_sigint(con, fired: threading.Event) -> Iterator[None]:
    """While the block runs, SIGINT interrupts `con`'s query at once (module docstring);
    `fired` is set when it did. Outside the main thread (no wakeup fd there): nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    done = threading.Event()

    def watch() -> None:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if done.is_set() or not data:
                return
            if signal.SIGINT in data:
                fired.set()
                con.interrupt()

    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="query-sigint", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        done.set()
        with contextlib.suppress(OSError):
            writer.send(b"\0")
        watcher.join()
        reader.close()
        writer.close()


def _batches(con, sql: str, limit: int | None, timeout_s: float | None
             ) -> tuple[list[str], Iterable[list[tuple]]]:
    """The result's columns and its rows in batches, fetched as they are read."""
    import duckdb

    if limit is not None:
        sql = f"select * from ({sql}) limit {int(limit)}"
    fired = threading.Event()
    timer = None
    if timeout_s is not None:
        def stop() -> None:
            fired.set()
            con.interrupt()
        timer = threading.Timer(timeout_s, stop)
        timer.daemon = True
        timer.start()

    sigint = threading.Event()

    def stopped(e: BaseException) -> BaseException:
        if _stopped_connections is not None:
            _stopped_connections.append(con)
        if fired.is_set() and not sigint.is_set():
            return QueryTimeout(f"the query ran longer than --timeout {timeout_s:g} s: "
                                "stopped")
        return KeyboardInterrupt()

    def guarded(step: Callable):
        try:
            with _interrupt_on_sigint(con, sigint):
                return step()
        except duckdb.InterruptException as e:
            raise stopped(e) from None
        except RuntimeError as e:          # DuckDB's own Ctrl-C: "Query interrupted"
            if "interrupt" in str(e).lower():
                raise stopped(e) from None
            raise
        except duckdb.Error as e:
            raise _duck_error(e) from None

    def start():
        rel = con.sql(sql)
        if rel is None:                     # a statement without a result (e.g. SET)
            return [], None
        if hasattr(rel, "to_arrow_reader"):
            return list(rel.columns), rel.to_arrow_reader(BATCH_ROWS)
        # DuckDB < 1.3 streams Arrow from the connection
        return list(rel.columns), con.execute(sql).fetch_record_batch(BATCH_ROWS)

    columns, reader = guarded(start)

    def rows():
        try:
            if reader is None:
                return
            while True:
                batch = guarded(lambda: _next(reader))
                if batch is None:
                    return
                cols = [c.to_pylist() for c in batch.columns]
                yield list(zip(*cols)) if cols else []
        finally:
            if timer is not None:
                timer.cancel()

    return columns, rows()


def _next(reader):
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


def stream_query(con, sql: str, write: Callable[[str], object], fmt: str = "text", *,
                 limit: int | None = None, timeout_s: float | None = None) -> int:
    """Run `sql` on `con` and `write` its rendering in pieces as rows arrive; the number of
    rows. `QueryError` for bad SQL or SQL that reaches outside the run, `QueryTimeout`,
    `KeyboardInterrupt` on Ctrl-C."""
    columns, batches = _batches(con, sql, limit, timeout_s)
    out = _Renderer(fmt, columns, write)
    for rows in batches:
        out.rows(rows)
    out.end()
    return out.count


def run_query(con, sql: str, limit: int | None = None) -> QueryResult:
    """`sql` on `con`, all of its rows in memory (for the small results of presets and
    aggregates); a DuckDB error becomes one `QueryError` line with its message."""
    columns, batches = _batches(con, sql, limit, None)
    return QueryResult(columns, [r for rows in batches for r in rows])


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
        return printable(json.dumps(v, ensure_ascii=False, default=str))
    return printable(str(v))


class _Renderer:
    """Rows to text, CSV or JSON, piece by piece. A text table is aligned on its first
    `TEXT_WIDTH_ROWS` rows (numbers right-aligned); a later wider cell widens its line."""

    def __init__(self, fmt: str, columns: list[str], write: Callable[[str], object]):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.fmt, self.columns, self.write = fmt, columns, write
        self.count = 0
        self.pending: list[tuple] | None = [] if fmt == "text" else None
        self.widths: list[int] | None = None
        self.numeric: list[bool] | None = None
        if fmt == "csv":
            self._csv(self.columns)
        elif fmt == "json":
            self.write("[")

    def _csv(self, row) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(row)
        self.write(buf.getvalue())

    def rows(self, rows: list[tuple]) -> None:
        if not rows:
            return
        if self.fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            for r in rows:
                w.writerow(["" if v is None else v for v in r])
            self.write(buf.getvalue())
        elif self.fmt == "json":
            from pypto.compile_profiling.timeline.json_values import dumps_strict

            body = dumps_strict([dict(zip(self.columns, r)) for r in rows]).decode("utf-8")
            self.write(("," if self.count else "") + body[1:-1])
        elif self.pending is not None:
            self.pending.extend(rows)
            if len(self.pending) >= TEXT_WIDTH_ROWS:
                self._flush_text()
        else:
            self._text_rows(rows)
        self.count += len(rows)

    def _flush_text(self) -> None:
        rows, self.pending = self.pending, None
        cells = [[_cell(v) for v in r] for r in rows]
        self.numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None
                                           for r in rows) for i in range(len(self.columns))]
        self.widths = [max([len(c)] + [len(row[i]) for row in cells])
                       for i, c in enumerate(self.columns)]
        self.write(self._line(list(self.columns)))
        self.write("".join(self._line(c) for c in cells))

    def _text_rows(self, rows: list[tuple]) -> None:
        self.write("".join(self._line([_cell(v) for v in r]) for r in rows))

    def _line(self, cells: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(cells, self.widths, self.numeric)).rstrip() + "\n"

    def end(self) -> None:
        if self.fmt == "json":
            self.write("]\n")
        elif self.fmt == "text":
            if not self.columns:
                self.write("(no rows)\n")
                return
            if self.pending is not None:
                self._flush_text()
            if not self.count:
                self.write("(no rows)\n")


MIN_FITTED = 16     # a shortened column keeps at least this many characters


def fit_text(result: QueryResult, width: int) -> tuple[QueryResult, bool]:
    """`result` whose text table fits `width` columns: the widest text column's values
    shortened from the left (`…kernel_codegen:scale_1`, their ends kept: a stage's leaf);
    and whether any was. A table whose numbers alone are too wide is left as it is."""
    if not result.rows or not result.columns:
        return result, False
    cells = [[_cell(v) for v in r] for r in result.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(result.columns)]
    total = sum(widths) + 2 * (len(widths) - 1)
    text = [i for i in range(len(widths))
            if not all(isinstance(r[i], (int, float)) or r[i] is None for r in result.rows)]
    if total <= width or not text:
        return result, False
    j = max(text, key=lambda i: widths[i])
    keep = max(widths[j] - (total - width), MIN_FITTED, len(result.columns[j]))
    if keep >= widths[j]:
        return result, False
    rows = [tuple(("…" + v[len(v) - keep + 1:]) if i == j and isinstance(v, str)
                  and len(v) > keep else v for i, v in enumerate(r)) for r in result.rows]
    return QueryResult(result.columns, rows), True


def format_result(result: QueryResult, fmt: str = "text") -> str:
    """`text` (aligned columns, numbers right-aligned), `csv` or `json` (a list of rows)."""
    parts: list[str] = []
    out = _Renderer(fmt, result.columns, parts.append)
    out.rows(result.rows)
    out.end()
    return "".join(parts)
