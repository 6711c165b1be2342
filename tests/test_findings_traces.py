"""Findings of the device-side and multi-rank rules, each triggered by a generated (or
real) trace made to trigger it and silent on the same workload without the cause.

The traces come from xpu_profiler/testing/gen_trace.py and xpu_profiler/testing/gen_ranks.py; every Summary is made by
the real readers and aggregator, device-side steps, idle breakdown and collectives
across ranks included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import real_data

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_KERNEL
from xpu_profiler.readers import load
from xpu_profiler.readers.records.device_logs import attach_device_logs
from xpu_profiler.testing import gen_ranks, gen_trace

SGLANG_DECODE = real_data.path("tracelens/sglang-qwen3-8b-decode.json.gz")


def rules(summary) -> dict:
    return {f.rule: f for f in summary.findings}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Generated traces, one per cause, and their healthy twins (same workload, same seed)."""
    out = tmp_path_factory.mktemp("findings_traces")
    t = {}
    for name, gap in (("eager", 600), ("host_bound", 25_000)):
        p = out / f"{name}.json.gz"
        gen_trace.generate(60_000, str(p), seed=1, host_gap_ns=gap)
        t[name] = p
    for name, kw in (
        ("even", {}),
        ("slow", {"slow_rank": 1, "slow_pct": 60.0}),
        ("moe", {"moe": True}),
        ("moe_hot", {"moe": True, "moe_hot_rank": 2, "moe_hot_pct": 60.0}),
    ):
        d = out / name
        t[name + "_expected"] = gen_ranks.generate(str(d), ranks=4, events=15_000, layers=4, seed=2, gz=True, **kw)
        t[name] = d
    return t


@pytest.fixture(scope="module")
def summaries(traces):
    return {k: analysis.analyze([v])[1] for k, v in traces.items() if not k.endswith("_expected")}


# -- rules whose inputs the aggregator has today ------------------------------------------


def test_graphs_off_on_an_eager_trace_and_silent_on_graph_replays(summaries):
    s = summaries["eager"]
    f = rules(s)["graphs_off_decode"]
    k = next(p for p in s.phases if p.phase == "decode").kernels
    # one cudaLaunchKernel per kernel (the generator's eager launches), no graph
    assert k.launches == k.count and k.per_launch == 1.0 and k.graph_launches == 0
    assert f.evidence["kernels_per_launch"] == 1.0 and f.evidence["graph_kernel_share"] == 0.0
    assert f.phase == "decode" and "enforce-eager" in f.fix
    # the real SGLang decode step replays a HIP graph: 544 of its 555 kernels behind one launch
    real = analysis.analyze([real_data.need("tracelens/sglang-qwen3-8b-decode.json.gz")])[1]
    k = next(p for p in real.phases if p.phase == "decode").kernels
    assert (k.count, k.graph_launches, k.graph_kernels) == (555, 1, 544)
    assert "graphs_off_decode" not in rules(real)


def test_moe_share_of_a_moe_model_and_none_on_its_dense_twin(summaries, traces):
    f = rules(summaries["moe"])["moe_share"]
    exp = traces["moe_expected"]
    moe_ns = sum(r["moe_kernel_dur_ns"] for r in exp["ranks"])
    moe = next(x for x in summaries["moe"].fused_ops if x.fused_op == "moe")
    assert moe.time_ns == pytest.approx(moe_ns, rel=0.01)  # the generator's own count
    assert f.evidence["share"] > 0.3 and f.evidence["moe_ns"] == moe.time_ns_by_phase[f.phase]
    assert "moe_share" not in rules(summaries["even"])


def test_moe_imbalance_across_expert_parallel_ranks(summaries, traces):
    hot = summaries["moe_hot"]
    f = rules(hot)["moe_imbalance"]
    per_rank = {r["rank"]: r["moe_kernel_dur_ns"] for r in traces["moe_hot_expected"]["ranks"]}
    assert f.ranks == [2] and f.evidence["rank"] == 2
    assert f.evidence["max_over_mean"] == pytest.approx(per_rank[2] / np.mean(list(per_rank.values())), rel=0.02)
    assert f.evidence["max_over_mean"] > 1.3
    assert "--enable-eplb" in f.fix
    even = summaries["moe"]
    assert "moe_imbalance" not in rules(even)
    moe = [r.time_ns_by_fused["moe"] for r in even.ranks]
    assert max(moe) / np.mean(moe) < 1.05


