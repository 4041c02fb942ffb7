"""`foundation.safe_json`: any value a report holds becomes strict JSON, never an error."""

from __future__ import annotations

import json

from pypto.compile_profiling.foundation.safe_json import clean_text, dumps, sanitize


def test_what_json_cannot_hold_is_made_strict():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    text = dumps({"nan": float("nan"), "inf": float("inf"), "big": 1 << 70, "bad": "x\ud800",
                  1: "int key", "obj": Broken()})
    back = json.loads(text)
    assert back["nan"] is None and back["inf"] is None
    assert back["big"] == repr(1 << 70) and back["bad"] == "x\\ud800"
    assert back["1"] == "int key" and back["obj"].endswith("Broken object>")


def test_deep_nesting_is_cut_and_text_stays_valid_utf8():
    deep: list = []
    cur = deep
    for _ in range(100):
        cur.append([])
        cur = cur[0]
    out = json.dumps(sanitize(deep))
    assert "nested deeper than 64 levels" in out
    assert clean_text("é") == "é" and clean_text("a\udcff").encode("utf-8")
