"""Graph-capture traces of a live run (``--detail_level comprehensive``).

An engine that captures CUDA/HIP graphs replays kernels with no launching op; vLLM
can trace its own capture (``ProfilerConfig.capture_torch_profiler``: one
torch.profiler trace per captured batch size, on local rank 0, written into
``<torch_profiler_dir>/capture_traces/graph_capture_rank_0.<ts>.pt.trace.json.gz``
while the engine starts). ``enable`` asks for them when the engine will capture
graphs; ``keep`` puts them beside the run's trace (``<stem>.capture_traces/``), where
``analyze --capture`` reads them to attribute replayed kernels through the captured op
chains, and names them in the run metadata.

Inert where no graphs are captured: vLLM's CPU worker never captures, and neither does
an engine with ``enforce_eager`` or ``cudagraph_mode`` NONE; nothing is set then.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ..core.profile import Profile
from .vllm import compat, compat_llm

TRACE_GLOB = "*.pt.trace.json*"


def captures_graphs(kw: dict, device_kind: str) -> bool:
    """Whether an engine built from ``kw`` on ``device_kind`` captures graphs."""
    if device_kind == "cpu" or kw.get("enforce_eager"):
        return False
    cc = kw.get("compilation_config")
    mode = cc.get("cudagraph_mode") if isinstance(cc, dict) else None
    return mode is None or str(mode).upper() not in ("NONE", "0")


def enable(kw: dict, device_kind: str, level: str, work_dir: Path, say: Callable[[str], None]) -> Path | None:
    """Add the engine argument that makes vLLM trace its graph capture; returns the
    directory the traces will be in, None when nothing is captured or traced."""
    if level != "comprehensive" or not captures_graphs(kw, device_kind):
        return None
    if not compat_llm.supports_capture_profiler():
        say(
            f"vLLM {compat.vllm_version()} cannot trace its graph capture: replayed kernels are "
            "attributed by their names only"
        )
        return None
    given = kw.get(compat_llm.PROFILER_CONFIG_KWARG)
    cfg = compat_llm.capture_profiler_config(
        str(work_dir / "vllm_profiler"), given if isinstance(given, dict) else None
    )
    if cfg is None or (given is not None and not isinstance(given, dict)):
        say("the engine's own profiler_config is not torch.profiler: its graph capture is not traced")
        return None
    kw[compat_llm.PROFILER_CONFIG_KWARG] = cfg
    return Path(cfg["torch_profiler_dir"]) / compat_llm.CAPTURE_TRACE_SUBDIR


def destination(output: str | Path) -> Path:
    """``report.html`` → ``report.capture_traces/``; an output directory → ``DIR/capture_traces/``."""
    from ..analysis import FILE_NAMES, output_paths

    trace = output_paths(output, list(FILE_NAMES))["perfetto"]
    prefix = trace.name[: -len("trace.json.gz")] if trace.name.endswith("trace.json.gz") else trace.stem + "."
    return trace.parent / f"{prefix}{compat_llm.CAPTURE_TRACE_SUBDIR}"


def keep(profile: Profile, source: Path, output: str | Path, say: Callable[[str], None]) -> list[Path]:
    """Copy the capture traces beside the run's outputs (a complete directory or none:
    copied into a temporary one, renamed into place) and list them in ``run``."""
    files = sorted(p for p in source.glob(TRACE_GLOB) if p.is_file()) if source.is_dir() else []
    if not files:
        profile.run["capture_traces"] = {"dir": None, "files": []}
        say("the engine wrote no graph-capture trace")
        return []
    dest = destination(output)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for f in files:
            shutil.copy2(f, tmp / f.name)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        profile.warn(f"the graph-capture traces could not be kept in {dest} ({e.strerror})")
        return []
    kept = [dest / f.name for f in files]
    profile.run["capture_traces"] = {"dir": str(dest), "files": [str(p) for p in kept]}
    say(f"kept {len(kept)} graph-capture trace(s) in {dest}")
    return kept
