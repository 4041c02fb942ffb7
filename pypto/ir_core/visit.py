"""Generic traversal helpers shared by the passes: rebuild expressions, substitute, count."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from pypto.ir_core.nodes import (
    Assign,
    BinExpr,
    Call,
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


def map_expr(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Rebuild `e` bottom-up, applying `fn` to every node after its children."""
    if isinstance(e, BinExpr):
        e = dataclasses.replace(e, lhs=map_expr(e.lhs, fn), rhs=map_expr(e.rhs, fn))
    elif isinstance(e, (Call, KernelCall)):
        e = dataclasses.replace(e, args=tuple(map_expr(a, fn) for a in e.args))
    return fn(e)


def map_stmt(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Apply `map_expr(., fn)` to every expression of a statement, loop bodies included."""
    if isinstance(s, Assign):
        return dataclasses.replace(s, target=map_expr(s.target, fn), value=map_expr(s.value, fn))
    if isinstance(s, EvalStmt):
        return dataclasses.replace(s, value=map_expr(s.value, fn))
    if isinstance(s, Return):
        return dataclasses.replace(s, values=tuple(map_expr(v, fn) for v in s.values))
    if isinstance(s, For):
        return dataclasses.replace(s, body=tuple(map_stmt(b, fn) for b in s.body))
    raise TypeError(f"unknown statement {s!r}")


def substitute(stmts: tuple[Stmt, ...], mapping: dict[str, Expr]) -> tuple[Stmt, ...]:
    """Replace uses (not assignment targets) of the named variables."""

    def repl(e: Expr) -> Expr:
        return mapping.get(e.name, e) if isinstance(e, Var) else e

    out = []
    for s in stmts:
        if isinstance(s, Assign):
            out.append(dataclasses.replace(s, value=map_expr(s.value, repl)))
        else:
            out.append(map_stmt(s, repl))
    return tuple(out)


def iter_exprs(e: Expr) -> Iterator[Expr]:
    """`e` and all its sub-expressions, pre-order."""
    yield e
    if isinstance(e, BinExpr):
        yield from iter_exprs(e.lhs)
        yield from iter_exprs(e.rhs)
    elif isinstance(e, (Call, KernelCall)):
        for a in e.args:
            yield from iter_exprs(a)


def stmt_values(s: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement reads (loop bodies excluded)."""
    if isinstance(s, (Assign, EvalStmt)):
        return (s.value,)
    if isinstance(s, Return):
        return s.values
    return ()


def used_names(s: Stmt) -> set[str]:
    """Names of variables a statement reads, loop bodies included."""
    names = {x.name for v in stmt_values(s) for x in iter_exprs(v) if isinstance(x, Var)}
    if isinstance(s, For):
        for b in s.body:
            names |= used_names(b)
    return names


def iter_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """All statements, descending into loop bodies."""
    for s in stmts:
        yield s
        if isinstance(s, For):
            yield from iter_stmts(s.body)


def stmt_count(stmts: tuple[Stmt, ...]) -> int:
    """Statements, loop bodies included."""
    n = len(stmts)
    for s in stmts:
        if type(s) is For:
            n += stmt_count(s.body)
    return n


def function_size(f: Function) -> int:
    """The IR size reported per pass: statements, loop bodies included (cheap to count, so
    profiling can afford it before and after every pass)."""
    return stmt_count(f.body)


def program_size(p: Program) -> int:
    return sum(function_size(f) for f in p.functions.values())


def all_names(f: Function) -> set[str]:
    """Every variable name a function binds (params, assignments, loop variables)."""
    names = {p.var.name for p in f.params}
    for s in iter_stmts(f.body):
        if isinstance(s, Assign):
            names.add(s.target.name)
        elif isinstance(s, For):
            names.add(s.var.name)
    return names


def fresh_name(base: str, taken: set[str]) -> str:
    """`base_1`, `base_2`, ... : the first not in `taken` (which is updated)."""
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    name = f"{base}_{i}"
    taken.add(name)
    return name
