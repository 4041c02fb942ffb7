"""IR -> DSL-like text: what IR dumps and tests compare. Pre-memory IR re-parses with pl.parse_program."""

from __future__ import annotations

from pypto.ir_core.nodes import (
    Assign,
    BinExpr,
    Call,
    Const,
    EvalStmt,
    Expr,
    For,
    Function,
    KernelCall,
    Program,
    Return,
    Stmt,
    Var,
)
from pypto.ir_core.types import TileType, type_str

_WRAP = {"out": "pl.Out[{}]", "inout": "pl.InOut[{}]"}


def print_expr(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, BinExpr):
        lhs, rhs = print_expr(e.lhs), print_expr(e.rhs)
        lhs = f"({lhs})" if isinstance(e.lhs, BinExpr) else lhs
        rhs = f"({rhs})" if isinstance(e.rhs, BinExpr) else rhs
        return f"{lhs} {e.op} {rhs}"
    if isinstance(e, KernelCall):
        args = [print_expr(a) for a in e.args]
        if e.timing_slot is not None:
            args.append(f"timing_slot={e.timing_slot}")
        return f"self.{e.callee}({', '.join(args)})"
    if isinstance(e, Call):
        a = [print_expr(x) for x in e.args]
        if e.op == "load":
            return f"pl.load({a[0]}, [{', '.join(a[1:])}], {list(e.attrs['shape'])})"
        if e.op == "store":
            return f"pl.store({a[0]}, [{', '.join(a[2:])}], {a[1]})"
        if e.op == "create_tensor":
            return f"pl.create_tensor({list(e.attrs['shape'])}, dtype=pl.{e.attrs['dtype'].name})"
        return f"pl.{e.op}({', '.join(a)})"
    raise TypeError(f"unknown expression {e!r}")


def _memref_comment(t) -> str:
    if not isinstance(t, TileType) or t.memref is None:
        return ""
    m = t.memref
    addr = "unallocated" if m.offset < 0 else f"@0x{m.offset:x}"
    return f"  # {m.space} buf{m.buffer} {addr} ({m.size} B)"


def print_stmt(s: Stmt, indent: str) -> list[str]:
    if isinstance(s, Assign):
        t = s.target
        return [f"{indent}{t.name}: {type_str(t.type)} = {print_expr(s.value)}{_memref_comment(t.type)}"]
    if isinstance(s, EvalStmt):
        return [f"{indent}{print_expr(s.value)}"]
    if isinstance(s, Return):
        return [f"{indent}return {', '.join(print_expr(v) for v in s.values)}".rstrip()]
    if isinstance(s, For):
        rng = f"{s.start}, {s.stop}, {s.step}" if (s.start, s.step) != (0, 1) else f"{s.stop}"
        lines = [f"{indent}for {s.var.name} in pl.range({rng}):"]
        for b in s.body:
            lines += print_stmt(b, indent + "    ")
        return lines
    raise TypeError(f"unknown statement {s!r}")


def print_function(f: Function, indent: str = "") -> str:
    params = ["self"]
    for p in f.params:
        ts = type_str(p.var.type)
        params.append(f"{p.var.name}: {_WRAP.get(p.direction, '{}').format(ts)}")
    ret = ""
    if f.return_types:
        rts = [type_str(t) for t in f.return_types]
        ret = " -> " + (rts[0] if len(rts) == 1 else f"tuple[{', '.join(rts)}]")
    lines = [
        f"{indent}@pl.function(type=pl.FunctionType.{f.func_type.value})",
        f"{indent}def {f.name}({', '.join(params)}){ret}:",
    ]
    for s in f.body:
        lines += print_stmt(s, indent + "    ")
    if not f.body:
        lines.append(indent + "    pass")
    return "\n".join(lines)


def print_program(p: Program) -> str:
    parts = [f"# pypto.program: {p.name}", "import pypto.language as pl", "", "", "@pl.program",
             f"class {p.name}:"]
    funcs = [print_function(f, "    ") for f in p.functions.values()]
    return "\n".join(parts) + "\n" + "\n\n".join(funcs) + "\n"
