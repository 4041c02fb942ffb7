"""Lane assignment that keeps every track properly nested (what Perfetto needs).

Slices on one track must nest: a slice either ends before the next starts or contains it.
Device tasks on a core never nest (any overlap is a second lane); host spans and scheduler
phases may nest (a `resolve` inside a `complete`), and only a partial overlap moves a slice.
Real captures almost never overlap, so the common case is checked with NumPy in one pass
and only a stream that does overlap is walked row by row.
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
    prev_end = np.maximum.accumulate(e)[:-1]
    if not (s[1:] < prev_end).any():      # nothing overlaps: one lane (the common case)
        return lane
    stacks: list[list[int]] = [[]]
    out = np.zeros(n, dtype=np.int32)
    for k, (a, b) in enumerate(zip(s.tolist(), e.tolist())):
        for j, stack in enumerate(stacks):
            while stack and stack[-1] <= a:
                stack.pop()
            if not stack or (allow_nesting and b <= stack[-1]):
                stack.append(b)
                out[k] = j
                break
        else:
            stacks.append([b])
            out[k] = len(stacks) - 1
    lane[order] = out
    return lane
