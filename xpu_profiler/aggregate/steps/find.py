"""Engine steps from evidence, in layers, and which step rows count tokens.

``find_steps`` takes the first layer that finds steps: the live run's hooks (steps
recorded already), the engines' step annotations (every family of
``knowledge.step_grammar``, ``ProfilerStep#N`` last), python-stack frames of the
engine's per-step call (``steps.frames``), and last, inferred, bursts of device work
(``steps.segments``). Each step row records the layer that found it (``evidence``).
Steps that launched nothing (an ``execute_model`` with no scheduled request, a
``ProfilerStep`` around host work only) are dropped and counted. What was searched
and found is kept in ``profile.derived.step_search`` for the summary: a trace where no
step is found says so, naming what was looked for.

An engine wraps each step in a ``record_function`` range whose name says what the
scheduler put in it. ``xpu_profiler.knowledge.step_grammar`` parses every form vLLM, its forks and
its neighbours write (vLLM simple, detailed, total-first and old forms; SGLang
``step[…]``; ATOM ``prefill[…]``/``decode[…]``; ``ProfilerStep#N``). When a trace
carries several families (SGLang writes ``execute_…`` and ``step[…]`` around the same
step) the best-ranked one defines the steps (``step_grammar.FAMILY_PRIORITY``);
graph-capture ranges (``capture_{n}_{MODE}``) are never steps. Tokens are taken as
written: a speculative-decoding step schedules more generation tokens than requests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.launches import device_mask, launch_start
from ...core.ordering import lexsort, number_per_rank
from ...core.profile import (
    E_ANNOTATION,
    E_PROFILER_STEP,
    F_NONE,
    K_ANNOTATION,
    K_CPU_OP,
    P_UNKNOWN,
    PHASES,
    STEP_EVIDENCE,
    STEP_SCHEMA,
    Profile,
    Table,
)
from ...knowledge.step_grammar import parse_step_names, step_family
from ..ranks.align import engine_rows
from .frames import extend_with_sampling, frame_names, steps_from_frames
from .scopes import steps_from_scopes
from .segments import steps_from_segments

#: what ``derived.step_source`` says for each family of step annotations
STEP_SOURCES = {
    "vllm": "vllm_annotation",
    "sglang": "sglang_annotation",
    "atom": "atom_annotation",
    "trtllm": "trtllm_annotation",
    "profiler": "profiler_step",
}


def steps_from_annotations(profile: Profile) -> Table:
    """Engine steps from the step annotations of a torch trace (host side only).

    Steps that scheduled nothing are left out and counted (``derived.empty_steps``);
    steps whose prefill/decode token split had to be inferred are counted in
    ``derived.inexact_steps``.
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
    absurd = [profile.strings[nid] for nid, p in table.items() if p.absurd]
    if absurd:
        n = sum(p.absurd for p in rows)
        profile.derived.warn(
            f"{n} step annotation(s) carry request or token counts no step can have (first: {absurd[0][:80]!r}): "
            "the steps are kept, their counts left out"
        )
    cols: dict[str, Any] = {
        "rank": ev["rank"][sel],
        "name": ev["name"][sel],
        "start": ev["start"][sel],
        "dur": ev["dur"][sel],
    }
    if family == "profiler":
        cols["step_id"] = np.array([p.step for p in rows], np.int64)
        cols["phase"] = np.full(len(sel), P_UNKNOWN, np.int8)
        cols["evidence"] = np.full(len(sel), E_PROFILER_STEP, np.int8)
        cols["phase_from"] = np.full(len(sel), F_NONE, np.int8)
    else:
        pr, pt, dr, dt = (np.array([p[k] for p in rows], np.int64) for k in range(2, 6))
        # the phase the name says: its request counts, or its mode where the counts do not tell
        phase = np.array([PHASES.index(p.phase) for p in rows], np.int8)
        empty = phase == P_UNKNOWN
        if empty.any():
            profile.derived.empty_steps = int(empty.sum())
        inexact = ~np.array([p.exact for p in rows], bool) & ~empty
        if inexact.any():
            profile.derived.inexact_steps = int(inexact.sum())
        cols.update(prefill_reqs=pr, prefill_tokens=pt, decode_reqs=dr, decode_tokens=dt, phase=phase)
        cols["evidence"] = np.full(len(sel), E_ANNOTATION, np.int8)
        cols = {k: np.asarray(v)[~empty] for k, v in cols.items()}
        cols["step_id"] = number_per_rank(cols["rank"])
    profile.derived.step_source = STEP_SOURCES[family]
    return Table(STEP_SCHEMA, cols)


