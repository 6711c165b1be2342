"""The collectives of a vLLM TP run on the CPU, worked out from the raw torch-profiler JSON
with the stdlib, and the checks of a Summary against them (a live run's traces and the
checked-in gloo traces alike)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

# the communication ops vLLM's CPU communicator records: its shared-memory all-reduce where
# the CPU's kernels have one (AVX-512), else torch.distributed over gloo, whose op only
# enqueues the work that one of gloo's threads then runs while the caller waits
COMM_OPS = {
    "_C::shm_allreduce": "all_reduce",
    "_C::shm_all_gather": "all_gather",
    "c10d::allreduce_": "all_reduce",
    "c10d::_allgather_base_": "all_gather",
}
GLOO_WORK = {"gloo:all_reduce": "all_reduce", "gloo:all_gather": "all_gather"}


def raw(path) -> dict:
    """The raw trace: its step annotations and communication ops (µs as written), each op
    with its end: its own, or that of the gloo work it handed off (the latest op of the
    kind that started before the work)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("execute_context_")), key=lambda e: e["ts"])
    comm = sorted((e for e in ev if e["name"] in COMM_OPS), key=lambda e: e["ts"])
    for c in comm:
        c["end"] = c["ts"] + c["dur"]
    for w in (e for e in ev if e["name"] in GLOO_WORK):
        before = [c for c in comm if COMM_OPS[c["name"]] == GLOO_WORK[w["name"]] and c["ts"] <= w["ts"]]
        if before:
            before[-1]["end"] = max(before[-1]["end"], w["ts"] + w["dur"])
    return {
        "rank": doc["distributedInfo"]["rank"],
        "steps": steps,
        "comm": comm,
        "base": doc["baseTimeNanoseconds"],
        "gloo": any(e["name"] in GLOO_WORK for e in ev),
    }


def union_us(spans) -> float:
    """Length of the union of (start, end) spans."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def check_against_raw(s, trace_files) -> None:
    """The summary's collectives, waits and communication time against the raw trace's."""
    ranks = [raw(p) for p in trace_files]
    assert ranks[0]["base"] == ranks[1]["base"]  # one host: one clock, the times compare as written
    assert s.alignment.clock == "shared" and s.comm.basis == "host"
    # the k-th op of a kind within each engine step, on each rank
    keyed: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for rk in ranks:
        seen: dict[tuple, int] = defaultdict(int)
        for c in rk["comm"]:
            step = [i for i, st in enumerate(rk["steps"]) if st["ts"] <= c["ts"] <= st["ts"] + st["dur"]]
            if not step:
                continue
            key = (COMM_OPS[c["name"]], step[0])
            keyed[key + (seen[key],)][rk["rank"]] = c
            seen[key] += 1
    wait = {0: 0.0, 1: 0.0}
    count = defaultdict(int)
    latency: dict[str, float] = defaultdict(float)
    for (kind, _, _), by in keyed.items():
        assert len(by) == 2  # every collective of one rank has its twin on the other
        latest = max(c["ts"] for c in by.values())
        for r, c in by.items():
            wait[r] += (latest - c["ts"]) * 1000
        count[kind] += 1
        latency[kind] += min(c["end"] - c["ts"] for c in by.values()) * 1000  # the last to arrive's
    got = {c.kind: 0 for c in s.comm.collectives}
    got_latency = {c.kind: 0 for c in s.comm.collectives}
    for c in s.comm.collectives:
        got[c.kind] += c.count
        got_latency[c.kind] += c.latency_ns
        assert c.group == "host" and c.ranks == 2 and c.start_skew_mean_ns > 0
    assert got == dict(count) and count["all_reduce"] > count["all_gather"] > 0
    assert s.comm.matched_events == s.comm.events == 2 * sum(count.values())
    for kind, ns in latency.items():
        assert got_latency[kind] == pytest.approx(ns, abs=2 * count[kind])
    mine = {r.rank: r for r in s.comm.ranks if r.phase == "all"}
    for r in (0, 1):
        assert mine[r].wait_ns == pytest.approx(wait[r], abs=2 * sum(count.values()))
        assert mine[r].arrived_last_share + mine[r].arrived_first_share == pytest.approx(1.0)
    # each rank's communication: the union of its ops, each until its gloo work ended
    for rk in ranks:
        assert mine[rk["rank"]].comm_ns == pytest.approx(
            union_us((c["ts"], c["end"]) for c in rk["comm"]) * 1000, abs=2 * len(rk["comm"])
        )
    comm = next(f for f in s.fused_ops if f.fused_op == "communication")
    if any(rk["gloo"] for rk in ranks):  # the op time is the enqueueing ops'; the wait for the work is not in it
        # (each op's span, until its gloo work ended, holds the op itself: how much longer is the machine's)
        assert sum(mine[r].comm_ns for r in (0, 1)) >= comm.time_ns
    else:
        assert sum(mine[r].comm_ns for r in (0, 1)) == comm.time_ns  # top-level host ops: the union is the sum


def check_no_overlap(s) -> None:
    """One thread issues the collective and waits for it: nothing hides it."""
    for r in (x for x in s.comm.ranks if x.phase == "all"):
        assert r.comm_ns > 0 and r.overlapped_ns == 0 and r.exposed_ns == r.comm_ns
        assert 0 < r.exposed_share < 1 and r.step_ns > r.comm_ns
    phases = {x.phase for x in s.comm.ranks}
    assert {"prefill", "decode", "mixed", "all"} <= phases
