"""A real `vllm serve` (the OpenAI API server, built-in tiny-llama, 127.0.0.1) with the
plugin recording into XPU_PROFILER_DIR, real HTTP requests, then the CLI as a user runs
it: `xpu_profiler analyze DIR` and `xpu_profiler record --url ...` against the running
server. One server for the module (restarted once, for the lifetimes test, at the end).

The ground truth is the server's own: the usage of every HTTP answer and vLLM's
Prometheus counters at /metrics (engine iterations, prompt and generation tokens)."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from conftest import HAVE_VLLM, vllm_env
from live_checks import ops_inside_worker_steps

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]

#: how long the plugin may take to flush what the server did (it flushes a busy process's
#: records every second, an idle one's at once): a deadline, not a wait
FLUSH_DEADLINE_S = 120
ENV_WINDOW = (2, 4)  # XPU_PROFILER_STEPS: torch.profiler over the workers' steps 2..5


def _cli(*args, timeout=300):
    return run(*args, env=vllm_env(), timeout=timeout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"{}")


def _wait(what: str, done, timeout: float) -> None:
    """Until ``done()``; fails naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.2)


class Server:
    def __init__(self, tmp: Path, args: tuple[str, ...] = (), env: dict | None = None):
        self.tmp = tmp
        self.args, self.env = list(args), dict(env or {})
        self.dir = tmp / "records"
        self.vllm_dir = self.dir / "vllm_profile"
        self.cache = tmp / "cache"
        self.proc: subprocess.Popen | None = None
        self.rng = random.Random(5)
        env = vllm_env(self.cache)
        self.model = subprocess.run(
            [
                sys.executable,
                "-c",
                "from xpu_profiler.live.models import resolve_model; print(resolve_model('tiny-llama')[0])",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def start(self) -> None:
        env = vllm_env(
            self.cache,
            XPU_PROFILER_DIR=str(self.dir),
            XPU_PROFILER_LEVEL="standard",
            XPU_PROFILER_STEPS=f"{ENV_WINDOW[0]}:{ENV_WINDOW[1]}",
            **self.env,
        )
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.tmp / f"serve-{self.port}.log"
        profiler = json.dumps({"profiler": "torch", "torch_profiler_dir": str(self.vllm_dir)})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vllm.entrypoints.openai.api_server",
                    "--model",
                    self.model,
                    "--load-format",
                    "dummy",
                    "--enforce-eager",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--max-model-len",
                    "256",
                    "--max-num-batched-tokens",
                    "64",
                    "--gpu-memory-utilization",
                    "0.2",
                    "--profiler-config",
                    profiler,
                    *self.args,
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def healthy() -> bool:
            if self.proc.poll() is not None:
                pytest.fail("server exited:\n" + self.log.read_text(errors="replace")[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        _wait("the server's /health", healthy, 300)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def complete(self, prompt_len: int, max_tokens: int) -> dict:
        ids = [self.rng.randrange(4, 2000) for _ in range(prompt_len)]
        r = _post(
            self.url + "/v1/completions",
            {"model": self.model, "prompt": ids, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0},
        )
        assert (r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) == (prompt_len, max_tokens)
        return r

    def flushed(self) -> tuple[int, int, int]:
        """(scheduler steps, worker steps, finished requests) in the record files of this
        server lifetime (its run id starts with the API server's pid)."""
        from xpu_profiler.core.records import read_record_files

        mine = [b for b in read_record_files(self.dir) if str(b.get("run") or "").startswith(f"{self.proc.pid}-")]
        return tuple(sum(len(b.get(k) or ()) for b in mine) for k in ("sched", "worker", "requests"))

    def wait_flushed(self) -> dict[str, float]:
        """vLLM's own counters, once the record files hold every step it counted (in the
        EngineCore's rows and the worker's) and every request it finished."""
        m = self.metrics()
        steps, done = int(m["vllm:iteration_tokens_total_count"]), int(m["vllm:request_success_total"])
        _wait(
            f"records of {steps} steps and {done} requests",
            lambda: self.flushed() == (steps, steps, done),
            FLUSH_DEADLINE_S,
        )
        return m

    def metrics(self) -> dict[str, float]:
        """vLLM's own counters, summed over their labels."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            m = re.match(r"^(vllm:[a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$", line)
            if m:
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
        return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve"))
    srv.start()
    yield srv
    srv.stop()


class Traffic:
    """Requests one after another from a thread, until stopped (a server under load)."""

    def __init__(self, srv: Server):
        self.srv, self.stop_flag, self.sent = srv, threading.Event(), 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop_flag.is_set():
            self.srv.complete(self.srv.rng.randrange(8, 40), 12)
            self.sent += 1

    def __enter__(self):
        self.thread.start()
        _wait("the first request of the traffic", lambda: self.sent > 0, 300)
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join(timeout=60)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _raw_step_ranges(trace: str | Path) -> list[int]:
    opener = gzip.open if str(trace).endswith(".gz") else open
    with opener(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sorted(int(m.group(1)) for e in events if (m := re.match(r"^xpu_step#(\d+)$", str(e.get("name", "")))))


def test_analyze_reads_every_step_and_request_of_the_server(server, tmp_path):
    from xpu_profiler import aggregate
    from xpu_profiler.core.records import S_IDX, read_record_files
    from xpu_profiler.readers.records.assemble import build_profile

    before = server.metrics()
    lens, out_len = [21, 9, 30, 17, 12, 26, 8], 5
    server.complete(lens[0], out_len)  # (the workers' torch window: steps 2..5)
    with ThreadPoolExecutor(4) as pool:  # some at once: batched steps
        list(pool.map(lambda n: server.complete(n, out_len), lens[1:5]))
    # vLLM's own profiler over 3 iterations, its trace written below the record directory
    _post(server.url + "/start_profile", {"max_iterations": 3})
    for n in lens[5:]:
        server.complete(n, out_len)
    _wait("vLLM's trace of its 3 iterations", lambda: list(server.vllm_dir.glob("rank*.pt.trace.json*")), 120)
    _post(server.url + "/stop_profile", {})  # (the API server's own trace: its host work, left out)
    after = server.wait_flushed()
    assert after["vllm:request_success_total"] - before["vllm:request_success_total"] == len(lens)

    out = tmp_path / "out"
    r = _cli("analyze", server.dir, "-o", out)
    assert r.returncode == 0, r.stderr[-3000:]
    s = _summary(out)
    steps = int(after["vllm:iteration_tokens_total_count"])
    prompt = int(after["vllm:prompt_tokens_total"])
    generated = int(after["vllm:generation_tokens_total"])
    # steps and tokens exactly what the server's scheduler counted (every step it ran)
    assert s["totals"]["steps"] == steps >= 4 * out_len  # four rounds of requests, at least
    assert s["totals"]["prefill_tokens"] == prompt == sum(lens)
    # the first token of a request comes from its last prefill step; every later one is a decode token
    assert s["totals"]["decode_tokens"] == generated - len(lens) == len(lens) * (out_len - 1)
    assert {p["phase"] for p in s["phases"] if p.get("steps")} >= {"prefill", "decode"}
    # every request, with its TTFT, TPOT and end-to-end latency
    rq = s["requests"]
    assert sorted(rq["prompt_len"]) == sorted(lens) and set(rq["output_len"]) == {out_len}
    assert all(v is not None and v > 0 for v in rq["ttft_ns"] + rq["tpot_ns"] + rq["e2e_ns"])
    assert all(t < e for t, e in zip(rq["ttft_ns"], rq["e2e_ns"]))
    assert s["throughput"]["ttft_ns"]["n"] == len(lens)
    # KV usage per step, memory series of the engine and the worker
    assert all(k is not None and 0 < k <= 1 for k in s["steps"]["kv_usage"])
    names = {x["name"] for x in s["memory"]["series"]}
    assert {"kv_cache_usage", "host_rss_bytes.engine_core", "host_rss_bytes.worker"} <= names
    assert s["warnings"] == []
    # the torch traces below the directory: the workers' window (XPU_PROFILER_STEPS) and vLLM's own
    traces = s["run"]["extra"]["torch_traces"]
    assert any("/torch/" in t for t in traces) and any(str(server.vllm_dir) in t for t in traces)
    assert not [t for t in traces if ".async_llm" in t]
    assert s["totals"]["events"] > 1000 and s["totals"]["op_time_ns"] > 0
    assert "Requests: 7 seen, 7 finished" in r.stdout and "TTFT p50" in r.stdout
    # the EngineCore's records carry the model config: the layer view knows tiny-llama's 4 layers,
    # and the steps of the workers' window show them, one xpu_module range each
    assert s["layers"]["config_layers"] == 4
    assert any((p["evidence"], p["layers"]) == ("module", 4) for p in s["layers"]["phases"])

    # the same records read in-process, untrimmed: the ops of the workers' window lie inside
    # their xpu_step ranges and are attributed to those engine steps
    records = read_record_files(server.dir)
    hooks = {k: v for b in records for k, v in (b.get("hooks") or {}).items()}
    assert hooks.get("Scheduler.update_from_output") is True and hooks.get("Worker.execute_model") is True, hooks
    worker_steps = sorted(w[0] for b in records for w in b["worker"])
    assert worker_steps == sorted(row[S_IDX["step"]] for b in records for row in b["sched"])
    (env_trace,) = [f for b in records for f in b.get("torch_files") or ()]
    assert _raw_step_ranges(env_trace) == list(range(ENV_WINDOW[0], ENV_WINDOW[0] + ENV_WINDOW[1]))
    vllm_traces = list(server.vllm_dir.glob("rank*.pt.trace.json*"))
    prof = build_profile(records, trim_to_steps=False, wallclock_traces=vllm_traces)
    aggregate.attribute(prof)
    ops, inside = ops_inside_worker_steps(prof, min_ranges=ENV_WINDOW[1])
    assert inside.sum() > 500
    # vLLM's trace holds its 3 iterations, placed on the steps by the wall clock
    ev, st = prof.events, prof.steps
    vllm_steps = [n for n in prof.strings.lookup(ev["name"]) if n.startswith("execute_context_")]
    assert len(vllm_steps) == 3
    ann = np.array([n.startswith("execute_context_") for n in prof.strings.lookup(ev["name"])])
    assert (ev["step"][ann] >= 0).all()  # each inside an engine step of ours
    assert len(st) == steps


def test_record_traces_exactly_the_asked_steps(server, tmp_path):
    from xpu_profiler.core.records import S_IDX, W_IDX, read_record_files

    n = 6
    out = tmp_path / "window"
    with Traffic(server):
        r = _cli("record", "--url", server.url, "--steps", n, "-o", out, "--timeout", 120)
    assert r.returncode == 0, r.stderr[-3000:]
    s = _summary(out)
    window = s["run"]["extra"]["window"]
    ids = s["steps"]["step_id"]
    assert s["totals"]["steps"] == n == window["steps"] == window["steps_asked"]
    assert ids == list(range(ids[0], ids[0] + n)) == list(range(window["first_step"], window["last_step"] + 1))
    assert s["warnings"] == []
    # the worker's torch trace holds exactly those steps, each once, and the report's trace too
    (trace,) = window["traces"]
    assert _raw_step_ranges(trace) == ids
    assert _raw_step_ranges(out / "trace.json.gz") == ids
    assert s["totals"]["events"] > 500 and s["totals"]["op_time_ns"] > 0
    assert s["totals"]["unstepped_share"] == 0
    # tokens exactly what the scheduler put into those steps
    sched = {row[S_IDX["step"]]: row for b in read_record_files(server.dir) for row in b["sched"]}
    assert s["totals"]["prefill_tokens"] == sum(sched[i][S_IDX["prefill_tokens"]] for i in ids)
    assert s["totals"]["decode_tokens"] == sum(sched[i][S_IDX["decode_tokens"]] for i in ids)
    # starting and stopping the profiler happens outside the window: the profiler's session
    # (its "PyTorch Profiler" span, on the worker's clock through the first range's mark)
    # starts after the step before the window ended and before the first one ran, and ends
    # after the last one ended
    recs = [b for b in read_record_files(server.dir) if trace in (b.get("torch_files") or ())]
    marks = {int(step): t for b in recs for step, t in b["torch_marks"]}
    worker = {row[W_IDX["step"]]: row for b in read_record_files(server.dir) for row in b["worker"]}
    with (gzip.open if str(trace).endswith(".gz") else open)(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    opened = {e["name"]: e["ts"] for e in events if str(e.get("name", "")).startswith("xpu_step#")}
    offset = marks[ids[0]] - opened[f"xpu_step#{ids[0]}"] * 1000
    (session,) = [e for e in events if e.get("cat") == "Trace"]
    begin, end = session["ts"] * 1000 + offset, (session["ts"] + session["dur"]) * 1000 + offset
    before = max(i for i in worker if i < ids[0])
    assert worker[before][W_IDX["t_exec_end"]] <= begin <= worker[ids[0]][W_IDX["t_exec"]]
    assert end >= worker[ids[-1]][W_IDX["t_exec_end"]]
    assert (out / "report.html").stat().st_size > 10_000
    assert "wrote html" in r.stdout
    assert not [p for p in (server.dir / "control").iterdir() if p.name.startswith(f"window-{window['id']}")]


def test_record_seconds_window(server, tmp_path):
    from xpu_profiler.core.records import S_IDX, read_record_files

    out = tmp_path / "seconds"
    with Traffic(server):
        r = _cli("record", "--url", server.url, "--seconds", 1, "-o", out, "--timeout", 120, "-q")
    assert r.returncode == 0, r.stderr[-3000:]
    s = _summary(out)
    ids = s["steps"]["step_id"]
    assert ids and ids == list(range(ids[0], ids[0] + len(ids)))
    assert _raw_step_ranges(s["run"]["extra"]["window"]["traces"][0]) == ids
    # the steps scheduled within the second from the first one, as the scheduler's own
    # times say; the next step that scheduled tokens came after it and ended the window
    sched = {row[S_IDX["step"]]: row for b in read_record_files(server.dir) for row in b["sched"]}
    t = {i: row[S_IDX["t_sched"]] for i, row in sched.items()}
    deadline = t[ids[0]] + 10**9
    assert all(t[i] < deadline for i in ids)
    later = [
        i for i in sorted(sched) if i > ids[-1] and sched[i][S_IDX["prefill_tokens"]] + sched[i][S_IDX["decode_tokens"]]
    ]
    assert later and t[later[0]] >= deadline
    assert s["warnings"] == []


def test_record_through_vllms_own_profiler(server, tmp_path):
    n = 4
    out = tmp_path / "vllm_window"
    with Traffic(server):
        r = _cli("record", "--url", server.url, "--steps", n, "--via", "vllm", "-o", out, "--timeout", 120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"vLLM's traces in {server.vllm_dir}" in r.stderr
    s = _summary(out)
    (src,) = s["run"]["sources"]
    assert Path(src["path"]).parent == server.vllm_dir and src["format"] == "kineto"
    assert s["run"]["step_source"] == "vllm_annotation"
    # vLLM counts an engine's empty clean-up iteration too: then one step fewer, and the report says so
    steps = s["totals"]["steps"]
    assert steps == n or (steps == n - 1 and any("iterations asked for" in w for w in s["warnings"])), s["warnings"]
    assert s["totals"]["op_time_ns"] > 0


def test_record_without_a_recording_server_is_one_line(server, tmp_path):
    r = _cli("record", "--url", f"http://127.0.0.1:{_free_port()}", "--steps", 3, "--dir", server.dir)
    assert r.returncode == 2 and "no vLLM server answers" in r.stderr and "Traceback" not in r.stderr
    r = _cli("record", "--url", server.url, "--steps", 3, "--seconds", 1)
    assert r.returncode == 2 and "one of them" in r.stderr


def test_a_restart_is_a_second_lifetime(server, tmp_path):
    first = int(server.wait_flushed()["vllm:iteration_tokens_total_count"])
    server.stop()
    server.start()
    for n in (11, 7):
        server.complete(n, 4)
    second = server.wait_flushed()
    out = tmp_path / "latest"
    r = _cli("analyze", server.dir, "-o", out)
    assert r.returncode == 0, r.stderr[-3000:]
    s = _summary(out)
    # the latest lifetime alone: its step ids start at 0 again and never mix with the first's
    assert s["totals"]["steps"] == int(second["vllm:iteration_tokens_total_count"])
    assert s["totals"]["prefill_tokens"] == 18 and s["totals"]["decode_tokens"] == 2 * 3
    assert sorted(s["requests"]["prompt_len"]) == [7, 11]
    assert any("2 server lifetimes" in w for w in s["warnings"]) and "--lifetime" in r.stderr
    assert s["run"]["extra"]["lifetime"]["index"] == 2
    out1 = tmp_path / "first"
    r = _cli("analyze", server.dir, "-o", out1, "--lifetime", 1, "-q")
    assert r.returncode == 0, r.stderr[-3000:]
    s1 = _summary(out1)
    assert s1["totals"]["steps"] == first
    assert set(s1["run"]["extra"]["lifetime"]["pids"]).isdisjoint(s["run"]["extra"]["lifetime"]["pids"])
    r = _cli("analyze", server.dir, "-o", tmp_path / "x", "--lifetime", 3)
    assert r.returncode == 2 and "2 server lifetime(s)" in r.stderr
    assert os.path.isdir(server.dir / "torch")
