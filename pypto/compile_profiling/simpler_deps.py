"""Readers of a capture's program description: deps.json (the task graph, read piece by
piece with per-task `args` stripped, or in a forked child beside the records), the kernel
name maps and dispatch_program.json."""

from __future__ import annotations

import itertools
import logging
import operator
import os
import re
from dataclasses import dataclass

import numpy as np

from pypto.compile_profiling.forked import ForkedCall
from pypto.compile_profiling.simpler_json import (
    _SEP_OBJECTS,
    _array_pieces,
    _is_int,
    _kind,
    _NotChunkable,
    _orjson,
    _read_file_bytes,
    _req,
    _walk_object,
    load_json_file,
    parse_json_bytes,
)
from pypto.errors import TraceInputError

log = logging.getLogger(__name__)

_SEP_TASKS = re.compile(rb'\}\s*,\s*(\{)\s*"task_id"')

# deps.json: a task's `args` (its tensor arguments; most of the file) is not used. This
# matches `,"args":[...]` when the list holds only flat objects (string keys; string, number,
# true/false/null or flat-list values; printable-ASCII strings without escapes), following
# JSON's grammar exactly: a match always is a whole, valid `args` member, and removing it
# leaves the other members as they were. Anything else is left in place and parsed.
_J_STR = rb'"[\x20\x21\x23-\x5b\x5d-\x7e]*+"'
_J_SCALAR = (rb'(?:' + _J_STR + rb'|-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+'
             rb'|true|false|null)')
_J_FLAT = rb'\[\s*+(?:' + _J_SCALAR + rb'\s*+(?:,\s*+' + _J_SCALAR + rb'\s*+)*+)?+\]'
_J_VALUE = rb'(?:' + _J_SCALAR + rb'|' + _J_FLAT + rb')'
_J_OBJ = (rb'\{\s*+(?:' + _J_STR + rb'\s*+:\s*+' + _J_VALUE + rb'\s*+(?:,\s*+' + _J_STR
          + rb'\s*+:\s*+' + _J_VALUE + rb'\s*+)*+)?+\}')
# Possessive quantifiers (*+, ++, ?+): no backtracking; every token here ends at a delimiter.
_STRIP_TASK_ARGS = re.compile(rb',\s*+"args"\s*+:\s*+\[\s*+(?:' + _J_OBJ + rb'\s*+(?:,\s*+'
                              + _J_OBJ + rb'\s*+)*+)?+\]')


# --------------------------------------------------------------------------- deps / names

@dataclass(slots=True)
class DepsGraph:
    """deps.json: the task graph. Task ids are 64-bit `(ring << 32) | local`."""

    path: str
    task_ids: list[int]
    kernel_ids: dict[int, tuple[int, ...]]   # task -> (aic, aiv0, aiv1); -1 = inactive
    block_num: dict[int, int]
    edges: list[tuple[int, int]]             # (pred, succ), duplicates removed, file order


def _task_id(v: object, path, where: str) -> int:
    if type(v) is str and v.isascii() and v.isdigit():
        t = int(v)
    elif _is_int(v) and v >= 0:
        t = v
    else:
        raise TraceInputError(path, f"{where}: expected a task id (decimal string), got {v!r}")
    if t >= 1 << 64:
        raise TraceInputError(path, f"{where}: task id {t} does not fit in 64 bits")
    return t


def _decimal_ids(values: list) -> list[int] | None:
    """All values decimal strings of 1-19 digits (< 2**64) -> ints; else None (slow path)."""
    if not values or set(map(type, values)) != {str}:
        return None
    joined = "".join(values)
    if not (joined.isascii() and joined.isdigit()) or min(map(len, values)) < 1 \
            or max(map(len, values)) > 19:
        return None
    return list(map(int, values))


