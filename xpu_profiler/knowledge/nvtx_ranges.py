"""Ranges the engines write around their work (NVTX under Nsight Systems, ``record_function``
under torch.profiler) that are step or layer evidence, besides the step annotations of
``step_grammar``.

- **Model-runner scopes** (vLLM): with ``VLLM_NVTX_SCOPES_FOR_PROFILING=1`` (NVTX) or
  ``VLLM_CUSTOM_SCOPES_FOR_PROFILING=1`` (``record_function``) the model runner wraps each part
  of a step: ``gpu_model_runner: preprocess | forward | postprocess | sample | draft | bookkeep |
  eplb`` (vLLM 0.12 on: ``vllm/v1/worker/gpu_model_runner.py``, ``record_function_or_nullcontext``
  in ``vllm/v1/utils.py``); vLLM 0.11 spelled them ``Preprocess``, ``Forward``, ... A step opens
  with ``preprocess`` (or, without one, ``forward``).
- **Layer-wise module ranges**: vLLM ``--enable-layerwise-nvtx-tracing`` (``vllm/utils/
  nvtx_pytorch_hooks.py``), SGLang ``--enable-layerwise-nvtx-marker`` (``sglang/srt/utils/
  nvtx_pytorch_hooks.py``) and TensorRT-LLM ``enable_layerwise_nvtx_marker``
  (``tensorrt_llm/_torch/pyexecutor/layerwise_nvtx_marker.py``) push one range per module call
  named by the repr of a dict: ``{'Module': 'LlamaForCausalLM.model.layers.0.self_attn.qkv_proj',
  'TrainableParams': {...}, 'Inputs': [[7, 4096]]}`` (vLLM also writes a near-zero ``{'Module':
  ..., 'Outputs': ...}`` range after each call: no module range). The module's class is not in
  the name, its path is: ``LAYERWISE_LEAVES`` gives the class a path's last part stands for, by
  the attribute names the models use (vLLM ``vllm/model_executor/models/llama.py``,
  ``qwen3_moe.py``, ``deepseek_v2.py``, ``gpt2.py``; Hugging Face ``modeling_*.py``).
- **Host loop ranges** that name a part of the engine's step loop: TensorRT-LLM's
  ``_schedule``, ``_fetch_new_requests``, ``_prepare_inputs``, ``_sample_async``,
  ``_update_requests`` (py_executor.py, domain "TensorRT-LLM"), vLLM's ``schedule: ...`` and
  ``llm_engine step: ...`` scopes, SGLang's ``scheduler.<stage>`` (``SGLANG_ENABLE_NVTX_SCHEDULER=1``).
"""

from __future__ import annotations

import re

#: vLLM's model-runner scopes (either spelling); group 1 is the part, lower-cased
RUNNER_SCOPE = re.compile(
    r"^(?:gpu_model_runner: (preprocess|forward|postprocess|sample|draft|bookkeep|eplb)|"
    r"(Preprocess|Forward|Postprocess|Sample|Draft|Bookkeep|EPLB))$"
)
#: the scope a step opens with, and the one every step has
OPENING_SCOPE, FORWARD_SCOPE = "preprocess", "forward"


def runner_scope(name: str) -> str | None:
    """``gpu_model_runner: forward`` → ``forward``; None when the name is no runner scope."""
    m = RUNNER_SCOPE.match(name)
    if not m:
        return None
    return (m.group(1) or m.group(2)).lower()


#: how every layer-wise module range begins (a dict's repr)
LAYERWISE_PREFIX = "{'Module': '"
_LAYERWISE = re.compile(r"^\{'Module': '([^']*)'")

#: (pattern over a module path's last parts, the class it stands for): first match wins. The
#: classes are the ones the module tables know (``taxonomy.MODULE_PATTERNS``,
#: ``layer_names``): a decoder layer, the attention block and its inner attention op, linears,
#: norms, embeddings, MoE experts, the sampler
LAYERWISE_LEAVES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?:^|\.)(?:layers|h|blocks|block|layer|decoder_layers)\.\d+$"), "DecoderLayer"),
    (re.compile(r"\.(?:self_attn|self_attention|attention|attn)\.attn$"), "Attention"),
    (re.compile(r"\.(?:self_attn|self_attention|attention|attn|cross_attn)$"), "SelfAttention"),
    (re.compile(r"\.(?:linear_attn|linear_attention)$"), "LinearAttention"),
    (
        re.compile(
            r"\.(?:qkv_proj|q_proj|k_proj|v_proj|o_proj|out_proj|query_key_value|dense|c_attn|c_proj|c_fc|"
            r"gate_up_proj|up_proj|gate_proj|down_proj|fc1|fc2|w1|w2|w3|wqkv|wo|q_a_proj|q_b_proj|"
            r"kv_a_proj_with_mqa|kv_b_proj|fused_qkv_a_proj|gate|shared_expert_gate|router)$"
        ),
        "Linear",
    ),
    (re.compile(r"\.(?:experts)$"), "FusedMoE"),
    (
        re.compile(
            r"\.(?:input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm|"
            r"norm|final_layernorm|ln_f|ln_1|ln_2|q_norm|k_norm|q_a_layernorm|kv_a_layernorm)$"
        ),
        "RMSNorm",
    ),
    (re.compile(r"\.(?:rotary_emb)$"), "RotaryEmbedding"),
    (re.compile(r"\.(?:act_fn|act)$"), "SiluAndMul"),
    (re.compile(r"\.(?:embed_tokens|wte|word_embeddings|tok_embeddings|embedding)$"), "VocabParallelEmbedding"),
    (re.compile(r"\.(?:lm_head)$"), "ParallelLMHead"),
    (re.compile(r"\.(?:logits_processor)$"), "LogitsProcessor"),
    (re.compile(r"\.(?:sampler)$"), "Sampler"),
    (re.compile(r"\.(?:mlp|feed_forward|block_sparse_moe|ffn|moe)$"), "MLP"),
]


def layerwise_class(range_name: str) -> str | None:
    """The module class a layer-wise range stands for (``LayerwiseLeaves``), its path's last
    part where no row speaks; None for a range that is no module call (the ``Outputs`` range,
    any other name)."""
    m = _LAYERWISE.match(range_name)
    if not m:
        return None
    if "'Inputs'" not in range_name and "'Outputs'" in range_name:
        return None
    path = m.group(1)
    for rx, cls in LAYERWISE_LEAVES:
        if rx.search(path):
            return cls
    return path.rsplit(".", 1)[-1] or None


#: host ranges that name a part of an engine's step loop → what that part is (the host
#: causes of a step read them)
LOOP_RANGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^_schedule$|^schedule: |^scheduler\.(get_next_batch_to_run|process_queue)$"), "scheduler"),
    (re.compile(r"^_fetch_new_requests$|^scheduler\.(recv_requests|process_input_requests)$"), "request intake"),
    (re.compile(r"^_prepare_inputs$|^gpu_model_runner: preprocess$|^Preprocess$"), "input preparation"),
    (re.compile(r"^_sample_async$|^gpu_model_runner: sample$|^Sample$"), "sampler"),
    (
        re.compile(
            r"^_update_requests$|^_handle_responses$|^llm_engine step: process_outputs$|^scheduler\.process_batch_result$"
        ),
        "output processing",
    ),
]
