"""Programs whose bottleneck is known by construction, for checking what-if predictions against
real re-runs in modelled time (tests and `benchmarks/validate_whatif.py`). No tests here.

A program is a task graph: each task runs one kernel (a family with a core type and modelled
cycles) and reads its producers' outputs (two at most: a kernel adds two arrays), so the
runtime finds the dependencies from the memory the tasks touch, as for any program. The
same graph without dependencies (`without_deps`) gives every task its own inputs: the same
tasks, the same kernels, nothing to wait for. An edit is made for real in a re-run:
more or fewer cores (`RunConfig`), a family's kernels faster (their modelled cycles divided),
the scheduler's steps cheaper (`RunConfig.scheduler_costs`), or no dependencies.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pypto.codegen import CompiledKernel, LoadedProgram, ParamSpec, TaskCall
from pypto.compile_profiling.schedule.rules import DEFAULT_STEP_NS

SHAPE = (8, 8)
JITTER = 0.03
PIECE_STEPS = {"completion": ("poll",), "dispatch": ("complete", "dispatch"),
               "launch": ("launch",)}


def k_add(x, y, out):
    np.add(x, y, out=out)


@dataclass(frozen=True)
class Graph:
    """`families`: name -> (core type, modelled cycles); `tasks`: (family, producers)."""

    name: str
    families: dict[str, tuple[str, int]]
    tasks: tuple[tuple[str, tuple[int, ...]], ...]
    config: dict = field(default_factory=dict)       # RunConfig fields of the base runs

    def top_family(self) -> str:
        """The family with the most cycles over its tasks."""
        total: dict[str, int] = {}
        for fam, _ in self.tasks:
            total[fam] = total.get(fam, 0) + self.families[fam][1]
        return max(total, key=lambda f: (total[f], f))

    def faster(self, family: str, k: float) -> Graph:
        core, cycles = self.families[family]
        return replace(self, families={**self.families, family: (core, max(1, round(cycles / k)))})

    def without_deps(self) -> Graph:
        return replace(self, tasks=tuple((fam, ()) for fam, _ in self.tasks))


def _build_tasks(graph: Graph, t: dict) -> list:
    bufs = []
    calls = []
    last = len(graph.tasks) - 1
    for i, (fam, producers) in enumerate(graph.tasks):
        ins = [bufs[p] for p in producers[:2]] + [t["a"]] * (2 - len(producers[:2]))
        out = t["out"] if i == last else np.empty(SHAPE, np.float32)
        calls.append(TaskCall(fam, [ins[0], ins[1], out]))
        bufs.append(out)
    return calls


def program(graph: Graph) -> LoadedProgram:
    p = [ParamSpec("x", SHAPE, "float32", "in"), ParamSpec("y", SHAPE, "float32", "in"),
         ParamSpec("out", SHAPE, "float32", "out")]
    kernels = {fam: CompiledKernel(i, fam, core, p, k_add, cycles)
               for i, (fam, (core, cycles)) in enumerate(graph.families.items())}
    params = [ParamSpec("a", SHAPE, "float32", "in"), ParamSpec("out", SHAPE, "float32", "out")]
    return LoadedProgram(graph.name, "", kernels, "main", params,
                         functools.partial(_build_tasks, graph))


def specs() -> list[dict]:
    return [{"name": "a", "shape": SHAPE, "dtype": "float32", "init_value": 1.0},
            {"name": "out", "shape": SHAPE, "dtype": "float32", "is_output": True}]


def _golden(graph: Graph, tensors: dict, params: dict) -> None:
    vals = []
    for fam, producers in graph.tasks:
        ins = [vals[p] for p in producers[:2]] + [tensors["a"]] * (2 - len(producers[:2]))
        vals.append(ins[0] + ins[1])
    tensors["out"][:] = vals[-1]


def golden(graph: Graph):
    return functools.partial(_golden, graph)


# --------------------------------------------------------------------------- the programs

def _chain(n, fam="vadd"):
    return tuple((fam, (i - 1,) if i else ()) for i in range(n))


def _tree(leaves: list[int], fam: str, tasks: list) -> int:
    """Sum `leaves` (task indices) pairwise with `fam`; -> the root's index."""
    level = leaves
    while len(level) > 1:
        nxt = []
        for a, b in zip(level[::2], level[1::2]):
            tasks.append((fam, (a, b)))
            nxt.append(len(tasks) - 1)
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _fan(runtime: str = "host_build_graph") -> Graph:
    tasks = [("vhead", ())]
    branches = []
    for _ in range(8):
        tasks.append(("vbranch", (0,)))
        branches.append(len(tasks) - 1)
    tasks.append(("vside", ()))
    acc = branches[0]
    for b in branches[1:]:
        tasks.append(("vacc", (acc, b)))
        acc = len(tasks) - 1
    return Graph("fan" if runtime == "host_build_graph" else "fan_device_orchestrated",
                 {"vhead": ("aiv", 3_600), "vbranch": ("aiv", 36_000),
                  "vside": ("aiv", 1_800), "vacc": ("aiv", 1_800)}, tuple(tasks),
                 {"runtime": runtime})


def _tree_program() -> Graph:
    tasks = [("vexp", ()) for _ in range(8)]
    _tree(list(range(8)), "vadd", tasks)
    return Graph("fan_in_tree", {"vexp": ("aiv", 20_000), "vadd": ("aiv", 4_000)}, tuple(tasks))


def _spmd() -> Graph:
    tasks = [("tile", ()) for _ in range(16)]
    _tree(list(range(16)), "reduce", tasks)
    return Graph("spmd_tiles", {"tile": ("aiv", 18_000), "reduce": ("aiv", 2_000)}, tuple(tasks))


