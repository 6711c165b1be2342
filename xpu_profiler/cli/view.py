"""`xpu_profiler view TRACE`: open one trace in ui.perfetto.dev from this machine.

The file is served on 127.0.0.1 only, at one URL path (its name), to the Perfetto UI
origin only (CORS), until the UI has fetched it once (or Ctrl-C; ``keep`` serves on).
Every other path, method or host name gets a 404, and nothing else on the disk is
reachable: the handler never maps a URL to a file name, it compares the whole
request target with the one path it serves.

ui.perfetto.dev's content-security policy lets the page fetch from
``http://127.0.0.1:9001`` (the trace_processor port) and no other local port, so
9001 is the default port; when it is taken the file is served on a free port and
the user is told what that means.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TextIO

from ..core import compression
from ..core.errors import XpuProfilerError
from ..core.fmt import plain
from ..core.regular import not_regular
from ..exporters.validate_text import not_a_trace

PERFETTO_ORIGIN = "https://ui.perfetto.dev"
DEFAULT_PORT = 9001
LOOPBACK = "127.0.0.1"
ALLOWED_HOSTS = ("127.0.0.1", "localhost")  # Host header: refuses DNS-rebinding pages
CHUNK = 1 << 20


def url_name(path: Path) -> str:
    """The URL path segment the file is served under: its name, in characters a URL keeps."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", path.name).lstrip(".") or "trace.json"


def perfetto_url(port: int, name: str) -> str:
    return f"{PERFETTO_ORIGIN}/#!/?url=http://{LOOPBACK}:{port}/{name}"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def check_trace(trace: str | os.PathLike) -> Path:
    """The trace path, or one line saying why it cannot be served."""
    path = Path(trace).expanduser()
    if not path.exists():
        raise XpuProfilerError(f"{trace}: no such file")
    if path.is_dir():
        raise XpuProfilerError(f"{trace}: is a directory; give the trace file (e.g. report.trace.json.gz)")
    why = not_regular(path)  # (a FIFO would wait for a writer, a device never end)
    if why:
        raise XpuProfilerError(f"{trace}: {why}: give the trace file")
    try:
        with open(path, "rb") as f:
            first = f.read(1)
        if not first:
            raise XpuProfilerError(f"{trace}: the file is empty")
        why = not_a_trace(path)  # (our bundle, summary or report: Perfetto would show nothing)
    except OSError as e:
        if e.errno is None:  # (a corrupt gzip stream)
            raise XpuProfilerError(f"{trace}: cannot decompress ({e})") from None
        raise XpuProfilerError(f"{trace}: cannot read it ({e.strerror or e})") from None
    except compression.READ_ERRORS as e:
        raise XpuProfilerError(f"{trace}: cannot decompress ({e})") from None
    if why:
        raise XpuProfilerError(f"{trace}: {why}")
    return path.resolve()


class TraceServer(ThreadingHTTPServer):
    """Serves ``path`` at ``/name`` on the loopback interface; records completed fetches."""

    daemon_threads = True

    def __init__(self, path: Path, port: int):
        self.trace_path = path
        self.url_path = "/" + url_name(path)
        self.fetched = threading.Event()
        self.fetches: list[tuple[int, threading.Thread]] = []  # (bytes sent, handler thread)
        self.lock = threading.Lock()
        super().__init__((LOOPBACK, port), _Handler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def record_fetch(self, sent: int) -> None:
        with self.lock:
            self.fetches.append((sent, threading.current_thread()))
        self.fetched.set()


class _Handler(BaseHTTPRequestHandler):
    server: TraceServer

    def version_string(self) -> str:
        return "xpu_profiler"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def _is_the_trace(self) -> bool:
        host = self.headers.get("Host") or ""
        hostname = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
        words = self.requestline.split()  # the target as sent (self.path has "//" collapsed)
        target = words[1] if len(words) == 3 else ""
        return target == self.server.url_path and hostname.lower() in ALLOWED_HOSTS

    def _not_found(self) -> None:
        self.close_connection = True
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", PERFETTO_ORIGIN)
        self.send_header("Vary", "Origin")

    def do_OPTIONS(self) -> None:  # CORS preflight (incl. Chrome's private-network check)
        if not self._is_the_trace():
            return self._not_found()
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "Range")
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._send(body=False)

    def do_GET(self) -> None:
        self._send(body=True)

    def _refuse(self) -> None:
        self._not_found()

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # e.g. the UI's probe for a trace_processor

    def _send(self, body: bool) -> None:
        if not self._is_the_trace():
            return self._not_found()
        try:
            f = open(self.server.trace_path, "rb")
        except OSError:
            return self._not_found()
        with f:
            size = os.fstat(f.fileno()).st_size
            self.close_connection = True
            self.send_response(200)
            self._cors()
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if not body:
                return
            sent = 0
            try:
                while chunk := f.read(CHUNK):
                    self.wfile.write(chunk)
                    sent += len(chunk)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            if sent == size:
                self.server.record_fetch(sent)


