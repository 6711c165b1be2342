"""The shapes of the models users name (``analyze --model qwen3-30b-a3b``): the fields of each
model's ``config.json`` that the layer view and the MFU / bandwidth estimate read, so a known
name works with nothing downloaded. A real ``config.json`` (a directory, the file, the local
Hugging Face cache) always wins over this table.

Keyed by Hugging Face id (``model_aliases`` maps the names users write to it). Fields keep the
config's own names. Sources: each model's ``config.json`` on its Hugging Face page; GLM-5's
shape as published with its release (78 layers: 3 dense then 75 MoE, 256 routed experts of
2048, top-8, one shared expert; the same in the xLLM and slime model definitions). A model
whose shape could not be checked is left out rather than guessed (its name then needs a
``config.json``).
"""

from __future__ import annotations

from typing import Any


def _qwen3(hidden: int, layers: int, heads: int, inter: int, kv: int = 8) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": 128,
        "intermediate_size": inter,
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
    }


def _qwen3_moe(hidden: int, layers: int, heads: int, inter: int, moe_inter: int) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "intermediate_size": inter,
        "moe_intermediate_size": moe_inter,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
    }


def _llama(hidden: int, layers: int, heads: int, inter: int, head_dim: int = 128) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 8,
        "head_dim": head_dim,
        "intermediate_size": inter,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    }


def _glm_moe(arch: str, hidden: int, layers: int, heads: int, kv: int, inter: int, **moe: Any) -> dict[str, Any]:
    return {
        "architectures": [arch],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": 128,
        "intermediate_size": inter,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "torch_dtype": "bfloat16",
        **moe,
    }


_DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "head_dim": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "first_k_dense_replace": 3,
    "vocab_size": 129280,
    "torch_dtype": "bfloat16",
}


def _gpt_oss(layers: int, experts: int) -> dict[str, Any]:
    return {
        "architectures": ["GptOssForCausalLM"],
        "hidden_size": 2880,
        "num_hidden_layers": layers,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "intermediate_size": 2880,
        "num_local_experts": experts,
        "num_experts_per_tok": 4,
        "vocab_size": 201088,
        "layer_types": ["sliding_attention", "full_attention"] * (layers // 2),
        "torch_dtype": "bfloat16",
    }


#: Hugging Face id → the config fields the analysis reads
MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "zai-org/GLM-5": _glm_moe(
        "GlmMoeDsaForCausalLM",
        6144,
        78,
        64,
        64,
        12288,
        moe_intermediate_size=2048,
        n_routed_experts=256,
        first_k_dense_replace=3,
        vocab_size=154880,
    ),
    "zai-org/GLM-4.5": _glm_moe(
        "Glm4MoeForCausalLM",
        5120,
        92,
        96,
        8,
        12288,
        moe_intermediate_size=1536,
        n_routed_experts=160,
        first_k_dense_replace=3,
        vocab_size=151552,
    ),
    "zai-org/GLM-4.5-Air": _glm_moe(
        "Glm4MoeForCausalLM",
        4096,
        46,
        96,
        8,
        10944,
        moe_intermediate_size=1408,
        n_routed_experts=128,
        first_k_dense_replace=1,
        vocab_size=151552,
    ),
    "Qwen/Qwen3-0.6B": _qwen3(1024, 28, 16, 3072),
    "Qwen/Qwen3-1.7B": _qwen3(2048, 28, 16, 6144),
    "Qwen/Qwen3-4B": _qwen3(2560, 36, 32, 9728),
    "Qwen/Qwen3-8B": _qwen3(4096, 36, 32, 12288),
    "Qwen/Qwen3-14B": _qwen3(5120, 40, 40, 17408),
    "Qwen/Qwen3-32B": _qwen3(5120, 64, 64, 25600),
    "Qwen/Qwen3-30B-A3B": _qwen3_moe(2048, 48, 32, 6144, 768),
    "Qwen/Qwen3-30B-A3B-Instruct-2507": _qwen3_moe(2048, 48, 32, 6144, 768),
    "Qwen/Qwen3-235B-A22B": _qwen3_moe(4096, 94, 64, 12288, 1536),
    "Qwen/Qwen3-235B-A22B-Instruct-2507": _qwen3_moe(4096, 94, 64, 12288, 1536),
    "deepseek-ai/DeepSeek-V3": dict(_DEEPSEEK_V3),
    "deepseek-ai/DeepSeek-V3.1": dict(_DEEPSEEK_V3),
    "deepseek-ai/DeepSeek-R1": dict(_DEEPSEEK_V3),
    "meta-llama/Llama-3.1-8B-Instruct": _llama(4096, 32, 32, 14336),
    "meta-llama/Llama-3.1-70B-Instruct": _llama(8192, 80, 64, 28672),
    "meta-llama/Llama-3.3-70B-Instruct": _llama(8192, 80, 64, 28672),
    "meta-llama/Llama-3.2-1B-Instruct": _llama(2048, 16, 32, 8192, head_dim=64),
    "meta-llama/Llama-3.2-3B-Instruct": _llama(3072, 28, 24, 8192),
    "openai/gpt-oss-20b": _gpt_oss(24, 32),
    "openai/gpt-oss-120b": _gpt_oss(36, 128),
}


def known_config(hf_id: str) -> dict[str, Any] | None:
    """A copy of the table's config for a Hugging Face id, None when the table has none."""
    cfg = MODEL_CONFIGS.get(hf_id)
    return dict(cfg) if cfg is not None else None
