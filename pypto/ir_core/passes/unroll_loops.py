"""UnrollLoops: replace each `for i in pl.range(...)` by copies of its body with `i` constant."""

from __future__ import annotations

import dataclasses

from pypto.ir_core.nodes import Const, For, Function, Stmt
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.types import INDEX
from pypto.ir_core.visit import substitute


def unroll(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in stmts:
        if isinstance(s, For):
            body = unroll(s.body)
            for k in range(s.start, s.stop, s.step):
                out.extend(substitute(body, {s.var.name: Const(k, INDEX, s.var.span)}))
        else:
            out.append(s)
    return tuple(out)


class UnrollLoops(FunctionPass):
    name = "UnrollLoops"

    def run_function(self, func: Function) -> Function:
        return dataclasses.replace(func, body=unroll(func.body))
