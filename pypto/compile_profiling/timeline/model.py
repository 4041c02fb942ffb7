"""The merged timeline: what the layout step builds and the exporters render, nothing else.

Slices are held as columns (`SliceBlock`: NumPy arrays, one row per slice) from the readers'
arrays to the exporters, whatever their source: a million device tasks are a few arrays,
not a million objects, and a handful of compile stages are a small block of the same kind.
Every time is an integer nanosecond on one axis (host CLOCK_MONOTONIC of the reference host,
or an estimate that the process says it is); the layout step rounds time points once, so a
child never sticks out of its parent, and guarantees that slices on one track nest.

Ids: `Process.pid` / `Track.tid` are what the exporters write (Chrome `pid`/`tid`, protobuf
process/thread descriptors): the real OS pid and native tid for real processes and threads,
fresh numbers for device views and lanes; the layout step keeps them unique.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ArgColumn", "CounterTrack", "FlowBlock", "Process", "SliceBlock", "SliceRow",
           "Timeline", "Track", "counter_track_name", "intern", "other_data"]


@dataclass(slots=True, eq=False)
class Process:
    """A process track: a real OS process (`os_pid` set) or a device view ("Device r0 · AICore")."""

    pid: int
    name: str
    sort_index: int
    os_pid: int | None = None
    args: dict = field(default_factory=dict)     # alignment, source, uncertainty...
    estimated: bool = False
    rank: int | None = None    # the rank of a distributed run whose capture it shows


@dataclass(slots=True, eq=False)
class Track:
    """A lane of a process: a real thread (`os_tid` set) or a hardware/view lane (`AIC_3`)."""

    tid: int
    process: Process
    name: str
    sort_index: int
    os_tid: int | None = None


@dataclass(slots=True, eq=False)
class ArgColumn:
    """One slice argument as a column: `values[i]` is row i's value.

    `values` is a NumPy int64/float64/bool array, a 2D NumPy array (row i's value is the
    list `values[i]`), or a list of JSON values (str, dicts...). With `table` (strings),
    `values` is an int array of indexes into it, as a block's `name` indexes its `names`:
    a column of few distinct strings (a phase kind, a core type) or of one string per task
    shared by several blocks is one Python string per distinct value, each encoded once.
    `present` (bool array) marks the rows that have the argument; None means all do.
    """

    key: str
    values: np.ndarray | list
    present: np.ndarray | None = None
    table: list[str] | None = None

    def values_at(self, rows: slice | np.ndarray) -> list:
        """The values of `rows` (a slice, or an int array of row indexes) as Python values."""
        v = self.values
        if isinstance(v, np.ndarray):
            vals = v[rows].tolist()
        else:
            vals = v[rows] if isinstance(rows, slice) else [v[r] for r in rows.tolist()]
        return vals if self.table is None else list(map(self.table.__getitem__, vals))

    def take(self, rows: np.ndarray) -> ArgColumn:
        """The column of `rows` (an int array of row indexes), in that order."""
        v = self.values
        values = v[rows] if isinstance(v, np.ndarray) else [v[r] for r in rows.tolist()]
        return ArgColumn(self.key, values, None if self.present is None else self.present[rows],
                         self.table)


@dataclass(slots=True, eq=False)
class SliceBlock:
    """Slices as columns. Row i is on `tracks[track[i]]`, named `names[name[i]]`, from
    `start_ns[i]` for `dur_ns[i]` (both int64, dur >= 0), category `cat`, args from `args`.

    `extra_args` (optional, one dict or None per row) carries free-form args of small
    sources (compile stage args); its keys come after the columns' keys.
    """

    cat: str
    tracks: list[Track]
    track: np.ndarray          # int32, index into tracks
    start_ns: np.ndarray       # int64
    dur_ns: np.ndarray         # int64
    names: list[str]
    name: np.ndarray           # int32, index into names
    args: list[ArgColumn] = field(default_factory=list)
    extra_args: list | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    def row_args(self, lo: int = 0, hi: int | None = None) -> list[dict]:
        """The args of rows `lo:hi` as dicts (column keys first, then `extra_args`)."""
        hi = len(self) if hi is None else hi
        out: list[dict] = [{} for _ in range(hi - lo)]
        for col in self.args:
            vals = col.values_at(slice(lo, hi))
            if col.present is None:
                for d, v in zip(out, vals):
                    d[col.key] = v
            else:
                for d, v, ok in zip(out, vals, col.present[lo:hi].tolist()):
                    if ok:
                        d[col.key] = v
        if self.extra_args is not None:
            for d, extra in zip(out, self.extra_args[lo:hi]):
                if extra:
                    d.update(extra)
        return out


def intern(names: list[str]) -> tuple[list[str], np.ndarray]:
    """`names` as a `SliceBlock`'s (names, name): each distinct string once, in first-seen
    order, and the int32 index of each row's."""
    table: dict[str, int] = {}
    ix = np.fromiter((table.setdefault(s, len(table)) for s in names), dtype=np.int32,
                     count=len(names))
    return list(table), ix


