"""Structure before names: what a kernel's place in its stream's sequence says, through the real
reader and attribution, on kernel sequences written as the libraries run them (no host event:
a graph replay without capture traces)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.analysis import analyze
from xpu_profiler.core.profile import DEVICE_KINDS
from xpu_profiler.core.sources import KEYS
from xpu_profiler.knowledge.fused_ops import FUSED_OPS
from xpu_profiler.knowledge.taxonomy import Taxonomy

ROUTING = "void moe::dev::routing::routingRenormalize::routingIndicesHistogramScoresKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16> >(KernelParams)"
ROUTING2 = "void moe::dev::routing::routingIndicesOffsetsKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16> >(KernelParams)"
FINALIZE = "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >(KernelParams)"
BMM1 = "bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x8x128u2_s4_et128x8_m128x8x16_cga1x1x1_16dp256b_TN_transOut_schedS_swiGlu_sm100f"
BMM2 = (
    "bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x8x128u2_s4_et128x8_m128x8x16_cga1x1x1_16dp256b_TN_transOut_schedS_sm100f"
)
NORM = "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*)"
ROUTER = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT"
QKV = "nvjet_tst_128x64_64x8_2x1_v_bz_TNT"
ATTN = "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext"
FILL = "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)"
COPY = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}> >(int, at::native::gpu_kernel_impl_nocast<>)"
QUANT = "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*)"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
DTOD = "Memcpy DtoD (Device -> Device)"
HTOD = "Memcpy HtoD (Pinned -> Device)"


def trace(tmp_path: Path, kernels: list[str | tuple[str, int]], name: str = "t.json") -> Path:
    """A Kineto trace of device events only, back to back, 10 µs each; ``(name, stream)``
    pairs put a kernel on another stream."""
    events, t = [], 0.0
    for k in kernels:
        kname, stream = (k, 7) if isinstance(k, str) else k
        cat = "gpu_memcpy" if kname.startswith("Memcpy") else "kernel"
        events.append({"ph": "X", "cat": cat, "name": kname, "pid": 0, "tid": stream, "ts": t, "dur": 10.0})
        t += 11.0
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def attributed(path: Path) -> tuple[list[tuple[str, str]], dict]:
    """(fused op, source) per device event in start order, and the structure counts."""
    p, s = analyze([path], engine="serial")
    ev = p.events
    dev = np.flatnonzero(np.isin(ev["kind"], DEVICE_KINDS))
    order = dev[ev["start"][dev].argsort(kind="stable")]
    return [(FUSED_OPS[ev["fused"][i]], KEYS[ev["source"][i]]) for i in order.tolist()], dict(s.attribution.structure)


def test_expert_gemms_without_an_moe_name_are_moe_inside_the_block(tmp_path: Path) -> None:
    """The trtllm-gen batched GEMMs of a B300 run carry no MoE word: between the routing and
    the finalize kernel they are the experts. The router GEMM before the block stays a GEMM."""
    layer = [NORM, ROUTER, ROUTING, ROUTING2, BMM1, BMM2, FINALIZE, NORM, QKV, ATTN]
    got, st = attributed(trace(tmp_path, layer * 3))
    first = got[:10]
    assert first[1] == ("gemm", "name")
    assert first[2:4] == [("moe", "name")] * 2
    assert first[4:6] == [("moe", "structure")] * 2
    assert first[6] == ("moe", "name")
    assert first[7] == ("norm", "name") and first[8] == ("gemm", "name") and first[9] == ("attention", "name")
    assert st["moe_blocks"] == 3 and st["moe_events"] == 6


def test_blocks_without_a_closer_end_at_the_last_moe_kernel(tmp_path: Path) -> None:
    """CK's 2-stage MoE has no finalize kernel (its second GEMM sums the experts' outputs): the
    block ends at the second MoE GEMM, the next layer's norm and GEMM stay what they are."""
    topk = "_ZN5aiter24topksoftmax_4x128x8_bf16E"
    sort = "_ZN7ck_tile6kentryILi1ENS_16MoeSortingKernelINS_17MoeSortingProblemIifLi4ELb1ELb0EEEEEEEvNT0_5KargsE"
    gemm = "_ZN2ck16kernel_moe_gemmINS_23GridwiseMoeGemm_BPreshuffleEEEvNT_8ArgumentE"
    copy = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}> >(int)"
    cijk = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x512_MI16x16x1_SN_LDSB1"
    rmsnorm = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
    got, st = attributed(trace(tmp_path, [rmsnorm, cijk, topk, sort, gemm, copy, gemm, rmsnorm, cijk, copy]))
    assert [f for f, _ in got] == ["norm", "gemm", "moe", "moe", "moe", "moe", "moe", "norm", "gemm", "elementwise"]
    assert got[5] == ("moe", "structure") and st == {"moe_blocks": 1, "moe_events": 1}


