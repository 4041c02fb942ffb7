"""Opening trace inputs safely: the one place the merge's readers open and list files.

A trace input may be anything a path can name. Before a file is opened it is `stat`ed, and
anything but a regular file (a FIFO, whose `open` blocks until a writer comes; a device
such as `/dev/zero`, endless; a socket) is refused; so are symlink loops, missing and
unreadable paths. The open itself uses `O_NONBLOCK` and the opened file is checked again,
so a FIFO swapped in between the two never blocks. A file's size is known before it is
read, so a file too big for this machine is refused before any memory is used, and
`sniff` rejects garbage (a sparse file of zeros, a binary blob) from its first bytes.

Every problem is a `TraceInputError(path, problem)`: one line, naming the path.

Inside `guarding_inputs(paths)` (each command of the CLIs runs in one, with the paths it was
given), every file opened here, or named to `note_input` (a Parquet file handed to DuckDB),
is remembered by device and inode, and `refuse_read_input` refuses an output that is one of
them, by name, hard link or symlink, or that is a file already there under one of the input
directories (the rest of a capture or a work dir is the user's data too, read or not): a
command never writes over its inputs. A new file in an input directory is fine.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import BinaryIO

import orjson

from pypto.errors import OutputPathError, TraceInputError

__all__ = ["MAX_INPUT_BYTES", "check_input_dir", "entry_is_dir", "guarding_inputs",
           "list_input_dir", "load_json_input", "note_input", "note_input_dirs", "open_input",
           "open_regular_fd",
           "parse_json_bytes", "read_input_bytes", "refuse_output_among_inputs",
           "refuse_read_input", "sniff_json", "sniff_text", "special_kind", "stat_input"]

_O_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
            | getattr(os, "O_NOCTTY", 0))
_SNIFF_BYTES = 4096


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


# A file bigger than the machine's memory cannot be parsed here: say so before reading it.
MAX_INPUT_BYTES: int | None = _physical_memory()


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"))


def special_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words ("a FIFO (named pipe)"...);
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((words for test, words in _KINDS if test(mode)), "a special file")


def _os_problem(path, exc: OSError, action: str) -> TraceInputError:
    """`cannot <action>: <why>`, in words for the usual reasons."""
    if exc.errno == errno.ELOOP:
        why = "symlink loop (too many levels of symbolic links)"
    elif exc.errno == errno.ENOENT and os.path.islink(path):
        why = f"broken symlink (no such file: {os.readlink(path)!r})"
    elif exc.errno == errno.ENOENT:
        why = "no such file or directory"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = "permission denied"
    else:
        why = exc.strerror or str(exc)
    return TraceInputError(path, f"cannot {action}: {why}")


def stat_input(path: str | os.PathLike) -> os.stat_result:
    """`stat` of an input that must be a regular file or a directory, else TraceInputError."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _os_problem(path, exc, "read") from None
    kind = None if stat.S_ISDIR(st.st_mode) else special_kind(st.st_mode)
    if kind is not None:
        raise TraceInputError(path, f"is {kind}, expected a regular file or a directory")
    return st


def list_input_dir(path: str | os.PathLike) -> list[os.DirEntry]:
    """The entries of an input directory sorted by name; a directory that cannot be listed,
    or whose entries cannot be reached (no search permission), is a TraceInputError."""
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise _os_problem(path, exc, "list directory") from None
    try:
        os.stat(os.path.join(path, os.curdir))   # needs search (x) permission, as entries do
    except OSError as exc:
        raise _os_problem(path, exc, "open files in directory") from None
    return entries


# (device, inode) -> the path it was read as, inside `guarding_inputs()`; None outside it
_READ: ContextVar[dict[tuple[int, int], str] | None] = ContextVar("pypto_inputs_read",
                                                                  default=None)
# the input directories (real paths) of the command running in `guarding_inputs()`
_DIRS: ContextVar[tuple[str, ...]] = ContextVar("pypto_input_dirs", default=())


@contextmanager
def guarding_inputs(paths: Iterable[str | os.PathLike] = ()) -> Iterator[None]:
    """Remember every input file read inside it, and the input directories among `paths`,
    so that no output replaces one (see the module docstring)."""
    dirs = tuple(os.path.realpath(p) for p in paths if os.path.isdir(p))
    token, dir_token = _READ.set({}), _DIRS.set(dirs)
    try:
        yield
    finally:
        _READ.reset(token)
        _DIRS.reset(dir_token)


