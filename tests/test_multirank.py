"""Multi-rank analysis on traces from xpu_profiler/testing/gen_ranks.py, whose ground truth is counted
while generating: engine steps counted once, ranks aligned by step whatever their
clocks, collectives matched across ranks, the slow rank named as the straggler, the
others' wait equal to the delay it injects, per-token costs per rank, vLLM's parallel
groups from the file names."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from xpu_profiler import analysis
from xpu_profiler.aggregate.ranks import layout
from xpu_profiler.core.profile import DEVICE_KINDS, EVENT_SCHEMA, K_KERNEL, P_DECODE, STEP_SCHEMA, Profile, Table
from xpu_profiler.knowledge.collective_kinds import KIND_NAMES, kind_of
from xpu_profiler.knowledge.taxonomy import FUSED_OPS
from xpu_profiler.testing import gen_ranks

RANKS, SLOW, PCT = 4, 2, 30


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    """4 ranks, rank 2's kernels 30% longer, clocks up to 5 s apart; analysed once."""
    out = tmp_path_factory.mktemp("slow")
    exp = gen_ranks.generate(
        str(out),
        ranks=RANKS,
        events=30_000,
        layers=8,
        seed=5,
        slow_rank=SLOW,
        slow_pct=PCT,
        clock_offset_s=5.0,
        gz=True,
    )
    profile, summary = analysis.analyze([out], engine="serial")
    return exp, profile, summary


def _comm(summary, phase="all"):
    return {c.rank: c for c in summary.comm.ranks if c.phase == phase}


def test_the_slow_rank_is_the_straggler(slow_run):
    exp, _, s = slow_run
    comm = _comm(s)
    assert comm[SLOW].arrived_last_share >= 0.9
    assert max(comm, key=lambda r: comm[r].arrived_last_share) == SLOW
    assert all(comm[r].arrived_first_share > comm[SLOW].arrived_first_share for r in comm if r != SLOW)
    # every collective of every rank was matched, by the process group's sequence number
    assert s.comm.matched_events == s.comm.events == exp["collectives"] * RANKS
    assert s.alignment.collectives == "seq"
    assert sum(c.count for c in s.comm.collectives) == exp["collectives"]


def test_the_others_wait_for_the_injected_delay(slow_run):
    exp, _, s = slow_run
    comm = _comm(s)
    by = {r["rank"]: r for r in exp["ranks"]}
    slow_compute = by[SLOW]["compute_kernel_dur_ns"]
    for r, row in by.items():
        # the wait measured is the wait the generator made: last arrival − own, summed
        assert comm[r].wait_ns == row["nccl_wait_ns"]
        if r != SLOW:
            # and it is the compute the slow rank spends on top of this one's, within 5%
            injected = slow_compute - row["compute_kernel_dur_ns"]
            assert comm[r].wait_ns == pytest.approx(injected, rel=0.05)
    assert comm[SLOW].wait_ns < 0.05 * min(comm[r].wait_ns for r in comm if r != SLOW)


def test_clocks_seconds_apart_are_aligned_on_collective_ends(slow_run):
    exp, _, s = slow_run
    al = s.alignment
    assert al.clock == "collective_ends"
    offsets = [r["clock_offset_ns"] for r in exp["ranks"]]
    assert max(offsets) - min(offsets) > 2e9
    for r in exp["ranks"]:  # each rank's clock offset against rank 0, to the nanosecond
        assert abs(al.clock_offset_ns_by_rank[str(r["rank"])] - (r["clock_offset_ns"] - offsets[0])) <= 1
    # on the aligned clock the ranks of a collective end together
    assert all(c.end_skew_max_ns <= 1 for c in s.comm.collectives)


def test_engine_steps_are_counted_once(slow_run):
    exp, _, s = slow_run
    t = s.totals
    assert t.steps == exp["steps"] and t.step_rows == exp["steps"] * RANKS and t.engines == 1
    assert {p.phase: p.steps for p in s.phases if p.steps} == {k: v for k, v in exp["steps_by_phase"].items() if v}
    assert s.alignment.steps == "content" and set(s.alignment.step_shift_by_rank.values()) == {0}
    es = s.engine_steps
    assert len(es.span_ns) == exp["steps"] and set(es.ranks) == {RANKS}
    # the slow rank is the slowest in (nearly) every engine step
    assert es.slowest_rank.count(SLOW) > 0.9 * exp["steps"]
    assert max(s.ranks, key=lambda r: r.slowest_steps).rank == SLOW
    # tokens once per engine step: equal to one rank's rows
    st = s.steps
    one = [i for i, r in enumerate(st.rank) if r == 0]
    assert t.prefill_tokens == sum(st.prefill_tokens[i] for i in one)
    assert t.decode_tokens == sum(st.decode_tokens[i] for i in one)


