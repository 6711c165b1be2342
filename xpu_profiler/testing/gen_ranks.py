#!/usr/bin/env python3
"""Generate a deterministic synthetic multi-rank Kineto trace: one file per rank.

The run is tensor-parallel vLLM inference of a Llama-3.1-8B-like model (32 layers,
bf16) over ``--ranks`` GPUs of one node. Every rank runs the same engine steps
(vLLM's ``execute_context_{n}({tok})_generation_{m}({tok})`` annotation on the
worker thread and its ``gpu_user_annotation`` twin on the compute stream), with
the launches a torch.profiler trace holds: ``cpu_op`` ranges, ``cudaLaunchKernel``
runtime calls with correlation ids and ``ac2g`` flows, kernels on the compute
stream 7, and NCCL collectives on stream 20: per layer two all-reduces
(``ncclDevKernel_AllReduce_Sum_bf16_RING_LL``), one after the vocab-parallel
embedding, and an all-gather of the logits. Collectives go through
``vllm::all_reduce`` > ``c10d::allreduce_`` > ``record_param_comms`` (with the
metadata Kineto writes: ``Collective name``, ``In msg nelems``, ``Out msg nelems``,
``Group size``, ``dtype``, ``Process Group Name``/``Description``/``Ranks``,
``Rank``, ``Seq``, ...) > ``nccl:all_reduce``; the NCCL kernel carries the same
collective metadata in its ``args``.

Collectives synchronise the ranks: a rank's NCCL kernel starts when that rank
gets there and ends when the last rank has arrived plus the transfer time, so a
rank that is late makes the others wait inside their NCCL kernels. ``--slow-rank R
--slow-pct P`` makes rank R's compute kernels P % longer, so it arrives late at
every collective. Each rank's clock is off by up to ``--clock-offset`` seconds
(host and device alike, as Kineto aligns the GPU clock on the host's):
``baseTimeNanoseconds + ts`` of an event is the true time plus the rank's offset.

``--tp N`` splits the ranks into data-parallel replicas of N tensor-parallel ranks each
(rank r is ``dp{r // N}_tp{r % N}``): collectives run within a replica, in its own
process group; ``--vllm-names`` names the files as vLLM's profiler does
(``dp{d}_pp0_tp{t}_dcp0_ep0_rank{r}.pt.trace.json``). ``--start-step R:K`` makes rank R's
trace begin at engine step K, as when ``start_profile`` reaches the ranks at different
steps (repeatable).

Usage::

    python -m xpu_profiler.testing.gen_ranks --ranks 4 --events 100000 -o DIR [--slow-rank 2 --slow-pct 30]
                              [--clock-offset 5] [--layers 32] [--seed 0] [--gzip]
                              [--tp 2] [--vllm-names] [--start-step 1:3]

writes ``DIR/rank-{r}.pt.trace.json`` (``.json.gz`` with ``--gzip``) and
``DIR/expected.json``, the ground truth counted while generating (see
bench/README.md). Output is streamed per step; memory stays flat. ``--check``
reads the files back and checks them (xpu_profiler/testing/check_ranks.py).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Any

from .gen_trace import (
    BASE_TIME_NS,
    CBID_LAUNCH,
    CBID_MEMCPY,
    CBID_SYNC,
    FLOP_PER_NS,
    HBM_BYTES_PER_NS,
    KERNEL_RES,
    KERNELS,
    NUM_SMS,
    PCIE_BYTES_PER_NS,
    T0_NS,
    _ts,
)

GENERATOR_VERSION = 2

# Llama-3.1-8B-like, bf16; shapes below are per rank (divided by the TP size)
HIDDEN = 4096
INTER = 14336
HEADS = 32
KV_HEADS = 8
HEAD_DIM = 128
VOCAB = 128256
COMPUTE_STREAM = 7
NCCL_STREAM = 20
PID0 = 240100  # rank r's worker process id is PID0 + r
NVLINK_BYTES_PER_NS = 150.0  # achieved all-reduce bus bandwidth
NCCL_LATENCY_NS = 9_000
PROFILER_START_STAGGER_NS = 7_000_000_000  # rank r's baseTimeNanoseconds is r * 7 s earlier
KERNELS = {
    **KERNELS,
    "nccl_allgather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "fused_moe": "fused_moe_kernel",
}
KERNEL_RES = {**KERNEL_RES, "nccl_allgather": KERNEL_RES["nccl_allreduce"], "fused_moe": (128, 32768, (128, 1, 1))}
# --moe: each MLP is an expert-parallel MoE layer of MOE_EXPERTS experts (top-MOE_TOPK),
# the experts spread evenly over the ranks; a "hot" rank gets a larger share of the tokens
MOE_EXPERTS = 64
MOE_TOPK = 8
MOE_INTER = 1408


class Rank:
    """One rank's worker thread, compute and NCCL streams, and its two output sections."""

    def __init__(
        self,
        r: int,
        world: int,
        seed: int,
        offset_ns: int,
        slow: float,
        cpu_out,
        gpu_out,
        world_size: int | None = None,
        first_step: int = 0,
    ):
        self.r, self.world = r, world  # world: the size of its tensor-parallel group
        self.world_size = world_size or world
        self.group = r // world
        self.first_step = first_step  # its trace begins at this engine step
        self.first_seq: int | None = None
        self.rng = random.Random(seed * 1_000_003 + r)
        self.pid = self.tid = PID0 + r
        self.dev = r
        self.offset = offset_ns
        self.base = BASE_TIME_NS - r * PROFILER_START_STAGGER_NS  # each process's own profiler epoch
        self.slow = slow
        self.cpu_out, self.gpu_out = cpu_out, gpu_out
        self.cpu: list[str] = []
        self.gpu: list[str] = []
        self.h = T0_NS  # host cursor (true clock)
        self.free = {COMPUTE_STREAM: T0_NS, NCCL_STREAM: T0_NS}
        self.dep = T0_NS  # compute waits for the last collective's result
        self.ext = 0
        self.ext_stack = [0]
        self.corr = 5_000_000 + 1_000_000 * r
        self.evidx = 0
        self.step_dev: tuple[int | None, int] = (None, 0)  # the step's device work: first start, last end
        # a launched collective, kernel not written yet: (kind, corr, external id, arrival, its args)
        self.pending: tuple[str, int, int, int, dict[str, Any]] | None = None
        self.snapshot: tuple[Any, ...]  # counts() when the step began (``discard`` goes back to it)
        # ground truth
        self.events = 0
        self.by_cat: dict[str, int] = {}
        self.kernels = self.kernel_dur = 0
        self.moe = False  # --moe: the MLPs are expert-parallel MoE layers
        self.moe_load = 1.0  # share of routed tokens against an even split
        self.moe_dur = 0
        self.nccl_kernels = self.nccl_dur = 0
        self.nccl_wait = 0
        self.compute_dur = 0

    # -- writing ------------------------------------------------------------
    def _t(self, true_ns: int) -> str:
        """``ts`` of an event at ``true_ns`` (relative to BASE_TIME_NS on the true clock)."""
        return _ts(BASE_TIME_NS + true_ns + self.offset - self.base)

    def _count(self, cat: str) -> None:
        self.by_cat[cat] = self.by_cat.get(cat, 0) + 1
        self.events += 1

    def jit(self, ns: float, pct: float = 0.15) -> int:
        return max(1, int(ns * (1.0 + self.rng.uniform(-pct, pct))))

    def begin(self, name: str, cat: str = "cpu_op", args: dict | None = None):
        self.ext += 1
        self.evidx += 1
        h = (len(self.cpu), name, cat, self.ext, self.evidx, self.h, args)
        self.cpu.append("")
        self.ext_stack.append(self.ext)
        self.h += self.jit(1500 if cat == "cpu_op" else 3000)
        return h

    def end(self, h) -> int:
        idx, name, cat, ext, evidx, start, args = h
        self.h += self.jit(800)
        self.ext_stack.pop()
        a = {
            "External id": ext,
            **({"Record function id": 0} if cat == "cpu_op" else {}),
            **(args or {}),
            "Ev Idx": evidx - 1,
        }
        self.cpu[idx] = (
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {self.pid}, '
            f'"tid": {self.tid},\n    "ts": {self._t(start)}, "dur": {_ts(self.h - start)},\n'
            f'    "args": {json.dumps(a)}\n  }}'
        )
        self._count(cat)
        return ext

    def _runtime(self, name: str, cbid: int, corr: int, start: int, dur: int, flow: bool = True) -> None:
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": {self.pid}, '
            f'"tid": {self.tid},\n    "ts": {self._t(start)}, "dur": {_ts(dur)},\n    "args": '
            f'{{"External id": {self.ext_stack[-1]}, "cbid": {cbid}, "correlation": {corr}}}\n  }}'
        )
        self._count("cuda_runtime")
        if flow:
            self.gpu.append(
                f'  {{"ph": "s", "id": {corr}, "pid": {self.pid}, "tid": {self.tid}, '
                f'"ts": {self._t(start)}, "cat": "ac2g", "name": "ac2g"}}'
            )
            self._count("ac2g")

    def _device(self, cat: str, name: str, stream: int, corr: int, ext: int, start: int, dur: int, args: dict) -> None:
        a = {
            "External id": ext,
            "queued": 0,
            "device": self.dev,
            "context": 1,
            "stream": stream,
            "correlation": corr,
            **args,
        }
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {self.dev}, '
            f'"tid": {stream},\n    "ts": {self._t(start)}, "dur": {_ts(dur)},\n'
            f'    "args": {json.dumps(a)}\n  }}'
        )
        self._count(cat)
        self.gpu.append(
            f'  {{"ph": "f", "id": {corr}, "pid": {self.dev}, "tid": {stream}, '
            f'"ts": {self._t(start)}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}'
        )
        self._count("ac2g")
        first, _ = self.step_dev
        self.step_dev = (start if first is None else min(first, start), max(self.step_dev[1], start + dur))

    @staticmethod
    def _kargs(key: str, grid: tuple) -> dict:
        regs, smem, block = KERNEL_RES[key]
        bps = grid[0] * grid[1] * grid[2] / NUM_SMS
        wps = bps * block[0] * block[1] * block[2] / 32
        return {
            "registers per thread": regs,
            "shared memory": smem,
            "blocks per SM": round(bps, 6),
            "warps per SM": round(wps, 6),
            "grid": list(grid),
            "block": list(block),
            "est. achieved occupancy %": min(100, int(wps / 64 * 100)),
        }

    # -- launches ----------------------------------------------------------------
    def launch(self, key: str, dur_ns: float, grid: tuple) -> None:
        """A compute kernel on stream 7 (after the last collective's result is there)."""
        self.corr += 1
        rt_start, rt_dur = self.h, self.jit(4200, 0.3)
        dur = self.jit(dur_ns * self.slow, 0.06)
        start = max(rt_start + self.jit(2500, 0.4), self.free[COMPUTE_STREAM] + self.jit(700, 0.5), self.dep)
        self.free[COMPUTE_STREAM] = start + dur
        self._device(
            "kernel", KERNELS[key], COMPUTE_STREAM, self.corr, self.ext_stack[-1], start, dur, self._kargs(key, grid)
        )
        self._runtime("cudaLaunchKernel", CBID_LAUNCH, self.corr, rt_start, rt_dur)
        self.h = rt_start + rt_dur + self.jit(600)
        self.kernels += 1
        self.kernel_dur += dur
        self.compute_dur += dur

    def memcpy(self, kind: str, nbytes: int) -> None:
        self.corr += 1
        rt_start, rt_dur = self.h, self.jit(5200, 0.3)
        dur = self.jit(1300 + nbytes / PCIE_BYTES_PER_NS, 0.1)
        start = max(rt_start + self.jit(2500, 0.4), self.free[COMPUTE_STREAM] + self.jit(700, 0.5))
        self.free[COMPUTE_STREAM] = start + dur
        name = "Memcpy HtoD (Pinned -> Device)" if kind == "HtoD" else "Memcpy DtoH (Device -> Pinned)"
        self._device(
            "gpu_memcpy",
            name,
            COMPUTE_STREAM,
            self.corr,
            self.ext_stack[-1],
            start,
            dur,
            {"bytes": nbytes, "memory bandwidth (GB/s)": round(nbytes / dur, 6)},
        )
        self._runtime("cudaMemcpyAsync", CBID_MEMCPY, self.corr, rt_start, rt_dur)
        self.h = rt_start + rt_dur + self.jit(500)

    def stream_sync(self) -> None:
        self.corr += 1
        start = self.h
        end = max(start + self.jit(2500), self.free[COMPUTE_STREAM] + self.jit(1500))
        self._runtime("cudaStreamSynchronize", CBID_SYNC, self.corr, start, end - start, flow=False)
        self.h = end + self.jit(800)

    def collective_launch(self, kind: str, seq: int, nelems_in: int, nelems_out: int) -> int:
        """The host side of a collective; returns when this rank's NCCL kernel could start."""
        meta = {
            "Collective name": "allreduce" if kind == "allreduce" else "_allgather_base",
            "In msg nelems": nelems_in,
            "Out msg nelems": nelems_out,
            "Group size": self.world,
            "dtype": "BFloat16",
            "In split size": "[]",
            "Out split size": "[]",
            "Global rank start": self.group * self.world,
            "Global rank stride": 1,
            "Process Group Name": str(self.group) if self.world_size > self.world else "0",
            "Process Group Description": "default_pg" if self.world_size == self.world else "undefined",
            "Process Group Ranks": str(list(range(self.group * self.world, (self.group + 1) * self.world))),
            "Rank": self.r,
            "Seq": seq,
        }
        outer = self.begin("vllm::all_reduce" if kind == "allreduce" else "vllm::all_gather")
        c10d = self.begin("c10d::allreduce_" if kind == "allreduce" else "c10d::_allgather_base_")
        rpc = self.begin("record_param_comms", args={**meta, "Is asynchronized op": False})
        ann = self.begin("nccl:all_reduce" if kind == "allreduce" else "nccl:_all_gather_base", "user_annotation")
        self.corr += 1
        rt_start, rt_dur = self.h, self.jit(6500, 0.3)
        arrival = max(
            rt_start + self.jit(3000, 0.4),
            self.free[NCCL_STREAM] + self.jit(700, 0.5),
            self.free[COMPUTE_STREAM] + self.jit(1200, 0.5),
        )  # waits on the producer's event
        self.pending = (kind, self.corr, self.ext_stack[-1], arrival, meta)
        self._runtime("cudaLaunchKernel", CBID_LAUNCH, self.corr, rt_start, rt_dur)
        self.h = rt_start + rt_dur + self.jit(600)
        for hnd in (ann, rpc, c10d, outer):
            self.end(hnd)
        return arrival

    def collective_finish(self, end: int) -> None:
        assert self.pending is not None  # collective_start launched it
        kind, corr, ext, arrival, meta = self.pending
        self.pending = None
        key = "nccl_allreduce" if kind == "allreduce" else "nccl_allgather"
        self._device(
            "kernel",
            KERNELS[key],
            NCCL_STREAM,
            corr,
            ext,
            arrival,
            end - arrival,
            {**self._kargs(key, (2 if self.world <= 4 else 4, 1, 1)), **meta},
        )
        self.free[NCCL_STREAM] = end
        self.dep = end
        self.kernels += 1
        self.kernel_dur += end - arrival
        self.nccl_kernels += 1
        self.nccl_dur += end - arrival

    _COUNTS = ("events", "kernels", "kernel_dur", "nccl_kernels", "nccl_dur", "compute_dur")

    def counts(self) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in self._COUNTS) + (dict(self.by_cat),)

    def discard(self) -> None:
        """Drop what this step wrote and counted (``snapshot`` is taken when the step begins)."""
        *values, by_cat = self.snapshot
        for k, v in zip(self._COUNTS, values):
            setattr(self, k, v)
        self.by_cat = by_cat
        self.cpu, self.gpu = [], []

    def flush(self) -> None:
        if self.cpu:
            self.cpu_out.write(",\n".join(self.cpu) + ",\n")
            self.cpu = []
        if self.gpu:
            self.gpu_out.write(",\n".join(self.gpu) + ",\n")
            self.gpu = []


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


