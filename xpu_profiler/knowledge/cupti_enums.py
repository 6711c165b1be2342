"""CUPTI's activity enumerations as Nsight Systems exports them, and the names Kineto gives
the same records, so that a copy reads alike whichever profiler traced it.

Sources: CUPTI ``cupti_activity.h`` (``CUpti_ActivityMemcpyKind``, ``CUpti_ActivityMemoryKind``,
``CUpti_ActivitySynchronizationType``: stable values), Nsight Systems' export tables
``ENUM_CUDA_MEMCPY_OPER``, ``ENUM_CUDA_MEM_KIND``, ``ENUM_CUPTI_SYNC_TYPE`` and
``ENUM_NSYS_EVENT_TYPE`` (the same values, in exports from 2022.4 to 2025.1), and
pytorch/kineto ``libkineto/src/CuptiActivity.cpp`` (``Memcpy HtoD (Pinned -> Device)``,
``Memset (Device)``, the synchronization names).
"""

from __future__ import annotations

#: CUpti_ActivityMemcpyKind → Kineto's short direction
MEMCPY_KINDS = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "HtoD",  # unified memory migrations (nsys adds them to the same table)
    12: "DtoH",
    13: "DtoD",
}
#: CUpti_ActivityMemoryKind → Kineto's word
MEMORY_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}
#: CUpti_ActivitySynchronizationType → Kineto's name of the record
SYNC_TYPES = {
    0: "Unknown Sync",
    1: "Event Sync",
    2: "Stream Wait Event",
    3: "Stream Sync",
    4: "Context Sync",
}
NONE_32 = 4294967295  # CUPTI's "does not apply" in 32-bit ids (a context sync's stream)

#: ENUM_NSYS_EVENT_TYPE values of NVTX_EVENTS rows
NVTX_PUSH_POP = 59
NVTX_START_END = 60
NVTX_MARK = 34
NVTX_DOMAIN_CREATE = 75
NVTXT_PUSH_POP = 70  # ranges of an NVTXT file (nsys counts them with 59 and 60)
NVTXT_START_END = 71
NVTX_RANGES = (NVTX_PUSH_POP, NVTX_START_END, NVTXT_PUSH_POP, NVTXT_START_END)


def memcpy_name(kind: int, src: int, dst: int) -> str:
    """``Memcpy HtoD (Pinned -> Device)``: a copy as Kineto names it."""
    return f"Memcpy {MEMCPY_KINDS.get(kind, 'Unknown')} ({MEMORY_KINDS.get(src, 'Unknown')} -> {MEMORY_KINDS.get(dst, 'Unknown')})"


def memset_name(kind: int) -> str:
    return f"Memset ({MEMORY_KINDS.get(kind, 'Unknown')})"
