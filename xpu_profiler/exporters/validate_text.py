"""What a trace file's bytes show before its events are read (``validate``): what is no JSON
text Perfetto opens (another compression, a gzip inside the gzip, binary content, text that
is no UTF-8), and what the raw text tells that a parsed document no longer does (a byte-order
mark, the first key, decimals a double loses, surrogate escapes, a repeated events key)."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..core import compression
from ..readers import bundle

#: what a JSON document without the events array is (Perfetto opens none of its events)
NO_EVENTS = "no traceEvents array: not a Chrome trace (Perfetto opens none of its events)"
BOM = b"\xef\xbb\xbf"
BOM_PROBLEM = "starts with a UTF-8 BOM: Perfetto will not detect it as JSON"
_TS_DECIMALS = re.compile(rb'"(?:ts|dur)":\s*-?\d+\.(\d{4,})')
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
#: a \uD800-\uDFFF escape, its backslash not one escaped itself (the text of a Windows path
#: such as C:\\ud800 is no surrogate)
_SURROGATE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")


def no_json_text(text: bytes, kind: str | None) -> str | None:
    """Why the (decompressed) bytes are no JSON text Perfetto opens; None when they may be."""
    inner = compression.kind_of(text[:6])
    if kind not in (None, compression.GZIP) or inner:
        if kind != compression.GZIP:
            return f"{kind}-compressed: Perfetto opens JSON traces plain or gzip-compressed; decompress it first"
        return f"{inner}-compressed inside the gzip: decompress it until the JSON is plain or one gzip"
    if b"\0" in text[:4096]:
        return "binary content (a NUL byte near the start), not a JSON trace"
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 text (byte {e.start:,} is {text[e.start : e.start + 1]!r}): JSON traces are UTF-8"
    return None


def _repeated_events_key(data: bytes) -> int:
    """How many times one object holds the key ``traceEvents`` (0: none does twice; a key of
    that name inside an event's args is another object's)."""
    most = 0

    def pairs(items: list) -> dict:
        nonlocal most
        most = max(most, sum(k == "traceEvents" for k, _ in items))
        return dict(items)

    try:
        json.loads(data, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return 0  # (the parse that follows says what is wrong)
    return most if most > 1 else 0


def check_bytes(data: bytes, problems: list[str]) -> bytes:
    """What the raw bytes show (BOM, first key, decimals, surrogates); the bytes to parse."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(BOM):
        problems.append(BOM_PROBLEM)
        data = data[3:]
    head = data[:128].lstrip()
    if not head.startswith(b'{"traceEvents"'):
        problems.append(
            'must start with {"traceEvents" (object form, traceEvents first) so no other importer claims it'
        )
    m = _TS_DECIMALS.search(data)
    if m:
        problems.append(f"a ts/dur has more than 3 decimals ({m.group(0)[:40]!r}): nanosecond fractions are lost")
    keys = _repeated_events_key(data) if len(_EVENTS_KEY.findall(data)) > 1 else 0
    if keys > 1:
        problems.append(
            f"'traceEvents' is written {keys} times: Perfetto shows every one's events, JSON readers "
            "(and `analyze`) the last one's; write one array"
        )
    if _SURROGATE.search(data):
        problems.append("a surrogate escape (\\uD800-\\uDFFF): Perfetto rejects them; write UTF-8")
    return data


#: the first byte of a Perfetto protobuf trace: the tag of its first ``Trace.packet``
PROTO_PACKET = b"\x0a"
#: the (decompressed) bytes that tell what a file is; the rest is read only to find the events
HEAD_BYTES = 1 << 16
_OWN_SCHEMA = re.compile(rb'"schema"\s*:\s*"xpu_profiler\.(summary|diff)"')
_OWN_JSON = {b"summary": "an xpu_profiler summary.json", b"diff": "an xpu_profiler diff.json"}
_NOT_VIEWED = "not a trace the Perfetto UI opens (a JSON trace, plain or gzip-compressed, or a protobuf trace)"


def not_a_trace(path: Path) -> str | None:
    """What the file is when it is no trace the Perfetto UI opens (a JSON trace, plain or
    gzip-compressed, or a Perfetto protobuf trace), said as ``validate`` says it; None for one.
    Read as a stream, as far as it takes to tell (a JSON object: up to its events' key)."""
    with open(path, "rb") as f:
        first = f.read(HEAD_BYTES)
        kind = compression.kind_of(first[:6])
        if bundle.sniff(path, first):
            return "an xpu_profiler bundle (--format bundle), " + _NOT_VIEWED
        if kind not in (None, compression.GZIP):
            return no_json_text(first, kind)
        f.seek(0)
        texts = _texts(f, kind)
        head = b""
        for part in texts:
            head += part
            if len(head) >= HEAD_BYTES:
                break
        if head.startswith(PROTO_PACKET):
            return None
        why = no_json_text(_whole_chars(head), kind)
        return why if why else _json_says(head, texts)


def _texts(f: BinaryIO, kind: str | None) -> Iterator[bytes]:
    """The file's text, decompressed, in pieces."""
    if kind:
        yield from (part for part, _ in compression.blocks(f, kind, HEAD_BYTES))
    else:
        yield from iter(lambda: f.read(HEAD_BYTES), b"")


def _whole_chars(text: bytes) -> bytes:
    """``text`` without a UTF-8 character its end may cut."""
    cut = len(text)
    while cut > 0 and len(text) - cut < 3 and text[cut - 1] & 0xC0 == 0x80:
        cut -= 1
    return text[: cut - 1] if cut > 0 and text[cut - 1] >= 0xC0 else text[:cut]


def _json_says(head: bytes, rest: Iterator[bytes]) -> str | None:
    """What text that is no protobuf is: None for a JSON trace (an array of events, or an object
    with the events' key), else what Perfetto sees in it."""
    if head.startswith(BOM):
        return BOM_PROBLEM
    body = head.lstrip()
    if body.startswith(b"["):
        return None
    if body.startswith(b"<"):
        ours = b'name="generator" content="xpu_profiler' in head
        return f"an HTML page{' (an xpu_profiler report)' if ours else ''}, {_NOT_VIEWED}"
    if not body.startswith(b"{"):
        return "text that is no JSON, " + _NOT_VIEWED
    own, tail = None, b""
    for text in itertools.chain((head,), rest):  # (as they are read: the rest is never held)
        window = tail + text
        if _EVENTS_KEY.search(window):
            return None
        own = own or _OWN_SCHEMA.search(window)
        tail = window[-64:]
    return f"{_OWN_JSON[own.group(1)]}, {_NOT_VIEWED}" if own else NO_EVENTS
