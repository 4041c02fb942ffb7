"""ConvertToSSA: give every assignment a name of its own (`x`, `x_1`, ...) and rename uses.

Runs after UnrollLoops, so bodies are straight-line and no phi/yield is needed.
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, For, Function, Var
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.visit import all_names, fresh_name, substitute


class ConvertToSSA(FunctionPass):
    name = "ConvertToSSA"

    def run_function(self, func: Function) -> Function:
        if any(isinstance(s, For) for s in func.body):
            raise CompileError(f"ConvertToSSA: function {func.name!r} still has loops; "
                               "run UnrollLoops first")
        taken = all_names(func)
        defined = {p.var.name for p in func.params}
        current: dict[str, Var] = {}
        body = []
        for s in func.body:
            (s,) = substitute((s,), current)
            if isinstance(s, Assign):
                name = s.target.name
                if name in defined:
                    var = dataclasses.replace(s.target, name=fresh_name(name, taken))
                    current[name] = var
                    s = dataclasses.replace(s, target=var)
                defined.add(name)
            body.append(s)
        return dataclasses.replace(func, body=tuple(body))
