"""Where the time went: self time, the unaccounted rest, and folded families of stages.

- **Self time** of a stage: its duration minus the time covered by its children. Children
  that ran at the same time (kernel codegen on a thread pool) count once, by the union of
  their intervals, so self time is never negative and is wall-clock time.
- **Unaccounted**: the profiled span (`total_seconds`) minus the union of all top-level
  stages: time inside the profile but outside every stage (user code in a `with
  CompileProfiler()` block, `ir.compile` work between stages).
- **Families**: siblings with the same name, or the same `prefix:` (`kernel_codegen:step_0`,
  `kernel_codegen:step_1`, ...), fold into one row `kernel_codegen:*` with a count and the
  sum, mean and max of their durations (like Clang's `-ftime-trace` totals). A folded row's
  children are all members' children, folded the same way. `expand=True` lists the members
  under their family row. Members that ran at the same time (kernel codegen on a thread
  pool) make the sum more than the wall time they took: such a row says so, with its
  threads and its **wall** time (the union of its members' intervals), so a child row larger
  than its parent never goes unexplained.

Rows carry a `key`, the path of row labels from the top (`compile/codegen/kernel_codegen:*`),
by which `diff` matches stages of two profiles.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pypto.compile_profiling.profile_data.model import Profile, Stage, walk

FOLD_MIN = 2  # siblings of one family fold from this many on
UNACCOUNTED = "(unaccounted)"


def family_label(name: str) -> str:
    """`kernel_codegen:*` for `kernel_codegen:step_3`; other names are their own family."""
    head, sep, _ = name.partition(":")
    return f"{head}:*" if sep and head else name


def covered_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of `(start, end)` intervals."""
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def self_ns(stage: Stage) -> int:
    """The stage's duration not covered by any child (children clipped to the stage)."""
    s0, e0 = stage.start_ns, stage.end_ns
    if not stage.children:
        return e0 - s0 if e0 > s0 else 0
    spans = [(max(c.start_ns, s0), min(c.end_ns, e0)) for c in stage.children]
    return max(0, stage.duration_ns - covered_ns([(s, e) for s, e in spans if e > s]))


def unaccounted_ns(profile: Profile) -> int:
    """Profiled span outside every top-level stage (0 when the stages cover it)."""
    stages = [(s.start_ns, s.end_ns) for s in profile.stages if s.end_ns > s.start_ns]
    return max(0, profile.total_ns - covered_ns(stages))


@dataclass(slots=True)
class Row:
    """One line of the view: a stage, or a family of sibling stages folded into one."""

    key: str                # path of labels from the top, e.g. "compile/codegen/kernel_codegen:*"
    label: str              # the stage name, `prefix:*` for a family, `name [i/n]` expanded
    depth: int              # 1 for top-level stages
    members: list[Stage]    # the stage, or the family's stages
    total_ns: int           # duration, or the family's sum of durations
    self_ns: int            # self time, or the family's sum of self times
    max_ns: int             # the longest member
    folded: bool = False    # a family row (count > 1)

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def wall_ns(self) -> int:
        """The time the members took together: the union of their intervals (their sum,
        `total_ns`, when none overlaps another)."""
        if len(self.members) == 1:
            return self.total_ns
        return covered_ns([(m.start_ns, m.end_ns) for m in self.members if m.end_ns > m.start_ns])

    @property
    def threads(self) -> int:
        """The threads its members ran on."""
        return len({(m.pid, m.tid) for m in self.members})

    @property
    def summed(self) -> bool:
        """Members overlapped in time (ran on several threads at once): `total_ns` is a sum
        over threads, more than the wall time."""
        return self.folded and self.wall_ns < self.total_ns

    @property
    def mean_ns(self) -> float:
        return self.total_ns / len(self.members) if self.members else 0.0

    @property
    def failed(self) -> str | None:
        errors = [m.error for m in self.members if m.error is not None]
        return errors[0] if errors else None

    @property
    def still_open(self) -> bool:
        return any(m.is_open for m in self.members)


