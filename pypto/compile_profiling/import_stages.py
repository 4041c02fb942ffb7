"""Imports made while a profile runs, as stages named after the module they load.

A first compile spends most of its time importing: `ir.compile`'s first call loads
the passes and codegen (about 200 ms), which was self time of the stage that
triggered it (`compile` topped `show`), and the imports of the program itself were
"(unaccounted)". With this finder each outermost import of a module not loaded yet becomes a
stage `import:<module>` (category `import`) of the active profiler, nested where the import
happened; the modules it pulls in are part of it (its `modules` arg counts them), not stages
of their own. The profiler's own modules (`pypto.compile_profiling...`, loaded by reports and
exports) and what they pull in are left untimed: that is the profiler's cost, not the
program's.

How: a finder at the front of `sys.meta_path`, installed when the first `CompileProfiler` is
made (so a process that never profiles has none). Python asks it only for modules that are
not in `sys.modules`, so importing a loaded module costs nothing more, and with no active
profiler it answers at once. It finds the module's spec with the finders after it and gives
the spec's loader (one per module, e.g. a `SourceFileLoader`) a timed `exec_module`; loaders
shared by several modules (zip imports) and built-in or frozen modules are not timed. A
module that is not found is looked up again by the finders after this one (only while
profiling, and only for imports that fail).
"""

from __future__ import annotations

import sys
import threading

_OWN_PACKAGE = "pypto.compile_profiling"


class _Inside(threading.local):
    depth = 0          # timed (or untimed-own) imports running on this thread
    modules = None     # per running timed import: how many modules it loaded


class ImportStages:
    """The `sys.meta_path` finder (see the module docstring). `active_profiler()` is the
    profiler's `get_active_profiler` (given, so this module imports nothing of the
    profiler's)."""

    def __init__(self, active_profiler) -> None:
        self._active = active_profiler
        self._inside = _Inside()

    def find_spec(self, fullname, path, target=None):
        inside = self._inside
        if inside.depth:
            if inside.modules:
                inside.modules[-1] += 1
            return None   # part of the import being timed: found as usual
        if self._active() is None:
            return None
        spec = self._spec_from_the_others(fullname, path, target)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if (exec_module is None or isinstance(loader, type)
                or getattr(loader, "name", None) != fullname):
            return spec   # built-in, frozen, or a loader shared by several modules
        own = fullname == _OWN_PACKAGE or fullname.startswith(_OWN_PACKAGE + ".")
        loader.exec_module = self._timed(exec_module, fullname, own)
        return spec

    def _spec_from_the_others(self, fullname, path, target):
        finders = sys.meta_path
        later = finders[finders.index(self) + 1:] if self in finders else finders
        for finder in later:
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    return spec
        return None

    def _timed(self, exec_module, fullname: str, own: bool):
        inside = self._inside
        name = f"import:{fullname}"

        active = self._active

        def timed_exec_module(module) -> None:
            prof = None if own or inside.depth else active()
            inside.depth += 1
            if prof is None:
                try:
                    exec_module(module)
                finally:
                    inside.depth -= 1
                return
            if inside.modules is None:
                inside.modules = []
            inside.modules.append(1)
            stage = prof._begin_stage(name, None, "import")
            try:
                exec_module(module)
            except BaseException as exc:
                prof._end_stage({"modules": inside.modules.pop()}, type(exc).__name__,
                                stage=stage)
                raise
            finally:
                inside.depth -= 1
            prof._end_stage({"modules": inside.modules.pop()}, stage=stage)

        return timed_exec_module


_installed: ImportStages | None = None
_install_lock = threading.Lock()


def install(active_profiler) -> None:
    """Put the finder at the front of `sys.meta_path` (once per process)."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = ImportStages(active_profiler)
            sys.meta_path.insert(0, _installed)
