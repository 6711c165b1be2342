"""The typed shape of rocprofv3's JSON: only the fields the reader uses, every one optional
(ROCm 6.2 writes fewer: no ``stream_id``, no ``gpu_index``); unknown fields are ignored.

Field names from ROCm/rocprofiler-sdk ``source/include/rocprofiler-sdk/cxx/serialization/
save.hpp`` and ``source/lib/output/generateJSON.cpp``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ...core.errors import TraceError


class Handle(msgspec.Struct, frozen=True):
    handle: int = 0


class Corr(msgspec.Struct, frozen=True):
    internal: int = 0
    external: int = 0


class Dispatch(msgspec.Struct, frozen=True):
    agent_id: Handle = Handle()
    queue_id: Handle = Handle()
    kernel_id: int = 0


class _Record(msgspec.Struct):
    kind: int = 0
    operation: int = 0
    thread_id: int = 0
    correlation_id: Corr = Corr()
    start_timestamp: int = 0
    end_timestamp: int = 0
    stream_id: Handle | None = None


class Kernel(_Record):
    dispatch_info: Dispatch = Dispatch()

    def stream(self) -> int:
        """The HIP stream (rocprofiler's own index of it), else the HSA queue."""
        return self.stream_id.handle if self.stream_id is not None else self.dispatch_info.queue_id.handle


class Api(_Record):
    pass


class Copy(_Record):
    src_agent_id: Handle = Handle()
    dst_agent_id: Handle = Handle()
    bytes: int = 0

    def stream(self) -> int:
        return self.stream_id.handle if self.stream_id is not None else 0


class Symbol(msgspec.Struct):
    kernel_id: int = 0
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""

    def display(self) -> str:
        """The demangled name without ``.kd`` (what rocpd shows)."""
        name = self.formatted_kernel_name or self.demangled_kernel_name or self.kernel_name
        return name.removesuffix(" [clone .kd]").removesuffix(".kd")


class Ops(msgspec.Struct):
    kind: str = ""
    operations: list[str] = []


class Message(msgspec.Struct):
    key: int = 0
    value: str = ""


class Strings(msgspec.Struct):
    buffer_records: list[Ops] = []
    marker_api: list[Message] = []


class Metadata(msgspec.Struct, frozen=True):
    pid: int = 0
    init_time: int = 0
    fini_time: int = 0
    node: Any = None
    command: Any = None


class Buffers(msgspec.Struct):
    kernel_dispatch: list[Kernel] = []
    memory_copy: list[Copy] = []
    hip_api: list[Api] = []
    rccl_api: list[Api] = []
    marker_api: list[Api] = []


class Tool(msgspec.Struct):
    metadata: Metadata = Metadata()
    agents: list[Any] = []
    strings: Strings = msgspec.field(default_factory=Strings)
    kernel_symbols: list[Symbol] = []
    buffer_records: Buffers = msgspec.field(default_factory=Buffers)


class File(msgspec.Struct):
    tool: list[Tool] = msgspec.field(name="rocprofiler-sdk-tool", default_factory=list)


class _LooseTool(msgspec.Struct):
    """A process whose record lists are read one record at a time (``decode``)."""

    metadata: Metadata = Metadata()
    agents: list[Any] = []
    strings: Strings = msgspec.field(default_factory=Strings)
    kernel_symbols: list[msgspec.Raw] = []
    buffer_records: dict[str, msgspec.Raw] | None = None


class _LooseFile(msgspec.Struct):
    tool: list[_LooseTool] = msgspec.field(name="rocprofiler-sdk-tool", default_factory=list)


_DECODER = msgspec.json.Decoder(File)
_LOOSE = msgspec.json.Decoder(_LooseFile)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_SYMBOL = msgspec.json.Decoder(Symbol)
#: the record lists the reader uses, each record's shape
_RECORD = {
    name: msgspec.json.Decoder(shape)
    for name, shape in (
        ("kernel_dispatch", Kernel),
        ("memory_copy", Copy),
        ("hip_api", Api),
        ("rccl_api", Api),
        ("marker_api", Api),
    )
}


def decode(path: Path, data: bytes) -> tuple[list[Tool], list[str]]:
    """The file's processes, and what of them was skipped ("3 kernel_dispatch record(s) of an
    odd shape (...)"); one line naming the problem for a file that is not this format.

    A record of an odd shape (a text where a time belongs, a null, a number where an object
    belongs), in a record list or among the kernel symbols (its kernels are then named by id),
    is skipped and counted, the others read: the whole file is decoded at once, and only when
    that fails again with each record of its lists on its own."""
    try:
        return _DECODER.decode(data).tool, []
    except msgspec.ValidationError:
        pass  # somewhere a value of an odd shape: read again, one record at a time
    except msgspec.DecodeError as e:
        raise TraceError(path, f"malformed JSON ({e})") from None
    try:
        loose = _LOOSE.decode(data).tool
    except msgspec.ValidationError as e:  # odd outside the record lists: no rocprofv3 output
        raise TraceError(path, f"not a valid rocprofv3 output: {e}") from None
    odd: dict[str, list] = {}  # list → [records skipped, the first one's problem]
    lists: dict[str, str] = {}  # list that is none → why
    tools = []
    for t in loose:
        got: dict[str, list] = {}
        for name, raw in (t.buffer_records or {}).items():
            if name in _RECORD:
                got[name] = _records(name, raw, odd, lists)
        symbols = _each(t.kernel_symbols, _SYMBOL, odd.setdefault("kernel_symbols", [0, ""]))
        tools.append(Tool(t.metadata, t.agents, t.strings, symbols, Buffers(**got)))
    skipped = [f"its {name} (no list: {why})" for name, why in lists.items()]
    skipped += [
        f"{n:,} {name} record(s) of an odd shape (first: {why})"
        + ("; their kernels named by id" if name == "kernel_symbols" else "")
        for name, (n, why) in odd.items()
        if n
    ]
    return tools, skipped


def _records(name: str, raw: msgspec.Raw, odd: dict[str, list], lists: dict[str, str]) -> list:
    """A record list's records of the expected shape; the others counted in ``odd``, a list
    that is none in ``lists``."""
    try:
        items = _RAW_LIST.decode(raw)
    except msgspec.ValidationError as e:
        lists.setdefault(name, str(e))
        return []
    return _each(items, _RECORD[name], odd.setdefault(name, [0, ""]))


def _each(items: list[msgspec.Raw], shape: msgspec.json.Decoder, count: list) -> list:
    """The items of the expected shape; the others counted in ``count`` ([skipped, the first
    one's problem])."""
    out = []
    for item in items:
        try:
            out.append(shape.decode(item))
        except msgspec.ValidationError as e:
            count[1] = count[1] or str(e)
            count[0] += 1
    return out