KUNLUN_LOG = ["[XPURT_PROF] xblas_xpu3::fc_cdnn_infer 14500 10000 ns", "[XPURT_PROF] kl3_all_reduce 2900 2000 ns"]


def _with_logs(trace_dir: Path, tmp: Path, keep_kernels_of: set[int]):
    """A TP=2 run's torch traces (kernels kept only on ``keep_kernels_of``) with each
    rank's [XPURT_PROF] log attached as the live run does it."""
    prof = load([trace_dir / f"rank-{r}.pt.trace.json.gz" for r in (0, 1)])
    ev = prof.events
    keep = (ev["kind"] != K_KERNEL) | np.isin(ev["rank"], list(keep_kernels_of))
    prof.events = ev.take(np.flatnonzero(keep))
    prof.run["engine"] = {"tensor_parallel_size": 2}
    (tmp / "xpu_logs").mkdir(parents=True)
    for r in (0, 1):
        (tmp / "xpu_logs" / f"rank_{r}.log").write_text("\n".join(KUNLUN_LOG) + "\n")
    return analysis.summarize(attach_device_logs(prof, tmp, lambda s: None))


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("two_ranks")
    gen_ranks.generate(str(d), ranks=2, events=6_000, layers=2, seed=5, gz=True)
    return d


def test_kunlun_logs_without_traced_kernels_on_a_rank(two_ranks, tmp_path):
    s = _with_logs(two_ranks, tmp_path / "a", keep_kernels_of={0})
    f = rules(s)["kunlun_no_kernels"]
    assert f.ranks == [1] and f.evidence["logs_used"] is False and f.evidence["kernel_lines"] == 4
    assert f.at_stake_share == pytest.approx(0.5)  # rank 1's half of the logged kernel time
    assert "XPU_CUPTI_ENABLE_DEVICE" in f.fix
    # no rank's torch trace has kernels: the logs stood in for both
    s = _with_logs(two_ranks, tmp_path / "b", keep_kernels_of=set())
    f = rules(s)["kunlun_no_kernels"]
    assert f.ranks == [0, 1] and f.evidence["logs_used"] is True
    # every rank traced its kernels: the logs are a cross-check, nothing to say
    s = _with_logs(two_ranks, tmp_path / "c", keep_kernels_of={0, 1})
    assert s.run.device_logs["used"] is False and "kunlun_no_kernels" not in rules(s)


def test_every_real_trace_gets_its_findings(tmp_path):
    for p in real_data.files(recursive=True):
        s = analysis.analyze([p])[1]
        for f in s.findings:
            assert 0.005 <= f.at_stake_share <= 1.0 and f.fix and f.trigger, (p.name, f)
        assert not [w for w in s.warnings if "finding rule" in w], (p.name, s.warnings)


# -- rules that read the device-side step timeline and the collectives (other work) ---------


def test_host_bound_decode_and_its_device_bound_twin(summaries):
    s = summaries["host_bound"]
    f = rules(s)["host_bound"]
    decode = next(p for p in s.phases if p.phase == "decode")
    # the finding is the phase's verdict: its device waited on the host >= 20% of its time
    assert decode.bound == "host" and f.phase == "decode"
    assert f.evidence["waiting_share"] == decode.device.waiting_on_host_ns / decode.device.period_ns >= 0.2
    assert f.evidence["host_wait_ns"] > f.evidence["kernel_wait_ns"]
    # eager launches (no graph replay) in a vLLM trace: graphs and compilation, in vLLM's terms
    assert f.evidence["graph_kernel_share"] == 0.0 and "--enforce-eager" in f.fix
    assert "host_bound" not in rules(summaries["eager"])
    assert next(p for p in summaries["eager"].phases if p.phase == "decode").bound == "device"


def test_exposed_communication_at_tp4(summaries):
    f = rules(summaries["slow"])["exposed_comm"]
    assert f.evidence["share"] > 0.15 and len(f.ranks) == 4
    assert "exposed_comm" not in rules(summaries["eager"])  # one rank: no collective at all


def test_straggler_rank(summaries):
    f = rules(summaries["slow"])["straggler_rank"]
    assert f.ranks == [1] and f.evidence["arrived_last_share"] > 0.9
    assert "straggler_rank" not in rules(summaries["even"])
