"""FLOPs of a GEMM host op from the input shapes a trace recorded (``record_shapes``).

torch.profiler's ``with_flops`` counts only its own aten formulas; vLLM's custom GEMMs
(``_C::onednn_mm`` on the CPU) get none, but with ``record_shapes`` their ``Input Dims``
are in the trace. One table: op name → which inputs hold (M, K) and N. Only *leaf*
GEMM ops are listed (``aten::linear``/``aten::matmul`` delegate to ``aten::mm``/``addmm``
and would count twice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

Dims = Sequence[Sequence[int]]


def _mm(a: int, b: int) -> Callable[[Dims], int | None]:
    """``out = x[a] @ w[b]``: x is (..., M, K), w is (K, N) (or batched (B, K, N))."""

    def f(d: Dims) -> int | None:
        x, w = d[a], d[b]
        if len(x) < 2 or len(w) < 2 or x[-1] != w[-2]:
            return None
        return 2 * prod(x) * w[-1]

    return f


def _out_x(d: Dims) -> int | None:
    """vLLM CPU GEMMs that take the output first: ``_C::onednn_mm(out[M, N], x[M, K],
    handler, bias)`` and, on CPUs with AMX, ``_C::weight_packed_linear(out[M, N], x[M, K],
    packed weight, bias, is_vnni)``."""
    out, x = d[0], d[1]
    if len(out) < 2 or len(x) < 2 or prod(out[:-1]) != prod(x[:-1]):
        return None
    return 2 * prod(x) * out[-1]


#: leaf GEMM op → FLOPs from its ``Input Dims``
SHAPE_FLOPS: dict[str, Callable[[Dims], int | None]] = {
    "aten::mm": _mm(0, 1),
    "aten::bmm": _mm(0, 1),
    "aten::addmm": _mm(1, 2),
    "aten::baddbmm": _mm(1, 2),
    "_C::onednn_mm": _out_x,
    "_C::weight_packed_linear": _out_x,
}


def flops_from_shapes(op: str, dims: object) -> int | None:
    """FLOPs of ``op`` from its recorded input shapes; None when unknown or malformed."""
    fn = SHAPE_FLOPS.get(op)
    if fn is None or not isinstance(dims, list) or len(dims) < 2:
        return None
    if not all(isinstance(x, list) and all(isinstance(v, int) and v >= 0 for v in x) for x in dims):
        return None
    try:
        n = fn(dims)
    except (IndexError, TypeError):
        return None
    return int(n) if n is not None and n >= 0 else None
