"""TOML in: the standard library's ``tomllib`` (Python 3.11+), else ``tomli`` (its origin, a
dependency on 3.10 only). Users' tables (taxonomy rows, findings thresholds, device specs)."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on 3.10
    import tomli as _toml

TOMLDecodeError = _toml.TOMLDecodeError


def loads(text: str) -> dict[str, Any]:
    table: dict[str, Any] = _toml.loads(text)
    return table
