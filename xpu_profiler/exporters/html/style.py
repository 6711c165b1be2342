"""Colours and labels of the report: the same in every report, whatever the run."""

from __future__ import annotations

from collections.abc import Iterable

PHASES = ("prefill", "decode", "mixed", "unknown")
TOKEN_PHASES = ("prefill", "decode", "mixed")  # phases with a per-token cost
PHASE_COLORS = {"prefill": "#3b6fb6", "decode": "#e8833a", "mixed": "#8a5fbf", "unknown": "#9aa0a6"}
OTHER_COLOR = "#c4c4c4"
# One colour per fused op of the taxonomy; names outside it take the spare colours in
# their order of time.
FUSED_OP_COLORS = {
    "attention": "#4c9f70",
    "gemm": "#d1495b",
    "moe": "#b5838d",
    "norm": "#edae49",
    "activation": "#7d5ba6",
    "rope": "#00a6a6",
    "kv_cache": "#2e86ab",
    "communication": "#c1666b",
    "sampling": "#a4b494",
    "embedding": "#f49d6e",
    "quantization": "#3d5a80",
    "convolution": "#6d597a",
    "memcpy": "#5d737e",
    "memset": "#8d99ae",
    "elementwise": "#7fb3d5",
    "other": OTHER_COLOR,
}
FUSED_PALETTE = ("#9c6644", "#588157", "#bc4749", "#6a4c93", "#1982c4", "#8ac926")

MEMORY_LABELS = {
    "device_allocated_bytes": "device allocated",
    "device_reserved_bytes": "device reserved",
    "host_rss_bytes": "host RSS",
    "kv_cache_usage": "KV-cache usage",
}
RATE_LABELS = {
    "prefill_tokens_per_s": "prefill tok/s",
    "decode_tokens_per_s": "decode tok/s",
    "output_tokens_per_s": "output tok/s",
}
SERIES_COLORS = {
    "device_allocated_bytes": "#3b6fb6",
    "device_reserved_bytes": "#8fb3e0",
    "host_rss_bytes": "#4c9f70",
    "kv_cache_usage": "#e8833a",
    "prefill_tokens_per_s": "#3b6fb6",
    "decode_tokens_per_s": "#e8833a",
    "output_tokens_per_s": "#4c9f70",
}
SERIES_PALETTE = ("#4c9f70", "#7d5ba6", "#c1666b", "#00a6a6", "#9c6644", "#5d737e")
VERSION_LABELS = {
    "vllm": "vLLM",
    "torch": "PyTorch",
    "python": "Python",
    "vllm_kunlun": "vllm-kunlun",
    "xpu_profiler": "xpu_profiler",
    "cuda": "CUDA",
    "xre": "XRE",
}
DTYPE_KEYS = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "fp8": "fp8",
    "int8": "int8",
}
BASIS_LABELS = {"device": "device kernel time", "host": "host op time (top-level CPU ops)"}


def fused_colors(names: Iterable[str]) -> dict[str, str]:
    """Colour of each fused op name (fixed for the taxonomy's names)."""
    out: dict[str, str] = {}
    spare = 0
    for n in names:
        if n in out:
            continue
        if n in FUSED_OP_COLORS:
            out[n] = FUSED_OP_COLORS[n]
        else:
            out[n] = FUSED_PALETTE[spare % len(FUSED_PALETTE)]
            spare += 1
    return out
