"""`foundation.terminal`: names printed safely, lines wrapped to a terminal."""

from __future__ import annotations

from pypto.compile_profiling.foundation.terminal import md_code, printable, wrap


def test_control_characters_are_written_as_escapes_and_plain_text_is_kept():
    assert printable("GEMM") == "GEMM"
    assert printable("\x1b[2J\x1b]0;title\x07RED") == "\\x1b[2J\\x1b]0;title\\x07RED"
    assert printable("line1\nFAKE: no regression\r") == "line1\\nFAKE: no regression\\r"
    assert "\n" not in printable("a\nb") and "\x9b" not in printable("a\x9bb")


def test_a_markdown_code_span_stays_one():
    assert md_code("a`b|c") == "`a'b\\|c`"
    assert md_code("x\ny") == "`x\\ny`"


def test_wrap_breaks_at_spaces_hangs_and_keeps_a_long_word_whole():
    line = "word " * 30 + "/a/very/long/path/" + "x" * 120
    out = wrap(line, width=40)
    assert all(len(x) <= 40 for x in out if "/a/very" not in x)
    assert any(x.strip() == "/a/very/long/path/" + "x" * 120 for x in out)   # never split
    assert all(x.startswith("    ") for x in out[1:])
    assert " ".join(x.strip() for x in out) == line.strip()
    assert wrap("short", width=40) == ["short"]


def test_a_number_never_parts_from_its_unit_and_most_cuts_with_an_ellipsis():
    out = wrap("x" * 35 + " 12.5 ms and more words after it", width=40)
    assert not any(x.rstrip().endswith("12.5") for x in out)
    cut = wrap("word " * 60, width=40, most=2)
    assert len(cut) == 2 and cut[-1].endswith("…") and len(cut[-1]) <= 40
