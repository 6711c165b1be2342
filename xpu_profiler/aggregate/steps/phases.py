"""The phase of a step found without annotation fields, inferred from its evidence.

Steps found by frames, ``ProfilerStep`` or device bursts say nothing of their batch.
In a vLLM or SGLang trace (``engine_family``) their phase is inferred, and labelled so:

- **input copies** (vLLM): ``_prepare_inputs`` copies ``input_ids`` (int32, 4 bytes a
  token) and then ``positions`` (int64, 8 bytes a token) host-to-device, back to back:
  the first such pair ``(4T, 8T)`` gives the step's tokens T. After it, the attention
  metadata copies ``query_start_loc`` (int32, R + 1 entries) then ``seq_lens`` (R):
  a pair ``(4(R+1), 4R)`` with ``1 <= R <= T`` gives the requests R. (Newer builds copy
  those two at their full buffer size before the token pair: R stays unknown.)
  Tokens = requests: every request decodes one token (decode); one request with more
  tokens: prefill; T > R > 1: prefill or mixed, left unknown.
- **graph launches** (vLLM, SGLang): one launch for the whole step is a full-graph
  replay, which both engines capture for uniform decode batches only: decode. Many
  launches (piecewise replay) or none (eager) do not tell the phase.

Each inferred step records its source (steps ``phase_from``); the evidence per phase,
in words, is kept in ``profile.derived.phase_inferred``.
"""

from __future__ import annotations

import numpy as np

from ...core.launches import launch_rows, launch_start
from ...core.profile import (
    E_ANNOTATION,
    E_HOOKS,
    F_COPIES,
    F_GRAPHS,
    F_NONE,
    K_MEMCPY,
    K_RUNTIME,
    P_DECODE,
    P_PREFILL,
    P_UNKNOWN,
    PHASES,
    Profile,
)
from ...knowledge.copy_kinds import HTOD, UNKNOWN, direction_of_label
from ...knowledge.runtime_api import GRAPH_LAUNCH
from ..engine_family import detect


def token_counts(sizes: list[int]) -> tuple[int | None, int | None]:
    """(tokens, requests) from a step's host-to-device copy sizes in launch order."""
    tokens = requests = None
    for i in range(len(sizes) - 1):
        a, b = sizes[i], sizes[i + 1]
        if tokens is None:
            if a > 0 and a % 4 == 0 and b == 2 * a:
                tokens, after = a // 4, i + 2
        elif i >= after and a == b + 4 and b > 0 and b % 4 == 0 and b // 4 <= tokens:
            requests = b // 4
            break
    return tokens, requests


