"""Typed IR, printer, pass pipeline and `ir.compile` (parse -> passes -> codegen)."""

from pypto.ir.compiled_program import CompiledProgram
from pypto.ir.nodes import (
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
from pypto.ir.pass_base import FunctionPass, Pass
from pypto.ir.pass_manager import (
    CallbackInstrument,
    DumpInstrument,
    PassInstrument,
    PassManager,
    ProfilingInstrument,
)
from pypto.ir.printer import print_program
from pypto.ir.types import DataType, MemRef, ScalarType, TensorType, TileType

__all__ = [
    "Assign",
    "BinExpr",
    "Call",
    "CallbackInstrument",
    "CompiledProgram",
    "Const",
    "DataType",
    "DumpInstrument",
    "EvalStmt",
    "For",
    "Function",
    "FunctionPass",
    "FunctionType",
    "KernelCall",
    "MemRef",
    "Param",
    "Pass",
    "PassInstrument",
    "PassManager",
    "ProfilingInstrument",
    "Program",
    "Return",
    "ScalarType",
    "Span",
    "TensorType",
    "TileType",
    "Var",
    "compile",
    "print_program",
]


def compile(program: Program, output_dir: str | None = None, profiling: bool = False,
            dump_passes: bool = False, **kwargs) -> CompiledProgram:
    """Run the pass pipeline and codegen; returns the output directory as a `CompiledProgram`
    (a `str` that can be called with the program's tensors; see pypto.ir.compiler)."""
    from pypto.ir.compiler import compile_program

    return compile_program(program, output_dir, profiling, dump_passes, **kwargs)
