"""The real Simpler captures ship with the tests, byte for byte as Simpler wrote them: a fresh
clone runs every test that reads them, and nothing (a test, a merge) ever rewrote one."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT
from simpler_fixtures import DIGESTS, SHIPPED

CAPTURES = ("hbg_benchmark_bgemm_case0_l4_depgen", "hbg_bgemm_l4_depgen",
            "hbg_vector_example_l4_depgen", "tmr_bgemm_case0_l1", "tmr_bgemm_case0_l4_depgen",
            "tmr_mixed_example_case1_l4_depgen", "tmr_spmd_paged_attention_b1_s128_l4_depgen",
            "tmr_vector_example_l1", "tmr_vector_example_l4_depgen")


def _digests() -> dict[str, str]:
    out = {}
    for line in DIGESTS.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.removeprefix("./")] = digest
    return out


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_all_nine_captures_ship_in_the_checkout():
    assert sorted(p.name for p in SHIPPED.iterdir() if p.is_dir()) == list(CAPTURES)
    for case in CAPTURES:
        assert (SHIPPED / case / "chip_swimlane_records.json").is_file(), case


def test_every_shipped_file_has_its_recorded_digest_and_no_file_is_unlisted():
    digests = _digests()
    assert _files(SHIPPED) - {DIGESTS.name} == set(digests)
    for name, digest in digests.items():
        assert hashlib.sha256((SHIPPED / name).read_bytes()).hexdigest() == digest, name


def test_the_tests_read_the_shipped_captures_unless_told_otherwise():
    if os.environ.get("PYPTO_SIMPLER_FIXTURES"):
        pytest.skip("$PYPTO_SIMPLER_FIXTURES points the tests elsewhere")
    from simpler_fixtures import CASES, FIXTURES

    assert FIXTURES == SHIPPED and CASES == list(CAPTURES)


def test_a_copy_beside_the_checkout_if_any_is_the_same_bytes():
    """`shared/fixtures/simpler/` beside the checkout is where the captures came from; it is
    optional (a user's clone has none), but where it is, the two must not drift apart."""
    other = REPO_ROOT.parent / "shared" / "fixtures" / "simpler"
    if not other.is_dir():
        pytest.skip("no copy beside the checkout (the usual case)")
    assert _files(other) == _files(SHIPPED) - {DIGESTS.name}
    for name in _files(other):
        assert (other / name).read_bytes() == (SHIPPED / name).read_bytes(), name
