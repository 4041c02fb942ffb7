"""DeadCodeElimination: drop assignments whose value is never read and has no side effect.

Stores and kernel calls (tasks) are kept; chains of dead values go in one backward sweep.
"""

from __future__ import annotations

import dataclasses

from pypto.ir_core.nodes import Assign, Call, Expr, Function, KernelCall, Stmt
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.visit import iter_exprs, used_names


def has_effect(e: Expr) -> bool:
    return any(isinstance(x, KernelCall) or (isinstance(x, Call) and x.op == "store")
               for x in iter_exprs(e))


def eliminate(stmts: tuple[Stmt, ...], live: set[str]) -> tuple[Stmt, ...]:
    kept: list[Stmt] = []
    for s in reversed(stmts):
        if isinstance(s, Assign) and s.target.name not in live and not has_effect(s.value):
            continue
        live |= used_names(s)
        kept.append(s)
    return tuple(reversed(kept))


class DeadCodeElimination(FunctionPass):
    name = "DeadCodeElimination"

    def run_function(self, func: Function) -> Function:
        return dataclasses.replace(func, body=eliminate(func.body, set()))
