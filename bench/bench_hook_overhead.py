"""Overhead of xpu_profiler's hooks: interleaved A/B rounds in one vLLM engine.

    python bench/bench_hook_overhead.py [--model tiny-llama] [--rounds 16] [--standard-rounds 4] [--inproc]

Each round runs the same generate() (fresh random prompts, ignore_eos) either plain
(A: hooks off) or inside ``xpu_profiler.profile(llm, detail_level=...)`` (B: hooks on);
rounds alternate A/B so that drift of a shared machine hits both alike. Only the
generate() call is timed (switching the hooks on and off and collecting the records
happen outside it). Prints per-round tokens/s and the median B/A ratio for the
``basic`` level (step hooks, memory, throughput) and for ``standard`` (+ torch.profiler).

"Off" rounds run with the hooks installed but switched off (after the first on-round the
wrappers stay in place and cost one flag test per call). ``--inproc`` runs the engine in
this one process (VLLM_ENABLE_V1_MULTIPROCESSING=0, OMP_NUM_THREADS=1). On a shared
machine single rounds vary by ±20 %; use many rounds and read the median.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny-llama")
    ap.add_argument("--rounds", type=int, default=16, help="A/B pairs at basic level")
    ap.add_argument("--inproc", action="store_true", help="single-process engine layout")
    ap.add_argument("--metrics", default=None, help="metrics of the on-rounds (default: all)")
    ap.add_argument(
        "--control",
        action="store_true",
        help="A/A control: on-rounds switch the hooks on and off *before* a plain timed "
        "generate(), to see what the switching alone does to the next round",
    )
    ap.add_argument("--standard-rounds", type=int, default=4, help="A/B pairs at standard level (0: skip)")
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--max-num-batched-tokens", type=int, default=256)
    args = ap.parse_args()

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    if args.inproc:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    import xpu_profiler
    from xpu_profiler.core.errors import XpuProfilerError
    from xpu_profiler.live.models import resolve_model

    try:
        model, builtin = resolve_model(args.model)
    except XpuProfilerError as e:
        print(f"bench_hook_overhead: error: {e}", file=sys.stderr)
        return 2
    from vllm import LLM, SamplingParams

    llm = LLM(
        model=model,
        load_format="dummy" if builtin else "auto",
        enforce_eager=True,
        gpu_memory_utilization=0.2,
        max_model_len=1024,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.num_prompts,
        seed=0,
    )
    params = SamplingParams(max_tokens=args.output_len, ignore_eos=True, temperature=0.0)
    rng = random.Random(0)

    def prompts():
        return [
            {"prompt_token_ids": [rng.randrange(4, 2000) for _ in range(args.input_len)]}
            for _ in range(args.num_prompts)
        ]

    tokens = args.num_prompts * (args.input_len + args.output_len)

    hook_per_step: dict[str, list] = {}
    step_dur: dict[str, list] = {}

    def timed(level: str | None) -> float:
        ps = prompts()
        if level is None:
            t = time.perf_counter()
            llm.generate(ps, params, use_tqdm=False)
            return tokens / (time.perf_counter() - t)
        prof = xpu_profiler.profile(llm, metrics=args.metrics, detail_level=level).start()
        if args.control:
            prof.stop()
            t = time.perf_counter()
            llm.generate(ps, params, use_tqdm=False)
            return tokens / (time.perf_counter() - t)
        t = time.perf_counter()
        llm.generate(ps, params, use_tqdm=False)
        dt = time.perf_counter() - t
        p = prof.stop()
        ho = p.run.get("hook_overhead")
        if ho:
            hook_per_step.setdefault(level, []).append(ho["per_step_ns"])
            step_dur.setdefault(level, []).append(float(p.steps["dur"].mean()))
        return tokens / dt

    timed(None)
    timed("basic")  # warm-up; installs the wrappers once

    def ab(level: str, n: int) -> float:
        ratios = []
        print(
            f"\n{level}: {n} interleaved A/B rounds, {args.num_prompts} prompts x "
            f"({args.input_len} in + {args.output_len} out) tokens"
        )
        print(f"{'round':>5} {'off tok/s':>10} {'on tok/s':>10} {'on/off':>8}")
        for i in range(n):
            if i % 2 == 0:
                a, b = timed(None), timed(level)
            else:
                b, a = timed(level), timed(None)
            ratios.append(b / a)
            print(f"{i:>5} {a:>10.1f} {b:>10.1f} {b / a:>8.4f}")
        med = statistics.median(ratios)
        print(f"{level}: median tokens/s ratio on/off = {med:.4f} ({(1 - med) * 100:+.2f} % loss)")
        if hook_per_step.get(level):
            h = statistics.median(hook_per_step[level])
            d = statistics.median(step_dur[level])
            print(
                f"{level}: time inside the hooks {h / 1e3:.1f} us per step (all processes) = "
                f"{h / d * 100:.2f} % of the mean step ({d / 1e6:.2f} ms)"
            )
        return med

    basic = ab("basic", args.rounds)
    std = ab("standard", args.standard_rounds) if args.standard_rounds else None
    print(f"\nRESULT basic_ratio={basic:.4f}" + (f" standard_ratio={std:.4f}" if std else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