def test_the_prologue_before_the_routing_kernel(tmp_path: Path) -> None:
    """gpt-oss pads the MoE input (a fill and a copy) and quantizes it before the routing
    kernel: part of the block. The router GEMM before them is not."""
    got, _ = attributed(trace(tmp_path, [NORM, ROUTER, FILL, COPY, QUANT, ROUTING, BMM1, FINALIZE, NORM]))
    assert [f for f, _ in got] == ["norm", "gemm", "moe", "moe", "moe", "moe", "moe", "moe", "norm"]
    assert [s for _, s in got[2:5]] == ["structure"] * 3


def test_activations_between_expert_gemms_and_communication_inside(tmp_path: Path) -> None:
    """vLLM's fused MoE: the SiLU between the two expert GEMMs is MoE; an expert-parallel
    dispatch inside the block stays communication."""
    topk = "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, int>(float const*, bool const*, float*, int)"
    align = "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int)"
    act = "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*)"
    dispatch = "void deep_ep::internode_ll::dispatch<false, false, 7168>(void*, float*, int*)"
    msum = "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)"
    got, st = attributed(
        trace(tmp_path, [topk, align, dispatch, "fused_moe_kernel", act, "fused_moe_kernel", msum, NORM])
    )
    assert got[2] == ("communication", "name")
    assert got[4] == ("moe", "structure")
    assert [f for f, _ in got] == ["moe", "moe", "communication", "moe", "moe", "moe", "moe", "norm"]


def test_no_moe_on_a_dense_model(tmp_path: Path) -> None:
    """A sampler's top-k and an MoE-named kernel with no GEMM in its block make no block."""
    gather = "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float, unsigned int>)"
    align = "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*)"
    layer = [NORM, QKV, ATTN, QKV, NORM, QKV, COPY, QKV]
    got, st = attributed(trace(tmp_path, layer * 4 + [gather, COPY, QKV, align, COPY, NORM]))
    assert "moe" not in [f for f, _ in got[:-3]]
    assert got[-3] == ("moe", "name") and got[-2] == ("elementwise", "name")
    assert st == {}


def test_a_block_is_bounded_and_stays_on_its_stream(tmp_path: Path) -> None:
    """An opener whose closer never comes swallows at most 64 kernels; nothing crosses to
    another stream."""
    kernels: list[str | tuple[str, int]] = [ROUTING, *([COPY] * 100), FINALIZE]
    kernels += [(ROUTING, 3), (COPY, 9), (BMM1, 9), (FINALIZE, 3)]
    got, st = attributed(trace(tmp_path, kernels))
    assert [f for f, _ in got[1:101]] == ["elementwise"] * 100  # no block: the finalize is too far
    assert got[102:106] == [("moe", "name"), ("elementwise", "name"), ("gemm", "name"), ("moe", "name")]
    assert st == {}


def test_staging_copies_of_a_collective(tmp_path: Path) -> None:
    """Device-to-device copies right before and after a collective on its stream are its
    staging copies; a host-to-device copy, or a copy next to a GEMM, stays a copy."""
    got, st = attributed(trace(tmp_path, [QKV, DTOD, NCCL, DTOD, HTOD, NCCL, QKV, DTOD, QKV]))
    assert [f for f, _ in got] == [
        "gemm",
        "communication",
        "communication",
        "communication",
        "memcpy",
        "communication",
        "gemm",
        "memcpy",
        "gemm",
    ]
    assert st == {"staging_copies": 2}


