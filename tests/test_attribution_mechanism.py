"""How attribution decides a kernel's fused op, shown on profiles built by hand and given to
``aggregate.attribute`` directly: the launching op chain before the layer module, the module
before the kernel's own name, the own name before the top-level op, and a copy that a collective
op launched is that collective's. Each case is a host thread with its ranges, one runtime launch
and the kernel it enqueued (same correlation id)."""

from __future__ import annotations

import numpy as np

from xpu_profiler.aggregate import attribute
from xpu_profiler.core.profile import (
    EVENT_SCHEMA,
    K_ANNOTATION,
    K_CPU_OP,
    K_KERNEL,
    K_MEMCPY,
    K_RUNTIME,
    Profile,
    Table,
)
from xpu_profiler.core.sources import KEYS
from xpu_profiler.knowledge.fused_ops import FUSED_OPS

HOST, STREAM = 100, 7


def profile_of(host: list[tuple[str, int, int, int]], device: tuple[str, int]) -> Profile:
    """Host events (name, kind, start, end) on one thread, a launch at t=50 and its device work
    (name, kind) at t=60..70."""
    p = Profile()
    rows = [(n, k, s, e - s, HOST, -1) for n, k, s, e in host]
    rows += [("cudaLaunchKernel", K_RUNTIME, 50, 5, HOST, 1), (device[0], device[1], 60, 10, STREAM, 1)]
    names, kind, start, dur, track, corr = zip(*rows)
    dev = [0 if k in (K_KERNEL, K_MEMCPY) else -1 for k in kind]
    p.events = Table(
        EVENT_SCHEMA,
        {
            "name": p.strings.intern_many(list(names)),
            "kind": kind,
            "start": start,
            "dur": dur,
            "rank": np.zeros(len(rows)),
            "device": dev,
            "track": track,
            "corr": corr,
        },
    )
    return p


def decided(p: Profile) -> tuple[str, str]:
    """(fused op, what decided it) of the device work."""
    attribute(p)
    i = int(np.flatnonzero(p.events["device"] >= 0)[0])
    return FUSED_OPS[p.events["fused"][i]], KEYS[p.events["source"][i]]


def test_the_launching_custom_op_decides_over_everything_below_it() -> None:
    """A kernel with a GEMM-looking name, launched inside vLLM's ``vllm::unified_attention``
    inside a norm module: the outermost custom op of the chain says attention."""
    p = profile_of(
        [("nn.Module: RMSNorm_0", K_ANNOTATION, 0, 100), ("vllm::unified_attention", K_CPU_OP, 10, 90)],
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64", K_KERNEL),
    )
    assert decided(p) == ("attention", "op_chain")


def test_the_layer_module_decides_over_the_kernel_name() -> None:
    """No custom op on the chain: the innermost layer module that holds the launch."""
    p = profile_of(
        [("nn.Module: LlamaDecoderLayer_0", K_ANNOTATION, 0, 100), ("nn.Module: RMSNorm_1", K_ANNOTATION, 20, 80)],
        ("triton_per_fused_add_mul_0", K_KERNEL),
    )
    assert decided(p) == ("norm", "module")


def test_the_own_name_decides_over_the_top_level_op() -> None:
    """``aten::mm`` launched it, but the kernel's own name is known: its name decides."""
    p = profile_of([("aten::mm", K_CPU_OP, 0, 100)], ("void vllm::rms_norm_kernel<c10::BFloat16>(int)", K_KERNEL))
    assert decided(p) == ("norm", "name")
    p = profile_of([("aten::mm", K_CPU_OP, 0, 100)], ("my_private_kernel_7", K_KERNEL))
    assert decided(p) == ("gemm", "op_chain")  # an unknown name: the top-level op that launched it


def test_a_copy_launched_by_a_collective_is_its_staging_copy() -> None:
    """A copy keeps its own name (memcpy) whatever launched it, except a collective op's: the
    all-reduce's staging copy is communication."""
    p = profile_of([("vllm::all_reduce", K_CPU_OP, 0, 100)], ("Memcpy DtoD (Device -> Device)", K_MEMCPY))
    assert decided(p) == ("communication", "op_chain")
    p = profile_of([("aten::copy_", K_CPU_OP, 0, 100)], ("Memcpy DtoD (Device -> Device)", K_MEMCPY))
    assert decided(p) == ("memcpy", "name")


def test_nothing_known_is_other() -> None:
    p = profile_of([], ("my_private_kernel_7", K_KERNEL))
    assert decided(p) == ("other", "none")
