"""An analytic estimate of each step's FLOPs and bytes from the model config and token
counts, the way vLLM's own MFU estimate (``vllm/v1/metrics/perf.py``) models a step:

- GEMMs: QKV and output projections ``2·T·D·(q+2kv)·d`` and ``2·T·q·d·D``, the gated
  dense MLP ``2·3·D·I·T``, the lm_head ``2·D·V`` per logits token; their weights are read
  once per step, their inputs and outputs once each;
- attention: ``4·q·d`` per (token, context token) pair; reads the KV cache of the
  context ``2·ctx·kv·d`` and writes the new tokens' K and V;
- MoE: routed experts ``2·3·D·I_moe`` per token per activated expert, shared experts per
  token; the weights of the experts the step's tokens were routed to read once: the
  expected number of distinct experts ``E·(1 − (1 − k/E)^T)`` for T tokens each routed to k
  of E experts (uniform routing; never more than ``T·k`` nor ``E``: a decode step of one
  token reads k experts' weights, not all of them).

Per rank (TP divides heads, intermediate sizes and the vocabulary). Context lengths
come from the requests table (prompt length plus tokens generated so far, interpolated
between first token and finish); without one, decode attention reads are left out and
the row says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import XpuProfilerError
from ..core.profile import Profile
from ..core.run_info import RunInfo

DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8": 1,
    "float8_e4m3fn": 1,
    "int8": 1,
}
#: engine dtype → key of DeviceSpec.peak_flops
PEAK_KEY = {
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
}


@dataclass(frozen=True)
class ModelShape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int
    vocab: int
    moe_layers: int = 0
    experts: int = 0
    topk: int = 0
    moe_inter: int = 0
    shared: int = 0  # shared experts (each of moe_inter)
    wbytes: int = 2
    tp: int = 1


#: counts of layers (and layer indices and periods): the deepest real models have a few hundred
MAX_LAYERS = 10_000
#: sizes (widths, heads, experts, vocabulary, window tokens): each is a tensor dimension or a
#: token count that PyTorch and vLLM's kernels index with 32-bit integers
MAX_SIZE = 2**31
LAYER_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "num_nextn_predict_layers",
    "first_k_dense_replace",
    "decoder_sparse_step",
    "moe_layer_freq",
    "max_window_layers",
    "sliding_window_pattern",
)
SIZE_FIELDS = (
    "hidden_size",
    "d_model",
    "num_attention_heads",
    "n_head",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "ffn_dim",
    "n_inner",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "vocab_size",
    "num_experts",
    "n_routed_experts",
    "num_local_experts",
    "moe_num_experts",
    "num_experts_per_tok",
    "moe_topk",
    "n_shared_experts",
    "num_shared_experts",
    "sliding_window",
    "attention_chunk_size",
)
#: a model has at least one of each of these (a config that says 0 is a mistake)
AT_LEAST_ONE = {"num_hidden_layers", "n_layer", "num_layers", "n_layers", "hidden_size", "d_model"}
AT_LEAST_ONE |= {"num_attention_heads", "n_head", "num_key_value_heads", "head_dim", "vocab_size"}


def check_model_config(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """``cfg`` itself when each size the estimates and the layer view read (of its
    ``text_config`` for multimodal ones) is a whole number in range: 0 to ``MAX_LAYERS``
    for layer counts, 0 to ``MAX_SIZE`` for sizes, at least 1 for those every model has;
    absent or null is unknown. Any other value (text, a bool, NaN, Infinity, a fraction, a
    negative or larger number) refuses the whole config in one line naming ``where`` and
    the field: no figure is estimated from a model no engine could run."""
    text = cfg.get("text_config")
    fields, prefix = (text, "text_config.") if isinstance(text, dict) else (cfg, "")
    for key in LAYER_FIELDS + SIZE_FIELDS:
        value = fields.get(key)
        if value is None:
            continue
        top = MAX_LAYERS if key in LAYER_FIELDS else MAX_SIZE
        low = 1 if key in AT_LEAST_ONE else 0
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole or not low <= value <= top:
            said = f"{value!r:.40}" if not isinstance(value, int) or abs(value) < 10**40 else "a 40+ digit number"
            raise XpuProfilerError(f"{where}: {prefix}{key} must be a whole number from {low} to {top:,}, not {said}")
    return cfg


def model_config(run: RunInfo) -> dict[str, Any] | None:
    """The model's config.json: recorded in the run, else read from the model's directory."""
    cfg = run.get("model_config")
    if isinstance(cfg, dict):
        return check_model_config(cfg, "the model config")
    engine = run.get("engine")
    engine = engine if isinstance(engine, dict) else {}
    for where in (run.get("model_path"), engine.get("model"), run.get("model")):
        if isinstance(where, str) and where:
            f = Path(where) / "config.json"
            try:
                if f.is_file():
                    data = json.loads(f.read_text(encoding="utf-8"))
                    return check_model_config(data, str(f)) if isinstance(data, dict) else None
            except (OSError, ValueError):
                continue
    return None


def _int(cfg: dict, *keys: str, default: int = 0) -> int:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
    return default


def model_shape(cfg: dict, dtype: str | None, tp: int = 1) -> ModelShape | None:
    """The sizes the estimate needs; None when the config lacks the basic ones."""
    text = cfg.get("text_config")
    cfg = text if isinstance(text, dict) else cfg
    layers, hidden = _int(cfg, "num_hidden_layers", "n_layer", "num_layers"), _int(cfg, "hidden_size", "d_model")
    heads = _int(cfg, "num_attention_heads", "n_head")
    vocab = _int(cfg, "vocab_size")
    if not (layers and hidden and heads and vocab):
        return None
    kv = _int(cfg, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, "head_dim", default=hidden // heads)
    experts = _int(cfg, "num_experts", "n_routed_experts", "num_local_experts")
    moe_layers = 0
    if experts:
        dense_first = _int(cfg, "first_k_dense_replace")
        step = max(1, _int(cfg, "decoder_sparse_step", default=1))
        listed = cfg.get("mlp_only_layers")
        only = listed if isinstance(listed, list) else []
        moe_layers = sum(1 for i in range(dense_first, layers) if (i + 1) % step == 0 and i not in only)
    inter = _int(cfg, "intermediate_size", "ffn_dim", "n_inner", default=4 * hidden)
    moe_inter = _int(cfg, "moe_intermediate_size", default=inter)
    shared = _int(cfg, "n_shared_experts", "num_shared_experts")
    if not shared and _int(cfg, "shared_expert_intermediate_size"):
        shared = max(1, _int(cfg, "shared_expert_intermediate_size") // max(moe_inter, 1))
    wbytes = DTYPE_BYTES.get(str(dtype or cfg.get("torch_dtype") or "").replace("torch.", ""), 2)
    return ModelShape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        inter=inter,
        vocab=vocab,
        moe_layers=moe_layers,
        experts=experts,
        topk=_int(cfg, "num_experts_per_tok", "moe_topk", default=2 if experts else 0),
        moe_inter=moe_inter,
        shared=shared,
        wbytes=wbytes,
        tp=max(1, int(tp or 1)),
    )


def decode_context(profile: Profile, rows: np.ndarray) -> np.ndarray | None:
    """Per step row: the summed context length of the requests it decoded (prompt plus
    tokens generated by then), from the requests table; None without one.

    Each request contributes ``prompt + output·(t − first)/(finish − first)`` while
    ``first ≤ t ≤ finish``: a sum of linear terms, evaluated with prefix sums over the
    sorted first-token and finish times (no steps × requests matrix)."""
    req, steps = profile.requests, profile.steps
    if not len(req):
        return None
    ok = (req["first_token"] >= 0) & (req["finish"] > req["first_token"])
    if not ok.any():
        return None
    t0, t1 = req["first_token"][ok].astype(np.float64), req["finish"][ok].astype(np.float64)
    slope = req["output_len"][ok].astype(np.float64) / (t1 - t0)
    const = req["prompt_len"][ok].astype(np.float64) - slope * t0
    t = steps["start"][rows].astype(np.float64)

    def active_sum(x: np.ndarray) -> np.ndarray:
        o0, o1 = np.argsort(t0), np.argsort(t1)
        c0 = np.concatenate([[0.0], np.cumsum(x[o0])])
        c1 = np.concatenate([[0.0], np.cumsum(x[o1])])
        return c0[np.searchsorted(t0[o0], t, side="right")] - c1[np.searchsorted(t1[o1], t, side="left")]

    return t * active_sum(slope) + active_sum(const)


def step_costs(
    shape: ModelShape,
    prefill_tokens: np.ndarray,
    decode_tokens: np.ndarray,
    prefill_reqs: np.ndarray,
    decode_ctx: np.ndarray | None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per step (one rank): component → (FLOPs, bytes). Components: gemm, attention, moe."""
    s = shape
    tp = s.tp
    q, kv = max(1, s.heads // tp), max(1, s.kv_heads // tp)
    d, D, L = s.head_dim, s.hidden, s.layers
    inter, vocab = s.inter // tp, s.vocab // tp
    Ld, Lm = L - s.moe_layers, s.moe_layers
    b = s.wbytes
    pt, dt = prefill_tokens.astype(np.float64), decode_tokens.astype(np.float64)
    T = pt + dt
    logits = np.minimum(prefill_reqs.astype(np.float64), pt) + dt
    # GEMMs: projections, dense MLP, lm_head
    proj_w = D * (q + 2 * kv) * d + q * d * D
    gemm_f = 2 * T * proj_w * L + 2 * T * D * 3 * inter * Ld + 2 * logits * D * vocab
    gemm_w = (proj_w * L + 3 * D * inter * Ld + D * vocab) * b
    gemm_a = (
        (T * (D + (q + 2 * kv) * d) + T * (q * d + D)) * L * b
        + T * (D + 2 * inter + inter + D) * Ld * b
        + logits * (D + vocab) * b
    )
    gemm_bytes = np.where(T > 0, gemm_w, 0) + gemm_a
    # attention: prefill tokens attend to about half their prompt each (causal), decode tokens to their context
    reqs = np.maximum(prefill_reqs.astype(np.float64), 1)
    pre_ctx_prod = pt * (pt / reqs) / 2
    dec_ctx = decode_ctx if decode_ctx is not None else np.zeros(len(T))
    attn_f = 4 * q * d * L * (pre_ctx_prod + dec_ctx)
    # K/V of the context read once, the new tokens' K/V written, Q read and O written
    attn_bytes = 2 * kv * d * L * b * (pt + dec_ctx + T) + 2 * T * q * d * L * b
    # MoE experts
    moe_f = np.zeros(len(T))
    moe_bytes = np.zeros(len(T))
    if Lm and s.experts:
        mi = s.moe_inter // tp
        act = T * s.topk
        moe_f = 2 * D * 3 * mi * (act + T * s.shared) * Lm
        experts_read = routed_experts(T, s.topk, s.experts) + s.shared
        moe_bytes = 3 * D * mi * experts_read * Lm * b + (act + T * s.shared) * (D + 3 * mi + D) * Lm * b
    return {"gemm": (gemm_f, gemm_bytes), "attention": (attn_f, attn_bytes), "moe": (moe_f, moe_bytes)}


def routed_experts(tokens: np.ndarray, topk: int, experts: int) -> np.ndarray:
    """The expected number of distinct experts ``T`` tokens are routed to, each to ``topk``
    distinct experts of ``experts`` chosen uniformly: ``E·(1 − (1 − k/E)^T)``, bounded by
    ``T·k`` and ``E``."""
    if experts <= 0 or topk <= 0:
        return np.zeros(len(tokens))
    k = min(topk, experts)
    t = tokens.astype(np.float64)
    return np.minimum(experts * (1.0 - (1.0 - k / experts) ** t), t * k)
