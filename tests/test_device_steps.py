"""The device-side step timeline on traces where every step's kernels run after its host
range has ended: generated as torch.profiler writes them (host launches with correlation
ids, kernels on two streams, gpu_user_annotation twins) and read by the real Kineto
reader; the numbers are checked against a plain re-computation from the generated
intervals, and the verdicts against how each trace was built."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.aggregate.steps.idle import KERNEL_WAIT_NS
from xpu_profiler.aggregate.steps.verdicts import HOST_BOUND_SHARE
from xpu_profiler.analysis import analyze, export
from xpu_profiler.exporters.validate import validate_bytes

STEP = "execute_context_0(0)_generation_4(4)"
LAUNCHES = 6  # per step, alternating streams 7 and 8
LAUNCH_EVERY = 2  # µs between launch calls
LAUNCH_DUR = 1.5  # µs, the call itself
LATENCY = 15  # µs from a launch call to the earliest start of its kernel


def build(steps: int, step_every: int, kernel_us: int) -> tuple[list[dict], list[dict]]:
    """(trace events, per step: kernels as (start, end, launch) in ns, host range): each
    step launches a burst and closes its range; the device runs each stream in order."""
    ev: list[dict] = []
    truth = []
    free = {7: 0, 8: 0}
    corr = 1
    for k in range(steps):
        h0 = k * step_every  # the first event at 0: times in the profile are as written
        kernels = []
        for j in range(LAUNCHES):
            launch = h0 + 1 + LAUNCH_EVERY * j
            stream = 7 + j % 2
            start = max(launch + LATENCY, free[stream])
            free[stream] = start + kernel_us
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 100,
                    "tid": 1,
                    "ts": launch,
                    "dur": LAUNCH_DUR,
                    "args": {"correlation": corr, "cbid": 211},
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"gemm_kernel_{j}",
                    "pid": 0,
                    "tid": stream,
                    "ts": start,
                    "dur": kernel_us,
                    "args": {"correlation": corr, "device": 0, "stream": stream},
                }
            )
            kernels.append((start * 1000, (start + kernel_us) * 1000, launch * 1000))
            corr += 1
        end = h0 + 1 + LAUNCH_EVERY * (LAUNCHES - 1) + LAUNCH_DUR + 0.5
        ev.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": STEP,
                "pid": 100,
                "tid": 1,
                "ts": h0,
                "dur": end - h0,
                "args": {},
            }
        )
        # Kineto's device-side twin: from the first to the last of the step's kernels
        first, last = min(s for s, _, _ in kernels), max(e for _, e, _ in kernels)
        ev.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": STEP,
                "pid": 0,
                "tid": 7,
                "ts": first / 1000,
                "dur": (last - first) / 1000,
                "args": {},
            }
        )
        truth.append({"kernels": kernels, "host": (h0 * 1000, round(end * 1000))})
    return ev, truth


def union(intervals: list[tuple[int, int]]) -> list[list[int]]:
    runs: list[list[int]] = []
    for s, e in sorted(intervals):
        if runs and s <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], e)
        else:
            runs.append([s, e])
    return runs


def covered(runs: list[list[int]], a: int, b: int) -> int:
    return sum(max(0, min(e, b) - max(s, a)) for s, e in runs)


def expected(truth: list[dict]) -> dict[str, list[int]]:
    """Every number of the device timeline, by hand: spans, own busy, idle, starved, and the
    device-level host wait before each step's first kernel. Where a step's first kernel
    starts while an earlier step's still runs (the two streams), its effective range starts
    where the earlier steps' work ends (the device's time tiled in step order), and every
    step's busy time is the device's busy time in its range; else its own kernels' union."""
    every = union([(s, e) for t in truth for s, e, _ in t["kernels"]])
    out: dict[str, list[int]] = {k: [] for k in ("start", "end", "eff", "busy", "idle", "starved", "host_wait")}
    prev_end = None
    spans = [(min(s for s, _, _ in t["kernels"]), max(e for _, e, _ in t["kernels"])) for t in truth]
    tiled = any(spans[k][0] < max(e for _, e in spans[:k]) for k in range(1, len(spans)))
    for t in truth:
        ks = t["kernels"]
        s0, s1 = min(s for s, _, _ in ks), max(e for _, e, _ in ks)
        eff = min(max(s0, prev_end), s1) if prev_end is not None else s0
        out["start"].append(s0)
        out["end"].append(s1)
        out["eff"].append(eff)
        own = sum(e - s for s, e in union([(s, e) for s, e, _ in ks]))
        out["busy"].append(covered(every, eff, s1) if tiled else own)
        out["idle"].append((s1 - eff) - covered(every, eff, s1))
        out["starved"].append(max(0, eff - prev_end) if prev_end is not None else 0)
        first = min(ks)  # the kernel that ends the gap before the step
        p = max((e for s, e, _ in [k for u in truth for k in u["kernels"]] if e <= first[0]), default=None)
        issued = first[2] + round(LAUNCH_DUR * 1000)  # when its launch call returned
        out["host_wait"].append(min(max(issued - p, 0), first[0] - p) if p is not None and first[0] > p else 0)
        prev_end = s1 if prev_end is None else max(prev_end, s1)
    return out