def test_per_token_cost_is_per_rank_never_summed(slow_run):
    exp, profile, s = slow_run
    ev = profile.events
    decode_tokens = {p.phase: p.tokens for p in s.phases}["decode"]
    gemm = next(f for f in s.fused_ops if f.fused_op == "gemm")
    per_rank = []
    for r in range(RANKS):  # each rank's own decode gemm time over the decode tokens of its own steps
        m = (
            (ev["rank"] == r)
            & (ev["phase"] == P_DECODE)
            & (ev["fused"] == FUSED_OPS.index("gemm"))
            & np.isin(ev["kind"], DEVICE_KINDS)
        )
        per_rank.append(int(ev["dur"][m].sum()) / decode_tokens)
    assert gemm.per_token_ns_by_phase["decode"] == pytest.approx(np.mean(per_rank), rel=1e-3)
    assert gemm.per_token_max_ns_by_phase["decode"] == pytest.approx(max(per_rank), rel=1e-3)
    assert np.argmax(per_rank) == SLOW
    # the sum over ranks would be RANKS times the mean
    assert gemm.time_ns_by_phase["decode"] / decode_tokens == pytest.approx(RANKS * np.mean(per_rank), rel=1e-3)


def test_ranks_side_by_side(slow_run):
    _, _, s = slow_run
    rows = {r.rank: r for r in s.ranks}
    assert all(r.groups == {"tp": r.rank} for r in s.ranks)  # from the "VllmWorker TP{r}" thread names
    assert sum(r.time_ns_by_fused["communication"] for r in s.ranks) == next(
        f.time_ns for f in s.fused_ops if f.fused_op == "communication"
    )
    assert rows[SLOW].time_ns_by_fused["gemm"] > 1.2 * rows[0].time_ns_by_fused["gemm"]
    (g,) = s.parallel.groups
    assert (g.dim, g.ranks, g.straggler) == ("tp", list(range(RANKS)), SLOW) and g.straggler_share >= 0.9


def test_ranks_that_start_at_different_steps_align_on_content(tmp_path):
    # two data-parallel replicas of two TP ranks, named as vLLM does; rank 3's profiler
    # started 3 steps late, rank 1 (replica 0) is slow
    exp = gen_ranks.generate(
        str(tmp_path),
        ranks=4,
        tp=2,
        vllm_names=True,
        events=12_000,
        layers=4,
        seed=2,
        slow_rank=1,
        slow_pct=PCT,
        clock_offset_s=3.0,
        start_steps={3: 3},
    )
    _, s = analysis.analyze([tmp_path])
    assert s.alignment.steps == "content"
    assert s.alignment.step_shift_by_rank == {"0": 0, "1": 0, "2": 0, "3": 3}
    assert s.alignment.step_match_share == 1.0
    assert s.totals.engines == 2 and s.totals.steps == 2 * exp["steps"]
    assert s.totals.step_rows == sum(r["steps"] for r in exp["ranks"])
    comm = _comm(s)
    for r in exp["ranks"]:
        assert comm[r["rank"]].wait_ns == r["nccl_wait_ns"]
    # the layout from the file names: two TP groups, each with its own straggler
    assert s.parallel.sizes == {"dp": 2, "pp": 1, "tp": 2, "dcp": 1, "ep": 1} and s.parallel.source == "file names"
    tp = {g.key: g for g in s.parallel.groups if g.dim == "tp"}
    assert sorted(tp) == ["dp0_pp0", "dp1_pp0"]
    assert tp["dp0_pp0"].ranks == [0, 1] and tp["dp0_pp0"].straggler == 1 and tp["dp0_pp0"].straggler_share >= 0.9
    assert tp["dp1_pp0"].ranks == [2, 3] and tp["dp1_pp0"].collectives == exp["collectives"] - 3 * (
        exp["collectives"] // exp["steps"]
    )
    assert {g.key for g in s.parallel.groups if g.dim == "dp"} == {"pp0_tp0", "pp0_tp1"}
    assert all(g.collectives == 0 for g in s.parallel.groups if g.dim == "dp")


