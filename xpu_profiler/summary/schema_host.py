"""The Summary's host side: what the host was doing while the device waited on it (each phase's
exposed host time by cause, and its critical path for the Perfetto trace)."""

from __future__ import annotations

from .struct import _Struct


class HostCause(_Struct):
    """One cause of a phase's exposed host time: the evidence (the innermost frame, op, call
    or range that held it) and what it is (``knowledge.host_causes``)."""

    cause: str  # the cause's key: model_forward, input_preparation, sampler, sync, graph_launch...
    what: str  # the cause in words
    evidence: str  # frame, op, runtime, range, untraced
    name: str = ""  # the frame (file.py(N): function), op or call; "" untraced
    per_step_ns: float = 0.0  # mean over the phase's steps
    share: float = 0.0  # of the phase's exposed host time
    steps: int = 0  # the phase's steps it held exposed host time in
    fix: str = ""  # in the trace engine's terms


class HostTime(_Struct):
    """What the host was doing while a phase's device waited on it: each step's exposed host
    time (the host-wait part of its device's idle gaps, on the launching thread), by cause."""

    steps: int = 0
    exposed_per_step_ns: float = 0.0  # mean over the phase's steps
    #: by time, the largest first (the evidence names are cut to the top ``MAX_CAUSES``)
    causes: list[HostCause] = []


class HostPath(_Struct):
    """The host's critical path while the device waited on it (columnar, for a Perfetto track):
    each stretch of exposed host time with its cause, adjacent pieces of one cause merged."""

    rank: list[int] = []
    start_ns: list[int] = []
    dur_ns: list[int] = []
    cause: list[str] = []  # the cause's key (``HostCause.cause``)
    name: list[str] = []  # its evidence: the frame, op or call
    cut: int = 0  # stretches left out past the limit (the shortest)
