"""Errors that end a command with one line and exit code 2."""

from __future__ import annotations

from pathlib import Path


class XpuProfilerError(Exception):
    """A user-facing failure: printed as one line, exit code 2, no traceback."""

    exit_code = 2


class TraceError(XpuProfilerError):
    """A file that cannot be read as any supported format, or is broken."""

    def __init__(self, path: str | Path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class DeviceError(XpuProfilerError):
    """The requested device is not present or not usable."""
