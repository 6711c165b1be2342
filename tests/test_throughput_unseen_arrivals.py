"""A request whose arrival the records did not see (arrival -1: it came before recording
began) has no TTFT and no end-to-end latency in the throughput section, as in the
per-request table; the output rate runs from the first arrival seen."""

from __future__ import annotations

import json

import numpy as np
import pytest

from xpu_profiler.analysis import analyze

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
#: (req, arrival, first token, finish, prompt, output): wall-clock ns, -1 where not seen
REQUESTS = [
    ("r0", -1, T0 + 19 * MS, T0 + 20 * MS, 100, 2),
    ("r1", T0 + 8 * MS, T0 + 10 * MS, T0 + 20 * MS, 100, 11),
    ("r2", T0 + 7 * MS, T0 + 11 * MS, T0 + 21 * MS, 100, 11),
    ("r3", T0 + 6 * MS, T0 + 10 * MS, T0 + 22 * MS, 100, 13),
    ("r4", -1, T0 + 12 * MS, T0 + 23 * MS, 100, 12),
]


def record_dir(d):
    """One EngineCore's records: 10 decode steps of 1 ms from T0 + 2 ms, and the requests."""
    d.mkdir()
    sched = []
    for s in range(10):
        t = T0 + 2 * MS + s * MS
        sched.append([s, t, t + 100_000, t + MS - 50_000, 0, 4, 0, 4, 4, 0, 0.3, 0, 0])
    batch = {"pid": 100, "ppid": 1, "process": "EngineCore", "role": "engine", "run": "run1", "started_ns": T0}
    batch |= {"meta": {"model": "tiny", "tensor_parallel_size": 1}, "place": {"dp": 0, "world": 1, "rank": 0}}
    batch |= {"sched": sched, "requests": [list(r) for r in REQUESTS], "hook_ns": 1000}
    (d / "EngineCore-100.records.jsonl").write_text(json.dumps(batch) + "\n")
    return d


def dist(values: list[int]) -> tuple:
    v = np.array(values, np.float64)
    return float(np.percentile(v, 50)), float(np.percentile(v, 99)), float(v.mean()), len(v)


def test_latencies_only_of_requests_seen_arriving(tmp_path):
    _, s = analyze([record_dir(tmp_path / "records")])
    seen = [r for r in REQUESTS if r[1] >= 0]
    t = s.throughput
    assert t.requests == len(REQUESTS)
    assert (t.ttft_ns.p50, t.ttft_ns.p99, t.ttft_ns.mean, t.ttft_ns.n) == pytest.approx(
        dist([r[2] - r[1] for r in seen])
    )
    assert (t.e2e_ns.p50, t.e2e_ns.p99, t.e2e_ns.mean, t.e2e_ns.n) == pytest.approx(dist([r[3] - r[1] for r in seen]))
    # the per-request table agrees: no latency where the arrival was not seen
    assert sorted(x for x in s.requests.ttft_ns if x is not None) == sorted(r[2] - r[1] for r in seen)
    span = max(r[3] for r in REQUESTS) - min(r[1] for r in seen)
    assert t.output_tok_s == pytest.approx(sum(r[5] for r in REQUESTS) / span * 1e9)
