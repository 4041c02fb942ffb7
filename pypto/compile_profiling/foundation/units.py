"""Durations in one unit per column, and round ticks for a time axis.

A table column mixing `980 ns` with `1.2 us` reads badly, and an axis labelled `0.0 us,
97.370 ms, 194.740 ms` gives no round number to read against: a column or an axis gets one
unit, the one its largest value reads best in, and an axis gets ticks at round steps (1, 2
or 5 times a power of ten) of that unit.
"""

from __future__ import annotations

import math

__all__ = ["Unit", "axis_ticks", "duration", "unit_for"]

_UNITS = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))


class Unit:
    """A duration unit (`us`) and how many ns it is; formats values in it with the decimals
    the column's largest value needs for three significant digits (at most 3)."""

    def __init__(self, name: str, ns: float, decimals: int) -> None:
        self.name, self.ns, self.decimals = name, ns, decimals

    def __call__(self, ns: float | None, signed: bool = False) -> str:
        if ns is None:
            return "-"
        text = f"{ns / self.ns:{'+' if signed else ''}.{self.decimals}f}"
        return f"{text} {self.name}"


def unit_for(values_ns, digits: int = 3) -> Unit:
    """The unit the largest `|value|` reads best in (at least 1 of it), with enough decimals
    to give it `digits` significant digits."""
    top = max((abs(float(v)) for v in values_ns if v is not None), default=0.0)
    name, ns = next(((n, s) for n, s in _UNITS if top >= s), _UNITS[-1])
    whole = len(str(int(top / ns))) if top else 1
    return Unit(name, ns, 0 if name == "ns" else max(0, min(3, digits - whole)))


def axis_ticks(span_ns: float, most: int = 6) -> tuple[list[float], list[str]]:
    """Ticks from 0 over `span_ns` at a round step, at most `most` of them, and their labels
    in one unit (`0 ms`, `50 ms`, `100 ms`)."""
    span_ns = max(float(span_ns), 1.0)
    raw = span_ns / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [i * step for i in range(int(span_ns // step) + 1)]
    unit = unit_for([ticks[-1] or step])
    decimals = max(0, -math.floor(math.log10(step / unit.ns) + 1e-9))
    return ticks, [f"{t / unit.ns:.{decimals}f} {unit.name}" for t in ticks]


def duration(ns: float, signed: bool = False) -> str:
    """One duration in the unit that fits it, three significant digits (`7.02 us`,
    `36.5 us`, `1.21 ms`; `-7.44 us` signed)."""
    return unit_for([ns])(ns, signed)
