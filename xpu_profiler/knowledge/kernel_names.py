"""Kernel and op names: C++ demangling, argument-list stripping, short display names.

One place for what every reader and output does to a name: the readers demangle
``_Z…`` symbols once per distinct name (``demangle_names``), the report and the
terminal shorten long template names for display (``short_name``); both drop a
trailing C++ argument list the same way (``strip_call_args``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
from collections.abc import Callable

from ..core.profile import K_MEMCPY, K_MEMSET

SHORT_NAME_LEN = 72
_TEMPLATE_ARGS = re.compile(r"(?<=[\w:\x00])<(?!/)[^<>]*>")  # innermost ``ident<...>``


def strip_call_args(s: str) -> str:
    """``void ns::k<T>(T*, int)`` → ``void ns::k<T>``: drop a trailing argument list.

    Only a list attached to the name counts (no space before its ``(``):
    ``Memcpy HtoD (Pageable -> Device)`` stays whole.
    """
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return (s[:i].rstrip() or s) if i > 0 and not s[i - 1].isspace() else s
    return s


def short_name(name: str, limit: int = SHORT_NAME_LEN) -> str:
    """A readable kernel name of at most ``limit`` chars.

    Drops a ``void`` return type and a trailing argument list, then collapses
    template arguments innermost first, only as far as needed to fit, and finally
    cuts the middle out.
    """
    s = strip_call_args(re.sub(r"^\s*void\s+", "", (name or "").strip())).strip() or (name or "")
    while len(s.replace("\x00", "<…>")) > limit:
        t = _TEMPLATE_ARGS.sub("\x00", s)
        if t == s:
            break
        s = t
    s = s.replace("\x00", "<…>")
    if len(s) > limit:
        keep = limit - 1
        s = s[: keep - keep // 3] + "…" + s[len(s) - keep // 3 :]
    return s


# -- demangling ----------------------------------------------------------------------


def _cxa_demangle() -> Callable[[str], str | None] | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(None)
        fn = lib.__cxa_demangle
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free = libc.free
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
    except (OSError, AttributeError):
        return None

    def demangle(name: str) -> str | None:
        status = ctypes.c_int(0)
        p = fn(name.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
        if not p:
            return None
        try:
            return ctypes.string_at(p).decode("utf-8", "replace")
        finally:
            free(p)

    return demangle


_DEMANGLE = _cxa_demangle()


def demangle_names(names: list[str]) -> tuple[list[str], str]:
    """Readable kernel names for C++-mangled ones (others unchanged), and which tool did it.

    The parameter list is dropped, as vLLM-Kunlun's parser does; the return type stays
    (``void xblas_xpu3::fc_cdnn_infer<float16, …>``).
    """
    mangled = [i for i, n in enumerate(names) if n.startswith("_Z")]
    if not mangled:
        return list(names), "none needed"
    out = list(names)
    if _DEMANGLE is not None:
        for i in mangled:
            d = _DEMANGLE(names[i])
            if d:
                out[i] = strip_call_args(d)
        return out, "__cxa_demangle"
    exe = shutil.which("c++filt")
    if exe:
        try:
            res = subprocess.run(
                [exe],
                input="\n".join(names[i] for i in mangled) + "\n",
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            lines = res.stdout.splitlines()
            if len(lines) == len(mangled):
                for i, d in zip(mangled, lines):
                    out[i] = strip_call_args(d)
                return out, "c++filt"
        except (OSError, subprocess.SubprocessError):
            pass
    return out, "unavailable (names stay mangled)"


_MANGLED_PART = re.compile(r"(\d+)")


def kernel_key(name: str, kind: int = -1) -> str:
    """The base identifier of a kernel: qualified name without template or call arguments
    (``void at::native::foo<int>(int*)`` → ``at::native::foo``; mangled ``_ZN5aiter3fooE…``
    → ``aiter::foo``); copies and fills by kind, as capture and replay name them differently."""
    if kind == K_MEMCPY or name.lower().startswith(("memcpy", "hipmemcpy", "cudamemcpy", "xpu_memcpy")):
        return "memcpy"
    if kind == K_MEMSET or name.lower().startswith(("memset", "hipmemset", "cudamemset")):
        return "memset"
    s = name.strip()
    if s.startswith("_Z"):
        i, parts = (3, []) if s.startswith("_ZN") else (2, [])
        while i < len(s) and s[i].isdigit():
            m = _MANGLED_PART.match(s, i)
            if m is None:  # a digit to isdigit() that is no decimal digit to re (``²``)
                break
            n = int(m.group(1))
            parts.append(s[m.end() : m.end() + n])
            i = m.end() + n
            if not s.startswith("_ZN"):
                break
        return "::".join(parts) or s
    if s.startswith("void "):
        s = s[5:]
    cut = min((p for p in (s.find("<"), s.find("(")) if p > 0), default=len(s))
    return s[:cut].strip()
