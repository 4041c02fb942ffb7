"""Exceptions raised by the library; CLIs turn them into one-line messages."""


class PyptoError(Exception):
    """Base of every error this package raises on purpose."""


class ProfileWriteError(PyptoError):
    """A profile or trace could not be written (e.g. the directory is not writable)."""


class OutputPathError(ProfileWriteError):
    """An output path refused before anything is written: it is one of the inputs, or
    something other than a regular file (a directory, FIFO, socket or device) is there."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")

    def __reduce__(self):  # rebuilt from its parts (e.g. raised in a forked helper process)
        return type(self), (self.path, self.problem)


class ParserError(PyptoError):
    """A `@pl.program` class uses syntax, ops, shapes or dtypes the DSL does not accept."""

    def __init__(self, message: str, filename: str = "<unknown>", lineno: int = 0, col: int = 0):
        self.filename, self.lineno, self.col, self.problem = filename, lineno, col, message
        super().__init__(f"{filename}:{lineno}:{col}: {message}")

    def __reduce__(self):  # rebuilt from its parts (e.g. raised in a forked helper process)
        return type(self), (self.problem, self.filename, self.lineno, self.col)


class CompileError(PyptoError):
    """A pass or codegen rejected the program (e.g. a kernel does not fit on-chip memory)."""


class RuntimeConfigError(PyptoError, ValueError):
    """A `RunConfig` or `TensorSpec` is inconsistent with itself or with the program."""


class RuntimeConfigTypeError(RuntimeConfigError, TypeError):
    """A setting or argument of the wrong type (a `TypeError`, as upstream raises there)."""


class ExecutionError(PyptoError, RuntimeError):
    """A compiled program failed on the device (a kernel raised, or the run was refused)."""


class TraceInputError(PyptoError):
    """A trace input file is unreadable or not in a format we accept."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")

    def __reduce__(self):  # rebuilt from its parts (e.g. raised in a forked helper process)
        return type(self), (self.path, self.problem)


class CutError(PyptoError, ValueError):
    """A cut (`--window`, `--ranks`) that the run cannot give: a rank it does not hold."""


class GateError(PyptoError, ValueError):
    """A comparison's gate cannot be evaluated as asked (a run without the device capture
    the others have, a `--fail-above` pattern that names no figure): it fails closed."""


class MissingDependencyError(PyptoError):
    """An optional dependency is not installed; the message names the pip command."""


class QueryError(PyptoError):
    """An SQL query over a run failed (DuckDB's message, one line)."""


class QueryTimeout(QueryError):
    """A query ran longer than its `--timeout` and was stopped."""
