"""Default output fits a terminal: no line over `COLUMNS` characters (the detail is under
`-v`, or in the JSON). Sentences are wrapped at spaces under a hanging indent (a path longer
than a line stands alone on its line); a summary of something longer (the first of many
warnings) keeps its first `most` lines, the last ending in `…`. Tables are laid out to fit by
their own commands. A path the user gave, and a command to paste, are printed whole."""

from __future__ import annotations

import re
import textwrap

__all__ = ["COLUMNS", "wrap"]

COLUMNS = 100
_UNIT = re.compile(r"(\d) (%|ns|us|ms|s|kB|MB|GB)(?=\W|$)")


def wrap(line: str, width: int = COLUMNS, hang: int = 4, most: int | None = None
         ) -> list[str]:
    """`line` as lines of at most `width` characters, broken at spaces; the lines after the
    first are indented `hang` more than the first. A word longer than a line (a path) stands
    alone on its line rather than being split. With `most`, at most that many lines, the last
    ending in `…` where text was left out."""
    if len(line) <= width:
        return [line]
    lead = line[:len(line) - len(line.lstrip(" "))]
    glued = _UNIT.sub("\\1\xa0\\2", line.strip())     # "1.4 %" never breaks before its unit
    lines = [w.replace("\xa0", " ") for w in textwrap.wrap(
        glued, width, initial_indent=lead, subsequent_indent=lead + " " * hang,
        break_long_words=False, break_on_hyphens=False)] or [line]
    if most is not None and len(lines) > most:
        last = lines[most - 1]
        lines = lines[:most - 1] + [(last if len(last) < width else last[:width - 1]) + "…"]
    return lines
