"""Shared fixtures.

``vllm_profiler_trace``: a real trace written by vLLM's own torch profiler for the
built-in tiny-llama model, made once per test session (never cached across
sessions, so a vLLM or model change shows up at once), with the ground truth of
the profiled window recorded from the live scheduler.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


def _have_vllm() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("vllm") is not None
    except Exception:
        return False


HAVE_VLLM = _have_vllm()

# A suite started in the background by a shell without job control inherits SIGINT ignored,
# and so would every command it starts (an ignored signal stays ignored across exec): the
# Ctrl-C cases would then test nothing. A handler here is reset to the default in children.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def worker_cores() -> str | None:
    """Under pytest-xdist: this worker's share of the allowed cores ("0" and "1" for two
    workers on two cores), the binding its vLLM engines get. vLLM's own ("auto") pins every
    engine's worker process to the first core and keeps the rest for the scheduler, so two
    engines started at once by two test workers would share one core while the other idles
    (measured: two live runs side by side take a third longer so). None outside xdist or
    on one worker."""
    from xpu_profiler.live.env import cpu_thread_binding

    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not name.startswith("gw") or not name[2:].isdigit():
        return None
    # the live command's own split of the cores among engine workers, one list per test worker
    binding = cpu_thread_binding(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), nodes=1)
    return binding.split("|")[int(name[2:])] if binding else None


def vllm_env(cache: Path | None = None, **extra: str) -> dict:
    """Environment for a child process running vLLM on this (CPU) machine: under xdist, its
    engine worker on this test worker's own cores (``worker_cores``; a run of several
    engine workers sets a binding of its own)."""
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    cores = worker_cores()
    if cores is not None:
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", cores)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if cache is not None:
        env["XPU_PROFILER_CACHE"] = str(cache)
    env.pop("XPU_PROFILER_DIR", None)
    env.update(extra)
    return env


@dataclass
class VllmProfilerTrace:
    """What ``vllm_profiler_trace`` returns.

    - ``trace_dir``: the directory vLLM's profiler wrote (``*.pt.trace.json.gz`` and
      ``*.profiler_out.txt``), i.e. what a user passes to ``xpu_profiler analyze``;
    - ``trace_files``: the ``*.pt.trace.json.gz`` files in it (one: rank 0);
    - ``num_steps``: engine steps with scheduled tokens in the profiled window (each
      gives one ``execute_context_…_generation_…`` annotation in the trace);
    - ``prefill_tokens`` / ``decode_tokens``: their sums over the window;
    - ``phases``: number of prefill, decode and mixed steps;
    - ``steps``: per step, in order, ``prefill_tokens``, ``decode_tokens``,
      ``prefill_reqs``, ``decode_reqs``, ``total`` and ``phase``;
    - ``expected``: the whole ``expected.json`` (also prompt_lens, output_len,
      output_tokens, window_ns = wall-clock ns around the profiled generate()).
    """

    trace_dir: Path
    trace_files: list[Path]
    num_steps: int
    prefill_tokens: int
    decode_tokens: int
    phases: dict
    steps: list[dict] = field(default_factory=list)
    expected: dict = field(default_factory=dict)

    def __getitem__(self, key):  # dict-style access as well
        return getattr(self, key)


def _session_dir(tmp_path_factory, name: str) -> tuple[Path, Path | None]:
    """Where a session fixture's files go, and the lock its makers share: under xdist one
    directory of the whole session (every worker's temp directory is below it), so that
    the workers make it once between them; else a directory of this process's own."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp(name), None
    root = tmp_path_factory.getbasetemp().parent  # (this session's: pytest-of-USER/pytest-N)
    return root / name, root / f"{name}.lock"


def _trace_workload(tmp_path_factory, name: str, tp: int = 1, timeout: int = 600) -> VllmProfilerTrace:
    """Run tests/vllm_trace_workload.py (at tensor-parallel size ``tp``) once per session,
    whichever worker asks first (the others wait for it and read what it wrote); its
    trace files (one per rank) and the ground truth it recorded from the live scheduler."""
    if not HAVE_VLLM:
        pytest.skip("vLLM is not installed")
    import fcntl

    out, lock = _session_dir(tmp_path_factory, name)
    with open(lock, "w") if lock else open(os.devnull) as held:
        if lock:
            fcntl.flock(held, fcntl.LOCK_EX)  # (released when the file closes)
        failed = out / "failed.txt"
        if failed.exists():  # another worker ran it, and it failed: the same failure here
            pytest.fail(failed.read_text())
        if not (out / "expected.json").exists():
            out.mkdir(parents=True, exist_ok=True)
            _run_trace_workload(out, tp, timeout, failed)
    expected = json.loads((out / "expected.json").read_text())
    trace_dir = out / "trace"
    files = sorted(trace_dir.glob("*.pt.trace.json*"))
    if len(files) != tp:
        pytest.fail(f"vLLM wrote {len(files)} trace files into {trace_dir}, expected one per rank ({tp})")
    return VllmProfilerTrace(
        trace_dir=trace_dir,
        trace_files=files,
        num_steps=expected["num_steps"],
        prefill_tokens=expected["prefill_tokens"],
        decode_tokens=expected["decode_tokens"],
        phases=expected["phases"],
        steps=expected["steps"],
        expected=expected,
    )


def _run_trace_workload(out: Path, tp: int, timeout: int, failed: Path) -> None:
    log = out / "run.log"
    cmd = [sys.executable, str(TESTS / "vllm_trace_workload.py"), str(out)] + (["--tp", str(tp)] if tp > 1 else [])
    env = vllm_env(out / "model_cache")
    if tp > 1:  # one core list per rank: the workload's own
        env.pop("VLLM_CPU_OMP_THREADS_BIND", None)
    try:
        with open(log, "wb") as f:
            rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
        why = f"exit {rc.returncode}" if rc.returncode else ""
    except subprocess.TimeoutExpired:
        why = f"not done after {timeout} s"
    if why:
        failed.write_text(f"vLLM trace workload (TP={tp}) failed ({why}):\n{log.read_text(errors='replace')[-4000:]}")
        pytest.fail(failed.read_text())


@pytest.fixture(scope="session")
def vllm_profiler_trace(tmp_path_factory) -> VllmProfilerTrace:
    """Run vLLM 0.32's torch profiler on tiny-llama once per session (~35 s on 2 cores)."""
    return _trace_workload(tmp_path_factory, "vllm_profiler_trace")


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance for the session (2 CPUs, nothing external); the reading
    engine uses it instead of starting its own."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (./dev setup installs it)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def vllm_tp2_trace(tmp_path_factory) -> VllmProfilerTrace:
    """vLLM 0.32's torch profiler on tiny-llama at tensor-parallel size 2 on the CPU (two
    worker processes, one core each), once per session: one trace per rank, with the
    shared-memory all-reduce between them (~1-3 min on 2 shared cores)."""
    return _trace_workload(tmp_path_factory, "vllm_tp2_trace", tp=2, timeout=900)


def same_columns(a, b) -> None:
    """Two Profiles hold the same strings, base time, event and counter columns."""
    import numpy as np

    from xpu_profiler.core.profile import COUNTER_SCHEMA, EVENT_SCHEMA

    assert a.strings.strings == b.strings.strings
    assert a.base_ns == b.base_ns
    for col in EVENT_SCHEMA:
        assert np.array_equal(a.events[col], b.events[col]), col
    for col in COUNTER_SCHEMA:
        assert np.array_equal(a.counters[col], b.counters[col]), col


# -- running the suite on several workers (pytest-xdist, ``./dev test``) ----------------------

#: the modules that start vLLM engines, longest first (as measured under ``./dev test``), the
#: makers of the shared vLLM traces among them and the report's browser tests (which read both
#: shared traces) after those: under ``--dist loadfile --no-loadscope-reorder`` (each module
#: one unit of work: its engines start once) they are handed out first, so that the short
#: engine-free modules fill the other worker's time, and a worker seldom waits for a shared
#: trace the other one is still making
LONGEST_FIRST = (
    "test_live_faults",
    "test_findings_live",
    "test_live_serve",
    "test_live_llm",
    "test_live_serve_dp",
    "test_vllm_tp",
    "test_live_vllm_trace",
    "test_report_browser",
    "test_live_device_logs",
    "test_live_compat",
)


def pytest_collection_modifyitems(config, items) -> None:
    """In an xdist worker: the modules of ``LONGEST_FIRST`` first. Without xdist the order
    is the usual one. (The shared vLLM traces are made once between the workers: see
    ``_trace_workload``.)"""
    if not hasattr(config, "workerinput"):
        return

    def rank(item) -> int:
        module = item.module.__name__.rsplit(".", 1)[-1]
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # (stable: the order inside each module stays)


def pytest_terminal_summary(terminalreporter) -> None:
    """One line when the shared real traces are not beside this checkout: the tests over
    every real trace ran on the copies in tests/data/real-traces only."""
    import real_data

    if not real_data.SHARED.is_dir():
        n = len(real_data.files(recursive=True))
        terminalreporter.write_line(
            f"real traces: {real_data.SHARED} is not beside this checkout; the tests over every real "
            f"trace ran on the {n} in tests/data/real-traces only, and those that need another skipped"
        )
