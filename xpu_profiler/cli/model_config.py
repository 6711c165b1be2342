"""`analyze --model`: the config.json of the model a trace ran, found locally (no network).

The layer view reads the model's layer count and layer types from it, the MFU and bandwidth
estimate its shape: a built-in model's name, a directory holding ``config.json``, a
``config.json`` itself, or an alias / Hugging Face id whose snapshot is in the local Hugging
Face cache, else whose shape the table of known models has (``knowledge.model_configs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import XpuProfilerError
from ..core.fmt import plain


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise XpuProfilerError(f"{plain(str(path))}: not a readable config.json ({e})") from None
    if not isinstance(data, dict):
        raise XpuProfilerError(f"{plain(str(path))}: not a model config (a JSON object)")
    from ..aggregate.model_cost import check_model_config

    return check_model_config(data, plain(str(path)))


def local_model_config(name: str) -> dict[str, Any]:
    """The config of ``name`` (see the module); one-line error when none is here."""
    from ..knowledge import model_aliases, model_configs
    from ..live.models.builtin import BUILTIN_CONFIGS
    from ..live.models.hf_cache import find_in_hf_cache, hf_cache_dirs

    path = Path(name).expanduser()
    if path.is_file():
        return _read(path)
    if path.is_dir():
        if (path / "config.json").is_file():
            return _read(path / "config.json")
        raise XpuProfilerError(f"--model {plain(name)}: the directory holds no config.json")
    if name in BUILTIN_CONFIGS:
        return dict(BUILTIN_CONFIGS[name])
    alias = model_aliases.lookup(name)
    hf_id = alias.hf_id if alias else (name if name.count("/") == 1 else None)
    if hf_id:
        snap = find_in_hf_cache(hf_id)
        if snap is not None:
            return _read(snap / "config.json")
        known = model_configs.known_config(hf_id)
        if known is not None:
            return known
    where = ", ".join(str(d) for d in hf_cache_dirs())
    names = ", ".join(sorted(BUILTIN_CONFIGS)[:3] + ["qwen3-30b-a3b", "glm-5", "llama-3.1-70b", "..."])
    raise XpuProfilerError(
        f"--model {plain(name)}: no config.json here (not a built-in or known model such as {names}, a "
        f"directory or config.json, nor a Hugging Face id in the local cache: {where}); nothing is "
        f"downloaded: pass the model's directory or its config.json"
    )
