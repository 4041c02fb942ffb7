"""The calibration walked step by step, as its docstring says it in words: the capture's
blocks in dispatch order, each core's slot and last end, each thread's free time and each
task's readiness as the walk leaves them. `schedule.calibrated.calibrate` computes the same
over whole columns; the tests compare the two."""

from __future__ import annotations

NEVER = -(1 << 62)


def calibrate_by_walking(b):
    """(delay, launch, poll, duration, slack, origin, violations), lists in block order."""
    n = len(b.task)
    task, core, btype = b.task.tolist(), b.core.tolist(), b.core_type.tolist()
    d, s, e, f = (x.tolist() for x in (b.dispatch, b.start, b.end, b.finish))
    ptr, idx = b.pred_ptr.tolist(), b.pred_idx.tolist()
    types, owners = list(b.device_core_types), list(b.device_owners)
    origin = min(d) if n else 0
    send = list(b.send) + [0] * (max(owners, default=0) + 1 - len(b.send))
    slot = [origin] * len(types)
    last_end = [NEVER] * len(types)
    free = [origin] * len(send)
    left = [task.count(t) for t in range(b.tasks)]
    finished = [NEVER] * b.tasks
    ready = [None] * b.tasks
    delay, launch, slack = [0] * n, [0] * n, [0] * n
    violations = 0
    for i in b.order.tolist():
        t, c = task[i], core[i]
        if ready[t] is None:
            r = origin
            for p in idx[ptr[t]:ptr[t + 1]]:
                if left[p]:
                    raise ValueError("a producer is dispatched after its consumer")
                r = max(r, finished[p])
            ready[t] = r
        r = ready[t]
        mine = [max(r, slot[k], free[owners[k]]) for k in range(len(types))
                if types[k] == btype[i]]
        if not mine:
            raise ValueError("no core of a block's type on the device")
        dec = max(r, slot[c], free[owners[c]])
        slack[i] = dec - min(mine)
        delay[i] = d[i] - dec
        if delay[i] < 0:
            violations += 1
            delay[i] = 0
        launch[i] = s[i] - max(d[i], last_end[c])
        free[owners[c]] = d[i] + send[owners[c]]
        last_end[c] = e[i]
        slot[c] = s[i] if b.pending_depth else f[i]
        left[t] -= 1
        finished[t] = max(finished[t], f[i])
    return (delay, launch, [y - x for x, y in zip(e, f)], [y - x for x, y in zip(s, e)],
            slack, origin, violations)
