"""Profile windows on a running server: the files `xpu_profiler record` and the plugin
(file mode) exchange in ``$XPU_PROFILER_DIR/control/``. Shared by both sides; nothing
here imports vLLM or torch.

- ``window-<id>.json``, written by the caller: trace the next ``steps`` engine steps
  (or the steps of the next ``seconds``) with torch.profiler at ``level``. Engines
  ignore it after ``expires_ns`` (a server started later never picks up a stale
  request). Rewritten with ``cancel: true`` to end the window early; removed by the
  caller once it has the window.
- ``window-<id>.<process>-<pid>.answer.json``, written by each engine process (``role``
  "engine": ``state`` running / done / cancelled, its ``run`` (server lifetime),
  ``first_step``, ``tagged`` steps so far, ``flushed_step``: the last step whose
  record is in the record files, ``world_size``: the workers that will answer) and by
  each worker (``role`` "worker": ``rank``, the trace ``file``, the ``steps`` it holds).

Every file is written whole (a temporary file renamed over it): a reader never sees
half of one.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

CONTROL_DIR = "control"
_REQUEST = re.compile(r"^window-([A-Za-z0-9_-]+)\.json$")
_ANSWER_SUFFIX = ".answer.json"


def control_dir(record_dir: str | os.PathLike) -> Path:
    return Path(record_dir) / CONTROL_DIR


def write_json(path: str | os.PathLike, obj: dict) -> None:
    """Write ``obj`` to ``path`` whole (temporary file, then rename). The temporary name
    is the writing thread's own: a process's scheduler and flush threads both answer."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def read_json(path: str | os.PathLike) -> dict | None:
    try:
        with open(path) as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def request_path(record_dir, window_id: str) -> Path:
    return control_dir(record_dir) / f"window-{window_id}.json"


def answer_path(record_dir, window_id: str, process: str, pid: int) -> Path:
    return control_dir(record_dir) / f"window-{window_id}.{process}-{pid}{_ANSWER_SUFFIX}"


def requests(record_dir) -> list[dict]:
    """The window requests in the control directory (unreadable ones skipped), oldest first."""
    d = control_dir(record_dir)
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for name in names:
        m = _REQUEST.match(name)
        if m:
            req = read_json(d / name)
            if req is not None and req.get("id") == m.group(1):
                out.append(req)
    return sorted(out, key=lambda r: (r.get("created_ns", 0), r["id"]))


def answers(record_dir, window_id: str) -> list[dict]:
    """Every process's answer to one window request."""
    d = control_dir(record_dir)
    prefix = f"window-{window_id}."
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        if name.startswith(prefix) and name.endswith(_ANSWER_SUFFIX):
            a = read_json(d / name)
            if a is not None:
                out.append(a)
    return out


def remove_window(record_dir, window_id: str) -> None:
    """The request and its answers, once the caller has what it asked for."""
    d = control_dir(record_dir)
    prefix = f"window-{window_id}."
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            try:
                os.remove(d / name)
            except OSError:
                pass