def _gui_browser_likely() -> bool:
    """Whether webbrowser would open a graphical browser (not a console one, not nothing)."""
    env = os.environ
    return bool(env.get("BROWSER") or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")) or sys.platform in (
        "darwin",
        "win32",
    )


def _bind(path: Path, port: int) -> TraceServer:
    try:
        return TraceServer(path, port)
    except OSError as e:
        if port == 0:
            raise XpuProfilerError(f"cannot listen on {LOOPBACK}: {e.strerror or e}") from None
    return _bind(path, 0)


def serve_trace(
    trace: str | os.PathLike,
    port: int = DEFAULT_PORT,
    browser: bool = True,
    keep: bool = False,
    out: TextIO | None = None,
) -> int:
    """Serve ``trace`` to ui.perfetto.dev; returns the exit code (0, or 130 when stopped before a fetch)."""
    out = out or sys.stdout
    path = check_trace(trace)
    srv = _bind(path, port)
    thread = threading.Thread(target=srv.serve_forever, name="xpu_profiler-view", daemon=True)
    thread.start()
    try:
        return _announce_and_wait(srv, port, browser, keep, lambda line: print(plain(line), file=out, flush=True))
    except KeyboardInterrupt:  # Ctrl-C at any point, also while announcing
        print("xpu_profiler: stopped", file=out, flush=True)
        return 0 if srv.fetches else 130
    finally:
        srv.shutdown()
        srv.server_close()


def _announce_and_wait(srv: TraceServer, port: int, browser: bool, keep: bool, say) -> int:
    path = srv.trace_path
    url = perfetto_url(srv.port, srv.url_path[1:])
    say(
        f"xpu_profiler: serving {path} ({_size(path.stat().st_size)}) at "
        f"http://{LOOPBACK}:{srv.port}{srv.url_path} (this file only, loopback only)"
    )
    if port not in (0, srv.port):
        say(f"xpu_profiler: port {port} is in use; serving on {srv.port} instead")
    if srv.port != DEFAULT_PORT:
        say(
            f"xpu_profiler: note: ui.perfetto.dev only fetches from {LOOPBACK}:{DEFAULT_PORT} (its content "
            f"security policy); free port {DEFAULT_PORT} (a trace_processor --httpd?) for the link to load, "
            f"or open the file with 'Open trace file' in the UI"
        )
    say(url)
    hint = f"ssh -L {srv.port}:{LOOPBACK}:{srv.port} {socket.gethostname() or 'HOST'}"
    if not browser:
        say(
            f"xpu_profiler: on a remote machine, forward the port from your computer first ({hint}), "
            f"then open the link there"
        )
    elif not (_gui_browser_likely() and webbrowser.open(url)):
        say(
            f"xpu_profiler: no browser found here: open the link yourself (remote machine? forward the port "
            f"first: {hint})"
        )
    say(
        "xpu_profiler: serving until Ctrl-C"
        if keep
        else "xpu_profiler: waiting for the UI to fetch it (Ctrl-C to stop)"
    )
    while True:
        if srv.fetched.wait(0.25):
            srv.fetched.clear()
            with srv.lock:
                sent, handler = srv.fetches[-1]
            say(f"xpu_profiler: trace fetched ({_size(sent)} sent)")
            if not keep:
                handler.join(5.0)  # the response is complete; let the connection close
                return 0
