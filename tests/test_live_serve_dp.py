"""A real data-parallel `vllm serve` (two engines of the built-in tiny-llama on the two
CPU cores, one thread each) recording with the plugin, and `xpu_profiler record` against
it: each engine counts its own steps, so a window is each engine's steps, kept apart by
engine even where their step ids meet."""

from __future__ import annotations

import contextlib

import pytest
from conftest import HAVE_VLLM
from test_live_serve import Server, Traffic, _cli, _summary

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]


@pytest.fixture(scope="module")
def dp_server(tmp_path_factory):
    srv = Server(
        tmp_path_factory.mktemp("serve_dp"),
        args=("--data-parallel-size", "2"),
        env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"},
    )
    srv.start()
    yield srv
    srv.stop()


def test_a_window_on_two_data_parallel_engines(dp_server, tmp_path):
    n = 6
    out = tmp_path / "window"
    # six clients at once: the coordinator keeps both engines busy. An engine without a request
    # runs no step and so takes no window (a window is the engines that stepped while it was
    # open); with three clients one engine once sat idle through all six steps of the other
    with contextlib.ExitStack() as load:
        for _ in range(6):
            load.enter_context(Traffic(dp_server))
        r = _cli("record", "--url", dp_server.url, "--steps", n, "-o", out, "--timeout", 120)
    assert r.returncode == 0, r.stderr[-3000:]
    s = _summary(out)
    assert s["warnings"] == []
    window = s["run"]["extra"]["window"]
    engines = window["engines"]
    assert sorted(engines) == ["0", "1"] and window["steps"] == 2 * n
    assert s["totals"]["engines"] == 2 and s["totals"]["ranks"] == 2
    assert s["totals"]["steps"] == s["totals"]["step_rows"] == 2 * n
    st = s["steps"]
    for rank in (0, 1):  # one worker an engine: global rank = DP index
        e = engines[str(rank)]
        ids = [i for i, r in zip(st["step_id"], st["rank"]) if r == rank]
        assert e["steps"] == n and ids == list(range(e["first_step"], e["last_step"] + 1))
        # each engine's own KV-cache counter, filed under its rank
        assert all(u is not None for u, r in zip(st["kv_usage"], st["rank"]) if r == rank)
    assert s["run"]["extra"]["parallel_ranks"] == {"0": {"dp": 0, "pp": 0, "tp": 0}, "1": {"dp": 1, "pp": 0, "tp": 0}}
    assert s["totals"]["decode_tokens"] + s["totals"]["prefill_tokens"] > 0
