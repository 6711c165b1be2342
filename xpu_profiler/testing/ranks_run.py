"""gen_ranks's run: all ranks in lockstep through the engine steps, meeting at every collective,
and the per-layer pieces (attention and MLP blocks, GEMMs) each rank runs between them."""

from __future__ import annotations

import random

from .ranks_rank import Rank
from .ranks_tables import (
    COMPUTE_STREAM,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    INTER,
    KV_HEADS,
    MOE_EXPERTS,
    MOE_INTER,
    MOE_TOPK,
    NCCL_LATENCY_NS,
    NVLINK_BYTES_PER_NS,
    VOCAB,
)
from .trace_tables import FLOP_PER_NS, HBM_BYTES_PER_NS, _ts


class Run:
    """All ranks in lockstep: they share the scheduler's steps and meet at every collective."""

    def __init__(self, ranks: list[Rank], layers: int, seed: int, detail: bool):
        self.ranks = ranks
        self.world = ranks[0].world  # tensor-parallel size
        self.groups = [ranks[g : g + self.world] for g in range(0, len(ranks), self.world)]
        self.layers = layers
        self.rng = random.Random(seed)
        self.seq = 0
        self.steps = 0
        self.steps_by_phase = {"prefill": 0, "decode": 0, "mixed": 0}
        self.collectives: list[dict] = []
        self.detail = detail
        self.ctx = [self.rng.randint(64, 1500) for _ in range(24)]

    def collective(self, kind: str, nelems: int) -> None:
        self.seq += 1
        out = nelems * self.world if kind == "allgather" else nelems
        nbytes = 2 * (out if kind == "allgather" else nelems)
        bus = 2 * (self.world - 1) / self.world if kind == "allreduce" else (self.world - 1) / self.world
        xfer = int(NCCL_LATENCY_NS + nbytes * bus / NVLINK_BYTES_PER_NS)
        for group in self.groups:  # each replica's group meets on its own
            arrivals = [rk.collective_launch(kind, self.seq, nelems, out) for rk in group]
            last = max(arrivals)
            end = last + xfer
            traced = all(self.steps >= rk.first_step for rk in group)  # in every rank's trace
            for rk, a in zip(group, arrivals):
                if traced:
                    rk.nccl_wait += last - a
                if self.steps >= rk.first_step and rk.first_seq is None:
                    rk.first_seq = self.seq
                rk.collective_finish(end)
            if self.detail:
                self.collectives.append(
                    {
                        "seq": self.seq,
                        "group": group[0].group,
                        "collective": kind,
                        "nelems": nelems,
                        "end_ns": end,
                        "arrival_ns": arrivals,
                        "last_rank": group[arrivals.index(last)].r,
                    }
                )

    def on_all(self, fn, *args) -> None:
        for rk in self.ranks:
            fn(rk, *args)

    def step(self) -> None:
        rng, W = self.rng, self.world
        r = rng.random()
        if r < 0.06:
            phase, pre, n_dec = "prefill", [rng.randint(64, 2048) for _ in range(rng.choice((1, 1, 2, 3)))], 0
        elif r < 0.10:
            phase, pre, n_dec = "mixed", [rng.randint(32, 1024) for _ in range(rng.choice((1, 2)))], len(self.ctx)
        else:
            phase, pre, n_dec = "decode", [], len(self.ctx)
        T = sum(pre) + n_dec
        n_seq = len(pre) + n_dec
        ctx_sum = sum(self.ctx) + sum(pre)
        pre_sq = sum(p * p for p in pre)
        name = f"execute_context_{len(pre)}({sum(pre)})_generation_{n_dec}({n_dec})"
        start = max(rk.h for rk in self.ranks) + int(180_000 * (1 + rng.uniform(-0.5, 0.5)))
        anns = []
        for rk in self.ranks:
            rk.snapshot = rk.counts()
            rk.h = start + rk.jit(20_000, 1.0)  # the scheduler's broadcast reaches each worker
            rk.step_dev = (None, 0)
            anns.append(rk.begin(name, "user_annotation"))
            h = rk.begin("aten::copy_")
            rk.memcpy("HtoD", T * 8)
            rk.end(h)
            h = rk.begin("aten::embedding")
            rk.launch("embedding", 1500 + T * HIDDEN * 2 / HBM_BYTES_PER_NS, ((T + 3) // 4, 1, 1))
            rk.end(h)
        self.collective("allreduce", T * HIDDEN)  # vocab-parallel embedding
        qkv_n = (HEADS + 2 * KV_HEADS) * HEAD_DIM // W
        for li in range(self.layers):
            self.on_all(_attention_block, T, qkv_n, n_dec, ctx_sum, pre_sq, li)
            self.collective("allreduce", T * HIDDEN)
            self.on_all(_mlp_block, T)
            self.collective("allreduce", T * HIDDEN)
        for rk in self.ranks:
            _op(rk, "_C::fused_add_rms_norm", "fused_add_rms_norm", 1800 + 3 * T * HIDDEN * 2 / HBM_BYTES_PER_NS, T)
            _gemm(rk, n_seq, VOCAB // W, HIDDEN)  # lm_head, vocab-parallel
        self.collective("allgather", n_seq * (VOCAB // W))
        for rk, ann in zip(self.ranks, anns):
            ext = rk.end(ann)
            first, last = rk.step_dev
            assert first is not None  # the step ran device work on every rank (its gemms)
            rk.gpu.append(
                f'  {{\n    "ph": "X", "cat": "gpu_user_annotation", "name": "{name}", '
                f'"pid": {rk.dev}, "tid": {COMPUTE_STREAM},\n    "ts": {rk._t(first)}, '
                f'"dur": {_ts(last - first)},\n    "args": {{"External id": {ext}}}\n  }}'
            )
            rk._count("gpu_user_annotation")
            # sampling, outside the step range
            h = rk.begin("aten::argmax")
            rk.launch("triton_argmax", 3500 + n_seq * VOCAB * 4 / HBM_BYTES_PER_NS, (n_seq, 1, 1))
            rk.end(h)
            h = rk.begin("aten::to")
            rk.memcpy("DtoH", n_seq * 8)
            rk.stream_sync()
            rk.end(h)
            if self.steps < rk.first_step:  # before its profiler started: not written
                rk.discard()
            rk.flush()
        self.steps += 1
        self.steps_by_phase[phase] += 1
        # the decode population drifts
        self.ctx = [c + 1 for c in self.ctx] + (pre if phase != "decode" else [])
        while len(self.ctx) > 64 or (len(self.ctx) > 1 and rng.random() < 0.15):
            self.ctx.pop(rng.randrange(len(self.ctx)))
        if rng.random() < 0.5:
            self.ctx.append(rng.randint(64, 1500))


def _op(rk: Rank, name: str, key: str, dur: float, grid_x: int) -> None:
    h = rk.begin(name)
    rk.launch(key, dur, (max(1, grid_x), 1, 1))
    rk.end(h)


def _gemm(rk: Rank, T: int, N: int, K: int) -> None:
    h = rk.begin("aten::linear")
    h2 = rk.begin("aten::mm")
    key = "gemm_large" if T * N >= 4_000_000 else "gemm_mid" if T * N >= 200_000 else "gemm_small"
    rk.launch(
        key, 3000 + 2 * T * N * K / FLOP_PER_NS + (N * K * 2) / HBM_BYTES_PER_NS, (max(1, N // 128), max(1, T // 64), 1)
    )
    rk.end(h2)
    rk.end(h)


def _attention_block(rk: Rank, T: int, qkv_n: int, n_dec: int, ctx_sum: int, pre_sq: int, li: int) -> None:
    W = rk.world
    if li == 0:
        _op(rk, "_C::rms_norm", "rms_norm", 1600 + 2 * T * HIDDEN * 2 / HBM_BYTES_PER_NS, T)
    else:
        _op(rk, "_C::fused_add_rms_norm", "fused_add_rms_norm", 1800 + 3 * T * HIDDEN * 2 / HBM_BYTES_PER_NS, T)
    _gemm(rk, T, qkv_n, HIDDEN)
    _op(rk, "_C::rotary_embedding", "rotary", 1500 + T * qkv_n * 2 / HBM_BYTES_PER_NS, T)
    h = rk.begin("vllm::unified_attention")
    _op(
        rk,
        "_C_cache_ops::reshape_and_cache_flash",
        "reshape_and_cache",
        1200 + T * 2 * max(1, KV_HEADS // W) * HEAD_DIM * 2 / HBM_BYTES_PER_NS,
        T,
    )
    kv_heads, heads = max(1, KV_HEADS // W), max(1, HEADS // W)
    kv_read = ctx_sum * 2 * kv_heads * HEAD_DIM * 2  # decode reads the whole context
    flops = 4 * heads * HEAD_DIM * (pre_sq / 2 + (ctx_sum if n_dec else 0))
    key = "flash_prefill" if pre_sq else "flash_splitkv"
    _op(rk, "_vllm_fa2_C::varlen_fwd", key, 4000 + kv_read / HBM_BYTES_PER_NS + flops / FLOP_PER_NS, heads)
    rk.end(h)
    _gemm(rk, T, HIDDEN, HEADS * HEAD_DIM // W)


def _mlp_block(rk: Rank, T: int) -> None:
    W = rk.world
    _op(rk, "_C::fused_add_rms_norm", "fused_add_rms_norm", 1800 + 3 * T * HIDDEN * 2 / HBM_BYTES_PER_NS, T)
    if rk.moe:
        _gemm(rk, T, MOE_EXPERTS, HIDDEN)  # router
        _op(rk, "_moe_C::topk_softmax", "topk_softmax", 2000 + T * MOE_EXPERTS * 4 / HBM_BYTES_PER_NS, T)
        routed = T * MOE_TOPK / W * rk.moe_load  # token-expert pairs on this rank
        experts = min(MOE_EXPERTS // W, routed)
        before = rk.kernel_dur
        # a hot rank's experts see more tokens and more of them are active: the whole kernel scales
        _op(
            rk,
            "vllm::fused_moe",
            "fused_moe",
            (
                4000
                + 2 * routed * HIDDEN * 3 * MOE_INTER / FLOP_PER_NS
                + experts * 3 * HIDDEN * MOE_INTER * 2 / HBM_BYTES_PER_NS
            )
            * rk.moe_load,
            max(1, int(routed)),
        )
        rk.moe_dur += rk.kernel_dur - before
        return
    _gemm(rk, T, 2 * INTER // W, HIDDEN)
    _op(rk, "_C::silu_and_mul", "silu_and_mul", 1500 + T * INTER // W * 2 * 3 / HBM_BYTES_PER_NS, T)
    _gemm(rk, T, HIDDEN, INTER // W)
