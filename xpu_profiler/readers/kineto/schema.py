"""The typed decoding schema of Kineto events: msgspec structs with only the fields the
model needs, not tracked by the GC (the fastest full parse in Python, and about half the
memory of a dict-based load).

Two schemas decode the same events: a union tagged on ``ph`` (fast: flows, counters and
the rest decode to empty structs) and the plain ``Event`` (any phase, checked by hand,
for exact messages about broken events).
"""

from __future__ import annotations

import math
from typing import Any, Union

import msgspec

_NO_RAW = msgspec.Raw(b"")


class SliceArgs(msgspec.Struct, gc=False, frozen=True):
    """The args of complete (X) events the model reads. Each field costs every event's
    args a little to decode (each key is looked up among them): only what is used."""

    # ids may come as strings from other writers; numeric strings are converted on extraction
    external_id: int | str = msgspec.field(default=-1, name="External id")
    correlation: int | str = -1
    kernel: str | None = None  # runtime launches on ROCm: the kernel they launch
    kind: int | str = -1  # runtime copies on ROCm (hipMemcpyKind): what the copy is, whatever its label says
    # what record_param_comms (and NCCL kernels) say about a collective: raw, any JSON type,
    # decoded only on the few events that carry them (``columns.comm_columns``)
    collective_name: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Collective name")
    pg_name: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Process Group Name")
    pg_ranks: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Process Group Ranks")
    seq: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Seq")
    in_nelems: msgspec.Raw = msgspec.field(default=_NO_RAW, name="In msg nelems")
    out_nelems: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Out msg nelems")
    group_size: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Group size")
    dtype: msgspec.Raw = msgspec.field(default=_NO_RAW, name="dtype")
    # with_flops / record_shapes: kept raw, decoded only for the GEMM ops that need them
    flops: float | str = math.nan
    bytes: float | str = math.nan  # gpu_memcpy / gpu_memset: bytes moved
    input_dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")


class InstantArgs(msgspec.Struct, gc=False, frozen=True):
    """The args of the ``[memory]`` instants. NaN / -1 rather than None: the columns are
    pulled out with np.fromiter."""

    total_allocated: float = msgspec.field(default=math.nan, name="Total Allocated")
    total_reserved: float = msgspec.field(default=math.nan, name="Total Reserved")
    device_type: int = msgspec.field(default=-1, name="Device Type")


class MetaArgs(msgspec.Struct, gc=False, frozen=True):
    name: str | None = None  # thread_name / process_name metadata


class Args(SliceArgs, gc=False, frozen=True):
    """All of them, for the plain schema (any phase in one struct)."""

    name: str | None = None
    total_allocated: float = msgspec.field(default=math.nan, name="Total Allocated")
    total_reserved: float = msgspec.field(default=math.nan, name="Total Reserved")
    device_type: int = msgspec.field(default=-1, name="Device Type")


class _Core(msgspec.Struct, gc=False):
    """What the model takes from an event (the rest of each object is skipped)."""

    name: str = ""
    cat: str = ""
    # Perfetto accepts numeric strings for ts/dur and doubles for pid/tid; so do we
    pid: int | float | str = 0
    tid: int | float | str = 0
    ts: float | str | None = None
    dur: float | str | None = None


class Event(_Core, gc=False):
    """The plain schema: any phase, checked by hand (exact messages for broken events)."""

    args: Args = Args()
    ph: str | None = None
    id: int | float | str | None = None  # async slices (b/e): which slice


# The fast schema: a union tagged on "ph". X, instants, metadata, Begin/End and async
# Begin/End carry fields, each kind with the args it uses; flows (a quarter of a Kineto trace),
# counters and the rest decode to structs holding their name only (for the warning that counts
# them). A phase outside the table fails the union, and that chunk is decoded again with the
# plain `Event` schema.
class _Slice(_Core, tag_field="ph", tag="X"):
    args: SliceArgs = SliceArgs()


class _Instant(_Core, tag_field="ph", tag="i"):
    args: InstantArgs = InstantArgs()


class _InstantG(_Instant, tag="I"):
    pass


class _Meta(_Core, tag_field="ph", tag="M"):
    args: MetaArgs = MetaArgs()


class _Begin(_Core, tag_field="ph", tag="B"):
    args: SliceArgs = SliceArgs()


class _End(_Core, tag_field="ph", tag="E"):
    pass


class _AsyncBegin(_Core, tag_field="ph", tag="b"):
    args: SliceArgs = SliceArgs()
    id: int | float | str | None = None


class _AsyncEnd(_Core, tag_field="ph", tag="e"):
    id: int | float | str | None = None


class _Other(msgspec.Struct, gc=False, tag_field="ph", tag="s"):
    name: str = ""


#: phases the analysis does not use, and what they are
UNUSED_PHASES = {
    "s": "flow",
    "t": "flow",
    "f": "flow",
    "C": "counter",
    "n": "async instant",
    "P": "sample",
    "R": "mark",
    "O": "object",
    "N": "object",
    "D": "object",
    "S": "async step",
    "T": "async step",
    "p": "async step",
    "v": "memory dump",
    "V": "memory dump",
    "(": "context",
    ")": "context",
}
#: phase → code in the columns' ``ph`` array: 0 X, 1 instant, 2 metadata, 3 B, 4 E, 5 b, 6 e;
#: 9 a phase outside the format; 10 + k the k-th of ``UNUSED_PHASES``
PH_IDS = {"X": 0, "i": 1, "I": 1, "M": 2, "B": 3, "E": 4, "b": 5, "e": 6}
PH_IDS.update({c: 10 + k for k, c in enumerate(UNUSED_PHASES)})
PH_LETTERS = {v: k for k, v in PH_IDS.items() if k != "I"}

_OTHERS = [_Other] + [type(f"_Other_{t}", (_Other,), {}, tag=t) for t in UNUSED_PHASES if t != "s"]
PH_CODE: dict[type, int] = {
    _Slice: 0,
    _Instant: 1,
    _InstantG: 1,
    _Meta: 2,
    _Begin: 3,
    _End: 4,
    _AsyncBegin: 5,
    _AsyncEnd: 6,
}
PH_CODE.update({t: PH_IDS[c] for t, c in zip(_OTHERS, UNUSED_PHASES)})  # _OTHERS: UNUSED_PHASES' order
#: one struct per phase, tagged by "ph": a union built at run time (``_OTHERS``), which no static
#: type names
_PHASE_STRUCTS = (_Slice, _Instant, _InstantG, _Meta, _Begin, _End, _AsyncBegin, _AsyncEnd, *_OTHERS)
_TAGGED: Any = Union[_PHASE_STRUCTS]  # noqa: UP007 (a tuple made at run time has no "|" form)
TAGGED_DECODER = msgspec.json.Decoder(list[_TAGGED])


class DistributedInfo(msgspec.Struct, gc=False):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


class Trace(msgspec.Struct, gc=False):
    # Raw: the events array is located (and syntax-checked) without building objects,
    # then decoded in chunks, optionally in parallel.
    traceEvents: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: DistributedInfo | None = None
    baseTimeNanoseconds: int | None = None
    deviceProperties: list[dict] | None = None
    schemaVersion: int | None = None
    displayTimeUnit: str | None = None
    host_name: str | None = None  # newer Kineto: the host that wrote the trace
    metadata: dict | None = None  # our own Perfetto trace's ("producer": "xpu_profiler"): never an input


TRACE_DECODER = msgspec.json.Decoder(Trace)
EVENTS_DECODER = msgspec.json.Decoder(list[Event])
