"""Progress of a long step, said only to a person at a terminal, and only once the step has
taken `PROGRESS_AFTER_S`; timed by SIGALRM in the main thread, so no thread is started
(the protobuf writer forks its second writer only while one thread is alive)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time

__all__ = ["PROGRESS_AFTER_S", "AlarmTimer", "StepProgress"]

PROGRESS_AFTER_S = 2.0


class AlarmTimer:
    """`threading.Timer`'s interface (`interval`, `function`, `args`; `start`, `cancel`) on
    SIGALRM: `function` runs in the main thread between two of its bytecodes, and no thread
    is started, so the protobuf writer may still fork its second writer (it forks only while
    one thread is alive; a forked child inherits no interval timer). The process has one
    `ITIMER_REAL`: starting an alarm replaces the last one. Main thread only (`signal`)."""

    _current: AlarmTimer | None = None
    _previous = signal.SIG_DFL  # the SIGALRM handler before the first alarm

    def __init__(self, interval: float, function, args=()) -> None:
        self.interval, self.function, self.args = interval, function, args
        self.daemon = True  # as a threading.Timer is given

    def start(self) -> None:
        if AlarmTimer._current is None:
            previous = signal.signal(signal.SIGALRM, AlarmTimer._fire)
            AlarmTimer._previous = signal.SIG_DFL if previous is None else previous
        AlarmTimer._current = self
        signal.setitimer(signal.ITIMER_REAL, self.interval)

    def cancel(self) -> None:
        if AlarmTimer._current is self:
            signal.setitimer(signal.ITIMER_REAL, 0)
            AlarmTimer._release()

    @staticmethod
    def _release() -> None:
        AlarmTimer._current = None
        signal.signal(signal.SIGALRM, AlarmTimer._previous)  # runs a pending alarm first

    @staticmethod
    def _fire(signum, frame) -> None:
        timer = AlarmTimer._current
        if timer is not None:
            AlarmTimer._release()
            timer.function(*timer.args)


class StepProgress:
    """Says on `out` what a step is doing, only once it has taken `PROGRESS_AFTER_S` (then
    every 5 s). `progress(message)` starts a step, `stop()` ends the last one. Only for a
    person at a terminal: the CLI gives it stderr only when that is a TTY, so a script sees
    nothing but the result (or the one-line error).

    The timers are `AlarmTimer`s in the main thread (a `threading.Timer` elsewhere): a
    progress thread alive during the write would keep the protobuf writer from forking its
    second writer, in the interactive runs it was made for. `timer` (called like
    `threading.Timer(interval, function, args)`) and `clock` let tests fire the timers
    themselves instead of sleeping.
    """

    def __init__(self, out=sys.stderr, *, timer=None, clock=time.monotonic) -> None:
        self._out = out
        # reentrant: an alarm's report may run in the main thread while it holds the lock
        self._lock = threading.RLock()
        if timer is None:
            in_main = threading.current_thread() is threading.main_thread()
            timer = AlarmTimer if in_main else threading.Timer
        self._new_timer = timer
        self._clock = clock
        self._timer = None
        # Numbers the armings: a cancelled timer whose callback already runs sees a newer
        # number and stays quiet.
        self._armed = 0
        self._step = ""
        self._t0 = self._started = clock()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._cancel()
            self._step, self._t0 = message, self._clock()
            if self._out is not None:
                self._arm(PROGRESS_AFTER_S)

    def _arm(self, delay: float) -> None:
        self._armed += 1
        self._timer = self._new_timer(delay, self._report, args=(self._armed,))
        self._timer.daemon = True
        self._timer.start()

    def _report(self, armed: int) -> None:
        with self._lock:
            if self._timer is None or armed != self._armed:
                return
            now = self._clock()
            # best effort: an alarm runs inside whatever the main thread is doing, so a
            # failed print (a closed terminal, a print of its own under way) must not
            # become the merge's error
            with contextlib.suppress(OSError, RuntimeError):
                print(f"... {self._step} ({now - self._t0:.0f} s, "
                      f"{now - self._started:.0f} s in all)", file=self._out, flush=True)
            self._arm(5.0)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stop(self) -> None:
        with self._lock:
            self._cancel()
