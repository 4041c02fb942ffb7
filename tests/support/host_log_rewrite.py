"""Host logs of today's Simpler made from the real ones (a helper module, no tests).

The real run logs (`host_log.txt` of each capture in the Simpler fixtures) were written
before the root span carried its dispatch identity, and by the simulator, which emits no
`aicpu_launch` marker. `today(text, ...)` rewrites one of them, line by line, into what a
current run writes:

- `identity=(run_id, dispatch_id, slot_id, generation)`: the root `chip.run` span gets
  ` run_id=.. dispatch_id=.. run_epoch=.. slot_id=.. generation=..` appended to its line
  (the order of Simpler's `emit_native_run_host_wall`);
- `launch_after_ns`: a `chip.run.runner_run.aicpu_launch` marker (depth 2, `dur=0`, host
  clock, the log prefix of the `runner_run` line) is inserted right after the
  `chip.run.runner_run` line, `launch_after_ns` after that span's start;
- `root`: the root renamed to an older generation (`simpler_run`, `run_prepared`), so the
  old names stay covered;
- `pid` / `inv`: the process (pid, and tid where it equals the pid) and the invocation
  renumbered; `shift_ns`: every host time (`ts=` of host spans, `[mono_ns=..]` prefixes,
  `[CLOCK_ANCHOR]` mono and wall) moved later, as a later run of the same host logs it.

The rewritten text starts with one line `[PYPTO_TEST_REWRITE] {parameters as JSON}` (the
merge's log reader ignores lines it does not know), so `original(text)` undoes every
step without being told how: `original(today(x, ...)) == x` for every real log (tested).
Logs concatenated into one (as forked ranks sharing the capture fd write them) are undone
part by part. `multi_rank_tree` builds a distributed capture tree from the real captures.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from simpler_fixtures import FIXTURES

__all__ = ["HEADER", "multi_rank_tree", "original", "today"]

HEADER = "[PYPTO_TEST_REWRITE] "
_ROOT = "chip.run"
_NAME = re.compile(r"( name=)(chip\.run)(?=[. ])")
_PID = re.compile(r"( pid=)(\d+)")
_TID = re.compile(r"( tid=)(\d+)")
_INV = re.compile(r"( inv=)(\d+)")
_TS = re.compile(r"( ts=)(\d+)")
_PREFIX = re.compile(r"^\[mono_ns=(\d+)\]")
_ANCHOR = re.compile(r"(\[CLOCK_ANCHOR\] .*?mono_ns=)(\d+)(.*?wall_ns=)(\d+)")


def _identity_text(identity, run_epoch: int) -> str:
    run_id, dispatch_id, slot_id, generation = identity
    return (f" run_id={run_id} dispatch_id={dispatch_id} run_epoch={run_epoch} "
            f"slot_id={slot_id} generation={generation}")


def _name(line: str) -> str | None:
    m = re.search(r" name=(\S+)", line)
    return m.group(1) if m else None


def today(text: str, *, identity: tuple[int, int, int, int] | None = None,
          run_epoch: int = 1, launch_after_ns: int | None = None, root: str = _ROOT,
          pid: int | None = None, inv: int | None = None, shift_ns: int = 0) -> str:
    """One real log as today's Simpler writes it (see the module docstring)."""
    if HEADER in text:
        raise ValueError("already rewritten")
    old_pid = int(_PID.search(text).group(2))
    old_inv = int(_INV.search(text).group(2))
    params = {"identity": identity, "run_epoch": run_epoch, "launch_after_ns": launch_after_ns,
              "root": root, "pid": [old_pid, pid if pid is not None else old_pid],
              "inv": [old_inv, inv if inv is not None else old_inv], "shift_ns": shift_ns}
    out = [HEADER + json.dumps(params)]
    for line in text.split("\n"):
        out.append(_forward(line, params))
        if "[STRACE]" in line and _name(line) == "chip.run.runner_run" \
                and launch_after_ns is not None:
            out.append(_forward(_launch_line(line, launch_after_ns), params))
    return "\n".join(out)


def _launch_line(runner_line: str, after_ns: int) -> str:
    ts = int(_TS.search(runner_line).group(2))
    head = runner_line[:runner_line.index("[STRACE]")]
    pid, tid = _PID.search(runner_line).group(2), _TID.search(runner_line).group(2)
    inv = _INV.search(runner_line).group(2)
    hid = re.search(r" hid=(\S+)", runner_line).group(1)
    return (f"{head}[STRACE] v=1 pid={pid} tid={tid} inv={inv} hid={hid} depth=2 "
            f"name=chip.run.runner_run.aicpu_launch ts={ts + after_ns} dur=0 ")


def _forward(line: str, p: dict) -> str:
    (old_pid, new_pid), (_old_inv, new_inv), shift = p["pid"], p["inv"], p["shift_ns"]
    if p["shift_ns"]:
        line = _PREFIX.sub(lambda m: f"[mono_ns={int(m.group(1)) + shift}]", line)
    if "[CLOCK_ANCHOR]" in line:
        line = _ANCHOR.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + shift}{m.group(3)}"
                                     f"{int(m.group(4)) + shift}", line)
        return _PID.sub(lambda m: m.group(1) + str(new_pid if int(m.group(2)) == old_pid
                                                   else m.group(2)), line)
    if "[STRACE]" not in line:
        return line
    if _name(line) == _ROOT and p["identity"] is not None:
        line = line.rstrip(" ") + _identity_text(p["identity"], p["run_epoch"])
    line = _PID.sub(lambda m: f"{m.group(1)}{new_pid}", line, count=1)
    line = _TID.sub(lambda m: m.group(1) + str(new_pid if int(m.group(2)) == old_pid
                                               else m.group(2)), line, count=1)
    line = _INV.sub(lambda m: f"{m.group(1)}{new_inv}", line, count=1)
    if shift and "clk=dev" not in line:
        line = _TS.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + shift}", line, count=1)
    return _NAME.sub(lambda m: m.group(1) + p["root"], line, count=1)


