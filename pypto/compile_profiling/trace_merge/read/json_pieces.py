"""A JSON document read from its file a block at a time, big arrays decoded in pieces.

Simpler's record files reach hundreds of MB (1M tasks). `JsonPieces` never holds more than
a piece (a few MB) of the file's text and that piece's decoded objects: the top-level object
is walked member by member (`members`), small members are decoded whole (`value`), and a
big array is cut into pieces at element boundaries and each piece decoded by a msgspec typed
decoder straight into the caller's columns (`array`). Garbage is rejected at the first bytes,
so a 2 GB file of zeros costs one block.

Cut points are found by a separator pattern (e.g. `},{`), not by scanning the text in
Python. A piece `[` + text + `]` (or a small value's window of text) is accepted only when it
decodes completely; when it does not, the decoder's error tells a cut from bad JSON:
- "data ended" (msgspec's "truncated", Python's "Unterminated string", which points at the
  string's start, not at the cut): a cut, so the piece is extended (doubling, so a mis-cut
  costs at most a few decodes);
- an error at a byte: bad JSON only if a longer piece fails at the same byte, or the piece
  reaches the end of the file. A cut inside a token (`tr|ue`, `1e|5`, `\ud800|\udc00`)
  fails near the cut, and a longer piece reads past it; an error in the file is where it is
  whatever follows, so confirming it costs one more decode, only when the input is bad.
A validation error is real wherever it is: everything before the cut was lexed exactly as in
the whole file. Errors name the file and the JSON path (`$.tasks[17].kernel_ids[2]: expected
int, got str`), indices counted in the whole file; nothing is ever parsed twice to word them.

msgspec rejects lone surrogate escapes (`"\\ud800"`), which Python's json accepts; such a
piece is decoded by Python's json and converted (checked) by msgspec, and its strings are
made safe (lone surrogates become U+FFFD, `safe_strings`), so every string read is valid
UTF-8 for the writers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import BinaryIO

import msgspec

from pypto.compile_profiling.foundation.safe_json import clean_text as safe_str
from pypto.errors import TraceInputError

__all__ = ["SEP_OBJECTS", "SEP_ROWS", "JsonPieces", "safe_str", "safe_strings",
           "word_error"]

SEP_OBJECTS = re.compile(rb"\}\s*,\s*(\{)")
SEP_ROWS = re.compile(rb"\]\s*,\s*(\[)")
_WS = b" \t\r\n"
_BLANKS = re.compile(rb"[ \t\r\n]*")
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_AT_BYTE = re.compile(r"\(byte (\d+)\)")
_PATH = re.compile(r"^(.*?)(?: - at `(?:key` in `)?\$((?:\[\d+\])?)(.*)`)?$", re.DOTALL)
_INDEX = re.compile(r"\[(\d+)\]|\.([A-Za-z_][A-Za-z0-9_]*)")
_SEP_ANY = re.compile(rb"[\]}\"0-9el]\s*,\s*([\[{\"0-9tfn-])")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_NUMBER_GOES_ON = re.compile(r"[0-9.eE+-]*")
_TRUNCATED = "truncated JSON (file ends before the document is complete)"
# A token cut at a piece's end is blamed at most this many bytes before the cut (a surrogate
# pair cut after its first escape, `\ud800\udc0`, is blamed at its start: 12 bytes)
_TOKEN_BYTES = 16
_untyped = msgspec.json.Decoder()
_py_json = json.JSONDecoder()


def safe_strings(obj: object) -> object:
    """`obj` (decoded JSON) with `safe_str` applied to every string, keys included;
    iterative, so any depth works. Only Python's json can produce lone surrogates."""
    if isinstance(obj, str):
        return safe_str(obj)
    if not isinstance(obj, (list, dict)):
        return obj
    todo = [obj]
    while todo:
        c = todo.pop()
        if isinstance(c, list):
            for i, v in enumerate(c):
                if isinstance(v, str):
                    c[i] = safe_str(v)
                elif isinstance(v, (list, dict)):
                    todo.append(v)
        else:
            for k in list(c):
                v = c[k]
                if isinstance(v, str):
                    v = safe_str(v)
                elif isinstance(v, (list, dict)):
                    todo.append(v)
                sk = safe_str(k)
                if sk != k:
                    del c[k]
                c[sk] = v
    return obj


