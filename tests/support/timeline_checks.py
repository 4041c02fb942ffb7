"""What the offline Perfetto UI shows of a merged file, checked against the `Timeline` it
was written from (the merge's UI tests, for both Simpler layouts)."""

from __future__ import annotations

import collections


def lane_of(row: dict) -> str:
    return row["thread_name"] if row["thread_name"] is not None else row["track_name"]


def expected_lanes(tl) -> set[tuple[str, str]]:
    return {(s.process.name, s.track.name) for s in tl.slices()}


def check_matches_timeline(t, tl) -> list[dict]:
    """The UI shows exactly the timeline's processes, lanes, slices, flows (each bound to
    slices of the kinds it joins) and counter samples."""
    assert t.import_errors() == []
    assert t.slice_count() == tl.slice_count
    assert t.flow_count() == tl.flow_count
    want = collections.Counter()
    for f in tl.flows:
        want[(f.src.cat, f.dst.cat)] += len(f)
    got = collections.Counter((r["c_out"], r["c_in"]) for r in t.query(
        "select so.category as c_out, si.category as c_in from flow f "
        "join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in"))
    assert got == want
    assert t.scalar("select count(*) from counter") == sum(len(c.ts_ns) for c in tl.counters)
    assert set(t.process_names()) == {p.name for p in tl.processes}
    rows = t.slices()
    assert {(r["process_name"], lane_of(r)) for r in rows} == expected_lanes(tl)
    return rows
