"""A part of a merged timeline: a time window, some ranks (`pypto-merge-traces --window`,
`--ranks`), for a run too big to open whole in the Perfetto UI.

Why after the layout, not before: every slice keeps the place, name and args the whole merge
gives it, so a part reads exactly as the same stretch of the whole trace would.

What is kept:
- a window counts from the trace's first event, as the UI's time axis does (`10s:20s` is what
  the UI shows from 10 to 20 s); a slice overlapping it is kept whole, so a parent always
  keeps its children's company and nesting holds;
- ranks: the processes of those ranks (`Process.rank`), and every process of no rank (the
  compile and host side);
- an arrow when both its ends are kept;
- a counter's samples inside the window, and the value in effect at the window's start,
  drawn from that start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pypto.compile_profiling.foundation.units import duration
from pypto.compile_profiling.timeline.model import (
    CounterTrack,
    FlowBlock,
    SliceBlock,
    Timeline,
)
from pypto.errors import CutError

__all__ = ["Cut", "cut_timeline", "parse_ranks", "parse_window"]

_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TIME = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|ms|s)\s*")


@dataclass(frozen=True, slots=True)
class Cut:
    """What to keep: [start_ns, end_ns) after the trace's first event (None: open on that
    side), and the ranks (None: all)."""

    start_ns: int | None = None
    end_ns: int | None = None
    ranks: frozenset[int] | None = None

    @property
    def windowed(self) -> bool:
        return self.start_ns is not None or self.end_ns is not None


def _duration(text: str, whole: str) -> int:
    m = _TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"--window {whole!r}: {text.strip()!r} is not a time with a unit "
                         "(e.g. 1.5s, 200ms, 30us, 800ns)")
    return round(float(m.group(1)) * _UNITS[m.group(2)])


def parse_window(text: str) -> tuple[int | None, int | None]:
    """`START:END` (either side may be empty: from the start, to the end), each a time with
    a unit, counted from the trace's first event -> (start_ns, end_ns); ValueError (one
    line) otherwise."""
    if text.count(":") != 1:
        raise ValueError(f"--window {text!r}: give START:END (e.g. 10s:20s, :500ms, 2s:)")
    a, b = text.split(":")
    start = _duration(a, text) if a.strip() else None
    end = _duration(b, text) if b.strip() else None
    if start is None and end is None:
        raise ValueError(f"--window {text!r}: give a start, an end or both")
    if start is not None and end is not None and end <= start:
        raise ValueError(f"--window {text!r}: the end must come after the start")
    return start, end


def parse_ranks(text: str) -> frozenset[int]:
    """`0,3,5-7` -> {0, 3, 5, 6, 7}; ValueError (one line) otherwise."""
    out: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None:
            raise ValueError(f"--ranks {text!r}: give ranks as 0,3,5-7")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"--ranks {text!r}: {part.strip()} runs backwards")
        if hi - lo > 1_000_000:
            raise ValueError(f"--ranks {text!r}: {part.strip()} is more ranks than any run has")
        out.update(range(lo, hi + 1))
    return frozenset(out)


def _first_event(tl: Timeline) -> int | None:
    firsts = [int(b.start_ns.min()) for b in tl.blocks if len(b)]
    firsts += [int(c.ts_ns[0]) for c in tl.counters if len(c.ts_ns)]
    return min(firsts) if firsts else None


def _last_event(tl: Timeline) -> int | None:
    lasts = [int((b.start_ns + b.dur_ns).max()) for b in tl.blocks if len(b)]
    lasts += [int(c.ts_ns[-1]) for c in tl.counters if len(c.ts_ns)]
    return max(lasts) if lasts else None


def _take_block(b: SliceBlock, idx: np.ndarray) -> SliceBlock:
    return SliceBlock(b.cat, b.tracks, b.track[idx], b.start_ns[idx], b.dur_ns[idx], b.names,
                      b.name[idx], [a.take(idx) for a in b.args],
                      None if b.extra_args is None else [b.extra_args[i] for i in idx.tolist()])


def _take_counter(c: CounterTrack, lo: int | None, hi: int | None) -> CounterTrack | None:
    ts, values = c.ts_ns, c.values
    first = 0 if lo is None else int(np.searchsorted(ts, lo, side="left"))
    last = len(ts) if hi is None else int(np.searchsorted(ts, hi, side="left"))
    keep_ts, keep_v = ts[first:last], values[first:last]
    if first > 0 and (hi is None or lo < hi):       # the value in effect at the start
        keep_ts = np.concatenate([np.array([lo], dtype=ts.dtype), keep_ts])
        keep_v = np.concatenate([values[first - 1:first], keep_v])
    if not len(keep_ts):
        return None
    return CounterTrack(c.process, c.name, keep_ts, keep_v, c.unit)


def cut_timeline(tl: Timeline, cut: Cut) -> tuple[Timeline, list[str]]:
    """The part of `tl` that `cut` keeps (module docstring), and summary lines saying what
    was kept of what; `CutError` (one line) for ranks the timeline does not hold."""
    ranks_here = sorted({p.rank for p in tl.processes if p.rank is not None})
    if cut.ranks is not None:
        if not ranks_here:
            raise CutError("--ranks: no capture here carries a rank (a single-rank run: "
                             "use --window)")
        if not cut.ranks & set(ranks_here):
            raise CutError(f"--ranks: no capture of rank {_ranks_text(cut.ranks)} here "
                             f"(ranks {_ranks_text(ranks_here)})")
    processes = [p for p in tl.processes
                 if cut.ranks is None or p.rank is None or p.rank in cut.ranks]
    kept_procs = {id(p) for p in processes}
    tracks = [t for t in tl.tracks if id(t.process) in kept_procs]
    origin, last = _first_event(tl), _last_event(tl)
    lo = hi = None
    if origin is not None:
        lo = None if cut.start_ns is None else origin + cut.start_ns
        hi = None if cut.end_ns is None else origin + cut.end_ns
    kept_rows: dict[int, np.ndarray] = {}      # old block -> its rows kept (a mask)
    new_block: dict[int, SliceBlock] = {}      # old block -> its part, when rows are kept
    new_row: dict[int, np.ndarray] = {}        # old block -> each old row's index in the part
    blocks = []
    for b in tl.blocks:
        mask = np.fromiter((id(t.process) in kept_procs for t in b.tracks), bool,
                           len(b.tracks))[b.track] if len(b) else np.zeros(0, bool)
        if lo is not None:
            mask &= b.start_ns + b.dur_ns >= lo
        if hi is not None:
            mask &= b.start_ns < hi
        kept_rows[id(b)] = mask
        if mask.any():
            new_block[id(b)] = _take_block(b, np.flatnonzero(mask))
            new_row[id(b)] = np.cumsum(mask) - 1
            blocks.append(new_block[id(b)])
    flows = []
    for f in tl.flows:
        keep = kept_rows[id(f.src)][f.src_row] & kept_rows[id(f.dst)][f.dst_row]
        if keep.any():
            flows.append(FlowBlock(f.name, f.cat, new_block[id(f.src)],
                                   new_row[id(f.src)][f.src_row[keep]], new_block[id(f.dst)],
                                   new_row[id(f.dst)][f.dst_row[keep]]))
    counters = [c2 for c in tl.counters if id(c.process) in kept_procs
                for c2 in [_take_counter(c, lo, hi)] if c2 is not None]
    part = Timeline(processes, tracks, blocks, flows, counters, dict(tl.metadata))
    what = []
    if cut.windowed and origin is not None:
        a = duration(cut.start_ns or 0)
        b = duration(cut.end_ns) if cut.end_ns is not None else "the end"
        what.append(f"{a} to {b} of {duration(last - origin)} (--window)")
    if cut.ranks is not None:
        what.append(f"ranks {_ranks_text(sorted(cut.ranks & set(ranks_here)))} of "
                    f"{_ranks_text(ranks_here)} (--ranks)")
    samples = sum(len(c.ts_ns) for c in tl.counters)
    part.metadata["cut"] = {
        "window_ns": [cut.start_ns, cut.end_ns] if cut.windowed else None,
        "ranks": None if cut.ranks is None else sorted(cut.ranks & set(ranks_here)),
        "of": {"slices": tl.slice_count, "flows": tl.flow_count, "counter_samples": samples}}
    lines = [(f"cut to {' and '.join(what)}: kept {part.slice_count:,} of {tl.slice_count:,} "
             f"slices, {part.flow_count:,} of {tl.flow_count:,} flows, "
             f"{sum(len(c.ts_ns) for c in counters):,} of {samples:,} counter samples"),
             ("  the whole run: merge it without the cut, or as Parquet (--format parquet) "
             "for pypto-profile query")]
    return part, lines


def _ranks_text(ranks) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    ranks = sorted(ranks)
    runs: list[list[int]] = []
    for r in ranks:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
