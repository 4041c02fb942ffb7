"""The merge's rooms read as its pipeline: `read/` hands `place/` what the inputs say, `place/`
hands `lay_out/` a Plan. Each imports only the rooms before it (and the shared vocabulary,
`kinds` and `views`); the package's face, `trace_merge/__init__`, sees them all, and only
`compare` (two runs merged, then laid side by side) stands above the face."""

from __future__ import annotations

from import_graph import import_graph
from repo_paths import REPO_ROOT

MERGE = "pypto.compile_profiling.trace_merge"
ROOT = REPO_ROOT / "pypto" / "compile_profiling" / "trace_merge"
VOCABULARY = {"kinds", "views"}
MAY_IMPORT = {
    "vocabulary": set(),
    "read": {"vocabulary"},
    "place": {"vocabulary", "read"},
    "lay_out": {"vocabulary", "read", "place"},
    "face": {"vocabulary", "read", "place", "lay_out"},      # trace_merge/__init__
    "compare": {"face", "vocabulary", "lay_out"},            # a caller of the face
}


def room(module: str) -> str:
    """The room of a module of the merge; "face" for `trace_merge/__init__`."""
    if module == MERGE:
        return "face"
    rest = module[len(MERGE) + 1:].split(".")
    return "vocabulary" if rest[0] in VOCABULARY else rest[0]


def test_every_module_of_the_merge_is_in_a_room():
    graph = import_graph(ROOT)
    rooms = {room(m) for m in graph if m.startswith(MERGE)}
    assert rooms == set(MAY_IMPORT)


def test_each_room_imports_only_the_rooms_before_it():
    graph = import_graph(ROOT)
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items()
                   for t in targets if t.startswith(MERGE) and room(t) != room(m)
                   and room(t) not in MAY_IMPORT[room(m)])
    assert wrong == []
