"""Which process serves a URL, and where it records (``xpu_profiler record --url``).

For a server on this machine the listening socket names its process (``/proc/net/tcp``
and the process's fds, Linux, processes of the same user); that process's environment
names its record directory (``XPU_PROFILER_DIR``) and its command line vLLM's profiler
directory (``--profiler-config``). ``--dir`` and the caller's own ``XPU_PROFILER_DIR``
are the fall-backs (another user's server, a container).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..core.errors import XpuProfilerError
from ..core.records import ENV_DIR
from .vllm import compat


@dataclass
class Server:
    url: str
    host: str
    port: int
    pid: int | None = None  # the process listening on the port, when found
    record_dir: Path | None = None
    how: str = ""  # how the record directory was found
    profiler_dir: Path | None = None  # where the server's own profiler writes (--profiler-config)


def parse_url(url: str) -> tuple[str, str, int]:
    try:
        u = urlparse(url if "://" in url else f"http://{url}")
        host = u.hostname  # (a bracketed host that is no IPv6 address raises here)
    except ValueError:
        host = None
    if host is None or u.scheme not in ("http", "https"):
        raise XpuProfilerError(f"--url {url!r}: expected http://HOST:PORT")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise XpuProfilerError(f"--url {url!r}: bad port") from None
    base = f"{u.scheme}://{u.netloc}"
    return base, host, port


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


def process_args(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def profiler_dir_from_args(args: list[str]) -> str | None:
    """torch_profiler_dir of a ``--profiler-config`` (JSON, or the dotted form) on a command line."""
    opt, key = compat.PROFILER_CONFIG_ARG, compat.PROFILER_DIR_KEY
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a == opt or a.startswith(opt + "="):
            try:
                cfg = json.loads(a.split("=", 1)[1] if "=" in a else nxt)
            except ValueError:
                continue
            if isinstance(cfg, dict) and cfg.get(key):
                return str(cfg[key])
        elif a.startswith(f"{opt}.{key}"):
            return a.split("=", 1)[1] if "=" in a else nxt
    return None


def _absolute(path: str, pid: int | None) -> Path:
    p = Path(path)
    if not p.is_absolute() and pid:
        try:
            return Path(os.readlink(f"/proc/{pid}/cwd")) / p
        except OSError:
            pass
    return p


def find_server(url: str, record_dir: str | None = None) -> Server:
    """The server at ``url``: its process, where the plugin records (``record_dir`` None:
    unknown) and where vLLM's own profiler writes (a local server's command line)."""
    base, host, port = parse_url(url)
    srv = Server(url=base, host=host, port=port)
    local = host in ("127.0.0.1", "localhost", "::1", "0.0.0.0") or host == os.uname().nodename
    if local:
        srv.pid = listening_pid(port)
        env = process_env(srv.pid) if srv.pid else {}
        if record_dir is None and env.get(ENV_DIR):
            srv.record_dir = _absolute(env[ENV_DIR], srv.pid)
            srv.how = f"the environment of the server process {srv.pid}"
        trace_dir = profiler_dir_from_args(process_args(srv.pid)) if srv.pid else None
        if trace_dir:
            srv.profiler_dir = _absolute(trace_dir, srv.pid)
    if record_dir is not None:
        srv.record_dir, srv.how = Path(record_dir), "--dir"
    elif srv.record_dir is None and os.environ.get(ENV_DIR):
        srv.record_dir, srv.how = Path(os.environ[ENV_DIR]), f"{ENV_DIR} here"
    return srv


def no_way_to_record(srv: Server) -> XpuProfilerError:
    who = f" (pid {srv.pid})" if srv.pid else ""
    return XpuProfilerError(
        f"cannot tell where the server at {srv.url}{who} records: start it with {ENV_DIR}=/some/dir in its "
        f"environment (the xpu_profiler plugin then takes profile windows) and pass --dir /some/dir if this "
        f"machine cannot see its processes, or start it with {compat.PROFILER_CONFIG_ARG} and use --via vllm "
        f"--trace-dir DIR"
    )
