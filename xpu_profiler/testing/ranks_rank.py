"""gen_ranks's rank: one rank's worker thread, compute and NCCL streams and its two output
sections (host events; runtime and device events), the launches, copies, syncs and both halves of a
collective it writes, and the ground truth it counts."""

from __future__ import annotations

import json
import random
from typing import Any

from .ranks_tables import COMPUTE_STREAM, KERNEL_RES, KERNELS, NCCL_STREAM, PID0, PROFILER_START_STAGGER_NS
from .trace_tables import BASE_TIME_NS, CBID_LAUNCH, CBID_MEMCPY, CBID_SYNC, NUM_SMS, PCIE_BYTES_PER_NS, T0_NS, _ts


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
