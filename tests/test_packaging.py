"""What `pyproject.toml`, `.ci/run` and the README promise about installing must agree: the
runtime dependencies are compatible ranges whose lower bounds CI installs, the test extra is
pinned, the declared Python floor is the one CI tests, and CI runs the README's commands."""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def lower_bound(req: Requirement) -> str:
    (spec,) = [s for s in req.specifier if s.operator == ">="]
    return spec.version


def runtime_requirements() -> list[Requirement]:
    return [Requirement(r) for r in
            PROJECT["dependencies"] + PROJECT["optional-dependencies"]["viewer"]]


def test_runtime_dependencies_are_ranges_with_a_lower_and_an_upper_bound():
    for req in runtime_requirements():
        operators = sorted(s.operator for s in req.specifier)
        assert operators == ["<", ">="], f"{req}: want a compatible range '>=low,<high'"


def test_ci_lower_bounds_pin_exactly_each_runtime_lower_bound():
    pins = {}
    for line in (REPO / ".ci" / "lower-bounds.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip()] = version.strip()
    want = {req.name: Version(lower_bound(req)) for req in runtime_requirements()}
    assert {n: Version(v) for n, v in pins.items()} == want


def test_test_extra_is_pinned_exactly():
    for text in PROJECT["optional-dependencies"]["test"]:
        req = Requirement(text)
        assert [s.operator for s in req.specifier] == ["=="], f"{req}: pin the test extra"
