"""FlattenCallExpr: hoist nested calls into temporaries so every call's arguments are atoms."""

from __future__ import annotations

import dataclasses

from pypto.ir_core.nodes import (
    Assign,
    Call,
    EvalStmt,
    Expr,
    For,
    Function,
    KernelCall,
    Return,
    Stmt,
    Var,
)
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.visit import all_names, fresh_name


class FlattenCallExpr(FunctionPass):
    name = "FlattenCallExpr"

    def run_function(self, func: Function) -> Function:
        self.taken = all_names(func)
        return dataclasses.replace(func, body=self.flatten_stmts(func.body))

    def flatten_stmts(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in stmts:
            if isinstance(s, (Assign, EvalStmt)):
                s = dataclasses.replace(s, value=self.flatten_call(s.value, out))
            elif isinstance(s, Return):
                s = dataclasses.replace(s, values=tuple(self.atom(v, out) for v in s.values))
            elif isinstance(s, For):
                s = dataclasses.replace(s, body=self.flatten_stmts(s.body))
            out.append(s)
        return tuple(out)

    def flatten_call(self, e: Expr, pre: list[Stmt]) -> Expr:
        if isinstance(e, (Call, KernelCall)):
            return dataclasses.replace(e, args=tuple(self.atom(a, pre) for a in e.args))
        return e

    def atom(self, e: Expr, pre: list[Stmt]) -> Expr:
        if not isinstance(e, (Call, KernelCall)):
            return e
        e = self.flatten_call(e, pre)
        var = Var(fresh_name("tmp", self.taken), e.type, e.span)
        pre.append(Assign(var, e, e.span))
        return var
