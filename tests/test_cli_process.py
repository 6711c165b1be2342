"""The process the commands run in: the analysis commands start numpy with one BLAS thread
(OpenBLAS otherwise starts one per core that spins, taking CPU from the reader's workers)
unless the user chose a number, the live command is left alone (vLLM runs under it); numbers
in the environment that are no ASCII number are ignored; the worker pools' pipes are wide."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xpu_profiler.testing import gen_trace

RUN = """
import os, sys
from xpu_profiler.cli.main import main
sys.argv = ["xpu_profiler", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print("blas threads:", os.environ.get("OPENBLAS_NUM_THREADS"), "numpy:", "numpy" in sys.modules)
"""


def _run(args: list, env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    r = subprocess.run([sys.executable, "-c", RUN, *map(str, args)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("blas") / "t.json.gz"
    gen_trace.generate(2_000, str(p), seed=3)
    return p


@pytest.mark.parametrize("command", ["analyze", "diff"])
def test_analysis_commands_start_no_blas_threads(trace: Path, tmp_path: Path, command: str) -> None:
    args = ["analyze", trace, "-o", tmp_path / "o", "-q"] if command == "analyze" else ["diff", trace, trace]
    args += ["-o", tmp_path / "d", "-q"] if command == "diff" else []
    assert _run(args, None) == "blas threads: 1 numpy: True"
    assert _run(args, "3") == "blas threads: 3 numpy: True"  # the user's choice stays


def test_other_commands_leave_it_alone() -> None:
    assert _run(["--version"], None).startswith("blas threads: None ")


@pytest.mark.parametrize("value", ["²", "٣", "-1", "x"])
def test_odd_numbers_in_the_environment_are_ignored(value: str, monkeypatch) -> None:
    """``COLUMNS`` and ``XPU_PROFILER_WORKERS`` that are no ASCII number fall back to the
    defaults (``²`` passes ``str.isdigit`` and fails ``int``)."""
    from xpu_profiler.core.forking import fork_workers
    from xpu_profiler.terminal.screen import FALLBACK_WIDTH, terminal_width

    monkeypatch.setenv("COLUMNS", value)
    assert terminal_width(None) == FALLBACK_WIDTH
    monkeypatch.setattr("xpu_profiler.core.forking.threading.active_count", lambda: 1)  # (pytest's threads)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", value)
    assert fork_workers(1 << 30, 0) == min(os.cpu_count() or 1, 8)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", "3")
    assert fork_workers(1 << 30, 0) == 3


def _megabytes(k: int) -> bytes:
    return bytes([k]) * (3 << 20)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe capacity is Linux's")
def test_worker_pools_return_large_results_through_wide_pipes() -> None:
    """The reader's and the trace writer's worker pools send their results (megabytes of a
    chunk's columns, of a written piece) through pipes as wide as the system lets an
    unprivileged process ask (a 64 KiB pipe woke the reader a page at a time: twice the read's
    time on two cores), and every result comes back whole, in order."""
    import fcntl

    from xpu_profiler.core.forking import PIPE_BYTES, fork_pool

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    with fork_pool(2) as pool:
        pipes = [pool._outqueue._writer.fileno(), pool._inqueue._writer.fileno()]  # type: ignore[attr-defined]
        widths = [fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) for fd in pipes]
        got = pool.map(_megabytes, range(5), chunksize=1)
    if os.geteuid() == 0 or limit >= PIPE_BYTES:  # (else the system's narrower default stays)
        assert widths == [PIPE_BYTES, PIPE_BYTES]
    assert [len(g) for g in got] == [3 << 20] * 5
    assert [g[0] == g[-1] == k for k, g in enumerate(got)] == [True] * 5
