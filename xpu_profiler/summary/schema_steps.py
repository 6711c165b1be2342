"""The Summary's sections about how steps were found and judged: the evidence layers, the
phases inferred without annotation fields, and the gaps behind a verdict."""

from __future__ import annotations

from .struct import _Struct


class StepSearch(_Struct):
    """How the steps were found. ``found_by``: steps per evidence layer (hooks,
    annotation, profiler_step, frame, device_segment, runner_scope); ``message``: one line that a trace
    without steps prints instead of its step tables, naming what was looked for."""

    source: str | None = None  # the layer that defined the steps (run.step_source)
    found_by: dict[str, int] = {}
    inferred: bool = False  # steps from bursts of device work: no marker in the trace
    looked_for: list[str] = []
    frames: list[str] = []  # the per-step frames the trace holds (a few)
    empty_steps: int = 0  # found and dropped: they launched (or ran) nothing
    inexact_steps: int = 0  # annotated steps whose prefill/decode token split was inferred
    extended_by_sampling: int = 0  # steps that end with the sample_tokens call after them
    #: per phase, how its phase was inferred (steps found without annotation fields)
    phase_inferred: dict[str, str] = {}
    #: the engine the trace comes from (vllm, sglang, other) and the evidence for it
    engine: str | None = None
    engine_evidence: str | None = None
    vendor: str | None = None  # the device vendor (nvidia, amd, kunlun, cpu), from the runtime calls
    #: what step times are: "critical_path" (the longer of each step's host range and its
    #: effective device range) or "host" (its host range: no device work)
    step_clock: str | None = None
    message: str | None = None  # set when no step was found


class VerdictGap(_Struct):
    """One idle gap on the device inside a phase's steps, with what ended it."""

    rank: int
    step_id: int
    start_ns: int  # when the device went idle
    dur_ns: int
    host_wait_ns: int = 0  # the device had drained; the launch came later
    launch_ns: int = 0  # launch latency (at most ``kernel_wait_max_ns``)
    dependency_ns: int = 0  # queued but waiting on something the host did not cause
    next_work: str = ""  # the device work after the gap
    launched_by: str = ""  # the runtime call that launched it
