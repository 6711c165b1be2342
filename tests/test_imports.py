"""Every module of the package imports on its own, first (no import cycle that only the
usual entry points' import order hides)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import importlib, pkgutil, sys, traceback
import xpu_profiler
names = sorted(m.name for m in pkgutil.walk_packages(xpu_profiler.__path__, "xpu_profiler."))
failed = []
for name in names:
    for k in [k for k in sys.modules if k == "xpu_profiler" or k.startswith("xpu_profiler.")]:
        del sys.modules[k]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print(len(names))
print("\n".join(failed))
"""


def test_every_module_imports_first() -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    count, *failed = r.stdout.strip().split("\n")
    assert int(count) > 50
    assert [f for f in failed if f] == []
