"""Phase records (scheduler, orchestrator, host phases) decoded into `PhaseColumns`: typed
decoders built once per schema type, fields absent from a whole piece kept as a count, list
fields as (n, k) columns, a record that does not fit skipped alone."""

from __future__ import annotations

import collections
import functools
import itertools
from operator import attrgetter

import msgspec
import numpy as np

from pypto.compile_profiling.timeline.model import ArgColumn
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_OBJECTS,
    JsonPieces,
    safe_str,
)
from pypto.compile_profiling.trace_merge.read.record_rows import (
    Invalid,
    Mixed,
    Skipped,
    decode_each,
)
from pypto.compile_profiling.trace_merge.read.swimlane_records import PhaseColumns

ABSENT = schema.ABSENT


@functools.cache
def _phase_decoders(record: type) -> tuple:
    """The strict, lenient and plain decoders of a record type and its lenient type, made
    once per type: building them (and `msgspec.structs.fields` below) evaluates the schema's
    annotations anew each time, about 1 ms per thread stream of every file read."""
    lenient = msgspec.defstruct(record.__name__ + "Lenient", [], bases=(record,),
                                forbid_unknown_fields=False, gc=False)
    return (msgspec.json.Decoder(list[record]), msgspec.json.Decoder(list[lenient]),
            msgspec.json.Decoder(list), lenient)


@functools.cache
def _record_fields(record: type) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(record)


class PhaseDecoder:
    """Typed decoding of records; a record with a field the schema does not declare
    switches the stream to a lenient decode plus a plain one for the extra fields. A piece
    with a record that does not fit its schema is decoded again record by record, the bad
    ones `Invalid` (their builder skips them)."""

    def __init__(self, record: type):
        self.strict, self.lenient, self.plain, self.lenient_type = _phase_decoders(record)
        self.loose = False

    def decode(self, piece):
        if not self.loose:
            try:
                return self.strict.decode(piece)
            except msgspec.ValidationError as exc:
                if "unknown field" not in str(exc):
                    return self._each(self.plain.decode(piece))
                self.loose = True
        try:
            items = _WithExtras(self.lenient.decode(piece))
        except msgspec.ValidationError:
            return self._each(self.plain.decode(piece))
        items.extras = self.plain.decode(piece)
        return items

    def convert(self, obj):
        """A piece the Python json path decoded (see `json_pieces`), typed the same way."""
        try:
            return msgspec.convert(obj, self.type)
        except msgspec.ValidationError:
            return self._each(obj)

    def _each(self, objs: list):
        self.loose = True
        items = decode_each(objs, self.lenient_type)
        items.extras = [o if isinstance(o, dict) else {} for o in objs]
        return items

    @property
    def type(self):
        """What a piece decodes to (for the Python-json path of `JsonPieces`)."""
        return (self.lenient if self.loose else self.strict).type


class _WithExtras(list):
    extras: list[dict] | None = None


