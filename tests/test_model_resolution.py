"""`--model` as users write it: the alias table, the local Hugging Face cache, the hub
probe and the one-line "weights are not here" error (no engine needed)."""

from __future__ import annotations

import ast
import importlib.util
import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ROOT, vllm_env

from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.live.models import (
    BUILTIN_CONFIGS,
    BUILTIN_FOR_ARCH,
    BUILTIN_MODELS,
    MODEL_ALIASES,
    ensure_builtin,
    find_in_hf_cache,
    hf_cache_dirs,
    lookup,
    resolve_model,
)

HF_ENV = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "XDG_CACHE_HOME",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_ENDPOINT",
)


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    """An empty Hugging Face home and an unreachable hub, whatever this machine has."""
    for k in HF_ENV:
        monkeypatch.delenv(k, raising=False)
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("XPU_PROFILER_CACHE", str(tmp_path / "xpu"))
    return home


def _snapshot(cache: Path, folder: str, rev: str, config: dict, main: bool = True) -> Path:
    repo = cache / folder
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    if main:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(rev)
    return snap


class _CountingHub(BaseHTTPRequestHandler):
    hits: list = []

    def do_HEAD(self):
        type(self).hits.append(self.path)
        self.send_response(401)  # the hub's answer to an anonymous request for a gated or unknown repo
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def fake_hub(monkeypatch):
    _CountingHub.hits = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _CountingHub)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_address[1]}")
    yield _CountingHub.hits
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize(
    "name, hf_id, arch",
    [
        ("glm-5", "zai-org/GLM-5", "GlmMoeDsaForCausalLM"),
        ("GLM-5", "zai-org/GLM-5", "GlmMoeDsaForCausalLM"),
        ("glm-4.5-air", "zai-org/GLM-4.5-Air", "Glm4MoeForCausalLM"),
        ("GLM-4.6", "zai-org/GLM-4.6", "Glm4MoeForCausalLM"),
        ("zai-org/glm-4.7", "zai-org/GLM-4.7", "Glm4MoeForCausalLM"),
        ("qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B", "Qwen3MoeForCausalLM"),
        ("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", "Qwen3MoeForCausalLM"),
        ("qwen3-8b", "Qwen/Qwen3-8B", "Qwen3ForCausalLM"),
        ("deepseek-r1", "deepseek-ai/DeepSeek-R1", "DeepseekV3ForCausalLM"),
        ("DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", "DeepseekV32ForCausalLM"),
        ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "LlamaForCausalLM"),
        ("mimo-7b", "XiaomiMiMo/MiMo-7B-RL", "MiMoForCausalLM"),
        ("gpt-oss-120b", "openai/gpt-oss-120b", "GptOssForCausalLM"),
    ],
)
def test_alias_table_resolves_names(name, hf_id, arch):
    a = lookup(name)
    assert a is not None and (a.hf_id, a.architecture) == (hf_id, arch)


def test_unknown_names_are_not_aliases():
    assert lookup("glm-6") is None and lookup("tiny-glm") is None and lookup("qwen3") is None


def test_alias_table_is_consistent():
    archs = {arch for _, _, arch in MODEL_ALIASES}
    # every architecture has a built-in stand-in, and every stand-in exists
    assert archs <= set(BUILTIN_FOR_ARCH)
    assert set(BUILTIN_FOR_ARCH.values()) <= set(BUILTIN_MODELS)
    # each built-in model stands in for its own architecture
    for name, cfg in BUILTIN_CONFIGS.items():
        assert BUILTIN_FOR_ARCH[cfg["architectures"][0]] == name
    ids = [hf_id for _, hf_id, _ in MODEL_ALIASES]
    assert len(ids) == len(set(ids)) and all(i.count("/") == 1 for i in ids)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")
def test_alias_architectures_are_in_vllms_registry():
    """Each architecture of the table and of the built-in models is a key of the installed
    vLLM's model registry (read from its source, without importing vLLM)."""
    path = Path(importlib.util.find_spec("vllm").submodule_search_locations[0]) / "model_executor/models/registry.py"
    keys = {
        k.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Dict)
        for k in node.keys
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }
    archs = {arch for _, _, arch in MODEL_ALIASES} | {c["architectures"][0] for c in BUILTIN_CONFIGS.values()}
    assert archs <= keys, sorted(archs - keys)


