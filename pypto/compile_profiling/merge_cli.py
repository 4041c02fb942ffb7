"""`pypto-merge-traces`: argument parsing, messages, exit codes and `--open` for `merge_traces`.

    pypto-merge-traces INPUT... -o OUT [--format json|perfetto] [--offset-us US] [--open]

Everything human goes to stderr: what was read and how each source was aligned, counts of
what was written, warnings, and progress for steps slower than `PROGRESS_AFTER_S`. A bad
input is one line `<file>: <problem>` and exit status 2, with no output file written
(the merge finishes before the atomic write starts). Exit 1: the output could not be written.
With `--open` the URL is printed on stdout.
"""

from __future__ import annotations

import argparse
import http.server
import logging
import os
import sys
import threading
import time
import urllib.parse
import webbrowser
from pathlib import Path

from pypto.errors import ProfileWriteError, PyptoError, TraceInputError

PROGRESS_AFTER_S = 2.0
PERFETTO_UI = "https://ui.perfetto.dev"
DEFAULT_PORT = 9001  # the one local port ui.perfetto.dev is allowed to fetch from
EXIT_INPUT, EXIT_WRITE, EXIT_INTERRUPTED = 2, 1, 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pypto-merge-traces",
        description="Merge PyPTO compile traces and Simpler device captures into one Perfetto "
                    "timeline (Chrome JSON or native Perfetto protobuf).",
        epilog="Inputs: trace.json, report/ dir or pipeline_profile.json, work dir / "
               "dfx_outputs/ dir, chip_swimlane_records.json, l2_swimlane_records.json, "
               "merged_swimlane*.json, deps.json, name_map_*.json, Simpler run log.")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files or directories to merge")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file (.json -> Chrome JSON, .pftrace/.perfetto-trace -> protobuf)")
    p.add_argument("--format", choices=("json", "perfetto"),
                   help="output format (default: from the extension of OUT)")
    p.add_argument("--offset-us", type=float, metavar="US",
                   help="place device timelines without clock anchors US microseconds after "
                        "the start of the device_execution stage (after time 0 without one); "
                        "calibrated captures ignore it")
    p.add_argument("--open", action="store_true",
                   help=f"serve OUT on 127.0.0.1 and open it in {PERFETTO_UI}; stops once the "
                        "file was fetched, or on Ctrl-C")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port for --open (default {DEFAULT_PORT}, the one the Perfetto UI accepts; "
                        "0: any free port)")
    p.add_argument("-q", "--quiet", action="store_true", help="only errors and warnings")
    return p


# Guards progress state and printing. The exporters may fork a helper process while the
# progress timer thread runs; holding this lock across every fork guarantees the child never
# inherits a stream or lock that the timer thread held mid-print.
_PROGRESS_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_PROGRESS_LOCK.acquire,
                        after_in_parent=_PROGRESS_LOCK.release,
                        after_in_child=_PROGRESS_LOCK.release)