def analysed(tmp_path: Path, name: str, steps: int, step_every: int, kernel_us: int):
    ev, truth = build(steps, step_every, kernel_us)
    path = tmp_path / f"{name}.pt.trace.json"
    path.write_text(
        json.dumps({"schemaVersion": 1, "traceEvents": ev, "baseTimeNanoseconds": 1_700_000_000_000_000_000})
    )
    profile, summary = analyze([path])
    return profile, summary, truth


@pytest.mark.parametrize(
    "name, step_every, kernel_us, bound",
    [
        # the host spends 2 ms between steps (sampling, scheduling) while the device waits
        ("host-starved", 2000, 30, "host"),
        # the host launches the next step long before the device has finished this one
        ("device-saturated", 150, 100, "device"),
    ],
)
def test_device_timeline_of_async_steps(tmp_path: Path, name, step_every, kernel_us, bound) -> None:
    profile, s, truth = analysed(tmp_path, name, 6, step_every, kernel_us)
    # every kernel starts after its step's host range has ended
    assert all(k[0] > t["host"][1] for t in truth for k in t["kernels"])
    want = expected(truth)
    d = s.device_steps
    assert d.device_start_ns == want["start"] and d.device_end_ns == want["end"]
    assert d.effective_start_ns == want["eff"]
    assert d.device_busy_ns == want["busy"]  # the union of the step's own kernels, exactly
    assert s.steps.busy_ns == want["busy"] and s.steps.idle_ns == want["idle"]
    assert d.device_idle_ns == want["idle"] and d.starved_ns == want["starved"]
    assert d.host_wait_ns == want["host_wait"]
    # the verdicts: the rule applied to the numbers, and what the trace was built to be
    period = [st + e - b for st, b, e in zip(d.starved_ns, d.effective_start_ns, d.device_end_ns)]
    by_rule = ["host" if w >= HOST_BOUND_SHARE * p else "device" for w, p in zip(d.waiting_on_host_ns, period)]
    assert d.bound == by_rule
    assert d.bound[1:] == [bound] * 5  # the first step has no gap before it
    (phase,) = s.phases
    assert phase.bound == bound and phase.bound_evidence.startswith(f"decode is {bound}-bound")
    assert phase.device.busy_ns == sum(want["busy"]) and phase.device.starved_ns == sum(want["starved"])
    # Kineto's twins span exactly the kernels the correlation ids give
    assert d.twins == {"steps": 6, "agree": 6, "max_diff_ns": 0, "tolerance_ns": 1000}
    # the per-stream breakdown adds up: every gap of a stream is in one of the three causes
    for i in s.idle:
        starts = sorted(k[0] for t in truth for j, k in enumerate(t["kernels"]) if 7 + j % 2 == i.stream)
        ends = sorted(k[1] for t in truth for j, k in enumerate(t["kernels"]) if 7 + j % 2 == i.stream)
        gaps = sum(max(0, b - a) for a, b in zip(ends[:-1], starts[1:]))
        assert i.host_wait_ns + i.kernel_wait_ns + i.other_ns == gaps


