"""Mutation testing of the modules that decide where and how long things are: runs mutmut
(configured in pyproject.toml's `[tool.mutmut]`) and prints the score per module.

    .venv/bin/python tools/mutation_score.py [MODULE ...] [--max-children N] [--survivors]

MODULE is a module's file stem as listed in `only_mutate` (`place`, `clock_alignment`,
`diff`, ...); none: all of them. Each run starts from a fresh `mutants/` (mutmut keeps its
copy of the sources and its results there, and would otherwise reuse stale ones). The
score is killed / mutants; the equivalent mutants listed in docs/mutation.md (argued there)
are left out of the second score. `--survivors` lists the survivors not judged equivalent
(`mutmut show NAME` shows one's diff). Not in CI: it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:                  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mutation.md"
KILLED = {1, 3}                      # mutmut: a test failed (3: pytest's internal error)
TIMEOUT = {-24, 24, 152, 255, 36}    # mutmut: over its CPU limit (an endless loop: killed)
NO_TESTS = {5, 33}


def only_mutate() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["mutmut"]["only_mutate"]


def equivalent() -> set[str]:
    """Mutant names judged equivalent: the first column of docs/mutation.md's tables."""
    if not DOC.exists():
        return set()
    return set(re.findall(r"^\| `([\w.ǁ]+__mutmut_\d+)` \|", DOC.read_text(),
                          re.MULTILINE))


def dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def mutmut_exe() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    return str(exe) if exe.exists() else (shutil.which("mutmut") or "mutmut")


def scores(paths: list[str], equiv: set[str]) -> list[dict]:
    rows = []
    for path in paths:
        meta = ROOT / "mutants" / (path + ".meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        killed = [k for k, c in codes.items() if c in KILLED or c in TIMEOUT]
        survived = [k for k, c in codes.items() if c == 0]
        untested = [k for k, c in codes.items() if c in NO_TESTS]
        other = [k for k, c in codes.items()
                 if k not in killed and k not in survived and k not in untested]
        eq = [k for k in survived + untested if k in equiv]
        rows.append({"module": path, "mutants": len(codes), "killed": len(killed),
                     "survived": len(survived), "no_tests": len(untested),
                     "other": len(other), "equivalent": len(eq),
                     "left": sorted(k for k in survived + untested + other if k not in equiv)})
    return rows


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="file stems of modules in only_mutate")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--survivors", action="store_true",
                    help="list the survivors not judged equivalent")
    ap.add_argument("--report-only", action="store_true",
                    help="read the last run's results in mutants/ instead of running")
    args = ap.parse_args(argv)
    paths = only_mutate()
    if args.modules:
        by_stem = {Path(p).stem: p for p in paths}
        unknown = [m for m in args.modules if m not in by_stem]
        if unknown:
            print(f"unknown module(s) {', '.join(unknown)}; choose from "
                  f"{', '.join(by_stem)}", file=sys.stderr)
            return 2
        paths = [by_stem[m] for m in args.modules]
    if not args.report_only:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        globs = [dotted(p) + ".*" for p in paths] if args.modules else []
        cmd = [mutmut_exe(), "run", "--max-children", str(args.max_children), *globs]
        run = subprocess.run(cmd, check=False, cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        if run.returncode:
            print(run.stdout[-4000:], file=sys.stderr)
            print(f"mutmut run exited {run.returncode}", file=sys.stderr)
            return 1
    rows = scores(paths, equivalent())
    print("| module | mutants | killed | survived | no tests | score | equivalent | "
          "score without them |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| `{r['module'].removeprefix('pypto/compile_profiling/')}` | {r['mutants']} | "
              f"{r['killed']} | {r['survived']} | {r['no_tests']} | "
              f"{pct(r['killed'], r['mutants'])} | {r['equivalent']} | "
              f"{pct(r['killed'], r['mutants'] - r['equivalent'])} |")
    if args.survivors:
        for r in rows:
            for name in r["left"]:
                print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
