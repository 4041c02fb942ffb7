"""`@pl.program`, `@pl.function` and `pl.parse_program`: the entry points that turn a class into IR."""

from __future__ import annotations

import ast
import inspect
import linecache
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
    frame = inspect.currentframe().f_back
    env = dict(frame.f_globals)
    env.update(frame.f_locals)
    try:
        lines, first, filename = class_source(cls, frame)
    finally:
        del frame
    indent = len(lines[0]) - len(lines[0].lstrip())
    return parse_program(textwrap.dedent("".join(lines)), filename, env, first - 1, indent)


def class_source(cls: type, frame) -> tuple[list[str], int, str]:
    """(lines, first line number, file name) of the class being decorated in `frame`.

    `inspect` finds the source of classes in importable modules. It cannot in IPython or
    Jupyter, for code run with `exec`, or for a module loaded by `importlib` without an entry
    in `sys.modules`; `linecache` still holds that source under the decorating frame's file
    name (IPython registers every cell there; a real file is read on demand), so the class is
    found there at the decorator's line.
    """
    try:
        lines, first = inspect.getsourcelines(cls)
        return lines, first, inspect.getsourcefile(cls) or "<unknown>"
    except (OSError, TypeError) as exc:
        reason = str(exc)
    filename, line = frame.f_code.co_filename, frame.f_lineno
    lines = linecache.getlines(filename, frame.f_globals)
    found = _class_at(lines, line, cls.__name__) if lines else None
    if found is None:
        where = (f"{filename}:{line} is not in linecache" if not lines
                 else f"no class {cls.__name__!r} decorated at {filename}:{line}")
        raise ParserError(f"source of class {cls.__name__!r} is not available ({reason}; {where}); "
                          "pass the source text to pl.parse_program(source, filename)",
                          filename, line, 0)
    first, last = found
    return lines[first - 1:last], first, filename


def _class_at(lines: list[str], line: int, name: str) -> tuple[int, int] | None:
    """(first, last) line of the class `name` whose decorators or header span `line`."""
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if first <= line <= node.lineno:
                return first, node.end_lineno
    return None


def function(fn=None, *, type: FunctionType = FunctionType.InCore):
    """Method decorator marking a kernel (InCore) or the orchestration function.

    The parser reads the decorator from the source; at run time it leaves the method as is.
    """
    if fn is None:
        return lambda f: f
    return fn
