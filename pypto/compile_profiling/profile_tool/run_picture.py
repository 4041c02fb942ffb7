"""The whole run as one picture for the HTML page: compile stages and the device on one clock.

One SVG, one row per lane, a shared time axis (host CLOCK_MONOTONIC, the merge's placement of
the device) with round ticks in one unit: the compile's top-level stages, then per capture
each engine's utilisation (the share of its cores busy, per pixel column, as shading) and
the observed critical path (the columns its tasks cover). `device_svg` draws the device part
alone, zoomed to its own span: in the whole run it is often a sliver at the end. Each
picture is drawn 950 px wide and scales down with the page (a `viewBox`), so a 1,024 px
window shows all of it. Its size is fixed by its width, not by the run: a 100K-task capture
draws as many shapes as a 10-task one (per-column figures from NumPy, exact integrals of the
busy-core count), so the page opens at once.
"""

from __future__ import annotations

import html

import numpy as np

from pypto.compile_profiling.foundation.units import axis_ticks

__all__ = ["COLUMNS", "device_svg", "run_svg"]

COLUMNS = 380           # pixel columns of the time axis (two screen pixels each)
_PX = 2
_ROW = 18
_LABEL = 170            # room for the lane labels
_COLORS = {"compile": "#4e79a7", "parse": "#59a14f", "pass": "#76b7b2", "codegen": "#f28e2b",
           "runtime": "#b07aa1", "device": "#9c755f", "import": "#bab0ac", "user": "#edc948"}


def _t(ns: float) -> str:
    ns = abs(float(ns))
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us"


def _busy_columns(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per column [edges[i], edges[i+1]): core-ns busy in it, exact: the integral of the
    number of busy cores (rows as busy intervals), read off at the column edges."""
    t = np.concatenate([start, end]).astype(np.float64)
    step = np.concatenate([np.ones(len(start)), -np.ones(len(end))])
    order = np.argsort(t, kind="stable")
    t, step = t[order], step[order]
    busy = np.cumsum(step)                      # cores busy right after each event
    integral = np.concatenate([[0.0], np.cumsum(busy[:-1] * np.diff(t))])
    at = np.interp(edges, t, integral, left=0.0, right=float(integral[-1]))
    return np.diff(at)


def _covered_runs(start: np.ndarray, end: np.ndarray, t0: float, scale: float
                  ) -> list[tuple[int, int]]:
    """Runs (first column, end column) of the columns the intervals touch."""
    cols = np.zeros(COLUMNS + 1, dtype=np.int64)
    a = np.clip(((start - t0) * scale).astype(np.int64), 0, COLUMNS - 1)
    b = np.clip(np.ceil((end - t0) * scale).astype(np.int64), 1, COLUMNS)
    np.add.at(cols, a, 1)
    np.add.at(cols, np.maximum(b, a + 1), -1)
    on = np.cumsum(cols[:-1]) > 0
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(np.int8), [0]])))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


def device_svg(ranks: list) -> str:
    """The device part of the run alone (`run_svg` without the compile), zoomed to the
    span of its captures: the SVG text, or "" when no capture is placed."""
    return run_svg([], ranks, svg_id="device-picture")


def run_svg(stages: list, ranks: list, svg_id: str = "run-picture") -> str:
    """`stages`: the compile's top-level `Stage`s (host ns; may be empty); `ranks`: the run's
    `RankAnalysis`es (device cycles, placed by their `offset_ns`). The SVG text, or "" when
    there is nothing on a clock."""
    spans = [(s.start_ns, s.end_ns) for s in stages]
    placed = []
    for r in ranks:
        tt, obs = r.tasks, r.observed
        if r.offset_ns is None or not len(tt.row_start):
            continue
        k = 1e9 / tt.freq_hz
        placed.append((r, k, float(r.offset_ns)))
        spans.append((float(tt.row_start.min()) * k + r.offset_ns,
                      float(tt.row_end.max()) * k + r.offset_ns))
        if obs is not None and len(obs.tasks):
            spans.append((obs.t0 * k + r.offset_ns, obs.t1 * k + r.offset_ns))
    if not spans:
        return ""
    t0 = min(a for a, _ in spans)
    t1 = max(b for _, b in spans)
    scale = COLUMNS / max(t1 - t0, 1.0)
    esc = html.escape
    parts: list[str] = []
    y = 22

    def label(text: str, title: str = "") -> None:
        tip = f"<title>{esc(title)}</title>" if title else ""
        parts.append(f'<text class="lane" x="0" y="{y + 13}">{esc(text)}{tip}</text>')

    if stages:
        label("compile", "the compile's top-level stages")
        for s in stages:
            x = _LABEL + (s.start_ns - t0) * scale * _PX
            w = max((s.end_ns - s.start_ns) * scale * _PX, 1.0)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{_ROW - 2}" '
                         f'fill="{_COLORS.get(s.cat, "#ccc")}"><title>{esc(s.name)} '
                         f'{_t(s.end_ns - s.start_ns)}</title></rect>')
        y += _ROW + 4
    edges = t0 + np.arange(COLUMNS + 1) / scale
    for r, k, off in placed:
        tt = r.tasks
        start = tt.row_start.astype(np.float64) * k + off
        end = tt.row_end.astype(np.float64) * k + off
        width = np.diff(edges)
        for i, name in enumerate(tt.core_types):
            sel = tt.row_type == i
            cores = len(np.unique(tt.row_core[sel]))
            if not cores:
                continue
            share = _busy_columns(start[sel], end[sel], edges) / (width * cores)
            label(f"{r.label} {name.upper()} ({cores} core{'s' * (cores != 1)})",
                  "share of the engine's cores busy, per column")
            for c in np.flatnonzero(share > 0.005).tolist():
                parts.append(f'<rect x="{_LABEL + c * _PX}" y="{y}" width="{_PX}" '
                             f'height="{_ROW - 2}" fill="#9c755f" '
                             f'fill-opacity="{min(float(share[c]), 1.0):.2f}"/>')
            y += _ROW + 2
        obs = r.observed
        if obs is not None and len(obs.tasks):
            path = obs.tasks
            label(f"{r.label} critical path", f"{len(path)} tasks on the observed path")
            for a, b in _covered_runs(tt.start[path] * k + off, tt.end[path] * k + off, t0,
                                      scale):
                parts.append(f'<rect x="{_LABEL + a * _PX}" y="{y}" '
                             f'width="{(b - a) * _PX}" height="{_ROW - 2}" fill="#e15759"/>')
            y += _ROW + 2
        y += 6
    ticks = []
    for at, text in zip(*axis_ticks(t1 - t0)):
        x = _LABEL + at * scale * _PX
        ticks.append(f'<text class="tick" x="{x:.0f}" y="14">{text}</text>'
                     f'<line x1="{x:.0f}" y1="16" x2="{x:.0f}" y2="{y}" stroke="#ddd"/>')
    width = _LABEL + COLUMNS * _PX + 20
    return (f'<svg id="{svg_id}" class="fit" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{y}" viewBox="0 0 {width} {y}">'
            + "".join(ticks) + "".join(parts) + "</svg>")
