"""Generated timelines for the writer tests (hypothesis strategies): blocks of every column
kind with hostile values, and lanes of properly nested slices with flows. No tests here."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    CounterTrack,
    FlowBlock,
    Process,
    SliceBlock,
    Timeline,
    Track,
)

# hostile values the random blocks are made of (drawn by a seeded NumPy generator: hypothesis
# chooses the shape of a case, which is what shrinks well, and drawing every value through
# it made the test several times slower)
INTS = [-(1 << 63), -(1 << 62), -1500, -1, 0, 1, 7, 999, 1000, 1001, 10**8, 10**16 + 5,
        (1 << 52) + 1, (1 << 63) - 1]
UINTS = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
FLOATS = [0.1, -2.5, 3.0, -0.0, 1e-300, 2.5e300, 5e-324, math.nan, math.inf, -math.inf]
TEXTS = ["", "a", 'q"uote', "\\", "new\nline", "\udc80 lone", "\x00\x1f", "編譯 \u2028", "é",
         "x" * 40]
VALUES = [None, True, False, 0, -(1 << 63), 1 << 63, 1 << 70, -(1 << 80), *FLOATS, *TEXTS,
          [], [1, "a", None], [[1 << 80]], {"k": [1, 2]}, {"n": math.nan, 3: "int key"},
          (1, 2), np.int64(5), np.uint64((1 << 64) - 1), np.float32(0.1), np.bool_(True),
          np.str_("t \udc85"), np.arange(3)]


@st.composite
def column_blocks(draw):
    """A block of columns of every kind a `Timeline` may hold, extra args, flows and counters."""
    n = draw(st.integers(0, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def pick(pool: list, k: int = n) -> list:
        return [pool[i] for i in rng.integers(0, len(pool), k)]

    def maybe_present():
        return rng.random(n) < 0.6 if draw(st.booleans()) else None

    host = Process(draw(st.sampled_from([-5, 0, 1 << 62])), "p", 0)
    lanes = [Track(t, host, "l", 0) for t in draw(st.sampled_from([(0, 1), (7, 1 << 62)]))]
    names = pick(TEXTS, draw(st.integers(1, 4)))
    cols = []
    for k, kind in enumerate(draw(st.lists(st.sampled_from(
            ["int", "int8", "uint", "float", "float32", "bool", "2d", "2d float", "2d bool",
             "str", "table", "values", "unicode", "objects"]), max_size=5))):
        table = None
        if kind == "int":
            values = np.array(pick(INTS), np.int64)
        elif kind == "int8":
            values = rng.integers(-128, 128, n).astype(np.int8)
        elif kind == "uint":
            values = np.array(pick(UINTS), np.uint64)
        elif kind == "float":
            values = np.array(pick(FLOATS), np.float64)
        elif kind == "float32":
            values = np.array(pick(FLOATS[:4] + FLOATS[-3:]), np.float32)
        elif kind == "bool":
            values = rng.random(n) < 0.5
        elif kind == "2d":
            values = np.array(pick(INTS, 2 * n), np.int64).reshape(n, 2)
        elif kind == "2d float":
            values = np.array(pick(FLOATS, 3 * n), np.float64).reshape(n, 3)
        elif kind == "2d bool":
            values = (rng.random((n, draw(st.integers(0, 2)))) < 0.5)
        elif kind == "table":
            table = pick(VALUES if draw(st.booleans()) else TEXTS, draw(st.integers(1, 4)))
            values = rng.integers(0, len(table), n).astype(np.int32)
        elif kind == "values":
            values = pick(VALUES)
        elif kind == "unicode":
            values = np.array(pick(TEXTS[:4]) or [""], dtype=str)[:n]
        elif kind == "objects":
            values = np.array([None, *pick(VALUES)], dtype=object)[1:]
        else:
            values = pick(TEXTS)
        cols.append(ArgColumn(f"{kind}{k}" if k != 3 else 3, values, maybe_present(), table))
    extra = None
    if draw(st.booleans()):
        keys = ["a", "é", "\udc80", 5, cols[0].key if cols else "b"]  # and a column's
        extra = [None if rng.random() < 0.3 else dict(zip(pick(keys, 2), pick(VALUES, 2)))
                 for _ in range(n)]
    b = SliceBlock(draw(st.sampled_from(TEXTS)), lanes, rng.integers(0, 2, n).astype(np.int32),
                   np.array(pick(INTS), np.int64), np.array(pick(INTS), np.int64), names,
                   rng.integers(0, len(names), n).astype(np.int32), cols, extra)
    n_flows = draw(st.integers(0, 5)) if n else 0
    flows = [FlowBlock(draw(st.sampled_from(TEXTS)), "f", b, rng.integers(0, max(n, 1), n_flows),
                       b, rng.integers(0, max(n, 1), n_flows))]
    values = draw(st.sampled_from([np.array(pick(FLOATS), np.float64),
                                   np.array(pick(INTS), np.int64), rng.random(n) < 0.5]))
    counter = CounterTrack(host, draw(st.sampled_from(TEXTS)), np.array(pick(INTS), np.int64),
                           values, draw(st.sampled_from(TEXTS)))
    return Timeline([host], lanes, [b], flows, [counter]), draw(st.integers(1, 5))


@st.composite
def nested_timelines(draw):
    """Lanes of properly nested slices, each slice in one of two blocks, plus flows."""
    proc = Process(7, draw(st.text(max_size=6)), 0)
    lanes = [Track(100 + i, proc, f"lane{i}", i, os_tid=draw(st.sampled_from([None, 500 + i])))
             for i in range(draw(st.integers(1, 3)))]
    rows: list[tuple] = []  # (block, lane, start, dur, name)

    def fill(lane: int, start: int, end: int, depth: int) -> None:
        cur = start
        for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
            s0 = cur + draw(st.sampled_from([0, 0, 1, 37]))  # children sharing starts, too
            if s0 > end:
                return
            s1 = min(s0 + draw(st.sampled_from([0, 1, 60, 500, 5000])), end)
            rows.append((draw(st.integers(0, 1)), lane, s0, s1 - s0,
                         draw(st.text(min_size=1, max_size=8))))
            fill(lane, s0, s1, depth + 1)
            cur = s1

    for lane in range(len(lanes)):
        t0 = draw(st.integers(0, 10**15))
        fill(lane, t0, t0 + 5000, 0)
    blocks = []
    for b in (0, 1):
        mine = [r for r in rows if r[0] == b] or [(b, 0, 0, 0, "pad")]
        names = sorted({r[4] for r in mine})
        n = len(mine)
        blocks.append(SliceBlock(
            f"cat{b}", lanes, np.array([r[1] for r in mine], np.int32),
            np.array([r[2] for r in mine], np.int64), np.array([r[3] for r in mine], np.int64),
            names, np.array([names.index(r[4]) for r in mine], np.int32),
            [ArgColumn("i", np.arange(n), np.arange(n) % 2 == 0)]))
    n_flows = draw(st.integers(0, 4))
    src = draw(st.lists(st.integers(0, len(blocks[0]) - 1), min_size=n_flows,
                        max_size=n_flows))
    dst = draw(st.lists(st.integers(0, len(blocks[1]) - 1), min_size=n_flows,
                        max_size=n_flows))
    flow = FlowBlock("f", "flow", blocks[0], np.array(src, np.int64), blocks[1],
                     np.array(dst, np.int64))
    return Timeline([proc], lanes, blocks, [flow])
