"""gen_ranks's files: each rank's header and metadata, the traces written step by step (one
file per rank, its device events gathered in a temporary file and appended), their gzip copies,
``expected.json`` (the ground truth counted while generating), and the hash of the generator."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
import tempfile
import time

from . import trace_file
from .ranks_rank import Rank
from .ranks_run import Run
from .ranks_tables import COMPUTE_STREAM, NCCL_STREAM
from .trace_tables import NUM_SMS, T0_NS, _ts

GENERATOR_VERSION = 2
#: the generator's modules (this folder), hashed with gen_trace's (``trace_file.SOURCES``)
SOURCES = ("gen_ranks.py", "ranks_tables.py", "ranks_rank.py", "ranks_run.py", "ranks_file.py")


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
    tp, start_steps = _check_args(ranks, slow_rank, tp, start_steps)
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
        _write_traces(rks, run, events, gpu_files, names)
    finally:
        for f in cpu_files + gpu_files:
            f.close()
    files, sizes = _finish_files(out_dir, plain, names, gz)
    expected = _expected(
        run,
        rks,
        files,
        sizes,
        ranks=ranks,
        tp=tp,
        slow_rank=slow_rank,
        slow_pct=slow_pct,
        collective_detail=collective_detail,
        seed=seed,
        events=events,
        layers=layers,
    )
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    expected["_wall_s"] = time.perf_counter() - t_wall
    return expected


def _check_args(
    ranks: int, slow_rank: int | None, tp: int | None, start_steps: dict[int, int] | None
) -> tuple[int, dict[int, int]]:
    """Refuses arguments that make no run; the tensor-parallel size and the start steps, defaults filled in."""
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
    return tp, start_steps


def _write_traces(rks: list[Rank], run: Run, events: int, gpu_files: list, names: list[str]) -> None:
    """Every rank's file: the header, the steps until rank 0 has ``events``, then the device events,
    the metadata and ``Record Window End``."""
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


def _finish_files(out_dir: str, plain: list[str], names: list[str], gz: bool) -> tuple[list[str], list[int]]:
    """The files' names as written (gzipped, with ``gz``) and their plain sizes."""
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
    return files, sizes


def _expected(
    run: Run,
    rks: list[Rank],
    files: list[str],
    sizes: list[int],
    *,
    ranks: int,
    tp: int,
    slow_rank: int | None,
    slow_pct: float,
    collective_detail: bool,
    seed: int,
    events: int,
    layers: int,
) -> dict:
    """The ground truth, as ``expected.json`` holds it."""
    return {
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


def source_hash() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in SOURCES + trace_file.SOURCES:
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
