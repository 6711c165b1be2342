"""HTTP to a running server, bounded: the whole exchange within a time, the answer within a
size (``record``: a server's health, its models, vLLM's /start_profile and /stop_profile)."""

from __future__ import annotations

import http.client
import threading
import urllib.request
from typing import Any
from urllib.request import Request as HttpRequest  # (not vLLM's Request)

HTTP_TIMEOUT_S = 5.0
#: the most an answer of the server's is read (a model list is a few KiB): an endless body ends there
MAX_ANSWER_BYTES = 1 << 20


def fetch(req: str | HttpRequest, timeout: float = HTTP_TIMEOUT_S) -> tuple[int, bytes]:
    """(status, body) of one HTTP request, the whole exchange within ``timeout`` (a server that
    sends a header line now and then never trips urllib's per-read timeout) and at most
    ``MAX_ANSWER_BYTES`` of body. Raises urllib's errors (HTTPError for an error status), or
    OSError when the time or the size runs out or the answer is not HTTP (an SSH banner, a
    header line past http.client's limits, a broken chunk)."""
    done: dict[str, Any] = {}

    def go() -> None:
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                body = r.read(MAX_ANSWER_BYTES + 1)
                done["answer"] = (r.status, body)
        except http.client.HTTPException as e:  # not an OSError: said like one
            done["error"] = OSError(_not_http(e))
        except BaseException as e:  # handed to the caller's thread
            done["error"] = e

    t = threading.Thread(target=go, name="xpu_profiler-http", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise OSError(f"no whole answer within {timeout:g} s")
    if "error" in done:
        raise done["error"]
    status, body = done["answer"]
    if len(body) > MAX_ANSWER_BYTES:
        raise OSError(f"an answer of more than {MAX_ANSWER_BYTES >> 20} MiB")
    return status, body


def _not_http(e: http.client.HTTPException) -> str:
    """What a broken or non-HTTP answer was, in one line."""
    if isinstance(e, http.client.BadStatusLine) and not isinstance(e, ConnectionError):
        first = str(e.args[0]) if e.args else ""
        return f"an answer that is not HTTP: {first.strip()[:80]!r}"
    return f"a broken HTTP answer: {str(e)[:120] or type(e).__name__}"
