"""Models to profile: built-in tiny models of real architectures, the alias table of the
families users run, the local Hugging Face cache, and `--model` resolution.

- ``builtin``: the built-in models (config + locally trained tokenizer, no weights);
- ``aliases``: ``glm-5`` -> ``zai-org/GLM-5`` and its architecture, one table;
- ``hf_cache``: snapshots already in the local Hugging Face cache;
- ``resolve``: ``resolve_model(name)`` -> what vLLM loads.
"""

from ...knowledge.model_aliases import BUILTIN_FOR_ARCH, MODEL_ALIASES, lookup
from .builtin import BUILTIN_CONFIGS, BUILTIN_MODELS, RECIPE_VERSION, build_tokenizer, cache_dir, ensure_builtin
from .hf_cache import find_in_hf_cache, hf_cache_dirs
from .resolve import resolve_model

__all__ = [
    "BUILTIN_CONFIGS",
    "BUILTIN_FOR_ARCH",
    "BUILTIN_MODELS",
    "MODEL_ALIASES",
    "RECIPE_VERSION",
    "build_tokenizer",
    "cache_dir",
    "ensure_builtin",
    "find_in_hf_cache",
    "hf_cache_dirs",
    "lookup",
    "resolve_model",
]
