"""What vLLM writes that the analysis reads: names of its traces and of its layer modules.

The live path's ``live/vllm/compat.py`` lists every vLLM internal it touches and re-exports
these; the readers and the taxonomy read them from here, so that both sides agree.
Sources: vLLM ``vllm/model_executor/layers/`` (the layer classes), ``vllm/v1/engine/async_llm.py``
(the API server's profiler trace name).
"""

from __future__ import annotations

#: in the name of the trace the API server's own profiler writes at /stop_profile (its host work only)
FRONTEND_TRACE_MARK = ".async_llm"

#: layer classes that get an ``xpu_module:<Class>`` range, and any class ending like these
LAYER_CLASSES = frozenset(
    (
        "RMSNorm",
        "GemmaRMSNorm",
        "LayerNorm",
        "SiluAndMul",
        "GeluAndMul",
        "MulAndSilu",
        "FatreluAndMul",
        "RotaryEmbedding",
        "Llama3RotaryEmbedding",
        "LinearScalingRotaryEmbedding",
        "YaRNScalingRotaryEmbedding",
        "DynamicNTKScalingRotaryEmbedding",
        "MRotaryEmbedding",
        "DeepseekScalingRotaryEmbedding",
        "FusedMoE",
        "SharedFusedMoE",
        "MoERunner",
        "Attention",
        "MLAAttention",
        "MultiHeadAttention",
        "QKVParallelLinear",
        "MergedColumnParallelLinear",
        "RowParallelLinear",
        "ColumnParallelLinear",
        "ReplicatedLinear",
        "VocabParallelEmbedding",
        "ParallelLMHead",
        "LogitsProcessor",
        "Sampler",
    )
)
LAYER_SUFFIXES = ("RotaryEmbedding", "RMSNorm")
#: range labels for classes whose role has another name in the fused-op taxonomy
LAYER_ALIASES = {"MoERunner": "FusedMoE"}


def layer_label(cls_name: str) -> str | None:
    if cls_name in LAYER_CLASSES or cls_name.endswith(LAYER_SUFFIXES):
        return LAYER_ALIASES.get(cls_name, cls_name)
    return None