class _DepsBuilder:
    """Collects what the merge uses from deps.json (ids, kernel ids, block_num, edges);
    fed task and edge lists piece by piece, so per-task `args` never pile up.

    Each piece is checked column-wise first (C-level maps); a piece with anything unusual
    goes through the per-item loop, which words the error exactly."""

    def __init__(self, path):
        self.path = path
        self.task_ids: list[int] = []
        self.kernel_ids: dict[int, tuple[int, ...]] = {}
        self.block_num: dict[int, int] = {}
        self._edges: dict[tuple[int, int], None] = {}   # insertion-ordered, duplicates dropped
        self._kid_tuples: dict[tuple, tuple] = {}   # few distinct kernel id triples: share them
        self.n_tasks = self.n_edges = 0

    def add_tasks(self, tasks: list) -> None:
        if not self._add_tasks_fast(tasks):
            self._add_tasks_checked(tasks)
        self.n_tasks += len(tasks)

    def _add_tasks_fast(self, tasks: list) -> bool:
        if not tasks or set(map(type, tasks)) != {dict}:
            return not tasks
        tids = _decimal_ids(list(map(operator.methodcaller("get", "task_id"), tasks)))
        if tids is None:
            return False
        kids = list(map(operator.methodcaller("get", "kernel_ids"), tasks))
        kid_types = set(map(type, kids))
        if not kid_types <= {list, type(None)}:
            return False
        present = [k for k in kids if k is not None] if type(None) in kid_types else kids
        if present and set(map(type, itertools.chain.from_iterable(present))) - {int}:
            return False
        bns = list(map(operator.methodcaller("get", "block_num", 1), tasks))
        if set(map(type, bns)) != {int} or min(bns) < 0:
            return False
        self.task_ids.extend(tids)
        intern = self._kid_tuples.setdefault
        if present is kids:
            self.kernel_ids.update(zip(tids, [intern(t, t) for t in map(tuple, kids)]))
        else:
            self.kernel_ids.update((t, intern(tuple(k), tuple(k)))
                                   for t, k in zip(tids, kids) if k is not None)
        self.block_num.update(zip(tids, map(max, bns, itertools.repeat(1))))
        return True

    def _add_tasks_checked(self, tasks: list) -> None:
        path, base = self.path, self.n_tasks
        task_ids, kernel_ids, block_num = self.task_ids, self.kernel_ids, self.block_num
        kid_tuples = self._kid_tuples
        for i, t in enumerate(tasks, base):
            if type(t) is not dict:
                raise TraceInputError(path, f"tasks[{i}]: expected an object, got {_kind(t)}")
            where = f"tasks[{i}]"
            tid = _task_id(_req(t, "task_id", path, where), path, f"{where}.task_id")
            task_ids.append(tid)
            kids = t.get("kernel_ids")
            if kids is not None:
                if type(kids) is not list or not all(type(k) is int for k in kids):
                    raise TraceInputError(path, f"tasks[{i}].kernel_ids: expected a list of "
                                                "integers")
                kt = tuple(kids)
                kernel_ids[tid] = kid_tuples.setdefault(kt, kt)
            bn = t.get("block_num", 1)
            if type(bn) is not int or bn < 0:
                raise TraceInputError(path, f"tasks[{i}].block_num: expected a non-negative "
                                            f"integer, got {bn!r}")
            block_num[tid] = max(1, bn)

    def add_edges(self, edges: list) -> None:
        fast = bool(edges) and set(map(type, edges)) == {dict}
        if fast:
            preds = _decimal_ids(list(map(operator.methodcaller("get", "pred"), edges)))
            succs = _decimal_ids(list(map(operator.methodcaller("get", "succ"), edges)))
            fast = preds is not None and succs is not None
        if fast:
            self._edges.update(dict.fromkeys(zip(preds, succs)))
        else:
            self._add_edges_checked(edges)
        self.n_edges += len(edges)

    def _add_edges_checked(self, edges: list) -> None:
        path, out = self.path, self._edges
        for i, e in enumerate(edges, self.n_edges):
            where = f"edges[{i}]"
            if type(e) is not dict:
                raise TraceInputError(path, f"{where}: expected an object, got {_kind(e)}")
            out[(_task_id(_req(e, "pred", path, where), path, f"{where}.pred"),
                 _task_id(_req(e, "succ", path, where), path, f"{where}.succ"))] = None

    def result(self) -> DepsGraph:
        return DepsGraph(str(self.path), self.task_ids, self.kernel_ids, self.block_num,
                         list(self._edges))


def _read_deps_chunked(buf: bytes, path) -> DepsGraph:
    b = _DepsBuilder(path)
    done = []

    def pieces(sep, consume, strip=None):
        def handle(buf, p):
            done.append(consume)
            return _array_pieces(buf, p, sep, lambda items, _text: consume(items), strip)
        return handle

    _walk_object(buf, {"tasks": pieces(_SEP_TASKS, b.add_tasks, _STRIP_TASK_ARGS),
                       "edges": pieces(_SEP_OBJECTS, b.add_edges)})
    if len(done) != 2:
        raise _NotChunkable            # absent or not lists: the plain path words the error
    return b.result()


