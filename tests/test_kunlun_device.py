"""kunlun_p800: the spec entry, its --device-spec override, and a missing device."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpu_profiler.knowledge import devices

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def specs():
    return devices.SPECS


def test_p800_entry_states_the_source_of_each_figure(specs):
    s = specs["kunlun_p800"]
    assert s.mem_bytes == 96 * 2**30 == 103079215104
    # no figure is given that could not be checked
    assert s.peak_flops == {} and s.mem_bw_bytes_s is None
    assert "mem_bytes" in s.source and "103079215104" in s.source
    assert "peak_flops and mem_bw_bytes_s: unverified" in s.source


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_device_spec_file_fills_in_the_unverified_figures(tmp_path, specs, suffix):
    f = tmp_path / f"p800{suffix}"
    if suffix == ".json":
        f.write_text(
            json.dumps(
                {
                    "kunlun_p800": {
                        "peak_flops": {"bf16": 3.0e14, "int8": 6.0e14},
                        "mem_bw_bytes_s": 2.5e12,
                        "source": "my lab's measurement",
                    }
                }
            )
        )
    else:
        f.write_text(
            '[kunlun_p800]\nmem_bw_bytes_s = 2.5e12\nsource = "my lab\'s measurement"\n'
            "[kunlun_p800.peak_flops]\nbf16 = 3.0e14\nint8 = 6.0e14\n"
        )
    out = devices.load_spec_overrides(f)["kunlun_p800"]
    assert out.peak_flops == {"bf16": 3.0e14, "int8": 6.0e14}
    assert out.mem_bw_bytes_s == 2.5e12
    assert out.mem_bytes == 96 * 2**30  # kept from the table
    assert out.source == "my lab's measurement"


@pytest.mark.skipif(importlib.util.find_spec("vllm_kunlun") is not None, reason="a Kunlun plugin is installed")
def test_requesting_kunlun_without_an_xpu_fails_with_one_line(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "--model",
            "tiny-llama",
            "--device",
            "kunlun_p800",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 2
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert "kunlun_p800 is not available" in lines[0] and "vllm_kunlun" in lines[0]
    assert not (tmp_path / "out").exists()