def test_model_found_in_local_hf_cache_without_network(hf_home, fake_hub):
    tiny = json.loads((ensure_builtin("tiny-glm") / "config.json").read_text())
    hub = hf_home / "hub"
    old = _snapshot(hub, "models--zai-org--GLM-4.5-Air", "1111aaaa", tiny)
    _snapshot(hub, "models--zai-org--GLM-4.5-Air", "2222bbbb", {**tiny, "num_hidden_layers": 2}, main=False)
    (hub / "models--zai-org--GLM-4.5-Air" / "refs" / "main").write_text("1111aaaa\n")
    path, builtin = resolve_model("glm-4.5-air")
    assert (path, builtin) == (str(old), False)  # refs/main wins over the newer snapshot
    assert resolve_model("zai-org/GLM-4.5-Air") == (str(old), False)
    assert fake_hub == []  # found locally: the hub was never asked
    # the snapshot is a model directory transformers loads offline (transformers comes with vLLM)
    AutoConfig = pytest.importorskip("transformers", reason="transformers (with vLLM) not installed").AutoConfig

    cfg = AutoConfig.from_pretrained(path, local_files_only=True)
    assert cfg.architectures == ["Glm4MoeForCausalLM"] and cfg.first_k_dense_replace == 1


def test_cache_search_order_and_case(hf_home, tmp_path, monkeypatch):
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    hub_cache = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache))
    assert hf_cache_dirs()[:2] == [hub_cache, hf_home / "hub"]
    in_home = _snapshot(hf_home / "hub", "models--Qwen--Qwen3-8B", "aaaa", cfg)
    assert find_in_hf_cache("Qwen/Qwen3-8B") == in_home
    in_hub_cache = _snapshot(hub_cache, "models--qwen--qwen3-8b", "bbbb", cfg)  # downloaded in lower case
    assert find_in_hf_cache("Qwen/Qwen3-8B") == in_hub_cache  # HF_HUB_CACHE first
    # a snapshot without config.json (interrupted download) does not count
    (hub_cache / "models--Qwen--Qwen3-4B" / "snapshots" / "cccc").mkdir(parents=True)
    assert find_in_hf_cache("Qwen/Qwen3-4B") is None
    # no refs/main: the snapshot with a config
    only = _snapshot(hf_home / "hub", "models--Qwen--Qwen3-4B", "dddd", cfg, main=False)
    assert find_in_hf_cache("Qwen/Qwen3-4B") == only


def test_missing_weights_one_line(hf_home):
    with pytest.raises(XpuProfilerError) as e:
        resolve_model("glm-5")
    msg = str(e.value)
    assert "\n" not in msg
    for needle in (
        "zai-org/GLM-5",
        "GlmMoeDsaForCausalLM",
        str(hf_home / "hub"),
        "HF_HOME",
        "hf download zai-org/GLM-5",
        "--model tiny-glm",
        "closest architecture",
    ):
        assert needle in msg, (needle, msg)
    with pytest.raises(XpuProfilerError) as e:
        resolve_model("Qwen3-30B-A3B")
    assert "--model tiny-moe" in str(e.value) and "the same architecture" in str(e.value)
    with pytest.raises(XpuProfilerError) as e:  # an id the table does not know: no guess at the architecture
        resolve_model("someorg/SomeModel-7B")
    assert "someorg/SomeModel-7B" in str(e.value) and ", ".join(BUILTIN_MODELS) in str(e.value)


def test_offline_setting_skips_the_probe(hf_home, fake_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(XpuProfilerError, match="zai-org/GLM-5"):
        resolve_model("glm-5")
    assert fake_hub == []


def test_reachable_hub_passes_the_id_to_vllm(hf_home, fake_hub):
    assert resolve_model("glm-5") == ("zai-org/GLM-5", False)
    assert resolve_model("Qwen/Qwen3-0.6B") == ("Qwen/Qwen3-0.6B", False)
    assert fake_hub == ["/api/models/zai-org/GLM-5", "/api/models/Qwen/Qwen3-0.6B"]


def test_unknown_name_suggests_close_aliases(hf_home):
    with pytest.raises(XpuProfilerError) as e:
        resolve_model("glm-4.8")
    assert "not a built-in model" in str(e.value) and "glm-4.7" in str(e.value)


def test_cli_glm5_without_weights_is_one_line(tmp_path):
    """As a user types it on a machine that cannot download: exit 2, one line, nothing written."""
    env = vllm_env(tmp_path / "xpu")
    for k in HF_ENV:
        env.pop(k, None)
    env["HF_HOME"] = str(tmp_path / "hf")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    out = tmp_path / "profile_report.html"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "--model",
            "glm-5",
            "--device",
            "cpu",
            "--metrics",
            "execution_time,memory_usage,throughput",
            "--output",
            str(out),
            "--detail_level",
            "comprehensive",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "zai-org/GLM-5" in lines[0] and str(tmp_path / "hf" / "hub") in lines[0] and "tiny-glm" in lines[0]
    assert r.stdout == "" and not list(tmp_path.glob("profile_report*"))
