"""An Nsight Systems report (``.nsys-rep``, older ``.qdrep``): exported to SQLite with the
``nsys`` on PATH into a temporary directory (never beside the input), then read as an export.

The report format is NVIDIA's own; ``nsys export --type sqlite`` is the documented way out of
it (Nsight Systems User Guide, "Exporter"). An older ``nsys`` cannot export a newer report: its
error is passed on in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...core.errors import TraceError
from ..sqlite_db import decompress, packed_as

#: the first bytes of a report ("NVIDIA Tegra Profiler Report 2025@1@1@110...")
MAGIC = b"NVIDIA Tegra Profiler Report"
EXPORT_TIMEOUT_S = 3600


def is_report(head: bytes) -> bool:
    return head.startswith(MAGIC)


def export_command(path: Path, out: str = "REPORT.sqlite") -> str:
    return f"nsys export --type sqlite --output {out} {path}"


@contextmanager
def exported(path: Path) -> Iterator[Path]:
    """The report exported to a temporary SQLite file (removed afterwards)."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise TraceError(
            path,
            "an Nsight Systems report, and no nsys on PATH to export it: run "
            f"`{export_command(path, path.with_suffix('.sqlite').name)}` and analyse the .sqlite file",
        )
    with tempfile.TemporaryDirectory(prefix="xpu_profiler_nsys_") as tmp:
        report, packed = path, packed_as(path)
        if packed:  # (nsys reads the report itself: a compressed one is decompressed beside the export)
            report = Path(tmp) / "report.nsys-rep"
            decompress(path, packed, report)
        out = Path(tmp) / (path.stem + ".sqlite")
        cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(report)]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"}
            )
        except subprocess.TimeoutExpired:
            raise TraceError(path, f"nsys export took over {EXPORT_TIMEOUT_S} s; export it yourself") from None
        except OSError as e:
            raise TraceError(path, f"could not run {nsys} ({e.strerror})") from None
        if done.returncode != 0 or not out.is_file():
            said = " ".join((done.stderr or done.stdout or "").split())[:300] or f"exit code {done.returncode}"
            raise TraceError(path, f"nsys export failed: {said}")
        yield out
