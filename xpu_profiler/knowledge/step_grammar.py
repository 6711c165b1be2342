"""Engine-step and graph-capture annotation names → request and token counts (pure functions).

Every form vLLM, its forks and its neighbours write as a ``user_annotation`` range:

==============  ==================================================================  =========
form            example                                                             family
==============  ==================================================================  =========
vllm            ``execute_context_1(7)_generation_3(3)``                            vllm
vllm_detailed   ``execute_10_context_1(sq7sk7sqsq49sqsk49)_generation_3(sq3sk..)``  vllm
                (the leading ``execute_{total}_`` is optional)
vllm_total      ``execute_10_context_1(7)_generation_3(3)`` (fork: total first)     vllm
vllm_total_raw  ``execute_10_context_1(..)_generation_3(..)`` (other contents)      vllm
vllm_old        ``execute_new_1_cached_3`` (requests only)                          vllm
vllm_quad       ``execute_context_1(888_788544)_generation_0(0)`` (tokens, then      vllm
                their square sum: a pre-upstream variant)
sglang          ``step[DECODE bs=32]``, ``step[EXTEND bs=2 toks=14721 c_sq=..]``    sglang
                (every forward mode: ``SGLANG_MODES``, roofline suffixes included)
atom            ``decode[bs=64 tok=64 d=64]``, ``prefill[bs=2 tok=14721 ctx=[..]]``  atom
trtllm          ``[Executor] _forward_step 12: 2 ctx reqs, 900 ctx tokens, 5 gen reqs``  trtllm
                (TensorRT-LLM's per-iteration NVTX range; older releases without the
                ``[Executor]`` prefix, the iteration or the ``ctx tokens`` field)
capture         ``capture_{num_tokens}_{MODE}`` (vLLM, SGLang graph capture)         capture
profiler_step   ``ProfilerStep#12`` (no token information)                          profiler
==============  ==================================================================  =========

Tokens are taken as written: a speculative-decoding step has more generation
tokens than generation requests (``generation_4(16)``: 4 requests, 16 tokens);
nothing is clamped. ``exact`` is False where the split between prefill and decode
tokens had to be inferred (``vllm_total_raw``, ``vllm_old``, SGLang without
``toks``/``*_sq``).

``FAMILY_PRIORITY`` says which family defines the engine steps when a trace has
several (SGLang writes both ``execute_…`` and ``step[…]`` around the same step):
the aggregator keeps the best-ranked family present. ``capture`` ranges are not
engine steps; ``xpu_profiler.aggregate.graphs`` reads them. The vLLM forms are one
grammar: ``execute_[{total}_]context_{n}(body)_generation_{n}(body)``, whatever each
body holds (tokens, tokens and aggregates, keyed fields); only the form's name records
which spelling it was.

Without annotations, python-stack frames (``with_stack``) mark steps: ``STEP_FRAME``
names the engines' per-step worker calls, the sampling call split out of them and the
dummy runs that are no step (``xpu_profiler.aggregate.steps.frames``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple


class StepName(NamedTuple):
    form: str
    family: str
    prefill_reqs: int = 0
    prefill_tokens: int = 0
    decode_reqs: int = 0
    decode_tokens: int = 0
    total_tokens: int = 0  # scheduled tokens; for a capture, the graph's token count
    exact: bool = True  # False: the prefill/decode token split is inferred
    capture_mode: str = ""  # FULL, PIECEWISE, DECODE...: captures only
    step: int = -1  # ProfilerStep#N only
    #: the name carried request or token counts no step can have (more than ``PLAUSIBLE``): those
    #: are left out (0) and the analysis warns; the step is a step
    absurd: bool = False
    #: the phase the name states where its counts do not tell it (SGLang's ``step[MIXED bs=N]``:
    #: a mixed batch whose split between prefill and decode requests is not written)
    stated_phase: str = ""

    @property
    def phase(self) -> str:
        """prefill / decode / mixed / unknown (no requests)."""
        if self.stated_phase:
            return self.stated_phase
        if self.prefill_reqs and self.decode_reqs:
            return "mixed"
        if self.prefill_reqs:
            return "prefill"
        if self.decode_reqs:
            return "decode"
        return "unknown"

    @property
    def tokens_per_decode_req(self) -> float:
        """> 1 under speculative decoding (draft tokens verified per request)."""
        return self.decode_tokens / self.decode_reqs if self.decode_reqs else 0.0


MAX_COUNT = 1 << 53  # larger request, token or step counts are no real step's (and overflow int64 columns)
#: more requests or tokens than this in one step is no count but a writer's mistake (4 billion: far
#: past any batch; vLLM's quadratic aggregate, ``total_tokens``, is not held to it)
PLAUSIBLE = 1 << 32

FAMILY_PRIORITY = {"vllm": 0, "sglang": 1, "atom": 2, "trtllm": 3, "profiler": 4}

# vLLM and its forks, one grammar for the family: ``execute_[{total}_]context_{n}(B)_generation_{n}(B)``
# whose bodies B are: tokens (``7``), tokens then their aggregates (``888_788544``), the keyed
# detailed form (``sq7sk7sqsq49sqsk49``: sq = scheduled tokens; other keys may follow), or anything
# else (only the total, when written, then gives tokens)
#: python-stack frames that are step evidence: vLLM's per-step ``execute_model`` (worker and
#: model runner), the ``sample_tokens`` call split out of it in newer builds, ``_dummy_run``
#: (data-parallel dummy batches, graph capture: no step), SGLang's ``forward_batch_generation``
STEP_FRAME = re.compile(r"\.py\(\d+\): (execute_model|sample_tokens|_dummy_run|forward_batch_generation)$")
#: python frames whose file lies in an engine's source tree: which engine ran
_ENGINE_TREE = re.compile(r"(?:^|[/\\])(vllm|sglang|vllm_ascend|vllm_kunlun|tensorrt_llm)[/\\]")
ENGINE_OF_TREE = {
    "vllm": "vllm",
    "vllm_ascend": "vllm",
    "vllm_kunlun": "vllm",
    "sglang": "sglang",
    "tensorrt_llm": "other",
}


def frame_engine(name: str) -> str | None:
    """The engine whose source tree a python frame (``path/file.py(N): fn``) is in, None."""
    m = _ENGINE_TREE.search(name)
    return ENGINE_OF_TREE[m.group(1)] if m else None


_VLLM = re.compile(r"^execute_(?:(\d+)_)?context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)$")
_BODY_PLAIN = re.compile(r"^(\d+)$")
_BODY_QUAD = re.compile(r"^(\d+)(?:_\d+)+$")
_BODY_KEYED = re.compile(r"^sq(\d+)(?:[a-z]+\d+)*$")
_VLLM_OLD = re.compile(r"^execute_new_(\d+)_cached_(\d+)$")
# SGLang ``step[MODE bs=.. toks=.. c_sq=.. g_sq=..]``: every ForwardMode the scheduler writes
_SGLANG = re.compile(r"^step\[([A-Z][A-Z0-9_]*)((?:\s[^\]]*)?)\]$")
#: SGLang forward modes → the phase their requests are in; IDLE (a data-parallel rank with
#: nothing to run) is an empty step
SGLANG_MODES = {
    "DECODE": "decode",
    "TARGET_VERIFY": "decode",  # speculative decoding: the target model verifies drafted tokens
    "DRAFT_EXTEND": "decode",  # ... and the draft model extends over the accepted ones
    "DRAFT_EXTEND_V2": "decode",
    "EXTEND": "prefill",
    "PREFILL": "prefill",
    "SPLIT_PREFILL": "prefill",  # a prefill split into layer chunks (PD multiplexing)
    "DLLM_EXTEND": "prefill",  # diffusion language models: a block extend
    "PREBUILT": "prefill",  # disaggregated decode: requests whose KV cache arrived prebuilt
    "MIXED": "mixed",
    "IDLE": "",
}
_ATOM = re.compile(r"^(prefill|decode)\[(.*)\]$")
#: TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/py_executor.py`` ``_forward_step``'s range (domain
#: "TensorRT-LLM"): ``f"[Executor] _forward_step {iter}: {n} ctx reqs, {t} ctx tokens, {m} gen reqs"``;
#: earlier releases wrote ``_forward_step: {n} ctx reqs, {m} gen reqs``, then added the prefix and
#: the iteration
_TRTLLM = re.compile(
    r"^(?:\[Executor\] )?_forward_step(?: (\d+))?: (\d+) ctx reqs,(?: (\d+) ctx tokens,)? (\d+) gen reqs$"
)
_CAPTURE = re.compile(r"^capture_(\d+)_([A-Za-z][A-Za-z0-9_]*)$")
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_KV = re.compile(r"(\w+)=(\d+)")


def _body(text: str) -> tuple[str, int] | None:
    """(kind, tokens) of one request group's body; None when it gives no tokens."""
    for kind, rx in (("plain", _BODY_PLAIN), ("quad", _BODY_QUAD), ("keyed", _BODY_KEYED)):
        m = rx.match(text)
        if m:
            return kind, int(m.group(1))
    return None