def test_two_ranks_clocks_seconds_apart_align_by_step(tmp_path):
    exp = gen_ranks.generate(str(tmp_path), ranks=2, events=6_000, layers=2, seed=9, clock_offset_s=8.0)
    off = exp["ranks"][1]["clock_offset_ns"]
    assert abs(off) > 1e9
    _, s = analysis.analyze([tmp_path])
    assert s.totals.steps == exp["steps"] and s.totals.step_rows == 2 * exp["steps"]
    assert set(s.engine_steps.ranks) == {2}
    assert abs(s.alignment.clock_offset_ns_by_rank["1"] - off) <= 1
    # on the aligned clock each engine step starts on both ranks within the scheduler's broadcast jitter
    assert max(s.engine_steps.start_skew_ns) < 200_000
    # and the run's wall time is its span on that clock, not the 8 s between the clocks
    spans = {}
    for f in sorted(tmp_path.glob("*.pt.trace.json*")):
        doc = json.loads(gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_text())
        # (the profiler's own window, cat "Trace", is no event of the run)
        x = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "ts" in e and e.get("cat") != "Trace"]
        rank = doc["distributedInfo"]["rank"]
        offset = off if rank == 1 else 0
        base = doc.get("baseTimeNanoseconds", 0)
        spans[rank] = (
            min(round(e["ts"] * 1000) for e in x) + base - offset,
            max(round((e["ts"] + e.get("dur", 0)) * 1000) for e in x) + base - offset,
        )
    assert sorted(spans) == [0, 1]
    want = max(b for _, b in spans.values()) - min(a for a, _ in spans.values())
    assert abs(s.totals.wall_ns - want) <= 2


def test_the_cli_prints_the_rank_tables(slow_run, tmp_path):
    exp, _, _ = slow_run
    out = tmp_path / "in"
    gen_ranks.generate(str(out), ranks=2, events=4_000, layers=2, seed=1, slow_rank=1, slow_pct=PCT)
    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(out), "-o", str(tmp_path / "o"), "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    for title in (
        "Per rank",
        "Time by fused op per rank",
        "Collectives (matched across ranks by the process group's sequence number",
        "Parallel groups",
    ):
        assert title in r.stdout
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["alignment"]["clock"] == "collective_ends" and s["comm"]["collectives"]


# -- the pieces ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, kind",
    [
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_reduce"),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t", "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"),
        ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", "all_reduce"),
        ("_C::shm_allreduce", "all_reduce"),
        ("_C::shm_all_gather", "all_gather"),
        ("gloo:all_reduce", "all_reduce"),
        ("kl3_all_reduce_bf16", "all_reduce"),
        ("kl3_all_gather_fp16", "all_gather"),
        ("bkcl_all_reduce", "all_reduce"),
        ("hcom_allReduce__123_0", "all_reduce"),
        ("nccl:all_to_all", "all_to_all"),
        ("c10d::alltoall_base_", "all_to_all"),
        ("nccl:_all_gather_base", "all_gather"),
        ("ncclDevKernel_Broadcast_RING_LL", "broadcast"),
        ("record_param_comms", "other"),
    ],
)
def test_collective_kinds(name, kind):
    assert KIND_NAMES[kind_of(name)] == kind


def test_layout_from_vllm_names():
    assert layout.parse_name("dp1_pp0_tp3_dcp0_ep7_rank11.1764633600.pt.trace.json.gz") == {
        "dp": 1,
        "pp": 0,
        "tp": 3,
        "dcp": 0,
        "ep": 7,
    }
    assert layout.parse_name("rank0.1796240241028918101.pt.trace.json.gz") == {}
    assert layout.parse_name("VLLM::Worker_DP1_PP0_TP1_EP3", need=1) == {"dp": 1, "pp": 0, "tp": 1, "ep": 3}
    assert layout.parse_name("http1_step2_rank3") == {}  # words that merely end in tp/ep
    run = {
        "process_names": {
            "0": {"1": "VLLM::Worker_PP0_TP0"},
            "1": {"2": "VLLM::Worker_PP0_TP1"},
            "2": {"3": "VLLM::Worker_PP1_TP0"},
            "3": {"4": "VLLM::Worker_PP1_TP1"},
        }
    }
    lay = layout.layout(run, [0, 1, 2, 3])
    assert lay.source == "process names" and lay.sizes() == {"pp": 2, "tp": 2}
    assert layout.groups(lay, [0, 1, 2, 3]) == [
        ("tp", "dp0_pp0", [0, 1]),
        ("tp", "dp0_pp1", [2, 3]),
        ("pp", "dp0_tp0", [0, 2]),
        ("pp", "dp0_tp1", [1, 3]),
    ]


