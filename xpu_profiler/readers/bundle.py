"""Our own saved Profile (`profile.npz`), for re-analysis without the original traces."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..errors import TraceError
from ..profile import Profile

NAME = "bundle"


def sniff(path: Path, head: bytes) -> bool:
    return head.startswith(b"PK\x03\x04") and b"meta.npy" in head[:128]


def read(path: Path, options) -> Profile:
    try:
        prof = Profile.load(path)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as e:
        raise TraceError(path, f"broken xpu_profiler bundle ({e})") from None
    prof.run.setdefault("sources", []).append({"path": str(path), "format": NAME})
    return prof
