"""Default output fits a terminal: no line over `COLUMNS` characters (the detail is under
`-v`, or in the JSON). Sentences are wrapped at spaces under a hanging indent (a path longer
than a line stands alone on its line); a summary of something longer (the first of many
warnings) keeps its first `most` lines, the last ending in `…`. Tables are laid out to fit by
their own commands. A path the user gave, and a command to paste, are printed whole."""

from __future__ import annotations

import re
import textwrap

__all__ = ["COLUMNS", "md_code", "printable", "wrap"]

COLUMNS = 100
_UNIT = re.compile(r"(\d) (%|ns|us|ms|s|kB|MB|GB)(?=\W|$)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with its control characters written as escapes (`\\n`, `\\x1b`): a name
    read from a capture never moves the cursor, clears the screen, sets the title or
    forges a line of the output."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def md_code(name: str) -> str:
    """`name` as a Markdown code span that stays one: a backtick in it cannot close the
    span (it becomes `'`), a `|` cannot open a table column, control characters are
    escaped."""
    return "`" + printable(name).replace("`", "'").replace("|", "\\|") + "`"


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
