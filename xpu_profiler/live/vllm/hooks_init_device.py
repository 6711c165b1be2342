"""Device-log capture hook (each worker): with ``XPU_PROFILER_DEVICE_LOGS=<run dir>``,
``init_device()`` first sends the worker's own fds 1 and 2 (and the Kunlun runtime's
logging variables) to ``<run dir>/xpu_logs/rank_<rank>.log`` — before the device
runtime starts, which reads those variables once."""

from __future__ import annotations

import atexit
import os

from ...core.records import ENV_DEVICE_LOGS
from . import compat, patching
from .log_capture import CaptureHandle, start_capture, stop_capture
from .recorder import REC


class _Capture:
    handle: CaptureHandle | None = None  # this worker's while its output is redirected


CAPTURE = _Capture()


def wrap_init_device(orig):
    @patching.wrapper_of(orig)
    def wrapper(self, *args, **kwargs):
        run_dir = os.environ.get(ENV_DEVICE_LOGS)
        if run_dir and CAPTURE.handle is None:
            try:
                CAPTURE.handle = start_capture(
                    run_dir, rank=compat.worker_rank(self), local_rank=compat.worker_local_rank(self)
                )
                atexit.register(stop)
            except OSError as e:  # the worker runs on, its output stays on the console
                REC.failed("Worker.init_device (device logs)", e)
        return orig(self, *args, **kwargs)

    return wrapper


def install(cls) -> bool:
    """Wrap ``init_device`` wherever ``cls`` and its bases define it; False when none does."""
    return patching.wrap_methods(cls, {compat.INIT_DEVICE: wrap_init_device})


def stop():
    """Give this process its fds back (an in-process engine shares the caller's terminal);
    returns the log path, None when nothing was captured."""
    handle, CAPTURE.handle = CAPTURE.handle, None
    return stop_capture(handle) if handle is not None else None