def _backward(line: str, p: dict) -> str | None:
    (old_pid, new_pid), (old_inv, _), shift = p["pid"], p["inv"], p["shift_ns"]
    if shift:
        line = _PREFIX.sub(lambda m: f"[mono_ns={int(m.group(1)) - shift}]", line)
    if "[CLOCK_ANCHOR]" in line:
        line = _ANCHOR.sub(lambda m: f"{m.group(1)}{int(m.group(2)) - shift}{m.group(3)}"
                                     f"{int(m.group(4)) - shift}", line)
        return _PID.sub(lambda m: m.group(1) + str(old_pid if int(m.group(2)) == new_pid
                                                   else m.group(2)), line)
    if "[STRACE]" not in line:
        return line
    name = _name(line)
    if name == p["root"] + ".runner_run.aicpu_launch" and p["launch_after_ns"] is not None:
        return None
    line = re.sub(r"( name=)" + re.escape(p["root"]) + r"(?=[. ])", r"\1" + _ROOT, line,
                  count=1)
    if shift and "clk=dev" not in line:
        line = _TS.sub(lambda m: f"{m.group(1)}{int(m.group(2)) - shift}", line, count=1)
    line = _PID.sub(lambda m: f"{m.group(1)}{old_pid}", line, count=1)
    line = _TID.sub(lambda m: m.group(1) + str(old_pid if int(m.group(2)) == new_pid
                                               else m.group(2)), line, count=1)
    line = _INV.sub(lambda m: f"{m.group(1)}{old_inv}", line, count=1)
    if _name(line) == _ROOT and p["identity"] is not None:
        tail = _identity_text(p["identity"], p["run_epoch"])
        assert line.endswith(tail), line
        line = line[:-len(tail)] + " "
    return line


def original(text: str) -> str:
    """The real log(s) `today` was given: every part of `text` that starts with a
    `[PYPTO_TEST_REWRITE]` line undone with that line's parameters."""
    parts = text.split("\n" + HEADER)
    if not parts[0].startswith(HEADER):
        raise ValueError("not a rewritten log")
    out = []
    for i, part in enumerate(parts):
        head, _, body = (part[len(HEADER):] if i == 0 else part).partition("\n")
        p = json.loads(head)
        out.append("\n".join(b for line in body.split("\n")
                             if (b := _backward(line, p)) is not None))
    return "\n".join(out)


# --------------------------------------------------------------------------- a rank tree

RANK_CASES = ("tmr_vector_example_l4_depgen", "tmr_mixed_example_case1_l4_depgen")
RUN_ID = 41


def multi_rank_tree(root: Path, *, sidecars: str | None = "both", repeat: bool = True,
                    launch_after_ns: int | None = None) -> dict:
    """`root/dfx_outputs/rank<r>/d0/` holding the real capture `RANK_CASES[r]` (records,
    deps.json, name map: its own run log left out), and `root/dfx_outputs/host_log.txt`:
    both runs' logs rewritten by `today` into one log, as the forked ChipWorker processes of
    one L3 run write it. Both ranks ran one group dispatch (`run_id` RUN_ID, `dispatch_id` 1:
    the same for both, as for every member of a group); `repeat` adds a second dispatch of
    each process 2 s later (same shape, `dispatch_id` 2, inv 2). `sidecars`: each rank's
    `dispatch_identity.json` names its dispatch "both" (identity and `host_pid`),
    "host_pid" only (an older sidecar), or None (no sidecar).
    -> {rank: {"pid", "inv", "runner_run": (start, end)}} of the invocation that ran it."""
    dfx = root / "dfx_outputs"
    logs, want = [], {}
    for rank, case in enumerate(RANK_CASES):
        src = FIXTURES / case
        leaf = dfx / f"rank{rank}" / "d0"
        leaf.mkdir(parents=True)
        for f in src.iterdir():
            if f.name in ("chip_swimlane_records.json", "deps.json") or \
                    f.name.startswith("name_map"):
                shutil.copy(f, leaf / f.name)
        text = (src / "host_log.txt").read_text()
        pid = int(_PID.search(text).group(2))
        logs.append(today(text, identity=(RUN_ID, 1, 0, 1), launch_after_ns=launch_after_ns))
        if repeat:
            logs.append(today(text, identity=(RUN_ID, 2, 1, 2), run_epoch=2, inv=2,
                              shift_ns=2_000_000_000, launch_after_ns=launch_after_ns))
        m = re.search(r"name=chip\.run\.runner_run ts=(\d+) dur=(\d+)", text)
        want[rank] = {"pid": pid, "inv": 1,
                      "runner_run": (int(m.group(1)), int(m.group(1)) + int(m.group(2)))}
        if sidecars is not None:
            doc = {"schema_version": 1, "run_id": RUN_ID, "task_slot": 0, "group_index": rank,
                   "group_size": len(RANK_CASES), "host_pid": pid, "chip_rank": rank,
                   "local_capture_index": 0, "endpoint_dispatch_id": 1, "pipeline_slot": 0,
                   "pipeline_generation": 1, "callable_digest": "ab" * 32}
            if sidecars == "host_pid":
                for k in ("run_id", "endpoint_dispatch_id", "pipeline_slot",
                          "pipeline_generation"):
                    del doc[k]
            (leaf / "dispatch_identity.json").write_text(json.dumps(doc, indent=2) + "\n")
    (dfx / "host_log.txt").write_text("\n".join(logs))
    return want
