"""Graph replays matched to their capture traces: the shared SGLang MI300 decode trace, and
traces written as CUDA and ROCm profilers write them (read by the real Kineto reader)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import real_data

from xpu_profiler.aggregate.graphs.attribution import find_replays, match_replays, replay_share
from xpu_profiler.aggregate.graphs.captures import read_captures
from xpu_profiler.core.profile import DEVICE_KINDS
from xpu_profiler.core.sources import KEYS, AttributionSource, share_by_source
from xpu_profiler.knowledge.fused_ops import FUSED_OPS, OTHER
from xpu_profiler.knowledge.kernel_names import kernel_key
from xpu_profiler.knowledge.runtime_api import GRAPH_LAUNCH, LAUNCH_API
from xpu_profiler.knowledge.taxonomy import Taxonomy
from xpu_profiler.readers import load
from xpu_profiler.summary.labels import ATTRIBUTION_SOURCES

DECODE = real_data.path("tracelens/sglang-qwen3-8b-decode.json.gz")
CAPTURE = real_data.path("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")


def shares(fused: np.ndarray, dur: np.ndarray) -> dict[str, float]:
    f = np.where(fused < 0, OTHER, fused)
    t = np.bincount(f, weights=dur.astype(np.float64), minlength=len(FUSED_OPS))
    return {FUSED_OPS[i]: float(t[i] / t.sum()) for i in range(len(FUSED_OPS)) if t[i] > 0}


def test_sglang_decode_replay_through_its_capture(capsys) -> None:
    real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    tax = Taxonomy()
    replay_p, capture_p = load([DECODE]), load([CAPTURE])
    replays = find_replays(replay_p)
    share = replay_share(replay_p, replays)
    # one hipGraphLaunch; its 544 kernels hold almost all device time of the step
    assert len(replays) == 1 and share["replayed_events"] == 544 and share["share"] > 0.95
    launch = int(replays.launch[0])
    assert replay_p.strings[int(replay_p.events["name"][launch])] == "hipGraphLaunch"

    captures = read_captures(capture_p, tax)
    # capture_32_DECODE holds one stream capture of 544 launches (2 fills ran before it)
    assert list(captures.size) == [32] and captures.mode == ["DECODE"] and list(np.diff(captures.offsets)) == [544]
    assert (captures.chain_source != AttributionSource.NONE).mean() > 0.99

    att = match_replays(replay_p, replays, captures, tax)
    st = att.stats
    assert st["matched_events"] / st["replayed_events"] >= 0.95 and list(att.graph) == [0]

    ev = replay_p.events
    rows = replays.rows
    dur = ev["dur"][rows]
    names = replay_p.strings.lookup(ev["name"][rows])
    by_name = np.array([tax.classify(n) for n in names], np.int16)
    by_capture = np.where(att.fused[rows] >= 0, att.fused[rows], by_name)
    s_name, s_cap = shares(by_name, dur), shares(by_capture, dur)
    for op in set(s_name) | set(s_cap):
        assert abs(s_name.get(op, 0) - s_cap.get(op, 0)) < 0.05, op
    assert s_cap.get("other", 0) < 0.03 and s_name.get("other", 0) < 0.03
    assert s_cap["gemm"] > 0.5 and s_cap["attention"] > 0.15

    # attribution sources over all device time of the trace (eager kernels keep NONE here:
    # their op chain is the aggregator's business)
    dev = np.flatnonzero(np.isin(ev["kind"], DEVICE_KINDS))
    src = np.where(
        att.source[dev] == AttributionSource.CAPTURE, AttributionSource.CAPTURE, AttributionSource.NAME
    ).astype(np.int8)
    table = share_by_source(src, ev["dur"][dev])
    assert table["capture"] > 0.95
    with capsys.disabled():
        print(
            f"\nSGLang decode: {share['replays']} replay, {st['replayed_events']} replayed kernels, "
            f"{st['matched_events']} matched ({st['matched_share']:.1%}), {st['attributed_events']} "
            f"attributed through the capture; graph-replay share of device time {share['share']:.1%}"
        )
        print("  fused op   name-only  capture")
        for op in sorted(s_cap, key=lambda o: -s_cap[o]):
            print(f"  {op:12s} {s_name.get(op, 0):7.1%}  {s_cap[op]:7.1%}")
        print("  source share of device time:", {k: f"{v:.1%}" for k, v in table.items()})


# ---- synthetic traces, as CUDA and ROCm profilers write them -----------------------------------


def X(name, cat, ts, dur, pid=100, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def K(name, ts, dur, corr):
    return X(name, "kernel", ts, dur, pid=0, tid=7, correlation=corr, stream=7, device=0)


def write(path: Path, events: list) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


# one decoder layer: (custom op or module, launching API, kernel name in the replay)
LAYER = [
    ("_C::rms_norm", "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)"),
    ("nn.Module: QKVParallelLinear_0", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64"),
    ("vllm::unified_attention_with_output", "void generic_split_kernel<float>(float*)"),
    ("nn.Module: RowParallelLinear_0", "nvjet_tst_64x8_64x16_4x1_v_bz_TNN"),
    ("nn.Module: SiluAndMul_0", "void generic_split_kernel<float>(float*)"),
]
WANT = ["norm", "gemm", "attention", "gemm", "activation"]


def capture_events(
    size: int,
    t0: int,
    corr0: int,
    layers: list = LAYER,
    names: bool = False,
    launch="cudaLaunchKernel",
    pieces: int = 1,
    mode: str = "FULL",
) -> list:
    """A capture range: per piece a stream capture holding the layer's launches, each inside
    its custom op or module range (CUDA: runtime calls carry no kernel name)."""
    ev = [X(f"capture_{size}_{mode}", "user_annotation", t0, 1000 * pieces)]
    t, c = t0 + 1, corr0
    for _ in range(pieces):
        ev.append(X("cudaStreamBeginCapture", "cuda_runtime", t, 1, correlation=c))
        t, c = t + 2, c + 1
        for host, kern in layers:
            cat = "python_function" if host.startswith("nn.Module") else "cpu_op"
            ev.append(X(host, cat, t, 10))
            ev.append(X("aten::empty", "cpu_op", t + 1, 1))
            extra = {"kernel": kern} if names else {}
            ev.append(X(launch, "cuda_runtime", t + 3, 2, correlation=c, **extra))
            t, c = t + 12, c + 1
        ev.append(X("cudaStreamEndCapture", "cuda_runtime", t, 1, correlation=c))
        t, c = t + 50, c + 1
    return ev


def replay_events(
    t0: int,
    corr: int,
    kernels: list,
    step: str | None = "execute_context_0(0)_generation_6(6)",
    launch: bool = True,
    name="cudaGraphLaunch",
) -> list:
    ev = []
    if step:
        ev.append(X(step, "user_annotation", t0, 100))
    if launch:
        ev.append(X(name, "cuda_runtime", t0 + 5, 20, correlation=corr))
    for k, kern in enumerate(kernels):
        ev.append(K(kern, t0 + 50 + 10 * k, 8, corr))
    return ev


def analyse(tmp_path: Path, replay: list, capture: list):
    tax = Taxonomy()
    rp = load([write(tmp_path / "replay.json", replay)])
    cp = load([write(tmp_path / "capture.json", capture)])
    replays = find_replays(rp)
    att = match_replays(rp, replays, read_captures(cp, tax), tax)
    got = []
    for i in range(len(replays)):
        rows = replays.rows[replays.offsets[i] : replays.offsets[i + 1]]
        got.append([FUSED_OPS[f] if f >= 0 else None for f in att.fused[rows].tolist()])
    return rp, replays, att, got


def test_cuda_capture_without_kernel_names_matches_by_position(tmp_path: Path) -> None:
    """Two captured sizes of the same layer; the step's 6 tokens pick the 8-token graph.
    The same graph replayed three times; a fourth replay cut by the window's end (prefix);
    work launched before the window started (no runtime call: a suffix)."""
    kern = [k for _, k in LAYER]
    capture = capture_events(16, 0, 10) + capture_events(8, 5000, 40)
    replay = []
    for s in range(3):
        replay += replay_events(10_000 * (s + 1), 100 + s, kern)
    replay += replay_events(50_000, 200, kern[:3])  # cut at the end
    replay += [K(k, 5 + 10 * j, 8, 90) for j, k in enumerate(kern[3:])]  # began before the window
    rp, replays, att, got = analyse(tmp_path, replay, capture)
    assert len(replays) == 5 and list(replays.launch >= 0) == [False, True, True, True, True]
    assert got[1:4] == [WANT] * 3
    assert got[4] == WANT[:3] and got[0] == WANT[3:]
    assert att.stats["by_position"] == 5 and att.stats["matched_events"] == att.stats["replayed_events"] == 20
    caps = read_captures(load([tmp_path / "capture.json"]))
    assert list(caps.size) == [16, 8]
    assert [int(caps.size[g]) for g in att.graph[1:]] == [8, 8, 8, 8]  # 6 tokens: padded to 8
    src = att.source[replays.rows]
    assert (src == AttributionSource.CAPTURE).all()


def test_rocm_names_pick_the_graph_and_survive_spelling(tmp_path: Path) -> None:
    """Captured launches carry kernel names (ROCm); the replay spells template arguments
    otherwise. The graph whose kernels match wins over the step's token count."""
    small = [(h, k) for h, k in LAYER]
    big = [(h, k.replace("sm90_xmma_gemm", "Cijk_Alik_Bljk_BBS_MT256")) for h, k in LAYER]
    capture = capture_events(8, 0, 10, small, names=True, launch="hipLaunchKernel") + capture_events(
        64, 5000, 40, big, names=True, launch="hipExtModuleLaunchKernel"
    )
    kern = [k.replace("c10::BFloat16", "__hip_bfloat16") for _, k in big]
    rp, replays, att, got = analyse(tmp_path, replay_events(10_000, 100, kern, name="hipGraphLaunch"), capture)
    assert got == [WANT] and att.stats["by_name"] == 1
    assert int(read_captures(load([tmp_path / "capture.json"])).size[att.graph[0]]) == 64


