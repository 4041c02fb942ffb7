"""Where the checkout's parts are, for tests in any folder of `tests/` (which mirrors the
package) and for the benchmarks."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
TEST_FIXTURES = TESTS_DIR / "fixtures"
