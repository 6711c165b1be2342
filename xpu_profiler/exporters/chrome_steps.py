"""The engine steps' track of each rank in the Perfetto trace: one slice per step on the
host's clock, named by phase and tokens, with the scheduler's numbers in its args."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.profile import PHASES, Profile, Table

STEP_TID = 1


def _us(ns: int) -> float:
    """Integer ns → µs with at most 3 decimals (exact: relative times stay small)."""
    return ns / 1000.0


def engine_steps(
    profile: Profile, pid_of: dict[int, int], encode: Callable[[Any], bytes]
) -> tuple[list[dict], list[str], np.ndarray, np.ndarray]:
    """The engine steps' track: (metadata, texts, ts, dur)."""
    steps = profile.steps
    meta: list[dict[str, Any]] = []
    texts: list[str] = []
    s_ts, s_dur = [], []
    engine_of = profile.step_engine if len(profile.step_engine) == len(steps) else None
    if len(steps):
        for i in range(len(steps)):
            r = int(steps["rank"][i])
            if r not in pid_of:
                continue
            s, d = int(steps["start"][i]), int(steps["dur"][i])
            texts.append(encode(_step_slice(steps, i, engine_of, pid_of[r], s, d)).decode())
            s_ts.append(s)
            s_dur.append(d)
        for r in pid_of:
            meta += _track_meta(pid_of[r])
    return meta, texts, np.array(s_ts, np.int64), np.array(s_dur, np.int64)


def _step_slice(steps: Table, i: int, engine_of: np.ndarray | None, pid: int, s: int, d: int) -> dict[str, Any]:
    """Step ``i`` as a slice: "<phase> step <id> (<tokens> tok)", its numbers in args."""
    ph = PHASES[int(steps["phase"][i])]
    pt, dt = int(steps["prefill_tokens"][i]), int(steps["decode_tokens"][i])
    args = {
        "step_id": int(steps["step_id"][i]),
        "phase": ph,
        "prefill_tokens": pt,
        "decode_tokens": dt,
        "prefill_reqs": int(steps["prefill_reqs"][i]),
        "decode_reqs": int(steps["decode_reqs"][i]),
        "busy_us": _us(int(steps["busy"][i])),
    }
    if engine_of is not None and engine_of[i] >= 0:
        args["engine_step"] = int(engine_of[i])
    for c in ("running", "waiting"):
        if steps[c][i] >= 0:
            args[c] = int(steps[c][i])
    kv = float(steps["kv_usage"][i])
    if math.isfinite(kv):
        args["kv_usage"] = kv
    return {
        "ph": "X",
        "name": f"{ph} step {int(steps['step_id'][i])} ({pt + dt} tok)",
        "pid": pid,
        "tid": STEP_TID,
        "ts": _us(s),
        "dur": _us(d),
        "args": args,
    }


def _track_meta(pid: int) -> list[dict[str, Any]]:
    """The name and sort index of a rank's engine-steps track."""
    return [
        {"ph": "M", "pid": pid, "tid": STEP_TID, "name": "thread_name", "args": {"name": "engine steps"}},
        {"ph": "M", "pid": pid, "tid": STEP_TID, "name": "thread_sort_index", "args": {"sort_index": STEP_TID}},
    ]