def _mixed() -> Graph:
    tasks = []
    acc = None
    for _ in range(6):
        tasks.append(("gemm", ()))
        g = len(tasks) - 1
        tasks.append(("vacc", (g,) if acc is None else (acc, g)))
        acc = len(tasks) - 1
    return Graph("mixed_aic_aiv", {"gemm": ("aic", 30_000), "vacc": ("aiv", 5_000)},
                 tuple(tasks))


def _pipeline() -> Graph:
    """Three stages over eight tiles, a wavefront: stage s of tile t needs stage s - 1 of
    tile t and stage s of tile t - 1."""
    idx: dict[tuple[int, int], int] = {}
    tasks = []
    fams = ("load", "compute", "store")
    for t in range(8):
        for s in range(3):
            deps = tuple(idx[k] for k in ((s - 1, t), (s, t - 1)) if k in idx)
            tasks.append((fams[s], deps))
            idx[(s, t)] = len(tasks) - 1
    return Graph("pipeline", {"load": ("aiv", 4_000), "compute": ("aic", 24_000),
                              "store": ("aiv", 4_000)}, tuple(tasks))


def _wide() -> Graph:
    tasks = []
    for _ in range(8):
        first = len(tasks)
        for i in range(8):
            tasks.append(("vstep", (first + i - 1,) if i else ()))
    return Graph("wide_chains", {"vstep": ("aiv", 6_000)}, tuple(tasks))


def _tiny() -> Graph:
    tasks = []
    for _ in range(8):
        first = len(tasks)
        for i in range(25):
            tasks.append(("vtiny", (first + i - 1,) if i else ()))
    return Graph("tiny_tasks", {"vtiny": ("aiv", 36)}, tuple(tasks))


def _long_beside_short() -> Graph:
    tasks = [("vlong", ())] + [("vshort", ()) for _ in range(30)]
    return Graph("long_beside_short", {"vlong": ("aiv", 200_000), "vshort": ("aiv", 5_000)},
                 tuple(tasks))


def _dag() -> Graph:
    tasks = (("vadd", ()), ("vscale", (0,)), ("vscale", (0,)), ("vmul", (1, 2)),
             ("vadd", (3, 0)))
    return Graph("vector_dag", {"vadd": ("aiv", 3_432), "vscale": ("aiv", 1_716),
                                "vmul": ("aiv", 3_432)}, tasks)


PROGRAMS: dict[str, Graph] = {g.name: g for g in (
    Graph("chain", {"vadd": ("aiv", 9_000)}, _chain(16)),
    _fan(),
    _fan("tensormap_and_ringbuffer"),
    _tree_program(),
    Graph("queue_on_two_cores", {"vexp": ("aiv", 20_000)}, tuple(("vexp", ()) for _ in range(32)),
          {"num_aiv_cores": 2}),
    _tiny(),
    _mixed(),
    _spmd(),
    _dag(),
    _wide(),
    _long_beside_short(),
    _pipeline(),
)}


# --------------------------------------------------------------------------- runs and edits

@dataclass(frozen=True)
class Rerun:
    """An edit as `whatif` options and as the real re-run's graph and RunConfig changes."""

    name: str
    options: dict                # cores, faster, sched, no_deps (parse_edit's arguments)
    graph: Graph
    config: dict


def edits_of(graph: Graph) -> list[Rerun]:
    """Five edits of a program: the cores of its busiest engine halved (doubled below 4), its
    heaviest family twice as fast, the scheduler's latency halved, no launch latency, no
    dependencies."""
    engine = max(("aic", "aiv"), key=lambda t: sum(graph.families[f][1] for f, _ in graph.tasks
                                                   if graph.families[f][0] == t))
    key = f"num_{engine}_cores"
    base = graph.config.get(key, 8 if engine == "aic" else 16)
    cores = base // 2 if base >= 4 else base * 2
    fam = graph.top_family()
    half = {s: ns * 0.5 for s, ns in DEFAULT_STEP_NS.items() if s != "submit"}
    return [
        Rerun(f"{engine.upper()} cores {base} -> {cores}",
              {"cores": [f"{engine.upper()}={cores}"]}, graph, {key: cores}),
        Rerun(f"{fam} 2x faster", {"faster": [f"{fam}=2"]}, graph.faster(fam, 2), {}),
        Rerun("scheduler latency x0.5", {"sched": ["0.5"]}, graph, {"scheduler_costs": half}),
        Rerun("no launch latency", {"sched": ["launch=0"]}, graph,
              {"scheduler_costs": {"launch": 0.0}}),
        Rerun("no dependencies", {"no_deps": True}, graph.without_deps(), {}),
    ]


def run_graph(graph: Graph, work: Path, seed: int = 1, **config) -> Path:
    """Run `graph` in modelled time with swimlane level 4 and deps; -> its work dir."""
    from pypto.runtime import RunConfig, run

    cfg = {"device_timing": "modelled", "timing_jitter": JITTER, "timing_seed": seed,
           "enable_chip_swimlane": 4, "enable_dep_gen": True, **graph.config, **config}
    r = run(program(graph), specs(), golden(graph), RunConfig(work_dir=str(work), **cfg))
    if not r.passed:
        raise AssertionError(f"{graph.name}: {r.error}")
    return work


def makespan_ns(work: Path) -> float:
    doc = json.loads((work / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    rows = doc["aicore_tasks"]
    freq = doc["metadata"]["clock_freq_hz"]
    return (max(r[4] for r in rows) - min(r[3] for r in rows)) * 1e9 / freq