class RecordColumns:
    """Column chunks of decoded records of one Struct type, fed a piece at a time: the
    `lead` int fields and every counter (default ABSENT) in one int64 block per piece,
    nullable ints as ABSENT where null, other fields (lists, strings) as (n, k) arrays or
    lists, and fields the schema does not declare (lenient decode) per row."""

    def __init__(self, record: type, lead: tuple[str, ...], skip: tuple[str, ...] = (),
                 nullable: tuple[str, ...] = ()):
        fields = _record_fields(record)
        self.known = [f.name for f in fields]
        self.lead = lead
        self.counts = [f.name for f in fields
                       if f.default == ABSENT and f.name not in lead and f.name not in skip]
        self.nullable = [k for k in nullable if k in self.known]
        self.others = [k for k in self.known if k not in lead and k not in skip
                       and k not in self.counts and k not in self.nullable]
        # lead and every counter in one pass: one tuple per record, flattened by fromiter
        # (measured 1.8x faster than one fromiter per field)
        self.int_get = attrgetter(*lead, *self.counts)
        self.width = len(lead) + len(self.counts)
        self.ints: list[np.ndarray] = []
        self.chunks: dict[str, list] = {k: [] for k in (*self.nullable, *self.others)}
        self.extra_rows: list[tuple[int, dict]] = []     # (row, fields not in the schema)
        self.n = 0

    def add(self, items: list) -> np.ndarray:
        """Take one decoded piece; -> its int block (lead columns first)."""
        n, ch = len(items), self.chunks
        block = np.fromiter(itertools.chain.from_iterable(map(self.int_get, items)), np.int64,
                            n * self.width).reshape(n, self.width)
        self.ints.append(block)
        for key in self.nullable:
            vals = list(map(attrgetter(key), items))
            nulls = vals.count(None)
            if nulls == n:
                ch[key].append(n)                 # all null: no array at all
            else:
                ch[key].append(np.fromiter(vals if not nulls else
                                           (ABSENT if v is None else v for v in vals),
                                           np.int64, n))
        for key in self.others:
            vals = list(map(attrgetter(key), items))
            if vals.count(None) == n:
                vals = n                          # all absent: a count, not n Nones
            elif type(vals[0]) is list and None not in vals \
                    and len(set(map(len, vals))) == 1:
                k = len(vals[0])          # (n, k) int64: 24 B a row, not ~143 B a list
                vals = np.fromiter(itertools.chain.from_iterable(vals), np.int64,
                                   n * k).reshape(n, k)
            ch[key].append(vals)
        for j, d in enumerate(getattr(items, "extras", None) or ()):
            extra = {k: v for k, v in d.items() if k not in self.known}
            if extra:
                self.extra_rows.append((self.n + j, extra))
        self.n += n
        return block

    def pop_last(self) -> None:
        """Take back the piece `add` took last (to add it again without some records)."""
        n = len(self.ints.pop())
        for parts in self.chunks.values():
            parts.pop()
        self.n -= n
        self.extra_rows = [(r, e) for r, e in self.extra_rows if r < self.n]

    def finish(self, where: str = "", skipped: Skipped | None = None,
               index: np.ndarray | None = None
               ) -> tuple[dict[str, np.ndarray], list[ArgColumn]]:
        """-> (lead columns by name, every other field as an ArgColumn in schema order,
        fields not in the schema after them; absent fields give no column). A list field
        of another length than the rest of its column is dropped for that record, counted
        in `skipped` under `where` (`index`: the records' JSON positions)."""
        ints = np.concatenate(self.ints) if self.ints else \
            np.zeros((0, self.width), np.int64)
        self.ints = []
        keys = [*self.lead, *self.counts]
        col = {k: np.ascontiguousarray(ints[:, j]) for j, k in enumerate(keys)}
        del ints
        args = []
        for key in self.known:
            if key in self.counts:
                args.append(arg_column(key, col[key], col[key] != ABSENT))
            elif key in self.nullable:
                parts = self.chunks[key]
                if all(type(p) is int for p in parts):
                    continue
                v = np.concatenate([np.full(p, ABSENT, np.int64) if type(p) is int else p
                                    for p in parts])
                args.append(arg_column(key, v, v != ABSENT))
            elif key in self.others:
                args.append(_other_arg(key, self.chunks[key], where, skipped, index))
        for key in dict.fromkeys(k for _, extra in self.extra_rows for k in extra):
            values = [None] * self.n
            for row, extra in self.extra_rows:
                values[row] = extra.get(key)
            args.append(list_arg(key, values, where, skipped, index))
        return ({k: col[k] for k in self.lead}, [a for a in args if a is not None])


def _other_arg(key: str, parts: list, where: str = "", skipped: Skipped | None = None,
               index: np.ndarray | None = None) -> ArgColumn | None:
    if not parts or all(type(p) is int for p in parts):
        return None
    if all(type(p) is np.ndarray for p in parts) and len({p.shape[1] for p in parts}) == 1:
        return ArgColumn(key, np.concatenate(parts))
    values = []
    for p in parts:
        values.extend([None] * p if type(p) is int else
                      p.tolist() if type(p) is np.ndarray else p)
    return list_arg(key, values, where, skipped, index)


def arg_column(key: str, values: np.ndarray, present: np.ndarray | None) -> ArgColumn | None:
    if present is not None:
        if not present.any():
            return None
        if present.all():
            present = None
    return ArgColumn(key, values, present)


def list_arg(key: str, values: list, where: str = "", skipped: Skipped | None = None,
              index: np.ndarray | None = None) -> ArgColumn | None:
    """A column of non-int (or nullable, or extra) values: int64 when every present value
    is an int, (n, k) int64 when every value is a list of k ints, else a list. Lists of ints
    of several lengths: the most common length is the column's, and a list of another
    length is dropped for its record alone (None), counted in `skipped`."""
    present_n = len(values) - values.count(None)
    if present_n == 0:
        return None
    types = set(map(type, values))
    if types <= {int, type(None)}:
        present = np.array([v is not None for v in values]) if present_n < len(values) \
            else None
        try:
            arr = np.array([0 if v is None else v for v in values], dtype=np.int64)
        except OverflowError:
            return ArgColumn(key, values, present)
        return arg_column(key, arr, present)
    if types <= {list, type(None)} and all(type(x) is int for v in values if v is not None
                                           for x in v):
        lengths = collections.Counter(len(v) for v in values if v is not None)
        k = max(lengths, key=lambda n: (lengths[n], -n))
        if len(lengths) > 1:
            odd = [i for i, v in enumerate(values) if v is not None and len(v) != k]
            if skipped is not None:
                for i in odd:
                    at = int(index[i]) if index is not None else i
                    skipped.add(f"{where}.{key}", f"{where}[{at}].{key}: {len(values[i])} "
                                                  f"values where the others have {k}: "
                                                  "dropped for that record alone")
            values = list(values)
            for i in odd:
                values[i] = None
            present_n -= len(odd)
        if None not in values:
            try:
                arr = np.array(values, dtype=np.int64)
                if arr.ndim == 2:
                    return ArgColumn(key, arr)
            except (OverflowError, ValueError, TypeError):
                pass
    if str in types:
        values = [safe_str(v) if type(v) is str else v for v in values]
    present = np.array([v is not None for v in values]) if present_n < len(values) else None
    return ArgColumn(key, values, present)


