"""Steps and verdicts on the other real traces: the HTA ones (training, ProfilerStep#N),
DeepSeek-V3 training, the SGLang capture trace, two ranks, MTIA and the IBM AIU trace.
For each, a rule written here finds the steps in the raw JSON (``raw_steps``) and the
analysis must agree, including when the rule finds none."""

from __future__ import annotations

import pytest
from raw_steps import build_steps, busy_share, events, verdict
from real_data import REAL

from xpu_profiler.analysis import analyze

needs = pytest.mark.skipif(not REAL.is_dir(), reason=f"the shared real traces are not at {REAL}")


def profiler_steps(path):
    """Rule for a training (or any torch.profiler-scheduled) trace: one step per
    ``ProfilerStep#N`` user annotation; one whose runtime calls launched no device work
    is no step (a marker around host work only)."""
    marks = sorted(
        (e for e in events(path) if e.cat == "user_annotation" and e.name.startswith("ProfilerStep#")),
        key=lambda e: e.start,
    )
    steps = build_steps(path, [(e.start, e.end) for e in marks])
    return marks, [s for s in steps if s.has_work]


@needs
@pytest.mark.parametrize(
    "name",
    [
        "cuda-training-control.json.gz",
        "cuda-ns-resolution-rank0.pt.trace.json.gz",
        "rocm-mi250-minitoy.json.gz",
        "cuda-triton-example.json.gz",
        "gpu-inference/deepseek-v3-train-ep64-h800-rank0.json",
        "tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz",
    ],
)
def test_profiler_step_traces(name):
    path = REAL / name
    marks, steps = profiler_steps(path)
    _, s = analyze([path])
    assert s.totals.steps == len(steps) and s.step_search.empty_steps == len(marks) - len(steps)
    assert s.step_search.found_by == {"profiler_step": len(steps)} and s.run.step_source == "profiler_step"
    # the engine: python frames in SGLang's source tree (the capture trace), else none;
    # a ProfilerStep says nothing of the batch, and nothing here tells the phase
    frames = {e.name for e in events(path) if e.cat == "python_function"}
    engine = "sglang" if any("sglang/" in f for f in frames) else "other"
    assert s.step_search.engine == engine and set(s.steps.phase) == {"unknown"}
    assert s.steps.step_ns == [x.step_time for x in steps]
    ph = next(p for p in s.phases if p.phase == "unknown")
    assert ph.bound == verdict(steps) and ph.inferred_from is None
    # per step: host-bound where the device waited on the host >= 20% of its time
    assert s.device_steps.bound == [verdict([x]) for x in steps]
    assert s.ranks[0].busy_share == pytest.approx(busy_share(steps), rel=1e-9)


@needs
def test_the_verdicts_the_hta_traces_hold():
    """What the rule gives on these traces, as numbers a reader can check by hand."""
    _, control = profiler_steps(REAL / "cuda-training-control.json.gz")
    assert [verdict([x]) for x in control] == ["host"] + ["device"] * 5  # step #1009 only
    _, toy = profiler_steps(REAL / "rocm-mi250-minitoy.json.gz")
    assert len(toy) == 1 and verdict(toy) == "host" and busy_share(toy) < 0.05


@needs
@pytest.mark.parametrize("folder", ["two-ranks", "training-two-ranks-sampled"])
def test_two_ranks_of_a_training_job(folder):
    """The same two ProfilerSteps on each rank (the two folders hold the same bytes): two
    engine steps of two ranks; each rank's verdict from its own steps."""
    per_rank = {r: profiler_steps(REAL / folder / f"rank-{r}.json.gz")[1] for r in (0, 1)}
    _, s = analyze([REAL / folder])
    assert s.totals.steps == 2 and s.totals.step_rows == 4 and [r.rank for r in s.ranks] == [0, 1]
    for r in s.ranks:
        assert r.busy_share == pytest.approx(busy_share(per_rank[r.rank]), rel=1e-9)
    by_rank = {}
    for rank, b in zip(s.device_steps.rank, s.device_steps.bound):
        by_rank.setdefault(rank, []).append(b)
    assert by_rank == {r: [verdict([x]) for x in st] for r, st in per_rank.items()}
    ph = next(p for p in s.phases if p.phase == "unknown")
    assert ph.bound == verdict(per_rank[0] + per_rank[1]) == "host"


@needs
@pytest.mark.parametrize(
    "name, marker_found",
    [
        ("cpu-only-rank34.pt.trace.json.gz", True),
        ("cuda-event-sync-multistream.json.gz", False),
        ("mtia-inference-rank0.json.gz", False),
        ("other-formats/aiu-allreduce-tp4-begin-end.json", False),
    ],
)
def test_traces_without_steps_say_so_in_one_line(name, marker_found, capsys):
    """Rule: no step annotation, no execute_model frame, and either no device work or too
    little to split (cpu-only: a ProfilerStep#551 that holds no op of its own: the four
    aten::empty ops come after it, the gloo ranges run on other threads)."""
    path = REAL / name
    ev = events(path)
    names = {e.name for e in ev}
    assert not [n for n in names if n.startswith(("execute_", "step[")) or n.endswith(": execute_model")]
    marks = [e for e in ev if e.name.startswith("ProfilerStep#")]
    assert bool(marks) == marker_found
    for m in marks:  # the marker holds no op: nothing of it is a step
        assert not [e for e in ev if e.cat == "cpu_op" and m.start <= e.start < m.end]
    _, s = analyze([path])
    assert s.totals.steps == 0 and not s.steps.rank
    msg = s.step_search.message
    assert msg and msg.startswith("No engine step found: looked for") and "\n" not in msg
    assert ("step marker(s) were found" in msg) == marker_found
    from xpu_profiler.terminal.summary import render

    text = render(s)
    assert text.splitlines()[0] == msg  # first, and never "Findings: none" as an all-clear
    assert "Findings: none above" not in text
