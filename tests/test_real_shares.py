"""Fused-op shares of the shared real GPU traces against a rule written here for each trace's
kernel names (never our output): MoE, GEMM, attention, communication and the rest, within 3
points; "other" (no fused op at all) under 3%; no MoE on a dense model.

Each rule reads the raw trace with the standard library only: device events are the complete
(``X``) events of category kernel, gpu_memcpy or gpu_memset; a share is the summed duration of
a category over the summed duration of all device events (every stream, the whole file). The
rules were written by reading each trace's kernel sequence (names, then position on the stream
where the name cannot say: an MoE block, an all-reduce's staging copies).

The traces are analysed as a user would, one file at a time and without capture traces (graph
replays are attributed by name and structure alone); the "device only" tests go further and
remove every host event first, as a trace of a run without an op chain or module stack.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from real_data import REAL

from xpu_profiler.analysis import analyze

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
CATS = ("moe", "gemm", "attention", "communication")
TOL = 0.03


def raw_events(rel: str) -> list[dict]:
    path = REAL / rel
    if not path.exists():
        pytest.skip(f"{path} is not there")
    data = path.read_bytes()
    doc = json.loads(gzip.decompress(data) if rel.endswith(".gz") else data)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def device_events(ev: list[dict]) -> list[dict]:
    dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in DEVICE]
    dev.sort(key=lambda e: (e["ts"], e.get("tid", 0)))
    return dev


def streams(dev: list[dict]) -> dict:
    out = defaultdict(list)
    for e in dev:
        out[(e.get("pid"), e.get("tid"))].append(e)
    return out


def shares(dev: list[dict], label: Callable[[dict], str]) -> dict[str, float]:
    total = sum(e["dur"] for e in dev)
    acc: dict[str, float] = defaultdict(float)
    for e in dev:
        c = label(e)
        acc[c if c in CATS else "rest"] += e["dur"]
    return {c: acc[c] / total for c in (*CATS, "rest")}


def ours(path: Path) -> tuple[dict[str, float], float]:
    """(our shares of the four categories and the rest, the share of "other"), from the summary."""
    _, s = analyze([path], engine="serial")
    total = sum(f.time_ns for f in s.fused_ops)
    by = {f.fused_op: f.time_ns / total for f in s.fused_ops}
    got = {c: by.get(c, 0.0) for c in CATS}
    got["rest"] = 1 - sum(got.values())
    return got, by.get("other", 0.0)


def device_only(rel: str, tmp: Path) -> Path:
    """The trace with only its device events (and metadata): no op chain, no module, no step."""
    ev = raw_events(rel)
    keep = [e for e in ev if (e.get("ph") == "X" and e.get("cat") in DEVICE) or e.get("ph") == "M"]
    out = tmp / (Path(rel).name.removesuffix(".gz").removesuffix(".json") + ".device-only.json")
    out.write_text(json.dumps({"traceEvents": keep}))
    return out


def assert_close(got: dict[str, float], want: dict[str, float], tol: float = TOL, keys=(*CATS, "rest")) -> None:
    bad = {k: (round(100 * got[k], 2), round(100 * want[k], 2)) for k in keys if abs(got[k] - want[k]) > tol}
    assert not bad, f"(ours, rule) in %: {bad}"


# --- the rules ------------------------------------------------------------------------------------


def rule_llama_h100(dev: list[dict]) -> dict[str, float]:
    """vLLM Llama, TP=4 on H100, CUDA graphs. Dense: no MoE. Communication: NCCL kernels and
    vLLM's custom all-reduce. GEMM: cuBLAS (sm90_xmma, cutlass_80_tensorop through Kernel2, its
    split-K reduce). Attention: FlashAttention 3 (flash::). The Inductor kernel whose name lists
    all_reduce prepares the vocab-parallel embedding: not communication."""

    def label(e: dict) -> str:
        n = e["name"]
        if n.startswith("ncclDevKernel_") or "vllm::cross_device_reduce_" in n:
            return "communication"
        if n.startswith("sm90_xmma_gemm_") or "Kernel2<cutlass_80_tensorop_" in n or "splitKreduce_kernel" in n:
            return "gemm"
        if "flash::" in n:
            return "attention"
        return "rest"

    return shares(dev, label)


def rule_gptoss_b200(dev: list[dict]) -> dict[str, float]:
    """vLLM gpt-oss, TP=8 on B200, eager. MoE: trtllm-gen routing (moe::dev::routing), expert
    GEMMs (bmm_*), finalize (moe::dev::finalize), the MoE input's mxfp8 quant
    (quantize_with_block_size) and the pad FusedMoE.forward runs before it (the BFloat16 fill and
    the copy right after it, two kernels before the quant). Communication: symmetric-memory and
    NCCL kernels, and the device-to-device copies right before and after each symmetric-memory
    all-reduce (its staging copies). GEMM: cuBLAS nvjet. Attention: trtllm-gen FMHA and the
    FlashInfer page-index copy."""
    pad, staging = b200_positions(dev)

    def label(e: dict) -> str:
        n = e["name"]
        if id(e) in staging or "multimem_all_reduce_kernel" in n or n.startswith("ncclDevKernel_"):
            return "communication"
        if id(e) in pad or "moe::dev::" in n or n.startswith("bmm_") or "quantize_with_block_size" in n:
            return "moe"
        if n.startswith("nvjet_"):
            return "gemm"
        if n.startswith("fmhaSm100") or n == "_copy_page_indices_kernel":
            return "attention"
        return "rest"

    return shares(dev, label)


def b200_positions(dev: list[dict]) -> tuple[set[int], set[int]]:
    """(the MoE pad kernels, the all-reduce staging copies) of the B200 trace, by position."""
    pad, staging = set(), set()
    for seq in streams(dev).values():
        for i, e in enumerate(seq):
            if "FillFunctor<c10::BFloat16>" in e["name"] and i + 2 < len(seq):
                if "quantize_with_block_size" in seq[i + 2]["name"]:
                    pad.update((id(seq[i]), id(seq[i + 1])))
            if "multimem_all_reduce_kernel" in e["name"]:
                for j in (i - 1, i + 1):
                    if 0 <= j < len(seq) and seq[j]["name"].startswith("Memcpy DtoD"):
                        staging.add(id(seq[j]))
    return pad, staging


def rule_qwen3_moe_mi300(dev: list[dict]) -> dict[str, float]:
    """SGLang Qwen3-30B-A3B decode on MI300X, one HIP graph. MoE: aiter's top-k softmax, CK's
    MoE sorting and the two CK MoE GEMMs of each layer (the second one does the weighted sum: no
    finalize kernel). GEMM: hipBLASLt (Cijk_, the router GEMM among them). Attention: vLLM's
    ROCm paged attention and its reduce, and FlashInfer's KV-index kernel. TP=1: no
    communication."""

    def label(e: dict) -> str:
        n = e["name"]
        if "topksoftmax" in n or "MoeSortingKernel" in n or "kernel_moe_gemm" in n:
            return "moe"
        if n.startswith("Cijk_"):
            return "gemm"
        if "paged_attention_ll4mi" in n or n == "create_flashinfer_kv_indices_triton":
            return "attention"
        return "rest"

    return shares(dev, label)


DEEPSEEK_MOE_HELPERS = re.compile(
    r"cuda::(clean_and_count_expert|get_fused_mapping|expand_to_fused_with_scales_impl|reduce_fused_impl|"
    r"topk_sum_and_topk_idx|unique_group_indices_impl|aux_fi_impl|swiglu_\w*with_weight)"
)


def rule_deepseek_h800(dev: list[dict]) -> dict[str, float]:
    """DeepSeek-V3 training, EP64 on H800, rank 0. Communication: DeepEP (dpsk::ep::: dispatch,
    combine, notify, layout). MoE: the M-grouped FP8 GEMMs (routed experts) and the MoE helpers
    of DeepSeek's kernels (expert count, token mapping, permute, unpermute+reduce, grouped top-k,
    SwiGLU weighted by the routing probability). GEMM: the other dpsk::grouped_gemm GEMMs (the
    namespace names the library: fp8_ptp128c are dense projections) and cuBLAS. Which weight a
    wgrad GEMM (fp8_dptp128c_acc) computes is not in its name: they count as GEMM. Attention:
    FlashAttention 3 forward and backward."""

    def label(e: dict) -> str:
        n = e["name"]
        if "dpsk::ep::" in n:
            return "communication"
        if "dpsk::grouped_gemm::cuda::m_grouped_" in n or DEEPSEEK_MOE_HELPERS.search(n):
            return "moe"
        if "dpsk::grouped_gemm::cuda::" in n and "GemmKernel" in n or n.startswith("sm90_xmma_gemm_"):
            return "gemm"
        if "flash::" in n:
            return "attention"
        return "rest"

    return shares(dev, label)


def rule_qwen3_dense_mi300(dev: list[dict]) -> dict[str, float]:
    """SGLang Qwen3-8B on MI300X (dense, TP=1). GEMM: hipBLASLt. Attention: vLLM's ROCm paged
    attention (decode), CK tile FMHA (prefill, mangled ck_tile::kentry names), FlashInfer's
    KV-index kernel."""

    def label(e: dict) -> str:
        n = e["name"]
        if n.startswith("Cijk_"):
            return "gemm"
        if "paged_attention_ll4mi" in n or n == "create_flashinfer_kv_indices_triton":
            return "attention"
        if n.startswith("_ZN7ck_tile6kentry") and "Fmha" in n:
            return "attention"
        return "rest"

    return shares(dev, label)


def rule_gptoss_mi300(dev: list[dict]) -> dict[str, float]:
    """vLLM gpt-oss on MI300X (TP=1, HIP graphs). MoE: triton_kernels' routing (_topk_forward,
    bitmatrix sums, combined routing), expert GEMMs (_matmul_ogs_*) and finalize, and the pad of
    the MoE input (the Inductor kernel that names moe_forward). GEMM: hipBLASLt (the router among
    them). Attention: vLLM's Triton unified attention and its segment reduce."""
    moe = re.compile(r"^(_topk_forward|_sum_bitmatrix_rows|_combined_routing_\w+|_matmul_ogs_\w+|_finalize_matmul\w*)$")

    def label(e: dict) -> str:
        n = e["name"]
        if moe.match(n) or n == "triton_poi_fused_constant_pad_nd_moe_forward_0":
            return "moe"
        if n.startswith("Cijk_"):
            return "gemm"
        if n.startswith("kernel_unified_attention") or n == "reduce_segments":
            return "attention"
        return "rest"

    return shares(dev, label)


