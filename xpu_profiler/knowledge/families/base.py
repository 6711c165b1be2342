"""The row types of the family tables (``families``)."""

from __future__ import annotations

from typing import NamedTuple

#: roles of MoE kernels in a block (``Family.role``)
ROLES = ("", "open", "expert", "close")


class Family(NamedTuple):
    """One row of a family table."""

    regex: str  # searched in the head (on="head") or the whole name (on="name"), any case
    fused_op: str
    source: str  # repository + path, or data-sheet / documentation URL
    role: str = ""  # MoE block role: open | expert | close
    args: str = ""  # discriminator searched in the whole name, when ``regex`` matched
    collective: str = ""  # communication: the collective kind when the name has no collective word
    on: str = "head"
    note: str = ""


class TokenRule(NamedTuple):
    """A rule over the op tokens of an Inductor-generated kernel name."""

    all_of: frozenset[str]  # every one of these tokens present (empty: no condition)
    any_of: frozenset[str]  # at least one of these present (empty: no condition)
    fused_op: str
    kinds: frozenset[str] = frozenset()  # Inductor kernel kinds it holds for (empty: all)
    role: str = ""
    note: str = ""
