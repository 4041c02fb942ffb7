"""Many runs at once (`pypto-profile aggregate PATH...`): per stage, pass and kernel, the
count, total, mean, P50, P95 and max over every run found, sorted by total (what
ClangBuildAnalyzer does for `-ftime-trace`, for our stages and kernels).

A PATH is a run (a work dir, report dir, `pipeline_profile.json`, `trace.json`, a capture
directory, a Parquet dataset) or a directory tree holding runs: every directory that is a
run is taken whole and not searched further. Each run becomes the tables of `tables` and
gives its instances (one row per stage and per AICore kernel execution); DuckDB then
aggregates the instances of all runs. Stages are keyed by their path from the top (as
`pypto-profile show` and `diff` match them), passes are the stages of category `pass`,
kernels by name with their device time from the records' cycles.

The search of a tree is bounded: it stays on the file system of the PATH it starts from
(so `/` does not walk into /proc, /sys, /dev or other mounts), follows no symlinked
directory, answers Ctrl-C at once, reports its progress every `PROGRESS_S` seconds on a long
search, and says what it skipped (directories on other file systems, unreadable ones, and
runs found in a tree that cannot be read: named with the reason; a run given by name that
cannot be read is refused).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pypto.compile_profiling.query import require
from pypto.compile_profiling.query.presets import AICORE, STAGE_PATHS, with_path
from pypto.compile_profiling.query.run import QueryResult
from pypto.errors import PyptoError, TraceInputError

__all__ = ["PROGRESS_S", "Search", "aggregate", "find_runs"]

PROGRESS_S = 2.0          # a search that takes longer says how far it got this often

# a pass: category `pass` (our traces), or a stage right under `passes` (durations-only
# reports, whose stages the merge files all as `compile`); a durations-only report's stages
# count by their recorded seconds (the merge lays them end to end and clips them)
_STAGE_ROWS = """
select case when category = 'pass' or regexp_matches(path, '(^|/)passes/[^/]+$')
            then 'pass' else 'stage' end as kind, path as name,
       coalesce(seconds * 1e9, dur::double) as ns
from stage"""

_INSTANCES = f"""
with recursive {STAGE_PATHS.strip()},
{AICORE.strip()}
{_STAGE_ROWS.strip()}
union all
select 'kernel', coalesce(k.name, '(unknown kernel)'), a.device_ns
from aicore a left join kernel k on k.capture_id = a.capture_id and k.kernel_id = a.kernel_id
"""

_STAGES_ONLY = f"""
with recursive {STAGE_PATHS.strip()}
{_STAGE_ROWS.strip()}
"""

_AGGREGATE = """
select kind, name, count(*) as count, count(distinct run) as runs,
       sum(ns) / 1e6 as total_ms, avg(ns) / 1e6 as mean_ms,
       quantile_cont(ns, 0.5) / 1e6 as p50_ms, quantile_cont(ns, 0.95) / 1e6 as p95_ms,
       max(ns) / 1e6 as max_ms
