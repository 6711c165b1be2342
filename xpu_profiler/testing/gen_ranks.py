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
import os
import sys

# The generator's parts, by concern (its entry points and tables stay importable from here):
# ranks_tables (model, streams, kernels), ranks_rank (one rank's writer), ranks_run (the ranks in
# lockstep, the layers), ranks_file (headers, metadata, the files, expected.json).
from .ranks_file import GENERATOR_VERSION, SOURCES, generate, source_hash
from .ranks_rank import Rank
from .ranks_run import Run
from .ranks_tables import (
    COMPUTE_STREAM,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    INTER,
    KERNEL_RES,
    KERNELS,
    KV_HEADS,
    MOE_EXPERTS,
    MOE_INTER,
    MOE_TOPK,
    NCCL_LATENCY_NS,
    NCCL_STREAM,
    NVLINK_BYTES_PER_NS,
    PID0,
    PROFILER_START_STAGGER_NS,
    VOCAB,
)
from .trace_tables import (
    BASE_TIME_NS,
    CBID_LAUNCH,
    CBID_MEMCPY,
    CBID_SYNC,
    FLOP_PER_NS,
    HBM_BYTES_PER_NS,
    NUM_SMS,
    PCIE_BYTES_PER_NS,
    T0_NS,
)

__all__ = [
    "BASE_TIME_NS",
    "CBID_LAUNCH",
    "CBID_MEMCPY",
    "CBID_SYNC",
    "COMPUTE_STREAM",
    "FLOP_PER_NS",
    "GENERATOR_VERSION",
    "HBM_BYTES_PER_NS",
    "HEADS",
    "HEAD_DIM",
    "HIDDEN",
    "INTER",
    "KERNELS",
    "KERNEL_RES",
    "KV_HEADS",
    "MOE_EXPERTS",
    "MOE_INTER",
    "MOE_TOPK",
    "NCCL_LATENCY_NS",
    "NCCL_STREAM",
    "NUM_SMS",
    "NVLINK_BYTES_PER_NS",
    "PCIE_BYTES_PER_NS",
    "PID0",
    "PROFILER_START_STAGGER_NS",
    "Rank",
    "Run",
    "SOURCES",
    "T0_NS",
    "VOCAB",
    "generate",
    "main",
    "source_hash",
]


def _parser() -> argparse.ArgumentParser:
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
    return ap


def main(argv=None) -> int:
    a = _parser().parse_args(argv)
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
