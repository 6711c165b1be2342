"""Engine steps from python-stack frames, and the sampling that follows a step.

vLLM keeps ``with_stack`` on by default: a trace without step annotations still holds one
``…/worker/gpu_worker.py(N): execute_model`` frame per step per worker thread (with the
model runner's own ``execute_model`` nested inside it), SGLang one
``tp_worker.py(N): forward_batch_generation``. A step is the outermost such frame of its
thread; frames inside ``_dummy_run`` (data-parallel dummy batches, graph capture) are no
step. In builds that split ``sample_tokens`` out of ``execute_model``, a step ends with
the sampling that follows it on that rank (``extend_with_sampling``, for annotated steps
too). Whether a step launched anything is decided later (``steps.drop_empty``).
"""

from __future__ import annotations

import numpy as np

from ...core.intervals import containing, top_level
from ...core.launches import thread_ids
from ...core.ordering import lexsort, number_per_rank
from ...core.profile import E_FRAME, F_NONE, K_ANNOTATION, P_UNKNOWN, STEP_SCHEMA, Profile, Table
from ...knowledge.step_grammar import STEP_FRAME

#: the frames' function names: a step, the sampling split out of it, no step
STEP_CALLS = ("execute_model", "forward_batch_generation")
SAMPLE_CALL = "sample_tokens"
DUMMY_CALL = "_dummy_run"


def frame_rows(profile: Profile) -> dict[str, np.ndarray]:
    """Host frame rows by function (``STEP_CALLS`` together under "step")."""
    ev = profile.events
    idx = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0) & (ev["start"] >= 0))
    out: dict[str, list[int]] = {"step": [], SAMPLE_CALL: [], DUMMY_CALL: []}
    if not len(idx):
        return {k: np.zeros(0, np.int64) for k in out}
    fn_of: dict[int, str] = {}
    for nid in np.unique(ev["name"][idx]).tolist():
        m = STEP_FRAME.search(profile.strings[nid])
        if m:
            fn_of[nid] = "step" if m.group(1) in STEP_CALLS else m.group(1)
    if not fn_of:
        return {k: np.zeros(0, np.int64) for k in out}
    names = ev["name"][idx]
    for key in out:
        ids = [n for n, f in fn_of.items() if f == key]
        out[key] = idx[np.isin(names, ids)].tolist() if ids else []
    return {k: np.asarray(v, np.int64) for k, v in out.items()}


def frame_names(profile: Profile) -> list[str]:
    """The distinct step-frame names of the trace (what the frames layer found)."""
    rows = frame_rows(profile)["step"]
    return sorted({profile.strings[i] for i in np.unique(profile.events["name"][rows]).tolist()})


def steps_from_frames(profile: Profile) -> Table:
    """One step per outermost ``STEP_CALLS`` frame of a thread, outside ``_dummy_run``;
    phase unknown here (``steps.phases`` infers it), step ids numbered per rank."""
    ev = profile.events
    rows = frame_rows(profile)
    step = rows["step"]
    if not len(step):
        return Table(STEP_SCHEMA)
    thread = thread_ids(profile)
    start, end = ev["start"], ev["start"] + ev["dur"]
    dummy = rows[DUMMY_CALL]
    if len(dummy):
        inside = containing(thread[dummy], start[dummy], end[dummy], thread[step], start[step], end[step]) >= 0
        step = step[~inside]
    if not len(step):
        return Table(STEP_SCHEMA)
    step = step[top_level(thread[step], start[step], end[step])]
    step = step[lexsort((start[step], ev["rank"][step]))]
    n = len(step)
    ranks = ev["rank"][step]
    return Table(
        STEP_SCHEMA,
        {
            "rank": ranks,
            "step_id": number_per_rank(ranks),
            "name": ev["name"][step],
            "start": start[step],
            "dur": ev["dur"][step],
            "phase": np.full(n, P_UNKNOWN, np.int8),
            "evidence": np.full(n, E_FRAME, np.int8),
            "phase_from": np.full(n, F_NONE, np.int8),
        },
    )


def extend_with_sampling(profile: Profile, steps: Table) -> int:
    """Extend each step to the end of the first ``sample_tokens`` frame that starts inside
    it or after it and before the rank's next step (in place); returns how many grew."""
    ev = profile.events
    sample = frame_rows(profile)[SAMPLE_CALL]
    if not len(sample) or not len(steps):
        return 0
    grown = 0
    s_rank = steps["rank"].astype(np.int64)
    dur = steps["dur"].copy()
    for r in np.unique(s_rank).tolist():
        rows = np.flatnonzero(s_rank == r)
        rows = rows[np.argsort(steps["start"][rows], kind="stable")]
        cand = sample[ev["rank"][sample] == r]
        if not len(cand):
            continue
        cand = cand[np.argsort(ev["start"][cand], kind="stable")]
        c_start = ev["start"][cand]
        c_end = c_start + ev["dur"][cand]
        s0 = steps["start"][rows]
        nxt = np.concatenate([s0[1:], [np.iinfo(np.int64).max]])
        first = np.searchsorted(c_start, s0 + 1, side="left")  # sampling starts after the step does
        for k, j in enumerate(first.tolist()):
            if j < len(cand) and c_start[j] < nxt[k]:
                new = int(c_end[j] - s0[k])
                if new > dur[rows[k]]:
                    dur[rows[k]] = new
                    grown += 1
    steps["dur"] = dur
    return grown
