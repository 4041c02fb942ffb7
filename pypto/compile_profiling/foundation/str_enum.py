"""`StrEnum` on every supported Python: kinds and statuses that users read as text.

Python 3.11 has `enum.StrEnum`; 3.10 (our floor) does not. The backport is the same idea: a
`str` subclass whose members compare equal to their text and print as it, so a member can go
straight into JSON, an f-string or a comparison with the text of an older report, while a
typo in code is an `AttributeError`, not a silent miss.
"""

from __future__ import annotations

import enum
import sys

__all__ = ["StrEnum"]

if sys.version_info >= (3, 11):
    StrEnum = enum.StrEnum
else:                                               # pragma: no cover - Python 3.10 only
    class StrEnum(str, enum.Enum):
        """A member is its text: `str(m) == m.value`, and `m == "text"`."""

        def __str__(self) -> str:
            return self.value

        __format__ = str.__format__