CASES = {
    "gpu-inference/vllm-llama-tp4-h100-rank0.pt.trace.json.gz": (rule_llama_h100, True),
    "gpu-inference/vllm-gptoss-tp8-b200-rank0-eager.json.gz": (rule_gptoss_b200, False),
    "gpu-inference/sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz": (rule_qwen3_moe_mi300, False),
    "gpu-inference/deepseek-v3-train-ep64-h800-rank0.json": (rule_deepseek_h800, False),
    "tracelens/sglang-qwen3-8b-decode.json.gz": (rule_qwen3_dense_mi300, True),
    "tracelens/sglang-qwen3-8b-prefilldecode.json.gz": (rule_qwen3_dense_mi300, True),
    "tracelens/vllm-gptoss-mi300-decode-full/graph_execution.json.gz": (rule_gptoss_mi300, False),
    "tracelens/vllm-gptoss-mi300-prefilldecode-piecewise/graph_execution.json.gz": (rule_gptoss_mi300, False),
}


@pytest.mark.parametrize("rel", sorted(CASES))
def test_shares_follow_the_rule_for_the_traces_kernel_names(rel: str) -> None:
    rule, dense = CASES[rel]
    want = rule(device_events(raw_events(rel)))
    got, other = ours(REAL / rel)
    assert_close(got, want)
    assert other < 0.03, f"'other' is {100 * other:.2f}% of op time"
    if dense:
        assert want["moe"] == 0 and got["moe"] == 0


