"""`tests/` mirrors the package, both ways: a module's tests are in the folder of its package
(`tests/compile_profiling/trace_merge/read/` for `pypto/compile_profiling/trace_merge/read/`),
named after it, every package has such a folder, and what several tests share lives in
`tests/support/` only."""

from __future__ import annotations

import ast

from repo_paths import REPO_ROOT, TESTS_DIR

OWN_FOLDERS = {"support", "fixtures", "__pycache__"}


def _test_folders():
    return [d for d in TESTS_DIR.rglob("*") if d.is_dir()
            and not OWN_FOLDERS & set(d.relative_to(TESTS_DIR).parts)]


def test_every_test_folder_is_a_package_of_pypto():
    folders = _test_folders()
    assert folders  # the walk found the mirror
    for d in folders:
        rel = d.relative_to(TESTS_DIR)
        assert (REPO_ROOT / "pypto" / rel / "__init__.py").is_file(), f"tests/{rel}/"


def test_every_package_of_pypto_has_its_test_folder():
    """The other way round: each package (`foundation`, `profile_data`, `ir`, the merge's
    `read/`, `place/`, `lay_out/` ...) has a folder of tests named as it is."""
    missing = []
    for init in (REPO_ROOT / "pypto").rglob("__init__.py"):
        rel = init.parent.relative_to(REPO_ROOT / "pypto")
        if rel.parts and not any((TESTS_DIR / rel).glob("test_*.py")):
            missing.append(f"tests/{rel.as_posix()}/")
    assert missing == []


def test_helpers_live_in_support_and_tests_import_no_other_test_file():
    for path in TESTS_DIR.rglob("*.py"):
        rel = path.relative_to(TESTS_DIR)
        if rel.parts[0] in OWN_FOLDERS:
            continue
        assert path.name.startswith("test_") or rel.as_posix() == "conftest.py", (
            f"tests/{rel}: a helper outside tests/support/")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.split(".")[-1].startswith("test_"), (
                    f"tests/{rel} imports {name}: shared code belongs in tests/support/")
