"""torch.profiler inside a worker over a window of steps, with module ranges.

The window skips ``first`` executed steps after it is armed, then profiles ``count``
steps (0: until stopped, or until a step ends past ``deadline``). While it runs, each
step is wrapped in an ``xpu_step#N`` range (its wall-clock start is noted, to align the
trace's clock later) and every vLLM layer module named in ``compat.LAYER_CLASSES`` in
an ``xpu_module:<Class>`` range, so that the ops of native, decomposed layer
implementations are attributed to their fused op; each decoder layer
(``knowledge.layer_names``) gets an ``xpu_module:<Class>_<k>`` range (the layer view). Traces are written outside engine
steps, when the records are taken.
"""

from __future__ import annotations

import os
import sys
from time import time_ns as now  # (the recorder's clock: time.time_ns)
from typing import TYPE_CHECKING

from ...core import records
from ...knowledge.layer_names import is_decoder_layer
from . import compat

if TYPE_CHECKING:
    from torch.profiler import profile


class TorchWindow:
    def __init__(
        self,
        worker,
        out_dir: str,
        first: int,
        count: int,
        level: str,
        *,
        window_id: str | None = None,
        deadline: int = 0,
        defer_stop: bool = False,
    ):
        self.worker = worker
        self.window_id = window_id  # a window a running server was asked for (see ``windows``)
        self.deadline = deadline  # wall-clock ns: stop after the step that ends past it (0: none)
        # after the last step, only stop profiling ranges: the profiler itself stops at the
        # next step (``stop()`` by the caller), whose time then holds what stopping costs
        self.defer_stop = defer_stop
        self.closing = False
        self.out_dir = out_dir
        self.first = first  # executed steps to skip after arming
        self.count = count  # steps to profile (0 = until stopped)
        self.level = level
        self.seen = 0
        self.done = 0
        self.prof: profile | None = None
        self.hooks: list = []
        self.files: list[str] = []
        self.marks: list[tuple] = []  # (step, t_ns of our range start) for clock alignment
        self.finished = False
        self.stopped: list = []  # stopped profilers whose trace is not written yet

    # -- per step -------------------------------------------------------------------------
    def open_step(self, step: int):
        """Before a step: start the profiler when its window begins; the step's range
        handle while it runs (None outside the window)."""
        if not self.finished:
            if self.prof is None and self.seen >= self.first:
                self.start()
            self.seen += 1
        if self.prof is None or self.closing:
            return None
        import torch

        return torch.ops.profiler._record_function_enter_new(records.step_range_name(step), None)

    def close_step(self, handle) -> None:
        if handle is not None:
            import torch

            torch.ops.profiler._record_function_exit(handle)
        if self.prof is not None and not self.closing:
            self.done += 1
            if (self.count and self.done >= self.count) or (self.deadline and now() >= self.deadline):
                if self.defer_stop:
                    self.closing = True
                else:
                    self.stop()

    # -- profiler -------------------------------------------------------------------------
    def start(self) -> None:
        """Start torch.profiler; RuntimeError when one already runs in this process (vLLM's
        own, from ``start_profile``): two at once crash the process."""
        import torch
        from torch.profiler import ProfilerActivity, profile

        if torch._C._autograd._profiler_enabled():
            raise RuntimeError("another torch.profiler (vLLM's start_profile?) is running in this process")

        acts = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
        comp = self.level == "comprehensive"
        self.prof = profile(activities=acts, record_shapes=comp, profile_memory=comp, with_flops=comp, with_stack=False)
        self.prof.__enter__()
        self._add_module_ranges()

    def stop(self) -> None:
        if self.prof is None:
            return
        prof, self.prof = self.prof, None
        self._remove_module_ranges()
        self.finished = True
        try:
            prof.__exit__(None, None, None)
        except RuntimeError as e:  # keep the engine running whatever the profiler does
            sys.stderr.write(f"xpu_profiler: torch profiler stop failed: {e}\n")
            return
        self.stopped.append(prof)

    def export(self, rank: int) -> None:
        """Write the traces of stopped profilers (outside any engine step)."""
        while self.stopped:
            prof = self.stopped.pop(0)
            path = os.path.join(self.out_dir, f"rank{rank}.{os.getpid()}.{now()}.pt.trace.json")
            try:
                os.makedirs(self.out_dir, exist_ok=True)
                prof.export_chrome_trace(path)
            except (OSError, RuntimeError) as e:
                sys.stderr.write(f"xpu_profiler: torch profiler export failed: {e}\n")
                continue
            self.files.append(path)

    # -- module ranges --------------------------------------------------------------------
    def _add_module_ranges(self) -> None:
        model = compat.worker_model(self.worker)
        if model is None:
            return
        import torch

        enter = torch.ops.profiler._record_function_enter_new
        exit_ = torch.ops.profiler._record_function_exit
        decoder: dict[str, int] = {}  # decoder layers: one numbered range each (the layer view)
        for _, mod in model.named_modules():
            cls = type(mod).__name__
            label = compat.layer_label(cls)
            if label is None and is_decoder_layer(cls):
                label = f"{cls}_{decoder.setdefault(cls, 0)}"
                decoder[cls] += 1
            if label is None:
                continue
            name = records.MODULE_RANGE_PREFIX + label
            stack: list = []

            def pre(m, args, _name=name, _stack=stack):
                _stack.append(enter(_name, None))

            def post(m, args, out, _stack=stack):
                if _stack:
                    exit_(_stack.pop())

            self.hooks.append(mod.register_forward_pre_hook(pre))
            self.hooks.append(mod.register_forward_hook(post))

    def _remove_module_ranges(self) -> None:
        for h in self.hooks:
            h.remove()
        self.hooks = []
