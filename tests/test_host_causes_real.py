"""The host time's causes on real graph-replayed inference traces (vLLM Llama on H100, SGLang
Qwen3-8B decode): a captured graph's replay is the steady state of such steps, not a capture
inside the window (whose fix, capturing every batch size before profiling, changes nothing
there). The rule is derived from the raw frames: the traces replay graphs and capture none."""

from __future__ import annotations

import gzip
import json

import pytest
from real_data import REAL

from xpu_profiler.analysis import analyze

TRACES = [
    REAL / "gpu-inference" / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz",
    REAL / "tracelens" / "sglang-qwen3-8b-decode.json.gz",
]
#: frames of a capture (torch/cuda/graphs.py's CUDAGraph context and its capture calls)
CAPTURING = ("capture_begin", "capture_end", "): __enter__", "): __exit__", "make_graphed_callables")


def _replays(name: str) -> bool:
    return name.startswith("<built-in method replay of") or (
        "torch/cuda/graphs.py(" in name and name.endswith(": replay")
    )


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_a_graph_replay_is_no_capture(path):
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    frames = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "python_function"}
    graph_frames = [f for f in frames if "torch/cuda/graphs.py" in f]
    assert [f for f in frames if _replays(f)]
    assert not [f for f in graph_frames if any(c in f for c in CAPTURING)]
    _, s = analyze([path])
    causes = [c for p in s.phases if p.host for c in p.host.causes]
    assert "graph_capture" not in {c.cause for c in causes} | set(s.host_path.cause)
    assert {c.cause for c in causes if _replays(c.name)} <= {"graph_replay"}
    on_path = {s.host_path.cause[i] for i, n in enumerate(s.host_path.name) if _replays(n)}
    assert on_path == {"graph_replay"}