def test_piecewise_graphs_and_eager_attention(tmp_path: Path) -> None:
    """PIECEWISE: one capture range, two stream captures; the step replays both, with
    attention launched eagerly between them (not a replay)."""
    piece = [LAYER[0], LAYER[1]]
    capture = capture_events(8, 0, 10, piece, names=True, pieces=2, mode="PIECEWISE")
    kern = [k for _, k in piece]
    replay = [
        X("execute_context_0(0)_generation_8(8)", "user_annotation", 0, 5000),
        X("cudaGraphLaunch", "cuda_runtime", 10, 5, correlation=100),
        X("vllm::unified_attention_with_output", "cpu_op", 20, 10),
        X("cudaLaunchKernel", "cuda_runtime", 22, 3, correlation=101),
        X("cudaGraphLaunch", "cuda_runtime", 40, 5, correlation=102),
    ]
    replay += [K(k, 100 + 10 * j, 5, 100) for j, k in enumerate(kern)]
    replay.append(K("void flash::flash_fwd_splitkv_kernel<>()", 130, 5, 101))
    replay += [K(k, 140 + 10 * j, 5, 102) for j, k in enumerate(kern)]
    rp, replays, att, got = analyse(tmp_path, replay, capture)
    assert got == [["norm", "gemm"], ["norm", "gemm"]]
    caps = read_captures(load([tmp_path / "capture.json"]))
    assert list(caps.piece) == [0, 1] and caps.mode == ["PIECEWISE", "PIECEWISE"]
    assert [int(caps.piece[g]) for g in att.graph] == [0, 1]  # k-th launch of the step, k-th piece
    eager = np.flatnonzero(rp.events["corr"] == 101)
    assert (att.replay[eager] < 0).all()


