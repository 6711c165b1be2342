"""gen_trace's per-step writer: one engine step of vLLM (its batch drawn from the running
requests, the ``execute_context_..._generation_...`` range, input preparation, the layers, the
lm_head, then sampling outside the range) and how the running requests drift from step to step."""

from __future__ import annotations

from .trace_layers import LayerWriter
from .trace_tables import BF16, DEVICE, HBM_BYTES_PER_NS, HIDDEN, LAYERS, STREAM, VOCAB, _ts


class Gen(LayerWriter):
    """Simulates the worker thread and stream 7 through engine steps, writing events as it goes."""

    def step(self) -> None:
        phase, n_pre, pre, n_dec = self._draw_batch()
        dec_reqs = self.ctx_lens
        pre_tok = sum(pre)
        T = pre_tok + n_dec
        ctx_sum = sum(dec_reqs) + pre_tok
        prefill_sq = sum(p * p for p in pre)
        topk = (self.steps % 37) == 5
        name = f"execute_context_{n_pre}({pre_tok})_generation_{n_dec}({n_dec})"

        # scheduler gap before the worker starts the step
        self.t += self._jit(180_000, 0.5)
        self.phase = phase
        self.step_dev_first = None
        ann = self.annotation_begin(name)
        self._prepare_inputs(T, n_pre, n_dec)
        for li in range(LAYERS):
            self.layer(li, T, n_dec, ctx_sum, prefill_sq, topk and li == 0)
        self.simple_op(
            "_C::fused_add_rms_norm",
            "fused_add_rms_norm",
            1800 + 3 * T * HIDDEN * 2 / HBM_BYTES_PER_NS,
            (T, 1, 1),
            f"[[{T}, {HIDDEN}], [{T}, {HIDDEN}], [{HIDDEN}], []]",
            3,
        )
        n_seq = n_pre + n_dec
        self.gemm(n_seq, VOCAB, HIDDEN, bias=False)  # lm_head on the last token of each sequence
        if self.steps % 50 == 17:
            self.simple_op("vllm::all_reduce", "nccl_allreduce", 14_000 + n_seq * 20, (2, 1, 1), f"[[{n_seq}, 8]]", 1)
        self._end_step(name, ann, phase)

        # sampling runs outside the step range (a separate call in vLLM >= 0.12)
        self._sample(n_seq)

        # update the decode population
        self._update_population(phase, pre)
        self.flush()

    def _draw_batch(self) -> tuple[str, int, list[int], int]:
        """The step's phase, its prefill requests (their number and tokens) and its decode requests."""
        rng = self.rng
        r = rng.random()
        dec_reqs = self.ctx_lens
        if r < 0.06:
            phase = "prefill"
            n_pre = rng.choice((1, 1, 1, 2, 3, 4))
            pre = [rng.randint(64, 2048) for _ in range(n_pre)]
            n_dec = 0
        elif r < 0.10:
            phase = "mixed"
            n_pre = rng.choice((1, 1, 2))
            pre = [rng.randint(32, 1024) for _ in range(n_pre)]
            n_dec = len(dec_reqs)
        else:
            phase = "decode"
            n_pre = 0
            pre = []
            n_dec = len(dec_reqs)
        return phase, n_pre, pre, n_dec

    def _prepare_inputs(self, T: int, n_pre: int, n_dec: int) -> None:
        # prepare inputs: input ids, positions, slot mapping, block table
        for nbytes in (T * 8, T * 8, T * 8, max(1, n_pre + n_dec) * 256 * 4):
            h = self.op_begin(
                "aten::copy_",
                f"[[{T}], [{T}], []]",
                '["long int", "long int", "Scalar"]',
                "[[1], [1], []]",
                '["", "", "True"]',
            )
            self.memcpy_async("HtoD", nbytes)
            self.op_end(h)
        h = self.op_begin(
            "aten::embedding",
            f"[[{VOCAB}, {HIDDEN}], [{T}], [], [], []]",
            f'[{BF16}, "long int", "Scalar", "Scalar", "Scalar"]',
            f"[[{HIDDEN}, 1], [1], [], [], []]",
            '["", "", "-1", "False", "False"]',
        )
        self.mem(T * HIDDEN * 2)
        self.launch("embedding", 1500 + T * HIDDEN * 2 / HBM_BYTES_PER_NS, ((T + 3) // 4, 1, 1))
        self.op_end(h)

    def _end_step(self, name: str, ann, phase: str) -> None:
        """Closes the step's range and writes its ``gpu_user_annotation`` twin on the stream."""
        ann_ext = self.annotation_end(ann)
        dev_first, dev_last = self.step_dev_first, self.step_dev_last
        assert dev_first is not None  # the step launched device work (its lm_head gemm at least)
        self.gpu.append(
            f'  {{\n    "ph": "X", "cat": "gpu_user_annotation", "name": "{name}", "pid": {DEVICE}, '
            f'"tid": {STREAM},\n    "ts": {_ts(dev_first)}, "dur": {_ts(dev_last - dev_first)},\n'
            f'    "args": {{\n      "External id": {ann_ext}\n    }}\n  }}'
        )
        self._count("gpu_user_annotation")
        self.steps += 1
        self.steps_by_phase[phase] += 1

    def _sample(self, n_seq: int) -> None:
        self.phase = "unknown"
        h = self.op_begin(
            "aten::softmax",
            f"[[{n_seq}, {VOCAB}], [], []]",
            f'[{BF16}, "Scalar", ""]',
            f"[[{VOCAB}, 1], [], []]",
            '["", "-1", ""]',
        )
        self.launch("triton_softmax", 4000 + n_seq * VOCAB * 6 / HBM_BYTES_PER_NS, (n_seq, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin(
            "aten::argmax",
            f"[[{n_seq}, {VOCAB}], [], []]",
            '["float", "Scalar", "Scalar"]',
            f"[[{VOCAB}, 1], [], []]",
            '["", "-1", "False"]',
        )
        self.launch("triton_argmax", 3500 + n_seq * VOCAB * 4 / HBM_BYTES_PER_NS, (n_seq, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin("aten::zero_", f"[[{n_seq}, 64]]", '["int"]', "[[64, 1]]", '[""]')
        self.memset_async(n_seq * 64 * 4)
        self.op_end(h)
        h = self.op_begin(
            "aten::index_put_",
            f"[[{n_seq}, 64], [], [{n_seq}], []]",
            '["int", "", "int", "Scalar"]',
            "[[64, 1], [], [1], []]",
            '["", "", "", "False"]',
        )
        self.launch("triton_gather", 2500 + n_seq * 3, ((n_seq + 255) // 256, 1, 1), driver=True)
        self.op_end(h)
        h = self.op_begin(
            "aten::to",
            f"[[{n_seq}], [], [], [], [], [], []]",
            '["long int", "", "", "", "", "", ""]',
            "[[1], [], [], [], [], [], []]",
            '["", "", "", "", "False", "False", ""]',
        )
        self.memcpy_async("DtoH", n_seq * 8)
        self.stream_sync()
        self.op_end(h)
        self.free_live(keep=0)

    def _update_population(self, phase: str, pre: list[int]) -> None:
        rng = self.rng
        dec_reqs = self.ctx_lens
        for i in range(len(dec_reqs)):
            dec_reqs[i] += 1
        if phase != "decode":
            dec_reqs.extend(pre)
        # requests finish; the batch size drifts over 1..128
        target = self._batch_target()
        while len(dec_reqs) > target or (dec_reqs and rng.random() < 0.04):
            dec_reqs.pop(rng.randrange(len(dec_reqs)))
        if not dec_reqs:
            dec_reqs.append(rng.randint(16, 256))
        for _ in range(6):
            if len(dec_reqs) < target and rng.random() < 0.6:
                dec_reqs.append(rng.randint(64, 1500))

    def _batch_target(self) -> int:
        # slow oscillation between 1 and 128 running requests
        import math

        x = 0.5 + 0.5 * math.sin(self.steps / 23.0) * math.cos(self.steps / 61.0)
        return max(1, min(128, int(1 + 127 * x * x)))