def _header(rk: Rank) -> str:
    world = rk.world_size
    pgs = [
        {
            "pg_name": "0",
            "pg_desc": "default_pg",
            "backend_config": "cuda:nccl",
            "pg_size": world,
            "ranks": list(range(world)),
        }
    ]
    if rk.world < world:
        pgs.append(
            {
                "pg_name": str(rk.group),
                "pg_desc": "undefined",
                "backend_config": "cuda:nccl",
                "pg_size": rk.world,
                "ranks": list(range(rk.group * rk.world, (rk.group + 1) * rk.world)),
            }
        )
    dist = {
        "backend": "nccl",
        "rank": rk.r,
        "world_size": world,
        "pg_count": len(pgs),
        "pg_config": pgs,
        "nccl_version": "2.26.2",
    }
    dev = {
        "id": rk.dev,
        "name": "NVIDIA H100 80GB HBM3",
        "totalGlobalMem": 85045870592,
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 233472,
        "numSms": NUM_SMS,
        "sharedMemPerBlockOptin": 232448,
    }
    return (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [' + json.dumps(dev) + "],\n"
        '  "cupti_version": 24, "cuda_runtime_version": 12080, "cuda_driver_version": 12080,\n'
        f'  "distributedInfo": {json.dumps(dist)},\n'
        '  "record_shapes": 0, "profile_memory": 0, "with_stack": 0,\n'
        f'  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {rk.base},\n  "traceEvents": [\n'
    )


def _metadata(rk: Rank, first: int, last: int) -> list[str]:
    ts = rk._t(first)

    def m(name, pid, tid, key, val):
        return (
            f'  {{"name": "{name}", "ph": "M", "ts": {ts}, "pid": {pid}, "tid": {tid}, '
            f'"args": {{"{key}": {json.dumps(val)}}}}}'
        )

    return [
        m("process_name", rk.pid, 0, "name", "python3"),
        m("process_labels", rk.pid, 0, "labels", "CPU"),
        m("process_name", rk.dev, 0, "name", "python3"),
        m("process_labels", rk.dev, 0, "labels", f"GPU {rk.dev}"),
        m("process_sort_index", rk.dev, 0, "sort_index", 16777216 + rk.dev),
        m("thread_name", rk.dev, COMPUTE_STREAM, "name", f"stream {COMPUTE_STREAM} "),
        m("thread_name", rk.dev, NCCL_STREAM, "name", f"stream {NCCL_STREAM} "),
        m("thread_name", rk.pid, rk.tid, "name", f"thread {rk.tid} (VllmWorker TP{rk.r % rk.world})"),
        (
            f'  {{"ph": "X", "cat": "Trace", "ts": {ts}, "dur": {_ts(last - first)}, "pid": "Spans", '
            f'"tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {{"Op count": 0}}}}'
        ),
    ]


def generate(
    out_dir: str,
    ranks: int = 4,
    events: int = 100_000,
    layers: int = 32,
    seed: int = 0,
    slow_rank: int | None = None,
    slow_pct: float = 0.0,
    clock_offset_s: float = 3.0,
    gz: bool = False,
    collective_detail: bool = True,
    tp: int | None = None,
    vllm_names: bool = False,
    start_steps: dict[int, int] | None = None,
    moe: bool = False,
    moe_hot_rank: int | None = None,
    moe_hot_pct: float = 0.0,
) -> dict:
    t_wall = time.perf_counter()
    if ranks < 2:
        raise ValueError("--ranks must be at least 2")
    if slow_rank is not None and not 0 <= slow_rank < ranks:
        raise ValueError(f"--slow-rank must be in 0..{ranks - 1}")
    tp = tp or ranks
    if tp < 2 or ranks % tp:
        raise ValueError("--tp must be at least 2 and divide --ranks")
    start_steps = start_steps or {}
    if any(not 0 <= r < ranks or k < 0 for r, k in start_steps.items()):
        raise ValueError(f"--start-step needs a rank in 0..{ranks - 1} and a step >= 0")
    os.makedirs(out_dir, exist_ok=True)
    orng = random.Random(seed ^ 0x5EED)
    offsets = [0] + [int(clock_offset_s * 1e9 * orng.uniform(-1.0, 1.0)) for _ in range(ranks - 1)]
    names = [
        f"dp{r // tp}_pp0_tp{r % tp}_dcp0_ep0_rank{r}.pt.trace.json" if vllm_names else f"rank-{r}.pt.trace.json"
        for r in range(ranks)
    ]
    plain = [os.path.join(out_dir, n + (".tmp" if gz else "")) for n in names]
    cpu_files = [open(p, "w", encoding="ascii", buffering=1 << 20) for p in plain]
    gpu_files = [tempfile.TemporaryFile("w+", encoding="ascii", dir=out_dir, buffering=1 << 20) for _ in names]
    try:
        rks = [
            Rank(
                r,
                tp,
                seed,
                offsets[r],
                1.0 + (slow_pct / 100.0 if r == slow_rank else 0.0),
                cpu_files[r],
                gpu_files[r],
                world_size=ranks,
                first_step=start_steps.get(r, 0),
            )
            for r in range(ranks)
        ]
        for rk in rks:
            rk.moe = moe
            rk.moe_load = 1.0 + (moe_hot_pct / 100.0 if rk.r == moe_hot_rank else 0.0)
        run = Run(rks, layers, seed, collective_detail)
        for rk in rks:
            rk.cpu_out.write(_header(rk))
        while run.ranks[0].events + 10 < events:
            run.step()
        last = max(rk.h for rk in rks)
        for rk, g in zip(rks, gpu_files):
            g.flush()
            g.seek(0)
            shutil.copyfileobj(g, rk.cpu_out, 1 << 20)
            meta = _metadata(rk, T0_NS, last)
            rk.cpu_out.write(",\n".join(meta) + ",\n")
            rk.events += len(meta)
            rk.by_cat["(none)"] = rk.by_cat.get("(none)", 0) + len(meta) - 1
            rk.by_cat["Trace"] = rk.by_cat.get("Trace", 0) + 1
            rk.cpu_out.write(
                f'  {{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", '
                f'"ts": {rk._t(last + 1000)}}}\n  ],\n  "traceName": "{names[rk.r]}"\n}}\n'
            )
            rk.events += 1
            rk.by_cat["(none)"] += 1
    finally:
        for f in cpu_files + gpu_files:
            f.close()
    sizes = [os.path.getsize(p) for p in plain]
    files = []
    for p, n in zip(plain, names):
        if gz:
            with (
                open(p, "rb") as src,
                open(os.path.join(out_dir, n + ".gz"), "wb") as raw,
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as dst,
            ):
                shutil.copyfileobj(src, dst, 1 << 20)
            os.unlink(p)
            files.append(n + ".gz")
        else:
            files.append(n)
    expected = {
        "world_size": ranks,
        "tensor_parallel_size": tp,
        "steps": run.steps,
        "steps_by_phase": run.steps_by_phase,
        "collectives": run.seq,
        "slow_rank": slow_rank,
        "slow_pct": slow_pct if slow_rank is not None else 0.0,
        "ranks": [
            {
                "rank": rk.r,
                "file": files[rk.r],
                "events": rk.events,
                "json_bytes": sizes[rk.r],
                "first_step": rk.first_step,
                "first_seq": rk.first_seq or 1,
                "steps": run.steps - rk.first_step,
                "group": rk.group,
                "clock_offset_ns": rk.offset,
                "base_time_ns": rk.base,
                "kernels": rk.kernels,
                "kernel_dur_ns": rk.kernel_dur,
                "compute_kernel_dur_ns": rk.compute_dur,
                "moe_kernel_dur_ns": rk.moe_dur,
                "moe_load": rk.moe_load,
                "nccl_kernels": rk.nccl_kernels,
                "nccl_kernel_dur_ns": rk.nccl_dur,
                "nccl_wait_ns": rk.nccl_wait,
                "events_by_cat": dict(sorted(rk.by_cat.items())),
            }
            for rk in rks
        ],
        "collective_detail": run.collectives if collective_detail else None,
        "generator": {
            "version": GENERATOR_VERSION,
            "seed": seed,
            "events_requested_per_rank": events,
            "layers": layers,
            "source_sha256": source_hash(),
        },
        "notes": "Times are ns on the true clock, relative to base_time_ns of rank 0 (= 1764633600e9); rank r writes an "
        "event at true time t as baseTimeNanoseconds + ts = 1764633600e9 + t + clock_offset_ns. A collective's "
        "kernel on rank r runs from its arrival_ns[r] to end_ns (= last arrival + transfer); "
        "nccl_wait_ns sums last arrival - own arrival over the collectives in the traces of all the ranks of "
        "its group. kernel_* include NCCL "
        "kernels; compute_kernel_dur_ns excludes them.",
    }
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    expected["_wall_s"] = time.perf_counter() - t_wall
    return expected


def source_hash() -> str:
    h = hashlib.sha256()
    for name in (__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")):
        with open(os.path.abspath(name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="output directory (one file per rank + expected.json)")
    ap.add_argument("--ranks", type=int, default=4, help="world size / tensor-parallel size (default 4)")
    ap.add_argument("--events", type=int, default=100_000, help="approximate events per rank (default 100000)")
    ap.add_argument("--layers", type=int, default=32, help="decoder layers (default 32)")
    ap.add_argument("--slow-rank", type=int, default=None, help="rank whose compute kernels run longer")
    ap.add_argument("--slow-pct", type=float, default=25.0, help="how much longer, in %% (default 25)")
    ap.add_argument(
        "--clock-offset",
        type=float,
        default=3.0,
        help="max |clock offset| of ranks 1.. against rank 0, in seconds (default 3)",
    )
    ap.add_argument("--moe", action="store_true", help="expert-parallel MoE layers instead of dense MLPs")
    ap.add_argument("--moe-hot-rank", type=int, default=None, help="rank whose experts get more tokens (--moe)")
    ap.add_argument("--moe-hot-pct", type=float, default=60.0, help="how many more, in %% (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true", help="write rank-N.pt.trace.json.gz")
    ap.add_argument("--tp", type=int, default=None, help="tensor-parallel group size (default: all ranks)")
    ap.add_argument("--vllm-names", action="store_true", help="name files dp{d}_pp0_tp{t}_dcp0_ep0_rank{r}")
    ap.add_argument(
        "--start-step",
        action="append",
        default=[],
        metavar="R:K",
        help="rank R's trace begins at engine step K (repeatable)",
    )
    ap.add_argument(
        "--no-collective-detail", action="store_true", help="leave the per-collective arrivals out of expected.json"
    )
    ap.add_argument("--check", action="store_true", help="read the files back and check them (see check())")
    a = ap.parse_args(argv)
    try:
        starts = {}
        for spec in a.start_step:
            r, _, k = spec.partition(":")
            if not (r.isdigit() and k.isdigit()):
                raise ValueError(f"--start-step {spec!r}: expected RANK:STEP")
            starts[int(r)] = int(k)
        exp = generate(
            a.output,
            ranks=a.ranks,
            events=a.events,
            layers=a.layers,
            seed=a.seed,
            slow_rank=a.slow_rank,
            slow_pct=a.slow_pct,
            clock_offset_s=a.clock_offset,
            gz=a.gzip,
            collective_detail=not a.no_collective_detail,
            tp=a.tp,
            vllm_names=a.vllm_names,
            start_steps=starts,
            moe=a.moe,
            moe_hot_rank=a.moe_hot_rank,
            moe_hot_pct=a.moe_hot_pct,
        )
    except ValueError as e:
        print(f"gen_ranks: {e}", file=sys.stderr)
        return 2
    for r in exp["ranks"]:
        print(
            f"{os.path.join(a.output, r['file'])}: {r['events']:,} events, {r['json_bytes']:,} bytes, "
            f"clock offset {r['clock_offset_ns'] / 1e9:+.3f} s, NCCL wait {r['nccl_wait_ns'] / 1e6:.1f} ms",
            file=sys.stderr,
        )
    print(
        f"{exp['steps']} steps {exp['steps_by_phase']}, {exp['collectives']} collectives per rank, "
        f"generated in {exp['_wall_s']:.1f} s",
        file=sys.stderr,
    )
    if a.check:
        from .check_ranks import check

        problems = check(a.output)
        for p in problems[:50]:
            print(f"check: {p}", file=sys.stderr)
        print(f"check: {'ok' if not problems else f'{len(problems)} problem(s)'}", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
