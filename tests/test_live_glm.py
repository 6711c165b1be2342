"""`--model tiny-glm` profiles GLM's layer structure for real on the CPU: MoE layers with a
shared expert after the dense first layer, and its attention, in summary.json and the report.

The engine runs in the command's own process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): the
model's structure is the subject here, not the process layout, and one process starts in
seconds."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import HAVE_VLLM, ROOT, vllm_env

NUM_PROMPTS, INPUT_LEN, OUTPUT_LEN = 4, 24, 6


def _rows(node, key="fused_op"):
    """Every dict in a JSON tree that names a fused op (the report's data, whatever its layout)."""
    if isinstance(node, dict):
        if isinstance(node.get(key), str) and "time_ns" in node:
            yield node
        for v in node.values():
            yield from _rows(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _rows(v, key)


@pytest.mark.vllm
@pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")
def test_tiny_glm_profiles_moe_and_attention(tmp_path):
    out = tmp_path / "report.html"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "--model",
            "tiny-glm",
            "--device",
            "cpu",
            "--detail_level",
            "standard",
            "--output",
            str(out),
            "--num-prompts",
            str(NUM_PROMPTS),
            "--input-len",
            str(INPUT_LEN),
            "--output-len",
            str(OUTPUT_LEN),
            "--max-num-batched-tokens",
            "32",
        ],
        env=vllm_env(tmp_path / "cache", VLLM_ENABLE_V1_MULTIPROCESSING="0"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "report.summary.json").read_text())
    cfg = json.loads((tmp_path / "cache" / "models" / "tiny-glm" / "config.json").read_text())
    assert cfg["architectures"] == ["Glm4MoeForCausalLM"]
    ops = {row["fused_op"]: row for row in s["fused_ops"]}
    for name in ("moe", "attention", "gemm", "norm"):
        assert ops[name]["time_ns"] > 0 and ops[name]["count"] > 0, (name, ops.get(name))
    # the MoE time is spent in prefill and in decode steps alike
    assert ops["moe"]["time_ns_by_phase"]["prefill"] > 0 and ops["moe"]["time_ns_by_phase"]["decode"] > 0
    assert s["throughput"]["decode_tokens"] == NUM_PROMPTS * (OUTPUT_LEN - 1)
    # GLM's layer structure: the fused-MoE op runs once per MoE layer per step (not in the dense
    # first layer), attention once per layer per step
    steps = s["totals"]["steps"]
    top = {k["name"]: k for k in s["top_kernels"]}
    moe_layers = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
    fused_moe = [k for n, k in top.items() if k["fused_op"] == "moe" and "fused_moe" in n]
    assert fused_moe and sum(k["count"] for k in fused_moe) == moe_layers * steps, fused_moe
    attn = [k for n, k in top.items() if k["fused_op"] == "attention" and "unified_attention" in n]
    assert attn and sum(k["count"] for k in attn) == cfg["num_hidden_layers"] * steps, attn
    # per layer: the dense first layer and the MoE ones, each step showing all of them
    lay = s["layers"]
    assert lay["config_layers"] == cfg["num_hidden_layers"]
    for ph in lay["phases"]:
        assert (ph["evidence"], ph["layers"]) == ("module", cfg["num_hidden_layers"])
        assert [r["mlp"] for r in ph["rows"]] == ["dense"] * cfg["first_k_dense_replace"] + ["moe"] * moe_layers
        assert {k["kind"]: k["layers"] for k in ph["kinds"]} == {"full/dense": 1, "full/moe": moe_layers}
    # the report shows the same rows
    html = out.read_text()
    blob = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert blob, "no report data in the page"
    shown = {}
    for row in _rows(json.loads(blob.group(1))):
        shown.setdefault(row["fused_op"], row["time_ns"])
    assert shown.get("moe", 0) > 0 and shown.get("attention", 0) > 0, shown
    assert shown["moe"] == pytest.approx(ops["moe"]["time_ns"], rel=1e-9)
