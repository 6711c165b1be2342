"""Built-in small models of real architectures, for machines without weights or accelerators.

Each built-in model is a directory holding a Hugging Face ``config.json`` and a
small tokenizer (``tokenizer.json`` trained with the ``tokenizers`` library on
generated text, plus ``tokenizer_config.json``). It carries no weights: vLLM
loads it with ``load_format="dummy"`` (random weights). The directory is
created on first use under the cache dir (``$XPU_PROFILER_CACHE/models/NAME``,
default ``~/.cache/xpu_profiler/models/NAME``) and rebuilt when its recipe
version changes.

- ``tiny-llama``: ``LlamaForCausalLM``, 4 layers, hidden 256, GQA 4/2 heads.
- ``tiny-moe``: ``Qwen3MoeForCausalLM``, 2 layers, 8 experts (top-2), so
  vLLM's fused-MoE path runs.
- ``tiny-glm``: ``Glm4MoeForCausalLM`` (GLM-4.5/4.6/4.7), 4 layers: the first
  dense (``first_k_dense_replace``), then MoE layers of 8 routed experts (top-2,
  sigmoid routing with a correction bias) plus one shared expert; GQA 4/2 heads
  with QKV bias, QK-norm and half-rotary RoPE. GLM-5's ``GlmMoeDsaForCausalLM``
  is not used: its DeepSeek sparse attention (DSA) does not run on vLLM's CPU
  build ("Sparse Attention is not supported on CPU").
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

from ...core.errors import XpuProfilerError

#: bump when a config or the tokenizer recipe changes: cached dirs are rebuilt
RECIPE_VERSION = 1

VOCAB_SIZE = 2048
MAX_POSITIONS = 4096
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>"]

_COMMON = {
    "vocab_size": VOCAB_SIZE,
    "max_position_embeddings": MAX_POSITIONS,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 3,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "initializer_range": 0.02,
    "attention_bias": False,
    "attention_dropout": 0.0,
}

BUILTIN_CONFIGS: dict[str, dict] = {
    "tiny-llama": {
        **_COMMON,
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "mlp_bias": False,
    },
    "tiny-moe": {
        **_COMMON,
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": 256,
        "intermediate_size": 512,
        "moe_intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "norm_topk_prob": True,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "output_router_logits": False,
        "router_aux_loss_coef": 0.001,
        "sliding_window": None,
        "use_sliding_window": False,
        "max_window_layers": 2,
    },
    "tiny-glm": {
        **_COMMON,
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "hidden_size": 256,
        "intermediate_size": 512,  # the dense layers' MLP
        "moe_intermediate_size": 128,  # each routed and shared expert
        "num_hidden_layers": 4,
        "first_k_dense_replace": 1,  # layer 0 dense, layers 1-3 MoE
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "partial_rotary_factor": 0.5,
        "attention_bias": True,
        "use_qk_norm": True,
        "hidden_act": "silu",
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "routed_scaling_factor": 2.5,
        "n_group": 1,
        "topk_group": 1,
        "norm_topk_prob": True,
        "num_nextn_predict_layers": 0,
    },
}

BUILTIN_MODELS = tuple(BUILTIN_CONFIGS)


def cache_dir() -> Path:
    root = os.environ.get("XPU_PROFILER_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "xpu_profiler"
    return base / "models"


def _corpus(n_lines: int = 4000, seed: int = 0) -> list[str]:
    """Deterministic pseudo-English text to train the tokenizer on."""
    rng = random.Random(seed)
    syllables = [
        "ka",
        "lu",
        "mi",
        "ren",
        "to",
        "sa",
        "vel",
        "or",
        "in",
        "ta",
        "pro",
        "fil",
        "er",
        "de",
        "co",
        "mp",
        "ute",
        "st",
        "ep",
        "ke",
        "rn",
        "el",
        "at",
        "ion",
        "de",
        "cod",
        "pre",
        "fill",
        "mem",
        "ory",
        "xp",
        "u",
        "gr",
        "aph",
        "th",
        "e",
    ]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(1500)})
    words += [
        "the",
        "a",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "with",
        "as",
        "on",
        "profile",
        "kernel",
        "step",
        "token",
        "model",
        "device",
        "time",
    ]
    lines = []
    for _ in range(n_lines):
        k = rng.randint(4, 20)
        s = " ".join(rng.choice(words) for _ in range(k))
        if rng.random() < 0.3:
            s = s.capitalize() + rng.choice([".", ",", "!", "?", ";"]) + " " + str(rng.randint(0, 9999))
        lines.append(s)
    return lines


def build_tokenizer(out_dir: Path, vocab_size: int = VOCAB_SIZE) -> None:
    """Train a small byte-level BPE tokenizer and write tokenizer.json + tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tok.save(str(out_dir / "tokenizer.json"))
    tok_cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MAX_POSITIONS,
        # a minimal chat template so chat endpoints work too
        "chat_template": "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}",
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
    (out_dir / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, indent=2)
    )


def _stamp(name: str) -> dict:
    return {"name": name, "recipe": RECIPE_VERSION, "config": BUILTIN_CONFIGS[name]}


def ensure_builtin(name: str) -> Path:
    """Create (once) and return the directory of built-in model ``name``."""
    if name not in BUILTIN_CONFIGS:
        raise XpuProfilerError(f"unknown built-in model {name!r} (built-in: {', '.join(BUILTIN_MODELS)})")
    target = cache_dir() / name
    stamp_file = target / "xpu_profiler_model.json"
    want = _stamp(name)
    try:
        if json.loads(stamp_file.read_text()) == want and (target / "tokenizer.json").is_file():
            return target
    except (OSError, ValueError):
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    # build in a sibling temp dir and rename: concurrent builders never see a half-made model
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        cfg = dict(BUILTIN_CONFIGS[name])
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
        (tmp / "generation_config.json").write_text(
            json.dumps({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3}, indent=2)
        )
        build_tokenizer(tmp)
        (tmp / "xpu_profiler_model.json").write_text(json.dumps(want, indent=2))
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{name}.old.", dir=target.parent))
            try:
                os.replace(target, old / name)
            except OSError:
                pass
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            # another process won the race; use its copy if it is complete
            if not (target / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