def test_host_starved_gaps_are_host_wait_and_saturated_ones_are_not(tmp_path: Path) -> None:
    _, starved, truth = analysed(tmp_path, "starved", 4, 2000, 30)
    d = starved.device_steps
    # the device drained, then waited until the next step's first launch call returned;
    # after it, the rest of the launch latency (15 µs ≤ KERNEL_WAIT_NS) is kernel wait of
    # a kernel that ran at once
    issued = [min(t["kernels"])[2] + round(LAUNCH_DUR * 1000) for t in truth]
    for k in range(1, 4):
        assert d.host_wait_ns[k] == issued[k] - d.device_end_ns[k - 1]
        assert d.waiting_on_host_ns[k] >= d.host_wait_ns[k] + (LATENCY - LAUNCH_DUR) * 1000 - 1
    assert LATENCY * 1000 <= KERNEL_WAIT_NS and sum(d.other_ns) == 0
    _, saturated, truth = analysed(tmp_path, "saturated", 4, 150, 100)
    d = saturated.device_steps
    assert sum(d.host_wait_ns) == 0 and sum(d.starved_ns) == 0 and sum(d.waiting_on_host_ns) == 0
    # its work waited in the queue far longer than a launch takes (the mean of start −
    # launch over each step's kernels; the phase's median over all of them)
    delays = [[s - la for s, _, la in t["kernels"]] for t in truth]
    assert d.queue_delay_ns == [int(sum(x) / len(x)) for x in delays]
    assert min(d.queue_delay_ns[1:]) > 5 * KERNEL_WAIT_NS
    assert saturated.phases[0].device.queue_delay_ns == float(np.median([v for x in delays for v in x]))


def graph_replays(steps: int, call_us: float, kernels: int = 3, kernel_us: int = 100) -> tuple[list[dict], list]:
    """Decode steps that each replay one graph: the ``cudaGraphLaunch`` call lasts ``call_us``
    on the host, and the replay's kernels run back to back from ``LATENCY`` after it returns.
    Returns the trace events and, per step, (launch start, launch end, kernels) in ns."""
    ev: list[dict] = []
    truth = []
    t = 0.0
    for k in range(steps):
        launch = t + 10
        start = launch + call_us + LATENCY
        ks = [(start + j * kernel_us, start + (j + 1) * kernel_us) for j in range(kernels)]
        end = launch + call_us + 5
        ev.append({"ph": "X", "cat": "user_annotation", "name": STEP, "pid": 100, "tid": 1, "ts": t, "dur": end - t})
        ev.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaGraphLaunch",
                "pid": 100,
                "tid": 1,
                "ts": launch,
                "dur": call_us,
                "args": {"correlation": k + 1, "cbid": 311},
            }
        )
        for j, (a, b) in enumerate(ks):
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"graph_kernel_{j}",
                    "pid": 0,
                    "tid": 7,
                    "ts": a,
                    "dur": b - a,
                    "args": {"correlation": k + 1, "device": 0, "stream": 7},
                }
            )
        truth.append(
            (
                round(launch * 1000),
                round((launch + call_us) * 1000),
                [(round(a * 1000), round(b * 1000)) for a, b in ks],
            )
        )
        t = ks[-1][1] + 1  # the next step starts once the device has drained: nothing overlaps
    return ev, truth


def test_a_long_graph_launch_call_is_host_time(tmp_path: Path) -> None:
    """A ``cudaGraphLaunch`` call that lasts 980 µs on the host while the device has drained:
    the device waits for the host until the call returns (host wait), then the launch latency;
    none of it is a wait on other device work. Replays of 300 µs behind a 980 µs call are
    host-bound."""
    ev, truth = graph_replays(4, call_us=980)
    path = tmp_path / "replays.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    _, s = analyze([path])
    d = s.device_steps
    for k in range(1, 4):
        prev_end = truth[k - 1][2][-1][1]
        returned, first = truth[k][1], truth[k][2][0][0]
        assert d.host_wait_ns[k] == returned - prev_end
        assert d.kernel_wait_ns[k] == first - returned and d.other_ns[k] == 0
        assert d.waiting_on_host_ns[k] == first - prev_end
    assert d.bound[1:] == ["host"] * 3
    (phase,) = s.phases
    assert phase.bound == "host"
    # the call is named as the host's time: a graph launch, exposed for as long as it ran
    top = phase.host.causes[0]
    assert (top.cause, top.name) == ("graph_launch", "cudaGraphLaunch")
    exposed = [t[1] - max(t[0], truth[k - 1][2][-1][1]) for k, t in enumerate(truth) if k]
    assert top.per_step_ns == pytest.approx(sum(exposed) / len(truth))


