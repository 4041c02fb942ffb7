"""`JsonPieces` reads any valid JSON whole, wherever its windows and pieces are cut.

A value is decoded from a window of the file that grows until the value fits, and a big
array from pieces cut at separators; a cut is told from bad JSON by the decoders' errors.
These tests cut real Simpler files (and the same files edited the way users' files are:
non-ASCII and escaped names, a lone surrogate, 2,000 kernels) at every offset, and check
that every class of offset (between tokens, in whitespace, a number, a literal, a string,
an escape, a UTF-8 character) was cut; then generated JSON of every kind (seeded, so every
run tries the same documents) at generated cuts.
The reference is Python's `json.loads` (lone surrogates made U+FFFD, as the reader does).
"""

from __future__ import annotations

import io
import json
import random
import re

import msgspec
import pytest
from simpler_fixtures import CASES, FIXTURES

from pypto.compile_profiling.trace_merge.read.json_pieces import JsonPieces, safe_strings
from pypto.errors import TraceInputError

HBG = FIXTURES / "hbg_benchmark_bgemm_case0_l4_depgen"
CLASSES = {"between tokens", "whitespace", "number", "literal", "string", "escape", "utf-8"}


def expected(doc: bytes) -> object:
    return safe_strings(json.loads(doc))


def read_value(doc: bytes, window: int, block: int = 1 << 20) -> object:
    jp = JsonPieces(io.BytesIO(doc), "doc.json", value_bytes=window, block_bytes=block)
    value = jp.value("$")
    jp.finish()
    return value


# ---------------------------------------------------------------- offset classes

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null'
                    rb'|[\[\]{}:,]|[ \t\r\n]+')
_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{4}|.)")


def offset_classes(doc: bytes) -> dict[int, str]:
    """Offset c (a cut between doc[c - 1] and doc[c]) -> what the cut splits."""
    classes, at = {}, 0
    for m in _TOKEN.finditer(doc):
        assert m.start() == at, f"not a JSON token at byte {at}"
        tok, at = m.group(), m.end()
        classes[m.start()] = "between tokens"
        kind = ("string" if tok[:1] == b'"' else "whitespace" if tok[:1] in b" \t\r\n"
                else "literal" if tok[:1] in b"tfn" else "number" if len(tok) > 1 or
                tok.isdigit() else None)
        for i in range(1, len(tok)):
            classes[m.start() + i] = kind
        if kind == "string":
            for e in _ESCAPE.finditer(tok):
                for i in range(e.start() + 1, e.end()):
                    classes[m.start() + i] = "escape"
            for i in range(1, len(tok)):
                if 0x80 <= tok[i] < 0xC0:            # a UTF-8 continuation byte
                    classes[m.start() + i] = "utf-8"
    assert at == len(doc)
    return {c: k for c, k in classes.items() if k is not None and c > 0}


