"""Which `pypto` this is, and how to add an extra to it without fetching another one.

The name `pypto` on the public package index belongs to the PyPTO framework itself, a
different code base with the same import name. This one is installed from its checkout, so
every hint that installs an extra names the checkout (`pip install -e '<checkout>[scale]'`),
or, in an install without one, the extra's own requirements: never `pip install 'pypto[...]'`,
which would fetch the other project.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pypto import __version__

__all__ = ["WHAT", "checkout_root", "install_extra_hint", "version_line"]

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


def install_extra_hint(extra: str) -> str:
    """The command that installs `extra` into this install, fetching nothing named pypto."""
    root = checkout_root()
    if root is not None:
        where = "." if root == Path.cwd() else str(root)
        return f"python3 -m pip install -e '{where}[{extra}]'"
    reqs = _extra_requirements(extra)
    if reqs:
        return "python3 -m pip install " + " ".join(f"'{r}'" for r in reqs)
    return (f"python3 -m pip install -e '<the PyPTO compile-profiling checkout>[{extra}]' "
            "(not 'pypto[...]': that is another project)")


def version_line(prog: str) -> str:
    """What `--version` prints."""
    return f"{prog} {__version__} ({WHAT})"