def test_perfetto_flows_and_device_step_track(tmp_path: Path) -> None:
    profile, s, truth = analysed(tmp_path, "flows", 3, 150, 100)
    out = export(profile, s, tmp_path / "out", ["perfetto"])
    data = gzip.decompress(out["perfetto"].read_bytes())
    assert validate_bytes(data) == []
    doc = json.loads(data)
    evs = doc["traceEvents"]
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert len(starts) == len(ends) == 3 * LAUNCHES and set(starts) == set(ends)
    slices = [e for e in evs if e["ph"] == "X"]
    for fid, f in ends.items():
        # the arrow starts on the launch call and ends on its kernel, as torch.profiler's do
        (launch,) = [x for x in slices if x["name"] == "cudaLaunchKernel" and x["ts"] == starts[fid]["ts"]]
        (kernel,) = [x for x in slices if x["ts"] == f["ts"] and x["tid"] == f["tid"] and x["pid"] == f["pid"]]
        assert launch["args"]["correlation"] == kernel["args"]["correlation"] and f["bp"] == "e"
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = [x for x in slices if names[(x["pid"], x["tid"])].startswith("engine steps on device")]
    assert [round(x["ts"] * 1000) for x in spans] == s.device_steps.device_start_ns
    assert [x["args"]["bound"] for x in spans] == s.device_steps.bound
    counters = [e for e in evs if e["ph"] == "C" and e["name"] == "step device idle (us)"]
    assert len(counters) == 3 + 1 and counters[-1]["args"] == {"host_wait": 0, "kernel_wait": 0, "other": 0}


def flow_doc(events: list[dict]) -> bytes:
    meta = [
        {"ph": "M", "pid": 1, "tid": 1, "name": "process_name", "args": {"name": "p"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "host"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "stream"}},
    ]
    slices = [
        {"ph": "X", "name": "launch", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "X", "name": "kernel", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    ]
    return json.dumps({"traceEvents": meta + slices + events}).encode()


def S(i, ts=1, **kw):
    return {"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": ts, "cat": "ac2g", "name": "ac2g", **kw}


def F(i, ts=10, **kw):
    return {"ph": "f", "id": i, "pid": 1, "tid": 2, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e", **kw}


@pytest.mark.parametrize(
    "events, problem",
    [
        ([S(1), F(1)], None),
        ([S(1), S(1), F(1)], "2 starts"),  # Perfetto: flow_duplicate_id
        ([S(1), F(1), F(1)], "2 ends"),
        ([S(1), {**F(1), "bp": "x"}], 'without "bp"'),
        ([S(1, ts=7), F(1)], "inside no slice"),  # the launch slice ends at 5
        ([S(1), F(1, ts=15)], "inside no slice"),  # [ts, ts + dur): the end is out
        ([S(1, ts=4), {**F(1, ts=3), "tid": 1}], "ends before it starts"),
        ([S("1"), F("1")], "is not an integer"),  # a string id is read as hex
    ],
)
def test_validator_flow_rules(events, problem) -> None:
    problems = validate_bytes(flow_doc(events))
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def _streams_trace(path: Path, rank: int, base_us: float) -> Path:
    """Eight streams of five 20 µs kernels each, 100 µs apart, from ``base_us`` on."""
    ev = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    for s in range(8):
        for k in range(5):
            args = {"device": 0, "stream": 7 + s, "correlation": 1000 * s + k}
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{s}", "pid": 0, "tid": 7 + s,
                       "ts": base_us + s * 10 + k * 100, "dur": 20, "args": args})  # fmt: skip
    path.write_text(json.dumps({"traceEvents": ev, "distributedInfo": {"rank": rank, "world_size": 2}}))
    return path


def test_idle_rows_of_ranks_on_far_apart_clocks(tmp_path: Path) -> None:
    """Rank 0 on the epoch clock (µs since 1970), rank 1 near zero: each stream's gaps are its
    own (80 µs between its kernels), as when each rank is analysed alone; no time wraps."""
    both = tmp_path / "both"
    both.mkdir()
    alone = [analyze([_streams_trace(both / f"rank{r}.json", r, base)])[1] for r, base in ((0, 1.7e15), (1, 1000.0))]
    _, s = analyze([both])
    rows = sorted((r.rank, r.stream, r.phase, r.gaps, r.other_ns, r.kernel_wait_ns) for r in s.idle)
    want = sorted((a.rank, a.stream, a.phase, a.gaps, a.other_ns, a.kernel_wait_ns) for one in alone for a in one.idle)
    assert rows == want and len(rows) == 16
    assert {r[3:5] for r in rows if r[0] == 1} == {(4, 4 * 80_000)}  # four gaps of 80 µs per stream
    # (rank 0's: as exact as a double of µs since 1970 holds ns, within 256 ns)
    assert all(r[3] == 4 and abs(r[4] - 4 * 80_000) <= 4 * 256 for r in rows if r[0] == 0)


