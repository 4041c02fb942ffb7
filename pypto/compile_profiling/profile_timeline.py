"""A `CompileProfiler`'s stages as a `Timeline` (for the Perfetto protobuf export), straight
from the stages as `trace.json` places them (`chrome_trace.placed_stages`): same processes,
threads, lanes, times and args, with no JSON text in between."""

from __future__ import annotations

import os

import numpy as np

from pypto.compile_profiling.chrome_trace import CLOCK_NAME, placed_stages
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.timeline.model import Process, SliceBlock, Timeline, Track, intern

__all__ = ["profile_to_timeline", "write_profile_perfetto"]


def profile_to_timeline(profiler) -> Timeline:
    """The profile's stages on their real pid/tid, as in its `trace.json`."""
    placed = placed_stages(profiler)
    host = placed.other.get("host")
    tl = Timeline(metadata=placed.other)
    procs: dict[int, Process] = {}
    for n, (pid, name) in enumerate(placed.processes):
        args = {"os_pid": pid, "clock": CLOCK_NAME, "host": host}
        procs[pid] = Process(pid, name, n, pid, args)
        tl.processes.append(procs[pid])
    index: dict[tuple[int, int], int] = {}
    for n, (pid, tid, name, is_lane) in enumerate(placed.threads):
        index[(pid, tid)] = len(tl.tracks)
        tl.tracks.append(Track(tid, procs[pid], name, n, None if is_lane else tid))
    by_cat: dict[str, list[int]] = {}
    for i, cat in enumerate(placed.cat):
        by_cat.setdefault(cat, []).append(i)
    for cat, rows in by_cat.items():
        names, name_ix = intern([placed.name[i] for i in rows])
        track_ix = np.array([index[(placed.pid[i], placed.tid[i])] for i in rows],
                            dtype=np.int32)
        start = np.array([placed.start_ns[i] for i in rows], dtype=np.int64)
        end = np.array([placed.end_ns[i] for i in rows], dtype=np.int64)
        tl.blocks.append(SliceBlock(cat, tl.tracks, track_ix, start, end - start, names,
                                    name_ix, [], [placed.args[i] for i in rows]))
    return tl


def write_profile_perfetto(profiler, path: str | os.PathLike) -> int:
    """Write a `CompileProfiler`'s stages as a Perfetto protobuf trace; return its size."""
    return write_timeline(profile_to_timeline(profiler), path, "perfetto")
