"""What a rule's check returns, and what it gets besides the Summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..summary import Summary


@dataclass(frozen=True)
class Context:
    """Inputs beyond the one Summary: a reference run (a ``basic``-level run of the same
    workload) for the profiler-overhead rule."""

    reference: Optional[Summary] = None


@dataclass
class Hit:
    """One rule firing: how much step time is at stake and the evidence for it."""

    at_stake: float                       # share of step time (0..1)
    title: str                            # one line, with the numbers
    evidence: dict[str, Any] = field(default_factory=dict)
    phase: Optional[str] = None
    steps: list[int] = field(default_factory=list)   # step ids where it was seen
    ranks: list[int] = field(default_factory=list)
    fix: Optional[str] = None             # a fix more specific than the rule's own
    why: Optional[str] = None


Thresholds = Mapping[str, float]
