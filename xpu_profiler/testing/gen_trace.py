#!/usr/bin/env python3
"""Generate a deterministic synthetic Kineto (torch.profiler) Chrome trace.

The trace has the shape of vLLM inference of a Qwen2.5-7B-like model (28
layers, bf16) on one H100: one worker thread that runs engine steps, each
wrapped in vLLM's ``execute_context_{n}({tok})_generation_{m}({tok})``
``user_annotation`` (about 6 % prefill steps, some mixed, the rest decode
with a batch of 1-128), with the host ops, CUDA runtime/driver calls, device
kernels on stream 7, memcpy/memset, ``ac2g`` flows, ``[memory]`` instants and
metadata that torch.profiler writes.

The text follows Kineto's writer (``libkineto/src/output_json.cpp``): one
multi-line block per event, ``ts`` as ``<us>.<ns:03>`` relative to
``baseTimeNanoseconds``, CPU events first, then runtime and device events,
then ``M`` metadata, then ``Record Window End`` (whose pid/tid are "").

Usage::

    python -m xpu_profiler.testing.gen_trace --events 1000000 -o trace_1m.json [--gzip] [--seed 0]

``--gzip`` also writes ``FILE.gz``; an output name ending in ``.gz`` is written
compressed only. Next to the trace, ``FILE.expected.json`` holds the ground
truth counted while generating (not by re-reading the file): number of events,
engine steps (total and by phase), kernel count and total kernel duration in
ns, and more. Output is streamed; memory stays flat whatever the size.
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

GENERATOR_VERSION = 1

# --------------------------------------------------------------------------
# Model and device constants (Qwen2.5-7B-like, bf16, one H100 SXM)
# --------------------------------------------------------------------------
LAYERS = 28
HIDDEN = 3584
INTER = 18944
HEADS = 28
KV_HEADS = 4
HEAD_DIM = 128
QKV_N = HIDDEN + 2 * KV_HEADS * HEAD_DIM  # 4608
VOCAB = 152064
KV_BYTES_PER_TOKEN_LAYER = 2 * KV_HEADS * HEAD_DIM * 2  # K and V, bf16
NUM_SMS = 132
HBM_BYTES_PER_NS = 2600.0  # ~2.6 TB/s achieved
FLOP_PER_NS = 650_000.0  # ~650 TFLOP/s achieved bf16
PCIE_BYTES_PER_NS = 25.0

BASE_TIME_NS = 1764633600000000000  # 2025-12-02T00:00:00Z
T0_NS = 45_296_123_456_789  # first event, relative to the base
PID = 161803  # worker process (= main thread id)
TID = 161803
DEVICE = 0
STREAM = 7

BF16 = '"c10::BFloat16"'
EMPTY = '""'

# Kernel names. The launch templates below refer to them by key.
KERNELS = {
    "gemm_small": "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
    "gemm_mid": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas",
    "gemm_large": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
    "execute_segment_k_off_kernel__5x_cublas",
    "splitk": "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, "
    "true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, "
    "void*, long, float*, int*)",
    "rms_norm": "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long, "
    "c10::BFloat16 const*, float, int, int)",
    "fused_add_rms_norm": "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
    "rotary": "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
    "reshape_and_cache": "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, "
    "float const*, float const*)",
    "flash_splitkv": "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
    "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, "
    "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "flash_combine": "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
    "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
    "cutlass::bfloat16_t> >, 4, 2, true>(flash::Flash_fwd_params)",
    "flash_prefill": "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
    "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
    "true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "silu_and_mul": "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel"
    "<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "embedding": "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
    "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
    "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, "
    "long)",
    "topk_softmax": "void vllm::moe::topkGatingSoftmax<8, 64, 4, 16, int>(float const*, bool const*, float*, "
    "int, int*, int*, int, int, int)",
    "triton_softmax": "triton_red_fused__softmax__to_copy_div_0",
    "triton_argmax": "triton_red_fused_argmax_1",
    "triton_gather": "triton_poi_fused_gather_index_put_2",
    "nccl_allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}

# (registers per thread, shared memory, block dims) per kernel key
KERNEL_RES = {
    "gemm_small": (230, 73728, (128, 1, 1)),
    "gemm_mid": (168, 213248, (384, 1, 1)),
    "gemm_large": (168, 232448, (384, 1, 1)),
    "splitk": (32, 0, (32, 16, 1)),
    "rms_norm": (32, 0, (256, 1, 1)),
    "fused_add_rms_norm": (28, 0, (256, 1, 1)),
    "rotary": (40, 0, (512, 1, 1)),
    "reshape_and_cache": (30, 0, (512, 1, 1)),
    "flash_splitkv": (255, 49152, (128, 1, 1)),
    "flash_combine": (64, 16512, (128, 1, 1)),
    "flash_prefill": (255, 65536, (128, 1, 1)),
    "silu_and_mul": (18, 0, (1024, 1, 1)),
    "embedding": (36, 0, (128, 4, 1)),
    "topk_softmax": (40, 0, (32, 4, 1)),
    "triton_softmax": (32, 16, (128, 1, 1)),
    "triton_argmax": (26, 16, (128, 1, 1)),
    "triton_gather": (20, 0, (256, 1, 1)),
    "nccl_allreduce": (96, 4416, (640, 1, 1)),
}

# CUPTI callback ids (cbid) as Kineto writes them
CBID_LAUNCH = 211
CBID_MEMCPY = 41
CBID_MEMSET = 56
CBID_SYNC = 131
CBID_CU_LAUNCH = 307


def _ts(t: int) -> str:
    return f"{t // 1000}.{t % 1000:03d}"


class Gen:
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

    # -- model pieces -----------------------------------------------------
    def gemm(self, T: int, N: int, K: int, bias: bool, splitk_ok: bool = False) -> None:
        """aten::linear > (aten::t > aten::transpose > aten::as_strided), aten::mm|addmm > kernel."""
        b = "[" + str(N) + "]" if bias else "[]"
        h = self.op_begin(
            "aten::linear",
            f"[[{T}, {K}], [{N}, {K}], {b}]",
            f"[{BF16}, {BF16}, {BF16 if bias else EMPTY}]",
            f"[[{K}, 1], [{K}, 1], {'[1]' if bias else '[]'}]",
            '["", "", ""]',
        )
        h2 = self.op_begin("aten::t", f"[[{N}, {K}]]", f"[{BF16}]", f"[[{K}, 1]]", '[""]')
        h3 = self.op_begin(
            "aten::transpose",
            f"[[{N}, {K}], [], []]",
            f'[{BF16}, "Scalar", "Scalar"]',
            f"[[{K}, 1], [], []]",
            '["", "0", "1"]',
        )
        self.leaf(
            "aten::as_strided",
            f"[[{N}, {K}], [], [], []]",
            f'[{BF16}, "", "", ""]',
            f"[[{K}, 1], [], [], []]",
            '["", "", "", ""]',
        )
        self.op_end(h3)
        self.op_end(h2)
        if bias:
            hm = self.op_begin(
                "aten::addmm",
                f"[[{N}], [{T}, {K}], [{K}, {N}], [], []]",
                f'[{BF16}, {BF16}, {BF16}, "Scalar", "Scalar"]',
                f"[[1], [{K}, 1], [1, {K}], [], []]",
                '["", "", "", "1", "1"]',
            )
        else:
            hm = self.op_begin(
                "aten::mm", f"[[{T}, {K}], [{K}, {N}]]", f"[{BF16}, {BF16}]", f"[[{K}, 1], [1, {K}]]", '["", ""]'
            )
        self.mem(T * N * 2)
        flops = 2.0 * T * N * K
        dur = max(N * K * 2 / HBM_BYTES_PER_NS, flops / FLOP_PER_NS) + 2500
        if T <= 16:
            key, tile = "gemm_small", (64, 64)
        elif T <= 256:
            key, tile = "gemm_mid", (64, 128)
        else:
            key, tile = "gemm_large", (128, 256)
        grid = ((N + tile[1] - 1) // tile[1], (T + tile[0] - 1) // tile[0], 1)
        if splitk_ok and T <= 16:
            self.launch(key, dur * 0.93, (grid[0], grid[1], 4))
            self.launch("splitk", 1800 + T * N / 400, ((N + 31) // 32, (T + 15) // 16, 1))
        else:
            self.launch(key, dur, grid)
        self.op_end(hm)
        self.op_end(h)

    def simple_op(self, name: str, key: str, dur_ns: float, grid: tuple, dims: str, n_in: int) -> None:
        h = self.op_begin(
            name,
            dims,
            "[" + ", ".join([BF16] * n_in) + "]",
            "[" + ", ".join(["[]"] * n_in) + "]",
            "[" + ", ".join(['""'] * n_in) + "]",
        )
        self.launch(key, dur_ns, grid)
        self.op_end(h)

    def layer(self, li: int, T: int, n_dec: int, ctx_sum: int, prefill_sq: int, topk: bool) -> None:
        tok_bytes = T * HIDDEN * 2
        norm_dur = 1800 + 2 * tok_bytes / HBM_BYTES_PER_NS
        rows = T
        if li == 0:
            self.simple_op(
                "_C::rms_norm",
                "rms_norm",
                norm_dur,
                (rows, 1, 1),
                f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
                3,
            )
        else:
            self.simple_op(
                "_C::fused_add_rms_norm",
                "fused_add_rms_norm",
                norm_dur * 1.5,
                (rows, 1, 1),
                f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
                3,
            )
        self.gemm(T, QKV_N, HIDDEN, bias=True)
        self.simple_op(
            "_C::rotary_embedding",
            "rotary",
            1500 + T * 6,
            (T, 1, 1),
            f"[[{T}], [{T}, {HIDDEN}], [{T}, {KV_HEADS * HEAD_DIM}], [], [131072, {HEAD_DIM}], []]",
            4,
        )
        # attention
        h = self.op_begin(
            "vllm::unified_attention",
            f"[[{T}, {HIDDEN}], [{T}, {KV_HEADS * HEAD_DIM}], [{T}, {KV_HEADS * HEAD_DIM}], [{T}, {HIDDEN}], []]",
            f'[{BF16}, {BF16}, {BF16}, {BF16}, "std::string"]',
            "[[], [], [], [], []]",
            f'["", "", "", "", "\'model.layers.{li}.self_attn.attn\'"]',
        )
        h2 = self.op_begin(
            "_C_cache_ops::reshape_and_cache_flash",
            f"[[{T}, {KV_HEADS}, {HEAD_DIM}], [{T}, {KV_HEADS}, {HEAD_DIM}], [], [], [{T}], [], [], []]",
            f'[{BF16}, {BF16}, {BF16}, {BF16}, "long int", "std::string", "", ""]',
            "[[], [], [], [], [1], [], [], []]",
            '["", "", "", "", "", "\'auto\'", "", ""]',
        )
        self.launch("reshape_and_cache", 1500 + T * 4, (T, 1, 1))
        self.op_end(h2)
        self.leaf(
            "aten::empty",
            "[[], [], [], [], [], []]",
            '["", "", "", "", "", ""]',
            "[[], [], [], [], [], []]",
            '["", "", "", "", "", ""]',
        )
        self.mem(T * HIDDEN * 2)
        h3 = self.op_begin(
            "_vllm_fa2_C::varlen_fwd",
            f"[[{T}, {HEADS}, {HEAD_DIM}], [], [], [{T}, {HEADS}, {HEAD_DIM}]]",
            f"[{BF16}, {BF16}, {BF16}, {BF16}]",
            "[[], [], [], []]",
            '["", "", "", ""]',
        )
        if prefill_sq:
            dur = (
                3000
                + prefill_sq * HEADS * HEAD_DIM * 4 / FLOP_PER_NS
                + ctx_sum * KV_BYTES_PER_TOKEN_LAYER / HBM_BYTES_PER_NS
            )
            self.launch("flash_prefill", dur, ((T + 127) // 128, HEADS, 1))
        else:
            dur = 4000 + ctx_sum * KV_BYTES_PER_TOKEN_LAYER / HBM_BYTES_PER_NS
            self.launch("flash_splitkv", dur, (1, HEADS, max(1, n_dec) * 4))
            self.launch("flash_combine", 2000 + n_dec * 30, (max(1, n_dec), HEADS, 1))
        self.op_end(h3)
        self.op_end(h)
        self.gemm(T, HIDDEN, HIDDEN, bias=False)
        self.simple_op(
            "_C::fused_add_rms_norm",
            "fused_add_rms_norm",
            norm_dur * 1.5,
            (rows, 1, 1),
            f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
            3,
        )
        if topk:
            self.simple_op(
                "_moe_C::topk_softmax",
                "topk_softmax",
                2600 + T * 2,
                ((T + 3) // 4, 1, 1),
                f"[[{T}, 8], [{T}, 8], [{T}, 8], [{T}, 64]]",
                4,
            )
        self.gemm(T, 2 * INTER, HIDDEN, bias=False)
        h = self.op_begin(
            "_C::silu_and_mul",
            f"[[{T}, {INTER}], [{T}, {2 * INTER}]]",
            f"[{BF16}, {BF16}]",
            f"[[{INTER}, 1], [{2 * INTER}, 1]]",
            '["", ""]',
        )
        self.mem(T * INTER * 2)
        self.launch("silu_and_mul", 1500 + T * INTER * 2 * 3 / HBM_BYTES_PER_NS, (T, 1, 1))
        self.op_end(h)
        self.gemm(T, HIDDEN, INTER, bias=False, splitk_ok=True)
        self.free_live(keep=2)

    def step(self) -> None:
        rng = self.rng
        r = rng.random()
        dec_reqs = self.ctx_lens
        if r < 0.06:
            phase = "prefill"
            n_pre = rng.choice((1, 1, 1, 2, 3, 4))
            pre = [rng.randint(64, 2048) for _ in range(n_pre)]
            n_dec = 0
        elif r < 0.10:
            phase = "mixed"
            n_pre = rng.choice((1, 1, 2))
            pre = [rng.randint(32, 1024) for _ in range(n_pre)]
            n_dec = len(dec_reqs)
        else:
            phase = "decode"
            n_pre = 0
            pre = []
            n_dec = len(dec_reqs)
        pre_tok = sum(pre)
        T = pre_tok + n_dec
        ctx_sum = sum(dec_reqs) + pre_tok
        prefill_sq = sum(p * p for p in pre)
        topk = (self.steps % 37) == 5
        name = f"execute_context_{n_pre}({pre_tok})_generation_{n_dec}({n_dec})"

        # scheduler gap before the worker starts the step
        self.t += self._jit(180_000, 0.5)
        self.phase = phase
        self.step_dev_first = None
        ann = self.annotation_begin(name)
        # prepare inputs: input ids, positions, slot mapping, block table
        for nbytes in (T * 8, T * 8, T * 8, max(1, n_pre + n_dec) * 256 * 4):
            h = self.op_begin(
                "aten::copy_",
                f"[[{T}], [{T}], []]",
                '["long int", "long int", "Scalar"]',
                "[[1], [1], []]",
                '["", "", "True"]',
            )
            self.memcpy_async("HtoD", nbytes)
            self.op_end(h)
        h = self.op_begin(
            "aten::embedding",
            f"[[{VOCAB}, {HIDDEN}], [{T}], [], [], []]",
            f'[{BF16}, "long int", "Scalar", "Scalar", "Scalar"]',
            f"[[{HIDDEN}, 1], [1], [], [], []]",
            '["", "", "-1", "False", "False"]',
        )
        self.mem(T * HIDDEN * 2)
        self.launch("embedding", 1500 + T * HIDDEN * 2 / HBM_BYTES_PER_NS, ((T + 3) // 4, 1, 1))
        self.op_end(h)
        for li in range(LAYERS):
            self.layer(li, T, n_dec, ctx_sum, prefill_sq, topk and li == 0)
        self.simple_op(
            "_C::fused_add_rms_norm",
            "fused_add_rms_norm",
            1800 + 3 * T * HIDDEN * 2 / HBM_BYTES_PER_NS,
            (T, 1, 1),
            f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
            3,
        )
        n_seq = n_pre + n_dec
        self.gemm(n_seq, VOCAB, HIDDEN, bias=False)  # lm_head on the last token of each sequence
        if self.steps % 50 == 17:
            self.simple_op("vllm::all_reduce", "nccl_allreduce", 14_000 + n_seq * 20, (2, 1, 1), f"[[{n_seq}, 8]]", 1)
        ann_ext = self.annotation_end(ann)
        dev_first, dev_last = self.step_dev_first, self.step_dev_last
        assert dev_first is not None  # the step launched device work (its lm_head gemm at least)
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "gpu_user_annotation", "name": "{name}", "pid": {DEVICE}, '
            f'"tid": {STREAM},\n    "ts": {_ts(dev_first)}, "dur": {_ts(dev_last - dev_first)},\n'
            f'    "args": {{\n      "External id": {ann_ext}\n    }}\n  }}'
        )
        self._count("gpu_user_annotation")
        self.steps += 1
        self.steps_by_phase[phase] += 1

        # sampling runs outside the step range (a separate call in vLLM >= 0.12)
        self.phase = "unknown"
        h = self.op_begin(
            "aten::softmax",
            f"[[{n_seq}, {VOCAB}], [], []]",
            f'[{BF16}, "Scalar", ""]',
            f"[[{VOCAB}, 1], [], []]",
            '["", "-1", ""]',
        )
        self.launch("triton_softmax", 4000 + n_seq * VOCAB * 6 / HBM_BYTES_PER_NS, (n_seq, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin(
            "aten::argmax",
            f"[[{n_seq}, {VOCAB}], [], []]",
            '["float", "Scalar", "Scalar"]',
            f"[[{VOCAB}, 1], [], []]",
            '["", "-1", "False"]',
        )
        self.launch("triton_argmax", 3500 + n_seq * VOCAB * 4 / HBM_BYTES_PER_NS, (n_seq, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin("aten::zero_", f"[[{n_seq}, 64]]", '["int"]', "[[64, 1]]", '[""]')
        self.memset_async(n_seq * 64 * 4)
        self.op_end(h)
        h = self.op_begin(
            "aten::index_put_",
            f"[[{n_seq}, 64], [], [{n_seq}], []]",
            '["int", "", "int", "Scalar"]',
            "[[64, 1], [], [1], []]",
            '["", "", "", "False"]',
        )
        self.launch("triton_gather", 2500 + n_seq * 3, ((n_seq + 255) // 256, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin(
            "aten::to",
            f"[[{n_seq}], [], [], [], [], [], []]",
            '["long int", "", "", "", "", "", ""]',
            "[[1], [], [], [], [], [], []]",
            '["", "", "", "", "False", "False", ""]',
        )
        self.memcpy_async("DtoH", n_seq * 8)
        self.stream_sync()
        self.op_end(h)
        self.free_live(keep=0)

        # update the decode population
        for i in range(len(dec_reqs)):
            dec_reqs[i] += 1
        if phase != "decode":
            dec_reqs.extend(pre)
        # requests finish; the batch size drifts over 1..128
        target = self._batch_target()
        while len(dec_reqs) > target or (dec_reqs and rng.random() < 0.04):
            dec_reqs.pop(rng.randrange(len(dec_reqs)))
        if not dec_reqs:
            dec_reqs.append(rng.randint(16, 256))
        for _ in range(6):
            if len(dec_reqs) < target and rng.random() < 0.6:
                dec_reqs.append(rng.randint(64, 1500))

        self.flush()

    def _batch_target(self) -> int:
        # slow oscillation between 1 and 128 running requests
        import math

        x = 0.5 + 0.5 * math.sin(self.steps / 23.0) * math.cos(self.steps / 61.0)
        return max(1, min(128, int(1 + 127 * x * x)))

    def flush(self) -> None:
        self.cpu_out.write(",\n".join(self.cpu))
        self.cpu_out.write(",\n")
        self.cpu = []
        if self.gpu:
            self.gpu_out.write(",\n".join(self.gpu))
            self.gpu_out.write(",\n")
            self.gpu = []


HEADER = """
{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }}
  ],
  "cupti_version": 24,
  "cuda_runtime_version": 12080,
  "cuda_driver_version": 12080,
  "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 1, "ranks": [0]}}], "nccl_version": "2.26.2"}},
  "record_shapes": 1,
  "profile_memory": 1,
  "with_stack": 0,
  "vllm_version": "0.15.1",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {base},
  "traceEvents": [
"""


def metadata_blocks(t_first: int, t_last: int) -> list:
    ts = _ts(t_first)

    def m(name, pid, tid, key, val):
        return (
            f'  {{\n    "name": "{name}", "ph": "M", "ts": {ts}, "pid": {pid}, "tid": {tid},\n'
            f'    "args": {{\n      "{key}": {val}\n    }}\n  }}'
        )

    return [
        m("process_name", PID, 0, "name", '"python3"'),
        m("process_labels", PID, 0, "labels", '"CPU"'),
        m("process_sort_index", PID, 0, "sort_index", PID),
        m("process_name", DEVICE, 0, "name", '"python3"'),
        m("process_labels", DEVICE, 0, "labels", f'"GPU {DEVICE}"'),
        m("process_sort_index", DEVICE, 0, "sort_index", 16777216 + DEVICE),
        m("thread_name", DEVICE, STREAM, "name", f'"stream {STREAM} "'),
        m("thread_sort_index", DEVICE, STREAM, "sort_index", STREAM),
        m("thread_name", PID, TID, "name", f'"thread {TID} (VllmWorker TP0)"'),
        m("thread_sort_index", PID, TID, "sort_index", TID),
        (
            f'  {{\n    "ph": "X", "cat": "Trace", "ts": {ts}, "dur": {_ts(t_last - t_first)},\n'
            f'    "pid": "Spans", "tid": "PyTorch Profiler",\n    "name": "PyTorch Profiler (0)",\n'
            f'    "args": {{\n      "Op count": 0\n    }}\n  }}'
        ),
        (
            f'  {{\n    "name": "process_sort_index", "ph": "M", "ts": {ts},\n    "pid": "Spans", "tid": 0,\n'
            f'    "args": {{\n      "sort_index": 536870912\n    }}\n  }}'
        ),
        (
            f'  {{\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n'
            f'    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {ts}\n  }}'
        ),
    ]


def generate(events: int, out_path: str, seed: int = 0, gzip_copy: bool = False, host_gap_ns: int = 600) -> dict:
    t_wall = time.perf_counter()
    out_dir = os.path.dirname(os.path.abspath(out_path)) or "."
    compress_only = out_path.endswith(".gz")
    plain_path = out_path[:-3] + ".tmp-plain" if compress_only else out_path
    with (
        open(plain_path, "w", encoding="ascii", buffering=1 << 20) as cpu_out,
        tempfile.TemporaryFile("w+", encoding="ascii", dir=out_dir, buffering=1 << 20) as gpu_out,
    ):
        g = Gen(seed, cpu_out, gpu_out, host_gap_ns)
        cpu_out.write(HEADER.format(base=BASE_TIME_NS))
        while g.n_events + 13 + 1 < events:
            g.step()
        gpu_out.flush()
        gpu_out.seek(0)
        shutil.copyfileobj(gpu_out, cpu_out, 1 << 20)
        meta = metadata_blocks(T0_NS, g.t)
        for blk in meta:
            cpu_out.write(blk)
            cpu_out.write(",\n")
        g.n_events += len(meta)
        g.by_cat["Trace"] = g.by_cat.get("Trace", 0) + 1
        g.by_cat["(none)"] = g.by_cat.get("(none)", 0) + len(meta) - 1
        cpu_out.write(
            f'  {{\n    "name": "Record Window End", "ph": "i", "s": "g",\n'
            f'    "pid": "", "tid": "", "ts": {_ts(g.t + 1000)}\n  }}\n'
        )
        g.n_events += 1
        g.by_cat["(none)"] += 1
        cpu_out.write(f'  ],\n  "traceName": "{os.path.basename(out_path)}"\n}}')

    if compress_only or gzip_copy:
        gz_path = out_path if compress_only else out_path + ".gz"
        with (
            open(plain_path, "rb") as src,
            open(gz_path, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
        if compress_only:
            size_plain = os.path.getsize(plain_path)
            os.unlink(plain_path)
        else:
            size_plain = os.path.getsize(out_path)
    else:
        size_plain = os.path.getsize(out_path)

    expected = {
        "events": g.n_events,
        "steps": g.steps,
        "steps_by_phase": g.steps_by_phase,
        "kernel_dur_ns": g.kernel_dur,
        "kernels": g.kernels,
        "kernel_dur_ns_by_phase": g.kernel_dur_by_phase,
        "kernels_by_phase": g.kernels_by_phase,
        "nccl_kernels": g.nccl_kernels,
        "nccl_kernel_dur_ns": g.nccl_dur,
        "memcpy": g.memcpy,
        "memcpy_dur_ns": g.memcpy_dur,
        "memset": g.memset,
        "memset_dur_ns": g.memset_dur,
        "device_busy_ns": g.kernel_dur + g.memcpy_dur + g.memset_dur,
        "events_by_cat": dict(sorted(g.by_cat.items())),
        "json_bytes": size_plain,
        "base_time_ns": BASE_TIME_NS,
        "generator": {
            "version": GENERATOR_VERSION,
            "seed": seed,
            "events_requested": events,
            "source_sha256": source_hash(),
        },
        "notes": "kernel_* counts cover cat 'kernel' (NCCL kernels included; memcpy/memset not). "
        "*_by_phase assign a kernel to the step whose user_annotation range holds its launch; "
        "'unknown' = launched outside every step (sampling).",
    }
    exp_path = (out_path[:-3] if compress_only else out_path) + ".expected.json"
    with open(exp_path, "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    expected["_wall_s"] = time.perf_counter() - t_wall
    return expected


def source_hash() -> str:
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000, help="approximate number of events (default 100000)")
    ap.add_argument("-o", "--output", required=True, help="output file (.json, or .json.gz to compress only)")
    ap.add_argument("--gzip", action="store_true", help="also write FILE.gz")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--host-gap-ns",
        type=int,
        default=600,
        help="host time between one kernel launch and the next (default 600): a slow host, e.g. "
        "20000, leaves the device idle between short decode kernels",
    )
    a = ap.parse_args(argv)
    exp = generate(a.events, a.output, seed=a.seed, gzip_copy=a.gzip, host_gap_ns=a.host_gap_ns)
    print(
        f"{a.output}: {exp['events']:,} events, {exp['steps']} steps {exp['steps_by_phase']}, "
        f"{exp['json_bytes']:,} bytes ({exp['json_bytes'] / exp['events']:.0f} B/event), "
        f"kernel time {exp['kernel_dur_ns'] / 1e9:.3f} s, generated in {exp['_wall_s']:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