def test_no_capture_no_match_and_unknown_names_stay_open(tmp_path: Path) -> None:
    rp, replays, att, got = analyse(
        tmp_path, replay_events(0, 7, ["a_kernel", "b_kernel"]), capture_events(8, 0, 10, names=True)[:1]
    )
    assert len(replays) == 1 and att.stats["matched_events"] == 0 and got == [[None, None]]


def test_names_and_keys() -> None:
    assert (
        kernel_key("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>>(int)")
        == "at::native::vectorized_elementwise_kernel"
    )
    assert (
        kernel_key("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256EEEvPT0_") == "aiter::add_rmsnorm_quant_kernel"
    )
    assert kernel_key("_Z24kl3_all_reduce_butterflyI7float16EvPT_i") == "kl3_all_reduce_butterfly"
    assert kernel_key("Memcpy DtoD (Device -> Device)") == kernel_key("hipMemcpyAsync") == "memcpy"
    assert kernel_key("fused_moe_kernel") == "fused_moe_kernel"
    for n in ("cudaGraphLaunch", "hipGraphLaunch", "cudaGraphLaunch_v10000", "cuGraphLaunch", "xpu_graph_launch"):
        assert GRAPH_LAUNCH.search(n), n
    for n in ("cudaGraphInstantiate", "hipGraphLaunchAsyncish", "cudaLaunchKernel"):
        assert not GRAPH_LAUNCH.search(n), n
    for n in (
        "cudaLaunchKernel",
        "cudaLaunchKernel_v7000",
        "cudaLaunchKernelExC_v11060",
        "hipExtModuleLaunchKernel",
        "hipModuleLaunchKernel",
        "cuLaunchKernel",
        "cudaMemcpyAsync",
        "hipMemsetAsync",
        "xpu_launch_async",
    ):
        assert LAUNCH_API.search(n), n
    for n in ("cudaGraphLaunch", "hipStreamGetCaptureInfo", "cudaStreamBeginCapture", "hipGetDevicePropertiesR0600"):
        assert not LAUNCH_API.search(n), n
    assert KEYS == ("none", "op_chain", "module", "capture", "name", "structure")
    assert set(ATTRIBUTION_SOURCES) == set(KEYS)  # every source has its words, in the one table of them


