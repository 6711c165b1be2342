"""The fused ops every event is attributed to, and the structural families the name tables
are searched in (``FAMILIES`` order: data movement, runtime, communication, MoE, ... epilogue
and dtype words last): the vocabulary the kernel tables and the taxonomy share."""

from __future__ import annotations

from typing import NamedTuple

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

#: structural families, in the order the table searches them (epilogue/dtype words last)
FAMILIES = (
    "memory",
    "runtime",
    "communication",
    "moe",
    "kv_cache",
    "attention",
    "rope",
    "norm",
    "convolution",
    "gemm",
    "sampling",
    "embedding",
    "activation",
    "quantization",
    "elementwise",
)


class Rule(NamedTuple):
    """One row of the pattern table: ``re.search`` over a name, case-insensitive."""

    regex: str
    fused_op: str
    family: str
    note: str = ""
