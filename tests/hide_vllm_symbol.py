"""Installed as ``sitecustomize`` (on PYTHONPATH) by tests that need a vLLM method to
vanish from where xpu_profiler expects it, in every process of an engine (vLLM spawns
its EngineCore and workers: each runs this at interpreter start).

``XPU_TEST_HIDE=module:Class.method[,module:Class.method...]``: right after ``module`` is
imported, ``method`` is taken off the class that defines it, and every instance of
``Class`` gets vLLM's own function back as an instance attribute. vLLM keeps working (it
calls the method on the instance), but the class no longer holds it — as when a vLLM
release moves or renames a method: a hook on the class is then never called. The hiding is registered
with the plugin's own post-import hook, ahead of the plugin's patches of that module.
"""

import os
import types

TARGET = os.environ.get("XPU_TEST_HIDE", "")


def _hide(module, cls_name: str, attr: str) -> None:
    cls = getattr(module, cls_name)
    owner = next(k for k in cls.__mro__ if attr in k.__dict__)
    fn = owner.__dict__[attr]
    fn = getattr(fn, "__wrapped__", fn)  # vLLM's own function, should a wrapper be there already
    delattr(owner, attr)
    orig_init = cls.__init__

    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        setattr(self, attr, types.MethodType(fn, self))

    cls.__init__ = __init__


if TARGET:
    from xpu_profiler.live.vllm import patching  # the plugin's own post-import hook: runs first

    def _hider(qual: str):
        cls_name, _, attr = qual.partition(".")
        return lambda m: _hide(m, cls_name, attr)

    for _target in TARGET.split(","):
        _mod, _, _qual = _target.partition(":")
        patching.on_import({_mod: _hider(_qual)})
