"""Output directories we write as a whole (a Parquet dataset, a `--per-rank` output), and
replace only when every file in them is provably ours.

A directory is written into a fresh staging directory beside its target, with a manifest
that lists every file in it (`write_manifest`), and renamed into place (`replace_owned`):
a reader finds the old tree or the new one, never a mix. An existing target is replaced
only when it is empty, or when its manifest lists every file in it; anything else there
(a user's notes, the capture being merged, a file another program added) makes the write
refused with one line, and nothing is deleted. A manifest of an older version lists no
files: then only the file names its writer could have made (`legacy`) count as ours.

Staging and set-aside directories are named `.<target>.pypto-stage-<host>-<pid>-<rand>` and
`.<target>.pypto-old-<host>-<pid>-<rand>`. One that a run interrupted hard (`kill -9`) left
behind is removed by the next write beside it when it is provably its own kind: this host,
and a process that is gone; `clean_stale` returns what it removed, for the caller to say.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

from pypto.compile_profiling.foundation.atomic_io import pid_running
from pypto.errors import OutputPathError, ProfileWriteError

__all__ = ["OLD_MARK", "STAGE_MARK", "check_replaceable", "clean_stale", "naming_output",
           "read_manifest", "replace_owned", "stage_beside", "write_manifest", "writing_into"]

log = logging.getLogger(__name__)

STAGE_MARK = ".pypto-stage-"
OLD_MARK = ".pypto-old-"
_HOST = socket.gethostname()


def write_manifest(directory: Path, manifest: str, title: str) -> None:
    """`directory/manifest`: `title`, then every file under `directory` (relative, `/`
    separated, sorted), the manifest itself left out."""
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")
                   if p.is_file() and p.name != manifest)
    (directory / manifest).write_text("\n".join([title, *files]) + "\n", encoding="utf-8")


def read_manifest(directory: Path, manifest: str) -> list[str] | None:
    """The files `directory`'s manifest lists (None: no manifest; [] for a manifest of an
    older version, which lists none)."""
    try:
        lines = (directory / manifest).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return [ln for ln in lines[1:] if ln.strip()]


def _files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")
                  if not p.is_dir() or p.is_symlink())


def check_replaceable(target: Path, manifest: str, legacy: Callable[[str], bool],
                      what: str, *, unmarked: bool = False) -> None:
    """`OutputPathError` unless `target` is absent, an empty directory, or a directory
    whose every file its manifest lists (`legacy`: the names ours could have for a manifest
    that lists none; with `unmarked`, also for a directory with no manifest at all, written
    by a version before manifests). `what` names our kind of output in the message."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise OutputPathError(target, "exists and is not a directory; not replaced")
    if not target.exists():
        return
    try:
        present = _files(target)
    except OSError as e:
        raise ProfileWriteError(f"{target}: cannot read directory: {e.strerror or e}") from e
    if not present:
        return
    listed = read_manifest(target, manifest)
    if listed is None and unmarked:
        listed = []
    if listed is None:
        raise OutputPathError(target, f"exists, is not empty and is not {what} (no {manifest}); "
                                      "not replaced")
    ours = set(listed) | {manifest}
    foreign = [f for f in present if f not in ours and not (not listed and legacy(f))]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise OutputPathError(target, f"holds {foreign[0]}{more}, which the earlier {what} "
                                      "here did not write; not replaced (move it out, or "
                                      "write elsewhere)")


def _name(target: Path, mark: str) -> Path:
    return target.parent / (f".{target.name}{mark}{_HOST}-{os.getpid()}-"
                            f"{secrets.token_hex(4)}")


def clean_stale(target: Path) -> list[str]:
    """Remove the staging and set-aside directories of `target` that writers of this host,
    now gone, left behind; return their paths. Never raises."""
    removed = []
    prefix = f".{target.name}"
    try:
        names = [n for n in os.listdir(target.parent or ".") if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        rest = name[len(prefix):]
        mark = next((m for m in (STAGE_MARK, OLD_MARK) if rest.startswith(m)), None)
        if mark is None:
            continue
        host_pid = rest[len(mark):].rpartition("-")[0]          # <host>-<pid>-<rand>
        host, _, pid = host_pid.rpartition("-")
        if host != _HOST or not pid.isdigit() or int(pid) == os.getpid() \
                or pid_running(int(pid)):
            continue
        path = target.parent / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(str(path))
                log.warning("removed %s, left by an interrupted run (pid %s, gone)", path, pid)
    return removed


def stage_beside(target: Path) -> Path:
    """A fresh staging directory beside `target` (stale ones of gone writers removed first)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ProfileWriteError(f"{target.parent}: cannot create directory: "
                                f"{e.strerror or e}") from e
    clean_stale(target)
    stage = _name(target, STAGE_MARK)
    try:
        stage.mkdir()
    except OSError as e:
        raise ProfileWriteError(f"{target.parent}: cannot write here: {e.strerror or e}") from e
    return stage


@contextlib.contextmanager
def writing_into(stage: Path, target: Path) -> Iterator[None]:
    """While a staged tree is written: a failure (disk full, a permission) names the output
    the user asked for, never our staging directory, which is gone by the time they read it."""
    try:
        yield
    except (ProfileWriteError, OSError) as e:
        raise naming_output(e, stage, target) from e


def naming_output(e: ProfileWriteError | OSError, stage: Path | None, target: Path
                  ) -> ProfileWriteError:
    """`e`, a failure while writing into `stage`, as the one line that names `target`."""
    if isinstance(e, OutputPathError):
        return e
    if isinstance(e, ProfileWriteError):
        return ProfileWriteError(str(e).replace(str(stage), str(target)) if stage else str(e))
    where = e.filename if isinstance(e.filename, str) and stage else None
    where = where.replace(str(stage), str(target)) if where else str(target)
    return ProfileWriteError(f"{where}: cannot write: {e.strerror or e}")


def replace_owned(stage: Path, target: Path, manifest: str, legacy: Callable[[str], bool],
                  what: str, *, unmarked: bool = False) -> None:
    """Put the complete `stage` at `target`: checked again (something may have appeared
    there meanwhile), the old tree renamed aside, the new one renamed in, the old removed."""
    check_replaceable(target, manifest, legacy, what, unmarked=unmarked)
    if target.exists():
        old = _name(target, OLD_MARK)
        os.rename(target, old)
        os.rename(stage, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(stage, target)
