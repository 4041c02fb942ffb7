"""Where the real Simpler captures are, for every test that reads them.

They ship with the tests (`tests/fixtures/simpler/`, byte for byte as Simpler wrote them, each
file's digest in its `SHA256SUMS`), so a fresh clone with nothing beside it runs every test.
`$PYPTO_SIMPLER_FIXTURES` points the tests at another directory of captures instead; a
directory it names that does not exist is an error, never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

from repo_paths import TEST_FIXTURES

SHIPPED = TEST_FIXTURES / "simpler"
DIGESTS = SHIPPED / "SHA256SUMS"


def _find() -> Path:
    chosen = os.environ.get("PYPTO_SIMPLER_FIXTURES", "").strip()
    path = Path(chosen) if chosen else SHIPPED
    if not path.is_dir():
        raise RuntimeError(f"Simpler captures not found: {path} is not a directory"
                           + (" ($PYPTO_SIMPLER_FIXTURES)" if chosen else ""))
    return path


FIXTURES = _find()
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
