"""The main job: profile a real compile-and-run and merge it into one Perfetto timeline.

    python3 examples/profile_end_to_end.py [--example NAME] [--out DIR]

Compiles an example program (parse, passes, parallel kernel codegen), runs it on the
simulated device with compile profiling, chip swimlane level 4 and dep_gen, then merges the
compile trace and the device's Simpler-format outputs into DIR/merged.json (Chrome JSON)
and DIR/merged.pftrace (native Perfetto protobuf), prints the merge summary and the one
command that opens the result in ui.perfetto.dev.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from pypto.about import tool_command
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.trace_merge.lay_out.device_counters import KernelBrief
from pypto.errors import PyptoError
from pypto.runtime import RunConfig, run

EXAMPLES = {
    "vector_dag": ("vector_dag", "VectorDAG"),
    "tiled_softmax": ("tiled_softmax", "TiledSoftmax"),
    "many_kernels": ("many_kernels", "ManyKernels"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example", choices=sorted(EXAMPLES), default="many_kernels",
                    help="which example program to compile and run (default: %(default)s)")
    ap.add_argument("--out", default="out", help="output directory (default: %(default)s)")
    ap.add_argument("--runtime", default="host_build_graph",
                    choices=["host_build_graph", "tensormap_and_ringbuffer"],
                    help="Simpler orchestration mode; only host_build_graph records clock "
                         "anchors, so only it is calibrated (default: %(default)s)")
    args = ap.parse_args(argv)

    module_name, program_name = EXAMPLES[args.example]
    module = __import__(module_name)
    out = Path(args.out)
    work_dir = out / args.example
    config = RunConfig(work_dir=str(work_dir), compile_profiling=True, enable_chip_swimlane=4,
                       enable_dep_gen=True, runtime=args.runtime, case_name=args.example)
    try:
        result = run(getattr(module, program_name), module.tensor_specs(), module.golden, config)
    except PyptoError as e:
        print(f"{args.example}: {e}", file=sys.stderr)
        return 2
    status = "PASS" if result.passed else f"FAIL ({result.error})"
    print(f"{args.example}: {status}, run took {result.execution_time:.3f} s; work dir {work_dir}")
    print((work_dir / "report" / "pipeline_profile.txt").read_text())

    inputs = [work_dir / "report" / "trace.json", work_dir / "dfx_outputs"]
    try:
        merged = merge_traces(inputs)
        outputs = [out / "merged.json", out / "merged.pftrace"]
        for path in outputs:
            write_timeline(merged.timeline, path)
    except PyptoError as e:
        print(f"merge: {e}", file=sys.stderr)
        return 2
    # what was merged in a few lines (`pypto-merge-traces -v` says every source in detail);
    # the kernels with the most device time, the rest in `pypto-profile kernels`. Hints name
    # the command as it runs in a new shell (the venv's script, not a bare name)
    profile_cmd = tool_command("pypto-profile")
    for line in merged.brief():
        print(line)
    for line in merged.summary_lines:
        if isinstance(line, KernelBrief):
            print(f"  {line.label}: most device time: {line.top}")
            print(f"  all {line.kernels} kernels: {profile_cmd} kernels "
                  f"{shlex.quote(str(work_dir))}")
        elif line.startswith("linked "):
            print(line)
    for path in outputs:
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    print("\nOpen it in Perfetto (serves the file on 127.0.0.1:9001 for ui.perfetto.dev):")
    print(f"  {profile_cmd} open {shlex.quote(str(outputs[1]))}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
