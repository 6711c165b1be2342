"""``diff.json``: how a NEW run compares with a BASE run (the typed contract of ``xpu_profiler diff``).

Costs are compared per token of their phase (op time / the phase's tokens), so runs of
different lengths compare; ``change`` is ``new / base − 1``; ``share_of_change`` is an
op's part of its phase's whole per-token change (signed: the parts add up to 1).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .struct import _Struct

DIFF_SCHEMA = "xpu_profiler.diff"
DIFF_SCHEMA_VERSION = 1


class SettingDelta(_Struct):
    """An engine or workload setting that differs between the runs."""

    key: str
    base: Any = None
    new: Any = None


class MetricDelta(_Struct):
    name: str  # step_p50_ns, step_p99_ns, per_token_ns, decode_tok_s, ttft_p50_ns, ...
    phase: str | None = None
    base: float | None = None
    new: float | None = None
    change: float | None = None  # new / base - 1
    better: str = "lower"  # "lower" or "higher": which direction is an improvement
    #: per_token_ns only: the op time the change moves at BASE's token count (ns, signed)
    impact_ns: float | None = None

    @property
    def regression(self) -> float | None:
        """How much worse NEW is (positive), or better (negative); None if unknown."""
        if self.change is None:
            return None
        return self.change if self.better == "lower" else -self.change


class OpDelta(_Struct):
    """One fused op or kernel in one phase, per token of that phase."""

    phase: str
    key: str  # fused op, or kernel name with its argument list stripped
    kind: str = "fused_op"  # fused_op or kernel
    fused_op: str = ""
    base_per_token_ns: float | None = None
    new_per_token_ns: float | None = None
    delta_per_token_ns: float | None = None
    change: float | None = None
    share_of_change: float | None = None
    status: str = "changed"  # changed, unchanged, added, removed


class LayerDelta(_Struct):
    """One kind of decoder layer (or the mean layer: "all layers") in one phase: what one
    layer costs per token of the phase (``per`` "token"), or per step when a run counts no tokens."""

    phase: str
    kind: str  # the kind; "BASE kind → NEW kind" when matched by MLP and role only
    base_layers: int | None = None
    new_layers: int | None = None
    per: str = "token"
    base_per_layer_ns: float | None = None
    new_per_layer_ns: float | None = None
    change: float | None = None
    status: str = "changed"  # changed, unchanged, added, removed
    top_change: str = ""  # the fused op whose cost per layer moved most


class HostDelta(_Struct):
    """One cause of a phase's exposed host time (``Phase.host``), per step on each side; the
    row with ``cause`` "all" is the phase's whole exposed host time per step."""

    phase: str
    cause: str  # the cause's key (``HostCause.cause``), or "all"
    what: str = ""
    name: str = ""  # its evidence: the frame, op or call
    base_per_step_ns: float | None = None
    new_per_step_ns: float | None = None
    delta_ns: float | None = None  # per step, new − base (a side without it counts 0)
    status: str = "changed"  # changed, unchanged, added, removed


class StepSplit(_Struct):
    """A phase's step time on each side, split into what the device worked per token (its op
    time per token) and what the host held the device waiting per step (exposed host time)."""

    phase: str
    base_step_p50_ns: float | None = None
    new_step_p50_ns: float | None = None
    base_device_per_token_ns: float | None = None
    new_device_per_token_ns: float | None = None
    base_host_per_step_ns: float | None = None
    new_host_per_step_ns: float | None = None
    tokens_per_step: float | None = None  # BASE's: how a per-token change adds up to a step
    #: the step time the phase's change moves at BASE's steps (ns, signed): what ranks phases
    impact_ns: float | None = None


class FindingDelta(_Struct):
    rule: str
    status: str  # appeared, disappeared, kept
    title: str = ""
    phase: str | None = None
    base_at_stake_share: float | None = None
    new_at_stake_share: float | None = None


class Gate(_Struct):
    """``--fail-on``: did a metric regress by more than the threshold? A diff that cannot
    compare the runs fails the gate (``reason``)."""

    metric: str
    phase: str | None = None
    threshold: float = 0.0  # fraction (0.05 = 5%)
    regression: float | None = None
    failed: bool = False
    reason: str | None = None  # why it failed without a regression: the runs cannot be compared


class Family(_Struct):
    """A vendor-neutral kernel family (the fused op its kernels do) present in one run's
    phase and not in the other's: what kernel names cannot say across vendors."""

    phase: str
    family: str
    time_ns: int = 0  # its op time in the run that has it
    per_token_ns: float | None = None


class DiffReport(_Struct):
    schema: str = DIFF_SCHEMA
    schema_version: int = DIFF_SCHEMA_VERSION
    base: str = ""
    new: str = ""
    base_run: dict[str, Any] = {}
    new_run: dict[str, Any] = {}
    settings: list[SettingDelta] = []
    metrics: list[MetricDelta] = []
    fused_ops: list[OpDelta] = []  # by |share of change| within each phase
    kernels: list[OpDelta] = []  # in both runs, largest |delta| first
    kernels_added: list[OpDelta] = []
    kernels_removed: list[OpDelta] = []
    #: kernels below the other run's top-kernels list cannot be said to be gone
    kernels_unlisted: int = 0
    findings: list[FindingDelta] = []
    layers: list[LayerDelta] = []  # per phase: the mean layer, then each kind of layer
    steps: list[StepSplit] = []  # per phase compared: the step time, device work and host time
    host: list[HostDelta] = []  # per phase: its exposed host time per step, then by cause
    headline: str = ""  # the largest change, in words
    headline_phase: str | None = None  # the phase whose step time moves the most (at BASE's tokens)
    notes: list[str] = []
    unchanged: bool = False  # no metric or cost moved beyond the noise floor
    gate: Gate | None = None
    #: False when the runs cannot be compared (a side without steps, no phase in common):
    #: ``reasons`` says why, and nothing here reads as "no change"
    comparable: bool = True
    reasons: list[str] = []
    phases_compared: list[str] = []  # phases with steps on both sides ("all": pooled, see ``pooled``)
    #: the phases differ and the runs were compared over all their steps pooled (phase "all")
    pooled: bool = False
    families_added: list[Family] = []  # kernel families (fused ops) in NEW's phase only
    families_removed: list[Family] = []
    #: {"base": ..., "new": ...}: the device vendors and engines the runs came from
    vendors: dict[str, str | None] = {}
    engines: dict[str, str | None] = {}


_ENCODER = msgspec.json.Encoder(order="sorted")


def encode_diff(report: DiffReport, indent: int = 1) -> bytes:
    data = _ENCODER.encode(report)
    return msgspec.json.format(data, indent=indent) if indent else data
