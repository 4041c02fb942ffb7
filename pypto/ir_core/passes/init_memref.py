"""InitMemRef: give every tile its own on-chip buffer (a MemRef with size, no address yet)."""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, Expr, Function, FunctionType, Var
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.types import MemRef, TileType
from pypto.ir_core.visit import iter_stmts, map_stmt


def retype_tiles(func: Function, memrefs: dict[str, MemRef]) -> Function:
    """Set the MemRef of every occurrence of the named tiles."""

    def put(e: Expr) -> Expr:
        if isinstance(e, Var) and e.name in memrefs:
            return dataclasses.replace(e, type=dataclasses.replace(e.type, memref=memrefs[e.name]))
        return e

    return dataclasses.replace(func, body=tuple(map_stmt(s, put) for s in func.body))


class InitMemRef(FunctionPass):
    name = "InitMemRef"

    def run_function(self, func: Function) -> Function:
        if func.func_type is not FunctionType.InCore:
            return func
        memrefs: dict[str, MemRef] = {}
        for s in iter_stmts(func.body):
            if isinstance(s, Assign) and isinstance(s.target.type, TileType):
                t = s.target.type
                if t.memory_space is None:
                    raise CompileError(f"InitMemRef: tile {s.target.name!r} in {func.name!r} has "
                                       "no memory space; run InferTileMemorySpace first")
                if s.target.name not in memrefs:
                    memrefs[s.target.name] = MemRef(t.memory_space, len(memrefs), t.nbytes)
        return retype_tiles(func, memrefs)