def _groups(stages: list[Stage]) -> list[tuple[str, list[Stage]]]:
    """Siblings grouped by family, in order of first appearance."""
    if len(stages) == 1:
        return [(stages[0].name, stages)]
    groups: dict[str, list[Stage]] = {}
    for st in stages:
        name = st.name
        head, sep, _ = name.partition(":")   # family_label, inlined: called per stage
        key = head + ":*" if sep and head else name
        members = groups.get(key)
        if members is None:
            groups[key] = [st]
        else:
            members.append(st)
    if len(groups) == len(stages):
        return [(st.name, [st]) for st in stages]
    out = []
    for label, members in groups.items():
        if len(members) >= FOLD_MIN:
            out.append((label, members))
        else:
            out.extend((m.name, [m]) for m in members)
    return out


def _member_groups(members: list[Stage]) -> list[tuple[str, list[Stage]]]:
    """An expanded family's members, one row each; repeated names get `[i/n]`."""
    counts = Counter(m.name for m in members)
    seen: Counter[str] = Counter()
    out = []
    for m in members:
        label = m.name
        if counts[m.name] > 1:
            seen[m.name] += 1
            label = f"{m.name} [{seen[m.name]}/{counts[m.name]}]"
        out.append((label, [m]))
    return out


def view_rows(stages: list[Stage], expand: bool = False) -> list[Row]:
    """The stage tree as rows in tree order, families folded (listed too when `expand`).
    Iterative: nesting depth is unbounded."""
    rows: list[Row] = []
    stack = [(iter(_groups(stages)), "", 1)]
    while stack:
        it, prefix, depth = stack[-1]
        group = next(it, None)
        if group is None:
            stack.pop()
            continue
        label, members = group
        key = f"{prefix}/{label}" if prefix else label
        if len(members) == 1:  # the common case, kept short: reports may hold 100,000s
            m = members[0]
            total = m.end_ns - m.start_ns
            rows.append(Row(key, label, depth, members, total, self_ns(m), total))
            if m.children:
                stack.append((iter(_groups(m.children)), key, depth + 1))
            continue
        folded = True
        durations = [m.duration_ns for m in members]
        rows.append(Row(key, label, depth, members, sum(durations),
                        sum(self_ns(m) for m in members), max(durations), folded))
        if folded and expand:
            stack.append((iter(_member_groups(members)), key, depth + 1))
        else:
            children = [c for m in members for c in m.children]
            if children:
                if folded:
                    children.sort(key=lambda c: c.start_ns)
                stack.append((iter(_groups(children)), key, depth + 1))
    return rows


@dataclass(slots=True)
class SlowStage:
    path: str        # names from the top, joined with "/"
    stage: Stage
    self_ns: int


def slowest_stages(stages: list[Stage], n: int) -> list[SlowStage]:
    """The `n` stages with the most self time (where the time is really spent)."""
    found: list[SlowStage] = []
    paths: dict[int, str] = {}   # by id(): a StageRecord compares by value (upstream's)
    for st, _depth, parent in walk(stages):
        path = f"{paths[id(parent)]}/{st.name}" if parent is not None else st.name
        paths[id(st)] = path
        found.append(SlowStage(path, st, self_ns(st)))
    found.sort(key=lambda s: (-s.self_ns, s.path))
    return found[:max(0, n)]


def view_dict(profile: Profile, rows: list[Row], top: list[SlowStage]) -> dict:
    """The view as plain JSON-ready data (milliseconds), for `show --json`."""
    total = profile.total_ns

    def share(ns: float) -> float | None:
        return round(ns / total * 100, 3) if total > 0 else None

    out_rows = []
    for r in rows:
        d = {"key": r.key, "label": r.label, "depth": r.depth, "count": r.count,
             "total_ms": r.total_ns / 1e6, "self_ms": r.self_ns / 1e6,
             "share_pct": share(r.total_ns)}
        if r.folded:
            d["mean_ms"] = r.mean_ns / 1e6
            d["max_ms"] = r.max_ns / 1e6
            if r.summed:
                d["wall_ms"] = r.wall_ns / 1e6
                d["threads"] = r.threads
        if r.failed is not None:
            d["error"] = r.failed
        if r.still_open:
            d["open"] = True
        out_rows.append(d)
    unaccounted = unaccounted_ns(profile)
    return {
        "source": profile.source,
        "total_ms": total / 1e6,
        "unaccounted_ms": unaccounted / 1e6,
        "unaccounted_share_pct": share(unaccounted),
        "timed": profile.timed,
        "rows": out_rows,
        "slowest_by_self_time": [{"path": s.path, "self_ms": s.self_ns / 1e6,
                                  "total_ms": s.stage.duration_ns / 1e6} for s in top],
    }
