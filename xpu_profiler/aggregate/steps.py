"""Engine steps from the step annotations of a torch trace, and which step rows count tokens.

vLLM's worker wraps each engine step in a ``record_function`` range whose name says
what the scheduler put in it. Every form it (and its forks) writes is read:

- ``execute_context_{n}({tokens})_generation_{m}({tokens})`` (vLLM 0.15+);
- the detailed form behind ``detailed_trace_annotation``, with or without a leading
  ``execute_{total}_``: ``execute_{total}_context_{n}(sq{tokens}sk{kv}sqsq{..}sqsk{..})
  _generation_{m}(sq{tokens}sk{..}...)``; ``sq`` is the phase's scheduled tokens, so
  speculative decoding (more than one token per generation request) counts right;
- ``execute_new_{n}_cached_{m}`` (older vLLM: request counts only, no tokens).

Without any of them, ``ProfilerStep#N`` ranges are the steps (phase unknown).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..profile import K_ANNOTATION, P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, STEP_SCHEMA, Profile, Table
from .ranks import engine_rows

# context_N(...)_generation_M(...), with an optional total in front
_EXECUTE = re.compile(r"^execute_(?:(\d+)_)?context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)$")
_OLD = re.compile(r"^execute_new_(\d+)_cached_(\d+)$")
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_TOKENS = re.compile(r"^(?:sq)?(\d+)")  # "63" or "sq63sk…": the phase's scheduled tokens


def parse_step_name(name: str) -> tuple[int, int, int, int] | None:
    """(prefill requests, prefill tokens, decode requests, decode tokens) of a vLLM step
    annotation, or None for any other name."""
    m = _EXECUTE.match(name)
    if m:
        total, n_ctx, ctx, n_gen, gen = m.groups()
        ct, gt = _TOKENS.match(ctx), _TOKENS.match(gen)
        if ct and gt:
            return int(n_ctx), int(ct.group(1)), int(n_gen), int(gt.group(1))
        if total is not None:  # token counts in a form we do not know: one token per decode request
            dec = min(int(n_gen), int(total)) if int(n_ctx) else int(total)
            return int(n_ctx), int(total) - dec, int(n_gen), dec
        return None
    m = _OLD.match(name)
    if m:
        return int(m.group(1)), 0, int(m.group(2)), 0
    return None


def phase_codes(prefill_reqs: np.ndarray, decode_reqs: np.ndarray) -> np.ndarray:
    phase = np.full(len(prefill_reqs), P_UNKNOWN, np.int8)
    phase[(prefill_reqs > 0) & (decode_reqs == 0)] = P_PREFILL
    phase[(prefill_reqs == 0) & (decode_reqs > 0)] = P_DECODE
    phase[(prefill_reqs > 0) & (decode_reqs > 0)] = P_MIXED
    return phase


def steps_from_annotations(profile: Profile) -> Table:
    """Engine steps from vLLM's step annotations in a torch trace (host side only).

    Falls back to ``ProfilerStep#N`` ranges (phase unknown) when vLLM's are absent.
    Steps that scheduled nothing are left out and counted (``run["empty_steps"]``).
    """
    ev = profile.events
    idx = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0))
    if len(idx) == 0:
        return Table(STEP_SCHEMA)
    name_ids = ev["name"][idx]
    parsed: dict[int, tuple] = {}
    profiler_steps: dict[int, int] = {}
    for nid in np.unique(name_ids).tolist():
        s = profile.strings[nid]
        counts = parse_step_name(s)
        if counts is not None:
            parsed[nid] = counts
            continue
        m = _PROFILER_STEP.match(s)
        if m:
            profiler_steps[nid] = int(m.group(1))
    use_vllm = bool(parsed)
    table = parsed if use_vllm else profiler_steps
    if not table:
        return Table(STEP_SCHEMA)
    sel = idx[np.isin(name_ids, np.fromiter(table.keys(), dtype=np.int64))]
    sel = sel[np.lexsort((ev["start"][sel], ev["rank"][sel]))]
    nids = ev["name"][sel].tolist()
    cols: dict[str, Any] = {
        "rank": ev["rank"][sel], "name": ev["name"][sel], "start": ev["start"][sel], "dur": ev["dur"][sel],
    }
    if use_vllm:
        pr, pt, dr, dt = (np.array([table[i][k] for i in nids], np.int64) for k in range(4))
        empty = (pr == 0) & (dr == 0)
        if empty.any():
            profile.run["empty_steps"] = int(empty.sum())
        cols.update(prefill_reqs=pr, prefill_tokens=pt, decode_reqs=dr, decode_tokens=dt,
                    phase=phase_codes(pr, dr))
        cols = {k: np.asarray(v)[~empty] for k, v in cols.items()}
        cols["step_id"] = _number_per_rank(cols["rank"])
    else:
        cols["step_id"] = np.array([table[i] for i in nids], np.int64)
        cols["phase"] = np.full(len(sel), P_UNKNOWN, np.int8)
    profile.run["step_source"] = "vllm_annotation" if use_vllm else "profiler_step"
    return Table(STEP_SCHEMA, cols)


def _number_per_rank(ranks: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each rank, in the (rank-sorted) row order."""
    step_id = np.zeros(len(ranks), np.int64)
    for r in np.unique(ranks):
        m = ranks == r
        step_id[m] = np.arange(int(m.sum()))
    return step_id


def token_steps(profile: Profile) -> np.ndarray:
    """Rows of the steps that count tokens: one per engine step. Every tensor-parallel rank
    runs the same batch, so summing over ranks would multiply the tokens by the TP size."""
    return engine_rows(profile)
