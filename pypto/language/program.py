"""`@pl.program`, `@pl.function` and `pl.parse_program`: the entry points that turn a class into IR."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from pypto.compile_profiling import get_active_profiler
from pypto.errors import ParserError
from pypto.ir_core.nodes import FunctionType, Program
from pypto.language.parser import parse_source


def parse_program(source: str, filename: str = "<string>", env: dict | None = None,
                  line_offset: int = 0, col_offset: int = 0) -> Program:
    """Parse the source of one `@pl.program` class into an `ir.Program`.

    The source holds the one class and may hold imports and module-level constants around it
    (`N = 64`, `ROWS, COLS = 64, 128`, `SCALE = 0.5`), evaluated here. `env` adds names from
    outside the source (e.g. `env=globals()`); the source's own constants win. The decorator
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
    except (OSError, TypeError):
        pass
    filename, line = frame.f_code.co_filename, frame.f_lineno
    lines = linecache.getlines(filename, frame.f_globals)
    found = _class_at(lines, line, cls.__name__) if lines else None
    if found is None:
        name = cls.__name__
        if not lines:
            raise ParserError(
                f"source of class {name!r} is not available: {filename} is no file and not in "
                "linecache (code compiled from a string, e.g. by exec?); register the source "
                f"before running it: exec(compile(src, pl.register_source(src, {filename!r}), "
                "'exec'), namespace), or parse it with pl.parse_program(src)",
                filename, line, 0)
        raise ParserError(f"source of class {name!r} is not available: no class {name!r} is "
                          f"decorated at {filename}:{line} (the file changed since it ran?); "
                          "parse the source with pl.parse_program(src)", filename, line, 0)
    first, last = found
    return lines[first - 1:last], first, filename


def register_source(source: str, filename: str = "<pypto-source>") -> str:
    """Put `source` into `linecache` under `filename` (as IPython does for every cell) and
    return `filename`, so that `@pl.program` classes in code compiled from that string find
    their source, and tracebacks show its lines:

        exec(compile(src, pl.register_source(src, "<cell-1>"), "exec"), namespace)
    """
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


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
