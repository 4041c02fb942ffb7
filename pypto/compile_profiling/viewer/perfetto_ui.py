"""Where the Perfetto UI is and how a local trace reaches it: the names both commands'
`--open` / `--port` options need, without loading the server (and `http.server`)."""

from __future__ import annotations

import argparse

from pypto.about import install_extra_hint

PERFETTO_UI = "https://ui.perfetto.dev"
DEFAULT_PORT = 9001  # the one local port ui.perfetto.dev is allowed to fetch from
VIEWER_EXTRA = install_extra_hint("viewer")


def port_number(text: str) -> int:
    """argparse type: a TCP port 1-65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1-65535)")
    return port

