"""gen_trace's per-layer writer: a decoder layer of the model (norms, the QKV, output and
MLP projections as ``aten::linear`` over a GEMM kernel, rotary embedding, the KV cache write and
flash attention), as the host ops and launches of ``EventWriter``."""

from __future__ import annotations

from .trace_events import EventWriter
from .trace_tables import (
    BF16,
    EMPTY,
    FLOP_PER_NS,
    HBM_BYTES_PER_NS,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    INTER,
    KV_BYTES_PER_TOKEN_LAYER,
    KV_HEADS,
    QKV_N,
)


class LayerWriter(EventWriter):
    """The model pieces a step is made of."""

    # -- model pieces -----------------------------------------------------
    def gemm(self, T: int, N: int, K: int, bias: bool, splitk_ok: bool = False) -> None:
        """aten::linear > (aten::t > aten::transpose > aten::as_strided), aten::mm|addmm > kernel."""
        b = "[" + str(N) + "]" if bias else "[]"
        h = self.op_begin(
            "aten::linear",
            f"[[{T}, {K}], [{N}, {K}], {b}]",
            f"[{BF16}, {BF16}, {BF16 if bias else EMPTY}]",
            f"[[{K}, 1], [{K}, 1], {'[1]' if bias else '[]'}]",
            '["", "", ""]',
        )
        h2 = self.op_begin("aten::t", f"[[{N}, {K}]]", f"[{BF16}]", f"[[{K}, 1]]", '[""]')
        h3 = self.op_begin(
            "aten::transpose",
            f"[[{N}, {K}], [], []]",
            f'[{BF16}, "Scalar", "Scalar"]',
            f"[[{K}, 1], [], []]",
            '["", "0", "1"]',
        )
        self.leaf(
            "aten::as_strided",
            f"[[{N}, {K}], [], [], []]",
            f'[{BF16}, "", "", ""]',
            f"[[{K}, 1], [], [], []]",
            '["", "", "", ""]',
        )
        self.op_end(h3)
        self.op_end(h2)
        if bias:
            hm = self.op_begin(
                "aten::addmm",
                f"[[{N}], [{T}, {K}], [{K}, {N}], [], []]",
                f'[{BF16}, {BF16}, {BF16}, "Scalar", "Scalar"]',
                f"[[1], [{K}, 1], [1, {K}], [], []]",
                '["", "", "", "1", "1"]',
            )
        else:
            hm = self.op_begin(
                "aten::mm", f"[[{T}, {K}], [{K}, {N}]]", f"[{BF16}, {BF16}]", f"[[{K}, 1], [1, {K}]]", '["", ""]'
            )
        self.mem(T * N * 2)
        flops = 2.0 * T * N * K
        dur = max(N * K * 2 / HBM_BYTES_PER_NS, flops / FLOP_PER_NS) + 2500
        if T <= 16:
            key, tile = "gemm_small", (64, 64)
        elif T <= 256:
            key, tile = "gemm_mid", (64, 128)
        else:
            key, tile = "gemm_large", (128, 256)
        grid = ((N + tile[1] - 1) // tile[1], (T + tile[0] - 1) // tile[0], 1)
        if splitk_ok and T <= 16:
            self.launch(key, dur * 0.93, (grid[0], grid[1], 4))
            self.launch("splitk", 1800 + T * N / 400, ((N + 31) // 32, (T + 15) // 16, 1))
        else:
            self.launch(key, dur, grid)
        self.op_end(hm)
        self.op_end(h)

    def simple_op(self, name: str, key: str, dur_ns: float, grid: tuple, dims: str, n_in: int) -> None:
        h = self.op_begin(
            name,
            dims,
            "[" + ", ".join([BF16] * n_in) + "]",
            "[" + ", ".join(["[]"] * n_in) + "]",
            "[" + ", ".join(['""'] * n_in) + "]",
        )
        self.launch(key, dur_ns, grid)
        self.op_end(h)

    def layer(self, li: int, T: int, n_dec: int, ctx_sum: int, prefill_sq: int, topk: bool) -> None:
        tok_bytes = T * HIDDEN * 2
        norm_dur = 1800 + 2 * tok_bytes / HBM_BYTES_PER_NS
        rows = T
        if li == 0:
            self.simple_op(
                "_C::rms_norm",
                "rms_norm",
                norm_dur,
                (rows, 1, 1),
                f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
                3,
            )
        else:
            self.simple_op(
                "_C::fused_add_rms_norm",
                "fused_add_rms_norm",
                norm_dur * 1.5,
                (rows, 1, 1),
                f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
                3,
            )
        self.gemm(T, QKV_N, HIDDEN, bias=True)
        self.simple_op(
            "_C::rotary_embedding",
            "rotary",
            1500 + T * 6,
            (T, 1, 1),
            f"[[{T}], [{T}, {HIDDEN}], [{T}, {KV_HEADS * HEAD_DIM}], [], [131072, {HEAD_DIM}], []]",
            4,
        )
        self._attention(li, T, n_dec, ctx_sum, prefill_sq)
        self.gemm(T, HIDDEN, HIDDEN, bias=False)
        self._mlp(T, rows, norm_dur, topk)

    def _attention(self, li: int, T: int, n_dec: int, ctx_sum: int, prefill_sq: int) -> None:
        """vllm::unified_attention: the KV cache write, then flash attention (prefill or split-KV decode)."""
        h = self.op_begin(
            "vllm::unified_attention",
            f"[[{T}, {HIDDEN}], [{T}, {KV_HEADS * HEAD_DIM}], [{T}, {KV_HEADS * HEAD_DIM}], [{T}, {HIDDEN}], []]",
            f'[{BF16}, {BF16}, {BF16}, {BF16}, "std::string"]',
            "[[], [], [], [], []]",
            f'["", "", "", "", "\'model.layers.{li}.self_attn.attn\'"]',
        )
        h2 = self.op_begin(
            "_C_cache_ops::reshape_and_cache_flash",
            f"[[{T}, {KV_HEADS}, {HEAD_DIM}], [{T}, {KV_HEADS}, {HEAD_DIM}], [], [], [{T}], [], [], []]",
            f'[{BF16}, {BF16}, {BF16}, {BF16}, "long int", "std::string", "", ""]',
            "[[], [], [], [], [1], [], [], []]",
            '["", "", "", "", "", "\'auto\'", "", ""]',
        )
        self.launch("reshape_and_cache", 1500 + T * 4, (T, 1, 1))
        self.op_end(h2)
        self.leaf(
            "aten::empty",
            "[[], [], [], [], [], []]",
            '["", "", "", "", "", ""]',
            "[[], [], [], [], [], []]",
            '["", "", "", "", "", ""]',
        )
        self.mem(T * HIDDEN * 2)
        h3 = self.op_begin(
            "_vllm_fa2_C::varlen_fwd",
            f"[[{T}, {HEADS}, {HEAD_DIM}], [], [], [{T}, {HEADS}, {HEAD_DIM}]]",
            f"[{BF16}, {BF16}, {BF16}, {BF16}]",
            "[[], [], [], []]",
            '["", "", "", ""]',
        )
        if prefill_sq:
            dur = (
                3000
                + prefill_sq * HEADS * HEAD_DIM * 4 / FLOP_PER_NS
                + ctx_sum * KV_BYTES_PER_TOKEN_LAYER / HBM_BYTES_PER_NS
            )
            self.launch("flash_prefill", dur, ((T + 127) // 128, HEADS, 1))
        else:
            dur = 4000 + ctx_sum * KV_BYTES_PER_TOKEN_LAYER / HBM_BYTES_PER_NS
            self.launch("flash_splitkv", dur, (1, HEADS, max(1, n_dec) * 4))
            self.launch("flash_combine", 2000 + n_dec * 30, (max(1, n_dec), HEADS, 1))
        self.op_end(h3)
        self.op_end(h)

    def _mlp(self, T: int, rows: int, norm_dur: float, topk: bool) -> None:
        """The post-attention norm, the MoE router's top-k (layer 0 of some steps) and the MLP."""
        self.simple_op(
            "_C::fused_add_rms_norm",
            "fused_add_rms_norm",
            norm_dur * 1.5,
            (rows, 1, 1),
            f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
            3,
        )
        if topk:
            self.simple_op(
                "_moe_C::topk_softmax",
                "topk_softmax",
                2600 + T * 2,
                ((T + 3) // 4, 1, 1),
                f"[[{T}, 8], [{T}, 8], [{T}, 8], [{T}, 64]]",
                4,
            )
        self.gemm(T, 2 * INTER, HIDDEN, bias=False)
        h = self.op_begin(
            "_C::silu_and_mul",
            f"[[{T}, {INTER}], [{T}, {2 * INTER}]]",
            f"[{BF16}, {BF16}]",
            f"[[{INTER}, 1], [{2 * INTER}, 1]]",
            '["", ""]',
        )
        self.mem(T * INTER * 2)
        self.launch("silu_and_mul", 1500 + T * INTER * 2 * 3 / HBM_BYTES_PER_NS, (T, 1, 1))
        self.op_end(h)
        self.gemm(T, HIDDEN, INTER, bias=False, splitk_ok=True)
        self.free_live(keep=2)
