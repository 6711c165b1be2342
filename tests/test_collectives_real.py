"""Collectives of a real two-rank job (HTA's test data, NCCL on CUDA, no process-group
metadata): the numbers the analysis gives are checked against the same quantities
worked out here straight from the raw JSON, with the stdlib."""

from __future__ import annotations

import gzip
import json
import statistics
from collections import defaultdict

import pytest
import real_data

from xpu_profiler import analysis

TWO_RANKS = real_data.path("two-ranks")
KIND = {"nccl:all_reduce": "all_reduce", "nccl:all_to_all": "all_to_all", "nccl:_all_gather_base": "all_gather"}

if not TWO_RANKS.is_dir():
    pytestmark = pytest.mark.skip(reason=real_data.MISSING)


def raw_collectives(rank: int) -> list[dict]:
    """Each NCCL kernel with its kind (the nccl:* range it was launched from), stream,
    ProfilerStep and start/end in ns, from the raw events."""
    with gzip.open(TWO_RANKS / f"rank-{rank}.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    launch = {e["args"]["correlation"]: e for e in xs if e.get("cat") == "cuda_runtime" and "correlation" in e["args"]}
    ranges = [e for e in xs if e.get("cat") == "user_annotation"]
    out = []
    for k in (e for e in xs if e.get("cat") == "kernel" and e["name"].startswith("nccl")):
        rt = launch[k["args"]["correlation"]]

        def holding(prefix, same_thread):
            return [
                r
                for r in ranges
                if r["name"].startswith(prefix)
                and (r["tid"] == rt["tid"] or not same_thread)
                and r["ts"] <= rt["ts"]
                and rt["ts"] + rt["dur"] <= r["ts"] + r["dur"]
            ]

        (ann,) = holding("nccl:", True)
        (step,) = holding("ProfilerStep#", False)  # a step holds the launches of every thread
        start = round(k["ts"] * 1000)
        out.append(
            {
                "kind": KIND[ann["name"]],
                "stream": k["args"]["stream"],
                "step": step["name"],
                "start": start,
                "end": start + round(k["dur"] * 1000),
                "dur": round(k["dur"] * 1000),
            }
        )
    return out


def expected() -> dict:
    """Per kind: count, latency, wait by rank, last arrivals; and rank 1's clock offset."""
    keyed: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for rank in (0, 1):
        seen: dict[tuple, int] = defaultdict(int)
        for c in sorted(raw_collectives(rank), key=lambda c: c["start"]):
            key = (c["stream"], c["kind"], c["step"])
            keyed[key + (seen[key],)][rank] = c
            seen[key] += 1
    both = [v for v in keyed.values() if len(v) == 2]
    offset = int(statistics.median(v[1]["end"] - v[0]["end"] for v in both))
    out: dict = {"offset": offset, "kinds": {}}
    for v in both:
        start = {0: v[0]["start"], 1: v[1]["start"] - offset}
        latest = max(start.values())
        row = out["kinds"].setdefault(v[0]["kind"], {"count": 0, "latency": 0, "wait": {0: 0, 1: 0}, "last": {}})
        row["count"] += 1
        row["latency"] += min(v[0]["dur"], v[1]["dur"])
        for r in (0, 1):
            row["wait"][r] += latest - start[r]
        last = min(r for r in (0, 1) if start[r] == latest)
        row["last"][last] = row["last"].get(last, 0) + 1
    return out


def test_two_rank_collectives_match_the_raw_trace():
    exp = expected()
    _, s = analysis.analyze([TWO_RANKS])
    assert s.alignment.steps == "step_id" and s.alignment.collectives == "step"
    assert s.alignment.clock == "collective_ends"
    # the trace's times are epoch µs: read as float64 ns they carry ±128 ns of rounding
    assert abs(s.alignment.clock_offset_ns_by_rank["1"] - exp["offset"]) <= 256
    got = {c.kind: c for c in s.comm.collectives}
    assert sorted(got) == sorted(exp["kinds"])
    for kind, e in exp["kinds"].items():
        c = got[kind]
        assert (c.count, c.ranks, c.phase) == (e["count"], 2, "unknown")
        assert c.latency_ns == e["latency"]
        for r in (0, 1):
            assert c.wait_ns_by_rank[str(r)] == pytest.approx(e["wait"][r], abs=512 * e["count"])
        assert c.arrived_last_by_rank == {str(r): n for r, n in sorted(e["last"].items())}
        assert c.bytes is None and c.bus_bytes_s is None  # the trace does not say the sizes
    assert s.comm.events == s.comm.matched_events == 20 and s.comm.basis == "device"


def test_two_rank_numbers_are_sane():
    _, s = analysis.analyze([TWO_RANKS])
    for c in s.comm.collectives:
        assert 0 < c.latency_ns and all(w >= 0 for w in c.wait_ns_by_rank.values())
        assert c.start_skew_max_ns >= c.start_skew_mean_ns >= 0 and c.end_skew_max_ns >= 0
    for r in s.comm.ranks:
        assert 0 <= r.overlapped_ns <= r.comm_ns and r.exposed_ns == r.comm_ns - r.overlapped_ns
        assert r.exposed_share is not None and 0 <= r.exposed_share <= 1
        assert r.arrived_last_share + r.arrived_first_share == pytest.approx(1.0)  # two ranks
    # matched by their order only, the all-to-alls end ~0.1 s apart: said in a warning
    assert any("may not be the same collectives" in w and "all_to_all" in w for w in s.warnings)
    assert not any("all_gather" in w for w in s.warnings)
