"""Where the real Simpler captures are, for every test that reads them.

`shared/fixtures/simpler/` lies beside the checkout on developer machines and in CI (a clean
clone with a copy of `shared/` beside it); `$PYPTO_SIMPLER_FIXTURES` overrides. Tests skip
without them on a developer machine, but under CI a missing capture directory is an error:
silently skipping the ground-truth tests would hide exactly what they exist to catch.
"""

from __future__ import annotations

import os
from pathlib import Path

from repo_paths import REPO_ROOT


def _find() -> Path:
    candidates = []
    if os.environ.get("PYPTO_SIMPLER_FIXTURES"):
        candidates.append(Path(os.environ["PYPTO_SIMPLER_FIXTURES"]))
    candidates.append(REPO_ROOT.parent / "shared" / "fixtures" / "simpler")
    for path in candidates:
        if path.is_dir():
            return path
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        raise RuntimeError("Simpler fixtures not found in " + ", ".join(map(str, candidates)))
    return candidates[0]


FIXTURES = _find()
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []
