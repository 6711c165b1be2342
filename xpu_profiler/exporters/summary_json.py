"""`summary.json`: the aggregate, schema-versioned, for diffs and CI gates."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..profile import Profile

NAME = "json"
SUFFIXES = ("summary.json",)


def _clean(x: Any) -> Any:
    """JSON has no NaN/Infinity: write null instead."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def dumps(summary: dict) -> str:
    return json.dumps(_clean(summary), ensure_ascii=False, indent=1, sort_keys=True, allow_nan=False)


def write(profile: Profile, summary: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(summary) + "\n", encoding="utf-8")
    return path
