"""`summary.json`: the Summary's own encoding, schema-versioned, for diffs and CI gates."""

from __future__ import annotations

from pathlib import Path

from ..core import atomic_write
from ..core.profile import Profile
from ..summary import Summary, encode

NAME = "json"
SUFFIXES = ("summary.json",)


def write(profile: Profile, summary: Summary, path: str | Path) -> Path:
    return atomic_write.write_bytes(path, encode(summary) + b"\n")
