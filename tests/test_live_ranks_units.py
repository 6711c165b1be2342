"""Ranks of a live run without an engine: data-parallel engines through the real step
hooks (stand-ins for vLLM's scheduler and worker objects, with the attributes compat
reads), and the CPU thread binding the live command sets for TP/DP > 1."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from xpu_profiler.live.env import cpu_thread_binding
from xpu_profiler.live.options import local_workers
from xpu_profiler.live.vllm import hooks_scheduler, hooks_worker
from xpu_profiler.live.vllm.recorder import REC
from xpu_profiler.readers.records.assemble import build_profile


class FakeRequest:
    def __init__(self, rid, prompt):
        self.request_id, self.num_prompt_tokens, self.num_computed_tokens = rid, prompt, 0
        self.arrival_time = 1.0e9


class FakeScheduler:
    """What the scheduler hooks read of vLLM's Scheduler (names as in vLLM 0.32)."""

    def __init__(self, dp_index, world, prompts):
        # a dense DP engine: vLLM resets data_parallel_rank to 0, data_parallel_index stays
        self.parallel_config = SimpleNamespace(data_parallel_index=dp_index, data_parallel_rank=0, world_size=world)
        self.requests = {rid: FakeRequest(rid, n) for rid, n in prompts.items()}
        self.running, self.waiting = list(self.requests), []
        self.kv_cache_manager = SimpleNamespace(usage=0.1 * (dp_index + 1))
        self.generated = {rid: 0 for rid in prompts}
        self.max_tokens = 2

    def has_requests(self):
        return bool(self.running)

    def schedule(self):
        sched = {}
        for rid in self.running:
            r = self.requests[rid]
            n = r.num_prompt_tokens if r.num_computed_tokens == 0 else 1
            r.num_computed_tokens += n
            sched[rid] = n
        return SimpleNamespace(num_scheduled_tokens=sched, total_num_scheduled_tokens=sum(sched.values()))

    def update_from_output(self, so, model_out):
        outs = []
        for rid in list(so.num_scheduled_tokens):
            self.generated[rid] += 1
            done = self.generated[rid] >= self.max_tokens
            outs.append(SimpleNamespace(request_id=rid, new_token_ids=[7], finish_reason="length" if done else None))
            if done:
                self.running.remove(rid)
        return {0: SimpleNamespace(outputs=outs)}


class FakeWorker:
    def __init__(self, rank, dp_index, tp):
        self.rank = rank
        self.parallel_config = SimpleNamespace(
            data_parallel_index=dp_index, data_parallel_rank=0, world_size=tp, tensor_parallel_size=tp
        )

    def execute_model(self, so):
        return "output"  # no separate sample_tokens call follows


@pytest.fixture
def fresh_recorder():
    """Each simulated process starts from a fresh recorder (the hooks write into REC)."""
    saved = dict(REC.__dict__)
    yield
    REC.__dict__.clear()
    REC.__dict__.update(saved)


def _engine_process(dp_index: int, tp: int, prompts: dict) -> list[dict]:
    """One DP engine: its EngineCore and its TP workers, each a process of its own."""
    hooks_scheduler.install(FakeScheduler)
    hooks_worker.install(FakeWorker)
    sched = FakeScheduler(dp_index, tp, prompts)
    outputs = []
    REC.__init__()
    REC.active = True
    while sched.has_requests():
        so = sched.schedule()
        outputs.append(so)
        sched.update_from_output(so, None)
    batches = [REC.take(final=True)]
    for rank in range(tp):
        REC.__init__()
        REC.active = True
        w = FakeWorker(rank, dp_index, tp)
        for so in outputs:
            w.execute_model(so)
        batches.append(REC.take(final=True))
    return batches


