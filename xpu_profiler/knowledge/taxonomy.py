"""Which kernel or op name belongs to which fused op: ordered, declarative tables.

Three tables, each searched top to bottom, first match wins:

- ``PATTERNS``: rules over kernel and op names (CUDA, ROCm, CPU ``aten::``/``_C::``
  ops of vLLM's CPU build, Kunlun ``xblas``/``kl3_*``/vllm-kunlun ops);
- ``MODULE_PATTERNS``: layer module class names (from ``nn.Module: X_0`` frames of
  ``with_stack`` traces, or our own ``xpu_module:X`` ranges);
- ``CUSTOM_OP``: which host ops are custom ops of vLLM, SGLang or a kernel library,
  whose name decides the fused op of everything they launch (the "launching op chain").

**Structure before detail.** A name is classified by its structural family first,
in ``FAMILIES`` order: data movement, the vendor runtime's plain tensor kernels,
communication, MoE (expert GEMMs, routing, top-k, align/sort, permute, finalize),
KV-cache writes, attention (and other sequence mixers), rope, norm, convolution,
GEMM (dense and quantised), sampling, embedding — and only then by the epilogue
and dtype words: activation (``swiglu``, ``silu``...), quantization (``quant``,
``fp8``, ``mxfp4``...), element-wise. So ``_matmul_ogs_NNT_bf16xbf16xmxfp4_..._swiglu``
is an MoE expert GEMM, ``fp8gemm_bf16_blockscale`` a GEMM, and "quantization" only
holds kernels that quantize or dequantize. ``rules()`` merges the vendor rows of
``taxonomy_kunlun`` into the same family order.

Users extend the tables from a TOML file (``--taxonomy FILE``); their rows go in
front of the built-in ones::

    [[pattern]]
    regex = "my_fused_gemm_.*"
    fused_op = "gemm"
    note = "our in-house GEMM"      # optional

    [[module]]
    regex = "^MyNorm$"
    fused_op = "norm"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import XpuProfilerError
from ..core.records import MODULE_RANGE_PREFIX
from ..core.toml import TOMLDecodeError, loads
from .fused_ops import FAMILIES, FUSED_OPS, Rule
from .kernels_generic import PATTERNS
from .kernels_kunlun import KUNLUN_PATTERNS

#: (regex, fused_op) over layer module class names (instance suffix stripped).
MODULE_PATTERNS: list[tuple[str, str]] = [
    (r"^(RMSNorm|GemmaRMSNorm|LayerNorm|RMSNormGated|.*LayerNorm|.*RMSNorm)$", "norm"),
    (
        r"^(SiluAndMul|GeluAndMul|MulAndSilu|FatreluAndMul|SwigluOAIAndMul|GeluAndMulSparse|"
        r"NewGELU|FastGELU|QuickGELU|ReLUSquaredActivation|SiLU|GELU)$",
        "activation",
    ),
    (r"RotaryEmbedding$|^RoPE", "rope"),
    (r"^(FusedMoE|SharedFusedMoE|.*FusedMoE|EPMoE|DeepEPMoE|TopK|FusedTopK)$", "moe"),
    (
        r"^(Attention|MLAAttention|MultiHeadAttention|EncoderOnlyAttention|CrossAttention|"
        r"ChunkedLocalAttention|MMEncoderAttention|RadixAttention)$",
        "attention",
    ),
    (
        r"^(QKVParallelLinear|MergedColumnParallelLinear|RowParallelLinear|ColumnParallelLinear|"
        r"ReplicatedLinear|QKVCrossParallelLinear|LinearBase|Linear|ParallelLMHead|"
        r"LogitsProcessor)$",
        "gemm",
    ),
    (r"^(VocabParallelEmbedding|Embedding)$", "embedding"),
    (r"^(Sampler|TopKTopPSampler|RejectionSampler)$", "sampling"),
]

#: host ops that are custom ops (vLLM, SGLang, kernel libraries, vendor plugins): their
#: name decides what they launch.
CUSTOM_OP = (
    r"^(vllm|_C|_moe_C|_rocm_C|_C_cache_ops|_C_custom_ar|_vllm_fa\d?_C|_flashmla_C|"
    r"sgl_kernel|sglang|sglang_profiler|aiter|flashinfer|trtllm|"
    r"vllm_kunlun|kunlun_ops|xspeedgate_ops|_kunlun_C|torch_xmlir|xtorch_ops)::"
)

#: the range our live collector opens around each vLLM layer module
OUR_MODULE_PREFIX = MODULE_RANGE_PREFIX
#: names of module ranges: torch's ``with_stack`` frames, and ours
MODULE_RANGE_PREFIXES = ("nn.Module: ", OUR_MODULE_PREFIX)
_INSTANCE_SUFFIX = re.compile(r"_\d+$")


def module_class(range_name: str) -> str | None:
    """`nn.Module: RMSNorm_3` → `RMSNorm`; None when the name is not a module range."""
    for prefix in MODULE_RANGE_PREFIXES:
        if range_name.startswith(prefix):
            return _INSTANCE_SUFFIX.sub("", range_name[len(prefix) :].strip())
    return None


def rules() -> list[Rule]:
    """The built-in table: generic and vendor rows merged family by family (vendor rows
    first within a family, each table's own order kept)."""
    rank = {f: i for i, f in enumerate(FAMILIES)}
    rows = [(rank[r.family], 0, i, r) for i, r in enumerate(KUNLUN_PATTERNS)]
    rows += [(rank[r.family], 1, i, r) for i, r in enumerate(PATTERNS)]
    return [r for *_, r in sorted(rows, key=lambda t: t[:3])]


def _compile(rows: Sequence[Sequence[str]], what: str) -> list[tuple[re.Pattern, int]]:
    out = []
    for row in rows:
        regex, fused = row[0], row[1]
        if fused not in FUSED_OPS:
            raise XpuProfilerError(f"{what}: unknown fused op {fused!r} (known: {', '.join(FUSED_OPS)})")
        try:
            out.append((re.compile(regex, re.IGNORECASE), FUSED_OPS.index(fused)))
        except re.error as e:
            raise XpuProfilerError(f"{what}: bad regex {regex!r} ({e})") from None
    return out


@dataclass
class Taxonomy:
    """Compiled tables; `classify*` return indexes into FUSED_OPS (-1: no match).

    ``patterns`` rows are ``Rule``s or plain ``(regex, fused_op)`` pairs."""

    patterns: list = field(default_factory=rules)
    modules: list[tuple[str, str]] = field(default_factory=lambda: list(MODULE_PATTERNS))
    custom_op: str = CUSTOM_OP

    def __post_init__(self) -> None:
        self._patterns = _compile(self.patterns, "taxonomy")
        self._modules = _compile(self.modules, "taxonomy modules")
        self._custom = re.compile(self.custom_op)
        self._cache: dict[str, int] = {}

    def rule_index(self, name: str) -> int:
        """Row of ``patterns`` that decides a name, -1 when none matches."""
        hit = self._cache.get(name)
        if hit is None:
            hit = -1
            for i, (rx, _) in enumerate(self._patterns):
                if rx.search(name):
                    hit = i
                    break
            self._cache[name] = hit
        return hit

    def classify(self, name: str) -> int:
        """Fused op of a kernel or op name, -1 when no pattern matches."""
        i = self.rule_index(name)
        return self._patterns[i][1] if i >= 0 else -1

    def explain(self, name: str) -> tuple | None:
        """The row that decides a name (a ``Rule`` for built-in rows), or None."""
        i = self.rule_index(name)
        return self.patterns[i] if i >= 0 else None

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
    def from_file(path: str | Path) -> Taxonomy:
        """Built-in tables with the user's rows in front."""
        path = Path(path)
        try:
            data = loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise XpuProfilerError(f"{path}: no such taxonomy file") from None
        except (TOMLDecodeError, UnicodeDecodeError) as e:
            raise XpuProfilerError(f"{path}: not valid TOML ({e})") from None
        rows: list = []
        mods: list = []
        for key, out in (("pattern", rows), ("module", mods)):
            for i, row in enumerate(data.get(key, [])):
                if (
                    not isinstance(row, dict)
                    or not isinstance(row.get("regex"), str)
                    or not isinstance(row.get("fused_op"), str)
                    or not isinstance(row.get("note", ""), str)
                ):
                    raise XpuProfilerError(
                        f"{path}: [[{key}]] #{i + 1} needs string keys regex and fused_op (and an optional string note)"
                    )
                out.append(
                    Rule(row["regex"], row["fused_op"], "user", row.get("note", ""))
                    if key == "pattern"
                    else (row["regex"], row["fused_op"])
                )
        try:
            return Taxonomy(patterns=rows + rules(), modules=mods + MODULE_PATTERNS)
        except XpuProfilerError as e:
            raise XpuProfilerError(f"{path}: {e}") from None