def test_pipeline_stage_bubbles():
    # two pipeline stages of one rank each, three engine steps of 10 ms; stage 0 works 8 ms of
    # each step, stage 1 only 4 ms: its bubble is 6 ms a step
    prof = Profile()
    kname = prof.strings.intern("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn")
    ev: dict[str, list] = {k: [] for k in ("name", "kind", "start", "dur", "rank", "device", "track")}
    steps: dict[str, list] = {
        k: [] for k in ("rank", "step_id", "start", "dur", "phase", "decode_tokens", "decode_reqs")
    }
    for rank, work in ((0, 8_000_000), (1, 4_000_000)):
        for i in range(3):
            t0 = i * 10_000_000
            for c, v in (
                ("rank", rank),
                ("step_id", i),
                ("start", t0),
                ("dur", 10_000_000),
                ("phase", P_DECODE),
                ("decode_tokens", 4),
                ("decode_reqs", 4),
            ):
                steps[c].append(v)
            for c, v in (
                ("name", kname),
                ("kind", K_KERNEL),
                ("start", t0 + 1000),
                ("dur", work),
                ("rank", rank),
                ("device", rank),
                ("track", 7),
            ):
                ev[c].append(v)
    prof.events, prof.steps = Table(EVENT_SCHEMA, ev), Table(STEP_SCHEMA, steps)
    prof.run.update(step_source="xpu_profiler_hooks", parallel_ranks={"0": {"pp": 0}, "1": {"pp": 1}})
    s = analysis.summarize(prof)
    assert s.totals.steps == 3 and s.totals.step_rows == 6
    st = {x.stage: x for x in s.parallel.stages}
    assert st[0].bubble_ns == 3 * 2_000_000 and st[1].bubble_ns == 3 * 6_000_000
    assert st[1].bubble_share == pytest.approx(0.6)


def test_a_rank_that_repeats_step_ids_keeps_every_step():
    # hook step ids that repeat on a rank (two engines writing as one rank): each row stays a step
    prof = Profile()
    steps = {
        "rank": [0, 0, 0, 1, 1, 1],
        "step_id": [5, 5, 6, 5, 6, 7],
        "start": [0, 10, 20, 0, 10, 20],
        "dur": [5] * 6,
        "phase": [P_DECODE] * 6,
        "decode_tokens": [2] * 6,
        "decode_reqs": [2] * 6,
    }
    prof.steps = Table(STEP_SCHEMA, steps)
    prof.run["step_source"] = "xpu_profiler_hooks"
    s = analysis.summarize(prof)
    assert any("rank 0 repeats step ids" in w for w in s.warnings) and s.alignment.steps == "content"
    assert s.totals.step_rows == 6 and s.totals.steps == 3 and set(s.engine_steps.ranks) == {2}
    assert s.totals.decode_tokens == 2 * 3


def _decode_rank(path, rank: int, steps: range, gemm_us: int) -> None:
    """One rank's trace of identical decode steps (4 tokens each), 1 ms apart on the host's
    clock: a gemm, then an all-reduce that ends at the same instant on every rank (each
    step's collective ends 170 µs after its start)."""
    ev: list[dict] = []
    pid, corr = 2000 + rank, 1
    for k in steps:
        s0 = 1000.0 + 1000 * k
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_4(4)", "pid": pid,
                   "tid": pid, "ts": s0, "dur": 100})  # fmt: skip
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": pid, "ts": s0 + 20,
                   "dur": 10, "args": {"External id": k + 1, "Collective name": "allreduce", "Process Group Name": "0",
                   "Process Group Ranks": "[0, 1]", "Group size": 2, "dtype": "BFloat16", "In msg nelems": 1048576,
                   "Out msg nelems": 1048576}})  # fmt: skip
        for name, launch, start, dur in (
            ("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>(Params)", s0 + 5, s0 + 10, gemm_us),
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)", s0 + 22, s0 + 10 + gemm_us, 160 - gemm_us),
        ):
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid,
                       "ts": launch, "dur": 3, "args": {"correlation": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": 7, "ts": start, "dur": dur,
                       "args": {"correlation": corr, "device": rank, "stream": 7}})  # fmt: skip
            corr += 1
    doc = {"schemaVersion": 1, "traceEvents": ev, "host_name": "node1",
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}  # fmt: skip
    path.write_text(json.dumps(doc))


def test_ranks_on_one_clock_whose_profiles_began_a_step_apart(tmp_path):
    """Two TP ranks on one host (one clock): rank 0 traced steps 0-4, rank 1 steps 1-5, every
    step alike (steady decode), so the content alone lines them up at any shift. The shift
    that puts the same step at the same time is the one: six engine steps, each starting
    at once on both ranks, and rank 0 waits at each shared collective only for rank 1's
    longer gemm (50 µs), not a step's worth."""
    _decode_rank(tmp_path / "rank0.pt.trace.json", 0, range(5), gemm_us=100)
    _decode_rank(tmp_path / "rank1.pt.trace.json", 1, range(1, 6), gemm_us=150)
    _, s = analysis.analyze([tmp_path])
    assert s.alignment.clock == "shared" and s.alignment.step_shift_by_rank == {"0": 0, "1": 1}
    assert s.totals.steps == 6 and s.totals.decode_tokens == 6 * 4
    both = [i for i, n in enumerate(s.engine_steps.ranks) if n == 2]
    assert len(both) == 4 and all(s.engine_steps.start_skew_ns[i] == 0 for i in both)
    shared = 4  # steps 1-4: traced on both ranks
    comm = _comm(s)
    assert comm[0].wait_ns == shared * 50_000 and comm[1].wait_ns == 0
