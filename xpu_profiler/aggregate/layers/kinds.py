"""The kind of each decoder layer: its token mixer (full attention, sliding window,
linear / SSM), its MLP (MoE or dense) and its role (decoder or draft / MTP).

Evidence, strongest first: the kernels the layer ran (an attention kernel whose name says
it is windowed, a Mamba / gated-delta-rule scan, MoE time), its module class
(``NemotronHMambaDecoderLayer``, ``DeepSeekMultiTokenPredictorLayer``), then the model
config (``layer_types``, ``sliding_window`` patterns, MoE placement), which also settles
what kernels cannot: whether a plain attention kernel ran a window. Without either, an
attention layer is "attention" (window unknown), never guessed "full"; when such layers
run different attention kernels, the kernel names tell them apart.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...knowledge import layer_names as ln

#: config keys that say something about attention windows (absent all: full attention)
WINDOW_KEYS = (
    "sliding_window",
    "use_sliding_window",
    "sliding_window_pattern",
    "attention_chunk_size",
    "layer_types",
    "max_window_layers",
    "interleaved_sliding_window",
)


class ConfigLayers(NamedTuple):
    """What a model config says of its layers (None where it says nothing)."""

    layers: int
    mtp: int  # MTP layers after the decoder layers (num_nextn_predict_layers)
    attention: list[str] | None  # per layer: full, sliding, linear, none
    mlp: list[str] | None  # per layer: moe, dense


def _int(cfg: dict, *keys: str) -> int | None:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
    return None


def config_layers(cfg: dict[str, Any] | None) -> ConfigLayers | None:
    """The layer structure of a Hugging Face config (its ``text_config`` for multimodal ones)."""
    if not isinstance(cfg, dict):
        return None
    if isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]
    n = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if not n or n <= 0:
        return None
    return ConfigLayers(n, _int(cfg, "num_nextn_predict_layers") or 0, _attention(cfg, n), _mlp(cfg, n))


def _attention(cfg: dict, n: int) -> list[str] | None:
    types = cfg.get("layer_types") or cfg.get("layers_block_type")
    if isinstance(types, list) and len(types) >= n and all(isinstance(t, str) for t in types):
        kinds = [ln.LAYER_TYPE_KINDS.get(t.lower()) for t in types[:n]]
        return [k or "full" for k in kinds] if all(k is not None for k in kinds) else None
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) >= n:
        return [ln.HYBRID_PATTERN_KINDS.get(c, "full") for c in pattern[:n]]
    if not any(k in cfg for k in WINDOW_KEYS):  # nothing about windows: every layer attends to all
        return ["full"] * n
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return ["full"] * n if not cfg.get("attention_chunk_size") else None
    every = _int(cfg, "sliding_window_pattern")
    if every and every > 1:  # Gemma 2/3: every N-th layer global, the others local
        return ["full" if (i + 1) % every == 0 else "sliding" for i in range(n)]
    first_full = _int(cfg, "max_window_layers")
    if cfg.get("use_sliding_window") and first_full is not None:  # Qwen2: layers from max_window_layers slide
        return ["sliding" if i >= first_full else "full" for i in range(n)]
    return None


def _mlp(cfg: dict, n: int) -> list[str] | None:
    experts = _int(cfg, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
    if not experts:
        return ["dense"] * n if "intermediate_size" in cfg else None
    dense_first = _int(cfg, "first_k_dense_replace") or 0
    freq = max(1, _int(cfg, "moe_layer_freq", "decoder_sparse_step") or 1)
    listed = cfg.get("mlp_only_layers")
    only: list[Any] = listed if isinstance(listed, list) else []
    step_rule = "decoder_sparse_step" in cfg  # Qwen-MoE: (i + 1) % step == 0; DeepSeek: (i - k) % freq == 0
    out = []
    for i in range(n):
        moe = i >= dense_first and i not in only
        moe = moe and ((i + 1) % freq == 0 if step_rule else (i - dense_first) % freq == 0)
        out.append("moe" if moe else "dense")
    return out


class LayerEvidence(NamedTuple):
    """What one layer ran, for its kind."""

    module: str  # its frame's class, "" without one
    attention_kernel: str  # the attention-family kernel it spent most time in, ""
    sliding: bool  # an attention kernel whose name says windowed
    linear: bool  # a linear-attention / SSM kernel
    attention_ns: int
    moe_ns: int
    gemm_ns: int
    later_forward: bool  # in a forward after the main one (draft / MTP)


def layer_kinds(layers: list[LayerEvidence], cfg: ConfigLayers | None, main: int) -> list[dict[str, str]]:
    """Per layer: attention, mlp, role, kind (a label such as "sliding/moe") and the
    sources that decided them. ``main``: layers of the main forward (the rest are draft)."""
    any_sliding = any(x.sliding for x in layers)
    fit = cfg if cfg is not None and cfg.layers == main else None  # the config speaks of these layers
    out = []
    for i, x in enumerate(layers):
        draft = x.later_forward or ln.is_draft_layer(x.module) or i >= main
        attn, a_src = _attention_kind(x, any_sliding)
        if fit is not None and fit.attention is not None and i < fit.layers:
            if attn == "attention" or (attn == "none" and x.attention_ns == 0):
                attn, a_src = fit.attention[i], "config"
        if x.moe_ns > 0:
            mlp, m_src = "moe", "kernels"
        elif fit is not None and fit.mlp is not None and i < fit.layers:
            mlp, m_src = fit.mlp[i], "config"
        elif x.gemm_ns > 0:
            mlp, m_src = "dense", "kernels"
        else:
            mlp, m_src = "unknown", ""
        out.append(
            {
                "attention": attn,
                "mlp": mlp,
                "role": "draft" if draft else "decoder",
                "attention_source": a_src,
                "mlp_source": m_src,
            }
        )
    # plain attention layers that run different kernels: told apart by those
    plain = {x.attention_kernel for x, k in zip(layers, out) if k["attention"] == "attention" and x.attention_kernel}
    for x, k in zip(layers, out):
        variant = f"attention[{x.attention_kernel}]" if k["attention"] == "attention" and len(plain) > 1 else ""
        label = f"{variant or k['attention']}/{k['mlp']}"
        k["kind"] = f"draft {label}" if k["role"] == "draft" else label
    return out


def _attention_kind(x: LayerEvidence, any_sliding: bool) -> tuple[str, str]:
    if x.linear or ln.MIXER_MODULE.search(x.module):
        return "linear", "kernels" if x.linear else "module"
    if x.sliding or ln.WINDOWED_MODULE.search(x.module):
        return "sliding", "kernels" if x.sliding else "module"
    if x.attention_ns > 0:
        # beside windowed layers a plain attention kernel is the full-attention one
        return ("full", "kernels") if any_sliding else ("attention", "")
    return "none", ""
