"""A bundle holds the profile, not the graph-capture trace its analysis had: analysed again
without it, its replayed kernels are attributed by name, and one warning says so and how to
get the same attribution (``--capture`` again), on the command line and in the notebook."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import real_data
from cli_run import run

import xpu_profiler
from xpu_profiler.core.sources import AttributionSource


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path, int]:
    """(the bundle of an analysis with a capture trace, that capture trace, how many kernels the
    bundle's saved attribution matched through it)."""
    trace = real_data.need("tracelens/sglang-qwen3-8b-decode.json.gz")
    capture = real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    out = tmp_path_factory.mktemp("bundle_capture") / "cb1"
    res = run("analyze", trace, "--capture", capture, "--format", "bundle,json", "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    with np.load(out / "profile.npz") as z:
        matched = int(np.count_nonzero(z["events.source"] == AttributionSource.CAPTURE))
    assert matched > 0
    return out, capture, matched


def _warning(matched: int) -> str:
    return (
        f"the bundle was analysed with a graph-capture trace, which it does not hold: the {matched:,} replayed "
        "kernels matched through it are attributed by name now; give the capture trace again (--capture) "
        "for the same attribution"
    )


def test_analysed_again_without_the_capture_it_says_so(made, tmp_path):
    out, capture, matched = made
    res = run("analyze", out / "profile.npz", "--format", "json", "-o", tmp_path / "again")
    assert res.returncode == 0, res.stderr
    assert f"warning: {_warning(matched)}" in res.stderr.splitlines()
    assert _warning(matched) in json.loads((tmp_path / "again" / "summary.json").read_text())["warnings"]
    # with the capture trace again: the first analysis's attribution, and nothing to warn about
    res = run("analyze", out / "profile.npz", "--capture", capture, "--format", "json", "-o", tmp_path / "with")
    assert res.returncode == 0, res.stderr
    first = json.loads((out / "summary.json").read_text())
    again = json.loads((tmp_path / "with" / "summary.json").read_text())
    assert again["fused_ops"] == first["fused_ops"]
    assert _warning(matched) not in again["warnings"] and "graph-capture trace" not in res.stderr


def test_the_notebook_says_it_too(made):
    out, capture, matched = made
    assert _warning(matched) in xpu_profiler.load(out / "profile.npz").summary.warnings
    assert _warning(matched) not in xpu_profiler.load(out / "profile.npz", capture=[capture]).summary.warnings