@dataclass(frozen=True, slots=True)
class SliceRow:
    """One slice, materialised (for small timelines, tests and reports; exporters read the
    columns)."""

    track: Track
    name: str
    start_ns: int
    dur_ns: int
    cat: str
    args: dict
    block: SliceBlock
    row: int

    @property
    def process(self) -> Process:
        return self.track.process

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


@dataclass(slots=True, eq=False)
class FlowBlock:
    """Arrows as columns: row i goes from the end of `src` row `src_row[i]` to the start of
    `dst` row `dst_row[i]`. All rows share `name` and `cat` (one kind of arrow per block, so
    Perfetto can filter by category)."""

    name: str
    cat: str
    src: SliceBlock
    src_row: np.ndarray        # int64
    dst: SliceBlock
    dst_row: np.ndarray        # int64

    def __len__(self) -> int:
        return len(self.src_row)


@dataclass(slots=True, eq=False)
class CounterTrack:
    """A counter (e.g. ready-queue depth, core utilisation) under `process`: value
    `values[i]` from `ts_ns[i]` on."""

    process: Process
    name: str
    ts_ns: np.ndarray          # int64, ascending
    values: np.ndarray         # float64 or int64
    unit: str = ""


def counter_track_name(counter: CounterTrack) -> str:
    """The counter track's name as Perfetto shows it: a JSON counter is named "<name> <arg
    key>" by the importer, and the key is the unit ("value" without one); the protobuf output
    names its counter tracks the same."""
    return f"{counter.name} {counter.unit or 'value'}"


@dataclass(slots=True, eq=False)
class Timeline:
    """Processes (in display order by `sort_index`), their tracks, the slice/flow blocks and
    counters, and metadata (Chrome `otherData`, protobuf trace metadata)."""

    processes: list[Process] = field(default_factory=list)
    tracks: list[Track] = field(default_factory=list)
    blocks: list[SliceBlock] = field(default_factory=list)
    flows: list[FlowBlock] = field(default_factory=list)
    counters: list[CounterTrack] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    @property
    def slice_count(self) -> int:
        return sum(len(b) for b in self.blocks)

    @property
    def flow_count(self) -> int:
        return sum(len(f) for f in self.flows)

    def slices(self):
        """Every slice as a `SliceRow` (materialises them all: for small timelines)."""
        for block in self.blocks:
            args = block.row_args()
            tracks, names = block.tracks, block.names
            for i, (t, s, d, k) in enumerate(zip(block.track.tolist(), block.start_ns.tolist(),
                                                 block.dur_ns.tolist(), block.name.tolist())):
                yield SliceRow(tracks[t], names[k], s, d, block.cat, args[i], block, i)


def other_data(timeline: Timeline) -> dict:
    """`timeline.metadata` plus what each process is (pid, name, real pid, estimated, args)."""
    other = dict(timeline.metadata)
    other["processes"] = [{"pid": p.pid, "name": p.name, "os_pid": p.os_pid,
                           "estimated": p.estimated, "args": p.args}
                          for p in timeline.processes]
    return other
