"""The live path's options, checked once: metrics, detail levels, workload sizes,
engine arguments and prompt files. Every problem is one ``XpuProfilerError`` line."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import XpuProfilerError
from ..core.records import METRICS

LEVELS = ("basic", "standard", "comprehensive")


def parse_metrics(metrics: str | Iterable[str] | None) -> tuple[str, ...]:
    if metrics is None:
        return METRICS
    items = [m.strip() for m in (metrics.split(",") if isinstance(metrics, str) else metrics) if m.strip()]
    if not items or items == ["all"]:
        return METRICS
    bad = [m for m in items if m not in METRICS]
    if bad:
        raise XpuProfilerError(f"unknown metric(s) {', '.join(bad)} (choose from {', '.join(METRICS)})")
    return tuple(dict.fromkeys(items))


def check_level(level: str) -> str:
    level = (level or "standard").lower()
    if level not in LEVELS:
        raise XpuProfilerError(f"unknown detail level {level!r} (choose from {', '.join(LEVELS)})")
    return level


def check_workload(num_prompts, input_len, output_len, warmup_steps, profile_steps) -> None:
    for name, v in (("--num-prompts", num_prompts), ("--input-len", input_len), ("--output-len", output_len)):
        if v is None or int(v) < 1:
            raise XpuProfilerError(f"{name} must be at least 1")
    if warmup_steps is not None and warmup_steps < 0:
        raise XpuProfilerError("--warmup-steps must not be negative")
    if profile_steps is not None and profile_steps < 1:
        raise XpuProfilerError("--profile-steps must be at least 1")


def parse_engine_args(items: Iterable[str]) -> dict:
    """``KEY=VALUE`` items (VALUE as JSON when it parses, else a string)."""
    out = {}
    for it in items or ():
        if "=" not in it:
            raise XpuProfilerError(f"--engine-arg {it!r}: expected KEY=VALUE")
        k, v = it.split("=", 1)
        k = k.strip().lstrip("-").replace("-", "_")
        if not k:
            raise XpuProfilerError(f"--engine-arg {it!r}: empty key")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def engine_kwargs(model_path: str, is_builtin: bool, device_kind: str, options: dict) -> dict:
    """The ``vllm.LLM(...)`` arguments of a live run."""
    kw: dict[str, Any] = {"model": model_path}
    if options.get("tensor_parallel_size"):
        kw["tensor_parallel_size"] = int(options["tensor_parallel_size"])
    if options.get("max_num_batched_tokens"):
        kw["max_num_batched_tokens"] = int(options["max_num_batched_tokens"])
    if options.get("max_model_len"):
        kw["max_model_len"] = int(options["max_model_len"])
    elif is_builtin:
        kw["max_model_len"] = 2048
    if options.get("dtype") and options["dtype"] != "auto":
        kw["dtype"] = options["dtype"]
    lf = options.get("load_format") or ("dummy" if is_builtin else None)
    if lf:
        kw["load_format"] = lf
    ee = options.get("enforce_eager")
    if ee is None and device_kind == "cpu":
        ee = True
    if ee is not None:
        kw["enforce_eager"] = bool(ee)
    if device_kind != "cpu":
        kw.setdefault("gpu_memory_utilization", 0.9)
    kw.update(parse_engine_args(options.get("engine_arg") or ()))
    return kw


def local_workers(kw: dict) -> int:
    """Worker processes an engine configuration starts on this machine: TP x PP per
    engine, times the data-parallel engines (all local unless said otherwise)."""

    def size(key: str) -> int:
        try:
            return max(1, int(kw.get(key) or 1))
        except (TypeError, ValueError):
            return 1

    dp = size("data_parallel_size_local") if kw.get("data_parallel_size_local") else size("data_parallel_size")
    return size("tensor_parallel_size") * size("pipeline_parallel_size") * dp


def load_prompts(path: str | Path, default_output_len: int) -> list[tuple[Any, int]]:
    """JSONL: {"prompt": str} or {"prompt_token_ids": [...]}, optional "output_len"/"max_tokens"."""
    p = Path(path)
    if not p.is_file():
        raise XpuProfilerError(f"prompts file {p} does not exist")
    out: list[tuple[Any, int]] = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise XpuProfilerError(f"{p}:{i}: not JSON ({e})") from None
        if isinstance(obj, str):
            obj = {"prompt": obj}
        if not isinstance(obj, dict) or not ("prompt" in obj or "prompt_token_ids" in obj):
            raise XpuProfilerError(f'{p}:{i}: expected an object with "prompt" or "prompt_token_ids"')
        length = obj.get("output_len", obj.get("max_tokens", default_output_len))
        try:
            if not isinstance(length, (int, float, str)):  # null, a list...
                raise TypeError
            n = int(length)
        except (TypeError, ValueError, OverflowError):
            raise XpuProfilerError(f'{p}:{i}: "output_len"/"max_tokens" {length!r} is not a number') from None
        if "prompt_token_ids" in obj:
            out.append(({"prompt_token_ids": [int(t) for t in obj["prompt_token_ids"]]}, n))
        else:
            out.append((str(obj["prompt"]), n))
    if not out:
        raise XpuProfilerError(f"{p}: no prompts")
    return out


def synthetic_prompts(num: int, input_len: int, vocab: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    hi = max(8, min(vocab, 32000)) - 1
    return [{"prompt_token_ids": [rng.randint(4, hi) for _ in range(input_len)]} for _ in range(num)]
