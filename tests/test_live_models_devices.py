"""Built-in models and device detection/specs (no engine needed)."""

from __future__ import annotations

import json

import pytest

from xpu_profiler.core.errors import DeviceError, XpuProfilerError
from xpu_profiler.knowledge import devices
from xpu_profiler.live.models import BUILTIN_MODELS, resolve_model


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XPU_PROFILER_CACHE", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    "name, arch",
    [("tiny-llama", "LlamaForCausalLM"), ("tiny-moe", "Qwen3MoeForCausalLM"), ("tiny-glm", "Glm4MoeForCausalLM")],
)
def test_builtin_model_is_made_locally(cache, name, arch):
    from tokenizers import Tokenizer

    path, builtin = resolve_model(name)
    assert builtin and path.startswith(str(cache))
    cfg = json.loads(open(f"{path}/config.json").read())
    assert cfg["architectures"] == [arch]
    tok = Tokenizer.from_file(f"{path}/tokenizer.json")
    assert tok.get_vocab_size() == cfg["vocab_size"]
    text = "The kernel step 42 is prefill, then decode!"
    ids = tok.encode(text).ids
    assert 0 < len(ids) < len(text) and max(ids) < cfg["vocab_size"]
    assert tok.decode(ids) == text
    tcfg = json.loads(open(f"{path}/tokenizer_config.json").read())
    assert tcfg["eos_token"] == "</s>" and tok.token_to_id("</s>") == cfg["eos_token_id"]
    # a second call reuses the directory
    mtime = (cache / "models" / name / "config.json").stat().st_mtime_ns
    assert resolve_model(name) == (path, True)
    assert (cache / "models" / name / "config.json").stat().st_mtime_ns == mtime


def test_moe_model_has_experts(cache):
    path, _ = resolve_model("tiny-moe")
    cfg = json.loads(open(f"{path}/config.json").read())
    assert cfg["num_experts"] > cfg["num_experts_per_tok"] > 1 and cfg["mlp_only_layers"] == []


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("tiny-nope", "unknown built-in model"),
        ("/no/such/dir", "does not exist"),
        ("./missing-model", "does not exist"),
        ("glm-99", "not a built-in model"),
    ],
)
def test_bad_model_names(cache, bad, needle):
    with pytest.raises(XpuProfilerError) as e:
        resolve_model(bad)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_existing_dir_without_config(tmp_path, cache):
    d = tmp_path / "m"
    d.mkdir()
    with pytest.raises(XpuProfilerError, match="config.json"):
        resolve_model(str(d))


def test_builtin_model_names():
    assert set(BUILTIN_MODELS) == {"tiny-llama", "tiny-moe", "tiny-glm"}


def test_glm_model_has_shared_experts_and_dense_first_layer(cache):
    path, _ = resolve_model("tiny-glm")
    cfg = json.loads(open(f"{path}/config.json").read())
    assert cfg["n_routed_experts"] > cfg["num_experts_per_tok"] > 1 and cfg["n_shared_experts"] == 1
    assert 0 < cfg["first_k_dense_replace"] < cfg["num_hidden_layers"]


def test_device_detection_on_this_machine():
    info = devices.detect("cpu")
    assert info.kind == "cpu" and info.spec_key == "cpu" and devices.spec_for(info) is not None
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        assert devices.detect("auto").kind == "cpu"
        with pytest.raises(DeviceError, match="cuda"):
            devices.detect("cuda")
    with pytest.raises(DeviceError, match="kunlun_p800"):
        import importlib.util

        if importlib.util.find_spec("vllm_kunlun") is not None:
            pytest.skip("vllm_kunlun is installed here")
        devices.detect("kunlun_p800")
    with pytest.raises(DeviceError, match="unknown device"):
        devices.detect("tpu")


def test_spec_table_and_overrides(tmp_path):
    for key in ("cuda:H100", "cuda:H200", "cuda:A100", "cuda:L40S"):
        s = devices.SPECS[key]
        assert s.peak_flops and s.mem_bw_bytes_s > 0 and s.source
    # no sourced peak for CPUs: none is made up
    cpu = devices.SPECS["cpu"]
    assert cpu.peak_flops == {} and cpu.mem_bw_bytes_s is None and "--device-spec" in cpu.source
    assert devices.spec_key_for_name("NVIDIA H100 80GB HBM3") == "cuda:H100"
    f = tmp_path / "spec.json"
    f.write_text(
        json.dumps(
            {
                "cpu": {"peak_flops": {"bf16": 3e12}, "mem_bw_bytes_s": 2e11},
                "my_card": {"name": "My card", "peak_flops": {"fp16": 1e14}, "mem_bytes": 1 << 34},
            }
        )
    )
    specs = devices.load_spec_overrides(f)
    assert specs["cpu"].peak_flops == {"bf16": 3e12}
    assert specs["cpu"].mem_bw_bytes_s == 2e11
    assert specs["my_card"].name == "My card" and specs["my_card"].mem_bytes == 1 << 34
    t = tmp_path / "spec.toml"
    t.write_text("[cpu]\nmem_bw_bytes_s = 5e10\n")
    assert devices.load_spec_overrides(t)["cpu"].mem_bw_bytes_s == 5e10
    bad = tmp_path / "bad.json"
    bad.write_text('{"cpu": {"peak": 1}}')
    with pytest.raises(XpuProfilerError, match="unknown field"):
        devices.load_spec_overrides(bad)
    bad.write_text("{not json")
    with pytest.raises(XpuProfilerError, match="not a valid device spec file"):
        devices.load_spec_overrides(bad)
    with pytest.raises(XpuProfilerError, match="cannot read"):
        devices.load_spec_overrides(tmp_path / "none.json")
    # the table itself is never changed: the overrides are a table of their own
    assert devices.specs()["cpu"].peak_flops == {} and "my_card" not in devices.specs()
    with pytest.raises(TypeError):
        devices.SPECS["cpu"] = specs["cpu"]  # read-only
