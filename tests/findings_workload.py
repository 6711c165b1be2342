"""One vLLM engine, four profiled windows over the same workload, for the findings tests.

    python tests/findings_workload.py OUT_DIR

1. ``cold``: level ``basic``, requests asking for logprobs for the first time: vLLM
   compiles its logprob-rank kernel (``torch.compile``, inductor) inside this window;
2. ``warm``: the same at level ``basic`` after requests with logprobs of every batch size
   ran outside the windows (the kernel compiled for them): the steady state, and the
   reference run of the profiler-overhead rule;
3. ``comprehensive``: level ``comprehensive`` (shapes, memory, FLOPs) over every step;
4. ``short``: level ``standard`` with torch.profiler over only the first 4 steps.

Each window's Summary goes to OUT_DIR/<name>.summary.json, its Profile to
OUT_DIR/<name>.npz; OUT_DIR/windows.json holds the wall time around each generate().
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

NUM_PROMPTS, INPUT_LEN, OUTPUT_LEN = (
    8,
    64,
    192,
)  # long enough that starting and stopping torch.profiler is a small share
WINDOWS = (
    ("cold", "basic", None),
    ("warm", "basic", None),
    ("comprehensive", "comprehensive", None),
    ("short", "standard", 4),
)


def prompts(seed: int):
    rng = random.Random(seed)
    return [{"prompt_token_ids": [rng.randrange(4, 2000) for _ in range(INPUT_LEN)]} for _ in range(NUM_PROMPTS)]


def main(out: str) -> int:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import xpu_profiler
    from xpu_profiler.live.models import resolve_model
    from xpu_profiler.summary import encode

    out_dir = Path(out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    from vllm import LLM, SamplingParams

    llm = LLM(
        model=resolve_model("tiny-llama")[0],
        load_format="dummy",
        enforce_eager=True,
        gpu_memory_utilization=0.2,
        max_model_len=512,
        max_num_seqs=NUM_PROMPTS,
        max_num_batched_tokens=1024,
        seed=0,
    )
    plain = SamplingParams(max_tokens=OUTPUT_LEN, ignore_eos=True, temperature=0.0)
    with_logprobs = SamplingParams(max_tokens=OUTPUT_LEN, ignore_eos=True, temperature=0.0, logprobs=1)
    llm.generate(prompts(0), plain, use_tqdm=False)  # warm-up of every batch shape, without logprobs
    windows = {}
    for i, (name, level, steps) in enumerate(WINDOWS, 1):
        if name == "warm":  # compile the logprob kernel for every batch size outside the windows
            for n in (1, 3, NUM_PROMPTS):
                llm.generate(prompts(100 + n)[:n], with_logprobs, use_tqdm=False)
        with xpu_profiler.profile(
            llm,
            detail_level=level,
            profile_steps=steps,
            run_info={
                "model": "tiny-llama",
                "workload": {
                    "num_prompts": NUM_PROMPTS,
                    "input_len": INPUT_LEN,
                    "output_len": OUTPUT_LEN,
                    "logprobs": 1,
                },
            },
        ) as prof:
            t0 = time.time_ns()
            llm.generate(prompts(i), with_logprobs, use_tqdm=False)
            t1 = time.time_ns()
        prof.profile.save(out_dir / f"{name}.npz")
        (out_dir / f"{name}.summary.json").write_bytes(encode(prof.summary()))
        windows[name] = {"level": level, "profile_steps": steps, "t0": t0, "t1": t1}
    (out_dir / "windows.json").write_text(json.dumps(windows, indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: findings_workload.py OUT_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
