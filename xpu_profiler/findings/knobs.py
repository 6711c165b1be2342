"""The fixes the rules give, in each engine's own terms: one row per remedy, one text per
engine (``vllm``, ``sglang``, ``other``). A rule names only knobs that exist in the engine
of the trace (``inputs.engine_of``); "other" says what to do without an engine's flags.

Sources: vLLM's engine arguments and ``CompilationConfig`` (``cudagraph_mode``,
``max_cudagraph_capture_size``, ``--async-scheduling``, ``--enable-eplb``,
``--enable-expert-parallel``, ``benchmarks/kernels/benchmark_moe.py``), SGLang's
``ServerArgs`` (``--disable-cuda-graph``, ``--cuda-graph-max-bs``, ``--enable-torch-compile``,
``--disable-overlap-schedule``, ``--ep-size``, ``--enable-eplb``,
``--disable-custom-all-reduce``, ``--enable-dp-attention``,
``benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py``).
"""

from __future__ import annotations

KNOBS: dict[str, dict[str, str]] = {
    # a phase that runs eagerly (no graph replays): capture graphs, compile
    "graphs_on": {
        "vllm": (
            "drop --enforce-eager (enforce_eager=False): vLLM compiles the model and replays CUDA/HIP/XPU graphs "
            "(compilation_config.cudagraph_mode=FULL_AND_PIECEWISE; batches up to max_cudagraph_capture_size)"
        ),
        "sglang": (
            "drop --disable-cuda-graph and raise --cuda-graph-max-bs to cover the batch: SGLang replays captured "
            "graphs for decode; --enable-torch-compile fuses the small ops"
        ),
        "other": (
            "capture the step in a CUDA/HIP graph (torch.cuda.graphs, torch.compile(mode='reduce-overhead')) so one "
            "launch replaces hundreds"
        ),
    },
    # graphs replay for some batch sizes only: the batch runs outside the captured sizes
    "graphs_cover": {
        "vllm": (
            "decode batches run outside the captured sizes: raise compilation_config.max_cudagraph_capture_size "
            "(or cudagraph_capture_sizes) to cover the decode batch, cudagraph_mode=FULL_AND_PIECEWISE"
        ),
        "sglang": "decode batches run outside the captured sizes: raise --cuda-graph-max-bs (or list --cuda-graph-bs)",
        "other": "capture graphs for the batch sizes the run uses",
    },
    # graphs already replay and the host still makes the device wait: the host work between replays
    "host_between_replays": {
        "vllm": (
            "graphs already replay: the time goes to host work between them (input preparation, Python, torch.compile "
            "guards, piecewise pieces). --async-scheduling overlaps the next step's scheduling with this step's "
            "device work; cudagraph_mode=FULL_AND_PIECEWISE replays a whole decode step in one launch"
        ),
        "sglang": (
            "graphs already replay: the time goes to host work between them (batch preparation, Python). Keep the "
            "overlap scheduler on (no --disable-overlap-schedule) so the next batch is prepared while this one runs"
        ),
        "other": (
            "graphs already replay: shorten the host work between replays (input preparation, Python, guards) or "
            "overlap it with the device (prepare step N+1 while step N runs)"
        ),
    },
    # a host-bound prefill: eager launches of a long step
    "prefill_host": {
        "vllm": (
            "run compiled and graphed prefill: drop --enforce-eager (piecewise graphs cover prefill batches up to "
            "max_cudagraph_capture_size); --async-scheduling overlaps scheduling with the device"
        ),
        "sglang": "--enable-torch-compile to fuse the small ops; keep the overlap scheduler on",
        "other": "compile the model (torch.compile) to cut launches, and overlap input preparation with the device",
    },
    # many tiny kernels: fusion (graphs already replaying: vLLM never gets here, its graphs
    # replay a compiled model) or graphs and fusion
    "fusion": {
        "vllm": "let torch.compile fuse the element-wise ops (enforce_eager=False)",
        "sglang": "--enable-torch-compile fuses the element-wise ops (up to --torch-compile-max-bs)",
        "other": "fuse the element-wise ops (torch.compile) so each tiny kernel is no separate memory pass",
    },
    "fusion_and_graphs": {
        "vllm": (
            "let vLLM compile the model (enforce_eager=False: torch.compile fuses the element-wise ops) and "
            "replay graphs, so tiny kernels are neither launched one by one nor run unfused"
        ),
        "sglang": (
            "replay CUDA graphs (no --disable-cuda-graph) and --enable-torch-compile, so tiny kernels are neither "
            "launched one by one nor run unfused"
        ),
        "other": "compile (torch.compile) and replay graphs, so tiny kernels are neither launched one by one nor unfused",
    },
    "moe_tune": {
        "vllm": (
            "tune the fused-MoE kernel for this shape (vLLM's benchmarks/kernels/benchmark_moe.py --tune, "
            "VLLM_TUNED_CONFIG_FOLDER); at TP > 1 enable expert parallelism (--enable-expert-parallel); "
            "fp8 experts halve the expert-weight reads of decode"
        ),
        "sglang": (
            "tune the fused-MoE kernel for this shape (SGLang's "
            "benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py); at TP > 1 expert parallelism "
            "(--ep-size); fp8 experts halve the expert-weight reads of decode"
        ),
        "other": (
            "tune the MoE kernels' configuration for these shapes, consider expert parallelism, and fp8 experts "
            "for decode (they halve the expert-weight reads)"
        ),
    },
    "moe_balance": {
        "vllm": "--enable-eplb (expert-parallel load balancing: hot experts replicated across ranks)",
        "sglang": "--enable-eplb (SGLang's expert-parallel load balancer: hot experts replicated across ranks)",
        "other": "rebalance the experts across ranks (replicate the hot ones)",
    },
    "comm_exposed": {
        "vllm": (
            "keep vLLM's custom all-reduce on (no disable_custom_all_reduce), fuse all-reduce with RMSNorm "
            "(compilation_config.pass_config.fuse_allreduce_rms), or trade TP for data parallelism "
            "(fewer tensor_parallel_size ranks, more replicas)"
        ),
        "sglang": (
            "keep SGLang's custom all-reduce on (no --disable-custom-all-reduce), or trade TP for data parallelism "
            "(--dp-size, --enable-dp-attention)"
        ),
        "other": "overlap the collectives with compute, or trade tensor parallelism for data parallelism",
    },
    # a device-bound decode whose time is GEMMs: each step reads the weights for a few tokens
    "decode_weights": {
        "vllm": (
            "more tokens per weight read: a larger decode batch (max_num_seqs, more concurrent requests), "
            "fp8 or int4 weights (--quantization fp8: half the bytes a step reads), or speculative decoding "
            "(speculative_config) to verify several tokens per step"
        ),
        "sglang": (
            "more tokens per weight read: a larger decode batch (--max-running-requests, more concurrent "
            "requests), fp8 or int4 weights (--quantization fp8), or speculative decoding (--speculative-algorithm)"
        ),
        "other": "more tokens per weight read: batch more requests per step, quantize the weights (fp8, int4)",
    },
    # a device-bound prefill whose time is GEMMs: compute-bound; fewer, faster FLOPs
    "prefill_compute": {
        "vllm": "fp8 GEMMs (--quantization fp8) on hardware that has them; prefix caching skips prompt "
        "tokens already computed (enable_prefix_caching); chunked prefill overlaps them with decode",
        "sglang": "fp8 GEMMs (--quantization fp8); the radix cache skips prompt tokens already computed; "
        "--chunked-prefill-size overlaps them with decode",
        "other": "fp8 GEMMs where the device has them, and reuse of prompt prefixes already computed",
    },
    # a device-bound phase whose time is attention
    "attention_backend": {
        "vllm": "a faster attention backend for this device (VLLM_ATTENTION_BACKEND: FLASH_ATTN, FLASHINFER), an "
        "fp8 KV cache (--kv-cache-dtype fp8) to halve its reads, prefix caching for shared prompts",
        "sglang": "a faster attention backend (--attention-backend fa3 / flashinfer), an fp8 KV cache "
        "(--kv-cache-dtype fp8_e5m2), the radix cache for shared prompts",
        "other": "a faster attention kernel for this device, an fp8 KV cache, shorter or shared contexts",
    },
    "sampler": {
        "vllm": (
            "a larger decode batch amortises the lm_head's vocabulary GEMM; tensor_parallel_size shards the "
            "vocabulary; for the sampler: VLLM_USE_FLASHINFER_SAMPLER=1, and only the sampling parameters "
            "(top-k/top-p, penalties, logprobs) the requests need"
        ),
        "sglang": (
            "a larger decode batch amortises the lm_head's vocabulary GEMM; --sampling-backend flashinfer, and only "
            "the sampling parameters (top-k/top-p, penalties, logprobs) the requests need"
        ),
        "other": "a larger decode batch amortises the vocabulary GEMM; sample with fused kernels",
    },
    "warmup": {
        "vllm": "start the window later (--warmup-steps N; vLLM's profiler: delay_iterations) or warm the engine first",
        "sglang": "start the profile after warm-up requests (SGLang's /start_profile once the server has served some)",
        "other": "start the profiler after a few warm-up steps (torch.profiler's schedule: wait/warmup)",
    },
}


def knob(topic: str, engine: str | None) -> str:
    """The fix of ``topic`` in ``engine``'s terms ("other" for an engine without a row)."""
    row = KNOBS[topic]
    return row.get(engine or "other", row["other"])
