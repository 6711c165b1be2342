"""The rule table: ordered and declarative, like the taxonomy.

Each row says what it detects, its trigger with the thresholds it uses (defaults here,
overridable from a TOML file), the check that measures it on the Summary (the check
returns the evidence and the share of step time at stake), and the fix with a one-line
why. The fix a check returns is in the terms of the trace's engine (``knobs``: vLLM,
SGLang, other) and of what is already in effect (no "replay graphs" where graphs
replay); the row's own fix is the vLLM one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..summary import Summary
from . import checks_device, checks_ops, checks_ranks, checks_run, checks_sched
from .base import Context, Hit, Thresholds

Check = Callable[[Summary, Thresholds, Context], Hit | None]


@dataclass(frozen=True)
class Rule:
    id: str
    detects: str
    trigger: str  # str.format()ted with the thresholds
    check: Check
    fix: str
    why: str
    thresholds: Mapping[str, float] = field(default_factory=dict)
    reads: str = ""  # the Summary sections the check needs

    def trigger_text(self, th: Thresholds) -> str:
        return self.trigger.format(**{k: _show(k, v) for k, v in th.items()})


def _show(key: str, v: float) -> str:
    if key.endswith(("share", "usage", "drop", "arrived_last", "budget_hit", "kv_full")) and v <= 1:
        return f"{100 * v:g}%"
    return f"{v:g}"


RULES: tuple[Rule, ...] = (
    Rule(
        "host_bound",
        "the device waits on the host: launches arrive after it has drained",
        "a phase's device waited on the host >= {idle_share} of its step time (the host-bound verdict)",
        checks_ops.host_bound,
        "the fix of the host time's first cause when it holds a third of it and is specific (a recompile, a "
        "graph launch, the sampler, the model's forward: knowledge/host_causes.py); else graphs and compilation "
        "for an eager phase, the host work between replays where graphs already replay, async scheduling (in "
        "the engine's terms)",
        "a device that waits for launches runs at the host's speed, not its own",
        {"idle_share": 0.20, "min_steps": 1},
        "phases.device, phases.bound_gaps, phases.kernels",
    ),
    Rule(
        "graphs_off_decode",
        "decode runs without CUDA/XPU graphs (one launch per kernel) or eagerly",
        "decode kernels per launch <= {max_kernels_per_launch} with under {min_graph_share} of them replayed, "
        "or enforce_eager in the engine config",
        checks_ops.graphs_off_decode,
        "drop --enforce-eager (enforce_eager=False)",
        "decode steps are short: launching each kernel from Python costs more than the kernel",
        {"max_kernels_per_launch": 1.5, "min_graph_share": 0.5, "min_steps": 1},
        "phases.kernels, run.engine",
    ),
    Rule(
        "small_batch_waiting",
        "requests wait although the decode batch is small",
        "decode batch < {batch_share} of max_num_seqs while requests wait, in >= {min_share} of decode time",
        checks_sched.small_batch_waiting,
        "more KV cache (gpu_memory_utilization, VLLM_CPU_KVCACHE_SPACE) or a larger max_num_batched_tokens",
        "a decode step costs about the same for 2 requests as for 20: waiting requests are throughput left unused",
        {"batch_share": 0.25, "min_share": 0.2, "kv_full": 0.8},
        "steps, run.engine",
    ),
    Rule(
        "batch_capped",
        "the decode batch sits at max_num_seqs while requests wait",
        "batch = max_num_seqs while requests wait, in >= {min_share} of decode time",
        checks_sched.batch_capped,
        "raise max_num_seqs",
        "max_num_seqs, not the device, caps the batch",
        {"min_share": 0.2},
        "steps, run.engine",
    ),
    Rule(
        "client_limited",
        "the decode batch is small and nothing waits: the offered load limits throughput",
        "decode batch < {batch_share} of max_num_seqs with no request waiting, in >= {min_share} of decode time",
        checks_sched.client_limited,
        "send more concurrent requests",
        "the engine has room for more requests than the client sends",
        {"batch_share": 0.25, "min_share": 0.5, "kv_full": 0.9},
        "steps, run.engine",
    ),
    Rule(
        "kv_cache_pressure",
        "the KV cache is nearly full, or requests are preempted",
        "KV usage >= {usage} during > {window_share} of the window, or preemptions",
        checks_sched.kv_cache_pressure,
        "more KV blocks: gpu_memory_utilization up (CPU: VLLM_CPU_KVCACHE_SPACE), max_model_len down, "
        "kv_cache_dtype=fp8, or a lower max_num_seqs to stop preemptions",
        "a full KV cache caps the batch, and each preemption computes the request's prompt again",
        {"usage": 0.95, "window_share": 0.20},
        "steps, throughput",
    ),
    Rule(
        "chunked_prefill_budget",
        "mixed steps far longer than decode steps because prefill fills the budget",
        "mixed steps > {ratio}x the decode median while their tokens reach {budget_hit} of "
        "max_num_batched_tokens, in >= {min_share} of mixed steps",
        checks_sched.chunked_prefill_budget,
        "lower max_num_batched_tokens",
        "every decode in a mixed step waits for the whole prefill chunk",
        {"ratio": 3.0, "budget_hit": 0.98, "min_share": 0.2},
        "steps, run.engine",
    ),
    Rule(
        "exposed_comm",
        "communication that compute does not hide, at TP >= 2",
        "exposed communication > {share} of step time at TP >= {min_tp}",
        checks_ranks.exposed_comm,
        "custom all-reduce, all-reduce + RMSNorm fusion, or less TP and more DP; over gloo on a CPU, "
        "vLLM's shared-memory all-reduce (AVX-512 kernels)",
        "an all-reduce nothing overlaps adds its whole latency to every layer",
        {"share": 0.15, "min_tp": 2},
        "comm.ranks",
    ),
    Rule(
        "straggler_rank",
        "one rank arrives last at most collectives",
        "a rank arrives last at > {arrived_last} of collectives",
        checks_ranks.straggler_rank,
        "find what slows that rank (CPU binding, device, experts)",
        "every collective waits for the slowest rank",
        {"arrived_last": 0.5},
        "comm.ranks",
    ),
    Rule(
        "device_bound",
        "a device-bound phase spends its time in one kind of op",
        "a device-bound phase's largest fused op (GEMM or attention) > {share} of its op time",
        checks_device.device_bound,
        "for decode GEMMs: more tokens per weight read (a larger batch, fp8 weights, speculative decoding); for "
        "prefill GEMMs: fp8, prefix caching; for attention: its backend, an fp8 KV cache (in the engine's terms)",
        "the device is busy: only making its largest part cheaper (or doing more per step) shortens the steps",
        {"share": 0.4},
        "phases",
    ),
    Rule(
        "moe_share",
        "MoE layers dominate a phase",
        "MoE > {share} of a phase's op time",
        checks_ops.moe_share,
        "tune the fused-MoE kernel config; expert parallelism at TP > 1",
        "the expert GEMMs are the largest cost; their kernel configuration and placement decide it",
        {"share": 0.3},
        "fused_ops, roofline",
    ),
    Rule(
        "moe_imbalance",
        "MoE time differs across the expert-parallel ranks",
        "max/mean of MoE time across ranks > {max_over_mean}",
        checks_ranks.moe_imbalance,
        "--enable-eplb",
        "the rank with the hottest experts sets every step's pace",
        {"max_over_mean": 1.3},
        "ranks.time_ns_by_fused",
    ),
    Rule(
        "sampler_head_share",
        "sampling, logits and lm_head take a large part of decode",
        "sampler + logits + lm_head > {share} of decode op time",
        checks_ops.sampler_head_share,
        "a larger decode batch, vocab sharding (TP), VLLM_USE_FLASHINFER_SAMPLER=1",
        "the vocabulary GEMM and the sampler run once per step whatever the model's depth",
        {"share": 0.10},
        "phases.output_head_ns, fused_ops",
    ),
    Rule(
        "small_kernel_storm",
        "most decode kernels are tiny",
        "> {share} of decode kernels under {kernel_us} us",
        checks_ops.small_kernel_storm,
        "torch.compile fusion and graphs (enforce_eager=False)",
        "each tiny kernel costs a launch and a memory pass",
        {"share": 0.5, "kernel_us": 5.0},
        "phases.kernels",
    ),
    Rule(
        "warmup_in_window",
        "one-off costs (JIT, graph capture, profiler start) inside the profiled window",
        "steps > {ratio}x the median step of their phase (phases with >= {min_steps} steps; else time per "
        "token > {ratio}x the median of the steps with no more tokens, where >= {min_steps} of them record tokens)",
        checks_sched.warmup_in_window,
        "start the window later (--warmup-steps N; vLLM's profiler: delay_iterations) or warm the engine first",
        "one-off costs are not the steady state you tune for",
        {"ratio": 10.0, "min_steps": 4},
        "steps",
    ),
    Rule(
        "profiler_overhead",
        "the profiler itself slowed the run",
        "tokens/s > {drop} below a basic run of the same workload, or step hooks > {hook_share} of the mean step",
        checks_run.profiler_overhead,
        "read throughput from a --detail-level basic run (a basic run: shed the costliest metrics)",
        "times measured under torch.profiler include its cost",
        {"drop": 0.3, "hook_share": 0.10},
        "throughput, run (a basic reference run)",
    ),
    Rule(
        "kunlun_no_kernels",
        "Kunlun kernel logs hold kernels that torch.profiler did not see, under TP > 1",
        "[XPURT_PROF] kernel lines for ranks without traced kernels at TP >= {min_tp}",
        checks_ranks.kunlun_no_kernels,
        "XPU_CUPTI_ENABLE_DEVICE per rank",
        "vllm-kunlun traces only the device that variable names",
        {"min_tp": 2},
        "run.device_logs, ranks",
    ),
)

RULE_IDS = tuple(r.id for r in RULES)
