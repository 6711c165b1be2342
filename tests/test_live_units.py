"""Live-path pieces that need no engine: workload files, engine arguments, record assembly."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.core.profile import P_DECODE, P_MIXED, P_PREFILL
from xpu_profiler.core.records import read_record_files
from xpu_profiler.live.env import EnvScope
from xpu_profiler.live.options import engine_kwargs, load_prompts, parse_metrics
from xpu_profiler.live.vllm.recorder import Recorder
from xpu_profiler.readers.records.assemble import build_profile


def test_prompts_file(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "hello there", "output_len": 5}\n\n{"prompt_token_ids": [5, 6, 7]}\n"plain"\n')
    got = load_prompts(f, 9)
    assert got == [("hello there", 5), ({"prompt_token_ids": [5, 6, 7]}, 9), ("plain", 9)]
    f.write_text('{"text": 1}\n')
    with pytest.raises(XpuProfilerError, match=":1: expected"):
        load_prompts(f, 9)
    f.write_text("{oops\n")
    with pytest.raises(XpuProfilerError, match="not JSON"):
        load_prompts(f, 9)
    with pytest.raises(XpuProfilerError, match="does not exist"):
        load_prompts(tmp_path / "none.jsonl", 9)


def test_engine_kwargs():
    kw = engine_kwargs(
        "/m",
        True,
        "cpu",
        {
            "max_num_batched_tokens": 32,
            "dtype": "auto",
            "engine_arg": ["max-num-seqs=4", "enable_prefix_caching=false", "kv_cache_dtype=auto"],
        },
    )
    assert kw["load_format"] == "dummy" and kw["enforce_eager"] is True and kw["max_num_batched_tokens"] == 32
    assert kw["max_num_seqs"] == 4 and kw["enable_prefix_caching"] is False and kw["kv_cache_dtype"] == "auto"
    assert "dtype" not in kw
    kw = engine_kwargs("org/m", False, "cuda", {"dtype": "bfloat16", "enforce_eager": False})
    assert "load_format" not in kw and kw["enforce_eager"] is False and kw["dtype"] == "bfloat16"
    with pytest.raises(XpuProfilerError, match="KEY=VALUE"):
        engine_kwargs("/m", True, "cpu", {"engine_arg": ["oops"]})


def test_metrics():
    assert parse_metrics(None) == parse_metrics("all") == ("execution_time", "memory_usage", "throughput")
    assert parse_metrics("throughput, memory_usage") == ("throughput", "memory_usage")
    with pytest.raises(XpuProfilerError, match="unknown metric"):
        parse_metrics("execution_time,flops")


def _sched(step, t0, pt, dt, pr, dr, done=0):
    # fields: live.vllm.records.SCHED_FIELDS
    return [step, t0, t0 + 100, t0 + 1000, pt, dt, pr, dr, pr + dr, 0, 0.5, 0, done]


def test_build_profile_joins_and_filters_records():
    base = 10**18
    engine = {
        "pid": 1,
        "process": "EngineCore",
        "sched": [
            _sched(0, base - 5000, 9, 0, 1, 0),  # warm-up: before the window
            _sched(1, base + 0, 16, 0, 1, 0, done=1),
            _sched(2, base + 2000, 8, 1, 1, 1, done=1),
            _sched(3, base + 4000, 0, 2, 0, 2),
        ],
        "worker": [],
        "counters": [[0, "kv_cache_usage", base + 1000, 0.25]],
        "requests": [
            ["a", base - 10, base + 1000, base + 5000, 16, 3],
            ["b", base + 1500, base + 3000, base + 5000, 8, 2],
        ],
    }
    worker = {
        "pid": 2,
        "process": "VllmWorker-0",
        "sched": [],
        "counters": [],
        "requests": [],
        "worker": [[s, 0, base + s * 2000 + 200, base + s * 2000 + 900, -1, -1, 1] for s in (1, 2, 3)],
    }
    p = build_profile([engine, worker], t_start=base - 100, t_end=base + 6000)
    st = p.steps
    assert st["step_id"].tolist() == [1, 2, 3]
    assert st["phase"].tolist() == [P_PREFILL, P_MIXED, P_DECODE]
    assert st["start"].tolist() == [100, 2100, 4100] and st["dur"].tolist() == [1000] * 3
    assert p.strings[int(st["name"][1])] == "execute_context_1(8)_generation_1(1)"
    req = p.requests
    assert len(req) == 2 and req["output_len"].tolist() == [3, 2]
    names = set(p.strings.lookup(p.counters["name"]))
    assert {"kv_cache_usage", "output_tokens_per_s", "decode_tokens_per_s"} <= names
    c = p.counters
    out_rate = c["value"][c["name"] == p.strings.get("output_tokens_per_s")]
    # step 2: 1 decode token + 1 first token over 1000 ns
    assert out_rate.tolist() == [1e6, 2e6, 2e6]
    tp = p.run["throughput"]
    assert tp["window_prefill_tokens"] == 24 and tp["window_decode_tokens"] == 3
    assert tp["window_output_tokens"] == 5 and tp["window_ns"] == 6100
    assert np.isclose(tp["window_output_tok_s"], 5 / 6100 * 1e9)


def test_env_scope_puts_every_variable_back(monkeypatch):
    monkeypatch.setenv("XPU_T_SET", "old")
    monkeypatch.delenv("XPU_T_NEW", raising=False)
    monkeypatch.setenv("XPU_T_KEEP", "mine")
    with EnvScope() as env:
        env.set("XPU_T_SET", "a")
        env.set("XPU_T_SET", "b")  # the first value seen is what comes back
        env.set("XPU_T_NEW", "x")
        assert env.setdefault("XPU_T_KEEP", "theirs") == "mine"
        assert (os.environ["XPU_T_SET"], os.environ["XPU_T_NEW"]) == ("b", "x")
    assert os.environ["XPU_T_SET"] == "old" and "XPU_T_NEW" not in os.environ
    assert os.environ["XPU_T_KEEP"] == "mine"


def test_hook_failures_and_missing_hooks_reach_the_warnings(tmp_path):
    base = 10**18
    engine = {
        "pid": 1,
        "process": "EngineCore",
        "sched": [_sched(0, base, 4, 0, 1, 0, done=1)],
        "worker": [],
        "counters": [],
        "requests": [],
        "hooks": {"Scheduler.schedule": True},
        "errors": {"Scheduler.update_from_output": [2, "KeyError: 'x'"]},
    }
    later = {**engine, "sched": [], "hooks": {}, "errors": {"Scheduler.update_from_output": [3, "KeyError: 'y'"]}}
    worker = {
        "pid": 2,
        "process": "VllmWorker-0",
        "sched": [],
        "worker": [],
        "counters": [],
        "requests": [],
        "hooks": {"Worker.execute_model": False, "Worker.sample_tokens": True},
    }
    # a record file with one line cut short by a crash
    (tmp_path / "EngineCore-1.records.jsonl").write_text(json.dumps(engine) + "\n" + '{"pid": 1, "sch')
    batches = read_record_files(tmp_path)
    p = build_profile([*batches, later, worker])
    w = p.run["warnings"]
    assert any("Worker.execute_model did not install in VllmWorker-0" in x for x in w), w
    assert any("Scheduler.update_from_output failed 5 time(s) in EngineCore (first: KeyError: 'x')" in x for x in w), w
    assert any("EngineCore-1.records.jsonl: 1 record line(s) cut short" in x for x in w), w
    assert len(w) == 3
    assert p.steps["step_id"].tolist() == [0]


def test_recorder_hands_over_hook_failures_once():
    rec = Recorder()
    rec.failed("Scheduler.schedule", KeyError("req-1"))
    rec.failed("Scheduler.schedule", KeyError("req-2"))
    rec.sched.append((0, 1, 2, 3, 4, 0, 1, 0, 1, 0, 0.5, 0, 1))
    batch = rec.take()
    assert batch["errors"] == {"Scheduler.schedule": [2, "KeyError: 'req-1'"]}
    assert batch["role"] == "engine" and len(batch["sched"]) == 1
    again = rec.take()
    assert "errors" not in again and again["sched"] == []
    assert build_profile([batch]).run["warnings"] == [
        "Scheduler.schedule failed 2 time(s) in " + batch["process"] + " (first: KeyError: 'req-1'); "
        "those records are missing"
    ]


def test_two_threads_answering_one_window_at_once(tmp_path):
    """A process's scheduler and flush threads both write its window answer: each write
    lands whole, none fails on the other's temporary file."""
    import threading

    from xpu_profiler.live.vllm import control_files

    path = control_files.answer_path(tmp_path, "w1", "EngineCore", os.getpid())
    errors: list[BaseException] = []

    def answer(who: int) -> None:
        try:
            for i in range(300):
                control_files.write_json(path, {"who": who, "i": i})
        except BaseException as e:  # noqa: BLE001 - the failure is the finding
            errors.append(e)

    threads = [threading.Thread(target=answer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    last = json.loads(path.read_text())
    assert last["i"] == 299 and last["who"] in range(4)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