def test_compiled_rope_before_attention(tmp_path: Path) -> None:
    """An Inductor kernel of no decisive token between the QKV GEMM and attention is the
    layer's RoPE, unless a RoPE kernel by name is in that window."""
    cat = "triton_poi_fused_cat_3"
    kv = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*)"
    rotary = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)"
    got, st = attributed(trace(tmp_path, [QKV, cat, kv, ATTN, QKV, cat, rotary, kv, ATTN, cat, NORM]))
    assert got[1] == ("rope", "structure")
    assert got[5] == ("elementwise", "name")  # the rotary kernel is the RoPE there
    assert got[9] == ("elementwise", "name")  # after attention: not its pre-processing
    assert st == {"attention_pre": 1}


def test_the_op_chain_wins_over_the_sequence(tmp_path: Path) -> None:
    """An eager kernel launched by a custom op keeps that op's fused op inside an MoE block."""
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "execute_context_1(8)_generation_0(0)",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 200,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "vllm::unified_attention_with_output",
            "pid": 1,
            "tid": 1,
            "ts": 30,
            "dur": 10,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 31,
            "dur": 2,
            "args": {"correlation": 5},
        },
    ]
    kernels = [ROUTING, COPY, BMM1, FINALIZE]
    for i, k in enumerate(kernels):
        args = {"correlation": 5} if k == COPY else {}
        events.append(
            {"ph": "X", "cat": "kernel", "name": k, "pid": 0, "tid": 7, "ts": 50 + 11 * i, "dur": 10, "args": args}
        )
    path = tmp_path / "eager.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    got, _ = attributed(path)
    assert got[1] == ("attention", "op_chain") and got[2] == ("moe", "structure")


def test_names_are_classified_once_per_distinct_name(tmp_path: Path, monkeypatch) -> None:
    """Classification is per distinct name, never per event."""
    calls: list[str] = []
    real = Taxonomy._search

    def counting(self, name, head):
        calls.append(name)
        return real(self, name, head)

    monkeypatch.setattr(Taxonomy, "_search", counting)
    layer = [NORM, ROUTER, ROUTING, BMM1, BMM2, FINALIZE, NORM, QKV, ATTN]
    analyze([trace(tmp_path, layer * 300)], engine="serial")
    assert len(calls) == pytest.approx(len(set(layer)), abs=len(set(layer)))  # at most its two heads each


def test_the_next_layers_opener_ends_a_block(tmp_path: Path) -> None:
    """With the norm fused into the all-reduce and an attention kernel no table knows, the next
    layer's routing kernel still ends the block: its QKV GEMM is no expert."""
    fused_ar = "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, 4, true>(Params)"
    layer = [
        ROUTER,
        ROUTING,
        ROUTING2,
        BMM1,
        BMM2,
        FINALIZE,
        fused_ar,
        QKV,
        "sdk_kernel_v9",
        "my_out_proj_v9",
        fused_ar,
    ]
    got, st = attributed(trace(tmp_path, layer * 2))
    assert [f for f, _ in got[6:11]] == ["communication", "gemm", "other", "other", "communication"]
    assert st["moe_blocks"] == 2 and st["moe_events"] == 4


def test_the_report_shows_the_kernel_sequence_source(tmp_path: Path) -> None:
    """summary.json's attribution shares and the HTML report's attribution section name it."""
    from xpu_profiler.exporters import html

    layer = [NORM, ROUTER, ROUTING, BMM1, BMM2, FINALIZE, NORM, QKV, ATTN]
    _, s = analyze([trace(tmp_path, layer * 2)], engine="serial")
    assert s.attribution.share_by_source["structure"] == pytest.approx(4 / 18)
    parts = {p["key"]: p for p in html.build_report(s)["fused_ops"]["attribution"]["parts"]}
    assert parts["structure"]["label"] == "kernel sequence" and parts["structure"]["share"] == pytest.approx(4 / 18)
    page = html.write(None, s, tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="structure">Kernel sequence:' in page and "2 MoE blocks" in page