#: what each layer looks for, as the one line of a trace without steps says it
LOOKED_FOR = (
    "step annotations (vLLM execute_…, SGLang step[…], ATOM, TensorRT-LLM _forward_step, ProfilerStep#N)",
    "vLLM's model-runner scopes (gpu_model_runner: preprocess … forward …)",
    "python frames of the engine's per-step call (…worker.py(N): execute_model, forward_batch_generation)",
    "bursts of device work separated by idle",
)


def find_steps(profile: Profile) -> Table:
    """The steps of a profile whose hooks recorded none: the first layer that finds any
    (annotations, frames, device bursts); empty ones dropped and counted."""
    search: dict[str, Any] = {"looked_for": list(LOOKED_FOR)}
    steps = steps_from_annotations(profile)
    frames = frame_names(profile)
    if frames:
        search["frames"] = frames[:8]
    if not len(steps):
        steps = steps_from_scopes(profile)
        if len(steps):
            profile.derived.step_source = "runner_scopes"
    if not len(steps):
        steps = steps_from_frames(profile)
        if len(steps):
            profile.derived.step_source = "python_frames"
    if not len(steps):
        steps = steps_from_segments(profile)
        if len(steps):
            profile.derived.step_source = "device_segments"
    if len(steps):
        grown = extend_with_sampling(profile, steps)
        if grown:
            search["extended_by_sampling"] = grown
        steps = drop_empty(profile, steps)
    if len(steps):
        ev = steps["evidence"]
        search["found_by"] = {STEP_EVIDENCE[k]: int((ev == k).sum()) for k in np.unique(ev).tolist()}
    profile.derived.step_search = search
    return steps


def drop_empty(profile: Profile, steps: Table) -> Table:
    """Steps found by frames, ``ProfilerStep`` or device bursts that launched no device
    work (or, in a trace without any, ran no host op) are no engine step: dropped, and
    counted in ``derived.empty_steps``. Annotated steps were judged by their request counts."""
    judged = steps["evidence"] != E_ANNOTATION
    if not judged.any():
        return steps
    ev = profile.events
    if device_mask(ev["kind"]).any():
        rows = np.flatnonzero(device_mask(ev["kind"]) & (ev["start"] >= 0))
        la = launch_start(profile)[rows]
        t = np.where(la >= 0, la, ev["start"][rows])
    else:
        rows = np.flatnonzero((ev["kind"] == K_CPU_OP) & (ev["start"] >= 0))
        t = ev["start"][rows]
    rank = ev["rank"][rows].astype(np.int64)
    has = np.zeros(len(steps), bool)
    s_rank = steps["rank"].astype(np.int64)
    for r in np.unique(s_rank).tolist():
        tr = np.sort(t[rank == r])
        m = np.flatnonzero(s_rank == r)
        lo = np.searchsorted(tr, steps["start"][m], side="left")
        hi = np.searchsorted(tr, steps["start"][m] + steps["dur"][m], side="right")
        has[m] = hi > lo
    empty = judged & ~has
    if not empty.any():
        return steps
    profile.derived.empty_steps += int(empty.sum())
    return steps.take(np.flatnonzero(~empty))


def token_steps(profile: Profile) -> np.ndarray:
    """Rows of the steps that count tokens: one per engine step. Every tensor-parallel rank
    runs the same batch, so summing over ranks would multiply the tokens by the TP size."""
    return engine_rows(profile)
