"""Engine steps from the step annotations of a torch trace, and which step rows count tokens.

An engine wraps each step in a ``record_function`` range whose name says what the
scheduler put in it. ``xpu_profiler.knowledge.step_grammar`` parses every form vLLM, its forks and
its neighbours write (vLLM simple, detailed, total-first and old forms; SGLang
``step[…]``; ATOM ``prefill[…]``/``decode[…]``; ``ProfilerStep#N``). When a trace
carries several families (SGLang writes ``execute_…`` and ``step[…]`` around the same
step) the best-ranked one defines the steps (``step_names.FAMILY_PRIORITY``);
graph-capture ranges (``capture_{n}_{MODE}``) are never steps. Tokens are taken as
written: a speculative-decoding step schedules more generation tokens than requests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.ordering import lexsort
from ..core.profile import K_ANNOTATION, P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, STEP_SCHEMA, Profile, Table
from ..knowledge.step_grammar import parse_step_names, step_family
from .ranks import engine_rows

#: what ``run["step_source"]`` says for each family of step annotations
STEP_SOURCES = {
    "vllm": "vllm_annotation",
    "sglang": "sglang_annotation",
    "atom": "atom_annotation",
    "profiler": "profiler_step",
}


def phase_codes(prefill_reqs: np.ndarray, decode_reqs: np.ndarray) -> np.ndarray:
    phase = np.full(len(prefill_reqs), P_UNKNOWN, np.int8)
    phase[(prefill_reqs > 0) & (decode_reqs == 0)] = P_PREFILL
    phase[(prefill_reqs == 0) & (decode_reqs > 0)] = P_DECODE
    phase[(prefill_reqs > 0) & (decode_reqs > 0)] = P_MIXED
    return phase


def steps_from_annotations(profile: Profile) -> Table:
    """Engine steps from the step annotations of a torch trace (host side only).

    Steps that scheduled nothing are left out and counted (``run["empty_steps"]``);
    steps whose prefill/decode token split had to be inferred are counted in
    ``run["inexact_steps"]``.
    """
    ev = profile.events
    idx = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0))
    if len(idx) == 0:
        return Table(STEP_SCHEMA)
    name_ids = ev["name"][idx]
    uniq = np.unique(name_ids).tolist()
    by_name = parse_step_names(profile.strings[i] for i in uniq)
    family = step_family(by_name.values())
    if family is None:
        return Table(STEP_SCHEMA)
    table = {nid: p for nid in uniq if (p := by_name.get(profile.strings[nid])) is not None and p.family == family}
    sel = idx[np.isin(name_ids, np.fromiter(table.keys(), dtype=np.int64))]
    sel = sel[lexsort((ev["start"][sel], ev["rank"][sel]))]
    rows = [table[i] for i in ev["name"][sel].tolist()]
    cols: dict[str, Any] = {
        "rank": ev["rank"][sel],
        "name": ev["name"][sel],
        "start": ev["start"][sel],
        "dur": ev["dur"][sel],
    }
    if family == "profiler":
        cols["step_id"] = np.array([p.step for p in rows], np.int64)
        cols["phase"] = np.full(len(sel), P_UNKNOWN, np.int8)
    else:
        pr, pt, dr, dt = (np.array([p[k] for p in rows], np.int64) for k in range(2, 6))
        empty = (pr == 0) & (dr == 0)
        if empty.any():
            profile.run["empty_steps"] = int(empty.sum())
        inexact = ~np.array([p.exact for p in rows], bool) & ~empty
        if inexact.any():
            profile.run["inexact_steps"] = int(inexact.sum())
        cols.update(prefill_reqs=pr, prefill_tokens=pt, decode_reqs=dr, decode_tokens=dt, phase=phase_codes(pr, dr))
        cols = {k: np.asarray(v)[~empty] for k, v in cols.items()}
        cols["step_id"] = _number_per_rank(cols["rank"])
    profile.run["step_source"] = STEP_SOURCES[family]
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
