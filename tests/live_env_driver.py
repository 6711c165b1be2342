"""The live command called inside a long-lived Python process, as a user's script would:
it runs ``xpu_profiler.cli.main`` in this process, noting every environment variable that
xpu_profiler's own code sets or removes (vLLM and torch change others for themselves),
and writes to RESULT.json which of those it touched and which it left changed.

    python tests/live_env_driver.py RESULT.json CLI-ARGS...
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PACKAGE = str(Path(__file__).resolve().parents[1] / "xpu_profiler")
touched: set[str] = set()


def _caller_is_ours() -> bool:
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.endswith(("os.py", "_collections_abc.py", "_collections_abc>")):
        f = f.f_back
    return f is not None and f.f_code.co_filename.startswith(PACKAGE)


def _spy(method):
    def spied(self, key, *args):
        if _caller_is_ours():
            touched.add(key)
        return method(self, key, *args)

    return spied


def main(result: str, args: list[str]) -> None:
    os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)  # the live command sets it for the CPU build
    env_cls = type(os.environ)
    env_cls.__setitem__ = _spy(env_cls.__setitem__)
    env_cls.__delitem__ = _spy(env_cls.__delitem__)
    before = dict(os.environ)
    from xpu_profiler.cli.main import main as cli

    try:
        cli.main(args, prog_name="xpu_profiler")
        code = 0
    except SystemExit as e:
        code = e.code
    after = dict(os.environ)
    left = {k: [before.get(k), after.get(k)] for k in sorted(touched) if before.get(k) != after.get(k)}
    Path(result).write_text(json.dumps({"code": code, "touched": sorted(touched), "left_changed": left}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