def word_error(exc: msgspec.ValidationError, prefix: str, base: int = 0,
               doc: object = None) -> str:
    """msgspec's "Expected `int`, got `str` - at `$[17].kernel_ids[2]`" as
    "<prefix>[17 + base].kernel_ids[2]: expected int, got str" (with the offending value
    from `doc`, the decoded piece, when msgspec does not say it)."""
    m = _PATH.match(str(exc))
    text, index, rest = (m.group(1), m.group(2) or "", m.group(3) or "") if m else (
        str(exc), "", "")
    text = text.replace("`", "")
    text = text[:1].lower() + text[1:]
    where = prefix
    if index:
        i = int(index[1:-1])
        where += f"[{base + i}]"
        path = [i]
    else:
        path = []
    where += rest
    if doc is not None and "got" not in text and "missing" not in text:
        v = _value_at(doc, path + [int(a) if a else b for a, b in _INDEX.findall(rest)])
        if isinstance(v, (int, float, str)) and not isinstance(v, bool) and repr(v) not in text:
            text += f", got {v!r}"[:120]
    return f"{where}: {text}"


def _value_at(doc: object, path: list) -> object:
    try:
        for p in path:
            doc = doc[p]
        return doc
    except (KeyError, IndexError, TypeError):
        return None


class _MisCut(Exception):
    """The piece ends inside an element: extend it."""


class _Suspect(Exception):
    """A syntax error at byte `at` of the file, seen in a piece that more text follows: real
    only if a longer piece fails the same way (see the module docstring)."""

    def __init__(self, at: int, msg: str) -> None:
        super().__init__(at, msg)
        self.at, self.msg = at, msg


class _PieceBuffer:
    """The file read a block at a time: the bytes not yet walked, where they sit in the
    file, and the errors that name the file and the byte."""


    def __init__(self, f: BinaryIO, path, *, block_bytes: int = 1 << 20,
                 max_piece_bytes: int = 64 << 20, value_bytes: int = 1 << 16):
        self.f, self.path = f, str(path)
        self.block, self.max_piece = block_bytes, max_piece_bytes
        self.value_window = value_bytes   # the first window a small value is decoded from
        self.buf = b""
        self.pos = 0          # next unread byte in buf
        self.base = 0         # file offset of buf[0]
        self.eof = False

    # ------------------------------------------------------------------ buffer

    def _more(self) -> bool:
        if self.eof:
            return False
        data = self.f.read(self.block)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos:] + data
        self.pos = 0
        return True

    def _need(self, n: int) -> None:
        while len(self.buf) - self.pos < n and self._more():
            pass

    def _skip_ws(self) -> None:
        while True:
            self.pos = _BLANKS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._more():
                return

    def peek(self) -> bytes:
        """The next non-blank byte (b"" at the end), not consumed."""
        self._skip_ws()
        return self.buf[self.pos:self.pos + 1]

    def error(self, problem: str) -> TraceInputError:
        return TraceInputError(self.path, problem)

    def _syntax(self, at: int, msg: str) -> TraceInputError:
        if self.eof and at >= self.base + len(self.buf.rstrip()):
            return self.error(_TRUNCATED)
        return self.error(f"invalid JSON at byte {at}: {msg}")

    def _found(self) -> str:
        c = self.peek()
        if not c:
            return "the end of the file"
        return {b"{": "object", b"[": "array", b'"': "str", b"t": "bool", b"f": "bool",
                b"n": "null"}.get(c, "number" if c in b"-0123456789" else
                                  f"byte 0x{c[0]:02x} (not JSON)")


