"""The Perfetto export keeps a trace's Python stack frames (what shows a host gap's cause), on
a track per thread beside that thread's, and `--no-python-frames` leaves them out; counts and
times are checked against the raw trace."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from real_data import REAL

from xpu_profiler.cli.main import main
from xpu_profiler.core.profile import Profile
from xpu_profiler.exporters.trace_host import HOST_PATH_CAT
from xpu_profiler.exporters.validate import validate_file

H100 = REAL / "gpu-inference" / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz"  # with_stack: python frames
MODULE = "nn.Module: "  # module ranges are events of the analysis, not frames


@pytest.fixture(scope="module")
def raw() -> dict:
    if not H100.is_file():
        pytest.skip(f"real trace not found beside the checkout: {H100}")
    with gzip.open(H100, "rt") as f:
        return json.load(f)


def _frames(doc: dict) -> list[dict]:
    return [
        e
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "python_function" and not e["name"].startswith(MODULE)
    ]


@pytest.fixture(scope="module")
def exported(raw, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("frames")
    got = {}
    for name, extra in (("with", []), ("without", ["--no-python-frames"])):
        res = CliRunner().invoke(
            main,
            ["analyze", str(H100), "-o", str(out / name), "--format", "perfetto,bundle", "-q", *extra],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
        got[name] = out / name
    return got


def _load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def test_every_frame_is_kept_on_its_threads_own_track(raw, exported):
    frames = _frames(raw)
    doc = _load(exported["with"] / "trace.json.gz")
    out = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    assert len(frames) > 100_000 and len(out) == len(frames)
    assert Counter(e["name"] for e in out) == Counter(e["name"] for e in frames)
    # tracks: one (with lanes where frames do not nest) per thread that has frames, named for it
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    frame_tracks = {(e["pid"], e["tid"]) for e in out}
    assert all("python frames" in names[t] for t in frame_tracks)
    other = {
        (e["pid"], e["tid"]) for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "python_function"
    }
    assert not frame_tracks & other  # their own tracks
    threads_raw = {e["tid"] for e in frames}
    lane_one = {names[t].removesuffix(" python frames") for t in frame_tracks if names[t].endswith("python frames")}
    assert len(lane_one) == len(threads_raw)
    assert all(any(str(tid) in label for label in lane_one) for tid in threads_raw)


def test_frames_keep_their_times(raw, exported):
    """Absolute times: the export's base plus a frame's ts is the raw trace's base plus its ts
    (the raw ts are µs after baseTimeNanoseconds); durations are the raw ones."""
    doc = _load(exported["with"] / "trace.json.gz")
    base_out = int(doc["metadata"]["base_time_ns"])
    base_raw = int(raw["baseTimeNanoseconds"])
    out = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "python_function":
            out.setdefault((e["name"], round(e["dur"] * 1000)), []).append(base_out + round(e["ts"] * 1000))
    checked = 0
    for e in _frames(raw)[:2000]:
        t = base_raw + round(e["ts"] * 1000)
        cands = out.get((e["name"], round(e["dur"] * 1000)), [])
        assert any(abs(c - t) <= 1 for c in cands), e["name"]
        checked += 1
    assert checked == 2000
    # the earliest frame (a worker polling for its next step, before the first op) starts the trace
    first_frame = min(base_raw + round(e["ts"] * 1000) for e in _frames(raw))
    assert base_out == first_frame
    assert min(e["ts"] for e in doc["traceEvents"] if e.get("ph") in ("X", "C", "i")) >= 0


def test_the_trace_with_frames_imports_cleanly(exported):
    assert validate_file(exported["with"] / "trace.json.gz") == []


def test_no_python_frames_leaves_them_out_and_nothing_else(raw, exported):
    with_, without = (_load(exported[k] / "trace.json.gz")["traceEvents"] for k in ("with", "without"))
    assert not [e for e in without if e.get("cat") == "python_function"]

    def rest(evs: list[dict]) -> Counter:
        return Counter(
            (e.get("ph"), e.get("name"), e.get("ts"), e.get("dur"))
            for e in evs
            if e.get("cat") != "python_function" and e.get("ph") != "M"
        )

    assert rest(with_) == rest(without)
    # the host's critical path is the analysis's, which reads the frames either way: it names
    # them in both traces
    path = {
        k: {e["name"] for e in evs if e.get("cat") == HOST_PATH_CAT}
        for k, evs in (("with", with_), ("without", without))
    }
    frames = {f"python: {e['name']}" for e in _frames(raw)}
    assert path["with"] == path["without"] and path["with"] & frames
    assert validate_file(exported["without"] / "trace.json.gz") == []


def test_the_bundle_keeps_the_frames(raw, exported):
    with_ = Profile.load(exported["with"] / "profile.npz")
    without = Profile.load(exported["without"] / "profile.npz")
    assert len(with_.frames) == len(_frames(raw)) and len(without.frames) == 0
    assert np.array_equal(with_.events["start"], without.events["start"])