def test_capture_files_are_told_apart(tmp_path: Path) -> None:
    from xpu_profiler.readers.capture_files import (
        capture_details,
        is_capture_file,
        is_capture_profile,
        split_capture_files,
    )

    run = tmp_path / "prof"
    (run / "capture_traces").mkdir(parents=True)
    trace = write(run / "rank0.pt.trace.json", replay_events(0, 7, ["k"]))
    cap = write(run / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json", capture_events(8, 0, 10))
    sg = tmp_path / "sglang"
    sg.mkdir()
    write(sg / "bs_32_rank0.json", capture_events(32, 0, 10, mode="DECODE"))
    (sg / "capture-details.json").write_text(
        json.dumps([{"file": "bs_32_rank0.json", "batch_size": 32, "mode": "FULL"}])
    )
    assert split_capture_files([trace, cap]) == ([trace], [cap])
    assert is_capture_file(sg / "bs_32_rank0.json") and not is_capture_file(trace)
    assert capture_details(sg / "capture-details.json") == {"bs_32_rank0.json": (32, "FULL")}
    assert capture_details(sg / "missing.json") == {}
    assert is_capture_profile(load([cap])) and not is_capture_profile(load([trace]))


def test_rocm_capture_names_come_from_the_runtime_calls() -> None:
    """The Kineto reader keeps the kernel name a ROCm launch call carries (args.kernel)."""
    real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    cp = load([CAPTURE])
    ev = cp.events
    named = np.flatnonzero(ev["launch"] >= 0)
    assert len(named) == 546  # 401 hipLaunchKernel + 145 hipExtModuleLaunchKernel
    assert set(cp.strings.lookup(ev["name"][named])) == {"hipLaunchKernel", "hipExtModuleLaunchKernel"}
    assert all(
        n.startswith(("void ", "_Z")) or n.endswith("_triton") or "_" in n
        for n in cp.strings.lookup(ev["launch"][named])
    )


def test_named_partial_window_aligns(tmp_path: Path) -> None:
    """A named replay cut by the window (first three kernels) aligns to its graph's prefix."""
    capture = capture_events(8, 0, 10, names=True, launch="hipLaunchKernel")
    kern = [k for _, k in LAYER][:3]
    rp, replays, att, got = analyse(tmp_path, replay_events(10_000, 100, kern, name="hipGraphLaunch"), capture)
    assert got == [WANT[:3]] and att.stats["by_name"] == 1 and att.stats["matched_share"] == 1.0


def test_replays_without_any_capture(tmp_path: Path) -> None:
    rp = load(
        [
            write(
                tmp_path / "r.json",
                replay_events(0, 7, ["a_kernel", "b_kernel"]) + replay_events(1000, 8, ["a_kernel"], step=None),
            )
        ]
    )
    replays = find_replays(rp)
    empty = read_captures(rp)  # a trace with no capture ranges and no stream capture
    att = match_replays(rp, replays, empty)
    assert len(empty) == 0 and len(replays) == 2
    assert att.stats["unmatched"] == 2 and att.stats["matched_events"] == 0
    assert sorted(att.replay[replays.rows].tolist()) == [0, 0, 1]
    assert (att.source == AttributionSource.NONE).all()