def infer_phases(profile: Profile) -> None:
    """Fill the phase (and tokens, where known) of steps without one (in place), and the
    events' phase column after them."""
    steps, ev = profile.steps, profile.events
    todo = np.flatnonzero((steps["phase"] == P_UNKNOWN) & ~np.isin(steps["evidence"], (E_HOOKS, E_ANNOTATION)))
    if not len(todo):
        return
    engine, _ = detect(profile)
    if engine not in ("vllm", "sglang"):
        return
    n = len(steps)
    st = ev["step"].astype(np.int64)
    in_step = st >= 0
    names = profile.strings
    # graph launches per step
    rt = np.flatnonzero((ev["kind"] == K_RUNTIME) & in_step)
    rt_names = np.unique(ev["name"][rt]).tolist()
    graph_ids = [i for i in rt_names if GRAPH_LAUNCH.search(names[i])]
    g = rt[np.isin(ev["name"][rt], graph_ids)] if graph_ids else rt[:0]
    graphs = np.bincount(st[g], minlength=n)[:n]
    # host-to-device copies per step, in launch order
    sizes: dict[int, list[int]] = {}
    if engine == "vllm":
        cp = np.flatnonzero((ev["kind"] == K_MEMCPY) & in_step & (ev["flops"] >= 0))
        cp = cp[copy_directions(profile, cp) == HTOD]  # what each copy is, not its label
        la = launch_start(profile)[cp]
        order = np.lexsort((ev["start"][cp], np.where(la >= 0, la, ev["start"][cp]), st[cp]))
        for r, b in zip(st[cp][order].tolist(), ev["flops"][cp][order].tolist()):
            sizes.setdefault(r, []).append(int(b))
    phase = steps["phase"].copy()
    src = steps["phase_from"].copy()
    cols = {k: steps[k].copy() for k in ("prefill_tokens", "decode_tokens", "prefill_reqs", "decode_reqs")}
    notes: dict[int, dict[str, list]] = {}
    for k in todo.tolist():
        t, r = token_counts(sizes.get(k, []))
        p, how = P_UNKNOWN, F_NONE
        if t is not None and r is not None and t == r:
            p, how = P_DECODE, F_COPIES
            cols["decode_tokens"][k], cols["decode_reqs"][k] = t, r
        elif t is not None and r == 1 and t > 1:
            p, how = P_PREFILL, F_COPIES
            cols["prefill_tokens"][k], cols["prefill_reqs"][k] = t, 1
        elif t == 1 and r is None:
            p, how = P_DECODE, F_COPIES
            cols["decode_tokens"][k], cols["decode_reqs"][k] = 1, 1
        elif graphs[k] == 1 and (r is None or r == t):
            p, how = P_DECODE, F_GRAPHS
            if t is not None:  # a uniform decode batch: one token per request
                cols["decode_tokens"][k], cols["decode_reqs"][k] = t, t
        phase[k], src[k] = p, how
        n_ = notes.setdefault(p, {"tokens": [], "requests": [], "graphs": [], "how": []})
        n_["tokens"].append(t)
        n_["requests"].append(r)
        n_["graphs"].append(int(graphs[k]))
        n_["how"].append(how)
    steps["phase"], steps["phase_from"] = phase, src
    for c, v in cols.items():
        steps[c] = v
    has = st >= 0
    new_phase = ev["phase"].copy()
    new_phase[has] = phase[st[has]]
    ev["phase"] = new_phase
    words = {PHASES[p]: _words(v) for p, v in notes.items() if p != P_UNKNOWN}
    if words:
        profile.derived.phase_inferred = words


def copy_directions(profile: Profile, rows: np.ndarray) -> np.ndarray:
    """The direction of each copy of ``rows`` (``knowledge.copy_kinds``): what its launching
    call says (ROCm's ``kind`` argument), else what the profiler recorded of it, else its label."""
    ev = profile.events
    calls = launch_rows(profile)[rows]
    call = np.where(calls >= 0, ev["copy"][np.maximum(calls, 0)], UNKNOWN)
    own = ev["copy"][rows]
    uniq, inv = np.unique(ev["name"][rows], return_inverse=True)
    label = np.array([direction_of_label(profile.strings[int(u)]) for u in uniq.tolist()], np.int8)
    said = label[inv.reshape(-1)] if len(rows) else np.zeros(0, np.int8)
    return np.where(call != UNKNOWN, call, np.where(own != UNKNOWN, own, said))


def _words(v: dict[str, list]) -> str:
    """One phase's inference in words (what its steps showed)."""
    n = len(v["how"])
    parts = []
    copies = sum(h == F_COPIES for h in v["how"])
    graphs = sum(h == F_GRAPHS for h in v["how"])
    toks = sorted({t for t in v["tokens"] if t is not None})
    reqs = sorted({r for r in v["requests"] if r is not None})
    if copies:
        parts.append(
            f"input copies ({_few(toks)} token(s) for {_few(reqs) if reqs else 'an unknown number of'} request(s) "
            f"a step) in {copies}"
        )
    if graphs:
        parts.append(f"one graph launch a step (a full-graph replay: a uniform decode batch) in {graphs}")
    return f"from {' and '.join(parts)} of {n} step(s); graph launches per step: {_few(sorted(set(v['graphs'])))}"


def _few(values: list[int]) -> str:
    if not values:
        return "none"
    if len(values) <= 3:
        return ", ".join(f"{x:,}" for x in values)
    return f"{values[0]:,}–{values[-1]:,}"
