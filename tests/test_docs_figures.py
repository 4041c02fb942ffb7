"""The docs hold no figure that rots unnoticed: the suite's size and duration change with
every commit, so no page states them (measured figures belong in the dated journal,
docs/performance.md, beside the command that produced them)."""

from __future__ import annotations

import re

from repo_paths import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
JOURNAL = REPO_ROOT / "docs" / "performance.md"
# "1,587 tests", "about two minutes", "in 88.6 s", "(135 s in the same run)"
ROTTING = re.compile(r"\b\d[\d,]* (?:unit |UI )?tests\b|\babout (?:one|two|three|four|five|\d+) "
                     r"minutes?\b|\d+(?:\.\d+)? s in (?:a fresh clone|the same run)")


def test_no_page_states_the_suites_size_or_duration():
    found = [(p.name, m.group(0)) for p in PAGES if p != JOURNAL
             for m in ROTTING.finditer(p.read_text())]
    assert found == []


def test_the_pattern_catches_what_rotted_before():
    for text in ("it takes about two minutes", "(1,587 tests: 88.6 s in a fresh clone",
                 "135 s in the same run", "1724 tests"):
        assert ROTTING.search(text), text
    assert not ROTTING.search("a few minutes on two cores")
