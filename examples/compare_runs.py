"""Make two sets of runs to compare: one program, base and new device settings, modelled time.

    python3 examples/compare_runs.py [--out out/compare] [--runs 5] [--new-aiv-cores 4]

The program scales a tensor eight ways side by side (eight independent AIV tasks) and sums
the results as a tree. Each run is a full `run()` (compile profile and level-4 capture)
in modelled device time with a little seeded noise, so the runs differ as real runs do and
the comparison is exact. The new runs have fewer AIV cores, so the eight scale tasks no
longer run side by side. Then compare:

    pypto-profile diff out/compare/base -- out/compare/new
    pypto-merge-traces --compare out/compare/base/run0 out/compare/new/run0 -o both.pftrace
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pypto.language as pl
from pypto.about import tool_command
from pypto.errors import PyptoError
from pypto.runtime import RunConfig, run

ROWS, COLS, BLOCKS = 512, 128, 8     # eight scale kernels; each loops over 8 row blocks
BLOCK_ROWS = ROWS // 8


def program_source(name: str = "BlockScale") -> str:
    """Eight `scale_j` kernels (independent), then their sum as a tree of `add` kernels."""
    t = f"pl.Tensor[[{ROWS}, {COLS}], pl.FP32]"
    blk = f"[i * {BLOCK_ROWS}, 0], [{BLOCK_ROWS}, {COLS}]"
    lines = ["import pypto.language as pl", "", "", "@pl.program", f"class {name}:"]
    for j in range(BLOCKS):
        lines += ["    @pl.function(type=pl.FunctionType.InCore)",
                  f"    def scale_{j}(self, x: {t}, y: pl.Out[{t}]) -> {t}:",
                  f"        for i in pl.range({ROWS // BLOCK_ROWS}):",
                  f"            v = pl.load(x, {blk})",
                  f"            v = pl.exp(pl.mul(v, {1.0 / (j + 2)}))",
                  f"            y = pl.store(v, [i * {BLOCK_ROWS}, 0], y)",
                  "        return y", ""]
    lines += ["    @pl.function(type=pl.FunctionType.InCore)",
              f"    def add(self, a: {t}, b: {t}, y: pl.Out[{t}]) -> {t}:",
              f"        for i in pl.range({ROWS // BLOCK_ROWS}):",
              f"            s = pl.add(pl.load(a, {blk}), pl.load(b, {blk}))",
              f"            y = pl.store(s, [i * {BLOCK_ROWS}, 0], y)",
              "        return y", "",
              "    @pl.function(type=pl.FunctionType.Orchestration)",
              f"    def main(self, x: {t}, y: pl.Out[{t}]) -> {t}:"]
    level = []
    for j in range(BLOCKS):
        lines += [f"        s{j} = pl.create_tensor([{ROWS}, {COLS}], dtype=pl.FP32)",
                  f"        s{j} = self.scale_{j}(x, s{j})"]
        level.append(f"s{j}")
    n = 0
    while len(level) > 2:
        nxt = []
        for a, b in zip(level[::2], level[1::2]):
            lines += [f"        p{n} = pl.create_tensor([{ROWS}, {COLS}], dtype=pl.FP32)",
                      f"        p{n} = self.add({a}, {b}, p{n})"]
            nxt.append(f"p{n}")
            n += 1
        level = nxt
    lines += [f"        y = self.add({level[0]}, {level[1]}, y)", "        return y", ""]
    return "\n".join(lines)


BlockScale = pl.parse_program(program_source(), "<generated BlockScale>")


def tensor_specs() -> list[dict]:
    x = np.random.default_rng(5).standard_normal((ROWS, COLS)).astype(np.float32)
    return [{"name": "x", "shape": (ROWS, COLS), "dtype": "float32", "init_value": x},
            {"name": "y", "shape": (ROWS, COLS), "dtype": "float32", "init_value": 0.0,
             "is_output": True}]


def golden(tensors: dict, params: dict | None = None) -> None:
    x = tensors["x"].astype(np.float32)
    tensors["y"][:] = sum(np.exp(x * np.float32(1.0 / (j + 2))) for j in range(BLOCKS))


def one_run(work_dir: Path, label: str, aiv_cores: int, seed: int) -> None:
    config = RunConfig(work_dir=str(work_dir), compile_profiling=True,
                       enable_chip_swimlane=4, enable_dep_gen=True,
                       device_timing="modelled", timing_jitter=0.03, timing_seed=seed,
                       num_aiv_cores=aiv_cores, case_name="block_scale", rtol=1e-4)
    result = run(BlockScale, tensor_specs(), golden, config)
    if not result.passed:
        raise PyptoError(f"{label}: {result.error}")


def make_runs(out: Path, runs: int, base_cores: int, new_cores: int) -> None:
    """A warm-up run (thrown away: the first run in a process pays its imports in its
    compile stages), then base and new runs alternated, so that whatever else the machine
    does meanwhile weighs on both sides alike: the compile stages are measured on the host,
    and five base runs made before five new ones once showed a compile stage slower in all
    the new runs on a loaded CI machine."""
    with tempfile.TemporaryDirectory(prefix="compare_runs_warmup_") as warm:
        one_run(Path(warm), "warm-up run", base_cores, 0)
    for i in range(runs):
        one_run(out / "base" / f"run{i}", f"base run {i}", base_cores, i)
        one_run(out / "new" / f"run{i}", f"new run {i}", new_cores, 1000 + i)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/compare", help="output directory (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=5, help="runs per side (default: %(default)s)")
    ap.add_argument("--base-aiv-cores", type=int, default=16)
    ap.add_argument("--new-aiv-cores", type=int, default=4)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)    # not a "profile written" line per run
    out = Path(args.out)
    try:
        make_runs(out, args.runs, args.base_aiv_cores, args.new_aiv_cores)
    except PyptoError as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return 2
    profile, merge = tool_command("pypto-profile"), tool_command("pypto-merge-traces")
    base, new = shlex.quote(str(out / "base")), shlex.quote(str(out / "new"))
    print(f"wrote {args.runs} base runs ({args.base_aiv_cores} AIV cores) in {out / 'base'}")
    print(f"  and {args.runs} new runs ({args.new_aiv_cores} AIV cores) in {out / 'new'}")
    print("Compare them:")
    print(f"  {profile} diff {base} -- {new}")
    print(f"  {merge} --compare {base}/run0 {new}/run0 -o {shlex.quote(str(out))}/both.pftrace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
