"""`--model NAME` to what vLLM loads: a built-in model, a local directory, a cached
snapshot, or a hub id that vLLM downloads itself.

Order: built-in name, existing path, alias or ``org/name`` id. An id is looked up
in the local Hugging Face caches first (no network). Only when it is not there is
the hub asked, once, whether it can be reached: if it can, the id goes to vLLM
(which downloads it); if not, one line says what was looked for, where, and what
to do, and names the built-in model of the same architecture.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.request import Request as HttpRequest  # (vLLM has a Request class too)

from ...core.errors import XpuProfilerError
from ...knowledge import model_aliases as aliases
from .builtin import BUILTIN_CONFIGS, BUILTIN_MODELS, ensure_builtin
from .hf_cache import find_in_hf_cache, hf_cache_dirs

HUB_PROBE_TIMEOUT_S = 3.0
_OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_reachable(hf_id: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the hub answers at all (any HTTP status counts); False when told offline."""
    if any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on") for k in _OFFLINE_ENV):
        return False
    req = HttpRequest(f"{hub_endpoint()}/api/models/{hf_id}", method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def _not_here(name: str, hf_id: str, arch: str | None) -> XpuProfilerError:
    caches = ", ".join(str(d) for d in hf_cache_dirs())
    what = f"model {name!r} is Hugging Face model {hf_id}" if name != hf_id else f"model {hf_id}"
    if arch:
        what += f" ({arch})"
    builtin = aliases.BUILTIN_FOR_ARCH.get(arch or "")
    if builtin:
        same = BUILTIN_CONFIGS[builtin]["architectures"][0] == arch
        hint = (
            f"; to profile {'the same' if same else 'the closest'} architecture without weights use "
            f"--model {builtin} ({BUILTIN_CONFIGS[builtin]['architectures'][0]}, random weights)"
        )
    else:
        hint = f"; the built-in models ({', '.join(BUILTIN_MODELS)}) run without weights"
    return XpuProfilerError(
        f"{what}: its weights are not in the local Hugging Face cache ({caches}) and {hub_endpoint()} "
        f"cannot be reached from here. Download it on a machine with access (hf download {hf_id}) and copy "
        f"the cache over, set HF_HOME to a cache that holds it, or pass --model /path/to/its/directory"
        f"{hint}"
    )


def _hub_model(name: str, hf_id: str, arch: str | None) -> tuple[str, bool]:
    snap = find_in_hf_cache(hf_id)
    if snap is not None:
        return str(snap), False
    if hub_reachable(hf_id):
        return hf_id, False
    raise _not_here(name, hf_id, arch)


def resolve_model(name_or_path: str) -> tuple[str, bool]:
    """Map a built-in name, a local directory, an alias or a hub id to what vLLM loads.

    Returns ``(path_or_id, is_builtin)``. Raises XpuProfilerError (one line) for an
    unknown name, a path that does not exist, or a model whose weights are neither
    here nor downloadable.
    """
    s = str(name_or_path).strip()
    if not s:
        raise XpuProfilerError("no model given (use a built-in name such as tiny-llama, a local path or a hub id)")
    if s in BUILTIN_CONFIGS:
        return str(ensure_builtin(s)), True
    p = Path(s).expanduser()
    if p.exists():
        if p.is_dir() and not (p / "config.json").is_file():
            raise XpuProfilerError(f"model directory {s} has no config.json")
        return str(p.resolve()), False
    if s.startswith(("tiny-", "builtin:")):
        raise XpuProfilerError(f"unknown built-in model {s!r} (built-in: {', '.join(BUILTIN_MODELS)})")
    if s.startswith((".", "/", "~")) or s.count("/") > 1 or s.endswith("/"):
        raise XpuProfilerError(f"model path {s} does not exist")
    alias = aliases.lookup(s)
    if alias is not None:
        return _hub_model(s, alias.hf_id, alias.architecture)
    if s.count("/") == 1:  # "org/name": a hub id the table does not know
        return _hub_model(s, s, None)
    close = aliases.close_names(s)
    raise XpuProfilerError(
        f"model {s!r} is not a built-in model ({', '.join(BUILTIN_MODELS)}), a known model name, a path "
        f"or a Hugging Face id (org/name)" + (f"; did you mean {' or '.join(close)}?" if close else "")
    )