def note_input_dirs(paths: Iterable[str | os.PathLike]) -> None:
    """The directories among `paths` are inputs of the command running in
    `guarding_inputs()` (its arguments, once parsed)."""
    if _READ.get() is None:
        return
    dirs = tuple(os.path.realpath(p) for p in paths if os.path.isdir(p))
    _DIRS.set(tuple(dict.fromkeys(_DIRS.get() + dirs)))


def note_input(path: str | os.PathLike, st: os.stat_result | None = None) -> None:
    """Remember `path` as read (inside `guarding_inputs()`; a no-op outside it)."""
    seen = _READ.get()
    if seen is None:
        return
    try:
        st = st or os.stat(path)
    except OSError:
        return
    seen.setdefault((st.st_dev, st.st_ino), os.fspath(path))


def refuse_read_input(output: str | os.PathLike) -> None:
    """Raise `OutputPathError` when `output` is a file read inside `guarding_inputs()`:
    the same file by name, hard link or symlink (by device and inode)."""
    seen = _READ.get()
    if seen is None:
        return
    found = set()
    for look in (os.lstat, os.stat):
        try:
            st = look(output)
        except OSError:
            continue
        found.add((st.st_dev, st.st_ino))
    hit = next((seen[k] for k in found if k in seen), None)
    if hit is not None:
        same = "" if os.path.abspath(hit) == os.path.abspath(output) else f" ({hit})"
        raise OutputPathError(output, f"is one of the inputs{same}: refusing to overwrite it")
    if found:                                   # a file there already: under an input dir?
        real = os.path.realpath(output)
        for d in _DIRS.get():
            if real.startswith(d.rstrip(os.sep) + os.sep):
                raise OutputPathError(output, f"is a file in the input directory {d}: "
                                              "refusing to overwrite it (write elsewhere)")


def open_regular_fd(path: str | os.PathLike) -> int:
    """A read-only fd of `path`, which must be a regular file (checked before and after the
    open, which never blocks)."""
    st = stat_input(path)
    if stat.S_ISDIR(st.st_mode):
        raise TraceInputError(path, "is a directory, expected a file")
    try:
        fd = os.open(path, _O_FLAGS)
    except OSError as exc:
        raise _os_problem(path, exc, "read") from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):  # swapped between stat and open
            raise TraceInputError(path, f"is {special_kind(now.st_mode)}, expected a "
                                        "regular file")
        os.set_blocking(fd, True)
        note_input(path, now)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_input(path: str | os.PathLike) -> BinaryIO:
    """The regular file `path` opened for reading (binary, unbuffered), for readers that
    read it piece by piece; anything else is a TraceInputError."""
    return os.fdopen(open_regular_fd(path), "rb", buffering=0)


