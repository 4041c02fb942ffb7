"""ConstantFolding: evaluate constant index arithmetic (offsets after unrolling), simplify
identities (`i * 1`, `t + 0.0`, `t * 1.0`) and check now-constant load/store windows."""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, BinExpr, Call, Const, Expr, For, Function, Stmt, Var
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.visit import map_stmt, substitute

_IDENTITY = {"add": 0, "sub": 0, "mul": 1, "div": 1}


def fold_bin(e: BinExpr) -> Expr:
    a, b = e.lhs, e.rhs
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = a.value, b.value
        if e.op in ("//", "%") and y == 0:
            raise CompileError(f"{e.span}: division by zero in index expression")
        value = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                 "//": lambda: x // y, "%": lambda: x % y}[e.op]()
        return Const(value, a.dtype, e.span)
    if e.op in ("+", "-") and isinstance(b, Const) and b.value == 0:
        return a
    if e.op == "+" and isinstance(a, Const) and a.value == 0:
        return b
    if e.op == "*":
        for one, other in ((a, b), (b, a)):
            if isinstance(one, Const) and one.value == 1:
                return other
            if isinstance(one, Const) and one.value == 0:
                return Const(0, one.dtype, e.span)
    return e


def fold(e: Expr) -> Expr:
    return fold_bin(e) if isinstance(e, BinExpr) else e


def check_window(call: Call) -> None:
    """A load/store whose offsets are all constant must stay inside its tensor."""
    if call.op == "load":
        tensor, offsets, shape = call.args[0], call.args[1:], call.attrs["shape"]
    elif call.op == "store":
        tensor, offsets, shape = call.args[1], call.args[2:], call.args[0].type.shape
    else:
        return
    if not all(isinstance(o, Const) for o in offsets):
        return
    dims = tensor.type.shape
    for o, s, d in zip(offsets, shape, dims):
        if not 0 <= o.value <= d - s:
            raise CompileError(f"{call.span}: pl.{call.op} window at {[x.value for x in offsets]} "
                               f"of shape {list(shape)} exceeds tensor {tensor.name!r} shape "
                               f"{list(dims)}")


class ConstantFolding(FunctionPass):
    name = "ConstantFolding"

    def run_function(self, func: Function) -> Function:
        return dataclasses.replace(func, body=self.fold_stmts(func.body))

    def fold_stmts(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        alias: dict[str, Expr] = {}
        for s in stmts:
            if alias:
                (s,) = substitute((s,), alias)
            if isinstance(s, For):
                out.append(dataclasses.replace(s, body=self.fold_stmts(s.body)))
                continue
            s = map_stmt(s, fold)
            if isinstance(s, Assign) and isinstance(s.value, Call):
                call = s.value
                check_window(call)
                ident = _IDENTITY.get(call.op)
                if (ident is not None and isinstance(call.args[1], Const)
                        and call.args[1].value == ident and call.args[0].type == s.target.type):
                    alias[s.target.name] = call.args[0]  # t = x + 0  ->  uses of t read x
                    continue
            elif isinstance(s, Assign) and isinstance(s.value, (Var, Const)):
                alias[s.target.name] = s.value  # plain copy or constant: propagate
                continue
            out.append(s)
        return tuple(out)


