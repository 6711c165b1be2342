"""`summary.json`: the Summary's own encoding, schema-versioned, for diffs and CI gates."""

from __future__ import annotations

from pathlib import Path

from ..profile import Profile
from ..summary import Summary, encode

NAME = "json"
SUFFIXES = ("summary.json",)


def write(profile: Profile, summary: Summary, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(summary) + b"\n")
    return path
