"""`pypto-profile` (also `python -m pypto.compile_profiling`): read, compare and picture
compile profiles.

    pypto-profile show PATH [--top N] [--expand] [--json] [-o FILE]
    pypto-profile diff BASE... -- NEW... [--fail-above [FIGURE=]PCT]... [--threshold PCT]
                       [--min-ms MS] [--alpha A] [--top N] [--format F] [-o FILE]
    pypto-profile html PATH -o FILE
    pypto-profile html BASE... -- NEW... -o FILE     (whole runs side by side)
    pypto-profile open TRACE [--offline] [--no-browser] [--port P] [--timeout S]
    pypto-profile kernels WORK_DIR [--format text|markdown|csv|json] [-o FILE]
    pypto-profile analyze PATH... [--format text|markdown|json] [--top N] [-o FILE]
    pypto-profile query "SQL" PATH... [--format text|csv|json] [--limit N] [-o FILE]
    pypto-profile query --preset NAME PATH...        (--preset list: the presets)
    pypto-profile aggregate PATH... [--format text|csv|json] [-o FILE]

PATH: a work dir, a report dir, `pipeline_profile.json` or `trace.json` (also `.gz`).
Exit status: 0 success; 1 a regression found (`diff`), a trace not fetched in time
(`open --timeout`), or the output could not be written (disk full, no permission); 2 bad
input or a refused output path (one line `<path>: <problem>` on stderr); 130 interrupted
(Ctrl-C); 141 the reader of stdout stopped early (`| head`; `cli.stdout`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback

from pypto.compile_profiling.cli import (
    aggregate,
    analyze,
    diff,
    html,
    kernels,
    open_trace,
    query,
    show,
    whatif,
)
from pypto.compile_profiling.cli.arguments import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
    EXIT_WRITE,
    Refused,
    Usage,
)
from pypto.compile_profiling.cli.stdout import PrintVersion, reader_gone
from pypto.errors import (
    OutputPathError,
    ProfileWriteError,
    PyptoError,
    QueryTimeout,
    TraceInputError,
)

PROG = "pypto-profile"
# each command's module: its `add_parser(sub)` and `run(args)`, in the order --help lists them
COMMANDS = {"show": show, "diff": diff, "html": html, "open": open_trace, "kernels": kernels,
            "analyze": analyze, "whatif": whatif, "query": query, "aggregate": aggregate}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Read, compare, explain and picture PyPTO runs: compile "
                               "profiles, Simpler's device captures and merged traces.",
        epilog="PATH: a run() work dir (report/ and dfx_outputs/), an ir.compile output dir, "
               "a report/ dir, pipeline_profile.json or trace.json (also gzip-compressed), "
               "or Simpler's device outputs (dfx_outputs/, a capture directory with "
               "chip_swimlane_records.json, rank<r>/ leaves); each command's --help says "
               "which it takes. Exit status: 0 ok; 1 regression (diff), not fetched in time "
               "(open --timeout) or output not written; 2 bad input or refused output path; "
               "70 a bug in this tool; 130 interrupted.")
    p.add_argument("--version", action=PrintVersion)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    p.commands = sub.choices             # each command's parser, for its own usage line
    return p


def _no_profile_of_this_tool() -> None:
    """A PYPTO_COMPILE_PROFILING=1 left in the shell is meant for PyPTO programs, not for
    this reader of their profiles: no report of the tool itself at exit."""
    from pypto.compile_profiling.profiler import ENV_VAR, refresh_from_environment

    if os.environ.pop(ENV_VAR, None) is not None:
        refresh_from_environment()


def _input_paths(args, new_paths) -> list[str]:
    """The paths a command reads (its input directories are guarded: `input_files`)."""
    out = []
    for key in ("paths", "path", "work_dir", "trace", "runs", "words"):
        v = getattr(args, key, None)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out += [x for x in v if isinstance(x, str)]
    return out + list(new_paths or [])


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _no_profile_of_this_tool()
    new_paths = None
    if argv[:1] in (["diff"], ["html"]):
        try:
            argv, new_paths = diff.split_diff_runs(argv)
        except Usage as e:
            print(f"{PROG} {argv[0]}: error: {e}", file=sys.stderr)
            return EXIT_INPUT
    parser = _parser()
    args = parser.parse_args(argv)
    args.new_paths = new_paths
    from pypto.compile_profiling.cli.process import Terminated, sigterm_raises, stopped_by
    from pypto.compile_profiling.foundation.input_files import guarding_inputs

    try:
        # SIGTERM unwinds as Ctrl-C does: temp outputs removed, one line, 143
        with sigterm_raises(), guarding_inputs(_input_paths(args, new_paths)):
            return COMMANDS[args.command].run(args)
    except Usage as e:                  # the command's own usage, not the tool's
        parser.commands.get(args.command, parser).print_usage(sys.stderr)
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except (TraceInputError, OutputPathError, Refused) as e:
        print(str(e), file=sys.stderr)
        return EXIT_INPUT
    except ProfileWriteError as e:
        print(str(e), file=sys.stderr)
        return EXIT_WRITE
    except QueryTimeout as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_TIMEOUT
    except PyptoError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as e:
        name, code = stopped_by(e)
        print(f"interrupted by {name}", file=sys.stderr)
        return code
    except BrokenPipeError:  # `pypto-profile show ... | head`: quietly, as SIGPIPE would
        return reader_gone()
    except Exception:  # noqa: BLE001 - a bug: never exit 1, diff's "a regression"
        traceback.print_exc()
        print(f"{PROG}: internal error (a bug in {PROG}, not in your input: please report "
              "it with the traceback above)", file=sys.stderr)
        return EXIT_INTERNAL


def cli() -> None:
    """The `pypto-profile` command: `main`, then exit with its status. A query stopped by
    Ctrl-C or --timeout leaves its DuckDB connection unclosed: closing it would wait for the
    task then running (minutes in DuckDB before 2.0), so the process flushes and leaves."""
    from pypto.compile_profiling.query.run import hold_stopped_connections

    stopped = hold_stopped_connections()
    code = main()
    if stopped:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    cli()
