"""``record --url`` against a port whose answer is not HTTP or is broken HTTP, and ``--via vllm``
whose /stop_profile fails after the window failed: one line naming the real problem, exit 2."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.cli_run import one_line_error, run

#: what the port sends back, whatever it was asked
ANSWERS = {
    "ssh_banner": b"SSH-2.0-OpenSSH_8.9p1\r\n",
    "long_header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70000 + b"\r\nContent-Length: 2\r\n\r\n{}",
    "many_headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n{}",
    "bad_chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n",
}


@contextmanager
def _raw_port(answer: bytes) -> Iterator[str]:
    """A local port that reads one request per connection and sends ``answer``."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                c.recv(65536)
                c.sendall(answer)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        srv.close()


@pytest.mark.parametrize(
    "kind, said",
    [
        ("ssh_banner", "not HTTP: 'SSH-2.0-OpenSSH_8.9p1'"),
        ("long_header", "broken HTTP answer: got more than 65536 bytes"),
        ("many_headers", "broken HTTP answer: got more than 100 headers"),
        ("bad_chunk", "broken HTTP answer: IncompleteRead"),
    ],
)
def test_a_port_that_answers_no_http_is_one_line(kind, said, tmp_path):
    with _raw_port(ANSWERS[kind]) as url:
        r = run("record", "--url", url, "--steps", 3, "-o", tmp_path / "out", timeout=60)
    err = one_line_error(r)
    assert f"no vLLM server answers at {url}" in err and said in err, err


class _StopFails(BaseHTTPRequestHandler):
    """A vLLM server whose profiler starts, writes nothing, and whose /stop_profile fails."""

    def log_message(self, *a) -> None:
        pass

    def _send(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(200, json.dumps({"data": [{"id": "m"}]}).encode() if self.path == "/v1/models" else b"")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.posts.append(self.path)  # type: ignore[attr-defined]
        self._send(500 if self.path == "/stop_profile" else 200, b"stop failed")


def test_a_failing_stop_does_not_hide_the_window_error(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _StopFails)
    srv.posts = []  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    try:
        r = run(
            "record", "--url", url, "--via", "vllm", "--trace-dir", trace_dir, "--steps", 3,
            "--timeout", 1, "-o", tmp_path / "out", timeout=60,
        )  # fmt: skip
    finally:
        srv.shutdown()
        srv.server_close()
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    assert lines[-1] == f"xpu_profiler: error: vLLM wrote no trace into {trace_dir} within 1 s (are requests flowing?)"
    assert (
        lines[-2] == f"warning: could not stop vLLM's profiler: {url}/stop_profile answered 500 Internal Server Error"
    )
    assert srv.posts == ["/start_profile", "/stop_profile"]  # type: ignore[attr-defined]