def kept(items: list, keep: list[int]) -> list:
    """The records `keep` of a decoded piece, with their extra fields (if any)."""
    out = _WithExtras([items[i] for i in keep])
    extras = getattr(items, "extras", None)
    out.extras = None if extras is None else [extras[i] for i in keep]
    return out


class PhaseBuilder:
    """One thread's phase records (one stream) as columns, fed a decoded piece at a time.
    A record that did not decode, or ends before it starts, is skipped alone."""

    def __init__(self, thread: int, spec: schema.PhaseSchema, path, where: str,
                 skipped: Skipped):
        self.thread, self.spec, self.path, self.where = thread, spec, path, where
        self.skipped = skipped
        skip = (spec.kind,) if spec.kind else ()
        self.cols = RecordColumns(spec.record, (spec.start, spec.end), skip, spec.nullable)
        self.kind_chunks: list[np.ndarray] = []
        self.kind_codes: dict[str, int] = {}
        self.index: list[np.ndarray] = []
        self.seen = 0                           # records in the JSON array, bad ones too

    def add(self, base: int, items: list) -> None:
        spec, where = self.spec, self.where
        self.seen = max(self.seen, base + len(items))
        keep = None
        if type(items) is Mixed:                # some records did not decode: skip them
            keep = [i for i, it in enumerate(items) if type(it) is not Invalid]
            for i, it in enumerate(items):
                if type(it) is Invalid:
                    self.skipped.add(where, f"{where}[{base + i}]{it.reason}")
            items = kept(items, keep)
        block = self.cols.add(items)
        backwards = block[:, 1] < block[:, 0]    # the lead columns: start, end
        if backwards.any():                      # rare: take the piece back without them
            self.cols.pop_last()
            at = keep if keep is not None else list(range(len(items)))
            for i in np.flatnonzero(backwards).tolist():
                self.skipped.add(where, f"{where}[{base + at[i]}]: {spec.end} "
                                        f"{int(block[i, 1])} is before {spec.start} "
                                        f"{int(block[i, 0])} (negative duration)")
            ok = np.flatnonzero(~backwards).tolist()
            keep = [at[i] for i in ok]
            items = kept(items, ok)
            self.cols.add(items)
        n = len(items)
        self.index.append(base + (np.arange(n, dtype=np.int64) if keep is None
                                  else np.array(keep, dtype=np.int64)))
        if spec.kind is None:
            self.kind_chunks.append(np.zeros(n, np.int32))
        else:
            names = list(map(attrgetter(spec.kind), items))
            codes = self.kind_codes
            for k in dict.fromkeys(names):        # first-appearance order
                if k not in codes:
                    codes[k] = len(codes)
            self.kind_chunks.append(np.fromiter(map(codes.__getitem__, names), np.int32, n))

    def finish(self) -> PhaseColumns:
        lead, args = self.cols.finish(self.where, self.skipped)
        kinds = [safe_str(k) for k in self.kind_codes] if self.spec.kind else \
            [self.spec.default_kind]
        kind = np.concatenate(self.kind_chunks) if self.kind_chunks else np.zeros(0, np.int32)
        cols = PhaseColumns(self.thread, self.spec.clock, lead[self.spec.start],
                            lead[self.spec.end], kind, kinds, args, source=self.where,
                            index=np.concatenate(self.index) if self.index
                            else np.zeros(0, np.int64))
        epoch = cols.arg("run_epoch")
        if epoch is not None:
            cols.args.remove(epoch)
            cols.epoch = epoch.values
        return cols


def phase_array(jp: JsonPieces, where: str, b: PhaseBuilder,
                 decoder: PhaseDecoder) -> None:
    for base, items in jp.array(where, decoder, SEP_OBJECTS, 256 << 10):
        b.add(base, items)
        del items


def phase_stream(jp: JsonPieces, name: str, spec: schema.PhaseSchema,
                  skipped: Skipped) -> list[PhaseColumns]:
    """An August-style stream: a list per thread of records (or one flat list)."""
    decoder = PhaseDecoder(spec.record)
    where = f"$.{name}"
    if not spec.per_thread:
        b = PhaseBuilder(0, spec, jp.path, where, skipped)
        phase_array(jp, where, b, decoder)
        return [b.finish()]
    out = []
    for t in jp.items(where):
        b = PhaseBuilder(t, spec, jp.path, f"{where}[{t}]", skipped)
        phase_array(jp, f"{where}[{t}]", b, decoder)
        out.append(b.finish())
    return out
