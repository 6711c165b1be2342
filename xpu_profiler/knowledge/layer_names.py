"""What marks a model's decoder layers in a trace, and what tells their kinds apart.

Declarative tables, with where each name comes from:

- ``DECODER_LAYER``: module classes that are one decoder layer (``nn.Module: <Class>_<k>``
  frames of a ``with_stack`` trace, our live ``xpu_module:<Class>_<k>`` ranges). vLLM
  ``vllm/model_executor/models/*.py`` (``LlamaDecoderLayer``, ``Qwen3DecoderLayer``,
  ``Qwen3MoeDecoderLayer``, ``Qwen3NextDecoderLayer``, ``DeepseekV2DecoderLayer``,
  ``Glm4MoeDecoderLayer``, ``Gemma3DecoderLayer``, ``NemotronHMambaDecoderLayer``,
  ``JambaAttentionDecoderLayer``; gpt-oss: ``TransformerBlock``; GPT-2/J/BigCode, Bloom,
  MPT ``*Block``; GPT-NeoX ``GPTNeoXLayer``; Phi ``PhiLayer``; ChatGLM ``GLMBlock``),
  SGLang ``python/sglang/srt/models/*.py`` and Hugging Face transformers (the same
  ``*DecoderLayer`` names; ``GptOssDecoderLayer``).
- ``DRAFT_LAYER``: layers of a multi-token-prediction or draft model (vLLM
  ``deepseek_mtp.py`` ``DeepSeekMultiTokenPredictorLayer``, ``glm4_moe_mtp.py``,
  ``mimo_mtp.py``, ``qwen3_next_mtp.py``; EAGLE / Medusa heads in ``eagle*.py``,
  ``medusa.py``).
- ``GRAPH_PIECE``: the pieces of a piecewise-compiled vLLM model: one ``GraphModule``
  per piece, the model split at each attention op (vLLM ``compilation/backends.py``,
  ``splitting_ops``): pieces = layers + 1.
- ``ATTENTION_MODULE`` / ``MIXER_MODULE``: the token mixer each layer holds.
- ``SLIDING_KERNEL``: attention kernels whose name says they are windowed (TensorRT-LLM
  FMHA on Blackwell ``fmhaSm100aKernel_…PagedKvSlidingOrChunkedCausal…`` beside
  ``…PagedKvCausal…`` in vLLM gpt-oss; FlashInfer / vendor ``sliding_window`` variants).
- ``NOT_ANCHOR``: attention-family kernels that run once per forward or beside the
  attention itself (FlashInfer ``kv_indices``, FA3 ``scheduler_metadata``), never a layer's
  mark.
- Model config keys (Hugging Face ``config.json``): ``layer_types`` (gpt-oss, Gemma 3,
  Qwen2/3, Qwen3-Next: ``sliding_attention`` / ``full_attention`` / ``linear_attention``),
  ``sliding_window`` with ``sliding_window_pattern`` (Gemma 2/3: every N-th layer full) or
  ``use_sliding_window`` / ``max_window_layers`` (Qwen2), MoE placement
  ``first_k_dense_replace`` + ``moe_layer_freq`` (DeepSeek, GLM-4.5, Kimi),
  ``decoder_sparse_step`` + ``mlp_only_layers`` (Qwen2/3-MoE), ``num_nextn_predict_layers``
  (MTP layers after the last decoder layer).
"""

from __future__ import annotations

import re

DECODER_LAYER = re.compile(
    r"^(\w*(Decoder|Transformer)(Layer|Block)|TransformerBlock|GPT2Block|GPTJBlock|GPTBigCodeBlock|BloomBlock|"
    r"MPTBlock|GLMBlock|GPTNeoXLayer|PhiLayer|CodeGenBlock|\w*MultiTokenPredictorLayer)$"
)
DRAFT_LAYER = re.compile(r"MultiTokenPredictor|Mtp|MTP|NextN|Eagle|EAGLE|Medusa|Draft", re.IGNORECASE)
#: classes of a model's vision / audio tower: their blocks are no decoder layers
NOT_DECODER = re.compile(r"Vision|Visual|Vit|Siglip|Clip|Audio|Whisper|Encoder", re.IGNORECASE)
GRAPH_PIECE = re.compile(r"^GraphModule$")

ATTENTION_MODULE = re.compile(
    r"^(Attention|MLAAttention|MultiHeadAttention|RadixAttention|ChunkedLocalAttention|\w*SelfAttention|"
    r"\w+Attention)$"
)
MIXER_MODULE = re.compile(r"Mamba|GatedDeltaNet|LinearAttention|ShortConv|Lightning|DeltaAttention", re.IGNORECASE)
#: a module class that says its layer's attention is windowed (Llama 4's chunked local attention)
WINDOWED_MODULE = re.compile(r"ChunkedLocal|SlidingWindow|LocalAttention")

SLIDING_KERNEL = re.compile(r"SlidingOrChunked|sliding_?window|SlidingWindow|(?<![a-z])swa(?![a-z])", re.IGNORECASE)
#: attention-family kernels of the linear mixers (Mamba SSM scans, gated delta rule...)
LINEAR_KERNEL = re.compile(
    r"selective_scan|selective_state_update|ssd_|_chunk_(scan|state|cumsum)_fwd|_state_passing_fwd|"
    r"_bmm_chunk_fwd|gated_delta_rule|fused_recurrent|chunk_gla|chunk_kda|(?<![a-z])kda_|delta_rule|lightning_attn",
    re.IGNORECASE,
)
NOT_ANCHOR = re.compile(
    r"kv_indices|scheduler_metadata|get_mla_metadata|prepare_varlen|_metadata|reshape_and_cache|store_kvcache|"
    r"rotary|(?<![a-z])rope|_copy_page",
    re.IGNORECASE,
)

#: config values of ``layer_types`` → the layer's attention kind
LAYER_TYPE_KINDS = {
    "full_attention": "full",
    "attention": "full",
    "global": "full",
    "sliding_attention": "sliding",
    "sliding_window": "sliding",
    "local": "sliding",
    "chunked_attention": "sliding",
    "linear_attention": "linear",
    "mamba": "linear",
    "mamba2": "linear",
}
#: Nemotron-H / Jamba-style one-letter layer patterns (``hybrid_override_pattern``)
HYBRID_PATTERN_KINDS = {"M": "linear", "*": "full", "-": "none", "E": "none"}


def is_decoder_layer(cls: str) -> bool:
    """Whether a module class is one decoder layer (by its name)."""
    return bool(DECODER_LAYER.match(cls)) and not NOT_DECODER.search(cls)


def is_draft_layer(cls: str) -> bool:
    return bool(DRAFT_LAYER.search(cls))
