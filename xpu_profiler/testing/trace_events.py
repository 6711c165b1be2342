"""gen_trace's event writer: the worker thread and stream 7 of one rank, the host ops,
``[memory]`` instants, kernel launches, memcpy/memset and syncs it writes as Kineto blocks,
and the ground truth counted as they are written."""

from __future__ import annotations

import random

from .trace_tables import (
    CBID_CU_LAUNCH,
    CBID_LAUNCH,
    CBID_MEMCPY,
    CBID_MEMSET,
    CBID_SYNC,
    DEVICE,
    HBM_BYTES_PER_NS,
    KERNEL_RES,
    KERNELS,
    NUM_SMS,
    PCIE_BYTES_PER_NS,
    PID,
    STREAM,
    T0_NS,
    TID,
    _ts,
)


class EventWriter:
    """Simulates the worker thread and stream 7, writing events as it goes."""

    def __init__(self, seed: int, cpu_out, gpu_out, host_gap_ns: int = 600):
        self.rng = random.Random(seed)
        self.host_gap_ns = host_gap_ns
        self.cpu_out = cpu_out
        self.gpu_out = gpu_out
        self.cpu: list = []  # current step's CPU blocks (parents patched in later)
        self.gpu: list = []  # current step's runtime/device blocks
        self.t = T0_NS  # host cursor
        self.stream_free = T0_NS  # end of the last device activity on the stream
        self.ext = 0
        self.ext_stack = [0]
        self.corr = 1_000_000
        self.evidx = 0
        self.addr = 0x7F3A_0000_0000
        self.allocated = 14_000_000_000  # weights and KV cache already resident
        self.reserved = 16_106_127_360
        self.live: list = []  # intermediate allocations to free
        self.kargs_cache: dict = {}
        # ground truth
        self.n_events = 0
        self.by_cat: dict = {}
        self.steps = 0
        self.steps_by_phase = {"prefill": 0, "decode": 0, "mixed": 0}
        self.kernels = 0
        self.kernel_dur = 0
        self.nccl_kernels = 0
        self.nccl_dur = 0
        self.memcpy = 0
        self.memcpy_dur = 0
        self.memset = 0
        self.memset_dur = 0
        self.kernel_dur_by_phase = {"prefill": 0, "decode": 0, "mixed": 0, "unknown": 0}
        self.kernels_by_phase = {"prefill": 0, "decode": 0, "mixed": 0, "unknown": 0}
        self.phase = "unknown"  # phase of the step whose range holds the host cursor
        self.step_dev_first: int | None = None  # the step's first device work, once it has some
        self.step_dev_last = 0
        # decode population: context lengths of running requests
        self.ctx_lens = [self.rng.randint(64, 1500) for _ in range(48)]

    # -- bookkeeping ------------------------------------------------------
    def _count(self, cat: str, n: int = 1) -> None:
        self.by_cat[cat] = self.by_cat.get(cat, 0) + n
        self.n_events += n

    def _jit(self, ns: int, pct: float = 0.15) -> int:
        return max(1, int(ns * (1.0 + self.rng.uniform(-pct, pct))))

    # -- host ops ---------------------------------------------------------
    def op_begin(self, name: str, dims: str, types: str, strides: str, concrete: str, cat: str = "cpu_op"):
        self.ext += 1
        self.evidx += 1
        h = (len(self.cpu), name, self.ext, self.evidx, self.t, dims, types, strides, concrete, cat)
        self.cpu.append(None)
        self.ext_stack.append(self.ext)
        self.t += self._jit(1800)
        return h

    def op_end(self, h) -> None:
        idx, name, ext, evidx, start, dims, types, strides, concrete, cat = h
        self.t += self._jit(900)
        self.ext_stack.pop()
        self.cpu[idx] = (
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {PID}, "tid": {TID},\n'
            f'    "ts": {_ts(start)}, "dur": {_ts(self.t - start)},\n'
            f'    "args": {{\n      "External id": {ext},"Record function id": 0, '
            f'"Concrete Inputs": {concrete}, "Input type": {types}, "Input Strides": {strides}, '
            f'"Input Dims": {dims}, "Ev Idx": {evidx - 1}\n    }}\n  }}'
        )
        self._count(cat)

    def leaf(self, name, dims, types, strides, concrete) -> None:
        self.op_end(self.op_begin(name, dims, types, strides, concrete))

    def annotation_begin(self, name: str):
        self.ext += 1
        self.evidx += 1
        h = (len(self.cpu), name, self.ext, self.evidx, self.t)
        self.cpu.append(None)
        self.ext_stack.append(self.ext)
        self.t += self._jit(4000)
        return h

    def annotation_end(self, h) -> int:
        idx, name, ext, evidx, start = h
        self.t += self._jit(3000)
        self.ext_stack.pop()
        self.cpu[idx] = (
            f'  {{\n    "ph": "X", "cat": "user_annotation", "name": "{name}", "pid": {PID}, "tid": {TID},\n'
            f'    "ts": {_ts(start)}, "dur": {_ts(self.t - start)},\n'
            f'    "args": {{\n      "External id": {ext},"Ev Idx": {evidx - 1}\n    }}\n  }}'
        )
        self._count("user_annotation")
        return ext

    def mem(self, nbytes: int) -> None:
        """A `[memory]` instant: allocation (nbytes > 0) or free (< 0)."""
        if nbytes > 0:
            self.addr += (nbytes + 511) & ~511
            addr = self.addr
            self.live.append((addr, nbytes))
        else:
            addr = self.addr
        self.allocated += nbytes
        if self.allocated > self.reserved:
            self.reserved += 2 * 1024 * 1024 * ((self.allocated - self.reserved) // (2 * 1024 * 1024) + 1)
        self.cpu.append(
            f'  {{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
            f'    "pid": {PID}, "tid": {TID},\n    "ts": {_ts(self.t)},\n'
            f'    "args": {{\n      "Total Reserved": {self.reserved}, "Total Allocated": {self.allocated}, '
            f'"Bytes": {nbytes}, "Addr": {addr}, "Device Id": {DEVICE}, "Device Type": 1\n    }}\n  }}'
        )
        self._count("cpu_instant_event")
        self.t += self._jit(400)

    def free_live(self, keep: int = 1) -> None:
        while len(self.live) > keep:
            addr, nbytes = self.live.pop(0)
            self.allocated -= nbytes
            self.cpu.append(
                f'  {{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
                f'    "pid": {PID}, "tid": {TID},\n    "ts": {_ts(self.t)},\n'
                f'    "args": {{\n      "Total Reserved": {self.reserved}, "Total Allocated": {self.allocated}, '
                f'"Bytes": {-nbytes}, "Addr": {addr}, "Device Id": {DEVICE}, "Device Type": 1\n    }}\n  }}'
            )
            self._count("cpu_instant_event")
            self.t += self._jit(300)

    # -- launches ---------------------------------------------------------
    def _kargs(self, key: str, grid: tuple) -> str:
        ck = (key, grid)
        s = self.kargs_cache.get(ck)
        if s is None:
            regs, smem, block = KERNEL_RES[key]
            nblocks = grid[0] * grid[1] * grid[2]
            threads = block[0] * block[1] * block[2]
            bps = nblocks / NUM_SMS
            wps = bps * threads / 32
            occ = min(100, int(wps / 64 * 100))
            s = (
                f'"registers per thread": {regs},      "shared memory": {smem},      '
                f'"blocks per SM": {bps:.6f},      "warps per SM": {wps:.6f},      '
                f'"grid": [{grid[0]}, {grid[1]}, {grid[2]}],      '
                f'"block": [{block[0]}, {block[1]}, {block[2]}],      "est. achieved occupancy %": {occ}'
            )
            self.kargs_cache[ck] = s
        return s

    def _device_slot(self, launch_ts: int, dur: int) -> int:
        start = max(launch_ts + self._jit(2500, 0.4), self.stream_free + self._jit(700, 0.5))
        self.stream_free = start + dur
        if self.step_dev_first is None:
            self.step_dev_first = start
        self.step_dev_last = self.stream_free
        return start

    def _runtime(
        self, name: str, cbid: int, corr: int, start: int, dur: int, cat: str = "cuda_runtime", flow: bool = True
    ) -> None:
        ext = self.ext_stack[-1]
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {PID}, "tid": {TID},\n'
            f'    "ts": {_ts(start)}, "dur": {_ts(dur)},\n'
            f'    "args": {{\n      "External id": {ext},      "cbid": {cbid}, "correlation": {corr}\n    }}\n  }}'
        )
        self._count(cat)
        if flow:
            self.gpu.append(
                f'  {{\n    "ph": "s", "id": {corr}, "pid": {PID}, "tid": {TID}, "ts": {_ts(start)},\n'
                f'    "cat": "ac2g", "name": "ac2g"\n  }}'
            )
            self._count("ac2g")

    def _flow_end(self, corr: int, ts: int) -> None:
        self.gpu.append(
            f'  {{\n    "ph": "f", "id": {corr}, "pid": {DEVICE}, "tid": {STREAM}, "ts": {_ts(ts)},\n'
            f'    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }}'
        )
        self._count("ac2g")

    def launch(self, key: str, dur_ns: float, grid: tuple, driver: bool = False) -> None:
        """cudaLaunchKernel (or cuLaunchKernel for Triton) + kernel + ac2g flow pair."""
        self.corr += 1
        corr = self.corr
        ext = self.ext_stack[-1]
        rt_start = self.t
        rt_dur = self._jit(4200 if not driver else 3600, 0.3)
        dur = self._jit(int(dur_ns), 0.06)
        kstart = self._device_slot(rt_start, dur)
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "kernel", "name": "{KERNELS[key]}", "pid": {DEVICE}, "tid": {STREAM},\n'
            f'    "ts": {_ts(kstart)}, "dur": {_ts(dur)},\n'
            f'    "args": {{\n      "External id": {ext},      "queued": 0, "device": {DEVICE}, "context": 1,'
            f'      "stream": {STREAM}, "correlation": {corr},      {self._kargs(key, grid)}\n    }}\n  }}'
        )
        self._count("kernel")
        self._flow_end(corr, kstart)
        if driver:
            self._runtime("cuLaunchKernel", CBID_CU_LAUNCH, corr, rt_start, rt_dur, cat="cuda_driver")
        else:
            self._runtime("cudaLaunchKernel", CBID_LAUNCH, corr, rt_start, rt_dur)
        self.t = rt_start + rt_dur + self._jit(self.host_gap_ns)
        self.kernels += 1
        self.kernel_dur += dur
        self.kernels_by_phase[self.phase] += 1
        self.kernel_dur_by_phase[self.phase] += dur
        if key == "nccl_allreduce":
            self.nccl_kernels += 1
            self.nccl_dur += dur

    def memcpy_async(self, kind: str, nbytes: int) -> None:
        self.corr += 1
        corr = self.corr
        ext = self.ext_stack[-1]
        rt_start = self.t
        rt_dur = self._jit(5200, 0.3)
        dur = self._jit(1300 + int(nbytes / PCIE_BYTES_PER_NS), 0.1)
        kstart = self._device_slot(rt_start, dur)
        name = "Memcpy HtoD (Pinned -> Device)" if kind == "HtoD" else "Memcpy DtoH (Device -> Pinned)"
        bw = nbytes / dur
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "gpu_memcpy", "name": "{name}", "pid": {DEVICE}, "tid": {STREAM},\n'
            f'    "ts": {_ts(kstart)}, "dur": {_ts(dur)},\n'
            f'    "args": {{\n      "External id": {ext},      "device": {DEVICE}, "context": 1,'
            f'      "stream": {STREAM}, "correlation": {corr},      "bytes": {nbytes}, '
            f'"memory bandwidth (GB/s)": {bw}\n    }}\n  }}'
        )
        self._count("gpu_memcpy")
        self._flow_end(corr, kstart)
        self._runtime("cudaMemcpyAsync", CBID_MEMCPY, corr, rt_start, rt_dur)
        self.t = rt_start + rt_dur + self._jit(500)
        self.memcpy += 1
        self.memcpy_dur += dur

    def memset_async(self, nbytes: int) -> None:
        self.corr += 1
        corr = self.corr
        ext = self.ext_stack[-1]
        rt_start = self.t
        rt_dur = self._jit(3300, 0.3)
        dur = self._jit(1100 + int(nbytes / HBM_BYTES_PER_NS), 0.1)
        kstart = self._device_slot(rt_start, dur)
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": {DEVICE}, '
            f'"tid": {STREAM},\n    "ts": {_ts(kstart)}, "dur": {_ts(dur)},\n'
            f'    "args": {{\n      "External id": {ext},      "device": {DEVICE}, "context": 1,'
            f'      "stream": {STREAM}, "correlation": {corr},      "bytes": {nbytes}, '
            f'"memory bandwidth (GB/s)": {nbytes / dur}\n    }}\n  }}'
        )
        self._count("gpu_memset")
        self._flow_end(corr, kstart)
        self._runtime("cudaMemsetAsync", CBID_MEMSET, corr, rt_start, rt_dur)
        self.t = rt_start + rt_dur + self._jit(500)
        self.memset += 1
        self.memset_dur += dur

    def stream_sync(self) -> None:
        """cudaStreamSynchronize: the host waits until the stream drains."""
        self.corr += 1
        start = self.t
        end = max(start + self._jit(2500), self.stream_free + self._jit(1500))
        self._runtime("cudaStreamSynchronize", CBID_SYNC, self.corr, start, end - start, flow=False)
        self.t = end + self._jit(800)

    def flush(self) -> None:
        self.cpu_out.write(",\n".join(self.cpu))
        self.cpu_out.write(",\n")
        self.cpu = []
        if self.gpu:
            self.gpu_out.write(",\n".join(self.gpu))
            self.gpu_out.write(",\n")
            self.gpu = []
