"""A real vLLM workload profiled through ``xpu_profiler.profile(llm)``, with ground truth.

    python tests/live_workload.py OUT_DIR MODEL

Runs one engine (layout from the environment: default multi-process, or one process
with VLLM_ENABLE_V1_MULTIPROCESSING=0) and two profiled windows over the same workload:

1. ``basic`` level while vLLM's own torch profiler runs too: its trace has one
   ``execute_context_…`` annotation per executed engine step, an independent count of
   the steps and of their prefill/decode tokens → OUT_DIR/basic.npz, OUT_DIR/vllm_trace/;
2. ``standard`` level (our torch.profiler window in the workers) → OUT_DIR/standard.npz,
   and the same records assembled without dropping the trace events outside every
   engine step → OUT_DIR/standard_untrimmed.npz (what the attribution tests look at).

OUT_DIR/truth.json holds the workload (prompt lengths, output lengths generated).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

from xpu_profiler import summary as summary_codec

PROMPT_LENS = [33, 20, 41, 13, 27, 40, 18, 44]
OUTPUT_LEN = 8
MAX_NUM_BATCHED_TOKENS = 64


def prompts(seed: int):
    rng = random.Random(seed)
    # distinct random ids: no prefix-cache hits between windows
    return [{"prompt_token_ids": [rng.randrange(4, 2000) for _ in range(n)]} for n in PROMPT_LENS]


def main(out: str, model_name: str) -> int:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import xpu_profiler
    from xpu_profiler.live.models import resolve_model

    out_dir = Path(out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    from vllm import LLM, SamplingParams

    llm = LLM(
        model=resolve_model(model_name)[0],
        load_format="dummy",
        enforce_eager=True,
        gpu_memory_utilization=0.2,
        max_model_len=256,
        max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
        max_num_seqs=8,
        seed=0,
        profiler_config={
            "profiler": "torch",
            "torch_profiler_dir": str(out_dir / "vllm_trace"),
            "torch_profiler_with_stack": False,
        },
    )
    params = SamplingParams(max_tokens=OUTPUT_LEN, ignore_eos=True, temperature=0.0)
    llm.generate(prompts(1)[:2], params, use_tqdm=False)  # warm-up
    truth = {
        "model": model_name,
        "prompt_lens": PROMPT_LENS,
        "output_len": OUTPUT_LEN,
        "multiprocessing": os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0",
    }

    # window 1: basic hooks + vLLM's own profiler as the independent step count
    llm.start_profile()
    with xpu_profiler.profile(llm, detail_level="basic") as prof:
        t0 = time.time_ns()
        outs = llm.generate(prompts(2), params, use_tqdm=False)
        t1 = time.time_ns()
    llm.stop_profile()
    prof.profile.save(out_dir / "basic.npz")
    truth["basic"] = {"output_tokens": [len(o.outputs[0].token_ids) for o in outs], "t0": t0, "t1": t1}

    # window 2: standard level (torch.profiler in the workers, module ranges)
    with xpu_profiler.profile(llm, detail_level="standard", keep_traces=True) as prof2:
        t0 = time.time_ns()
        outs = llm.generate(prompts(3), params, use_tqdm=False)
        t1 = time.time_ns()
    prof2.profile.save(out_dir / "standard.npz")
    from xpu_profiler.readers.records.assemble import build_profile

    build_profile(
        prof2.records, t_start=prof2.t_start, t_end=prof2.t_end, metrics=prof2.metrics, trim_to_steps=False
    ).save(out_dir / "standard_untrimmed.npz")
    shutil.rmtree(prof2.trace_dir, ignore_errors=True)
    (out_dir / "standard.summary.json").write_text(summary_codec.encode(prof2.summary()).decode())
    truth["standard"] = {"output_tokens": [len(o.outputs[0].token_ids) for o in outs], "t0": t0, "t1": t1}
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: live_workload.py OUT_DIR MODEL", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
