"""Which kernel or op name belongs to which fused op: ordered, declarative tables.

Three tables, each searched top to bottom, first match wins:

- ``PATTERNS``: regexes over kernel and op names (CUDA, ROCm, CPU ``aten::``/``_C::``
  ops of vLLM's CPU build, Kunlun ``xblas``/``kl3_*``/vllm-kunlun ops);
- ``MODULE_PATTERNS``: vLLM layer module class names (from ``nn.Module: X_0`` frames of
  ``with_stack`` traces, or our own ``xpu_module:X`` ranges);
- ``CUSTOM_OP``: which host ops are vLLM custom ops, whose name decides the fused op of
  everything they launch (the "launching op chain").

Users extend ``PATTERNS`` from a TOML file (``--taxonomy FILE``)::

    [[pattern]]
    regex = "my_fused_gemm_.*"
    fused_op = "gemm"

    [[module]]
    regex = "^MyNorm$"
    fused_op = "norm"

User rows go in front of the built-in ones.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from .errors import XpuProfilerError

FUSED_OPS = (
    "attention", "moe", "gemm", "norm", "activation", "rope", "kv_cache", "communication",
    "sampling", "embedding", "quantization", "convolution", "memcpy", "memset", "elementwise", "other",
)
OTHER = FUSED_OPS.index("other")

# Element-wise and tensor-bookkeeping aten ops: unfused work that is not "other".
_ELEMENTWISE_ATEN = (
    "add|add_|sub|sub_|mul|mul_|div|div_|pow|rsqrt|sqrt|exp|log|neg|abs|clamp|clamp_|"
    "maximum|minimum|max|min|mean|sum|prod|cumsum|where|masked_fill|masked_fill_|"
    "softmax|_softmax|log_softmax|_log_softmax|eq|ne|lt|le|gt|ge|logical_and|logical_or|"
    "bitwise_and|bitwise_or|reciprocal|sign|floor|ceil|round|remainder|fmod|lerp|"
    "cat|stack|index|index_put_|index_select|gather|scatter|scatter_|scatter_add_|"
    "repeat|repeat_interleave|flip|roll|tril|triu|outer|clone|contiguous|arange|"
    "zeros|zeros_like|ones|ones_like|full|full_like|empty|empty_like|empty_strided|new_empty|"
    "new_zeros|new_full|view|reshape|_reshape_alias|_unsafe_view|as_strided|slice|select|"
    "narrow|split|split_with_sizes|chunk|unbind|squeeze|unsqueeze|permute|transpose|t|expand|"
    "flatten|unflatten|view_as|detach|alias|lift_fresh|resolve_conj|resolve_neg|result_type|"
    "item|_local_scalar_dense|is_nonzero|nonzero|any|all|argmax|argmin|sort|numel|size|"
    "bucketize|searchsorted|pad|constant_pad_nd|_to_dim_order_copy|type_as|bernoulli_|uniform_|"
    "exponential_|normal_|rand|randn|randint|random_|set_|record_stream|_pin_memory|pin_memory|"
    "is_pinned|lift_fresh_copy|fill_|zero_|copy_|to|_to_copy|dropout|baddbmm_"
)

#: (regex, fused_op), searched in order over kernel and op names; case-insensitive.
PATTERNS: list[tuple[str, str]] = [
    # --- data movement --------------------------------------------------------------
    (r"^memcpy|^Memcpy |memcpy(htod|dtoh|dtod|async)|^cudaMemcpy|^hipMemcpy|^xpu_memcpy", "memcpy"),
    (r"^memset|^Memset |^cudaMemset|^hipMemset", "memset"),
    # --- communication (before anything that says "reduce") ----------------------------
    (r"nccl|rccl|all_?reduce|allgather|all_gather|reduce_scatter|reducescatter|all_?to_?all|"
     r"c10d::|gloo:|broadcast|cross_device_reduce|custom_ar|kl3_all_reduce|kl3_all_gather|"
     r"bkcl|xccl|send_recv|::send|::recv", "communication"),
    # --- KV cache writes (before attention: names often say "attn") ---------------------
    (r"reshape_and_cache|concat_and_cache|kv_cache_update|copy_blocks|swap_blocks|"
     r"cache_kernels|reshape_cache|write_to_kv_cache|store_kvcache|kv_cache_store", "kv_cache"),
    # --- MoE (before gemm and sampling: grouped GEMMs and top-k routing) ---------------
    (r"moe|fused_experts|topk_softmax|topk_sigmoid|grouped_topk|expert|moe_align|"
     r"count_and_sort|shuffle_rows|router", "moe"),
    # --- attention ------------------------------------------------------------------
    (r"attention|attn|flash_fwd|flash::|fmha|flashinfer|paged_attention|xformers|"
     r"scaled_dot_product|_efficient_attention|sdpa|batchprefill|batchdecode|"
     r"merge_attn_states|mla_|flashmla|cutlass_mla|lightning_attn|xfa|xft_?attention|"
     r"page_attn|mha_|splitkv|decode_attention|prefill_attention", "attention"),
    # --- rotary embedding -----------------------------------------------------------
    (r"rotary|rope", "rope"),
    # --- normalisation (incl. inductor-fused RMSNorm: mean·pow·rsqrt) -----------------
    (r"rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|norm_kernel|"
     r"native_layer_norm|aten::norm$|(mean.*pow|pow.*mean).*rsqrt", "norm"),
    # --- activations ----------------------------------------------------------------
    (r"act_and_mul|silu_and_mul|gelu_and_mul|mul_and_silu|swiglu|geglu|"
     r"aten::(silu|silu_|gelu|gelu_|relu|relu_|sigmoid|sigmoid_|tanh|tanh_|softplus|hardswish)$|"
     r"silu_kernel|gelu_kernel|relu_kernel|fatrelu|swigluoai", "activation"),
    # --- sampling -------------------------------------------------------------------
    (r"sampl|top_?k_?top_?p|top_p|aten::topk$|multinomial|apply_penalties|penalt|"
     r"gumbel|argmax_kernel|logprob", "sampling"),
    # --- embedding ------------------------------------------------------------------
    (r"embedding|embed_|aten::embedding", "embedding"),
    # --- quantised GEMMs are GEMMs; quantize/dequantize kernels are quantization ---------
    (r"scaled_mm|marlin|machete|awq_gemm|gptq_gemm|w8a8|w4a16|int8_gemm|fp8_gemm|"
     r"fp8_blockwise|block_fp8_matmul", "gemm"),
    (r"quant|dequant|fp8|int8|int4|nvfp4|mxfp", "quantization"),
    # --- convolution (cuDNN engines, causal conv1d of Mamba-style layers) -------------
    (r"conv(?!ert)|dgrad|wgrad|winograd|implicit_gemm|scudnn|cudnn::detail|im2col|col2im", "convolution"),
    # --- GEMM -----------------------------------------------------------------------
    (r"(?<!fb)gemm|matmul|aten::(mm|addmm|bmm|linear|matmul|baddbmm|_addmm_activation)$|"
     r"cutlass|cublas|cublaslt|hipblaslt|rocblas|xmma|sm\d+_|ampere_|volta_|turing_|"
     r"hopper_|Kernel2|splitKreduce|Cijk_|wvSplitK|LLMM1|onednn|dnnl|mkl|_C::.*mm$|"
     r"fc_cdnn|xblas|fc_fusion|fc_int|xdnn_fc", "gemm"),
    # --- unfused element-wise work ----------------------------------------------------
    (r"elementwise|vectorized_elementwise|unrolled_elementwise|reduce_kernel|"
     r"triton_(poi|red|per)_|CatArrayBatchedCopy|index_elementwise|fill_kernel|"
     r"copy_kernel|indexSelect|scatter_gather|compare_scalar|tensor_kernel_scan|"
     r"cub::|RadixSort|DeviceScan|DeviceReduce|DeviceSegmented|max_pool|avg_pool|adaptive_pool|"
     r"linearize_index|multi_tensor_apply|aten::diff$|aten::_foreach_|"
     r"^fbgemm::.*(permute|jagged|index|offsets|bounds|segment|pack|sort)|"
     rf"^aten::({_ELEMENTWISE_ATEN})$", "elementwise"),
]

#: (regex, fused_op) over vLLM layer module class names (instance suffix stripped).
MODULE_PATTERNS: list[tuple[str, str]] = [
    (r"^(RMSNorm|GemmaRMSNorm|LayerNorm|RMSNormGated|.*LayerNorm|.*RMSNorm)$", "norm"),
    (r"^(SiluAndMul|GeluAndMul|MulAndSilu|FatreluAndMul|SwigluOAIAndMul|GeluAndMulSparse|"
     r"NewGELU|FastGELU|QuickGELU|ReLUSquaredActivation|SiLU|GELU)$", "activation"),
    (r"RotaryEmbedding$|^RoPE", "rope"),
    (r"^(FusedMoE|SharedFusedMoE|.*FusedMoE)$", "moe"),
    (r"^(Attention|MLAAttention|MultiHeadAttention|EncoderOnlyAttention|CrossAttention|"
     r"ChunkedLocalAttention|MMEncoderAttention)$", "attention"),
    (r"^(QKVParallelLinear|MergedColumnParallelLinear|RowParallelLinear|ColumnParallelLinear|"
     r"ReplicatedLinear|QKVCrossParallelLinear|LinearBase|Linear|ParallelLMHead|"
     r"LogitsProcessor)$", "gemm"),
    (r"^(VocabParallelEmbedding|Embedding)$", "embedding"),
    (r"^(Sampler|TopKTopPSampler|RejectionSampler)$", "sampling"),
]

#: host ops that are vLLM (or plugin) custom ops: their name decides what they launch.
CUSTOM_OP = r"^(vllm|_C|_moe_C|_rocm_C|_C_cache_ops|_C_custom_ar|_vllm_fa\d?_C|_flashmla_C|" \
            r"vllm_kunlun|kunlun_ops|xspeedgate_ops|_kunlun_C|torch_xmlir|xtorch_ops)::"

MODULE_RANGE_PREFIXES = ("nn.Module: ", "xpu_module:")
_INSTANCE_SUFFIX = re.compile(r"_\d+$")


def module_class(range_name: str) -> str | None:
    """`nn.Module: RMSNorm_3` → `RMSNorm`; None when the name is not a module range."""
    for prefix in MODULE_RANGE_PREFIXES:
        if range_name.startswith(prefix):
            return _INSTANCE_SUFFIX.sub("", range_name[len(prefix):].strip())
    return None


def _compile(rows: Sequence[tuple[str, str]], what: str) -> list[tuple[re.Pattern, int]]:
    out = []
    for regex, fused in rows:
        if fused not in FUSED_OPS:
            raise XpuProfilerError(f"{what}: unknown fused op {fused!r} (known: {', '.join(FUSED_OPS)})")
        try:
            out.append((re.compile(regex, re.IGNORECASE), FUSED_OPS.index(fused)))
        except re.error as e:
            raise XpuProfilerError(f"{what}: bad regex {regex!r} ({e})") from None
    return out


def _kunlun_rows() -> list[tuple[str, str]]:
    try:
        from .taxonomy_kunlun import KUNLUN_PATTERNS
    except ImportError:
        return []
    return list(KUNLUN_PATTERNS)


@dataclass
class Taxonomy:
    """Compiled tables; `classify*` return indexes into FUSED_OPS (-1: no match)."""

    patterns: list[tuple[str, str]] = field(default_factory=lambda: _kunlun_rows() + PATTERNS)
    modules: list[tuple[str, str]] = field(default_factory=lambda: list(MODULE_PATTERNS))
    custom_op: str = CUSTOM_OP

    def __post_init__(self) -> None:
        self._patterns = _compile(self.patterns, "taxonomy")
        self._modules = _compile(self.modules, "taxonomy modules")
        self._custom = re.compile(self.custom_op)
        self._cache: dict[str, int] = {}

    def classify(self, name: str) -> int:
        """Fused op of a kernel or op name, -1 when no pattern matches."""
        hit = self._cache.get(name)
        if hit is None:
            hit = -1
            for rx, fused in self._patterns:
                if rx.search(name):
                    hit = fused
                    break
            self._cache[name] = hit
        return hit

    def classify_module(self, range_name: str) -> int:
        cls = module_class(range_name)
        if cls is None:
            return -1
        for rx, fused in self._modules:
            if rx.search(cls):
                return fused
        return -1

    def is_custom_op(self, name: str) -> bool:
        return bool(self._custom.match(name))

    def classify_many(self, names: Iterable[str]) -> list[int]:
        return [self.classify(n) for n in names]

    @staticmethod
    def from_file(path: str | Path) -> "Taxonomy":
        """Built-in tables with the user's rows in front."""
        path = Path(path)
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise XpuProfilerError(f"{path}: no such taxonomy file") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise XpuProfilerError(f"{path}: not valid TOML ({e})") from None
        rows, mods = [], []
        for key, out in (("pattern", rows), ("module", mods)):
            for i, row in enumerate(data.get(key, [])):
                if not isinstance(row, dict) or not isinstance(row.get("regex"), str) \
                        or not isinstance(row.get("fused_op"), str):
                    raise XpuProfilerError(f"{path}: [[{key}]] #{i + 1} needs string keys regex and fused_op")
                out.append((row["regex"], row["fused_op"]))
        try:
            return Taxonomy(patterns=rows + _kunlun_rows() + PATTERNS, modules=mods + MODULE_PATTERNS)
        except XpuProfilerError as e:
            raise XpuProfilerError(f"{path}: {e}") from None