@pytest.mark.parametrize(
    "rel",
    [
        "gpu-inference/vllm-gptoss-tp8-b200-rank0-eager.json.gz",
        "gpu-inference/vllm-llama-tp4-h100-rank0.pt.trace.json.gz",
        "gpu-inference/sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz",
        "gpu-inference/deepseek-v3-train-ep64-h800-rank0.json",
    ],
)
def test_device_only_traces_keep_moe_and_communication(rel: str, tmp_path: Path) -> None:
    """Without a single host event (a graph replay with no capture trace, or another engine's
    trace): MoE within 5 points of the rule, communication within 2, from names and the kernel
    sequence alone (on B200: the pad and quant before the routing kernel, the staging copies
    around each all-reduce)."""
    rule, dense = CASES[rel]
    want = rule(device_events(raw_events(rel)))
    got, other = ours(device_only(rel, tmp_path))
    assert abs(got["moe"] - want["moe"]) <= 0.05, (got["moe"], want["moe"])
    assert abs(got["communication"] - want["communication"]) <= 0.02, (got["communication"], want["communication"])
    assert other < 0.03
    if dense:
        assert got["moe"] == 0


def test_the_b200_trace_needs_the_structure_rule(tmp_path: Path) -> None:
    """What the names alone miss on the device-only B200 trace, the kernel sequence gives: the
    rule's MoE and communication, and "kernel sequence" as the source of exactly the time of
    the pads, input quants and staging copies."""
    rel = "gpu-inference/vllm-gptoss-tp8-b200-rank0-eager.json.gz"
    dev = device_events(raw_events(rel))
    want = rule_gptoss_b200(dev)
    pad, staging = b200_positions(dev)
    by_position = sum(e["dur"] for e in dev if id(e) in pad | staging or "quantize_with_block_size" in e["name"]) / sum(
        e["dur"] for e in dev
    )
    _, s = analyze([device_only(rel, tmp_path)], engine="serial")
    total = sum(f.time_ns for f in s.fused_ops)
    by = {f.fused_op: f.time_ns / total for f in s.fused_ops}
    assert by["moe"] == pytest.approx(want["moe"], abs=1e-3)
    assert by["communication"] == pytest.approx(want["communication"], abs=1e-3)
    st = s.attribution.structure
    assert st["moe_blocks"] == 36 and st["staging_copies"] == len(staging) == 146  # 36 layers; 73 all-reduces
    assert s.attribution.share_by_source["structure"] == pytest.approx(by_position, abs=1e-3)
