"""The vLLM releases live mode accepts (``compat_table.VLLM_OLDEST``..``VLLM_NEWEST``), checked
before the engine starts: an older release is one line (exit 2), a newer one is tried with a
note, a version that names no release is left to the start-up hook check."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from xpu_profiler.live.vllm import compat
from xpu_profiler.live.vllm.compat_table import VLLM_NEWEST, VLLM_OLDEST


def _v(rel: tuple[int, int], tail: str = ".0") -> str:
    return f"{rel[0]}.{rel[1]}{tail}"


@pytest.mark.parametrize(
    "version, error, note",
    [
        (_v(VLLM_OLDEST, ".1.1"), False, False),  # vllm-kunlun 0.10.1.1's base
        (_v(VLLM_NEWEST, ".0+cpu"), False, False),  # a local build tag
        (f"{VLLM_NEWEST[0]}.{VLLM_NEWEST[1]}.1rc2.dev5+g1234", False, False),
        (f"{VLLM_OLDEST[0]}.{VLLM_OLDEST[1] - 1}.2", True, False),
        ("0.6.3.post1", True, False),
        (f"{VLLM_NEWEST[0]}.{VLLM_NEWEST[1] + 1}.0", False, True),
        ("1.0.0", False, True),
        ("unknown", False, False),  # a source build without a version: the hook check decides
        ("not installed", False, False),
    ],
)
def test_release_check(version, error, note):
    err, nt = compat.release_check(version)
    assert (err is not None) == error and (nt is not None) == note
    for line in (err, nt):
        if line:
            assert "\n" not in line and version in line
            assert f"{VLLM_OLDEST[0]}.{VLLM_OLDEST[1]} to {VLLM_NEWEST[0]}.{VLLM_NEWEST[1]}" in line


def test_the_live_command_refuses_an_old_vllm_in_one_line(tmp_path):
    """A vLLM older than the table accepts (a stand-in package that says 0.6.3): one line, exit
    2, before any engine starts (the stand-in's LLM raises if it is ever constructed)."""
    fake = tmp_path / "site" / "vllm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        textwrap.dedent(
            """
            __version__ = "0.6.3"
            class LLM:
                def __init__(self, *a, **k):
                    raise RuntimeError("the engine was started")
            class SamplingParams:
                pass
            """
        )
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{tmp_path / 'site'}:{ROOT}",
        "XPU_PROFILER_CACHE": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    cmd = [sys.executable, "-m", "xpu_profiler", "--model", "tiny-llama", "--device", "cpu", "-o", tmp_path / "r.html"]
    r = subprocess.run([str(c) for c in cmd], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "the engine was started" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("xpu_profiler: error: vLLM 0.6.3 is older than the live mode supports"), last
