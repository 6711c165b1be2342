"""Host-side causes of a step's exposed host time: what the host was doing while the device
waited on it, named from the evidence the trace holds (the innermost Python frame, host op,
runtime call or range on the launching thread), with the fix for the trace's engine.

Rows are searched in order; the first whose kind and pattern match decides. The evidence is
self time: the part of an exposed interval no deeper frame, op or call covers. Sources:

- NVIDIA's ``perf-host-analysis`` skill for TensorRT-LLM and TensorRT-LLM
  ``docs/source/developer-guide/perf-analysis.md`` (host overhead: scheduling, input preparation,
  sampling, response handling, named per step);
- vLLM ``docs/contributing/profiling.md``, ``vllm/v1/worker/gpu_model_runner.py``
  (``_prepare_inputs``, ``_update_states``, the sampler), ``vllm/v1/core/sched/scheduler.py``,
  ``vllm/v1/engine/output_processor.py``; vLLM's async scheduling (``--async-scheduling``: the
  next step is scheduled while this one samples) and CUDA graph modes (``cudagraph_mode``);
- SGLang ``python/sglang/srt/managers/scheduler.py`` (``get_next_batch_to_run``,
  ``process_batch_result``), ``model_executor/forward_batch_info.py`` (``ForwardBatch.init_new``);
- PyTorch ``torch/_dynamo/eval_frame.py`` and ``guards.py`` (guards checked before a compiled
  frame runs; in C++ since 2.5, so their cost shows as the calling frame's self time),
  ``torch/_dynamo/convert_frame.py`` (a recompile), ``torch/cuda/graphs.py`` (graph capture);
- the CUDA Runtime / HIP API references (synchronizing calls, blocking copies, launches).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .runtime_api import GRAPH_LAUNCH, LAUNCH_API

#: what the evidence of a stretch of host time is
KINDS = ("frame", "op", "runtime", "range", "untraced")


class HostCause(NamedTuple):
    key: str
    words: str  # what the host was doing, in a few words
    kinds: tuple[str, ...]  # evidence kinds the row applies to
    pattern: re.Pattern[str] | None  # over the evidence's name (None: any)
    fix: dict[str, str]  # engine (vllm, sglang, other) → what to change; "*" for any engine
    source: str = ""

    def fix_for(self, engine: str | None) -> str:
        return self.fix.get(engine or "", self.fix.get("*", ""))


_ASYNC = "async scheduling (--async-scheduling) prepares the next step while this one finishes"
_GRAPHS_V = (
    "replay decode from CUDA/HIP graphs (drop --enforce-eager; compilation_config.cudagraph_mode=FULL_AND_PIECEWISE)"
)

CAUSES: list[HostCause] = [
    HostCause(
        "compiled_launch",
        "a compiled graph's Python wrappers launching its kernels one by one (Inductor's runtime)",
        ("frame", "range"),
        re.compile(
            r"torch/_inductor/runtime/|torch/_inductor/output_code\.py|torch/_inductor/codecache\.py\(\d+\): __call__$|"
            r"torch/_inductor/utils\.py\(\d+\): run$|torch/fx/graph_module\.py|_aot_autograd/runtime_wrappers\.py|"
            r"/torchinductor_[^/]*/|/inductor_cache/"
        ),
        {
            "vllm": _GRAPHS_V,
            "sglang": "CUDA graphs for decode (not --disable-cuda-graph)",
            "*": "replay the compiled graph from a CUDA/HIP graph (torch.compile mode='reduce-overhead')",
        },
        "torch/_inductor/runtime/triton_heuristics.py (the launcher), output_code.py (the compiled graph's call), "
        "torch/fx/graph_module.py (a GraphModule's call), the generated code (/tmp/torchinductor_USER/, vLLM's "
        "torch_compile_cache/.../inductor_cache/): the steady state of a compiled model",
    ),
    HostCause(
        "recompile",
        "a torch.compile (re)compilation inside the window",
        ("frame", "range"),
        re.compile(
            r"torch/_dynamo/(convert_frame|symbolic_convert|output_graph|variables/|bytecode_transformation)|"
            r"torch/_inductor/(compile_fx|graph|lowering|scheduler|ir|async_compile|select_algorithm|autotune_process|"
            r"codegen/|fx_passes/|codecache)|torch/_functorch/(aot_autograd|_aot_autograd/(?!runtime_wrappers))|"
            r"torch/fx/(_symbolic_trace|proxy|interpreter|passes/|experimental/)"
        ),
        {"*": "warm up before profiling; TORCH_LOGS=recompiles says what changed (a new shape: mark it dynamic)"},
        "torch/_dynamo/convert_frame.py; torch/_inductor/compile_fx.py",
    ),
    HostCause(
        "compile_guards",
        "torch.compile's frame evaluation and guard checks",
        ("frame", "range"),
        re.compile(r"torch/_dynamo/(eval_frame|guards|utils)\.py"),
        {
            "vllm": "vLLM calls its compiled model without Dynamo's guards; if they run here, check the compile level "
            "(-O) and replay decode from full graphs (compilation_config.cudagraph_mode=FULL_AND_PIECEWISE)",
            "*": "fewer guards: torch.compiler.set_stance / skip_guard_eval_unsafe after warm-up, or a full graph",
        },
        "torch/_dynamo/eval_frame.py, guards.py",
    ),
    HostCause(
        "graph_replay",
        "replaying a captured graph (its launch from Python)",
        ("frame", "range"),
        re.compile(r"torch/cuda/graphs\.py\(\d+\): replay$|<built-in method replay of"),
        {
            "vllm": "fewer graphs per step (one FULL graph for decode: cudagraph_mode=FULL_AND_PIECEWISE)",
            "*": "fewer, larger graphs per step",
        },
        "torch/cuda/graphs.py CUDAGraph.replay: the steady state of graph-replayed steps, not a capture",
    ),
    HostCause(
        "graph_capture",
        "graph capture inside the window",
        ("frame", "range", "runtime"),
        re.compile(
            r"torch/cuda/graphs\.py|capture_(begin|end)|StreamBeginCapture|StreamEndCapture|_capture_cudagraphs|capture_model"
        ),
        {
            "vllm": "a batch size without a captured graph: widen cudagraph_capture_sizes / max_cudagraph_capture_size",
            "*": "capture every batch size before profiling",
        },
        "torch/cuda/graphs.py; vllm/v1/worker/gpu_model_runner.py capture_model",
    ),
    HostCause(
        "graph_launch",
        "launching a captured graph",
        ("runtime",),
        GRAPH_LAUNCH,
        {
            "vllm": "fewer graphs per step (one FULL graph for decode: cudagraph_mode=FULL_AND_PIECEWISE); on ROCm a "
            "graph launch costs more per node: a newer ROCm / HIP graph launch",
            "*": "fewer, larger graphs per step",
        },
        "CUDA Runtime API cudaGraphLaunch; HIP hipGraphLaunch",
    ),
    HostCause(
        "sync",
        "a synchronizing call or blocking copy (the host waits for the device)",
        ("runtime", "op"),
        re.compile(
            r"^(cuda|hip|cu)(Stream|Device|Event|Ctx)Synchronize|^(cuda|hip)Memcpy(?!\w*Async)(\w*)$|^cuMemcpy(?!\w*Async)|"
            r"^aten::(item|_local_scalar_dense|tolist)$"
        ),
        {
            "vllm": _ASYNC,
            "sglang": "the overlap scheduler (on by default; not --disable-overlap-schedule)",
            "*": "avoid host reads of device values in the loop (.item(), .tolist(), .cpu())",
        },
        "CUDA Runtime API (synchronous calls); torch Tensor.item",
    ),
    HostCause(
        "launches",
        "launching kernels one by one from the host",
        ("runtime",),
        LAUNCH_API,
        {
            "vllm": _GRAPHS_V,
            "sglang": "CUDA graphs for decode (not --disable-cuda-graph)",
            "*": "graphs or fused kernels",
        },
        "CUDA Runtime API cudaLaunchKernel",
    ),
    HostCause(
        "input_preparation",
        "input preparation",
        ("frame", "range", "op"),
        re.compile(
            r"_prepare_inputs|_update_states|prepare_inputs|_prepare_input_ids|_calc_spec_decode_metadata|"
            r"prepare_for_(decode|extend)|ForwardBatch\.init_new|init_new|gpu_model_runner: preprocess|^Preprocess$"
        ),
        {"vllm": _ASYNC, "*": "prepare the next batch while this one runs"},
        "vllm gpu_model_runner._prepare_inputs; TensorRT-LLM _prepare_inputs; SGLang ForwardBatch.init_new",
    ),
    HostCause(
        "sampler",
        "the sampler",
        ("frame", "range", "op"),
        re.compile(
            r"sampler\.py|sample_tokens|(^|[.: ])_?sample(_async)?$|compute_logits|logits_processor|gpu_model_runner: sample|^Sample$"
        ),
        {
            "vllm": _ASYNC
            + "; fewer sampling options per request (logprobs, penalties) keep the sampler on the device",
            "*": "sample on the device, overlapped with the next step",
        },
        "vllm/v1/sample/sampler.py; TensorRT-LLM _sample_async",
    ),
    HostCause(
        "scheduler",
        "the scheduler",
        ("frame", "range"),
        re.compile(
            r"sched/scheduler\.py|scheduler\.py\(\d+\): schedule$|(^|[.:])_?schedule$|get_next_batch_to_run|^schedule: "
        ),
        {
            "vllm": _ASYNC,
            "sglang": "the overlap scheduler (on by default)",
            "*": "schedule the next step while this one runs",
        },
        "vllm/v1/core/sched/scheduler.py; SGLang scheduler.get_next_batch_to_run; TensorRT-LLM _schedule",
    ),
    HostCause(
        "output_processing",
        "output processing and detokenization",
        ("frame", "range"),
        re.compile(
            r"detokeniz|output_processor|process_outputs|_handle_responses|_update_requests|update_from_output|"
            r"process_batch_result|bookkeep|ModelRunnerOutput"
        ),
        {
            "vllm": _ASYNC + "; the API server's detokenizer runs in its own process",
            "*": "move output handling off the step loop",
        },
        "vllm/v1/engine/output_processor.py; TensorRT-LLM _handle_responses",
    ),
    HostCause(
        "gc",
        "Python's garbage collector",
        ("frame",),
        re.compile(r"<built-in method collect of|gc\.py|: collect$"),
        {"*": "gc.freeze() after start-up; fewer short-lived Python objects per step"},
        "CPython gc module",
    ),
    HostCause(
        "model_forward",
        "Python in the model's forward, outside any op or frame below it (under torch.compile: the checks before "
        "the compiled module runs; a hypothesis, the trace records no frame for them)",
        ("frame", "range"),
        re.compile(r"/models/\w+\.py\(\d+\): forward$|(ForCausalLM|Model|DecoderLayer)\w*[._]forward$"),
        {
            "vllm": "compiled and graph-replayed decode skips it: check the compile level (-O) and that decode replays "
            "full graphs (compilation_config.cudagraph_mode=FULL_AND_PIECEWISE); TORCH_LOGS=guards shows the guards",
            "*": "torch.compile the model and replay it from a graph",
        },
        "torch/_dynamo/guards.py (C++ guards since PyTorch 2.5); vllm/compilation/wrapper.py",
    ),
    HostCause("python", "Python code (the frame's own time)", ("frame", "range"), None, {"*": ""}),
    HostCause("host_op", "a host op", ("op",), None, {"*": ""}),
    HostCause("runtime", "a runtime call", ("runtime",), None, {"*": ""}),
    HostCause(
        "untraced",
        "host time no recorded frame, op or call covers (C/C++ code, another thread, or frames not recorded)",
        ("untraced",),
        None,
        {"*": "record Python frames (with_stack=True) to see it"},
    ),
]
BY_KEY = {c.key: c for c in CAUSES}


def cause_of(kind: str, name: str) -> HostCause:
    """The first row whose kind and pattern match the evidence."""
    for c in CAUSES:
        if kind in c.kinds and (c.pattern is None or c.pattern.search(name)):
            return c
    return BY_KEY["untraced"]