def test_steps_running_at_once_on_two_streams_share_their_time_once(tmp_path: Path) -> None:
    """Each step launches a short kernel on stream 7 and a long one on stream 8; the next step
    starts while the long one still runs, so the device is busy without a break. The time two
    steps share is counted once: the phase's busy time and period are the device's busy
    time (no more than the window), and the decode rate is its tokens over that time."""
    ev: list[dict] = []
    every, short, long_ = 300, 100, 500  # µs
    kernels = []
    for k in range(5):
        h0 = 1000 + every * k
        ev.append({"ph": "X", "cat": "user_annotation", "name": STEP, "pid": 100, "tid": 1, "ts": h0, "dur": 250})
        for j, (stream, dur) in enumerate(((7, short), (8, long_))):
            corr = 2 * k + j + 1
            launch = h0 + 5 + 2 * j
            ev.append(
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": launch,
                 "dur": 2, "args": {"correlation": corr}}
            )  # fmt: skip
            start = h0 + 10
            ev.append(
                {"ph": "X", "cat": "kernel", "name": f"k{stream}", "pid": 0, "tid": stream, "ts": start, "dur": dur,
                 "args": {"correlation": corr, "device": 0, "stream": stream}}
            )  # fmt: skip
            kernels.append((start * 1000, (start + dur) * 1000))
    path = tmp_path / "overlapping.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    _, s = analyze([path])
    busy = sum(e - b for b, e in union(kernels))  # the device's busy time: one run here
    assert len(union(kernels)) == 1
    (phase,) = s.phases
    assert phase.device.busy_ns == busy and phase.device.period_ns == busy
    assert sum(s.steps.busy_ns) == busy and sum(s.device_steps.device_busy_ns) == busy
    assert s.totals.device_busy_ns == busy <= s.totals.wall_ns
    tokens = 5 * 4  # the annotation's decode tokens, per step
    assert s.throughput.decode_tok_s == pytest.approx(tokens / (busy / 1e9))


def test_a_step_that_starts_a_side_kernel_during_the_last_ones_work(tmp_path: Path) -> None:
    """Overlap scheduling: the host runs a step ahead; each step first launches a 3 µs kernel on
    an idle side stream (it runs at once, while the previous step's compute still runs), then
    2 ms of compute that queues behind the previous step's. The device's time is tiled in step
    order: every step after the first takes its compute's 2 ms, and the steps' busy time adds
    up to what the device ran (before: cut at the side kernel, each step's busy was 15 µs)."""
    ev: list[dict] = []
    compute, side = 2000, 3  # µs
    free, corr, kernels, runs = 1010.0, 1, [], []
    for k in range(6):
        h0 = 1000 + 300 * k  # the host range: 200 µs, a step ahead of the device
        ev.append({"ph": "X", "cat": "user_annotation", "name": STEP, "pid": 100, "tid": 1, "ts": h0, "dur": 200})
        for stream, dur, at in ((9, side, h0 + 10), (7, compute, None)):
            start = at if at is not None else max(free, h0 + 30)
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1,
                       "ts": start - 5 if at else h0 + 20, "dur": 2, "args": {"correlation": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{stream}", "pid": 0, "tid": stream, "ts": start,
                       "dur": dur, "args": {"correlation": corr, "device": 0, "stream": stream}})  # fmt: skip
            kernels.append((start * 1000, (start + dur) * 1000))
            if stream == 7:
                free = start + dur
                runs.append((start * 1000, free * 1000))
            corr += 1
    path = tmp_path / "side.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    _, s = analyze([path])
    assert all(b[0] == a[1] for a, b in zip(runs, runs[1:]))  # compute back to back
    assert all(side_start < run[1] for (side_start, _), run in zip(kernels[2::2], runs))  # side kernels during it
    assert s.steps.step_ns[1:] == [e - b for b, e in runs[1:]]
    assert sum(s.device_steps.device_busy_ns) == sum(e - b for b, e in union(kernels))
    d = s.device_steps
    for i in range(len(runs)):
        assert d.device_busy_ns[i] <= d.starved_ns[i] + d.device_end_ns[i] - d.effective_start_ns[i]
