"""`xpu_profiler view TRACE` as a user runs it: a real server in a subprocess, fetched
through the printed ui.perfetto.dev link, nothing else reachable."""

from __future__ import annotations

import http.client
import os
import queue
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest
import real_data
from conftest import ROOT

ORIGIN = "https://ui.perfetto.dev"
LINK = re.compile(r"^https://ui\.perfetto\.dev/#!/\?url=(http://127\.0\.0\.1:(\d+)/(\S+))$")


@pytest.fixture
def trace(tmp_path) -> Path:
    """A real Kineto trace, under a name a URL cannot carry as is."""
    p = tmp_path / "my run (1) #2.json.gz"
    shutil.copyfile(real_data.need("cuda-triton-example.json.gz"), p)
    return p


class Viewer:
    """`xpu_profiler view` in a subprocess; reads its stdout lines as they come."""

    def __init__(self, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xpu_profiler", "view", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: re.Pattern | str, timeout: float = 60) -> re.Match:
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                raise AssertionError(
                    f"exited ({self.proc.wait()}) before {rx.pattern!r}: {self.seen} {self.proc.stderr.read()}"
                )
            self.seen.append(line)
            m = rx.search(line)
            if m:
                return m

    def link(self) -> tuple[str, int, str]:
        m = self.wait_for(LINK)
        return m.group(1), int(m.group(2)), m.group(3)

    def finish(self, timeout: float = 30) -> int:
        rc = self.proc.wait(timeout=timeout)
        while (line := self.lines.get(timeout=5)) is not None:
            self.seen.append(line)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def viewers():
    started: list[Viewer] = []

    def start(*args, **kw) -> Viewer:
        v = Viewer(*args, **kw)
        started.append(v)
        return v

    yield start
    for v in started:
        v.kill()


def _request(port: int, method: str, target: str, host: str | None = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def _non_loopback_ipv4() -> str | None:
    addrs: list[str] = []
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
        addrs += re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        addrs += socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        pass
    try:  # the address the default route would use (no packet is sent for a UDP connect)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addrs.append(s.getsockname()[0])
    except OSError:
        pass
    return next((a for a in addrs if not a.startswith("127.") and a != "0.0.0.0"), None)


def test_serves_the_trace_through_the_printed_link_then_exits(trace, viewers):
    v = viewers(str(trace), "--no-browser", "--port", "0")
    url, port, name = v.link()
    assert name == "my_run__1___2.json.gz"
    hint = v.wait_for(r"ssh -L (\d+):127\.0\.0\.1:(\d+) ")
    assert hint.group(1) == hint.group(2) == str(port)
    # every other path, method or host is a 404, and none of them ends the server
    for target in (
        "/",
        "//" + name,
        "/" + name + "/",
        "/" + name + "?x=1",
        "/" + name + "#frag",
        "/../" + name,
        "/%2e%2e/" + name,
        "/..%2f" + name,
        "/" + urllib.parse.quote(name, safe="").replace(".", "%2E"),
        "/" + name.upper(),
        "/" + urllib.parse.quote(trace.name),
        "/" + name + "%00",
        "/etc/passwd",
        "/..",
        "/.%2e/",
        f"http://127.0.0.1:{port}/{name}",
        "*",
        "/status",
    ):
        status, headers, body = _request(port, "GET", target)
        assert status == 404 and body == b"", (target, status)
        assert "Access-Control-Allow-Origin" not in headers
    assert _request(port, "POST", "/status")[0] == 404  # the UI's trace_processor probe
    assert _request(port, "PUT", "/" + name)[0] == 404
    assert _request(port, "GET", "/" + name, host="attacker.example")[0] == 404  # DNS rebinding
    assert _request(port, "OPTIONS", "/other")[0] == 404
    # CORS preflight, HEAD: answered, and the server stays up
    status, headers, _ = _request(
        port,
        "OPTIONS",
        "/" + name,
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true",
        },
    )
    assert status == 204 and headers["Access-Control-Allow-Origin"] == ORIGIN
    assert headers["Access-Control-Allow-Private-Network"] == "true"
    status, headers, body = _request(port, "HEAD", "/" + name, host=f"localhost:{port}")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == trace.stat().st_size
    assert v.proc.poll() is None
    # the fetch the UI makes: the URL from the link, bytes as on disk, CORS for the UI only
    parsed = urllib.parse.urlsplit(url)
    status, headers, body = _request(port, "GET", parsed.path, headers={"Origin": ORIGIN})
    assert status == 200 and body == trace.read_bytes()
    assert headers["Access-Control-Allow-Origin"] == ORIGIN
    assert v.finish() == 0
    assert any("trace fetched" in ln for ln in v.seen), v.seen


def test_not_reachable_from_another_address(trace, viewers):
    addr = _non_loopback_ipv4()
    if addr is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    v = viewers(str(trace), "--no-browser", "--port", "0")
    _, port, name = v.link()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((addr, port), timeout=5).close()
    assert v.proc.poll() is None
    assert _request(port, "GET", "/" + name)[0] == 200
    assert v.finish() == 0


def test_keep_serves_until_ctrl_c(trace, viewers):
    v = viewers(str(trace), "--no-browser", "--port", "0", "--keep")
    _, port, name = v.link()
    for _ in range(2):
        status, _, body = _request(port, "GET", "/" + name)
        assert status == 200 and body == trace.read_bytes()
        v.wait_for("trace fetched")
    assert v.proc.poll() is None
    v.proc.send_signal(signal.SIGINT)
    assert v.finish() == 0 and v.seen[-1].endswith("stopped")
    assert "Traceback" not in v.proc.stderr.read()


def test_ctrl_c_before_a_fetch(trace, viewers):
    v = viewers(str(trace), "--no-browser", "--port", "0")
    v.link()
    v.wait_for("waiting for the UI")
    v.proc.send_signal(signal.SIGINT)
    assert v.finish() == 130
    assert "Traceback" not in v.proc.stderr.read()


def test_busy_port_falls_back_to_a_free_one(trace, viewers):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        v = viewers(str(trace), "--no-browser", "--port", str(taken))
        _, port, name = v.link()
        assert port != taken
        assert any(f"port {taken} is in use" in ln for ln in v.seen)
        assert any("only fetches from 127.0.0.1:9001" in ln for ln in v.seen)
        assert _request(port, "GET", "/" + name)[2] == trace.read_bytes()
        assert v.finish() == 0


def test_opens_the_link_in_the_browser(trace, viewers, tmp_path):
    """Without --no-browser the link goes to $BROWSER; this one fetches the trace as the UI would."""
    got = tmp_path / "browser-got"
    browser = tmp_path / "fake-browser"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import sys, urllib.parse, urllib.request\n"
        "link = sys.argv[1]\n"
        "src = urllib.parse.parse_qs(urllib.parse.urlsplit(link).fragment.split('?', 1)[1])['url'][0]\n"
        "req = urllib.request.Request(src, headers={'Origin': 'https://ui.perfetto.dev'})\n"
        "with urllib.request.urlopen(req, timeout=10) as r:\n"
        f"    open({str(got)!r} + '.bytes', 'wb').write(r.read())\n"
        f"open({str(got)!r} + '.link', 'w').write(link)\n"
    )
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    v = viewers(str(trace), "--port", "0", env={"BROWSER": f"{browser} %s"})
    url, port, name = v.link()
    assert v.finish() == 0, v.proc.stderr.read()
    assert Path(str(got) + ".link").read_text() == f"https://ui.perfetto.dev/#!/?url={url}"
    assert Path(str(got) + ".bytes").read_bytes() == trace.read_bytes()


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "fifo"])
def test_bad_trace_is_one_line_exit_2(tmp_path, kind):
    """(A FIFO is never opened: it would wait for a writer.)"""
    p = tmp_path / "t.json.gz"
    if kind == "directory":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "empty":
        p.write_bytes(b"")
    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "view", str(p), "--no-browser", "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in r.stderr, r.stderr
