"""Compile and run the vector DAG on the simulated device, profiling the whole trip.

    python3 examples/run_vector_dag.py [WORK_DIR]        (default ./out/vector_dag)

Writes, under WORK_DIR: report/ (pipeline_profile.txt/.json, trace.json: compile passes,
codegen, golden, device execution on the host clock) and dfx_outputs/ (Simpler-format
chip_swimlane_records.json at level 4 with clock anchors, deps.json, name_map_*.json).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pypto.errors import PyptoError
from pypto.runtime import RunConfig, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work_dir", nargs="?", default="out/vector_dag",
                    help="output directory (default: %(default)s)")
    ap.add_argument("--runtime", default="host_build_graph",
                    choices=["host_build_graph", "tensormap_and_ringbuffer"])
    ap.add_argument("--device-process", action="store_true",
                    help="run the simulated device in a child process")
    args = ap.parse_args(argv)

    import vector_dag

    config = RunConfig(work_dir=args.work_dir, compile_profiling=True, enable_chip_swimlane=4,
                       enable_dep_gen=True, runtime=args.runtime,
                       device_process=args.device_process, case_name="vector_dag")
    try:
        result = run(vector_dag.VectorDAG, vector_dag.tensor_specs(), vector_dag.golden, config)
    except PyptoError as e:
        print(f"{args.work_dir}: {e}", file=sys.stderr)
        return 2
    work = Path(result.work_dir)
    print(f"{'PASS' if result.passed else 'FAIL'}: vector DAG in {result.execution_time:.3f}s"
          + ("" if result.passed else f" - {result.error}"))
    for label, f in (("compile profile ", work / "report" / "pipeline_profile.txt"),
                     ("host trace      ", work / "report" / "trace.json")):
        if f.is_file():      # a failed write (a full disk) is in the error above
            print(f"{label}: {f}")
    for f in sorted((work / "dfx_outputs").glob("*.json")):
        print(f"device ({f.name.split('.')[0]}): {f}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
