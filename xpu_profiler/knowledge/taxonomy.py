"""Which kernel or op name belongs to which fused op: the family tables, and the layer modules.

- ``families``: one table of kernel families per vendor (``knowledge/families/``), each row
  with its source, matched on the name's *head* (``kernel_heads``: no template arguments, no
  argument list), first row wins; Inductor's generated names are read from their op tokens;
- ``MODULE_PATTERNS``: layer module class names (from ``nn.Module: X_0`` frames of
  ``with_stack`` traces, or our own ``xpu_module:X`` ranges);
- ``CUSTOM_OP``: which host ops are custom ops of vLLM, SGLang or a kernel library,
  whose name decides the fused op of everything they launch (the "launching op chain").

Classification is per distinct name and cached: a trace's millions of events share a few
hundred names.

Users extend the tables from a TOML file (``--taxonomy FILE``); their rows go in front of the
built-in ones and are searched in the whole name::

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
from functools import lru_cache
from pathlib import Path

from ..core.errors import XpuProfilerError
from ..core.records import MODULE_RANGE_PREFIX
from ..core.regular import require_regular
from ..core.toml import TOMLDecodeError, loads
from .collective_kinds import KIND_NAMES, OTHER_KIND, kind_of
from .families import ROLES, Family, TokenRule, tables
from .families.triton import inductor_rule
from .fused_ops import FUSED_OPS as FUSED_OPS  # re-exported: classify* return indexes into it
from .kernel_heads import heads
from .nvtx_ranges import layerwise_class

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
    """`nn.Module: RMSNorm_3` → `RMSNorm`; a layer-wise NVTX range → the class its module path
    stands for (``nvtx_ranges.layerwise_class``); None when the name is not a module range."""
    for prefix in MODULE_RANGE_PREFIXES:
        if range_name.startswith(prefix):
            return _INSTANCE_SUFFIX.sub("", range_name[len(prefix) :].strip())
    if range_name.startswith("{"):
        return layerwise_class(range_name)
    return None


def rules() -> list[Family]:
    """The built-in family rows, in search order (the Inductor rule runs after the
    ``runtime`` table)."""
    return [r for _, t in tables() for r in t]


def _as_row(row: Family | Sequence[str], what: str) -> Family:
    if isinstance(row, Family):
        return row
    regex, fused = row[0], row[1]
    return Family(regex, fused, what, on="name", note=row[2] if len(row) > 2 else "")


def _compile(regex: str, fused: str, what: str) -> tuple[re.Pattern[str], int]:
    if fused not in FUSED_OPS:
        raise XpuProfilerError(f"{what}: unknown fused op {fused!r} (known: {', '.join(FUSED_OPS)})")
    try:
        return re.compile(regex, re.IGNORECASE), FUSED_OPS.index(fused)
    except re.error as e:
        raise XpuProfilerError(f"{what}: bad regex {regex!r} ({e})") from None


#: names whose decision is remembered, at the most
MEMO_NAMES = 200_000


@dataclass
class Taxonomy:
    """Compiled tables; `classify*` return indexes into FUSED_OPS (-1: no match).

    ``patterns``: the rows searched before the Inductor rule (users' rows, then the built-in
    ``runtime`` table, by default); ``families``: the rows searched after it (the library tables
    and the generic words). Plain ``(regex, fused_op)`` pairs are searched in the whole name."""

    patterns: list[Family | tuple[str, ...]] = field(default_factory=lambda: list(tables()[0][1]))
    modules: list[tuple[str, str]] = field(default_factory=lambda: list(MODULE_PATTERNS))
    custom_op: str = CUSTOM_OP
    families: list[Family | tuple[str, ...]] = field(default_factory=lambda: [r for _, t in tables()[1:] for r in t])

    def __post_init__(self) -> None:
        self._rows = [_as_row(r, "taxonomy") for r in (*self.patterns, *self.families)]
        self._inductor_at = len(self.patterns)
        self._compiled = []
        for r in self._rows:
            rx, fused = _compile(r.regex, r.fused_op, "taxonomy")
            if r.role not in ROLES:
                raise XpuProfilerError(f"taxonomy: unknown role {r.role!r} in row {r.regex!r}")
            args = re.compile(r.args, re.IGNORECASE) if r.args else None
            self._compiled.append((rx, args, r.on == "name", fused, ROLES.index(r.role)))
        self._modules = [_compile(regex, fused, "taxonomy modules") for regex, fused, *_ in self.modules]
        self._custom = re.compile(self.custom_op)
        self._cache: dict[str, tuple[int, int, Family | TokenRule | None]] = {}

    def _decide(self, name: str) -> tuple[int, int, Family | TokenRule | None]:
        """(fused op, role, deciding row) of a name: rows in order on its inner head, then on
        its outer head (a launcher template); the Inductor rule after the first rows."""
        hit = self._cache.get(name)
        if hit is not None:
            return hit
        inner, outer = heads(name)
        hit = (-1, 0, None)
        for text in (inner, outer) if outer != inner else (inner,):
            found = self._search(name, text)
            if found is not None:
                hit = found
                break
        if len(self._cache) >= MEMO_NAMES:  # (a long-lived process that reads many traces)
            self._cache.clear()
        self._cache[name] = hit
        return hit

    def _search(self, name: str, head: str) -> tuple[int, int, Family | TokenRule | None] | None:
        for i, (rx, args, on_name, fused, role) in enumerate(self._compiled):
            if i == self._inductor_at:
                tok = inductor_rule(head)
                if tok is not None:
                    return FUSED_OPS.index(tok.fused_op), ROLES.index(tok.role), tok
            if rx.search(name if on_name else head) and (args is None or args.search(name)):
                return fused, role, self._rows[i]
        if self._inductor_at >= len(self._compiled):
            tok = inductor_rule(head)
            if tok is not None:
                return FUSED_OPS.index(tok.fused_op), ROLES.index(tok.role), tok
        return None

    def classify(self, name: str) -> int:
        """Fused op of a kernel or op name, -1 when no row matches."""
        return self._decide(name)[0]

    def role(self, name: str) -> int:
        """The name's role in an MoE block (index into ``families.ROLES``; 0: none)."""
        return self._decide(name)[1]

    def collective_kind(self, name: str) -> int:
        """Kind of a collective (index into ``collective_kinds.KIND_NAMES``): the kind words of
        its name, else the kind of the communication family it belongs to (DeepEP's
        ``cached_notify``: all_to_all), else ``OTHER_KIND``."""
        k = kind_of(name)
        if k != OTHER_KIND:
            return k
        row = self.explain(name)
        return KIND_NAMES.index(row.collective) if isinstance(row, Family) and row.collective else OTHER_KIND

    def explain(self, name: str) -> Family | TokenRule | None:
        """The row that decides a name (a ``Family``, or Inductor's ``TokenRule``), or None."""
        return self._decide(name)[2]

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
            require_regular(path, "--taxonomy takes a TOML file")
            data = loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise XpuProfilerError(f"{path}: no such taxonomy file") from None
        except (TOMLDecodeError, UnicodeDecodeError) as e:
            raise XpuProfilerError(f"{path}: not valid TOML ({e})") from None
        rows: list[Family | tuple[str, ...]] = []
        mods: list[tuple[str, str]] = []
        unknown = sorted(set(data) - {"pattern", "module"})
        if unknown:  # (a misspelt table would leave its rules unused without a word)
            raise XpuProfilerError(f"{path}: unknown table {unknown[0]!r} (known: [[pattern]], [[module]])")
        for key in ("pattern", "module"):
            rows_of = data.get(key, [])
            for i, row in enumerate(rows_of if isinstance(rows_of, list) else [rows_of]):
                odd = sorted(set(row) - {"regex", "fused_op", "note"}) if isinstance(row, dict) else []
                if odd:
                    raise XpuProfilerError(
                        f"{path}: [[{key}]] #{i + 1}: unknown key {odd[0]!r} (known: regex, fused_op, note)"
                    )
                if (
                    not isinstance(row, dict)
                    or not isinstance(row.get("regex"), str)
                    or not isinstance(row.get("fused_op"), str)
                    or not isinstance(row.get("note", ""), str)
                ):
                    raise XpuProfilerError(
                        f"{path}: [[{key}]] #{i + 1} needs string keys regex and fused_op (and an optional string note)"
                    )
                if key == "pattern":
                    rows.append(Family(row["regex"], row["fused_op"], path.name, on="name", note=row.get("note", "")))
                else:
                    mods.append((row["regex"], row["fused_op"]))
        try:
            return Taxonomy(patterns=rows + list(tables()[0][1]), modules=mods + MODULE_PATTERNS)
        except XpuProfilerError as e:
            raise XpuProfilerError(f"{path}: {e}") from None


@lru_cache(maxsize=1)
def default() -> Taxonomy:
    """The built-in taxonomy, compiled once per process (its memo of names is shared)."""
    return Taxonomy()


def collective_kind(name: str) -> int:
    """``Taxonomy.collective_kind`` of the built-in tables."""
    return default().collective_kind(name)
