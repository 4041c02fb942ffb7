"""The pass base classes, below both the passes and the manager that runs them."""

from __future__ import annotations

from pypto.ir_core.nodes import Function, Program

__all__ = ["FunctionPass", "Pass"]


class Pass:
    """A named Program -> Program transformation."""

    name = "Pass"

    def __call__(self, program: Program) -> Program:
        return self.run(program)

    def run(self, program: Program) -> Program:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class FunctionPass(Pass):
    """A pass applied to each function independently."""

    def run(self, program: Program) -> Program:
        return program.with_functions([self.run_function(f) for f in program.functions.values()])

    def run_function(self, func: Function) -> Function:
        raise NotImplementedError
