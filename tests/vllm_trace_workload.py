"""Make a real vLLM torch-profiler trace of tiny-llama and record the ground truth.

Run as a script (vLLM spawns processes, so the work sits under the __main__ guard):

    python tests/vllm_trace_workload.py OUT_DIR [--tp N]

The engine runs in this one process (VLLM_ENABLE_V1_MULTIPROCESSING=0) so that the
real scheduler can be watched while vLLM's own torch profiler writes its trace into
OUT_DIR/trace. Every scheduler output of the profiled window is recorded in
OUT_DIR/expected.json: its scheduled tokens split into prefill (tokens of a request
still below its prompt length) and decode tokens, counted from the request state,
independently of the trace. A small max_num_batched_tokens forces chunked prefill,
so prefill, mixed and decode steps all occur.

With ``--tp N`` the model runs tensor-parallel over N CPU worker processes (one core
each: vLLM's CPU backend needs ``VLLM_CPU_OMP_THREADS_BIND``, set here to one core per
worker when it is not set); each worker writes its own trace, named by vLLM
``dp0_pp0_tp{t}_dcp0_ep0_rank{r}.…``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# Prompt lengths (tokens) and output length of the profiled generate(): 8 requests,
# 236 prompt tokens against a 64-token step budget → prefill, mixed and decode steps.
PROMPT_LENS = [33, 20, 41, 13, 27, 40, 18, 44]
OUTPUT_LEN = 8
MAX_NUM_BATCHED_TOKENS = 64
MAX_NUM_SEQS = 8


def _prompts(lens, seed):
    import random

    rng = random.Random(seed)
    # ids 4.. avoid the special tokens (0-3) of the built-in tokenizer
    return [{"prompt_token_ids": [rng.randrange(4, 2000) for _ in range(n)]} for n in lens]


def main(out_dir: str, tp: int = 1) -> int:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    if tp > 1:
        cores = os.cpu_count() or 1
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "|".join(str(i % cores) for i in range(tp)))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.pop("XPU_PROFILER_DIR", None)  # our own plugin stays inert here
    from xpu_profiler.live.models import resolve_model

    out = Path(out_dir).resolve()
    trace_dir = out / "trace"
    trace_dir.mkdir(parents=True, exist_ok=True)
    model, _ = resolve_model("tiny-llama")

    from vllm import LLM, SamplingParams

    llm = LLM(
        model=model,
        load_format="dummy",
        enforce_eager=True,
        gpu_memory_utilization=0.2,
        max_model_len=256,
        max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
        max_num_seqs=MAX_NUM_SEQS,
        enable_chunked_prefill=True,
        seed=0,
        tensor_parallel_size=tp,
        profiler_config={
            "profiler": "torch",
            "torch_profiler_dir": str(trace_dir),
            "torch_profiler_with_stack": False,
            "torch_profiler_record_shapes": False,
            "torch_profiler_use_gzip": True,
        },
    )

    # The real EngineCore of the one-process layout; watch its scheduler.
    core = llm.llm_engine.engine_core.engine_core
    sched = core.scheduler
    steps: list[dict] = []
    state = {"on": False}
    orig_schedule = sched.schedule

    def schedule(*args, **kwargs):
        so = orig_schedule(*args, **kwargs)
        if state["on"]:
            prefill = decode = p_reqs = d_reqs = 0
            for req_id, n in so.num_scheduled_tokens.items():
                req = sched.requests[req_id]
                before = req.num_computed_tokens - n  # schedule() has already advanced it
                p = max(0, min(n, req.num_prompt_tokens - before))
                prefill += p
                decode += n - p
                if p:
                    p_reqs += 1
                else:
                    d_reqs += 1
            steps.append(
                {
                    "total": so.total_num_scheduled_tokens,
                    "prefill_tokens": prefill,
                    "decode_tokens": decode,
                    "prefill_reqs": p_reqs,
                    "decode_reqs": d_reqs,
                }
            )
        return so

    sched.schedule = schedule

    params = SamplingParams(max_tokens=OUTPUT_LEN, ignore_eos=True, temperature=0.0)
    llm.generate(_prompts([16, 24], seed=1), params, use_tqdm=False)  # warm-up, not profiled

    state["on"] = True
    t0 = time.time_ns()
    llm.start_profile()
    outs = llm.generate(_prompts(PROMPT_LENS, seed=2), params, use_tqdm=False)
    llm.stop_profile()
    t1 = time.time_ns()
    state["on"] = False

    out_tokens = [len(o.outputs[0].token_ids) for o in outs]
    executed = [s for s in steps if s["total"] > 0]

    def phase(s):
        if s["prefill_tokens"] and s["decode_tokens"]:
            return "mixed"
        return "prefill" if s["prefill_tokens"] else "decode"

    for s in steps:
        s["phase"] = phase(s) if s["total"] else "empty"
    files = sorted(p.name for p in trace_dir.glob("*.pt.trace.json*"))
    expected = {
        "model": "tiny-llama",
        "tensor_parallel_size": tp,
        "prompt_lens": PROMPT_LENS,
        "output_len": OUTPUT_LEN,
        "output_tokens": out_tokens,
        "max_num_batched_tokens": MAX_NUM_BATCHED_TOKENS,
        "steps": steps,
        "num_steps": len(executed),
        "num_steps_including_empty": len(steps),
        "prefill_tokens": sum(s["prefill_tokens"] for s in steps),
        "decode_tokens": sum(s["decode_tokens"] for s in steps),
        "phases": {p: sum(1 for s in executed if s["phase"] == p) for p in ("prefill", "decode", "mixed")},
        "window_ns": [t0, t1],
        "trace_files": files,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    tp = 1
    if len(args) == 3 and args[1] == "--tp" and args[2].isdigit():
        tp, args = int(args[2]), args[:1]
    if len(args) != 1:
        print("usage: vllm_trace_workload.py OUT_DIR [--tp N]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args[0], tp))
