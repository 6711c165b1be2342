"""What a copy is: its direction, from what the runtime call that made it says, or what the
profiler recorded, before any label.

A copy's label is the profiler's and can mislead: ROCm's runtime labels the pinned host-to-device
copies of vLLM's ``_prepare_inputs`` ``Memcpy DtoD (Device -> Device)`` (the shared MI300X
traces), while the ``hipMemcpyAsync`` call that made each one says ``kind: 1``, host to device.
So the direction is read, strongest first, from the launching call's ``kind`` argument
(``cudaMemcpyKind`` / ``hipMemcpyKind``: the CUDA Runtime API and HIP API references; ROCm's
Kineto traces carry it), the profiler's own record (CUPTI's ``copyKind`` in Nsight Systems,
rocprofv3's ``MEMORY_COPY_HOST_TO_DEVICE`` operation), and only then the label
(``Memcpy HtoD (Pinned -> Device)``: pytorch/kineto ``libkineto/src/CuptiActivity.cpp``).
"""

from __future__ import annotations

import re

#: the event column ``copy``: index into this tuple (0: not known)
COPY_DIRECTIONS = ("unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP")
UNKNOWN, HTOD, DTOH, DTOD, HTOH, PTOP = range(len(COPY_DIRECTIONS))

#: cudaMemcpyKind / hipMemcpyKind (the same values): 4 is "Default" (inferred from the
#: pointers by the runtime: unknown here)
MEMCPY_KIND = {0: HTOH, 1: HTOD, 2: DTOH, 3: DTOD}
#: CUPTI's CUpti_ActivityMemcpyKind (Nsight Systems ``copyKind``)
CUPTI_COPY_KIND = {1: HTOD, 2: DTOH, 8: DTOD, 9: HTOH, 10: PTOP, 11: HTOD, 12: DTOH, 13: DTOD}
#: rocprofv3's memory-copy operations
ROCPROF_COPY = {
    "MEMORY_COPY_HOST_TO_HOST": HTOH,
    "MEMORY_COPY_HOST_TO_DEVICE": HTOD,
    "MEMORY_COPY_DEVICE_TO_HOST": DTOH,
    "MEMORY_COPY_DEVICE_TO_DEVICE": DTOD,
}

_LABELS = [
    (re.compile(r"HtoD|H2D|Pinned -> Device|Pageable -> Device|Host -> Device|HostToDevice", re.I), HTOD),
    (re.compile(r"DtoH|D2H|Device -> Pinned|Device -> Pageable|Device -> Host|DeviceToHost", re.I), DTOH),
    (re.compile(r"DtoD|D2D|Device -> Device|DeviceToDevice", re.I), DTOD),
    (re.compile(r"HtoH|H2H|Host -> Host|HostToHost", re.I), HTOH),
    (re.compile(r"PtoP|P2P|Peer", re.I), PTOP),
]


def direction_of_label(name: str) -> int:
    """The direction a copy's label says (``Memcpy HtoD (Pinned -> Device)`` → HtoD), 0 none."""
    for rx, d in _LABELS:
        if rx.search(name):
            return d
    return UNKNOWN


def direction_of_kind(value: object) -> int:
    """A launching call's ``kind`` argument (an int or a numeric string) → a direction, 0."""
    try:
        return MEMCPY_KIND.get(int(str(value)), UNKNOWN)
    except ValueError:
        return UNKNOWN
