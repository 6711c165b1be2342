"""``--max-events N`` keeps the first N events in time: a step the cut splits in two is left out
of the steps (its wall time would count for part of its work), the steps before it are kept
whole, and ``diff`` says when a side is such a part of its trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from xpu_profiler import analysis
from xpu_profiler.testing import gen_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("max_events") / "trace.json"
    gen_trace.generate(20_000, str(path), seed=5)
    return path


def _cut_inside_a_step(path: Path) -> tuple[int, int, set[int]]:
    """(N: the first N events in time end in the middle of a step, that step's id, the ids of the
    steps every event of which is among the first N), from the whole trace's analysis: an event
    is the step's its attribution gave it to."""
    profile, _ = analysis.analyze([path])
    ev, steps = profile.events, profile.steps
    order = np.argsort(ev["start"], kind="stable")
    place = np.empty(len(order), np.int64)
    place[order] = np.arange(len(order))
    split = int(steps["step_id"][len(steps) // 2])
    row = int(np.flatnonzero(steps["step_id"] == split)[0])
    mine = np.sort(place[ev["step"] == row])
    n = int(mine[len(mine) // 2])  # half of that step's events are among the first n
    kept = place < n
    whole = {int(steps["step_id"][r]) for r in range(len(steps)) if kept[ev["step"] == r].all()}
    return n, split, whole


def _summary(path: Path, out: Path, *args: str) -> tuple[dict, str]:
    res = run("analyze", path, "-o", out, "--format", "json", *args)
    assert res.returncode == 0, res.stderr
    return json.loads((out / "summary.json").read_text()), res.stderr


def test_a_step_the_cut_splits_is_left_out(trace, tmp_path):
    n, split, whole = _cut_inside_a_step(trace)
    full, _ = _summary(trace, tmp_path / "full")
    part, err = _summary(trace, tmp_path / "part", "--max-events", str(n))
    ids = part["steps"]["step_id"]
    assert split not in ids
    assert sorted(ids) == sorted(whole) and ids
    # each step kept is the whole run's step: its device work and its time as there
    at = {s: i for i, s in enumerate(full["steps"]["step_id"])}
    for col in ("busy_ns", "wall_ns", "start_ns", "decode_tokens"):
        assert part["steps"][col] == [full["steps"][col][at[s]] for s in ids], col
    assert "1 step the cut splits left out of the steps" in err
    assert part["selection"]["events_kept"] == n


def test_diff_says_a_side_is_part_of_its_trace(trace, tmp_path):
    n, _, _ = _cut_inside_a_step(trace)
    _summary(trace, tmp_path / "full")
    part, _ = _summary(trace, tmp_path / "part", "--max-events", str(n))
    res = run("diff", tmp_path / "full" / "summary.json", tmp_path / "part" / "summary.json", "-o", tmp_path / "d")
    assert res.returncode == 0, res.stderr
    notes = json.loads((tmp_path / "d" / "diff.json").read_text())["notes"]
    sel = part["selection"]
    want = (
        f"NEW is part of its trace (at most {n:,} events: {sel['events_kept']:,} of {sel['events_total']:,} events "
        "kept): its figures are that part's, not the whole run's"
    )
    assert want in notes and not [x for x in notes if x.startswith("BASE is part")]
    assert f"note: {want}" in res.stdout
