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


_DECODER = msgspec.json.Decoder(File)


def decode(path: Path, data: bytes) -> list[Tool]:
    """The file's processes; one line naming the problem for a file that is not this format."""
    try:
        return _DECODER.decode(data).tool
    except msgspec.ValidationError as e:
        raise TraceError(path, f"not a valid rocprofv3 output: {e}") from None
    except msgspec.DecodeError as e:
        raise TraceError(path, f"malformed JSON ({e})") from None
