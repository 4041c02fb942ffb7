"""The UI shows the run in the order the work flows: compile, then host, then device.

Our traces order their processes (Chrome JSON `process_sort_index`, protobuf
`sibling_order_rank`), but the Perfetto UI (checked in v52) orders its top-level process
groups by its own rule (Chrome's process type, heap and CPU samples, CPU time, then slice
count, most first, then name) and reads neither field, so the busiest process comes first.
What it does follow is a workspace built by startup commands in the URL that opens the
trace: `pypto-profile open` adds one ("PyPTO run"), made by copying each process group
into it in the file's order (Perfetto's own `CopyTracksToWorkspaceByRegexWithAncestors`,
one exact pattern per group, whose name the UI shows as "<process name> <pid>"), and
switches to it. The UI's own workspace is still there, in its order.

The order is read from the head of the file, where our writers put it: the JSON's first
events are the processes' names and sort indices, the protobuf's first packets their track
descriptors. A file with none there (not one of ours) gets no startup commands.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import zlib

__all__ = ["HEAD_BYTES", "WORKSPACE", "process_order", "startup_commands"]

WORKSPACE = "PyPTO run"
_BETWEEN = re.compile(r"\s*,?\s*")     # what lies between two events
HEAD_BYTES = 8 << 20      # how much of the file's start is read for its processes


def process_order(head: bytes) -> list[tuple[str, int]]:
    """(name, pid) of each process a trace file names at its start (`head`: its first bytes,
    gzip or not), in its display order; [] when it names none there."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
        except zlib.error:
            return []
    if head.lstrip()[:1] in (b"{", b"["):
        return _json_order(head)
    return _proto_order(head)


def _json_order(head: bytes) -> list[tuple[str, int]]:
    """The leading metadata events of a Chrome JSON trace: `process_name` and
    `process_sort_index` (a process without a sort index keeps its place)."""
    text = head.decode("utf-8", "replace")
    at = re.search(r'"traceEvents"\s*:\s*\[|^\s*\[', text)
    if at is None:
        return []
    decoder = json.JSONDecoder()
    names: dict[int, str] = {}
    ranks: dict[int, int] = {}
    pos = at.end()
    while True:
        pos = _BETWEEN.match(text, pos).end()
        try:
            ev, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break              # the head's end, or not JSON after all
        if not isinstance(ev, dict) or ev.get("ph") != "M":
            break              # the metadata events come first: the rest is not read
        args, pid = ev.get("args"), ev.get("pid")
        if type(pid) is not int or not isinstance(args, dict):
            continue
        if ev.get("name") == "process_name" and isinstance(args.get("name"), str):
            names.setdefault(pid, args["name"])
        elif ev.get("name") == "process_sort_index" and type(args.get("sort_index")) is int:
            ranks.setdefault(pid, args["sort_index"])
    return _ordered(names, ranks)


def _proto_order(head: bytes) -> list[tuple[str, int]]:
    """The process track descriptors among a protobuf trace's first packets."""
    from google.protobuf.message import DecodeError
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket

    names: dict[int, str] = {}
    ranks: dict[int, int] = {}
    pos, n = 0, len(head)
    while pos < n and head[pos] == 0x0A:          # Trace.packet: field 1, length-delimited
        size, shift, pos = 0, 0, pos + 1
        while pos < n:
            byte = head[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if pos + size > n:
            break
        try:
            packet = TracePacket.FromString(head[pos:pos + size])
        except DecodeError:
            return []
        pos += size
        if not packet.HasField("track_descriptor"):
            if names:
                break          # the descriptors come first: the rest is not read
            continue
        desc = packet.track_descriptor
        if desc.HasField("process") and desc.process.process_name:
            names.setdefault(desc.process.pid, desc.process.process_name)
            if desc.HasField("sibling_order_rank"):
                ranks.setdefault(desc.process.pid, desc.sibling_order_rank)
    return _ordered(names, ranks)


def _ordered(names: dict[int, str], ranks: dict[int, int]) -> list[tuple[str, int]]:
    first = {pid: i for i, pid in enumerate(names)}
    order = sorted(names, key=lambda pid: (ranks.get(pid, first[pid]), first[pid]))
    return [(names[pid], pid) for pid in order]


def _group_pattern(name: str, pid: int) -> str:
    """A JavaScript pattern for the UI's name of a process group ("<name> <pid>"; a name that
    is a path shows only its last part): the name up to its first " (" (what follows, such
    as the placement's "(calibrated ±238 ns)", only lengthens the URL), then its pid, which
    no other process has, at the end."""
    if name.startswith("/"):
        name = name.rsplit("/", 1)[-1]
    name = name.split(" (", 1)[0]
    escaped = "".join(c if c.isalnum() or c in " _" or ord(c) > 127 else "\\" + c
                      for c in name)
    return f"^{escaped}.* {pid}$"


def startup_commands(processes: list[tuple[str, int]]) -> str:
    """The URL argument (`&startupCommands=...`) that makes the workspace `WORKSPACE` of
    `processes`' groups in that order and switches to it; "" for no processes."""
    if not processes:
        return ""
    copy = "dev.perfetto.CopyTracksToWorkspaceByRegexWithAncestors"
    commands = [{"id": copy, "args": [_group_pattern(name, pid), WORKSPACE]}
                for name, pid in processes]
    commands.append({"id": "dev.perfetto.SwitchWorkspace", "args": [WORKSPACE]})
    text = json.dumps(commands, ensure_ascii=False, separators=(",", ":"))
    return "&startupCommands=" + urllib.parse.quote(text, safe="[]{}:,")
