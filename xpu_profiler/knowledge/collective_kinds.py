"""Collective kinds: a small declarative table over names (first match wins), the bus
bandwidth factor of each kind, and the element sizes of the dtype names traces write."""

from __future__ import annotations

import re
from typing import NamedTuple


class Kind(NamedTuple):
    regex: str
    kind: str
    note: str = ""


#: collective kinds by name, searched in order (case-insensitive)
KINDS: list[Kind] = [
    Kind(r"reduce_?scatter", "reduce_scatter"),
    Kind(r"all_?gather|_allgather|all_gather_into", "all_gather"),
    Kind(r"all_?to_?all|all2all|(?<![a-z])a2a|dispatch|combine", "all_to_all", "incl. expert-parallel DeepEP"),
    Kind(
        r"all_?reduce|cross_device_reduce|custom_ar|one_?shot|two_?shot|lamport",
        "all_reduce",
        "incl. vLLM's custom all-reduce",
    ),
    Kind(r"broadcast|bcast", "broadcast"),
    Kind(r"(?<![a-z])reduce(?![a-z])|ncclDevKernel_Reduce_|ncclKernel_Reduce_", "reduce"),
    Kind(r"send_?recv|(?<![a-z])(send|recv|isend|irecv)(?![a-z])|p2p", "send_recv"),
    Kind(r"barrier", "barrier"),
]
KIND_NAMES = tuple(dict.fromkeys(k.kind for k in KINDS)) + ("other",)
OTHER_KIND = len(KIND_NAMES) - 1
_KIND_RX = [(re.compile(k.regex, re.IGNORECASE), KIND_NAMES.index(k.kind)) for k in KINDS]

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


def kind_of(name: str) -> int:
    for rx, k in _KIND_RX:
        if rx.search(name):
            return k
    return OTHER_KIND


def dtype_bytes(name: str) -> int:
    n = name.strip().lower().removeprefix("c10::").removeprefix("torch.")
    if n.startswith(("float8", "fp8")):
        return 1
    return DTYPE_BYTES.get(n, -1)
