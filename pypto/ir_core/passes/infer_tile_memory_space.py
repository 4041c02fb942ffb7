"""InferTileMemorySpace: place each tile in Vec (vector unit), Left/Right (matmul operands)
or Acc (matmul result), from how the kernel uses it."""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, Call, Expr, Function, FunctionType, Var
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.types import TileType
from pypto.ir_core.visit import iter_stmts, map_stmt


def tile_spaces(func: Function) -> dict[str, str]:
    """Tile name -> memory space; rejects a tile whose uses need two different spaces."""
    space: dict[str, str] = {}
    uses: dict[str, set[str]] = {}

    def need(name: str, where: str) -> None:
        uses.setdefault(name, set()).add(where)

    for s in iter_stmts(func.body):
        if not isinstance(s, Assign) or not isinstance(s.target.type, TileType):
            continue
        if isinstance(s.value, Call) and s.value.op == "matmul":
            space[s.target.name] = "Acc"
        else:
            space.setdefault(s.target.name, "Vec")
    for s in iter_stmts(func.body):
        value = getattr(s, "value", None)
        if not isinstance(value, Call):
            continue
        for pos, a in enumerate(value.args):
            if isinstance(a, Var) and isinstance(a.type, TileType):
                if value.op == "matmul":
                    need(a.name, "Left" if pos == 0 else "Right")
                elif value.op == "store":
                    need(a.name, "store")
                else:
                    need(a.name, "Vec")
    for name, wants in uses.items():
        mm = wants & {"Left", "Right"}
        if len(mm) > 1 or (mm and "Vec" in wants) or (mm and "store" in wants):
            raise CompileError(f"InferTileMemorySpace: kernel {func.name!r}: tile {name!r} is used "
                               f"as {', '.join(sorted(wants))}; load it once per use instead")
        if mm:
            space[name] = mm.pop()
        elif space.get(name) == "Acc" and "Vec" in wants:
            raise CompileError(f"InferTileMemorySpace: kernel {func.name!r}: matmul result "
                               f"{name!r} feeds a vector op; store it and compute in an aiv kernel")
    return space


class InferTileMemorySpace(FunctionPass):
    name = "InferTileMemorySpace"

    def run_function(self, func: Function) -> Function:
        if func.func_type is not FunctionType.InCore:
            return func
        space = tile_spaces(func)

        def place(e: Expr) -> Expr:
            if isinstance(e, Var) and e.name in space:
                return dataclasses.replace(e, type=dataclasses.replace(e.type, memory_space=space[e.name]))
            return e

        return dataclasses.replace(func, body=tuple(map_stmt(s, place) for s in func.body))
