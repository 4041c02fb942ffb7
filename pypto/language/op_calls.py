"""The DSL's op calls, typed: `pl.load`, `pl.store`, `pl.matmul`, the elementwise and
reduction tile ops, `pl.create_tensor` and calls of the program's own kernels
(`self.kernel(...)`), each checked against its signature and the tensors' shapes.
`ProgramParser` gets them by inheriting `OpCallParser`."""

from __future__ import annotations

import ast

from pypto.ir_core.nodes import Call, Const, Expr, FunctionType, KernelCall, Var
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

ELEMENTWISE = {"add", "sub", "mul", "div", "maximum"}
UNARY = {"exp", "row_sum", "row_max"}
TIMING_SLOTS = 16   # Simpler's task-timing slots: timing_slot=0..15


def describe(t: Type | None) -> str:
    return "nothing" if t is None else type_str(t)


def print_off(e: Expr):
    return e.value if isinstance(e, Const) else "?"


class OpCallParser:
    """The op-call half of `ProgramParser` (which provides `parse_expr`, `span`, `error`,
    `scope`, `sig`, `directions` and the rest this uses)."""

    def call_args(self, node: ast.Call, names: list[str], op: str) -> dict[str, ast.expr]:
        """Positional and keyword arguments of a DSL call, by parameter name."""
        if len(node.args) > len(names):
            raise self.error(node, f"pl.{op} takes {len(names)} arguments, got {len(node.args)}")
        bound = dict(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names or kw.arg in bound:
                raise self.error(kw, f"pl.{op} got an unexpected argument {kw.arg!r}")
            bound[kw.arg] = kw.value
        missing = [n for n in names if n not in bound]
        if missing:
            raise self.error(node, f"pl.{op} is missing {', '.join(missing)}")
        return bound

    def parse_call(self, node: ast.Call) -> Expr:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            return self.parse_kernel_call(node, f.attr)
        name = self.dotted(f) or ""
        if not name.startswith("pl.") or name.count(".") != 1:
            raise self.error(node, f"unsupported call {ast.unparse(f)!r}")
        op = name[3:]
        orchestration = self.sig.func_type is FunctionType.Orchestration
        if op == "create_tensor":
            if not orchestration:
                raise self.error(node, "pl.create_tensor is for orchestration functions")
            a = self.call_args(node, ["shape", "dtype"], op)
            shape, dt = self.int_list(a["shape"], "shape"), self.dtype(a["dtype"])
            if not shape or any(d <= 0 for d in shape):
                raise self.error(a["shape"], f"shape {list(shape)} must have positive sizes")
            return Call(op, (), TensorType(shape, dt), {"shape": shape, "dtype": dt}, self.span(node))
        if op in {"load", "store", "matmul"} | ELEMENTWISE | UNARY:
            if orchestration:
                raise self.error(node, f"pl.{op} is a tile op; call it inside an InCore kernel")
            return getattr(self, f"op_{op if op in {'load', 'store', 'matmul'} else 'tile'}")(node, op)
        if op == "range":
            raise self.error(node, "pl.range is only allowed as a for-loop iterator")
        raise self.error(node, f"unknown op pl.{op}")

    def tile(self, node: ast.expr, op: str, what: str) -> Expr:
        e = self.parse_expr(node)
        if not isinstance(e.type, TileType):
            raise self.error(node, f"pl.{op} {what} must be a tile, got {describe(e.type)}")
        return e

    def window(self, node: ast.Call, op: str, tensor: Var, offsets_node: ast.expr, shape) -> tuple:
        if not isinstance(offsets_node, (ast.List, ast.Tuple)):
            raise self.error(offsets_node, "offsets must be a list like [0, i * 64]")
        offsets = tuple(self.index_expr(self.parse_expr(o), o) for o in offsets_node.elts)
        dims = tensor.type.shape
        if len(offsets) != len(dims) or len(shape) != len(dims):
            raise self.error(node, f"pl.{op}: tensor {tensor.name!r} has rank {len(dims)}; offsets "
                                   f"and shape must have {len(dims)} entries")
        for o, s, d in zip(offsets, shape, dims):
            if s > d or (isinstance(o, Const) and not 0 <= o.value <= d - s):
                raise self.error(node, f"pl.{op}: window offsets {[print_off(x) for x in offsets]} "
                                       f"shape {list(shape)} exceeds tensor {tensor.name!r} shape "
                                       f"{list(dims)}")
        return offsets

    def tensor_param(self, node: ast.expr, op: str) -> Var:
        e = self.parse_expr(node)
        if not isinstance(e, Var) or not isinstance(e.type, TensorType):
            raise self.error(node, f"pl.{op} needs a tensor parameter, got {ast.unparse(node)!r}")
        return e

    def op_load(self, node: ast.Call, op: str) -> Call:
        a = self.call_args(node, ["tensor", "offsets", "shapes"], op)
        tensor = self.tensor_param(a["tensor"], op)
        if self.directions.get(tensor.name) == "out":
            raise self.error(a["tensor"], f"{tensor.name!r} is pl.Out (write-only); declare it "
                                          "pl.InOut to load from it")
        shape = self.int_list(a["shapes"], "load shape")
        offsets = self.window(node, op, tensor, a["offsets"], shape)
        return Call("load", (tensor, *offsets), TileType(shape, tensor.type.dtype),
                    {"shape": shape}, self.span(node))

    def op_store(self, node: ast.Call, op: str) -> Call:
        a = self.call_args(node, ["tile", "offsets", "output_tensor"], op)
        tile = self.tile(a["tile"], op, "source")
        out = self.tensor_param(a["output_tensor"], op)
        if self.directions.get(out.name, "in") == "in":
            raise self.error(a["output_tensor"], f"cannot store into input {out.name!r}; declare it "
                                                 "pl.Out or pl.InOut")
        if tile.type.dtype != out.type.dtype:
            raise self.error(node, f"pl.store: tile dtype {tile.type.dtype.name} does not match "
                                   f"tensor {out.name!r} dtype {out.type.dtype.name}")
        offsets = self.window(node, op, out, a["offsets"], tile.type.shape)
        return Call("store", (tile, out, *offsets), out.type, {}, self.span(node))

    def op_matmul(self, node: ast.Call, op: str) -> Call:
        a = self.call_args(node, ["lhs", "rhs"], op)
        lhs, rhs = self.tile(a["lhs"], op, "lhs"), self.tile(a["rhs"], op, "rhs")
        ls, rs = lhs.type.shape, rhs.type.shape
        if len(ls) != 2 or len(rs) != 2 or ls[1] != rs[0]:
            raise self.error(node, f"pl.matmul shape mismatch: {list(ls)} @ {list(rs)}")
        if lhs.type.dtype != rhs.type.dtype:
            raise self.error(node, f"pl.matmul dtype mismatch: {lhs.type.dtype.name} and "
                                   f"{rhs.type.dtype.name}")
        acc = INT32 if lhs.type.dtype == INT32 else DTYPES["FP32"]
        return Call("matmul", (lhs, rhs), TileType((ls[0], rs[1]), acc), {}, self.span(node))

    def op_tile(self, node: ast.Call, op: str) -> Call:
        if op in UNARY:
            x = self.tile(self.call_args(node, ["tile"], op)["tile"], op, "operand")
            if op == "exp" and x.type.dtype == INT32:
                raise self.error(node, "pl.exp needs a floating-point tile")
            shape = x.type.shape
            if op != "exp":
                if len(shape) != 2:
                    raise self.error(node, f"pl.{op} needs a 2-D tile")
                shape = (shape[0], 1)
            return Call(op, (x,), TileType(shape, x.type.dtype), {}, self.span(node))
        a = self.call_args(node, ["lhs", "rhs"], op)
        x = self.tile(a["lhs"], op, "lhs")
        y = self.parse_expr(a["rhs"])
        xt = x.type
        if isinstance(y.type, TileType):
            ys = y.type.shape
            row_bcast = len(xt.shape) == 2 and ys == (xt.shape[0], 1)
            if ys != xt.shape and not row_bcast:
                raise self.error(node, f"pl.{op} shape mismatch: {list(xt.shape)} and {list(ys)}")
            if y.type.dtype != xt.dtype:
                raise self.error(node, f"pl.{op} dtype mismatch: {xt.dtype.name} and "
                                       f"{y.type.dtype.name}")
        elif isinstance(y, Const):
            if xt.dtype == INT32 and not float(y.value).is_integer():
                raise self.error(a["rhs"], f"pl.{op}: {y.value!r} is not an INT32 value")
            value = int(y.value) if xt.dtype == INT32 else float(y.value)
            y = Const(value, xt.dtype, y.span)
        elif not isinstance(y.type, ScalarType):
            raise self.error(a["rhs"], f"pl.{op} rhs must be a tile or a scalar")
        return Call(op, (x, y), TileType(xt.shape, xt.dtype), {}, self.span(node))

    def parse_kernel_call(self, node: ast.Call, callee: str) -> KernelCall:
        if self.sig.func_type is not FunctionType.Orchestration:
            raise self.error(node, "only the orchestration function calls kernels")
        sig = self.sigs.get(callee)
        if sig is None or sig.func_type is not FunctionType.InCore:
            raise self.error(node.func, f"unknown kernel {callee!r}")
        slot = None
        for kw in node.keywords:
            if kw.arg != "timing_slot":
                raise self.error(kw, f"kernel call {callee!r}: unknown keyword "
                                     f"{kw.arg or '**'!r} (the only one is timing_slot=N)")
            slot = getattr(kw.value, "value", None) if isinstance(kw.value, ast.Constant) else None
            if type(slot) is not int or not 0 <= slot < TIMING_SLOTS:
                raise self.error(kw.value, f"timing_slot must be an integer literal 0-"
                                           f"{TIMING_SLOTS - 1} (Simpler's task-timing slots)")
        if len(node.args) != len(sig.params):
            raise self.error(node, f"kernel {callee!r} takes {len(sig.params)} positional arguments, "
                                   f"got {len(node.args)}")
        args = []
        for arg_node, p in zip(node.args, sig.params):
            e = self.parse_expr(arg_node)
            if isinstance(p.var.type, ScalarType):
                if isinstance(e, Const):
                    e = Const(e.value if p.var.type.dtype == INDEX else
                              (int(e.value) if p.var.type.dtype == INT32 else float(e.value)),
                              p.var.type.dtype, e.span)
                elif not isinstance(e.type, ScalarType):
                    raise self.error(arg_node, f"kernel {callee!r} parameter {p.var.name!r} is a "
                                               f"scalar, got {describe(e.type)}")
            elif not (isinstance(e, Var) and same_shape_dtype(e.type, p.var.type)):
                raise self.error(arg_node, f"kernel {callee!r} parameter {p.var.name!r} is "
                                           f"{type_str(p.var.type)}, got {describe(e.type)}")
            args.append(e)
        rtype = sig.return_types[0] if len(sig.return_types) == 1 else None
        if len(sig.return_types) > 1:
            raise self.error(node, f"kernel {callee!r} returns several values; orchestration "
                                   "calls support one")
        return KernelCall(callee, tuple(args), rtype, self.span(node), slot)
