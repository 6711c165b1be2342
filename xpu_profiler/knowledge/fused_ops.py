"""The fused ops every event is attributed to: the vocabulary the family tables
(``knowledge/families``), the module patterns and every output share."""

from __future__ import annotations

FUSED_OPS = (
    "attention",
    "moe",
    "gemm",
    "norm",
    "activation",
    "rope",
    "kv_cache",
    "communication",
    "sampling",
    "embedding",
    "quantization",
    "convolution",
    "memcpy",
    "memset",
    "elementwise",
    "other",
)
OTHER = FUSED_OPS.index("other")
