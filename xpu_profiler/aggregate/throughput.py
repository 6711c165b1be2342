"""Throughput: token rates from the steps, latency distributions from the requests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.profile import Profile
from ..summary import Distribution, Phase, Throughput
from .steps.find import token_steps


def distribution(values: np.ndarray) -> Distribution:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return Distribution()
    return Distribution(
        p50=float(np.percentile(values, 50)),
        p99=float(np.percentile(values, 99)),
        mean=float(values.mean()),
        n=int(len(values)),
    )


def throughput(
    profile: Profile,
    device: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    phases: Sequence[Phase] = (),
) -> Throughput:
    """Token rates. Per phase (``prefill_tok_s``, ``decode_tok_s``): the phase's tokens over its
    steps' time on the critical path (``Phase.step_per_token_ns``), None where the phase or its
    tokens are unknown. Over the window (``span_tok_s``): all tokens from the first step's
    start to the last one's end, the time between steps included, each step spanning its host
    range and its device work (``device``: per step row, the start of its effective device
    range, the end of its work, -1 without, and whether its front was trimmed): an
    asynchronous device finishes a step after its host range has ended, and a step whose work
    first waited on earlier work starts where that wait ends."""
    steps, req = profile.steps, profile.requests
    out = Throughput()
    if len(steps):
        ts = token_steps(profile)
        start, end = steps["start"][ts], steps["start"][ts] + steps["dur"][ts]
        if device is not None:
            on_dev = device[0][ts] >= 0
            # a step whose front waited on earlier work starts at its effective start
            start = np.where(on_dev, np.where(device[2][ts], device[0][ts], np.minimum(start, device[0][ts])), start)
            end = np.where(on_dev, np.maximum(end, device[1][ts]), end)
        span = int(end.max() - start.min())
        pt, dt = int(steps["prefill_tokens"][ts].sum()), int(steps["decode_tokens"][ts].sum())
        out.prefill_tokens, out.decode_tokens, out.duration_ns = pt, dt, span
        out.span_tok_s = ((pt + dt) / span * 1e9) if span and pt + dt else None
        rate = {p.phase: 1e9 / p.step_per_token_ns for p in phases if p.tokens and p.step_per_token_ns}
        out.prefill_tok_s, out.decode_tok_s = rate.get("prefill"), rate.get("decode")
    if len(req):
        # a request whose arrival was not seen (-1: it came before the records began) has no
        # TTFT or end-to-end latency, as in the per-request table
        seen, ok = req["arrival"] >= 0, req["first_token"] >= 0
        out.requests = int(len(req))
        out.ttft_ns = distribution((req["first_token"] - req["arrival"])[seen & ok])
        fin = ok & (req["finish"] >= 0) & (req["output_len"] > 1)
        out.tpot_ns = distribution((req["finish"] - req["first_token"])[fin] / (req["output_len"][fin] - 1))
        done = req["finish"] >= 0
        out.e2e_ns = distribution((req["finish"] - req["arrival"])[seen & done])
        if done.any():
            # from the first moment a request was seen: its arrival, else its first token or end
            first = np.where(seen, req["arrival"], np.where(ok, req["first_token"], req["finish"]))
            known = first >= 0
            span = int(req["finish"][done].max() - first[known].min()) if known.any() else 0
            out.output_tokens = int(req["output_len"].sum())
            out.output_tok_s = (out.output_tokens / span * 1e9) if span else None
        out.prompt_tokens = int(req["prompt_len"].sum())
    window = profile.run.get("throughput")  # a live run's figures over its measured window
    if isinstance(window, dict):
        for k, v in window.items():
            if k.startswith("window_") and k in Throughput.__struct_fields__:
                setattr(out, k, v)
    return out
