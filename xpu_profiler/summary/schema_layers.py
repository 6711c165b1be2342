"""The Summary's layer section: op time per decoder layer and per kind of layer, by phase.

Layers are found per step (per forward pass, or per rank's whole trace, where there are
no steps) from the best evidence the trace has, and each phase says which: ``module``
(decoder-layer module frames), ``capture`` (the capture trace's frames, through the
replayed kernels' captured launches), ``pieces`` (piecewise-compiled graph pieces:
layers = pieces - 1, boundaries from the attention runs), ``config`` (the model config's
layer count, matched by the attention runs) or ``period`` (the kernel stream's repeating
period alone: ``inferred``, with a ``confidence``). A step's op time is
``layers_ns + head_ns + tail_ns + other_ns``: head is the work before the first layer
(embedding), tail after the last (final norm, lm_head, sampling), other the rest (work
between layers or on other streams that no layer holds).
"""

from __future__ import annotations

import msgspec

from .struct import _Struct


class LayerRow(_Struct):
    """One layer of a phase, summed over the steps counted."""

    index: int  # 0-based, in execution order (draft / MTP layers after the decoder layers)
    kind: str  # "<attention>/<mlp>", "draft " in front for a draft / MTP layer
    attention: str  # full, sliding, linear, attention (window unknown), none
    mlp: str  # moe, dense, unknown
    role: str = "decoder"  # decoder or draft
    module: str = ""  # the class of its frame, "" without one
    attention_kernel: str = ""  # the attention-family kernel it spent most time in
    time_ns: int = 0
    per_step_ns: float = 0.0
    kernels_per_step: float = 0.0
    share: float = 0.0  # of the phase's layer time
    fused_ns: dict[str, int] = {}  # by fused op


class LayerKind(_Struct):
    """The layers of one kind in a phase."""

    kind: str
    attention: str
    mlp: str
    role: str = "decoder"
    layers: int = 0
    time_ns: int = 0
    per_layer_step_ns: float = 0.0  # mean per layer and step
    per_layer_token_ns: float | None = None  # mean per layer and token of the phase
    share: float = 0.0  # of the phase's layer time
    fused_ns: dict[str, int] = {}


class LayerPhase(_Struct):
    phase: str
    evidence: str  # module, capture, pieces, config, period
    inferred: bool = False  # True: the count comes from the kernel period alone
    confidence: float = 1.0  # 1 for counts the trace or config states; the period's regularity otherwise
    detail: str = ""  # the evidence in words
    unit: str = "step"  # step, forward (a model frame) or rank (the whole trace)
    layers: int = 0  # decoder layers per step
    draft_layers: int = 0
    steps: int = 0  # steps (forwards) counted
    steps_seen: int = 0  # steps of this phase looked at
    tokens: int = 0  # of the steps counted
    op_time_ns: int = 0  # of the steps counted: layers + head + tail + other
    layers_ns: int = 0
    head_ns: int = 0
    tail_ns: int = 0
    other_ns: int = 0
    head_fused_ns: dict[str, int] = {}
    tail_fused_ns: dict[str, int] = {}
    kind_sources: list[str] = []  # what decided the kinds: kernels, module, config
    rows: list[LayerRow] = []
    kinds: list[LayerKind] = []
    notes: list[str] = []


class LayerSpans(_Struct):
    """Each counted layer of each step on the device's clock (columnar), for a layer track."""

    rank: list[int] = []
    step_id: list[int] = []  # -1: a forward or the whole trace
    index: list[int] = []
    kind: list[str] = []
    start_ns: list[int] = []
    end_ns: list[int] = []
    cut: int = 0  # spans left out past the limit


class Layers(_Struct):
    phases: list[LayerPhase] = []
    config_layers: int | None = None  # num_hidden_layers of the model config, when known
    config_source: str = ""
    refused: dict[str, int] = {}  # why steps got no layers → how many
    spans: LayerSpans = msgspec.field(default_factory=LayerSpans)
