"""What a rule's check returns, and what it gets besides the Summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..summary import Summary


@dataclass(frozen=True)
class Context:
    """Inputs beyond the one Summary: a reference run (a ``basic``-level run of the same
    workload) for the profiler-overhead rule."""

    reference: Summary | None = None


@dataclass
class Hit:
    """One rule firing: how much step time is at stake and the evidence for it."""

    at_stake: float  # share of step time (0..1)
    title: str  # one line, with the numbers
    evidence: dict[str, Any] = field(default_factory=dict)
    phase: str | None = None
    steps: list[int] = field(default_factory=list)  # step ids where it was seen
    ranks: list[int] = field(default_factory=list)
    fix: str | None = None  # a fix more specific than the rule's own
    why: str | None = None


Thresholds = Mapping[str, float]