def _vllm(m: re.Match[str]) -> StepName | None:
    total_s, pr_s, ctx, dr_s, gen = m.groups()
    pr, dr = int(pr_s), int(dr_s)
    total = int(total_s) if total_s is not None else None
    ctx_b, gen_b = _body(ctx), _body(gen)
    if ctx_b is None or gen_b is None:
        if total is None:
            return None  # neither the bodies nor a total say how many tokens
        # only the total is known: each generation request schedules at least one token
        dec = min(dr, total) if pr else total
        return StepName("vllm_total_raw", "vllm", pr, total - dec, dr, dec, total, exact=False)
    (kc, pt), (kg, dt) = ctx_b, gen_b
    kinds = {kc, kg}
    form = (
        "vllm_detailed"
        if "keyed" in kinds
        else "vllm_quad"
        if "quad" in kinds
        else "vllm_total"
        if total is not None
        else "vllm"
    )
    return StepName(form, "vllm", pr, pt, dr, dt, total if total is not None else pt + dt)


def _vllm_old(m: re.Match[str]) -> StepName:
    pr, dr = (int(x) for x in m.groups())
    return StepName("vllm_old", "vllm", pr, 0, dr, 0, 0, exact=False)


def _sglang(m: re.Match[str]) -> StepName | None:
    mode, kv = m.group(1), {k: int(v) for k, v in _KV.findall(m.group(2))}
    phase = SGLANG_MODES.get(mode)
    if phase is None:
        return None  # a mode this grammar does not know: no step of ours
    bs, toks = kv.get("bs", 0), kv.get("toks", 0)
    if phase == "decode":
        dt = kv.get("g_sq", 0) or toks or bs  # MTP / speculative: g_sq > bs
        return StepName("sglang", "sglang", 0, 0, bs, dt, dt, exact="g_sq" in kv or "toks" in kv)
    if phase == "prefill":
        pt = kv.get("c_sq", 0) or toks
        return StepName("sglang", "sglang", bs, pt, 0, 0, pt, exact=bool(pt))
    if phase == "mixed":
        c, g = kv.get("c", 0), kv.get("g", 0)
        pt, dt = kv.get("c_sq", 0), kv.get("g_sq", 0)
        if not (c or g):  # only the batch size: a mixed step whose split of requests is unknown
            return StepName("sglang", "sglang", 0, toks, 0, 0, toks, exact=False, stated_phase="mixed" if bs else "")
        return StepName("sglang", "sglang", c, pt, g, dt, pt + dt or toks, exact=bool(pt or dt))
    return StepName("sglang", "sglang")  # IDLE