class _SmallValues(_PieceBuffer):
    """A small value decoded from the buffer where it starts, a cut told from bad JSON."""

    def value(self, where: str, type_: object = None) -> object:
        """Decode the (small) value at the current position; `type_` checks it."""
        self._skip_ws()
        window, suspect = self.value_window, None
        while True:
            self._need(window)
            data = memoryview(self.buf)[self.pos:self.pos + window]
            at_end = self.eof and self.pos + len(data) == len(self.buf)
            try:
                obj, used = self._decode_prefix(data, at_end, where)
            except _MisCut:
                pass
            except _Suspect as s:
                suspect = self._judge(s, suspect, self.base + self.pos + len(data))
            else:
                break
            if window >= self.max_piece:
                raise self.error(f"{where}: value larger than {self.max_piece >> 20} MB, "
                                 "or invalid JSON") from None
            window *= 4
        self.pos += used
        if type_ is None:
            return obj
        try:
            return msgspec.convert(obj, type_)
        except msgspec.ValidationError as exc:
            raise self.error(word_error(exc, where, doc=obj)) from None

    def _judge(self, s: _Suspect, suspect: tuple | None, end: int) -> tuple | None:
        """An error seen in a piece ending at file offset `end` that more text follows:
        raise it when the previous, shorter piece failed the same way; else return what to
        compare the next piece's error with (None when it lies in the last few bytes, where
        a cut token is blamed: it is judged only once a piece reaches past it)."""
        if (s.at, s.msg) == suspect:
            raise self._syntax(s.at, s.msg) from None
        return (s.at, s.msg) if end - s.at > _TOKEN_BYTES else None

    def _decode_prefix(self, data, at_end: bool, where: str) -> tuple[object, int]:
        """(value, bytes used) of the JSON value at the start of `data` (at JSON path
        `where`); `_MisCut` when `data` may end inside it, `_Suspect` for an error a longer
        `data` may not have."""
        try:
            obj = _untyped.decode(data)
            if not at_end:
                raise _MisCut                 # a number may go on
            return obj, len(data)
        except msgspec.ValidationError:
            # valid JSON holding an integer of over 4,300 digits (Python's limit, which
            # msgspec keeps): more text only makes a number longer, so it is bad wherever
            # the cut falls; the untyped decoder cannot say which member holds it
            raise self.error(f"{where}: holds an integer of over 4,300 digits, too big for "
                             "any field") from None
        except msgspec.DecodeError as exc:
            msg = str(exc)
            m = _TRAILING.search(msg)
            if m:
                n = int(m.group(1)) - 1       # msgspec: 1 past the first trailing byte
                while n > 0 and data[n - 1] in _WS:
                    n -= 1
                return _untyped.decode(data[:n]), n
            if "truncated" in msg and not _SURROGATE.search(data):
                if at_end:
                    raise self.error(_TRUNCATED) from None
                raise _MisCut from None
        except RecursionError:
            raise self.error(f"JSON nested too deeply (over about 1,000 levels) at byte "
                             f"{self.base + self.pos}") from None
        # msgspec refuses a lone surrogate escape (as "truncated"), and places other errors
        # at a byte: Python's json reads the former and words the latter.
        return self._python_prefix(bytes(data), more_may_follow=not at_end)

    def _python_prefix(self, data: bytes, more_may_follow: bool) -> tuple[object, int]:
        """Python's json for what msgspec refuses (lone surrogate escapes); byte offsets
        in errors count from `self.base + self.pos`. While `more_may_follow`, an error is
        `_MisCut` when the data ended inside a string, else `_Suspect`."""
        text = data.decode("utf-8", "surrogateescape")
        lead = len(text) - len(text.lstrip(" \t\r\n"))
        try:
            obj, end = _py_json.raw_decode(text, lead)
        except json.JSONDecodeError as exc:
            unterminated = exc.msg.startswith("Unterminated")
            if more_may_follow and unterminated:
                raise _MisCut from None
            if unterminated:
                raise self.error(_TRUNCATED) from None
            at = self.base + self.pos + len(text[:exc.pos].encode("utf-8", "surrogateescape"))
            if more_may_follow:
                raise _Suspect(at, exc.msg) from None
            raise self._syntax(at, exc.msg) from None
        except RecursionError:
            raise self.error(f"JSON nested too deeply (over about 1,000 levels) at byte "
                             f"{self.base + self.pos}") from None
        except ValueError as exc:         # Python's int digit limit (over 4,300 digits)
            raise self.error(f"invalid JSON at byte {self.base + self.pos} or after: "
                             f"{exc}"[:200]) from None
        if (more_may_follow and type(obj) in (int, float)
                and _NUMBER_GOES_ON.fullmatch(text, end)):
            raise _MisCut                     # "-0." of "-0.5": a number that may go on
        return safe_strings(obj), len(text[:end].encode("utf-8", "surrogateescape"))


