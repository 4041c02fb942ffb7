"""Which pypto this is: the version says so, and no hint or document installs the index's
`pypto` (the PyPTO framework, another code base with the same import name)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.version import Version

import pypto
from pypto import about

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
# `pip install pypto`, `pip install 'pypto[scale]'`, `pip install -U "pypto"`: the index's one
INDEX_INSTALL = re.compile(r"pip3? install[^\n`]*?(?<![\w./-])['\"]?pypto(\[|['\"\s`]|$)")


def test_the_version_carries_a_local_label_that_says_which_pypto():
    version = Version(pypto.__version__)
    assert version.local == "profiling"        # never uploadable, never the index's 0.2.x
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "pypto" and project["version"] == pypto.__version__
    assert about.version_line("pypto-profile") == (
        f"pypto-profile {pypto.__version__} ({about.WHAT})")


def test_an_extra_is_installed_from_the_checkout():
    assert about.checkout_root() == REPO
    hint = about.install_extra_hint("scale")
    assert hint.startswith(f"{about.python_command()} -m pip install -e '")
    assert hint.endswith("[scale]'")
    assert not INDEX_INSTALL.search(hint)


def test_without_a_checkout_the_hint_names_the_extras_own_requirements(monkeypatch):
    monkeypatch.setattr(about, "checkout_root", lambda: None)
    hint = about.install_extra_hint("scale")
    assert "pyarrow" in hint and "duckdb" in hint and "dask" in hint
    assert not INDEX_INSTALL.search(hint) and "-e" not in hint.split()


@pytest.mark.parametrize("text, found", [
    ("pip install 'pypto[scale]'", True), ("python3 -m pip install pypto", True),
    ('pip install -U "pypto"', True), ("pip install -e '.[scale]'", False),
    ("pip install -e /src/pypto[scale]", False), ("pip install pypto-tools", False)])
def test_the_index_install_pattern(text, found):
    assert bool(INDEX_INSTALL.search(text)) is found


def test_no_document_or_message_installs_the_index_pypto():
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "pypto").rglob("*.py")), *sorted((REPO / "examples").rglob("*.py"))]
    offenders = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INDEX_INSTALL.search(line) and "never" not in line.lower() \
                    and "not " not in line.lower():
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert offenders == []
