"""The base of every Summary section."""

from __future__ import annotations

import msgspec


class _Struct(msgspec.Struct, kw_only=True):
    """Every section: keyword-only, unknown fields ignored when read back."""
