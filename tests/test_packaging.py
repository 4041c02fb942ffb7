"""What `pyproject.toml`, `.ci/run` and the README promise about installing must agree: the
runtime dependencies are compatible ranges whose lower bounds CI installs, the test extra is
pinned, the declared Python floor is the one CI tests, and CI runs the README's commands."""

from __future__ import annotations

import re
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
CI_RUN = (REPO / ".ci" / "run").read_text()
README = (REPO / "README.md").read_text()


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
    assert "-c .ci/lower-bounds.txt" in CI_RUN


def test_ci_installs_the_scale_extra_at_its_lower_bounds():
    pins = {}
    for line in (REPO / ".ci" / "lower-bounds-scale.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            pins[req.name] = (spec.operator, Version(spec.version), req.extras)
    want = {}
    for text in PROJECT["optional-dependencies"]["scale"]:
        req = Requirement(text)
        assert sorted(s.operator for s in req.specifier) == ["<", ">="], text
        want[req.name] = ("==", Version(lower_bound(req)), req.extras)
    assert pins == want
    assert "-r .ci/lower-bounds-scale.txt" in CI_RUN


def test_test_extra_is_pinned_exactly():
    for text in PROJECT["optional-dependencies"]["test"]:
        req = Requirement(text)
        assert [s.operator for s in req.specifier] == ["=="], f"{req}: pin the test extra"


def test_declared_python_floor_is_the_one_ruff_targets_and_ci_tests():
    assert PROJECT["requires-python"] == ">=3.10"
    ruff = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]
    assert ruff["target-version"] == "py310"
    assert "sys.version_info[:2] == (3, 10)" in CI_RUN


def test_ci_runs_the_readme_test_command_verbatim():
    (command,) = re.findall(r'^test_command="(.*)"$', CI_RUN, re.MULTILINE)
    assert f"\n    {command}\n" in README
    assert command.startswith("python3 -m venv .venv && ")   # no pip into the system Python
    run_line = next(line for line in CI_RUN.splitlines()
                    if command in line and "status=$?" in line)
    # verbatim, in the fresh clone made for it with nothing beside it
    assert run_line == f'(cd "$fresh" && {command}) || status=$?'
    assert 'git clone --quiet --no-hardlinks "$repo_root" "$fresh"' in CI_RUN
    assert 'fresh_parent="$(mktemp -d ' in CI_RUN and 'fresh="$fresh_parent/checkout"' in CI_RUN
    assert "unset PYPTO_SIMPLER_FIXTURES" in CI_RUN


def test_readme_main_job_command_makes_its_venv():
    commands = [line.strip() for line in README.splitlines()
                if "examples/profile_end_to_end.py" in line and line.startswith("    ")]
    assert commands[0] == ("python3 -m venv .venv && .venv/bin/python -m pip install -e . "
                           "&& .venv/bin/python examples/profile_end_to_end.py")
