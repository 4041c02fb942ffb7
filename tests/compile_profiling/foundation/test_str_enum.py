"""`foundation.str_enum`: members that are their own names as text."""

from __future__ import annotations

import json

from pypto.compile_profiling.foundation.str_enum import StrEnum


class Colour(StrEnum):
    RED = "red"
    DARK_BLUE = "dark-blue"


def test_members_are_strings_equal_to_their_values():
    assert Colour.RED == "red" and isinstance(Colour.DARK_BLUE, str)
    assert str(Colour.DARK_BLUE) == "dark-blue" and f"{Colour.RED}" == "red"
    assert json.dumps({"c": Colour.RED}) == '{"c": "red"}'
    assert Colour("dark-blue") is Colour.DARK_BLUE
