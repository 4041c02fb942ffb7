"""How much slower, at least, with a stated confidence: a distribution-free lower bound on the
shift between two sets of runs, from their ranks (Mann-Whitney / Hodges-Lehmann).

Given base times B (m runs) and new times N (n runs), the m * n differences N_j - B_i sorted
ascending are D_(1) <= ... <= D_(mn). If the new runs are the base runs shifted by some
Delta (the usual model of "this got slower"), then

    P(Delta < D_(c)) = P(U <= c - 1)

where U is the Mann-Whitney count of pairs (i, j) with N_j > B_i under no change, whose exact
distribution depends only on m and n (every ordering of the m + n runs equally likely).
`lower_bound` returns D_(c) for the largest c with P(U <= c - 1) <= alpha: with confidence
1 - alpha the true slowdown is at least that. Nothing is assumed about the shape of the noise
(runs need only be exchangeable when nothing changed). One wild run (a stall) spoils only its
own row of n differences, so the bound survives it when c > n: at alpha 0.01 from 8 runs per
side (c = 10; with 7, c = 7), at alpha 0.05 from 6 (c = 8). Ties (equal nanosecond times) are not corrected for: they
are vanishingly rare in nanosecond timings and move the bound by at most their own count.

When even c = 1 would need P(U = 0) = 1 / C(m + n, m) <= alpha, there are too few runs to
tell any change from noise at that alpha (one run per side never can: P = 1/2), and the
bound is None. `min_runs(alpha)` says how many runs per side are enough.

Written out here rather than taken from SciPy: about twenty lines of exact integer
arithmetic, where SciPy would be a 40 MB runtime dependency loaded for one p-value.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb


def u_counts(m: int, n: int) -> list[int]:
    """counts[u]: how many of the C(m + n, m) orderings of m base and n new runs have exactly
    u (base, new) pairs with new > base. These are the coefficients of the Gaussian binomial
    [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), computed exactly in
    O(m^2 n) integer steps (terms above degree m * n are never needed)."""
    if m < 0 or n < 0:
        raise ValueError(f"run counts must be >= 0, got {m} and {n}")
    size = m * n + 1
    poly = [1] + [0] * (size - 1)
    for i in range(1, m + 1):
        step = n + i
        for d in range(size - 1, step - 1, -1):   # times (1 - q^(n+i))
            poly[d] -= poly[d - step]
        for d in range(i, size):                  # divided by (1 - q^i)
            poly[d] += poly[d - i]
    return poly


def bound_rank(m: int, n: int, alpha: float) -> int | None:
    """The largest c >= 1 with P(U <= c - 1) <= alpha, or None when even c = 1 fails."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    if m == 0 or n == 0:
        return None
    total = comb(m + n, m)
    allowed = Fraction(repr(alpha)) * total   # exact: 0.05 of 20 orderings is 1, not 1.0000001
    c, below = 0, 0
    for count in u_counts(m, n):
        if below + count > allowed:
            break
        below += count
        c += 1
    return c or None


def lower_bound(base: list[float], new: list[float], alpha: float) -> float | None:
    """With confidence 1 - alpha, new is slower than base by at least this much (negative:
    it may be faster); None when there are too few runs to say (see `bound_rank`)."""
    c = bound_rank(len(base), len(new), alpha)
    if c is None:
        return None
    diffs = sorted(y - x for y in new for x in base)
    return diffs[c - 1]


def min_runs(alpha: float) -> int:
    """The fewest runs per side (the same number on both) that can decide at `alpha`."""
    k = 1
    while bound_rank(k, k, alpha) is None:
        k += 1
    return k
