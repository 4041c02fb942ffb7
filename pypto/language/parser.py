"""`@pl.program` class source -> IR, via Python's `ast`. Every rejection names file:line:col."""

from __future__ import annotations

import ast
import types

from pypto.errors import ParserError
from pypto.ir_core.nodes import (
    Assign,
    BinExpr,
    Const,
    EvalStmt,
    Expr,
    For,
    Function,
    FunctionType,
    Param,
    Program,
    Return,
    Span,
    Stmt,
    Var,
)
from pypto.ir_core.types import (
    DTYPES,
    INDEX,
    INT32,
    ScalarType,
    TensorType,
    TileType,
    Type,
    same_shape_dtype,
    type_str,
)
from pypto.language.op_calls import (
    OpCallParser,
    describe,
)

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
PACKAGE = "pypto.language"   # the DSL module, `import pypto.language as pl`


def _fold_int(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a // b if op == "//" else a % b


class _FunctionSig:
    __slots__ = ("func_type", "name", "node", "params", "return_types")

    def __init__(self, name, func_type, params, return_types, node):
        self.name, self.func_type, self.params = name, func_type, params
        self.return_types, self.node = return_types, node


class SourceReader:
    """Where a node of the source is, and what the module's names say: its imports of the DSL,
    its integer constants (shape sizes) and the types written in annotations. `env` resolves
    module-level constants and the `pl` alias. What the parser of a class stands on."""

    def __init__(self, filename: str, env: dict | None, line_offset: int, col_offset: int):
        self.filename, self.line_offset, self.col_offset = filename, line_offset, col_offset
        self.env = env or {}
        # names the DSL module is bound to (by its name: the parser sits below the package)
        self.pl_names = {"pl"} | {k for k, v in self.env.items()
                                  if isinstance(v, types.ModuleType) and v.__name__ == PACKAGE}

    # ---- helpers -------------------------------------------------------------------------
    def span(self, node: ast.AST) -> Span:
        return Span(self.filename, node.lineno + self.line_offset,
                    node.col_offset + self.col_offset + 1)

    def error(self, node: ast.AST, message: str) -> ParserError:
        s = self.span(node)
        return ParserError(message, s.filename, s.line, s.col)

    def dotted(self, node: ast.AST) -> str | None:
        """`pl.FunctionType.InCore` -> "pl.FunctionType.InCore" (alias normalised to pl)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append("pl" if node.id in self.pl_names else node.id)
        return ".".join(reversed(parts))

    def const_int(self, node: ast.AST, what: str) -> int:
        """A compile-time integer: literal, module constant, or arithmetic of those."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and type(self.env.get(node.id)) is int:
            return self.env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.const_int(node.operand, what)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.const_int(node.left, what), self.const_int(node.right, what)
            try:
                return _fold_int(_BINOPS[type(node.op)], a, b)
            except ZeroDivisionError:
                raise self.error(node, f"division by zero in {what}") from None
        raise self.error(node, f"{what} must be a compile-time integer")

    def int_list(self, node: ast.AST, what: str) -> tuple[int, ...]:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, f"{what} must be a list like [64, 128]")
        return tuple(self.const_int(e, what) for e in node.elts)

    def dtype(self, node: ast.AST):
        name = self.dotted(node)
        if name and name.startswith("pl.") and name[3:] in DTYPES and name[3:] != "INDEX":
            return DTYPES[name[3:]]
        raise self.error(node, f"unknown dtype {ast.unparse(node)!r} (use pl.FP32, pl.FP16 or pl.INT32)")

    # ---- the source around the class ------------------------------------------------------
    def note_import(self, node: ast.Import | ast.ImportFrom) -> None:
        """`import pypto.language as X` / `from pypto import language as X`: X means pl."""
        for alias in node.names:
            full = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
            if full == "pypto.language" and alias.asname:
                self.pl_names.add(alias.asname)

    def module_constant(self, node: ast.Assign | ast.AnnAssign) -> None:
        """`NAME = value` (or `A, B = 1, 2`, `NAME: int = value`) at the top of the source:
        integers as compile-time integers, floats as literals."""
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return  # `N: int` alone binds nothing
            targets, value = [node.target], node.value
        elif len(node.targets) == 1:
            targets, value = node.targets, node.value
        else:
            raise self.error(node, "assign one constant at a time (A = B = 1 is not supported)")
        target = targets[0]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        else:
            pairs = [(target, value)]
        for name, expr in pairs:
            if not isinstance(name, ast.Name):
                raise self.error(name, "module-level constants are assigned to plain names")
            self.env[name.id] = self.constant(expr, name.id)

    def constant(self, node: ast.AST, name: str) -> int | float:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) is float:
            return -node.operand.value
        if isinstance(node, ast.Constant) and type(node.value) is float:
            return node.value
        try:
            return self.const_int(node, f"module-level constant {name!r}")
        except ParserError:
            raise self.error(node, f"module-level constant {name!r} must be an integer or "
                                   "float literal or integer arithmetic of constants (pass "
                                   "other values with env=)") from None

    def parse_type(self, node: ast.AST) -> tuple[Type, str]:
        """An annotation -> (type, parameter direction)."""
        if isinstance(node, ast.Subscript):
            head = self.dotted(node.value)
            if head in ("pl.Out", "pl.InOut"):
                inner, _ = self.parse_type(node.slice)
                if not isinstance(inner, TensorType):
                    raise self.error(node, f"{head} wraps a pl.Tensor")
                return inner, "out" if head == "pl.Out" else "inout"
            if head == "pl.Scalar":
                return ScalarType(self.dtype(node.slice)), "scalar"
            if head in ("pl.Tensor", "pl.Tile"):
                items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if len(items) not in (2, 3) or (head == "pl.Tensor" and len(items) != 2):
                    raise self.error(node, f"{head} takes [shape, dtype]")
                shape = self.int_list(items[0], "shape")
                if not shape or any(d <= 0 for d in shape):
                    raise self.error(items[0], f"shape {list(shape)} must have positive sizes")
                dt = self.dtype(items[1])
                if head == "pl.Tensor":
                    return TensorType(shape, dt), "in"
                space = None
                if len(items) == 3:
                    sp = self.dotted(items[2]) or ""
                    space = sp.rsplit(".", 1)[-1]
                return TileType(shape, dt, space), "in"
        raise self.error(node, f"unsupported type annotation {ast.unparse(node)!r}")


