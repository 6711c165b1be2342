"""What a trace file's bytes show before its events are read (``validate``): what is no JSON
text Perfetto opens (another compression, a gzip inside the gzip, binary content, text that
is no UTF-8), and what the raw text tells that a parsed document no longer does (a byte-order
mark, the first key, decimals a double loses, surrogate escapes, a repeated events key)."""

from __future__ import annotations

import gzip
import json
import re

from ..core import compression

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
    if data.startswith(b"\xef\xbb\xbf"):
        problems.append("starts with a UTF-8 BOM: Perfetto will not detect it as JSON")
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
