"""A kernel's modelled duration in AICore cycles, from its ops and tile shapes.

The simulated device's modelled-time mode (`RunConfig(device_timing="modelled")`) runs each
task for exactly this many core cycles, so a capture reproduces to the cycle and responds to
shapes, op kinds and core counts as a device would, not to the host's load. The figures are
round numbers of the a2a3 class (docs/modelled_time.md), not a calibration of one chip:

- load / store (MTE, global memory <-> on-chip): `MTE_LATENCY` + bytes / `MTE_BYTES`;
- matmul (cube unit, AIC): `CUBE_LATENCY` + one 16x16x16 fractal per cycle (fp16), two for
  wider inputs;
- element-wise and reductions (vector unit, AIV): `VEC_LATENCY` + the output's (a
  reduction: the input's) bytes / `VEC_BYTES`, times the op's factor (`exp` 4, `div` 2,
  reductions 2);
- a copy is a vector op; scalar statements cost `SCALAR` each; loops multiply their body
  by the trip count (bounds are compile-time constants).
"""

from __future__ import annotations

from math import ceil

from pypto.ir_core.nodes import Assign, Call, EvalStmt, For, Function, Return, Stmt, Var
from pypto.ir_core.types import TileType

AICORE_HZ = 1_800_000_000      # the core clock the cycles count in
MAX_MODELLED_CYCLES = 60 * AICORE_HZ   # a minute of one core: a modelled run holds the host
#                                        at most that long (runtime.modelled_time.MAX_HOLD_S)
MTE_LATENCY, MTE_BYTES = 32, 64
CUBE_LATENCY, FRACTAL = 32, 16
VEC_LATENCY, VEC_BYTES = 8, 256
SCALAR = 1
VEC_FACTOR = {"exp": 4, "div": 2, "row_sum": 2, "row_max": 2}


def _tile(e) -> TileType | None:
    t = getattr(e, "type", None)
    return t if isinstance(t, TileType) else None


def _op_cycles(value, target_type: TileType | None) -> int:
    """The op `value` computes into `target_type`, with the ops nested in its operands."""
    nested = sum(_op_cycles(a, _tile(a)) for a in getattr(value, "args", ())
                 if isinstance(a, Call))
    return nested + _own_cycles(value, target_type)


def _own_cycles(value, target_type: TileType | None) -> int:
    if isinstance(value, Var):                        # a tile copied into another
        t = _tile(value)
        return VEC_LATENCY + ceil(t.nbytes / VEC_BYTES) if t is not None else SCALAR
    if not isinstance(value, Call):
        return SCALAR
    op = value.op
    if op in ("load", "store"):
        t = target_type if op == "load" else _tile(value.args[0])
        return MTE_LATENCY + ceil(t.nbytes / MTE_BYTES) if t is not None else MTE_LATENCY
    if op == "matmul":
        a, b = _tile(value.args[0]), _tile(value.args[1])
        m, k = a.shape[-2], a.shape[-1]
        n = b.shape[-1]
        rate = 1 if a.dtype.nbytes <= 2 else 2
        return CUBE_LATENCY + rate * ceil(m / FRACTAL) * ceil(n / FRACTAL) * ceil(k / FRACTAL)
    if target_type is None:
        return SCALAR
    measured = _tile(value.args[0]) if op.startswith("row_") and value.args else target_type
    nbytes = measured.nbytes if measured is not None else target_type.nbytes
    return VEC_LATENCY + VEC_FACTOR.get(op, 1) * ceil(nbytes / VEC_BYTES)


def _stmts_cycles(stmts: tuple[Stmt, ...] | list[Stmt]) -> int:
    total = 0
    for s in stmts:
        if isinstance(s, For):
            trips = max(0, len(range(s.start, s.stop, s.step)))
            total += trips * (SCALAR + _stmts_cycles(s.body))
        elif isinstance(s, Return):
            continue
        elif isinstance(s, EvalStmt):
            total += _op_cycles(s.value, None)
        elif isinstance(s, Assign):
            total += _op_cycles(s.value, _tile(s.target))
        else:
            total += SCALAR
    return total


def kernel_cycles(func: Function) -> int:
    """The kernel's modelled duration in AICore cycles (at `AICORE_HZ`), at least 1."""
    return max(1, _stmts_cycles(func.body))

