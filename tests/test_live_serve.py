"""The plugin records engine steps from a real `vllm serve` (OpenAI API server) run."""

from __future__ import annotations

import json
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from conftest import HAVE_VLLM, vllm_env
from live_checks import ops_inside_worker_steps
from xpu_profiler.live.assemble import build_profile, read_record_dir
from xpu_profiler.live.vllm.records import S_IDX, read_record_files

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def test_serve_records_steps(tmp_path):
    from xpu_profiler.models import resolve_model

    env = vllm_env(tmp_path / "cache")
    env["XPU_PROFILER_CACHE"] = str(tmp_path / "cache")
    import os

    old = os.environ.get("XPU_PROFILER_CACHE")
    os.environ["XPU_PROFILER_CACHE"] = str(tmp_path / "cache")
    try:
        model, _ = resolve_model("tiny-llama")
    finally:
        if old is None:
            os.environ.pop("XPU_PROFILER_CACHE", None)
        else:
            os.environ["XPU_PROFILER_CACHE"] = old
    rec_dir = tmp_path / "records"
    env["XPU_PROFILER_DIR"] = str(rec_dir)
    env["XPU_PROFILER_LEVEL"] = "standard"  # torch.profiler over steps 2..5 of the worker
    env["XPU_PROFILER_STEPS"] = "2:4"
    port = _free_port()
    log = open(tmp_path / "serve.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--load-format", "dummy",
         "--enforce-eager", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "256",
         "--max-num-batched-tokens", "64", "--gpu-memory-utilization", "0.2"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 240
        while True:
            if server.poll() is not None:
                pytest.fail("server exited:\n" + (tmp_path / "serve.log").read_text(errors="replace")[-3000:])
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail("server did not come up in 240 s")
            time.sleep(1)
        rng = random.Random(5)
        lens = [21, 9, 30]
        prompt_tokens = 0
        for n in lens:
            ids = [rng.randrange(4, 2000) for _ in range(n)]
            r = _post(base + "/v1/completions", {"model": model, "prompt": ids, "max_tokens": 5,
                                                 "ignore_eos": True, "temperature": 0})
            assert r["usage"]["completion_tokens"] == 5
            prompt_tokens += r["usage"]["prompt_tokens"]
        assert prompt_tokens == sum(lens)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()

    records = read_record_files(rec_dir)
    procs = {r["process"] for r in records}
    assert any(r["sched"] for r in records), procs
    assert any(r["worker"] for r in records), procs
    # every process that patched a class at import says which hooks took
    hooks = {k: v for r in records for k, v in (r.get("hooks") or {}).items()}
    assert hooks.get("Scheduler.update_from_output") is True and hooks.get("Worker.execute_model") is True, hooks
    prof = build_profile(records, trim_to_steps=False)
    assert prof.run.get("warnings", []) == []
    st = prof.steps
    # requests ran one after another: each has prefill steps, then 4 decode steps
    assert int(st["prefill_tokens"].sum()) == sum(lens)
    assert int(st["decode_tokens"].sum()) == len(lens) * (5 - 1)
    sched = [s for r in records for s in r["sched"]]
    assert len(st) == len({s[S_IDX["step"]] for s in sched}) >= len(lens) * 5
    # the worker saw the step ids the scheduler tagged: records join exactly
    worker_steps = [w[0] for r in records for w in r["worker"]]
    assert sorted(worker_steps) == sorted(s[S_IDX["step"]] for s in sched)
    assert len(prof.requests) == len(lens)
    assert sorted(prof.requests["prompt_len"].tolist()) == sorted(lens)
    # the torch.profiler window: 4 consecutive steps of ops, each op inside a worker step range
    # attributed to that step, before any trimming
    from xpu_profiler import aggregate

    aggregate.attribute(prof)
    ev = prof.events
    ops, inside = ops_inside_worker_steps(prof, min_ranges=4)
    assert len(ops) > 500 and inside.sum() > 0.9 * len(ops)
    stepped = ev["step"][ops] >= 0
    ids = np.unique(st["step_id"][ev["step"][ops][stepped]]).tolist()
    assert ids == list(range(ids[0], ids[0] + 4)), ids
    # read as a user reads a record directory: the same steps, ops outside every step dropped
    trimmed = read_record_dir(rec_dir)
    assert trimmed.steps["step_id"].tolist() == st["step_id"].tolist()
    assert len(prof.events) - len(trimmed.events) == trimmed.run.get("events_outside_steps_dropped", 0)