class ProgramParser(SourceReader, OpCallParser):
    """Parses one class: its functions' signatures, statements and expressions (the op calls:
    `OpCallParser`)."""

    # ---- a program -----------------------------------------------------------------------
    def parse_class(self, cls: ast.ClassDef) -> Program:
        sigs: dict[str, _FunctionSig] = {}
        for item in cls.body:
            if isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
                continue  # docstring
            if isinstance(item, ast.Pass):
                continue
            if not isinstance(item, ast.FunctionDef):
                raise self.error(item, "a @pl.program class holds only @pl.function methods")
            if item.name in sigs:
                raise self.error(item, f"function {item.name!r} is defined twice")
            sigs[item.name] = self.parse_signature(item)
        orch = [s for s in sigs.values() if s.func_type is FunctionType.Orchestration]
        if len(orch) != 1:
            raise self.error(cls, f"program {cls.name!r} needs exactly one Orchestration function, "
                                  f"found {len(orch)}")
        self.sigs = sigs
        functions = {name: self.parse_body(sig) for name, sig in sigs.items()}
        return Program(cls.name, functions, self.filename)

    def parse_signature(self, fn: ast.FunctionDef) -> _FunctionSig:
        func_type = None
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.dotted(target) != "pl.function":
                raise self.error(dec, f"unsupported decorator {ast.unparse(dec)!r}")
            func_type = FunctionType.InCore
            if isinstance(dec, ast.Call):
                if dec.args:
                    raise self.error(dec, "pl.function takes only type=...")
                for kw in dec.keywords:
                    val = self.dotted(kw.value) or ""
                    if kw.arg != "type" or not val.startswith("pl.FunctionType."):
                        raise self.error(kw, "pl.function takes only type=pl.FunctionType.<kind>")
                    kind = val.rsplit(".", 1)[-1]
                    if kind not in FunctionType.__members__:
                        raise self.error(kw, f"unknown function type {kind!r} (InCore or Orchestration)")
                    func_type = FunctionType[kind]
        if func_type is None:
            raise self.error(fn, f"method {fn.name!r} needs @pl.function")
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.error(fn, "functions take plain positional parameters only")
        if not a.args or a.args[0].arg != "self":
            raise self.error(fn, f"{fn.name!r}: first parameter must be self")
        params = []
        for arg in a.args[1:]:
            if arg.annotation is None:
                raise self.error(arg, f"parameter {arg.arg!r} needs a type annotation")
            t, direction = self.parse_type(arg.annotation)
            if isinstance(t, TileType):
                raise self.error(arg, "parameters are tensors or scalars, not tiles")
            params.append(Param(Var(arg.arg, t, self.span(arg)), direction))
        returns: tuple[Type, ...] = ()
        r = fn.returns
        if r is not None and not (isinstance(r, ast.Constant) and r.value is None):
            if isinstance(r, ast.Subscript) and self.dotted(r.value) in ("tuple", "typing.Tuple"):
                elts = r.slice.elts if isinstance(r.slice, ast.Tuple) else [r.slice]
                returns = tuple(self.parse_type(e)[0] for e in elts)
            else:
                returns = (self.parse_type(r)[0],)
        return _FunctionSig(fn.name, func_type, tuple(params), returns, fn)

    # ---- bodies --------------------------------------------------------------------------
    def parse_body(self, sig: _FunctionSig) -> Function:
        self.sig = sig
        self.scope: dict[str, Var] = {p.var.name: p.var for p in sig.params}
        self.directions = {p.var.name: p.direction for p in sig.params}
        body = self.parse_stmts(sig.node.body, top=True)
        return Function(sig.name, sig.func_type, sig.params, sig.return_types, body,
                        self.span(sig.node))

    def parse_stmts(self, nodes: list[ast.stmt], top: bool = False) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for i, node in enumerate(nodes):
            if isinstance(node, ast.Pass):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and i == 0 and top:
                continue  # docstring
            out.append(self.parse_stmt(node))
        return tuple(out)

    def bind(self, name: str, value: Expr, node: ast.AST) -> Var:
        if value.type is None:
            raise self.error(node, f"call returns nothing; cannot assign it to {name!r}")
        old = self.scope.get(name)
        if old is not None and not same_shape_dtype(old.type, value.type):
            raise self.error(node, f"{name!r} is {describe(old.type)} but is assigned "
                                   f"{describe(value.type)}")
        var = Var(name, value.type, self.span(node))
        self.scope[name] = var
        return var

    def parse_stmt(self, node: ast.stmt) -> Stmt:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self.error(node, "assign to a single name")
            value = self.parse_expr(node.value)
            return Assign(self.bind(node.targets[0].id, value, node.targets[0]), value, self.span(node))
        if isinstance(node, ast.AnnAssign):
            if not isinstance(node.target, ast.Name) or node.value is None:
                raise self.error(node, "annotated assignment needs a name and a value")
            declared, _ = self.parse_type(node.annotation)
            value = self.parse_expr(node.value)
            if value.type is None or not same_shape_dtype(declared, value.type):
                raise self.error(node.annotation, f"annotation says {type_str(declared)} but the "
                                                  f"value is {describe(value.type)}")
            return Assign(self.bind(node.target.id, value, node.target), value, self.span(node))
        if isinstance(node, ast.Expr):
            if not isinstance(node.value, ast.Call):
                raise self.error(node, "expression statement must be a call")
            return EvalStmt(self.parse_expr(node.value), self.span(node))
        if isinstance(node, ast.For):
            return self.parse_for(node)
        if isinstance(node, ast.Return):
            return self.parse_return(node)
        raise self.error(node, f"unsupported statement: {type(node).__name__}")

    def parse_for(self, node: ast.For) -> For:
        it = node.iter
        if not (isinstance(it, ast.Call) and self.dotted(it.func) == "pl.range"):
            raise self.error(it, "loops iterate over pl.range(...)")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "loop variable must be a single name")
        if node.orelse:
            raise self.error(node, "for/else is not supported")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "pl.range takes 1 to 3 compile-time integers")
        bounds = [self.const_int(a, "pl.range bound") for a in it.args]
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
        if step == 0:
            raise self.error(it, "pl.range step must not be 0")
        if not range(start, stop, step):
            raise self.error(it, "pl.range trip count must be positive")
        name = node.target.id
        if name in self.scope:
            raise self.error(node.target, f"loop variable {name!r} shadows an existing name")
        var = Var(name, ScalarType(INDEX), self.span(node.target))
        self.scope[name] = var
        body = self.parse_stmts(node.body)
        del self.scope[name]
        return For(var, start, stop, step, body, self.span(node))

    def parse_return(self, node: ast.Return) -> Return:
        if node.value is None:
            values: tuple[Expr, ...] = ()
        elif isinstance(node.value, ast.Tuple):
            values = tuple(self.parse_expr(e) for e in node.value.elts)
        else:
            values = (self.parse_expr(node.value),)
        want = self.sig.return_types
        got = [v.type for v in values]
        if len(got) != len(want) or not all(same_shape_dtype(a, b) for a, b in zip(got, want)):
            raise self.error(node, f"{self.sig.name!r} returns {', '.join(map(describe, got)) or 'nothing'}"
                                   f" but is annotated {', '.join(map(type_str, want)) or 'nothing'}")
        return Return(values, self.span(node))

    # ---- expressions ---------------------------------------------------------------------
    def parse_expr(self, node: ast.expr) -> Expr:
        sp = self.span(node)
        if isinstance(node, ast.Name):
            if node.id in self.scope:
                return Var(node.id, self.scope[node.id].type, sp)
            value = self.env.get(node.id)
            if type(value) in (int, float):
                return Const(value, INDEX if type(value) is int else DTYPES["FP32"], sp)
            raise self.error(node, f"unknown name {node.id!r}")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return Const(node.value, INDEX if type(node.value) is int else DTYPES["FP32"], sp)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.parse_expr(node.operand)
            if isinstance(inner, Const):
                return Const(-inner.value, inner.dtype, sp)
            return BinExpr("-", Const(0, INDEX, sp), self.index_expr(inner, node.operand), sp)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            lhs = self.index_expr(self.parse_expr(node.left), node.left)
            rhs = self.index_expr(self.parse_expr(node.right), node.right)
            return BinExpr(_BINOPS[type(node.op)], lhs, rhs, sp)
        if isinstance(node, ast.Call):
            return self.parse_call(node)
        raise self.error(node, f"unsupported expression: {ast.unparse(node)!r}")

    def index_expr(self, e: Expr, node: ast.AST) -> Expr:
        if not (isinstance(e.type, ScalarType) and e.type.dtype in (INDEX, INT32)):
            raise self.error(node, f"arithmetic operators work on integer indices only, got "
                                   f"{describe(e.type)}; use pl.add/pl.mul/... for tiles")
        return e


def parse_source(source: str, filename: str, env: dict | None, line_offset: int,
                 col_offset: int) -> Program:
    """Parse the single class in `source`. Around it the source may hold imports (an alias
    of `pypto.language` counts as `pl`), a docstring and module-level constants (`N = 64`,
    `ROWS, COLS = 64, 128`, `BLOCK: int = N // 4`, `SCALE = 0.5`): they are evaluated here,
    in order, and shadow names of the same name in `env`."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        raise ParserError(f"syntax error: {exc.msg}", filename, (exc.lineno or 0) + line_offset,
                          (exc.offset or 0) + col_offset) from None
    parser = ProgramParser(filename, dict(env or {}), line_offset, col_offset)
    classes = []
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.ClassDef):
            classes.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            parser.note_import(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            parser.module_constant(node)
        elif not (i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str)):
            what = ast.unparse(node).splitlines()[0][:60]
            raise parser.error(node, "program source holds one class, imports and integer or "
                                     f"float constants only, not {what!r}")
    if len(classes) != 1:
        raise ParserError(f"expected one program class, found {len(classes)}", filename,
                          1 + line_offset, 1)
    return parser.parse_class(classes[0])