def _atom(m: re.Match[str]) -> StepName:
    phase, body = m.group(1), m.group(2)
    bs_m = re.search(r"\bbs=(\d+)", body)  # bs=117/128: the real batch, then the graph's padding
    bs = int(bs_m.group(1)) if bs_m else 0
    kv = {k: int(v) for k, v in _KV.findall(body)}
    tok = kv.get("tok", 0)
    if phase == "prefill":
        return StepName("atom", "atom", bs, tok, 0, 0, tok)
    p, d = kv.get("p", 0), kv.get("d", bs)
    if not p:
        return StepName("atom", "atom", 0, 0, d, tok, tok)
    dt = min(tok, d * (1 + kv.get("spec", 0)))
    return StepName("atom", "atom", p, tok - dt, d, dt, tok, exact=False)


def _trtllm(m: re.Match[str]) -> StepName:
    """Generation requests decode one token each (more under speculative decoding, which the
    range does not say: the split is exact only when it gives the context tokens)."""
    it, ctx, ctx_tok, gen = m.groups()
    n, g = int(ctx), int(gen)
    pt = int(ctx_tok) if ctx_tok is not None else 0
    exact = ctx_tok is not None or n == 0
    step = int(it) if it is not None else -1
    return StepName("trtllm", "trtllm", n, pt, g, g, pt + g, exact=exact, step=step)


def _capture(m: re.Match[str]) -> StepName:
    n = int(m.group(1))
    return StepName("capture", "capture", total_tokens=n, capture_mode=m.group(2).upper())


def _profiler_step(m: re.Match[str]) -> StepName:
    return StepName("profiler_step", "profiler", step=int(m.group(1)))


_FORMS = (
    (_VLLM, _vllm),
    (_VLLM_OLD, _vllm_old),
    (_SGLANG, _sglang),
    (_ATOM, _atom),
    (_TRTLLM, _trtllm),
    (_CAPTURE, _capture),
    (_PROFILER_STEP, _profiler_step),
)


def parse_step_name(name: str) -> StepName | None:
    """The counts an annotation name carries, or None when it is no step or capture name."""
    if not name or name[0] not in "escpdP[_":  # cheap reject: most annotations are other ranges
        return None
    for rx, build in _FORMS:
        m = rx.match(name)
        if m:
            try:
                parsed = build(m)
            except ValueError:  # more digits than int() converts
                return None
            if parsed is None:
                return None
            if any(abs(v) >= PLAUSIBLE for v in parsed[2:6]):  # the step is one, those counts are not
                pr, pt, dr, dt = (0 if abs(v) >= PLAUSIBLE else v for v in parsed[2:6])
                parsed = parsed._replace(
                    prefill_reqs=pr, prefill_tokens=pt, decode_reqs=dr, decode_tokens=dt, total_tokens=0, absurd=True
                )
            # a step number or aggregate no engine step can have (beyond int64) makes it no step name
            return parsed if abs(parsed.total_tokens) < MAX_COUNT and abs(parsed.step) < MAX_COUNT else None
    return None


def parse_step_names(names: Iterable[str]) -> dict[str, StepName]:
    """Parse many (distinct) names; only the ones that parse are returned."""
    out = {}
    for n in names:
        s = parse_step_name(n)
        if s is not None:
            out[n] = s
    return out


def step_family(parsed: Iterable[StepName]) -> str | None:
    """The family that defines engine steps in a trace with these names (capture ranges never do)."""
    fams = {p.family for p in parsed if p.family in FAMILY_PRIORITY}
    return min(fams, key=FAMILY_PRIORITY.__getitem__) if fams else None