class StepProgress:
    """Says on `out` what a step is doing, only once it has taken `PROGRESS_AFTER_S` (then
    every 5 s). `progress(message)` starts a step, `stop()` ends the last one.

    `timer` (called like `threading.Timer(interval, function, args)`) and `clock` let tests
    fire the timers themselves instead of sleeping.
    """

    def __init__(self, out=sys.stderr, *, timer=threading.Timer, clock=time.monotonic) -> None:
        self._out = out
        self._lock = _PROGRESS_LOCK
        self._new_timer = timer
        self._clock = clock
        self._timer = None
        # Numbers the armings: a cancelled timer whose callback already runs sees a newer
        # number and stays quiet.
        self._armed = 0
        self._step = ""
        self._t0 = self._started = clock()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._cancel()
            self._step, self._t0 = message, self._clock()
            self._arm(PROGRESS_AFTER_S)

    def _arm(self, delay: float) -> None:
        self._armed += 1
        self._timer = self._new_timer(delay, self._report, args=(self._armed,))
        self._timer.daemon = True
        self._timer.start()

    def _report(self, armed: int) -> None:
        with self._lock:
            if self._timer is None or armed != self._armed:
                return
            now = self._clock()
            print(f"... {self._step} ({now - self._t0:.0f} s, {now - self._started:.0f} s in all)",
                  file=self._out, flush=True)
            self._arm(5.0)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stop(self) -> None:
        with self._lock:
            self._cancel()


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def serve_for_perfetto(path: str | os.PathLike, *, port: int = DEFAULT_PORT,
                       open_browser: bool = True, out=sys.stdout, err=sys.stderr) -> bool:
    """Serve only `path` on 127.0.0.1:`port` for the Perfetto UI; return once it was fetched.

    Returns True when the file was sent completely, False on Ctrl-C. Any other URL gets 404.
    """
    file = Path(path).resolve()
    name = file.name
    url_path = "/" + urllib.parse.quote(name)
    done = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # quiet: we print our own one line
            pass

        def _cors(self) -> None:
            self.send_header("Access-Control-Allow-Origin", PERFETTO_UI)
            self.send_header("Access-Control-Allow-Private-Network", "true")
            self.send_header("Cache-Control", "no-cache")

        def do_OPTIONS(self) -> None:  # CORS / private-network preflight
            self.send_response(204)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "GET, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.end_headers()

        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path != url_path:
                self.send_response(404)
                self._cors()
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            try:
                size = file.stat().st_size
                with open(file, "rb") as f:
                    self.send_response(200)
                    self._cors()
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    while chunk := f.read(1 << 20):
                        self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                return
            print(f"sent {name} ({_size(size)}) to {self.client_address[0]}", file=err,
                  flush=True)
            done.set()

    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        raise ProfileWriteError(f"127.0.0.1:{port}: cannot serve: {e.strerror or e}") from None
    server.daemon_threads = True
    port = server.server_address[1]  # the one bound, when 0 asked for any free port
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    link = f"{PERFETTO_UI}/#!/?url=http://127.0.0.1:{port}{url_path}"
    try:  # from the moment the link is out, Ctrl-C stops cleanly
        print(link, file=out, flush=True)
        print(f"serving {file} on http://127.0.0.1:{port}{url_path} until it is fetched "
              "(Ctrl-C to stop)", file=err, flush=True)
        if open_browser:
            try:
                webbrowser.open(link)
            except Exception as e:  # no browser here: the link is enough  # noqa: BLE001
                print(f"could not open a browser ({e}); open the link above", file=err)
        while not done.wait(0.2):
            pass
        return True
    except KeyboardInterrupt:
        return False
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    from pypto.compile_profiling.merge import format_for_path, merge_traces, write_timeline

    err = sys.stderr
    try:
        fmt = format_for_path(args.output, args.format)
    except ProfileWriteError as e:
        print(str(e), file=err)
        return EXIT_INPUT
    progress = StepProgress(err)
    t0 = time.perf_counter()
    try:
        result = merge_traces(args.inputs, offset_us=args.offset_us, progress=progress)
        tl = result.timeline
        progress(f"writing {args.output}")
        # a second process renders part of a big timeline (safe with the progress thread:
        # see _PROGRESS_LOCK)
        size = write_timeline(tl, args.output, fmt, parallel=True)
    except TraceInputError as e:
        progress.stop()
        print(str(e), file=err)
        return EXIT_INPUT
    except ProfileWriteError as e:
        progress.stop()
        print(str(e), file=err)
        return EXIT_WRITE
    except PyptoError as e:
        progress.stop()
        print(f"{args.output}: {e}", file=err)
        return EXIT_INPUT
    except KeyboardInterrupt:
        progress.stop()
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    progress.stop()
    elapsed = time.perf_counter() - t0
    if not args.quiet:
        for line in result.summary_lines:
            print(line, file=err)
        lanes = len(tl.tracks)
        print(f"wrote {args.output} ({'Chrome JSON' if fmt == 'json' else 'Perfetto protobuf'}, "
              f"{_size(size)}) in {elapsed:.1f} s: {len(tl.slices)} slices, {len(tl.flows)} "
              f"flows, {len(tl.processes)} processes, {lanes} lanes", file=err)
    for w in result.warnings:
        print(f"warning: {w}", file=err)
    if args.open:
        try:
            serve_for_perfetto(args.output, port=args.port)
        except ProfileWriteError as e:
            print(str(e), file=err)
            return EXIT_WRITE
    elif not args.quiet:
        print("open it: https://ui.perfetto.dev (Open trace file), or run again with --open",
              file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
