"""Which process serves a URL, and where it records (``xpu_profiler record --url``).

For a server on this machine the listening socket names its process (``/proc/net/tcp``
and the process's fds, Linux, processes of the same user), and that process's
environment names its record directory (``XPU_PROFILER_DIR``) and vLLM's profiler
directory; ``--dir`` and the caller's own ``XPU_PROFILER_DIR`` are the fall-backs
(another user's server, a container).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import XpuProfilerError
from .vllm.records import ENV_DIR


@dataclass
class Server:
    url: str
    host: str
    port: int
    pid: int | None = None          # the process listening on the port, when found
    record_dir: Path | None = None
    how: str = ""                   # how the record directory was found


def parse_url(url: str) -> tuple[str, str, int]:
    u = urlparse(url if "://" in url else f"http://{url}")
    if u.scheme not in ("http", "https") or not u.hostname:
        raise XpuProfilerError(f"--url {url!r}: expected http://HOST:PORT")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise XpuProfilerError(f"--url {url!r}: bad port") from None
    base = f"{u.scheme}://{u.netloc}"
    return base, u.hostname, port


def _listening_inodes(port: int) -> set[str]:
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        out.add(parts[9])
        except (OSError, ValueError):
            continue
    return out


def listening_pid(port: int) -> int | None:
    """The process (of ours) listening on ``port``, the oldest when several share it."""
    inodes = {f"socket:[{i}]" for i in _listening_inodes(port)}
    if not inodes:
        return None
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                if os.readlink(fd.path) in inodes:
                    found.append(int(entry.name))
                    break
        except OSError:
            continue
    return min(found) if found else None


def process_env(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def find_server(url: str, record_dir: str | None = None) -> Server:
    base, host, port = parse_url(url)
    srv = Server(url=base, host=host, port=port)
    local = host in ("127.0.0.1", "localhost", "::1", "0.0.0.0") or host == os.uname().nodename
    if local:
        srv.pid = listening_pid(port)
        env = process_env(srv.pid) if srv.pid else {}
        if record_dir is None and env.get(ENV_DIR):
            srv.record_dir, srv.how = Path(env[ENV_DIR]), f"the environment of the server process {srv.pid}"
    if record_dir is not None:
        srv.record_dir, srv.how = Path(record_dir), "--dir"
    elif srv.record_dir is None and os.environ.get(ENV_DIR):
        srv.record_dir, srv.how = Path(os.environ[ENV_DIR]), f"{ENV_DIR} here"
    if srv.record_dir is None:
        who = f" (pid {srv.pid})" if srv.pid else ""
        raise XpuProfilerError(
            f"cannot tell where the server at {base}{who} records: start it with {ENV_DIR}=/some/dir in its "
            f"environment (the xpu_profiler plugin then takes profile windows), or pass --dir /some/dir")
    if not srv.record_dir.is_absolute() and srv.pid and srv.how.startswith("the environment"):
        try:
            srv.record_dir = Path(os.readlink(f"/proc/{srv.pid}/cwd")) / srv.record_dir
        except OSError:
            pass
    return srv
