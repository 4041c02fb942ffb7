"""IR nodes: expressions, statements, functions and programs (immutable; passes build new ones)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pypto.ir_core.types import DataType, ScalarType, TensorType, TileType, Type


class FunctionType(str, enum.Enum):
    """InCore functions are kernels run on one core; the Orchestration function submits them."""

    InCore = "InCore"
    Orchestration = "Orchestration"


@dataclass(frozen=True, slots=True)
class Span:
    """Source position of a node, so errors can name file, line and column."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


# ---- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    type: Type
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Const:
    value: int | float
    dtype: DataType
    span: Span | None = field(default=None, compare=False)

    @property
    def type(self) -> ScalarType:
        return ScalarType(self.dtype)


@dataclass(frozen=True, slots=True)
class BinExpr:
    """Integer index arithmetic (offsets computed from loop variables)."""

    op: str  # one of + - * // %
    lhs: Expr
    rhs: Expr
    span: Span | None = field(default=None, compare=False)

    @property
    def type(self) -> ScalarType:
        return self.lhs.type


@dataclass(frozen=True, slots=True)
class Call:
    """A tile op (`pl.add`, `pl.load`, ...) or `create_tensor`; static operands live in attrs."""

    op: str
    args: tuple[Expr, ...]
    type: Type
    attrs: dict = field(default_factory=dict)
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class KernelCall:
    """`self.kernel(...)` in an orchestration function: one task. `timing_slot` (0-15, from
    `timing_slot=N`): the task is timed into Simpler's task-timing slot N."""

    callee: str
    args: tuple[Expr, ...]
    type: Type | None
    span: Span | None = field(default=None, compare=False)
    timing_slot: int | None = None


Expr = Var | Const | BinExpr | Call | KernelCall

# ---- statements ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assign:
    target: Var
    value: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class EvalStmt:
    """An expression evaluated for its effect (a bare `pl.store(...)` or kernel call)."""

    value: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class For:
    """`for var in pl.range(start, stop, step)` with compile-time bounds."""

    var: Var
    start: int
    stop: int
    step: int
    body: tuple[Stmt, ...]
    span: Span | None = field(default=None, compare=False)

    @property
    def trip_count(self) -> int:
        return len(range(self.start, self.stop, self.step))


@dataclass(frozen=True, slots=True)
class Return:
    values: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False)


Stmt = Assign | EvalStmt | For | Return

# ---- functions and programs ----------------------------------------------------------------

DIRECTIONS = ("in", "out", "inout", "scalar")


@dataclass(frozen=True, slots=True)
class Param:
    var: Var
    direction: str  # one of DIRECTIONS


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    func_type: FunctionType
    params: tuple[Param, ...]
    return_types: tuple[Type, ...]
    body: tuple[Stmt, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Program:
    """What `@pl.program` returns: named functions in declaration order."""

    name: str
    functions: dict[str, Function]
    source_file: str = "<unknown>"

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.func_type is FunctionType.InCore]

    @property
    def orchestration(self) -> Function:
        return next(f for f in self.functions.values() if f.func_type is FunctionType.Orchestration)

    def with_functions(self, functions: list[Function]) -> Program:
        return Program(self.name, {f.name: f for f in functions}, self.source_file)


def is_tile(e: Expr) -> bool:
    return isinstance(e.type, TileType)


def is_tensor(e: Expr) -> bool:
    return isinstance(e.type, TensorType)
