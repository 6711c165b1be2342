"""``analyze --model CONFIG.json`` with sizes no model has (text, NaN, Infinity, fractions,
negatives, numbers past any real model): one line naming the file and the field, exit 2, never
a traceback or a loop over a trillion layers; a recorded config is held to the same rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_line_error, run

from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.testing.trace_file import generate

BASE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("model_cfg") / "run.json"
    generate(3000, str(p))
    return p


@pytest.mark.parametrize(
    "extra, said",
    [
        ('"vocab_size": Infinity', "vocab_size must be a whole number from 1 to 2,147,483,648, not inf"),
        ('"hidden_size": NaN', "hidden_size must be a whole number from 1 to 2,147,483,648, not nan"),
        ('"vocab_size": 1' + "0" * 30, "vocab_size must be a whole number from 1 to 2,147,483,648, not 1" + "0" * 30),
        ('"num_hidden_layers": 1000000000000', "num_hidden_layers must be a whole number from 1 to 10,000"),
        ('"num_hidden_layers": 1000000000, "num_experts": 8', "num_hidden_layers must be a whole number from 1"),
        ('"num_experts": 8, "first_k_dense_replace": -1000000000000', "first_k_dense_replace must be a whole number"),
        ('"num_hidden_layers": 27.9', "num_hidden_layers must be a whole number from 1 to 10,000, not 27.9"),
        ('"num_hidden_layers": true', "num_hidden_layers must be a whole number from 1 to 10,000, not True"),
        ('"hidden_size": "3584"', "hidden_size must be a whole number from 1 to 2,147,483,648, not '3584'"),
        ('"num_key_value_heads": 0', "num_key_value_heads must be a whole number from 1 to 2,147,483,648, not 0"),
    ],
)
def test_an_odd_size_in_a_model_config_is_one_line_naming_it(extra, said, trace, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(BASE)[:-1] + ", " + extra + "}")  # (NaN and Infinity as JSON readers take them)
    r = run("analyze", trace, "--model", cfg, "-o", tmp_path / "o.summary.json", cwd=tmp_path, timeout=120)
    assert one_line_error(r).startswith(f"xpu_profiler: error: {cfg}: {said}"), r.stderr
    assert not (tmp_path / "o.summary.json").exists()


def test_a_sane_config_passes_and_a_recorded_odd_one_is_refused_too(tmp_path):
    from xpu_profiler.aggregate.model_cost import check_model_config, model_config

    assert check_model_config(dict(BASE), "x") == BASE
    assert check_model_config({**BASE, "sliding_window": None, "head_dim": 128}, "x")["head_dim"] == 128
    text = {"text_config": {**BASE, "vocab_size": -1}}
    with pytest.raises(XpuProfilerError, match=r"^the model config: text_config\.vocab_size must be a whole number"):
        model_config({"model_config": text})  # type: ignore[arg-type]
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "num_hidden_layers": 10**12}))
    with pytest.raises(XpuProfilerError, match=r"config\.json: num_hidden_layers must be a whole number from 1"):
        model_config({"model_path": str(tmp_path)})  # type: ignore[arg-type]
