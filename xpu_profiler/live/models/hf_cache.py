"""Find a model in the local Hugging Face cache, without the network.

The cache layout is the hub's: ``<cache>/models--{org}--{name}/snapshots/<rev>/``
with ``refs/main`` naming the revision last downloaded. The caches looked in,
in order: ``$HF_HUB_CACHE``, ``$HUGGINGFACE_HUB_CACHE`` and
``$TRANSFORMERS_CACHE`` (older names of the same setting), ``$HF_HOME/hub``,
and ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``.
A snapshot counts when it holds a ``config.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE")


def hf_cache_dirs() -> list[Path]:
    """The hub caches to look in, most specific first, without duplicates."""
    env = os.environ
    dirs = [Path(env[k]).expanduser() for k in CACHE_ENV if env.get(k)]
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]).expanduser() / "hub")
    xdg = env.get("XDG_CACHE_HOME")
    dirs.append((Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    out: list[Path] = []
    for d in dirs:
        if d not in out:
            out.append(d)
    return out


def _repo_dir(cache: Path, hf_id: str) -> Path | None:
    want = "models--" + hf_id.replace("/", "--")
    d = cache / want
    if d.is_dir():
        return d
    try:  # hub ids are case-insensitive; the folder keeps the case it was downloaded with
        for entry in os.scandir(cache):
            if entry.is_dir() and entry.name.lower() == want.lower():
                return Path(entry.path)
    except OSError:
        pass
    return None


def _snapshot(repo: Path) -> Path | None:
    snaps = repo / "snapshots"
    try:
        ref = (repo / "refs" / "main").read_text().strip()
    except OSError:
        ref = ""
    if ref and (snaps / ref / "config.json").is_file():
        return snaps / ref
    try:
        found = [p for p in snaps.iterdir() if (p / "config.json").is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: (p / "config.json").stat().st_mtime_ns) if found else None


def find_in_hf_cache(hf_id: str) -> Path | None:
    """The snapshot directory of ``hf_id`` in a local cache, or None."""
    for cache in hf_cache_dirs():
        repo = _repo_dir(cache, hf_id)
        snap = _snapshot(repo) if repo else None
        if snap is not None:
            return snap
    return None
