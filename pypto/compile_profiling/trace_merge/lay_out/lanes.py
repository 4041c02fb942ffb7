"""Lane assignment that keeps every track properly nested (what Perfetto needs).

Slices on one track must nest: a slice either ends before the next starts or contains it.
Device tasks on a core never nest (any overlap is a second lane); host spans and scheduler
phases may nest (a `resolve` inside a `complete`), and only a partial overlap moves a slice.

How: in (start, longest first) order, the rows fall into groups where nothing is open at
the group's first row (its start is at or after every earlier end). Groups are independent
(every lane is free where one starts), so a lone row is lane 0 and a pair is decided with
NumPy for all pairs at once; only groups of three or more rows are walked row by row.
Measured (CPU, 2-core machine under load) on the scheduler phases of a 100k-task capture,
245,400 rows of which 23,500 overlap another: walking every row 0.11-0.18 s, this way
0.011-0.016 s (about 10x; ~1.5 s saved at 1M tasks).
"""

from __future__ import annotations

import numpy as np


def sublanes(start: np.ndarray, end: np.ndarray, *, allow_nesting: bool) -> np.ndarray:
    """Sub-lane (0, 1, ...) of each row; lane 0 holds everything that fits, in time order.

    Rows may come in any order; the result is indexed like the input.
    """
    n = len(start)
    lane = np.zeros(n, dtype=np.int32)
    if n < 2:
        return lane
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    first = np.ones(n, dtype=bool)
    first[1:] = s[1:] >= np.maximum.accumulate(e)[:-1]
    if first.all():                       # nothing overlaps: one lane (the common case)
        return lane
    heads = np.flatnonzero(first)
    sizes = np.diff(np.append(heads, n))
    out = np.zeros(n, dtype=np.int32)
    pairs = heads[sizes == 2]
    if len(pairs):                        # a pair: the second row nests or moves
        nests = e[pairs + 1] <= e[pairs] if allow_nesting else np.zeros(len(pairs), bool)
        out[pairs + 1] = np.where(nests, 0, 1)
    for h, size in zip(heads[sizes > 2].tolist(), sizes[sizes > 2].tolist()):
        out[h:h + size] = _walk(s[h:h + size].tolist(), e[h:h + size].tolist(), allow_nesting)
    lane[order] = out
    return lane


def _walk(starts: list, ends: list, allow_nesting: bool) -> list[int]:
    """Row-by-row lane choice for one group (every lane free at its start)."""
    stacks: list[list[int]] = [[]]
    out = []
    for a, b in zip(starts, ends):
        for j, stack in enumerate(stacks):
            while stack and stack[-1] <= a:
                stack.pop()
            if not stack or (allow_nesting and b <= stack[-1]):
                stack.append(b)
                out.append(j)
                break
        else:
            stacks.append([b])
            out.append(len(stacks) - 1)
    return out
