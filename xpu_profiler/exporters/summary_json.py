"""`summary.json`: the aggregate, schema-versioned, for diffs and CI gates."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..profile import Profile

NAME = "json"
SUFFIXES = ("summary.json",)


def json_ready(obj: Any) -> Any:
    """Plain JSON copy: numpy scalars/arrays to Python, NaN/inf to null (JSON has neither)."""
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_ready(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def dumps(summary: dict) -> str:
    return json.dumps(json_ready(summary), ensure_ascii=False, indent=1, sort_keys=True, allow_nan=False)


def write(profile: Profile, summary: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(summary) + "\n", encoding="utf-8")
    return path
