"""What the analysis derives about a profile beside its derived event and step columns.

``aggregate.attribute`` fills it and returns it; the summary's sections read it. It is typed and
kept apart from ``Profile.run``, which holds only what the inputs said about the run. Never
saved in a bundle: re-analysis derives it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Derived:
    attributed: bool = False  # the derived columns are filled
    #: the layer of evidence that found the steps: vllm_annotation, sglang_annotation, atom_annotation,
    #: trtllm_annotation, profiler_step, runner_scopes, python_frames, device_segments (hook profiles:
    #: the reader's own, ``run["step_source"]``)
    step_source: str | None = None
    #: what the step search looked for and found: looked_for, frames, found_by, extended_by_sampling
    step_search: dict[str, Any] = field(default_factory=dict)
    empty_steps: int = 0  # step markers that scheduled or launched nothing: dropped
    inexact_steps: int = 0  # annotated steps whose prefill/decode token split was inferred
    phase_inferred: dict[str, str] = field(default_factory=dict)  # phase → the evidence, in words
    engine: str | None = None  # the engine family: vllm, sglang, other
    engine_evidence: str = ""  # in a few words, what told the engine family
    structure: dict[str, int] = field(default_factory=dict)  # what the structure rules decided
    graphs: dict[str, Any] | None = None  # graph replays and how they were matched to captures
    selection: dict[str, Any] | None = None  # the part of the profile kept (--steps, --max-events)
    warnings: list[str] = field(default_factory=list)  # what the analysis warns of (after the inputs' own)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
