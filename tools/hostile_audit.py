#!/usr/bin/env python3
"""The hostile audit: every command that writes a file, used as a careless or hostile user
would, with each outcome judged clean or not.

    .venv/bin/python tools/hostile_audit.py            # prints "<n> runs: <c> clean, ..."

Cases (each a real command line in a child process):
- the output pointed at each file of the command's inputs (a capture directory, a work dir,
  a Parquet dataset): directly, through a symlink, through a hard link;
- the output pointed at special files (/dev/null, /dev/full, a directory);
- SQL that reaches outside the run (read or write a file, extensions, attach, export,
  settings).

A run is clean when it has no traceback, exits 0, 1 or 2, says exactly one line (besides
warnings and notes) when it fails, leaves every input byte as it was and no temp or staging
file behind, and writes nothing outside the run. Exit status: 0 when every run is clean.
The suite's `tests/compile_profiling/cli/test_profile_hostile.py` holds one case of each
kind; this runs them all.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]  # examples/, the test helpers

PY = sys.executable
PROFILE = [PY, "-m", "pypto.compile_profiling"]
MERGE = [PY, str(REPO / "tools" / "merge_traces.py")]
OUTSIDE = ("audit_copy.csv", "audit.db", "audit_export", "audit_profile.json")
SQL = ["select * from read_text('/etc/hostname')", "copy (select 1) to '{tmp}/audit_copy.csv'",
       "install httpfs", "load httpfs", "attach '{tmp}/audit.db'",
       "export database '{tmp}/audit_export'", "set enable_external_access = true",
       "select * from glob('/*')", "select * from read_parquet('/etc/passwd')",
       "set profiling_output = '{tmp}/audit_profile.json'"]


def digest(root: Path) -> dict[str, str]:
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(root.rglob("*")) if f.is_file() and not f.is_symlink()}


def main() -> int:
    from example_runs import run_many_kernels
    from simpler_fixtures import FIXTURES

    root = Path(tempfile.mkdtemp(prefix="pypto_audit_"))
    try:
        cap = root / "cap"
        shutil.copytree(FIXTURES / "tmr_vector_example_l4_depgen", cap)
        work = run_many_kernels(root / "work")
        ds = root / "ds"
        subprocess.run([*MERGE, str(cap), "-o", str(ds), "--format", "parquet", "-q"],
                       check=True, capture_output=True)
        commands = {
            "analyze": (["analyze", "{in}"], cap),
            "analyze json": (["analyze", "{in}", "--format", "json"], cap),
            "query capture": (["query", "select 1 as x", "{in}"], cap),
            "query dataset": (["query", "select 1 as x", "{in}"], ds),
            "aggregate": (["aggregate", "{in}"], work),
            "kernels": (["kernels", "{in}"], work),
            "show": (["show", "{in}"], work),
            "html": (["html", "{in}"], work),
            "merge": (None, cap),
        }
        clean, unclean = 0, []

        def run(name: str, argv: list[str], inputs: Path) -> None:
            nonlocal clean
            before = digest(inputs)
            r = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300, cwd=root)
            said = [x for x in r.stderr.splitlines() if not x.startswith(("warning:", "note:"))]
            problems = []
            if "Traceback" in r.stderr:
                problems.append("a traceback")
            if r.returncode not in (0, 1, 2):
                problems.append(f"exit {r.returncode}")
            if r.returncode and len(said) != 1:
                problems.append(f"{len(said)} lines")
            if digest(inputs) != before:
                problems.append("AN INPUT CHANGED")
            left = [p.name for p in root.rglob("*") if ".pypto-tmp-" in p.name
                    or ".pypto-stage-" in p.name]
            if left:
                problems.append(f"left behind: {left}")
            outside = [n for n in OUTSIDE if (root / n).exists()]
            if outside:
                problems.append(f"written outside the run: {outside}")
            if problems:
                unclean.append(f"{name}: {'; '.join(problems)}: {r.stderr[-200:]!r}")
            else:
                clean += 1

        for name, (args, inputs) in commands.items():
            argv = [*MERGE, str(inputs)] if args is None else \
                [*PROFILE, *(a.replace("{in}", str(inputs)) for a in args)]
            for victim in sorted(f for f in inputs.rglob("*") if f.is_file()):
                for how in ("directly", "through a symlink", "through a hard link"):
                    out = root / "out.link"
                    if out.exists() or out.is_symlink():
                        out.unlink()
                    if how == "directly":
                        out = victim
                    elif how == "through a symlink":
                        out.symlink_to(victim)
                    else:
                        os.link(victim, out)
                    run(f"{name} -o {victim.relative_to(root)} {how}", [*argv, "-o", str(out)],
                        inputs)
            for special in ("/dev/null", "/dev/full", str(root)):
                run(f"{name} -o {special}", [*argv, "-o", special], inputs)
        for sql in SQL:
            run(f"query {sql!r}", [*PROFILE, "query", sql.format(tmp=root), str(ds)], ds)
        print(f"{clean + len(unclean)} runs: {clean} clean, {len(unclean)} unclean")
        for line in unclean:
            print(f"unclean: {line}")
        return 1 if unclean else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
