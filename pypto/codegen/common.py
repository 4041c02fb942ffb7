"""Facts about IR functions that every code generator and the loader agree on."""

from __future__ import annotations

from collections.abc import Callable

from pypto.ir_core.nodes import Assign, BinExpr, Call, Const, Expr, For, Function, Return, Stmt, Var
from pypto.ir_core.types import ScalarType
from pypto.ir_core.visit import iter_exprs, iter_stmts


def core_type(func: Function) -> str:
    """"aic" (cube core) for kernels that use matmul, "aiv" (vector core) otherwise."""
    for s in iter_stmts(func.body):
        for v in (getattr(s, "value", None),):
            if v is not None and any(isinstance(x, Call) and x.op == "matmul" for x in iter_exprs(v)):
                return "aic"
    return "aiv"


def param_specs(func: Function) -> list[dict]:
    """The signature as JSON-ready dicts (name, shape, dtype, direction)."""
    out = []
    for p in func.params:
        t = p.var.type
        shape = None if isinstance(t, ScalarType) else list(t.shape)
        out.append({"name": p.var.name, "shape": shape, "dtype": t.dtype.numpy,
                    "direction": p.direction})
    return out


def returned_param(func: Function) -> int | None:
    """Index of the parameter a kernel's (single) return value aliases, following stores."""
    defs = {s.target.name: s.value for s in iter_stmts(func.body) if isinstance(s, Assign)}
    params = [p.var.name for p in func.params]
    ret = next((s for s in iter_stmts(func.body) if isinstance(s, Return)), None)
    if ret is None or len(ret.values) != 1:
        return None
    e: Expr = ret.values[0]
    for _ in range(len(defs) + 1):
        if isinstance(e, Var) and e.name in params:
            return params.index(e.name)
        if isinstance(e, Var) and e.name in defs:
            e = defs[e.name]
        elif isinstance(e, Call) and e.op == "store":
            e = e.args[1]
        else:
            return None
    return None


def py_expr(e: Expr) -> str:
    """Index/scalar expression as Python (and C, with `cpp=True` spelling of //)."""
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, BinExpr):
        return f"({py_expr(e.lhs)} {e.op} {py_expr(e.rhs)})"
    raise TypeError(f"not an index expression: {e!r}")


def cpp_expr(e: Expr) -> str:
    if isinstance(e, BinExpr):
        op = "/" if e.op == "//" else e.op
        return f"({cpp_expr(e.lhs)} {op} {cpp_expr(e.rhs)})"
    return py_expr(e)


def cpp_for_loop(lines: list[str], loop: For, ind: str, emit: Callable[[Stmt, str], None]) -> None:
    """Append a C++ counted loop for `loop`; `emit(stmt, indent)` writes each body statement."""
    v = loop.var.name
    lines.append(f"{ind}for (int64_t {v} = {loop.start}; {v} < {loop.stop}; {v} += {loop.step}) {{")
    for body_stmt in loop.body:
        emit(body_stmt, ind + "    ")
    lines.append(ind + "}")