from instances group by kind, name order by total_ms desc, kind, name
"""


def _is_run(p: Path) -> bool:
    from pypto.compile_profiling.profile_data.load import is_profile_location
    from pypto.compile_profiling.query.tables import dataset_dir
    from pypto.compile_profiling.trace_merge.read.read_simpler import RECORD_FILE_NAMES

    if not p.is_dir():
        return p.is_file()
    if dataset_dir(p) is not None or is_profile_location(p) or (p / "dfx_outputs").is_dir():
        return True
    return any((p / n).is_file() for n in RECORD_FILE_NAMES)


@dataclass
class Search:
    """What a search of trees for runs saw: directories looked at, and skipped (on another
    file system; unreadable), a few of each named."""

    directories: int = 0
    other_fs: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    found: set[Path] = field(default_factory=set)       # runs found inside a tree
    bad_runs: list[str] = field(default_factory=list)   # found ones that did not read: why

    def skipped_lines(self) -> list[str]:
        out = []
        for what, found in (("on another file system (not searched)", self.other_fs),
                            ("unreadable", self.unreadable)):
            if found:
                shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
                out.append(f"skipped {len(found)} director{'y' if len(found) == 1 else 'ies'} "
                           f"{what}: {shown}")
        if self.bad_runs:
            n = len(self.bad_runs)
            out.append(f"skipped {n} run{'' if n == 1 else 's'} found in a tree that cannot "
                       "be read:" + "".join(f"\n  {why}" for why in self.bad_runs[:3])
                       + (f"\n  ... and {n - 3} more" if n > 3 else ""))
        return out


def _search(root: Path, found: list[Path], seen: Search, say: Callable[[str], None],
            clock: list[float]) -> None:
    """Depth first under `root`, on its file system only, symlinked directories not
    followed; a run is taken whole, not searched further."""
    device = root.stat().st_dev
    stack = [root]
    while stack:
        d = stack.pop()
        seen.directories += 1
        now = time.monotonic()
        if now >= clock[0]:
            clock[0] = now + PROGRESS_S
            say(f"searching for runs: {seen.directories:,} directories, {len(found)} runs so "
                f"far (at {d})")
        if _is_run(d):
            found.append(d)
            continue
        try:
            with os.scandir(d) as entries:
                subdirs = []
                for e in entries:
                    try:
                        if not e.is_dir(follow_symlinks=False):
                            continue
                        if e.stat(follow_symlinks=False).st_dev != device:
                            seen.other_fs.append(e.path)
                            continue
                    except OSError:
                        seen.unreadable.append(e.path)
                        continue
                    subdirs.append(Path(e.path))
        except OSError:
            seen.unreadable.append(str(d))
            continue
        stack.extend(sorted(subdirs, reverse=True))


def find_runs(paths: list[str | os.PathLike], *, progress: Callable[[str], None] | None = None,
              search: Search | None = None) -> list[Path]:
    """Every run at or below `paths`, in path order (see the module docstring)."""
    runs: list[Path] = []
    say = progress or (lambda _m: None)
    seen = search if search is not None else Search()
    clock = [time.monotonic() + PROGRESS_S]
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise TraceInputError(root, "no such file or directory")
        if _is_run(root):
            runs.append(root)
            continue
        found: list[Path] = []
        _search(root, found, seen, say, clock)
        seen.found.update(found)
        if not found:
            raise TraceInputError(root, "no runs here (expected work dirs, report dirs, "
                                        "profiles, capture directories or Parquet datasets)")
        runs.extend(sorted(found))
    return runs


def aggregate(paths: list[str | os.PathLike], *, progress=None,
              search: Search | None = None) -> tuple[QueryResult, int]:
    """The aggregate table over every run found, and the number of runs (`search`: filled
    with what the search saw and skipped)."""
    require("duckdb", "pyarrow")
    import duckdb
    import pyarrow as pa

    from pypto.compile_profiling.query.run import run_query
    from pypto.compile_profiling.query.tables import lock

    search = search if search is not None else Search()
    runs = find_runs(paths, progress=progress, search=search)
    parts = []
    with _ctrl_c_as_keyboard_interrupt(duckdb):
        _read_runs(runs, parts, progress, search)
    if not parts:
        raise TraceInputError(Path(paths[0]), "none of the runs found here can be read: "
                                              + "; ".join(search.bad_runs[:3]))
    con = duckdb.connect()
    con.register("instances", pa.concat_tables(parts))
    lock(con, [])
    return run_query(con, _AGGREGATE), len(parts)


@contextlib.contextmanager
def _ctrl_c_as_keyboard_interrupt(duckdb) -> Iterator[None]:
    """Ctrl-C inside a DuckDB call comes out as DuckDB's own error (`InterruptException`,
    `RuntimeError: Query interrupted`, `InvalidInputException: ... KeyboardInterrupt`):
    raised as the `KeyboardInterrupt` it is, which the CLI ends with 130."""
    try:
        yield
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except (RuntimeError, duckdb.Error) as e:
        if "interrupt" in str(e).lower():
            raise KeyboardInterrupt from None
        raise


def _read_runs(runs: list, parts: list, progress, search: Search) -> None:
    """Each run's stage, pass and kernel instances, as Arrow tables into `parts`. A run found
    inside a tree that cannot be read is skipped and named in `search` (one damaged dataset
    under `/` does not stop the rest); a run given by name is refused."""
    import pyarrow as pa

    from pypto.compile_profiling.query.presets import slice_arg_fields
    from pypto.compile_profiling.query.tables import open_run

    for n, run in enumerate(runs):
        if progress is not None:
            progress(f"reading run {n + 1}/{len(runs)}: {run}")
        try:
            con = open_run([run])
        except PyptoError as e:
            if run not in search.found:
                raise
            search.bad_runs.append(str(e))
            continue
        fields = slice_arg_fields(con)
        kernels = {"core_id", "task_id", "kernel_id", "start_cycles", "end_cycles"} <= fields
        sql = with_path(_INSTANCES if kernels else _STAGES_ONLY, fields)
        table = con.sql(sql).to_arrow_table()
        run_no = len(parts)
        parts.append(table.append_column("run", pa.array([run_no] * len(table), pa.int64())))
        con.close()
