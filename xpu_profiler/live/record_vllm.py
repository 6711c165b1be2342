"""``xpu_profiler record --via vllm``: a window through the server's own profiler, for a
server started with ``--profiler-config`` but without the plugin's ``XPU_PROFILER_DIR``.

``--steps N`` posts ``/start_profile`` with ``max_iterations=N``: vLLM's workers profile
the next N iterations and stop by themselves. vLLM counts every ``execute_model`` call,
including the empty one with which an engine that runs out of requests cleans up, so
such a window can hold fewer than N steps that schedule tokens (the report then says
so); the plugin's windows count only those. ``--seconds S`` posts ``/stop_profile`` S
seconds after the start. The traces vLLM writes (into its ``torch_profiler_dir``) are
read like any vLLM profiler directory: steps from vLLM's step annotations.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.request import Request as HttpRequest  # (not vLLM's Request)

from ..core.errors import XpuProfilerError
from .console import Console
from .http import fetch
from .locate import Server
from .vllm import compat

POLL_S = 0.5
TRACE_GLOB = "*.pt.trace.json*"


def _post(url: str, body: dict | None = None) -> None:
    req = HttpRequest(
        url, data=json.dumps(body or {}).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        fetch(req, timeout=60)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise XpuProfilerError(
                f"the server at {url.rsplit('/', 1)[0]} has no {compat.START_PROFILE}: it runs "
                f"without {compat.PROFILER_CONFIG_ARG}"
            ) from None
        raise XpuProfilerError(f"{url} answered {e.code} {e.reason}") from None
    except (OSError, urllib.error.URLError) as e:
        raise XpuProfilerError(f"{url}: {getattr(e, 'reason', e)}") from None


def _traces(d: Path) -> dict[Path, int]:
    out = {}
    for p in d.rglob(TRACE_GLOB) if d.is_dir() else ():
        if compat.FRONTEND_TRACE_MARK in p.name:
            continue  # the API server's own host work, not the engine's steps
        try:
            out[p] = p.stat().st_size
        except OSError:
            continue
    return out


def server_profiler_window(
    srv: Server, trace_dir: Path, steps: int | None, seconds: float | None, timeout: float, con: Console
) -> list[Path]:
    """Run the window; the trace files vLLM wrote for it."""
    before = _traces(trace_dir)
    what = f"the next {steps} iterations" if steps else f"{seconds:g} s"
    _post(srv.url + compat.START_PROFILE, {compat.MAX_ITERATIONS: steps} if steps else {})
    deadline = time.time() + timeout
    try:
        with con.stage(f"tracing {what} with vLLM's profiler"):
            if seconds:
                time.sleep(seconds)
                _post(srv.url + compat.STOP_PROFILE)
            last: dict[Path, int] = {}
            while True:
                now = {p: s for p, s in _traces(trace_dir).items() if before.get(p) != s}
                if now and now == last:  # written, and no longer growing
                    break
                if time.time() > deadline:
                    raise XpuProfilerError(
                        f"vLLM wrote no trace into {trace_dir} within {timeout:g} s (are requests flowing?)"
                    )
                last = now
                time.sleep(POLL_S)
    except BaseException:
        # the window's own error (or the interrupt) is what is said; a failing stop a warning at most
        if steps:
            try:
                _post(srv.url + compat.STOP_PROFILE)
            except XpuProfilerError as e:
                con.warn(f"could not stop vLLM's profiler: {e}")
        raise
    if steps:
        _post(srv.url + compat.STOP_PROFILE)  # resets vLLM's profiler (a no-op once it stopped itself)
    return sorted(now)