def _name_map(names: dict[str, str]) -> bytes:
    return json.dumps({"level": 2, "orchestrator_name": None,
                       "callable_id_to_name": names}, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace")


def real_documents() -> dict[str, bytes]:
    """Small real JSON documents read by `value()`, each distinct one once: name maps, host
    phase lines, the records files' metadata (its bytes as in the file); and a real name
    map edited as users' files are."""
    docs, seen = {}, set()
    for case in CASES:
        d = FIXTURES / case
        found = {p.name: p.read_bytes() for p in sorted(d.glob("name_map_*.json"))}
        lines = d / "host_phase_records.jsonl"
        if lines.is_file() and lines.stat().st_size < 4096:
            for i, line in enumerate(lines.read_bytes().splitlines()):
                found[f"host_phase_records.jsonl:{i + 1}"] = line
        raw = msgspec.json.decode((d / "chip_swimlane_records.json").read_bytes(),
                                  type=dict[str, msgspec.Raw])
        found["chip_swimlane_records.json $.metadata"] = bytes(raw["metadata"])
        for name, doc in found.items():
            shape = re.sub(rb"\d+", b"0", doc)      # the same text but for its numbers: once
            if shape not in seen:
                seen.add(shape)
                docs[f"{case}/{name}"] = doc
    real = json.loads((FIXTURES / "tmr_mixed_example_case1_l4_depgen" /
                       "name_map_TestMixedExample_case1.json").read_bytes())
    names = dict(real["callable_id_to_name"])
    names.update({"5": "matmul_é²_融合", "6": 'say "hi"\\now', "7": "tab\there", "8": "\ud800"})
    docs["edited name map"] = _name_map(names)
    return docs


def test_every_offset_of_real_documents_is_cut_and_read_whole():
    seen = set()
    for name, doc in real_documents().items():
        want = expected(doc)
        for cut, kind in offset_classes(doc).items():
            seen.add(kind)
            got = read_value(doc, window=cut, block=(7, 61, 1 << 20)[cut % 3])
            assert got == want, (name, cut, kind)
    assert seen == CLASSES


def test_a_host_phase_line_cut_by_the_real_window_anywhere():
    """The 1000-task capture's 106 kB host phase line, shifted 0-127 bytes (more than one
    record) against the 64 KiB window: it was refused at 6 of 24 shifts."""
    line = (HBG / "host_phase_records.jsonl").read_bytes().strip()
    assert len(line) > 1 << 16
    want, classes = expected(line), offset_classes(line)
    kinds = set()
    for shift in range(128):
        doc = line[:1] + b" " * shift + line[1:]
        kinds.add(classes[(1 << 16) - shift])      # what the window's end cuts
        assert read_value(doc, window=1 << 16) == want, shift
    assert kinds == {"between tokens", "number", "string"}


def test_the_real_reader_takes_the_shifted_host_phase_line(tmp_path):
    from pypto.compile_profiling.trace_merge.read.read_run_log import read_host_phase_records

    line = (HBG / "host_phase_records.jsonl").read_bytes().strip()
    p = tmp_path / "host_phase_records.jsonl"
    p.write_bytes(line[:1] + b" " * 12 + line[1:] + b"\n")   # one of the shifts refused
    (batch,) = read_host_phase_records(p)
    assert len(batch.phase) == len(json.loads(line)["records"])


def test_a_name_map_of_2000_kernels(tmp_path):
    from pypto.compile_profiling.trace_merge.read.read_simpler import read_name_map

    names = {str(i): f"kernel_{i:04d}_matmul_tile_fused_add_relu" for i in range(2000)}
    p = tmp_path / "name_map_big.json"
    p.write_bytes(_name_map(names))
    assert p.stat().st_size > 100_000
    assert read_name_map(p).names == {int(k): v for k, v in names.items()}


@pytest.mark.parametrize("path", [p for case in CASES for p in (
    FIXTURES / case / "chip_swimlane_records.json", FIXTURES / case / "deps.json")
    if p.is_file() and p.stat().st_size < 100_000], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_files_walked_in_tiny_pieces_and_windows(path):
    """Every member of a real file: arrays in pieces of 61 bytes (cut inside nested objects
    and strings too), other values from windows of 17 bytes, read 29 bytes at a time."""
    doc = path.read_bytes()
    for piece, window, block in ((61, 17, 29), (997, 4093, 1 << 20)):
        jp = JsonPieces(io.BytesIO(doc), path, value_bytes=window, block_bytes=block)
        got = {}
        for key in jp.members("test"):
            if jp.peek() == b"[":
                got[key] = [x for _, items in jp.array(f"$.{key}", msgspec.json.Decoder(list),
                                                       None, piece) for x in items]
            else:
                got[key] = jp.value(f"$.{key}")
        assert got == json.loads(doc), (piece, window)


def test_bad_json_is_still_refused_where_it_is():
    """An error is believed once a longer window fails at the same byte, or at the end."""
    doc = b'{"a": [1, 2, 3], "b": "' + b"x" * 200 + b'", "c": tru, "d": 4}'
    at = doc.index(b"tru")
    for window in (1, 16, 64, 250, 1 << 16):
        with pytest.raises(TraceInputError) as info:
            read_value(doc, window)
        assert str(info.value) == f"doc.json: invalid JSON at byte {at}: Expecting value"
    for window in (1, 16, 1 << 16):
        with pytest.raises(TraceInputError, match="truncated JSON"):
            read_value(doc[:at], window)


# ---------------------------------------------------------------- generated JSON

# Pieces of text a cut gets wrong: separators inside strings, escapes, lone surrogates,
# characters of 2 to 4 UTF-8 bytes, control characters.
_TEXT = ["},{", "],[", '"', "\\", "\\u", "\ud800", "\udfff", "\U0001f600", "é", "融", "\x00",
         "\n", " , ", "ab", "x"]


def random_json(rng: random.Random, depth: int = 0) -> object:
    """Any JSON value: nested lists and objects of strings, numbers, literals."""
    r = rng.random()
    if depth < 4 and r < 0.35:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(6))]
    if depth < 4 and r < 0.6:
        return {random_text(rng): random_json(rng, depth + 1) for _ in range(rng.randrange(6))}
    return rng.choice([
        None, True, False, random_text(rng), rng.randrange(-(2 ** 70), 2 ** 70),
        rng.randrange(-99, 99), rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 10.0 ** rng.randrange(-300, 300),
        -0.0])


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randrange(5)))


def random_document(rng: random.Random, value: object) -> bytes:
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 0, 2]))
    return text.encode("utf-8", "backslashreplace")   # a raw lone surrogate as its escape


def test_generated_values_read_whole_from_any_first_window():
    rng = random.Random(22)
    for _ in range(300):
        doc = random_document(rng, random_json(rng))
        want = expected(doc)
        for _ in range(6):
            window, block = rng.randrange(1, len(doc) + 2), rng.choice([1, 7, 61, 1 << 20])
            assert read_value(doc, window, block) == want, (doc, window, block)


def test_generated_arrays_read_whole_from_any_pieces():
    rng = random.Random(23)
    for _ in range(300):
        doc = random_document(rng, [random_json(rng, 1) for _ in range(rng.randrange(1, 12))])
        want = expected(doc)
        for _ in range(3):
            piece, block = rng.randrange(1, 200), rng.choice([61, 4099, 1 << 20])
            jp = JsonPieces(io.BytesIO(doc), "doc.json", block_bytes=block)
            got = []
            for base, items in jp.array("$", msgspec.json.Decoder(list), None, piece):
                assert base == len(got)
                got.extend(items)
            jp.finish()
            assert got == want, (doc, piece, block)
