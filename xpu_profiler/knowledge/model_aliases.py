"""`--model` names as users write them: one declarative table of model families.

Each row is ``(names, Hugging Face id, architecture)``: the architecture is the
class named in the model's ``config.json`` (``architectures[0]``), which is
also the key of vLLM's model registry. Every id and architecture here was
checked against the model's Hugging Face page or config and vLLM 0.32's
registry; a family whose id could not be checked is left out rather than
guessed. The repository name itself (``GLM-4.5-Air``) is always an alias too.

Names match case-insensitively, with ``_`` or a space read as ``-``.

``BUILTIN_FOR_ARCH`` says which built-in model (random weights, made locally)
has the same architecture, or the closest one, for the "weights are not here"
message.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

#: (names, Hugging Face id, architecture), by family
MODEL_ALIASES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    # GLM (Zhipu AI / Z.ai)
    (("glm-5", "glm5"), "zai-org/GLM-5", "GlmMoeDsaForCausalLM"),
    (("glm-5.1", "glm5.1"), "zai-org/GLM-5.1", "GlmMoeDsaForCausalLM"),
    (("glm-5.2", "glm5.2"), "zai-org/GLM-5.2", "GlmMoeDsaForCausalLM"),
    (("glm-4.5", "glm4.5"), "zai-org/GLM-4.5", "Glm4MoeForCausalLM"),
    (("glm-4.5-air", "glm4.5-air"), "zai-org/GLM-4.5-Air", "Glm4MoeForCausalLM"),
    (("glm-4.6", "glm4.6"), "zai-org/GLM-4.6", "Glm4MoeForCausalLM"),
    (("glm-4.7", "glm4.7"), "zai-org/GLM-4.7", "Glm4MoeForCausalLM"),
    (("glm-4.7-flash", "glm4.7-flash"), "zai-org/GLM-4.7-Flash", "Glm4MoeLiteForCausalLM"),
    # Qwen3 dense
    (("qwen3-0.6b",), "Qwen/Qwen3-0.6B", "Qwen3ForCausalLM"),
    (("qwen3-1.7b",), "Qwen/Qwen3-1.7B", "Qwen3ForCausalLM"),
    (("qwen3-4b",), "Qwen/Qwen3-4B", "Qwen3ForCausalLM"),
    (("qwen3-8b",), "Qwen/Qwen3-8B", "Qwen3ForCausalLM"),
    (("qwen3-14b",), "Qwen/Qwen3-14B", "Qwen3ForCausalLM"),
    (("qwen3-32b",), "Qwen/Qwen3-32B", "Qwen3ForCausalLM"),
    # Qwen3 MoE
    (("qwen3-30b-a3b",), "Qwen/Qwen3-30B-A3B", "Qwen3MoeForCausalLM"),
    (("qwen3-235b-a22b",), "Qwen/Qwen3-235B-A22B", "Qwen3MoeForCausalLM"),
    (("qwen3-30b-a3b-instruct",), "Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3MoeForCausalLM"),
    (("qwen3-235b-a22b-instruct",), "Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen3MoeForCausalLM"),
    # DeepSeek
    (("deepseek-v3",), "deepseek-ai/DeepSeek-V3", "DeepseekV3ForCausalLM"),
    (("deepseek-v3.1",), "deepseek-ai/DeepSeek-V3.1", "DeepseekV3ForCausalLM"),
    (("deepseek-r1",), "deepseek-ai/DeepSeek-R1", "DeepseekV3ForCausalLM"),
    (("deepseek-v3.2",), "deepseek-ai/DeepSeek-V3.2", "DeepseekV32ForCausalLM"),
    (("deepseek-v3.2-exp",), "deepseek-ai/DeepSeek-V3.2-Exp", "DeepseekV32ForCausalLM"),
    # Llama 3.x (the instruct models)
    (("llama-3.1-8b", "llama3.1-8b"), "meta-llama/Llama-3.1-8B-Instruct", "LlamaForCausalLM"),
    (("llama-3.1-70b", "llama3.1-70b"), "meta-llama/Llama-3.1-70B-Instruct", "LlamaForCausalLM"),
    (("llama-3.2-1b", "llama3.2-1b"), "meta-llama/Llama-3.2-1B-Instruct", "LlamaForCausalLM"),
    (("llama-3.2-3b", "llama3.2-3b"), "meta-llama/Llama-3.2-3B-Instruct", "LlamaForCausalLM"),
    (("llama-3.3-70b", "llama3.3-70b"), "meta-llama/Llama-3.3-70B-Instruct", "LlamaForCausalLM"),
    # Xiaomi MiMo
    (("mimo-7b",), "XiaomiMiMo/MiMo-7B-RL", "MiMoForCausalLM"),
    (("mimo-7b-base",), "XiaomiMiMo/MiMo-7B-Base", "MiMoForCausalLM"),
    (("mimo-v2-flash",), "XiaomiMiMo/MiMo-V2-Flash", "MiMoV2FlashForCausalLM"),
    # OpenAI gpt-oss
    (("gpt-oss-20b",), "openai/gpt-oss-20b", "GptOssForCausalLM"),
    (("gpt-oss-120b",), "openai/gpt-oss-120b", "GptOssForCausalLM"),
)

#: architecture -> the built-in model of the same (or the closest) architecture
BUILTIN_FOR_ARCH: dict[str, str] = {
    "Glm4MoeForCausalLM": "tiny-glm",
    # MLA / DSA attention does not run on vLLM's CPU build as these models use it; the
    # MoE block (shared expert, first-k-dense layers, sigmoid routing) is tiny-glm's
    "GlmMoeDsaForCausalLM": "tiny-glm",
    "Glm4MoeLiteForCausalLM": "tiny-glm",
    "DeepseekV3ForCausalLM": "tiny-glm",
    "DeepseekV32ForCausalLM": "tiny-glm",
    "Qwen3MoeForCausalLM": "tiny-moe",
    "GptOssForCausalLM": "tiny-moe",
    "MiMoV2FlashForCausalLM": "tiny-moe",
    "LlamaForCausalLM": "tiny-llama",
    "Qwen3ForCausalLM": "tiny-llama",
    "MiMoForCausalLM": "tiny-llama",
}


@dataclass(frozen=True)
class ModelAlias:
    name: str  # as the user wrote it
    hf_id: str
    architecture: str


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _index() -> dict[str, tuple[str, str]]:
    idx: dict[str, tuple[str, str]] = {}
    for names, hf_id, arch in MODEL_ALIASES:
        for n in (*names, hf_id.split("/", 1)[1], hf_id):
            k = _key(n)
            if idx.setdefault(k, (hf_id, arch)) != (hf_id, arch):
                raise AssertionError(f"alias {n!r} names two models")
    return idx


_INDEX = _index()


def lookup(name: str) -> ModelAlias | None:
    """The table row for an alias, a repository name or a full Hugging Face id."""
    hit = _INDEX.get(_key(name))
    return ModelAlias(name, *hit) if hit else None


def close_names(name: str, n: int = 3) -> list[str]:
    """Aliases spelled like ``name`` (for "did you mean")."""
    short = [k for k in _INDEX if "/" not in k]
    return difflib.get_close_matches(_key(name), short, n=n, cutoff=0.75)
