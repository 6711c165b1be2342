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
atom            ``decode[bs=64 tok=64 d=64]``, ``prefill[bs=2 tok=14721 ctx=[..]]``  atom
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
engine steps; ``xpu_profiler.aggregate.graphs`` reads them.
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

    @property
    def phase(self) -> str:
        """prefill / decode / mixed / unknown (no requests)."""
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

FAMILY_PRIORITY = {"vllm": 0, "sglang": 1, "atom": 2, "profiler": 3}

_VLLM = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
# a pre-upstream variant: each token count followed by its quadratic aggregate (888_788544: 888 tokens, 888²)
_VLLM_QUAD = re.compile(r"^execute_context_(\d+)\((\d+)(?:_\d+)?\)_generation_(\d+)\((\d+)(?:_\d+)?\)$")
_VLLM_DETAILED = re.compile(
    r"^execute_(?:(\d+)_)?context_(\d+)\(sq(\d+)sk\d+sqsq\d+sqsk\d+\)"
    r"_generation_(\d+)\(sq(\d+)sk\d+sqsq\d+sqsk\d+\)$"
)
_VLLM_TOTAL = re.compile(r"^execute_(\d+)_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
_VLLM_TOTAL_RAW = re.compile(r"^execute_(\d+)_context_(\d+)\(([^)]*)\)_generation_(\d+)\(([^)]*)\)$")
_VLLM_OLD = re.compile(r"^execute_new_(\d+)_cached_(\d+)$")
_SGLANG = re.compile(r"^step\[(EXTEND|DECODE|MIXED|PREFILL|IDLE)\b([^\]]*)\]$")
_ATOM = re.compile(r"^(prefill|decode)\[(.*)\]$")
_CAPTURE = re.compile(r"^capture_(\d+)_([A-Za-z][A-Za-z0-9_]*)$")
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_KV = re.compile(r"(\w+)=(\d+)")


def _vllm(m: re.Match) -> StepName:
    pr, pt, dr, dt = (int(x) for x in m.groups())
    return StepName("vllm", "vllm", pr, pt, dr, dt, pt + dt)


def _vllm_quad(m: re.Match) -> StepName:
    pr, pt, dr, dt = (int(x) for x in m.groups())
    return StepName("vllm_quad", "vllm", pr, pt, dr, dt, pt + dt)


def _vllm_detailed(m: re.Match) -> StepName:
    pr, pt, dr, dt = (int(x) for x in m.groups()[1:])
    total = int(m.group(1)) if m.group(1) is not None else pt + dt  # the total in front is optional
    return StepName("vllm_detailed", "vllm", pr, pt, dr, dt, total)


def _vllm_total(m: re.Match) -> StepName:
    total, pr, pt, dr, dt = (int(x) for x in m.groups())
    return StepName("vllm_total", "vllm", pr, pt, dr, dt, total)


def _vllm_total_raw(m: re.Match) -> StepName:
    total, pr, ctx, dr, gen = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)), m.group(5)
    sq = [re.match(r"sq(\d+)", g) for g in (ctx, gen)]
    if sq[0] and sq[1]:  # the detailed contents in another spelling: tokens are known
        return StepName("vllm_total_raw", "vllm", pr, int(sq[0].group(1)), dr, int(sq[1].group(1)), total)
    # only the total is known: each generation request schedules at least one token
    dec = min(dr, total) if pr else total
    return StepName("vllm_total_raw", "vllm", pr, total - dec, dr, dec, total, exact=False)


def _vllm_old(m: re.Match) -> StepName:
    pr, dr = (int(x) for x in m.groups())
    return StepName("vllm_old", "vllm", pr, 0, dr, 0, 0, exact=False)


def _sglang(m: re.Match) -> StepName:
    mode, kv = m.group(1), {k: int(v) for k, v in _KV.findall(m.group(2))}
    bs, toks = kv.get("bs", 0), kv.get("toks", 0)
    if mode == "DECODE":
        dt = kv.get("g_sq", 0) or toks or bs  # MTP / speculative: g_sq > bs
        return StepName("sglang", "sglang", 0, 0, bs, dt, dt, exact="g_sq" in kv or "toks" in kv)
    if mode in ("EXTEND", "PREFILL"):
        pt = kv.get("c_sq", 0) or toks
        return StepName("sglang", "sglang", bs, pt, 0, 0, pt, exact=bool(pt))
    if mode == "MIXED":
        c, g = kv.get("c", 0), kv.get("g", 0)
        pt, dt = kv.get("c_sq", 0), kv.get("g_sq", 0)
        if not (c or g):  # only the batch size: the split is unknown
            return StepName("sglang", "sglang", bs, toks, 0, 0, toks, exact=False)
        return StepName("sglang", "sglang", c, pt, g, dt, pt + dt or toks, exact=bool(pt or dt))
    return StepName("sglang", "sglang")  # IDLE


def _atom(m: re.Match) -> StepName:
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


def _capture(m: re.Match) -> StepName:
    n = int(m.group(1))
    return StepName("capture", "capture", total_tokens=n, capture_mode=m.group(2).upper())


def _profiler_step(m: re.Match) -> StepName:
    return StepName("profiler_step", "profiler", step=int(m.group(1)))


# most specific first: the detailed vLLM form before the raw one that also matches it
_FORMS = (
    (_VLLM, _vllm),
    (_VLLM_QUAD, _vllm_quad),
    (_VLLM_DETAILED, _vllm_detailed),
    (_VLLM_TOTAL, _vllm_total),
    (_VLLM_TOTAL_RAW, _vllm_total_raw),
    (_VLLM_OLD, _vllm_old),
    (_SGLANG, _sglang),
    (_ATOM, _atom),
    (_CAPTURE, _capture),
    (_PROFILER_STEP, _profiler_step),
)


def parse_step_name(name: str) -> StepName | None:
    """The counts an annotation name carries, or None when it is no step or capture name."""
    if not name or name[0] not in "escpdP":  # cheap reject: most annotations are other ranges
        return None
    for rx, build in _FORMS:
        m = rx.match(name)
        if m:
            try:
                parsed = build(m)
            except ValueError:  # more digits than int() converts
                return None
            # a count no engine step can have (more digits than int64) makes it no step name
            counts = parsed[2:7] + (parsed.step,)
            return parsed if all(abs(v) < MAX_COUNT for v in counts) else None
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
