"""`pypto.ir` as upstream PyPTO spells it: the IR (nodes, types, printer, passes, from
`pypto.ir_core`) and `compile` / `CompiledProgram` (from `pypto.runtime`), handed on. Nothing
below imports this module, so it may stand above them all."""

from pypto.ir_core.nodes import (
    Assign,
    BinExpr,
    Call,
    Const,
    EvalStmt,
    For,
    Function,
    FunctionType,
    KernelCall,
    Param,
    Program,
    Return,
    Span,
    Var,
)
from pypto.ir_core.pass_base import FunctionPass, Pass
from pypto.ir_core.pass_manager import (
    CallbackInstrument,
    DumpInstrument,
    PassInstrument,
    PassManager,
    ProfilingInstrument,
)
from pypto.ir_core.printer import print_program
from pypto.ir_core.types import DataType, MemRef, ScalarType, TensorType, TileType
from pypto.runtime.compile import compile_program as compile  # upstream's name
from pypto.runtime.compiled_program import CompiledProgram

__all__ = ["Assign", "BinExpr", "Call", "CallbackInstrument", "CompiledProgram", "Const",
           "DataType", "DumpInstrument", "EvalStmt", "For", "Function", "FunctionPass",
           "FunctionType", "KernelCall", "MemRef", "Param", "Pass", "PassInstrument",
           "PassManager", "ProfilingInstrument", "Program", "Return", "ScalarType", "Span",
           "TensorType", "TileType", "Var", "compile", "print_program"]
