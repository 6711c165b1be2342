"""A kernel name's *head*: the qualified function name that says which family it belongs to.

The family tables match their rows against heads, never against a whole name: template
arguments and parameter lists carry words of other families (the CUDA vector type ``int4`` in
``dpsk::ep::internode::dispatch<…>(int4*, …)``, ``(vllm::Fp8KVCacheDataType)1`` in an attention
kernel, ``cublasLtEpilogue`` in a GEMM epilogue's parameters).

``heads(name)`` gives ``(inner, outer)``:

- a demangled name loses its ``<…>`` template arguments, ``(…)`` argument lists, return type and
  lambda/operator components: ``void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(…)`` →
  ``vllm::fused_add_rms_norm_kernel``;
- an Itanium-mangled name (``_ZN5aiter24add_rmsnorm_quant_kernelI…``, as ROCm traces keep them)
  gives its nested name ``aiter::add_rmsnorm_quant_kernel``;
- a launcher template (``cutlass::device_kernel<X>``, ``ck_tile::kentry<N, X>``,
  ``at::native::vectorized_elementwise_kernel<4, Functor, …>``, ``…::enable_sm90_or_later<X>``)
  is unwrapped to its first type argument: ``inner`` is that argument's head, ``outer`` the
  launcher's (the same string when nothing is wrapped);
- a name of free words with no C++ signature (``add_11 Cmpt Exec``) is its own head, and so is
  a plain identifier (``nvjet_tst_64x64_…``, ``Cijk_Alik_…``, ``bmm_…_dynBatch_sm100f``, Triton
  kernels) is its own head: generated kernels carry their configuration in it.

Sources: the Itanium C++ ABI mangling grammar (itanium-cxx-abi.github.io/cxx-abi/abi.html
§5.1, ``<nested-name>``, ``<substitution>``); the launcher templates as their libraries define
them: NVIDIA/cutlass ``include/cutlass/device_kernel.h`` (``device_kernel``, ``Kernel``,
``Kernel2``), ROCm/composable_kernel ``include/ck_tile/host/kernel_launch.hpp`` (``kentry``),
pytorch ``aten/src/ATen/native/cuda/CUDALoops.cuh`` / ``Reduce.cuh`` (elementwise and reduce
launchers), Dao-AILab/flash-attention ``hopper/utils.h`` and vllm ``csrc/cutlass_extensions``
(``enable_sm90_or_later``-style guards).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: launcher templates whose first *type* template argument is the real kernel
WRAPPER = re.compile(
    r"^(cutlass::device_kernel|cutlass::Kernel2?|ck_tile::kentry|(\w+::)*enable_sm\d+\w*|"
    r"at::native::(\w*elementwise_kernel\w*|gpu_kernel_impl\w*|reduce_kernel|index_elementwise_kernel|"
    r"gpu_index_kernel)|rocprim::detail::trampoline_kernel)$"
)
_ID = re.compile(r"\d+")
_SUB = re.compile(r"S([0-9A-Z]*)_")
_OPERATOR = re.compile(r"operator(\(\)|<<=?|>>=?|<=>|<=|>=|<|>|\[\]|->\*?|[-+*/%^&|~!=,]+|\s+\w+)")
_LITERAL_ARG = re.compile(r"[-+]?\d+[ul]*|true|false|\(.*\)-?\d+[ul]*|&\S*")


def _read_nested(s: str, i: int, subs: list[str]) -> tuple[list[str], int, bool]:
    """An Itanium ``<nested-name>`` or ``<unqualified-name>`` at ``s[i]``: (parts, end, a
    template argument list follows)."""
    parts: list[str] = []
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKL":
            i += 1
    while i < len(s):
        if s.startswith("St", i):
            parts.append("std")
            i += 2
            continue
        m = _SUB.match(s, i) if s[i] == "S" else None
        if m:
            k = 0 if m.group(1) == "" else int(m.group(1), 36) + 1
            parts.append(subs[k] if k < len(subs) else "?")
            i = m.end()
            continue
        m = _ID.match(s, i)
        if not m:
            break
        n = int(m.group(0))
        ident = s[m.end() : m.end() + n]
        i = m.end() + n
        ident = "(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident
        parts.append(ident)
        if len(subs) < 64:
            subs.append(ident)
        if not nested:
            break
    return [p for p in parts if p != "(anonymous namespace)"], i, s.startswith("I", i)


def _mangled(s: str) -> tuple[str, str] | None:
    """(inner, outer) heads of an Itanium-mangled symbol, unwrapping launcher templates."""
    subs: list[str] = []
    parts, i, tmpl = _read_nested(s, 2, subs)
    if not parts:
        return None
    outer = inner = "::".join(parts)
    for _ in range(4):
        if not (tmpl and WRAPPER.match(inner)):
            break
        i += 1  # "I"
        while i < len(s) and s[i] == "L":  # literal arguments: Li2E, Lb1E
            e = s.find("E", i)
            i = e + 1 if e > 0 else len(s)
        parts, i, tmpl = _read_nested(s, i, subs)
        if not parts:
            break
        inner = "::".join(parts)
    return inner, outer


def strip_brackets(s: str) -> str:
    """``s`` without its ``<…>`` and ``(…)`` groups at any depth, anonymous namespaces, and
    operator names (``operator()`` → ``operator``)."""
    out: list[str] = []
    angle = paren = 0
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "(" and s.startswith("(anonymous namespace)", i):  # dropped with its "::"
            i += 23 if s.startswith("::", i + 21) else 21
            continue
        if c == "o" and s.startswith("operator", i):
            m = _OPERATOR.match(s, i)
            if m:
                if not angle and not paren:
                    out.append("operator")
                i = m.end()
                continue
        if c == "<":
            angle += 1
        elif c == ">" and angle:
            angle -= 1
        elif c == "(" and not angle:
            paren += 1
        elif c == ")" and not angle and paren:
            paren -= 1
        elif not angle and not paren:
            out.append(c)
        i += 1
    return "".join(out)


def qualified_head(name: str) -> str:
    """The qualified function name of a demangled kernel or op name; a name of free words
    (``add_11 Cmpt Exec``, no C++ signature) is its own head."""
    s = strip_brackets(name).replace(" const", "")
    words = s.split()
    if len(words) > 1 and "::" not in words[-1] and not any(c in name for c in "<("):
        return " ".join(words)
    q = words[-1] if words else name.strip()
    parts = [p for p in q.split("::") if p and not p.startswith(("{", "operator"))]
    return "::".join(parts) if parts else q


def _first_type_arg(s: str, head: str) -> str | None:
    """The text of the first template argument of ``head<…>`` in ``s`` that is no literal."""
    last = head.rsplit("::", 1)[-1]
    j = s.find(last + "<")
    if j < 0:
        return None
    i = start = j + len(last) + 1
    depth = 0
    args: list[str] = []
    while i < len(s):
        c = s[i]
        if c in "<(":
            depth += 1
        elif c in ">)":
            if depth == 0:
                args.append(s[start:i])
                break
            depth -= 1
        elif c == "," and depth == 0:
            args.append(s[start:i])
            start = i + 1
        i += 1
    for a in args:
        a = a.strip()
        if a and not _LITERAL_ARG.fullmatch(a):
            return a
    return None


@lru_cache(maxsize=65536)
def heads(name: str) -> tuple[str, str]:
    """(inner, outer) head of a kernel or op name (see the module doc)."""
    s = name.strip()
    if s.startswith("_Z"):
        got = _mangled(s)
        if got is not None:
            return got
    outer = qualified_head(s)
    inner, text = outer, s
    for _ in range(4):
        if not WRAPPER.match(inner):
            break
        arg = _first_type_arg(text, inner)
        if not arg:
            break
        text, inner = arg, qualified_head(arg)
    return inner, outer