class JsonPieces(_SmallValues):
    """Walk one JSON document of a file (see the module docstring)."""

    # ------------------------------------------------------------------ the walk

    def members(self, what: str) -> Iterator[str]:
        """Keys of the top-level object; the caller reads each value (`value`, `array`,
        `skip`, `object`) before asking for the next key. `what` names the file kind in
        errors."""
        c = self.peek()
        if c != b"{":
            if not c:
                raise self.error("file is empty, expected JSON")
            raise self.error(f"expected a JSON object at the top level ({what}), found "
                             f"{self._found()}")
        yield from self.object("$")
        self.finish()

    def object(self, where: str) -> Iterator[str]:
        """Keys of the object at the current position (`where`: its JSON path, for
        errors); the caller reads each value before asking for the next key, so a big
        member (an array of records) is still read a piece at a time."""
        if self.peek() != b"{":
            raise self.error(f"{where}: expected object, got {self._found()}")
        seen = set()
        ended = self._opened(b"}")
        while not ended:
            if self.peek() != b'"':
                raise self._syntax(self.base + self.pos, "expected a member name")
            key = self.value(where)
            if key in seen:
                raise self.error(f"{where}.{key}: duplicate member")
            seen.add(key)
            if self.peek() != b":":
                raise self._syntax(self.base + self.pos, "expected ':'")
            self.pos += 1
            self._skip_ws()
            yield key
            ended = self._next_or_close(b"}")

    def items(self, where: str) -> Iterator[int]:
        """Indices of the elements of the array at the current position; the caller reads
        each element (`value`, `array`, `skip`) before asking for the next."""
        if self.peek() != b"[":
            raise self.error(f"{where}: expected array, got {self._found()}")
        i, ended = 0, self._opened(b"]")
        while not ended:
            yield i
            ended = self._next_or_close(b"]")
            i += 1

    def _opened(self, close: bytes) -> bool:
        """Step into the container at the current position; True when it is empty."""
        self.pos += 1
        empty = self.peek() == close
        self.pos += empty
        return empty

    def _next_or_close(self, close: bytes) -> bool:
        """After an element: step over ',' (False) or the container's `close` (True)."""
        c = self.peek()
        self.pos += 1
        if c == close:
            return True
        if c != b",":
            raise self._syntax(self.base + self.pos - 1, f"expected ',' or '{close.decode()}'")
        self._skip_ws()
        return False

    def finish(self) -> None:
        """Check that nothing but whitespace follows the document."""
        if self.peek():
            raise self._syntax(self.base + self.pos, "data after the end of the document")

    def skip(self, where: str) -> None:
        """Step over the value at the current position (checked to be JSON), in pieces."""
        if self.peek() == b"[":
            for _ in self.array(where, _RAW_LIST, None):
                pass
        else:
            self.value(where)

    def array(self, where: str, decoder: msgspec.json.Decoder, sep: re.Pattern | None,
              piece_bytes: int = 2 << 20) -> Iterator[tuple[int, list]]:
        """Decode the array at the current position piece by piece: yields (index of the
        piece's first element, decoded elements). `sep` matches between two elements, its
        group 1 starting the next one (None: chosen by the first element)."""
        c = self.peek()
        if c != b"[":
            raise self.error(f"{where}: expected array, got {self._found()}")
        self.pos += 1
        first = self.peek()
        if first == b"]":
            self.pos += 1
            return
        if sep is None:
            sep = SEP_OBJECTS if first == b"{" else SEP_ROWS if first == b"[" else _SEP_ANY
        index = 0
        while True:
            step, suspect = piece_bytes, None
            while True:
                self._need(step + 4096)
                buf, pos = self.buf, self.pos
                m = sep.search(buf, pos + step) if pos + step < len(buf) else None
                cut = m.start() + 1 if m else len(buf)
                final = m is None and self.eof
                piece = b"".join((b"[", memoryview(buf)[pos:cut], b"]"))   # one copy
                try:
                    items, closed = self._decode_piece(piece, decoder, where, index, final)
                except _MisCut:
                    closed = items = None
                except _Suspect as s:
                    suspect = self._judge(s, suspect, self.base + cut)
                    closed = items = None
                if closed is not None or (items is not None and m is not None):
                    break
                if final:
                    raise self.error(_TRUNCATED)
                if cut - pos >= self.max_piece:
                    raise self.error(f"{where}[{index}]: element larger than "
                                     f"{self.max_piece >> 20} MB, or invalid JSON")
                if m is None:
                    self._more()          # no separator in the buffer yet: read on
                else:
                    step = 2 * (cut - pos)
            del piece
            yield index, items
            if closed is not None:        # the array's own ']' is in this piece
                self.pos = pos + closed - 1
                return
            index += len(items)
            self.pos = m.start(1)

    def _decode_piece(self, piece: bytes, decoder, where: str, index: int, final: bool):
        """-> (items, None), or (items, k) when the array's own `]` is piece[k - 1];
        `_MisCut` when the piece ends inside an element."""
        try:
            return decoder.decode(piece), None
        except msgspec.ValidationError as exc:
            raise self.error(word_error(exc, where, index, _loose(piece))) from None
        except msgspec.DecodeError as exc:
            msg = str(exc)
            m = _TRAILING.search(msg)
            if m:
                k = int(m.group(1)) - 1
                while piece[k - 1] in _WS:
                    k -= 1
                try:
                    return decoder.decode(piece[:k]), k
                except msgspec.ValidationError as exc2:
                    raise self.error(word_error(exc2, where, index, _loose(piece[:k]))) from None
            b = _AT_BYTE.search(msg)
            at_piece_end = ("truncated" in msg and not _SURROGATE.search(piece)) or (
                b is not None and int(b.group(1)) >= len(piece) - 1)
            if at_piece_end and not final:
                raise _MisCut from None
            if final and "truncated" in msg and not _SURROGATE.search(piece):
                raise self.error(_TRUNCATED) from None
        except RecursionError:
            raise self.error(f"{where}[{index}] or after: JSON nested too deeply (over about "
                             "1,000 levels)") from None
        saved = self.pos
        self.pos -= 1                         # piece[0] is the synthetic '['
        try:
            obj, used = self._python_prefix(piece, more_may_follow=not final)
        finally:
            self.pos = saved
        try:
            # a decoder that skips bad records alone converts them its own way
            items = decoder.convert(obj) if hasattr(decoder, "convert") else \
                msgspec.convert(obj, decoder.type)
        except msgspec.ValidationError as exc:
            raise self.error(word_error(exc, where, index, obj)) from None
        return items, (used if piece[used:].strip(_WS) else None)


def _loose(piece) -> object:
    """The piece decoded plainly (up to the array's end), to quote a bad value; or None."""
    try:
        return _untyped.decode(piece)
    except msgspec.DecodeError as exc:
        m = _TRAILING.search(str(exc))
        if m:
            return _loose(piece[:int(m.group(1)) - 1])
    except RecursionError:
        pass
    return None


_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
