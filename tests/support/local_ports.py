"""A free TCP port on 127.0.0.1 for a server a test starts (in a child process, or later).

Chosen at random below the kernel's ephemeral range. A port the kernel hands out for a bind
to port 0 lies inside that range, where every outgoing connection of the tests running
beside (Dask's, urllib's) also takes its local port: between the close here and the
server's own bind one of them could take it, and a `--port` test once failed in a full
parallel run. Below the range only another explicit bind can, and a random pick makes that
as unlikely as two tests choosing the same number."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 20000


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768                     # Linux's default, and below most systems' range


def free_port() -> int:
    """A port no socket is bound to now, between 20000 and the ephemeral range."""
    top = max(_ephemeral_start(), LOWEST + 1000)
    pick = random.SystemRandom()
    for _ in range(500):
        port = pick.randrange(LOWEST, top)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {LOWEST} and {top}")
