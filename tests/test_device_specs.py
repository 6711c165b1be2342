"""Device specs: the parts real users run, each with its source; a trace's part known from its
device properties (an empty or generic name included); the headline peak is the run's dtype."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest
from real_data import REAL

from xpu_profiler.analysis import analyze
from xpu_profiler.exporters.html.header import build_header
from xpu_profiler.knowledge import devices
from xpu_profiler.knowledge.devices.specs_amd import AMD
from xpu_profiler.knowledge.devices.specs_nvidia import NVIDIA
from xpu_profiler.summary import DeviceSpec as SummarySpec

PARTS = ("H100", "H100-PCIe", "H200", "H800", "A100", "L40S", "B200", "B300", "GB200")
AMD_PARTS = ("MI250X", "MI300X", "MI325X", "MI355X")


def test_the_parts_real_users_run_are_there_with_sources() -> None:
    keys = {row.key for row in NVIDIA + AMD}
    assert {f"cuda:{p}" for p in PARTS} <= keys and {f"rocm:{p}" for p in AMD_PARTS} <= keys
    assert "kunlun_p800" in devices.SPECS and not devices.SPECS["kunlun_p800"].peak_flops  # nothing public
    for row in NVIDIA + AMD:
        s = row.spec
        assert s.source and s.mem_bw_bytes_s and s.mem_bytes, row.key
        f = s.peak_flops
        assert f.get("bf16", f.get("fp16")), row.key
        # dense figures: each narrower format at most doubles the wider one's rate
        for wide, narrow in (("tf32", "bf16"), ("bf16", "fp8"), ("fp8", "fp4")):
            if wide in f and narrow in f:
                assert f[wide] < f[narrow] <= 2.05 * f[wide], (row.key, wide, narrow)  # L40S: 733 vs 362
        assert f.get("fp32", 0) <= f.get("bf16", f.get("fp16")), row.key


PROPERTIES = [
    (
        {
            "name": "NVIDIA H100 80GB HBM3",
            "totalGlobalMem": 85018279936,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 132,
            "warpSize": 32,
        },
        "cuda:H100",
    ),
    (
        {
            "name": "NVIDIA H800",
            "totalGlobalMem": 84943110144,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 132,
            "warpSize": 32,
        },
        "cuda:H800",
    ),
    (
        {
            "name": "NVIDIA H100 PCIe",
            "totalGlobalMem": 85520809984,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 114,
            "warpSize": 32,
        },
        "cuda:H100-PCIe",
    ),
    ({"name": "NVIDIA GB200"}, "cuda:GB200"),
    (
        {
            "name": "NVIDIA B200",
            "totalGlobalMem": 191503138816,
            "computeMajor": 10,
            "computeMinor": 0,
            "numSms": 148,
            "warpSize": 32,
        },
        "cuda:B200",
    ),
    (
        {
            "name": "NVIDIA A100-PG509-200",
            "totalGlobalMem": 42297524224,
            "computeMajor": 8,
            "computeMinor": 0,
            "numSms": 108,
            "warpSize": 32,
        },
        "cuda:A100-40GB",
    ),
    # ROCm: an empty name, a generic one, one naming two parts
    (
        {
            "name": "",
            "totalGlobalMem": 206141652992,
            "computeMajor": 9,
            "computeMinor": 4,
            "numSms": 304,
            "warpSize": 64,
        },
        "rocm:MI300X",
    ),
    (
        {
            "name": "",
            "totalGlobalMem": 274877906944,
            "computeMajor": 9,
            "computeMinor": 4,
            "numSms": 304,
            "warpSize": 64,
        },
        "rocm:MI325X",
    ),
    (
        {
            "name": "AMD Radeon Graphics",
            "totalGlobalMem": 68702699520,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 104,
            "warpSize": 64,
        },
        "rocm:MI250",
    ),
    (
        {
            "name": "AMD Instinct MI250X/MI250",
            "totalGlobalMem": 68702699520,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 104,
            "warpSize": 64,
        },
        "rocm:MI250",
    ),
    (
        {
            "name": "AMD Instinct MI250X/MI250",
            "totalGlobalMem": 68702699520,
            "computeMajor": 9,
            "computeMinor": 0,
            "numSms": 110,
            "warpSize": 64,
        },
        "rocm:MI250X",
    ),
    ({"name": "AMD Instinct MI300X VF"}, "rocm:MI300X"),
    ({"name": "ARTEMIS"}, None),
    ({"name": ""}, None),
]


@pytest.mark.parametrize("props,key", PROPERTIES, ids=[f"{p.get('name') or 'empty'}-{k}" for p, k in PROPERTIES])
def test_part_from_device_properties(props: dict, key: str | None) -> None:
    assert devices.spec_key_for_properties(props) == key


def _properties(rel: str) -> list[dict]:
    path = REAL / rel
    if not path.exists():
        pytest.skip(f"{path} is not there")
    data = path.read_bytes()
    doc = json.loads(gzip.decompress(data) if rel.endswith(".gz") else data)
    return doc.get("deviceProperties") or []


#: the part each shared trace ran on, from its deviceProperties as written in the file
TRACES = {
    "gpu-inference/vllm-llama-tp4-h100-rank0.pt.trace.json.gz": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    "gpu-inference/deepseek-v3-train-ep64-h800-rank0.json": ("NVIDIA H800", "NVIDIA H800"),
    "gpu-inference/vllm-gptoss-tp8-b200-rank0-eager.json.gz": ("NVIDIA B200", "NVIDIA B200"),
    "gpu-inference/sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz": ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    "tracelens/vllm-gptoss-mi300-decode-full/graph_execution.json.gz": ("", "AMD Instinct MI300X"),
    "rocm-mi250-minitoy.json.gz": ("AMD Radeon Graphics", "AMD Instinct MI250 (one GCD)"),
    "cuda-training-control.json.gz": ("NVIDIA A100-PG509-200", "NVIDIA A100 40GB"),
}


@pytest.mark.parametrize("rel", sorted(TRACES))
def test_each_shared_trace_gets_its_part(rel: str) -> None:
    written, part = TRACES[rel]
    assert _properties(rel)[0]["name"] == written
    _, s = analyze([REAL / rel], engine="serial")
    assert s.device is not None and s.device.name == part


def _summary_on(key: str, dtype: str | None):
    from report_helpers import sample_summary

    s = sample_summary()
    s.device = msgspec.convert(devices.SPECS[key].to_json(), SummarySpec)
    s.run.device_name = None
    s.run.engine = {"dtype": dtype} if dtype else {}
    return s


def test_the_headline_peak_is_the_runs_dtype() -> None:
    """An H100 spec lists int8 and fp8 at twice bf16: a bf16 run's headline is bf16, and a
    run that records no dtype gets bf16 (labelled so), never the int8 peak."""
    facts = dict(build_header(_summary_on("cuda:H100", "bfloat16"))["facts"])
    assert "989 TFLOP/s bf16 peak" in facts["Device"]
    facts = dict(build_header(_summary_on("cuda:H100", None))["facts"])
    assert "989 TFLOP/s bf16 peak (the run's dtype is not recorded)" in facts["Device"]
    assert "1,979" not in facts["Device"]
    facts = dict(build_header(_summary_on("rocm:MI300X", "float16"))["facts"])
    assert "1,307 TFLOP/s fp16 peak" in facts["Device"]


def test_a_device_spec_file_names_a_part_the_table_does_not_know(tmp_path: Path) -> None:
    """--device-spec: an entry keyed (or named) as the trace names its device applies to it."""
    rel = "mtia-inference-rank0.json.gz"
    assert _properties(rel)[0]["name"] == "ARTEMIS"
    spec = tmp_path / "spec.toml"
    spec.write_text('[ARTEMIS]\nname = "ARTEMIS"\npeak_flops = { bf16 = 1.0e14 }\nmem_bw_bytes_s = 1.0e12\n')
    _, s = analyze([REAL / rel], engine="serial")
    assert s.device is None
    _, s = analyze([REAL / rel], engine="serial", specs=devices.load_spec_overrides(spec))
    assert s.device is not None and s.device.peak_flops == {"bf16": 1e14} and "spec.toml" in s.device.source
