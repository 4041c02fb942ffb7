"""Mutation testing of the modules that decide where and how long things are: runs mutmut
once per module, each module's mutants against the test files that exercise it (both in
pyproject.toml: `[tool.mutmut]` and `[tool.mutation_score.tests]`), and prints the score
per module.

    .venv/bin/python tools/mutation_score.py [MODULE ...] [--max-children N] [--survivors]

MODULE is a module's file stem (`place`, `clock_alignment`, `diff`, `stage_tree`, ...);
none: all of them. Each module runs in a fresh scratch directory `build/mutation/<stem>/`
(mutmut keeps its copy of the sources and its results in `mutants/` there, and would
otherwise reuse stale ones), whose pyproject.toml is this one with `[tool.mutmut]` narrowed
to the module and its tests. The score is killed / mutants (a mutant over its time limit
counts as killed: an endless loop is a failure too); the equivalent mutants listed in
docs/mutation.md, each argued there, are left out of the second score. `--survivors` lists
the survivors not judged equivalent (`cd build/mutation/<stem> && mutmut show NAME` shows
one's diff). Not in CI: all modules take about 35 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

try:
    import tomllib
except ImportError:                  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mutation.md"
SCRATCH = ROOT / "build" / "mutation"
KILLED = {1, 3}                      # mutmut: a test failed (3: pytest's internal error)
TIMEOUT = {-24, 24, 152, 255, 36}    # mutmut: over its CPU limit
NO_TESTS = {5, 33}


def config() -> tuple[dict, dict[str, list[str]]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        tool = tomllib.load(f)["tool"]
    mutmut, tests = tool["mutmut"], tool["mutation_score"]["tests"]
    missing = [m for m in mutmut["only_mutate"] if m not in tests]
    if missing:
        raise SystemExit(f"pyproject.toml: [tool.mutation_score.tests] has no test files "
                         f"for {', '.join(missing)}")
    return mutmut, tests


def equivalent() -> set[str]:
    """Mutant names judged equivalent: the first column of docs/mutation.md's tables."""
    if not DOC.exists():
        return set()
    return set(re.findall(r"^\| `([\w.ǁ]+__mutmut_\d+)` \|", DOC.read_text(),
                          re.MULTILINE))


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def module_pyproject(mutmut: dict, module: str, tests: list[str]) -> str:
    """This pyproject.toml with `[tool.mutmut]` for one module and its tests only."""
    text = (ROOT / "pyproject.toml").read_text()
    head, _, tail = text.partition("\n[tool.mutmut]\n")
    rest = tail.split("\n[", 1)
    after = "\n[" + rest[1] if len(rest) > 1 else ""
    lines = [f"{key} = {toml_list(value) if isinstance(value, list) else json.dumps(value)}"
             for key, value in mutmut.items()
             if key not in ("only_mutate", "pytest_add_cli_args_test_selection")]
    lines += [f"only_mutate = {toml_list([module])}",
              f"pytest_add_cli_args_test_selection = {toml_list(tests)}"]
    return head + "\n[tool.mutmut]\n" + "\n".join(lines) + "\n" + after


def mutmut_exe() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    return str(exe) if exe.exists() else (shutil.which("mutmut") or "mutmut")


def run_module(mutmut: dict, module: str, tests: list[str], max_children: int) -> Path:
    """Run mutmut on one module in its scratch dir; -> the scratch dir."""
    work = SCRATCH / Path(module).stem
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in {*mutmut["source_paths"], *mutmut.get("also_copy", []), "tests"}:
        (work / name).symlink_to(ROOT / name)
    (work / "pyproject.toml").write_text(module_pyproject(mutmut, module, tests))
    with open(work / "mutmut.log", "w") as log:
        run = subprocess.run([mutmut_exe(), "run", "--max-children", str(max_children)],
                             check=False, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    if run.returncode:
        tail = (work / "mutmut.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"{tail}\nmutmut run on {module} exited {run.returncode} "
                         f"(log: {work / 'mutmut.log'})")
    return work


def score(module: str, equiv: set[str]) -> dict:
    meta = SCRATCH / Path(module).stem / "mutants" / (module + ".meta")
    codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
    killed = [k for k, c in codes.items() if c in KILLED or c in TIMEOUT]
    survived = [k for k, c in codes.items() if c == 0]
    untested = [k for k, c in codes.items() if c in NO_TESTS]
    left = [k for k in codes if k not in killed]
    eq = [k for k in left if k in equiv]
    return {"module": module, "mutants": len(codes), "killed": len(killed),
            "survived": len(survived), "no_tests": len(untested), "equivalent": len(eq),
            "left": sorted(k for k in left if k not in equiv)}


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="file stems of the modules to run")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--survivors", action="store_true",
                    help="list the survivors not judged equivalent")
    ap.add_argument("--report-only", action="store_true",
                    help="read the last run's results in build/mutation/ instead of running")
    args = ap.parse_args(argv)
    mutmut, tests = config()
    modules = mutmut["only_mutate"]
    if args.modules:
        by_stem = {Path(m).stem: m for m in modules}
        unknown = [m for m in args.modules if m not in by_stem]
        if unknown:
            print(f"unknown module(s) {', '.join(unknown)}; choose from "
                  f"{', '.join(by_stem)}", file=sys.stderr)
            return 2
        modules = [by_stem[m] for m in args.modules]
    equiv = equivalent()
    rows = []
    for module in modules:
        start = time.monotonic()
        if not args.report_only:
            # (files not there yet are left out: a run on an older checkout works too)
            run_module(mutmut, module, [t for t in tests[module] if (ROOT / t).exists()],
                       args.max_children)
        rows.append({**score(module, equiv), "seconds": time.monotonic() - start})
    print("| module | mutants | killed | survived | no tests | score | equivalent | "
          "score without them |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| `{r['module'].removeprefix('pypto/compile_profiling/')}` | {r['mutants']} | "
              f"{r['killed']} | {r['survived']} | {r['no_tests']} | "
              f"{pct(r['killed'], r['mutants'])} | {r['equivalent']} | "
              f"{pct(r['killed'], r['mutants'] - r['equivalent'])} |")
    if not args.report_only:
        took = ", ".join(f"{Path(r['module']).stem} {r['seconds']:.0f} s" for r in rows)
        print(f"({took}; --max-children {args.max_children})")
    if args.survivors:
        for r in rows:
            for name in r["left"]:
                print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
