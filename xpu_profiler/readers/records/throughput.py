"""Throughput: tokens/s per step (prefill, decode, output) and per-request latencies
(arrival, first token, finish → TTFT, TPOT, end-to-end)."""

from __future__ import annotations

import numpy as np

from ...core.profile import REQUEST_SCHEMA, StringTable, Table
from ...core.records import S_IDX
from .steps import unique_sched


def requests_table(records: list, strings: StringTable, base_ns: int) -> Table:
    """(req id, arrival, first token, finish, prompt len, output len) → the requests table."""
    seen: dict = {}
    for r in records:
        seen[r[0]] = r  # a finished record overrides an earlier partial one
    rows = list(seen.values())
    if not rows:
        return Table(REQUEST_SCHEMA)

    def rel(v):
        return int(v) - base_ns if v is not None and int(v) >= 0 else -1

    return Table(
        REQUEST_SCHEMA,
        {
            # the assembler appends the rank of the engine that served it (absent: rank 0)
            "rank": np.array([int(r[6]) if len(r) > 6 else 0 for r in rows], np.int32),
            "req": strings.intern_many(str(r[0]) for r in rows),
            "arrival": np.array([rel(r[1]) for r in rows], np.int64),
            "first_token": np.array([rel(r[2]) for r in rows], np.int64),
            "finish": np.array([rel(r[3]) for r in rows], np.int64),
            "prompt_len": np.array([int(r[4]) for r in rows], np.int64),
            "output_len": np.array([int(r[5]) for r in rows], np.int64),
        },
    )


def step_rate_samples(sched: list, engine_rank: dict[int, int] | None = None) -> list[tuple]:
    """Per-step token rates as counter samples at each step's end, filed under the rank of
    the engine's first worker (``engine_rank``: DP rank → global rank; rank 0 unknown)."""
    out = []
    first = engine_rank or {}
    for r in unique_sched(sched):
        rank = first.get(int(r[S_IDX["dp_rank"]]), 0)
        t0, t1 = int(r[S_IDX["t_sched"]]), int(r[S_IDX["t_end"]])
        dur = t1 - t0
        if dur <= 0:
            continue
        pt, dt = r[S_IDX["prefill_tokens"]], r[S_IDX["decode_tokens"]]
        first_tok = r[S_IDX["first_tokens"]] if len(r) > S_IDX["first_tokens"] else 0
        out.append((rank, "prefill_tokens_per_s", t1, pt * 1e9 / dur))
        out.append((rank, "decode_tokens_per_s", t1, dt * 1e9 / dur))
        out.append((rank, "output_tokens_per_s", t1, (dt + first_tok) * 1e9 / dur))
    return out


def overall(sched: list, requests: list, t_start: int, t_end: int) -> dict:
    """Run-level throughput figures (JSON-ready) over the measured window."""
    sched = unique_sched(sched)
    pt = sum(int(r[S_IDX["prefill_tokens"]]) for r in sched)
    dt = sum(int(r[S_IDX["decode_tokens"]]) for r in sched)
    out_tok = sum(int(r[5]) for r in requests) if requests else None
    wall = max(1, t_end - t_start)
    res = {
        "window_ns": int(wall),
        "window_prefill_tokens": pt,
        "window_decode_tokens": dt,
        "window_total_tok_s": (pt + dt) * 1e9 / wall,
    }
    if out_tok is not None:
        res["window_output_tokens"] = out_tok
        res["window_output_tok_s"] = out_tok * 1e9 / wall
    return res
