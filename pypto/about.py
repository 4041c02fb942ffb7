"""Which `pypto` this is, and how to add an extra to it without fetching another one.

The name `pypto` on the public package index belongs to the PyPTO framework itself, a
different code base with the same import name. This one is installed from its checkout, so
every hint that installs an extra names the checkout (`pip install -e '<checkout>[scale]'`),
or, in an install without one, the extra's own requirements: never `pip install 'pypto[...]'`,
which would fetch the other project.
"""

from __future__ import annotations

import functools
import os
import shlex
import sys
from pathlib import Path

from pypto import __version__

__all__ = ["WHAT", "checkout_root", "install_extra_hint", "python_command", "tool_command",
           "version_line"]

#: What this distribution is, in one phrase (the `--version` lines carry it).
WHAT = "the PyPTO compile-profiling reference, installed from its checkout; not the PyPTO " \
       "framework published as 'pypto' on PyPI"


@functools.lru_cache(maxsize=1)
def checkout_root() -> Path | None:
    """The checkout this package is imported from (editable install or source tree), else
    None (installed as a built wheel)."""
    root = Path(__file__).resolve().parent.parent
    try:
        project = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "pypto"' in project else None


def _extra_requirements(extra: str) -> list[str]:
    """The requirements the installed metadata lists for `extra` (without their markers)."""
    from importlib import metadata

    try:
        requires = metadata.requires("pypto") or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if marker and f'extra == "{extra}"' in marker.replace("'", '"'):
            out.append(spec.strip())
    return out


def _shell_path(path: str) -> str:
    """`path` as a hint prints it: relative when it lies under the current directory
    (`.venv/bin/python`), else absolute; quoted for a POSIX shell."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    if not rel.startswith(".."):
        path = rel if os.sep in rel else f".{os.sep}{rel}"
    return shlex.quote(path)


def python_command() -> str:
    """The interpreter running now, as a hint names it (never a bare `python3`, which may be
    another Python without this package)."""
    return _shell_path(sys.executable)


#: console script -> the module `python -m` runs for it
_TOOLS = {"pypto-profile": "pypto.compile_profiling",
          "pypto-merge-traces": "pypto.compile_profiling.cli.merge_traces"}


def tool_command(name: str) -> str:
    """How to run the command `name` (`pypto-profile`, `pypto-merge-traces`) in a new shell
    where the virtual environment is not active: its script beside the running interpreter
    (`.venv/bin/pypto-profile`), else the interpreter with `-m`."""
    script = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return _shell_path(script)
    return f"{python_command()} -m {_TOOLS[name]}"


def install_extra_hint(extra: str) -> str:
    """The command that installs `extra` into this install, fetching nothing named pypto."""
    root = checkout_root()
    if root is not None:
        where = "." if root == Path.cwd() else str(root)
        return f"{python_command()} -m pip install -e '{where}[{extra}]'"
    reqs = _extra_requirements(extra)
    if reqs:
        return f"{python_command()} -m pip install " + " ".join(f"'{r}'" for r in reqs)
    return (f"{python_command()} -m pip install -e '<the PyPTO compile-profiling checkout>"
            f"[{extra}]' (not 'pypto[...]': that is another project)")


def version_line(prog: str) -> str:
    """What `--version` prints."""
    return f"{prog} {__version__} ({WHAT})"
