"""Collective kinds: a small declarative table over names (first match wins), the bus
bandwidth factor of each kind, and the element sizes of the dtype names traces write."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from .kernel_heads import heads


class Kind(NamedTuple):
    """A collective kind and the words that name it. ``words`` make a name communication on
    their own (the taxonomy's generic communication row is built from them); ``hints`` only
    tell the kind of a name already known as communication (``dispatch`` of DeepEP,
    ``one_shot`` of a custom all-reduce, a bare ``reduce``)."""

    kind: str
    words: str = ""
    hints: str = ""
    note: str = ""


#: collective kinds, searched in order (case-insensitive) in a name's head
KINDS: list[Kind] = [
    Kind("reduce_scatter", r"reduce_?scatter|reducescatter"),
    Kind("all_gather", r"all_?gather|allgather", r"all_gather_into"),
    Kind(
        "all_to_all",
        r"all_?to_?all|all2all|(?<![a-z])a2a(?![a-z])",
        r"dispatch|combine|notify",
        "incl. expert-parallel dispatch/combine (DeepEP, pplx, MoRI)",
    ),
    Kind(
        "all_reduce",
        r"all_?reduce",
        r"cross_device_reduce|custom_ar|one_?shot|two_?shot|lamport",
        "incl. vLLM's custom all-reduce",
    ),
    Kind("broadcast", r"broadcast", r"bcast"),
    Kind("reduce", "", r"(?<![a-z])reduce(?![a-z])|ncclDevKernel_Reduce_|ncclKernel_Reduce_"),
    Kind("send_recv", r"send_?recv", r"(?<![a-z])(send|recv|isend|irecv)(?![a-z])|p2p"),
    Kind("barrier", "", r"barrier"),
]
KIND_NAMES = tuple(dict.fromkeys(k.kind for k in KINDS)) + ("other",)
OTHER_KIND = len(KIND_NAMES) - 1
_KIND_RX = [
    (re.compile("|".join(x for x in (k.words, k.hints) if x), re.IGNORECASE), KIND_NAMES.index(k.kind)) for k in KINDS
]
#: the words that make a name communication (the taxonomy's generic communication row)
COLLECTIVE_WORDS = "|".join(k.words for k in KINDS if k.words)

#: bus bandwidth = algorithm bandwidth × factor(n) (NCCL's convention)
BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
#: element sizes of the dtype names traces write (torch's, and C type names)
DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int": 4,
    "int32": 4,
    "long": 8,
    "int64": 8,
    "short": 2,
    "int16": 2,
    "char": 1,
    "int8": 1,
    "signed char": 1,
    "byte": 1,
    "uint8": 1,
    "unsigned char": 1,
    "bool": 1,
    "complexfloat": 8,
    "complexdouble": 16,
    "complexhalf": 4,
}


@lru_cache(maxsize=4096)
def kind_of(name: str) -> int:
    """Kind of a collective (index into ``KIND_NAMES``) from the kind words in a name's head
    (``kernel_heads``: template arguments say nothing); ``OTHER_KIND`` when it has none
    (``taxonomy.collective_kind`` then asks the family table)."""
    inner, outer = heads(name)
    for text in dict.fromkeys((inner, outer)):
        for rx, k in _KIND_RX:
            if rx.search(text):
                return k
    return OTHER_KIND


def dtype_bytes(name: str) -> int:
    n = name.strip().lower().removeprefix("c10::").removeprefix("torch.")
    if n.startswith(("float8", "fp8")):
        return 1
    return DTYPE_BYTES.get(n, -1)
