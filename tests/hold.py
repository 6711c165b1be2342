"""Stop a real command at a known point of its work, so that a test can signal or kill
it there, never hoping that a sleep lands in the right place.

``driver(marker, output_name)`` is Python to run in the command's process before the
command itself: an audit hook that, the first time the process sets the mode of a
temporary file of ``output_name`` (``atomic_write.replacing``, once the whole file is
written and before it is renamed into place), writes ``marker`` and waits there. The
test waits for ``marker`` (a condition, with a deadline), then sends its signal: a
SIGINT raises KeyboardInterrupt where the command waits, as a Ctrl-C arriving at that
moment would; a SIGKILL ends it with the temporary file on disk.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

_DRIVER = """
import os as _os, sys as _sys, time as _time

def _xpu_hold(event, args, _marker={marker!r}, _prefix={prefix!r}):
    if event != "os.chmod" or not args or _os.path.exists(_marker):
        return
    name = _os.path.basename(str(args[0]))
    if name.startswith(_prefix) and name.endswith(".tmp"):
        with open(_marker, "w") as f:
            f.write(str(args[0]))
        _time.sleep(3600)

_sys.addaudithook(_xpu_hold)
"""


def driver(marker: Path, output_name: str) -> str:
    from xpu_profiler.core.atomic_write import temp_prefix

    return _DRIVER.format(marker=str(marker), prefix=temp_prefix(output_name))


def run_module(code: str, module: str = "xpu_profiler") -> list[str]:
    """``python -c`` arguments that run ``code``, then ``python -m module`` with the
    arguments that follow."""
    return ["-c", code + f"\nimport runpy\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n"]


def wait_for_hold(marker: Path, proc: subprocess.Popen, timeout: float = 300) -> Path:
    """The temporary file the command holds at, once it does; fails if it ends first."""
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the command ended (exit {proc.returncode}) before it reached the write")
        if time.monotonic() > deadline:
            raise AssertionError(f"the command did not reach the write within {timeout} s")
        time.sleep(0.05)
    # (the hook writes the marker's text before it waits)
    while not marker.read_text():
        time.sleep(0.01)
    return Path(marker.read_text())