def read_deps(path: str | os.PathLike, data: object = None) -> DepsGraph:
    """Read deps.json: task ids, kernel ids, block_num and edges (per-task args are dropped)."""
    if data is None:
        buf = _read_file_bytes(path)
        if _orjson is not None and buf.strip():
            try:
                return _read_deps_chunked(buf, path)
            except (_NotChunkable, TraceInputError):
                pass   # parse it whole: same result, and the canonical error message
        data = parse_json_bytes(buf, path)
        del buf
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    tasks = _req(data, "tasks", path, "deps.json")
    edges = _req(data, "edges", path, "deps.json")
    if not isinstance(tasks, list):
        raise TraceInputError(path, f"tasks: expected a list, got {_kind(tasks)}")
    if not isinstance(edges, list):
        raise TraceInputError(path, f"edges: expected a list, got {_kind(edges)}")
    b = _DepsBuilder(path)
    b.add_tasks(tasks)
    b.add_edges(edges)
    return b.result()


@dataclass(slots=True)
class NameMap:
    """name_map_<case>.json: kernel (callable) id -> name, valid within one program."""

    path: str
    level: int | None
    orchestrator_name: str | None
    names: dict[int, str]


def read_name_map(path: str | os.PathLike, data: object = None) -> NameMap:
    if data is None:
        data = load_json_file(path)
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    table = _req(data, "callable_id_to_name", path, "name map")
    if not isinstance(table, dict):
        raise TraceInputError(path, f"callable_id_to_name: expected an object, got {_kind(table)}")
    names = {}
    for k, v in table.items():
        if not (k.isdigit() or (k.startswith("-") and k[1:].isdigit())):
            raise TraceInputError(path, f"callable_id_to_name: key {k!r} is not an integer id")
        if not isinstance(v, str):
            raise TraceInputError(path, f"callable_id_to_name[{k!r}]: expected a string, "
                                        f"got {_kind(v)}")
        names[int(k)] = v
    level = data.get("level")
    if level is not None and not _is_int(level):
        raise TraceInputError(path, f"level: expected an integer, got {_kind(level)}")
    orch = data.get("orchestrator_name")
    if orch is not None and not isinstance(orch, str):
        raise TraceInputError(path, f"orchestrator_name: expected a string, got {_kind(orch)}")
    return NameMap(str(path), level, orch, names)


@dataclass(slots=True)
class DispatchProgram:
    """dispatch_program.json of a distributed leaf: which program ran in this dispatch."""

    path: str
    program: str
    raw: dict


def read_dispatch_program(path: str | os.PathLike, data: object = None) -> DispatchProgram:
    if data is None:
        data = load_json_file(path)
    if not isinstance(data, dict):
        raise TraceInputError(path, f"expected a JSON object at the top level, got {_kind(data)}")
    program = _req(data, "program", path, "dispatch_program.json")
    if not isinstance(program, str) or not program:
        raise TraceInputError(path, f"program: expected a non-empty string, got {program!r}")
    return DispatchProgram(str(path), program, data)


class _DepsInChild:
    """Reads deps.json in a forked child while the parent reads the records file (2 cores:
    the two big parses overlap). The graph comes back packed in NumPy arrays."""

    def __init__(self, path: str):
        self.path = path
        self._call = ForkedCall(lambda: _pack_deps(read_deps(path)))

    def result(self) -> DepsGraph:
        try:
            packed = self._call.result()
        except TraceInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - the child crashed: read it here instead
            log.warning("reading %s in a child failed (%s: %s); reading it here", self.path,
                        type(exc).__name__, exc)
            return read_deps(self.path)
        return _unpack_deps(self.path, packed)

    def cancel(self) -> None:
        self._call.cancel()


def _pack_deps(g: DepsGraph) -> tuple:
    kid_index: dict[tuple, int] = {}
    kids = [-1] * len(g.task_ids)
    for i, t in enumerate(g.task_ids):
        k = g.kernel_ids.get(t)
        if k is not None:
            kids[i] = kid_index.setdefault(k, len(kid_index))
    return (np.array(g.task_ids, dtype=np.uint64), list(kid_index), np.array(kids, np.int64),
            np.array([g.block_num[t] for t in g.task_ids], dtype=np.int64),
            np.array(g.edges, dtype=np.uint64).reshape(-1, 2))


def _unpack_deps(path, packed: tuple) -> DepsGraph:
    tids_a, kid_tuples, kids, bns, edges = packed
    tids = tids_a.tolist()
    kernel_ids = {t: kid_tuples[k] for t, k in zip(tids, kids.tolist()) if k >= 0}
    return DepsGraph(str(path), tids, kernel_ids, dict(zip(tids, bns.tolist())),
                     list(map(tuple, edges.tolist())))