def test_dp_engines_keep_their_own_steps_ranks_and_kv_counters(fresh_recorder):
    dp0 = _engine_process(0, 2, {"a": 5, "b": 3})
    dp1 = _engine_process(1, 2, {"c": 4})
    assert [b["place"] for b in dp1] == [
        {"dp": 1, "world": 2, "rank": 2},
        {"dp": 1, "pp": 0, "tp": 0, "rank": 2},
        {"dp": 1, "pp": 0, "tp": 1, "rank": 3},
    ]
    p = build_profile(dp0 + dp1)
    st = p.steps
    rows = sorted(
        zip(st["rank"].tolist(), st["step_id"].tolist(), st["prefill_tokens"].tolist(), st["decode_tokens"].tolist())
    )
    # each engine numbers its own steps; each step has a row per rank of its own engine
    assert rows == [
        (0, 0, 8, 0),
        (0, 1, 0, 2),
        (1, 0, 8, 0),
        (1, 1, 0, 2),
        (2, 0, 4, 0),
        (2, 1, 0, 1),
        (3, 0, 4, 0),
        (3, 1, 0, 1),
    ]
    assert p.run["parallel_ranks"] == {
        "0": {"dp": 0, "pp": 0, "tp": 0},
        "1": {"dp": 0, "pp": 0, "tp": 1},
        "2": {"dp": 1, "pp": 0, "tp": 0},
        "3": {"dp": 1, "pp": 0, "tp": 1},
    }
    c = p.counters
    kv = c["name"] == p.strings.get("kv_cache_usage")
    # each engine's KV usage under its own first rank, with its own value
    by_rank = {r: sorted(set(v)) for r in (0, 2) for v in [c["value"][kv & (c["rank"] == r)].round(3).tolist()]}
    assert by_rank == {0: [0.1], 2: [0.2]} and set(c["rank"][kv].tolist()) == {0, 2}
    rate = c["name"] == p.strings.get("prefill_tokens_per_s")
    assert set(c["rank"][rate].tolist()) == {0, 2}
    rq = p.requests
    assert dict(zip(p.strings.lookup(rq["req"]), rq["rank"].tolist())) == {"a": 0, "b": 0, "c": 2}
    assert sorted(rq["output_len"].tolist()) == [2, 2, 2]


def test_worker_rows_of_older_record_files_still_join():
    """Worker rows written before the DP fields existed: DP rank 0, global rank = rank."""
    base = 10**18
    engine = {
        "pid": 1,
        "process": "EngineCore",
        "worker": [],
        "counters": [],
        "requests": [],
        "sched": [[0, base, base + 10, base + 100, 4, 0, 1, 0, 1, 0, 0.5, 0, 1]],
    }
    workers = [
        {
            "pid": 2 + r,
            "process": f"VllmWorker-{r}",
            "sched": [],
            "counters": [],
            "requests": [],
            "worker": [[0, r, base + 20, base + 90, -1, -1, 4]],
        }
        for r in (0, 1)
    ]
    p = build_profile([engine, *workers])
    assert sorted(zip(p.steps["rank"].tolist(), p.steps["step_id"].tolist())) == [(0, 0), (1, 0)]


@pytest.mark.parametrize(
    "workers, cpus, nodes, want",
    [
        (1, [0, 1], 1, None),  # one worker: vLLM's own binding works
        (2, [0, 1], 1, "0|1"),  # TP=2 on this 2-core machine
        (2, [0, 1], 2, None),  # a NUMA node per worker: vLLM's "auto" is better
        (4, [0, 1], 1, "0|1|0|1"),  # more workers than cores: shared round-robin
        (2, list(range(8)), 1, "0-3|4-7"),
        (3, list(range(8)), 1, "0-2|3-5|6-7"),
        (2, [0, 2, 4, 6], 1, "0,2|4,6"),  # only the cores this process may use
    ],
)
def test_cpu_thread_binding(workers, cpus, nodes, want):
    got = cpu_thread_binding(workers, cpus, nodes)
    assert got == want
    if got is not None:
        vllm_utils = pytest.importorskip("vllm.utils.cpu_resource_utils")
        # the form vLLM parses: one list per worker, each a subset of the allowed cores
        lists = [vllm_utils.parse_id_list(s) for s in got.split("|")]
        assert len(lists) == workers and all(set(x) <= set(cpus) and x for x in lists)


def test_local_workers_counts_every_engines_workers():
    assert local_workers({}) == 1
    assert local_workers({"tensor_parallel_size": 2}) == 2
    assert local_workers({"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2}) == 8
    assert local_workers({"data_parallel_size": 4, "data_parallel_size_local": 2}) == 2