def check_input_dir(path: str | os.PathLike) -> None:
    """`path` is a directory whose entries can be listed and opened, else TraceInputError."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _os_problem(path, exc, "read") from None
    if not stat.S_ISDIR(mode):
        kind = special_kind(mode)
        raise TraceInputError(path, f"is {kind}, expected a directory" if kind
                              else "expected a directory")
    list_input_dir(path)


def read_input_bytes(path: str | os.PathLike, *, sniff=None,
                     max_bytes: int | None = None, gunzip: bool = False) -> bytes:
    """The bytes of the regular file `path`, read in one piece of its known size.

    `sniff(head) -> problem | None` looks at the first bytes before the rest is read, so
    garbage is refused early (a gzip file is sniffed after decompression). Bigger than
    `max_bytes` (default `MAX_INPUT_BYTES`, the machine's memory; decompressed too),
    special or unreadable files raise TraceInputError. `gunzip`: a gzip file (by its magic
    bytes, whatever its name) is decompressed.
    """
    if gunzip:
        data = read_input_bytes(path, max_bytes=max_bytes)
        if data[:2] == _GZIP_MAGIC:
            limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
            data = _gunzip(data, path, limit or (1 << 62))
        problem = sniff(data[:_SNIFF_BYTES]) if sniff is not None and data else None
        if problem:
            raise TraceInputError(path, problem)
        return data
    limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    fd = open_regular_fd(path)
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            size = os.fstat(fd).st_size
            if limit is not None and size > limit:
                what = ("larger than this machine's memory" if max_bytes is None
                        else "more than this kind of file may have")
                raise TraceInputError(path, f"is {_size(size)}, {what} ({_size(limit)}): "
                                            "cannot read it")
            if sniff is not None and size:
                problem = sniff(os.pread(fd, _SNIFF_BYTES, 0))
                if problem:
                    raise TraceInputError(path, problem)
            return f.readall()
        except OSError as exc:
            raise _os_problem(path, exc, "read") from None


_GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(data: bytes, path, limit: int) -> bytes:
    """Every gzip member of `data`, decompressed; at most `limit` bytes."""
    out, size = [], 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(data, limit + 1 - size)
        except zlib.error as exc:
            raise TraceInputError(path, f"invalid gzip data: {exc}") from None
        size += len(chunk)
        if size > limit or d.unconsumed_tail:
            raise TraceInputError(path, f"decompresses to more than {_size(limit)}")
        if not d.eof:
            raise TraceInputError(path, "truncated gzip data")
        out.append(chunk)
        data = d.unused_data      # concatenated gzip members
    return b"".join(out)


_KEY_BEFORE = re.compile(r'"([^"\\]{1,64})"\s*:\s*$')


def parse_json_bytes(data: bytes, path: str | os.PathLike) -> object:
    """A whole JSON document (of a size read whole: profiles, traces, small files).

    Python's own `json` writes NaN and Infinity (upstream PyPTO's profiles may hold them)
    and JSON allows lone surrogate escapes, which orjson refuses: such a file is parsed
    again with `json`, so the caller's checks name the field ("seconds: expected a finite
    number"), and the writers make the values strict JSON. Any other syntax error is one
    line naming the byte, and the member whose value is bad when one precedes it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        at_nan = data[exc.pos:exc.pos + 9].lstrip(b"-").startswith((b"NaN", b"Infinity"))
        if at_nan or "surrogate" in exc.msg:
            try:
                return json.loads(data)
            except (ValueError, RecursionError):
                pass
        if not data.strip():
            raise TraceInputError(path, "file is empty, expected JSON") from None
        if exc.pos >= len(data.rstrip()):
            raise TraceInputError(path, "truncated JSON (file ends before the document is "
                                        "complete)") from None
        head = data[max(0, exc.pos - 200):exc.pos].decode("utf-8", "replace")
        key = _KEY_BEFORE.search(head)
        where = f" in the value of {key.group(1)!r}" if key else ""
        raise TraceInputError(path, f"invalid JSON at byte {exc.pos}{where}: "
                                    f"{exc.msg}") from None


def load_json_input(path: str | os.PathLike) -> object:
    """A JSON input file (gzip too), read safely and parsed with one-line errors."""
    return parse_json_bytes(read_input_bytes(path, sniff=sniff_json, gunzip=True), path)


def _size(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n:,} bytes"


_JSON_STARTS = frozenset(b'{["-0123456789tfn')


def sniff_json(head: bytes) -> str | None:
    """Why `head` cannot start a JSON document (e.g. NUL bytes), or None."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")   # a UTF-8 BOM is fine
    if not text:
        return None   # all whitespace so far: the parser decides
    if text[0] not in _JSON_STARTS:
        return f"not JSON: starts with byte 0x{text[0]:02x} ({text[:8]!r})"
    return None


def sniff_text(head: bytes) -> str | None:
    """Why `head` cannot start a text log (NUL bytes: a binary file), or None."""
    if b"\0" in head:
        return "not a text file (contains NUL bytes)"
    return None


def entry_is_dir(entry: os.DirEntry) -> bool:
    """`entry.is_dir()`, False where that cannot be told (a symlink loop, no permission):
    such an entry is then refused by name if it is read at all."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def refuse_output_among_inputs(output: str | os.PathLike,
                               inputs: Iterable[str | os.PathLike]) -> None:
    """Raise `OutputPathError` when writing `output` would replace one of the `inputs`
    files: the same file by name, hard link or symlink (compared by device and inode)."""
    try:
        out = {(s.st_dev, s.st_ino) for s in (os.lstat(output), os.stat(output))}
    except OSError:
        return   # nothing there yet (or a broken link): it cannot be an input
    for path in inputs:
        try:
            st = os.stat(path)
        except OSError:
            continue   # its reader names the problem
        if (st.st_dev, st.st_ino) in out:
            raise OutputPathError(output, f"is one of the inputs ({path}): refusing to "
                                          "overwrite it")
