"""`@pl.program`, `@pl.function` and `pl.parse_program`: the entry points that turn a class into IR."""

from __future__ import annotations

import inspect
import sys
import textwrap

from pypto.compile_profiling import get_active_profiler
from pypto.errors import ParserError
from pypto.ir.nodes import FunctionType, Program
from pypto.language.parser import parse_source


def parse_program(source: str, filename: str = "<string>", env: dict | None = None,
                  line_offset: int = 0, col_offset: int = 0) -> Program:
    """Parse the source of one `@pl.program` class into an `ir.Program`.

    `env` resolves names used as compile-time constants (e.g. shape sizes); the decorator
    passes the caller's globals and locals. Generated programs call this directly. Recorded
    as the `parse` stage when a profiler is active.
    """
    prof = get_active_profiler()
    if prof is None:
        return parse_source(source, filename, env, line_offset, col_offset)
    prof._begin_stage("parse", {"file": filename}, "parse")
    try:
        prog = parse_source(source, filename, env, line_offset, col_offset)
    except BaseException as exc:
        prof._end_stage(error=type(exc).__name__)
        raise
    prof._end_stage({"program": prog.name, "functions": len(prog.functions)})
    return prog


def program(cls: type) -> Program:
    """Class decorator: parse the class body (from its source) into an `ir.Program`."""
    frame = sys._getframe(1)
    env = dict(frame.f_globals)
    env.update(frame.f_locals)
    del frame
    try:
        lines, first = inspect.getsourcelines(cls)
        filename = inspect.getsourcefile(cls) or "<unknown>"
    except (OSError, TypeError) as exc:
        raise ParserError(f"source of class {cls.__name__!r} is not available ({exc}); "
                          "use pl.parse_program(source, filename)", "<unknown>", 0, 0) from None
    indent = len(lines[0]) - len(lines[0].lstrip())
    return parse_program(textwrap.dedent("".join(lines)), filename, env, first - 1, indent)


def function(fn=None, *, type: FunctionType = FunctionType.InCore):
    """Method decorator marking a kernel (InCore) or the orchestration function.

    The parser reads the decorator from the source; at run time it leaves the method as is.
    """
    if fn is None:
        return lambda f: f
    return fn
