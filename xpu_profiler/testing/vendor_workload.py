"""A synthetic vLLM-like serving run as a vendor profiler records it: host ranges and runtime
calls per process, device records per GPU, with the ground truth counted while it is made.

The shape (a Llama-like decoder, tensor parallel over ``ranks`` processes, one GPU each) is the
one vLLM runs; the profiler-specific writers (``gen_nsys``: Nsight Systems exports,
``gen_rocprof``: rocprofv3 JSON and rocpd) lay the same records out in their formats. What marks
the steps is chosen (``marks``):

- ``vllm_step``: vLLM's per-step range ``execute_context_{n}({t})_generation_{m}({t})`` (the
  worker profiler ``cuda``: ``torch.cuda.nvtx``, plain text);
- ``vllm_scopes``: the model runner's scopes ``gpu_model_runner: preprocess | forward |
  postprocess | sample`` (``VLLM_NVTX_SCOPES_FOR_PROFILING=1``: ``nvtx.annotate``, registered
  strings);
- ``trtllm``: TensorRT-LLM's ``[Executor] _forward_step {i}: {n} ctx reqs, {t} ctx tokens, {m}
  gen reqs`` and its loop ranges, in the "TensorRT-LLM" domain, registered strings;
- ``none``: no range at all.

``layerwise`` adds the layer-wise module ranges (``{'Module': 'LlamaForCausalLM.model.layers.0',
...}``); ``graphs`` replays decode steps from a CUDA graph (``node``: its kernels recorded, one
graph launch; ``graph``: one record per graph run). Every step's host-to-device input copies are
vLLM's (``input_ids`` 4 B a token, ``positions`` 8 B, ``query_start_loc``, ``seq_lens``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LAUNCHER_PID = 900  # a process that runs no device work (the launcher)
PID0 = 1000  # rank r is process PID0 + r
STREAM = 7
MODEL = "LlamaForCausalLM"
KERNELS = {
    "embed": "void vllm::vocab_embedding_kernel<c10::BFloat16>(c10::BFloat16*, long const*, int)",
    "norm": "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas",
    "rope": "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, int)",
    "attn": "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t>, false, true, false>(flash::Flash_fwd_params)",
    "act": "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, int)",
    "allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "sample": "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
}
#: (kernel, module path under the layer, ns per token, fixed ns): one decoder layer's work
LAYER = [
    ("norm", "input_layernorm", 2, 2_000),
    ("gemm", "self_attn.qkv_proj", 20, 8_000),
    ("rope", "self_attn.rotary_emb", 1, 1_500),
    ("attn", "self_attn.attn", 15, 9_000),
    ("gemm", "self_attn.o_proj", 12, 6_000),
    ("allreduce", "self_attn.o_proj", 3, 7_000),  # RowParallelLinear all-reduces its output
    ("norm", "post_attention_layernorm", 2, 2_000),
    ("gemm", "mlp.gate_up_proj", 40, 12_000),
    ("act", "mlp.act_fn", 2, 2_000),
    ("gemm", "mlp.down_proj", 20, 8_000),
    ("allreduce", "mlp.down_proj", 3, 7_000),
]
LAUNCH_NS, LAUNCH_GAP_NS, COPY_NS = 4_000, 2_500, 3_000


@dataclass
class Rec:
    """One record. ``kind``: kernel, memcpy, runtime, range; host records carry ``pid``/``tid``,
    device ones ``device``/``stream``; ``corr`` links a runtime call to its device work."""

    kind: str
    name: str
    start: int
    end: int
    pid: int
    tid: int = 0
    device: int = -1
    stream: int = -1
    corr: int = -1
    nbytes: int = 0
    domain: str = ""  # NVTX domain ("" the default)
    registered: bool = False  # an NVTX registered string (textId), else plain text
    graph_node: int = -1  # a kernel replayed from a CUDA graph (--cuda-graph-trace=node)
    graph: int = -1  # a whole graph run (--cuda-graph-trace=graph)


@dataclass
class Workload:
    ranks: int = 2
    layers: int = 4
    #: per step: (prefill requests, prefill tokens, decode requests)
    steps: list[tuple[int, int, int]] = field(default_factory=lambda: [(1, 300, 0), (0, 0, 1), (0, 0, 1), (1, 64, 1)])
    marks: str = "vllm_step"
    layerwise: bool = False
    graphs: str = "none"  # none, node, graph
    t0: int = 5_000_000_000  # ns on the profiler's clock
    step_gap: int = 400_000


@dataclass
class Run:
    records: list[Rec]
    truth: dict[str, Any]


def _phase(pr: int, dr: int) -> str:
    return "mixed" if pr and dr else "prefill" if pr else "decode" if dr else "unknown"


def step_name(pr: int, pt: int, dr: int, marks: str, i: int) -> str:
    if marks == "trtllm":
        return f"[Executor] _forward_step {i}: {pr} ctx reqs, {pt} ctx tokens, {dr} gen reqs"
    return f"execute_context_{pr}({pt})_generation_{dr}({dr})"


class _Rank:
    def __init__(self, w: Workload, rank: int, out: list[Rec]):
        self.w, self.rank, self.out = w, rank, out
        self.pid = PID0 + rank
        self.corr = 0
        self.dev_free = 0  # when the device stream is next free

    def host(self, kind: str, name: str, start: int, end: int, **kw: Any) -> Rec:
        r = Rec(kind, name, start, end, self.pid, self.pid, **kw)
        self.out.append(r)
        return r

    def launch(self, t: int, api: str, kind: str, name: str, dur: int, nbytes: int = 0) -> tuple[int, Rec]:
        """A runtime call at ``t`` and the device work it enqueues; returns (host time after it, the work)."""
        self.corr += 1
        self.host("runtime", api, t, t + LAUNCH_NS, corr=self.corr)
        s = max(t + LAUNCH_NS + LAUNCH_GAP_NS, self.dev_free)
        dev = Rec(kind, name, s, s + dur, self.pid, device=self.rank, stream=STREAM, corr=self.corr, nbytes=nbytes)
        self.out.append(dev)
        self.dev_free = s + dur
        return t + LAUNCH_NS + 1_000, dev


def _kernels(w: Workload, tokens: int) -> list[tuple[str, str, int]]:
    """(kernel, module path, duration) of one forward, in launch order."""
    ks = [("embed", "model.embed_tokens", 3_000 + tokens * 2)]
    for i in range(w.layers):
        for k, sub, per_tok, fixed in LAYER:
            if k == "allreduce" and w.ranks == 1:
                continue
            ks.append((k, f"model.layers.{i}.{sub}", fixed + per_tok * tokens))
    ks += [("norm", "model.norm", 2_000 + tokens), ("gemm", "lm_head", 30_000 + 20 * tokens)]
    return ks


def _step(r: _Rank, i: int, step: tuple[int, int, int], t: int, truth: dict) -> int:
    """One engine step on a rank from host time ``t``; returns when its host part ends."""
    w = r.w
    pr, pt, dr = step
    tokens, reqs = pt + dr, pr + dr
    t_start = t
    trt = w.marks == "trtllm"
    scoped = w.marks in ("vllm_scopes", "trtllm")
    dom = "TensorRT-LLM" if trt else ""
    for nbytes in (4 * tokens, 8 * tokens, 4 * (reqs + 1), 4 * reqs):  # input_ids, positions, query_start_loc, seq_lens
        t, _ = r.launch(t, "cudaMemcpyAsync", "memcpy", "HtoD", COPY_NS + nbytes // 100, nbytes)
    if scoped:
        r.host(
            "range",
            "_prepare_inputs" if trt else "gpu_model_runner: preprocess",
            t_start,
            t,
            domain=dom,
            registered=True,
        )
    t_fwd = t
    kernels = _kernels(w, tokens)
    if w.graphs != "none" and pr == 0:  # a decode batch replayed from its CUDA graph
        first_dev = t = _replay(r, t, kernels)
    else:
        first_dev = None
        spans: dict[str, list[int]] = {}  # each decoder layer's first and last launch
        for k, path, dur in kernels:
            t0, (t, dev) = t, r.launch(t, "cudaLaunchKernel", "kernel", KERNELS[k], dur)
            first_dev = dev.start if first_dev is None else first_dev
            if w.layerwise:
                r.host("range", _layerwise(path, tokens), t0, t)
                layer = ".".join(path.split(".")[:3]) if path.startswith("model.layers.") else None
                if layer:
                    spans.setdefault(layer, [t0, t])[1] = t
        for layer, (a, b) in spans.items():  # each decoder layer's range around its modules'
            r.host("range", _layerwise(layer, tokens), a, b)
    if w.marks == "vllm_scopes":
        r.host("range", "gpu_model_runner: forward", t_fwd, t, registered=True)
    t_end_fwd = t
    t, _ = r.launch(t, "cudaLaunchKernel", "kernel", KERNELS["sample"], 5_000 + 10 * reqs)
    t_sample = t
    t, _ = r.launch(t, "cudaMemcpyAsync", "memcpy", "DtoH", COPY_NS, 4 * reqs)
    t = max(t, r.dev_free) + 2_000  # the host waits for the sampled tokens
    if scoped:
        r.host(
            "range", "_sample_async" if trt else "gpu_model_runner: sample", t_sample, t, domain=dom, registered=True
        )
    end = t_end_fwd if trt else t  # TensorRT-LLM's _forward_step holds the forward, not the sampling
    if w.marks in ("vllm_step", "trtllm"):
        r.host("range", step_name(pr, pt, dr, w.marks, i), t_start, end, domain=dom, registered=trt)
    truth["steps"].append(
        {
            "rank": r.rank,
            "start": t_start,
            "end": end,
            "phase": _phase(pr, dr),
            "tokens": tokens,
            "requests": reqs,
            "prefill_tokens": pt,
            "decode_tokens": dr,
            "device_start": first_dev,
            "device_end": r.dev_free,
        }
    )
    return t


def _replay(r: _Rank, t: int, kernels: list[tuple[str, str, int]]) -> int:
    """One graph launch at ``t`` and the graph's kernels (each a node, or one record of the whole
    run); returns when the first kernel starts."""
    r.corr += 1
    r.host("runtime", "cudaGraphLaunch", t, t + 20_000, corr=r.corr)
    first = s = max(t + 25_000, r.dev_free)
    for j, (k, _path, dur) in enumerate(kernels):
        if r.w.graphs == "node":
            r.out.append(
                Rec("kernel", KERNELS[k], s, s + dur, r.pid, device=r.rank, stream=STREAM, corr=r.corr, graph_node=j)
            )
        s += dur + 500
    if r.w.graphs == "graph":
        r.out.append(Rec("kernel", "", first, s, r.pid, device=r.rank, stream=STREAM, corr=r.corr, graph=1))
    r.dev_free = s
    return first


def _layerwise(path: str, tokens: int) -> str:
    return f"{{'Module': '{MODEL}.{path}', 'TrainableParams': {{}}, 'Inputs': [[{tokens}, 4096]]}}"


def build(w: Workload) -> Run:
    """The records of every process, and the truth: steps (rank, host range, phase, tokens),
    kernel count and device time, copies."""
    out: list[Rec] = [Rec("range", "launch workers", w.t0 - 200_000, w.t0 - 100_000, LAUNCHER_PID, LAUNCHER_PID)]
    truth: dict[str, Any] = {"steps": [], "ranks": w.ranks, "layers": w.layers}
    for rank in range(w.ranks):
        r = _Rank(w, rank, out)
        t = w.t0 + rank * 3_000
        for i, step in enumerate(w.steps):
            t = _step(r, i, step, t, truth) + w.step_gap
    kernels = [x for x in out if x.kind == "kernel"]
    truth["kernels"], truth["kernel_ns"] = len(kernels), sum(x.end - x.start for x in kernels)
    truth["copies"] = sum(1 for x in out if x.kind == "memcpy")
    truth["copy_bytes"] = sum(x.nbytes for x in out if x.kind == "memcpy")
    truth["runtime_calls"] = sum(1 for x in out if x.kind == "runtime")
    truth["ranges"] = sum(1 for x in out if x.kind == "range" and x.pid != LAUNCHER_PID)
    out.sort(key=lambda x: (x.start, x.pid))
    return Run(out, truth)
