"""How the plugin patches vLLM: wrap methods of a class and its bases, and patch a
module the moment it is imported (or now, when it already is).

vLLM loads plugins once per process; a forked child (EngineCore, workers) inherits
"already loaded" and never calls ``register()`` itself, and the modules to patch may
not be imported yet when ``register()`` runs. One finder on ``sys.meta_path`` runs
every patch registered for a module right after the module executes.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable

from . import compat
from .recorder import REC

Patch = Callable[[object], object]


class PostImportHook:
    def __init__(self) -> None:
        self.targets: dict[str, list[Patch]] = {}  # module name -> patches

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.targets:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        patches = self.targets[fullname]

        def exec_module(module):
            orig_exec(module)
            for patch in patches:
                run_patch(patch, module)

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this loader's, patched on purpose
        return spec


def run_patch(patch: Patch, module) -> None:
    """Apply one patch; a failure is recorded (it reaches the profile's warnings), never raised
    into the import that triggered it."""
    try:
        patch(module)
    except Exception as e:
        REC.failed(f"patching {getattr(module, '__name__', module)}", e)


def wrapper_of(orig):
    """Decorator for a hook around vLLM's ``orig``: keeps its name and doc, marks it ours."""

    def mark(fn):
        fn = functools.wraps(orig)(fn)
        setattr(fn, compat.MARK, True)
        return fn

    return mark


def wrap_methods(cls, wrappers: dict[str, Callable]) -> bool:
    """Replace each method named in ``wrappers`` by ``wrappers[name](method)`` wherever
    ``cls`` or one of its bases defines it (once: our wrappers are marked); returns
    whether any class defines one of them."""
    found = False
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, wrap in wrappers.items():
            fn = klass.__dict__.get(name)
            if fn is not None:
                found = True
                if not compat.is_ours(fn):
                    setattr(klass, name, wrap(fn))
    return found


def on_import(targets: dict[str, Patch]) -> None:
    """Run each patch on its module now if imported, and on every later import of it."""
    for name, patch in targets.items():
        if name in sys.modules:
            run_patch(patch, sys.modules[name])
    hook = next((h for h in sys.meta_path if isinstance(h, PostImportHook)), None)
    if hook is None:
        hook = PostImportHook()
        sys.meta_path.insert(0, hook)
    for name, patch in targets.items():  # one finder, several patches per module
        patches = hook.targets.setdefault(name, [])
        if patch not in patches:
            patches.append(patch)
