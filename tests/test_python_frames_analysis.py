"""``--no-python-frames`` (``python_frames=False`` in the notebook) leaves the Python stack
frames out of what is written (the Perfetto trace, the bundle) and nothing else: the analysis,
the host time by cause the frames explain included, is the one made with them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

import xpu_profiler
from xpu_profiler.summary.codec import encode

#: a vLLM trace recorded with Python stacks (with_stack)
TRACE = Path(__file__).resolve().parent / "data" / "real-traces" / "gpu-inference"
TRACE = TRACE / "vllm-gptoss-tp8-b200-rank0-eager.json.gz"


def _frame_events(doc: dict) -> int:
    return sum(1 for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "python_function")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("frames")
    for name, extra in (("with", []), ("without", ["--no-python-frames"])):
        res = run("analyze", TRACE, "-o", out / name, "--format", "json,perfetto,bundle", "-q", *extra)
        assert res.returncode == 0, res.stderr
    return {k: out / k for k in ("with", "without")}


def test_the_analysis_is_the_same_only_the_files_lose_the_frames(outputs):
    with gzip.open(TRACE, "rt") as f:
        raw = _frame_events(json.load(f))
    assert raw > 0
    summaries = {k: json.loads((d / "summary.json").read_text()) for k, d in outputs.items()}
    assert summaries["with"]["host_path"]["start_ns"]  # the host time the device waited on, by cause
    assert summaries["without"] == summaries["with"]
    traces = {k: json.loads(gzip.decompress((d / "trace.json.gz").read_bytes())) for k, d in outputs.items()}
    assert _frame_events(traces["with"]) > 0 and _frame_events(traces["without"]) == 0
    with np.load(outputs["without"] / "profile.npz") as z:
        assert len(z["frames.start"]) == 0
    with np.load(outputs["with"] / "profile.npz") as z:
        assert len(z["frames.start"]) > 0


def test_the_notebook_likewise(tmp_path):
    a, b = xpu_profiler.load(TRACE), xpu_profiler.load(TRACE, python_frames=False)
    assert encode(b.summary) == encode(a.summary)
    b.trace(tmp_path / "t.json.gz")
    assert _frame_events(json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))) == 0
