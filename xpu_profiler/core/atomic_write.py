"""Every output file is written whole or not at all: into a temporary file beside it,
then renamed into place. A failed or interrupted write (Ctrl-C, a full disk, SIGTERM)
removes its temporary file and leaves what was at the path before (an older report)
untouched; no reader ever sees half a file.

A process killed outright (``kill -9``, the OOM killer, a power cut) cannot remove its
temporary file. Each one's name says whose it is — this tool's mark, the host and the
process id — and the next write of the same output removes those of a process of this
host that no longer runs; a file that merely looks like one, another host's, or one of a
process still running (another write of the same output) stays.

Failures end as one line: ``OutputError`` names the path and the OS's reason. Before any
long work, ``check_outputs`` refuses targets that cannot be written (a parent that is a
file, a path that is a directory or a device, a name too long) and any output that would
land on one of the command's inputs (compared by device and inode, so symbolic and hard
links to an input count as the input).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import signal
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import XpuProfilerError
from .fmt import plain

#: a temporary file's name: ``.report.html.`` + ``xpr-<host>-<pid>-`` + random letters + ``.tmp``
TEMP_SUFFIX = ".tmp"
TEMP_NAME_KEEP = 64  # characters of the final name kept in the temporary one (names may be long)
TEMP_MARK = "xpr"
#: what follows the output's name in a temporary file of ours (mkstemp's letters: 8 of [a-z0-9_])
_OWNER = re.compile(rf"{TEMP_MARK}-(?P<host>[0-9a-f]{{8}})-(?P<pid>[0-9]+)-[a-z0-9_]{{8}}")


class OutputError(XpuProfilerError):
    """An output that could not be written: its path and the OS's reason. ``written``:
    the outputs of the same command already in place ({format: path})."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        self.path = str(path)
        self.reason = reason
        self.written: dict[str, Path] = {}
        super().__init__(f"cannot write {plain(self.path)}: {reason}")


def reason(e: OSError) -> str:
    """The OS's words for an error ("No space left on device")."""
    if e.errno is not None:
        return os.strerror(e.errno)
    return e.strerror or str(e)


def temp_prefix(name: str) -> str:
    return f".{name[:TEMP_NAME_KEEP]}."


def is_temp_for(candidate: str, name: str) -> bool:
    """Whether ``candidate`` is the name of a temporary file of an output called ``name``."""
    return candidate.startswith(temp_prefix(name)) and candidate.endswith(TEMP_SUFFIX)


@functools.lru_cache(maxsize=1)
def _host_tag() -> str:
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _owner_prefix(name: str) -> str:
    """The start of this process's temporary files for an output called ``name``."""
    return f"{temp_prefix(name)}{TEMP_MARK}-{_host_tag()}-{os.getpid()}-"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM: another user's process runs under that id)
        return True
    return True


def stale_temps(path: str | os.PathLike[str]) -> list[Path]:
    """Temporary files beside ``path`` that a write of it left when its process was killed:
    ours by name, of this host, of a process that no longer runs."""
    path = Path(path)
    prefix, host = temp_prefix(path.name), _host_tag()
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    out = []
    for n in names:
        if not (n.startswith(prefix) and n.endswith(TEMP_SUFFIX)):
            continue
        m = _OWNER.fullmatch(n[len(prefix) : -len(TEMP_SUFFIX)])
        if m and m["host"] == host and not _running(int(m["pid"])):
            out.append(path.parent / n)
    return out


def remove_stale_temps(path: str | os.PathLike[str]) -> int:
    """Remove ``stale_temps(path)`` (regular files only); how many went."""
    gone = 0
    for p in stale_temps(path):
        try:
            if stat.S_ISREG(os.lstat(p).st_mode):
                os.unlink(p)
                gone += 1
        except OSError:
            continue  # (gone already, or not ours to remove: the write goes on)
    return gone


# ---------------------------------------------------------------------------------------
# checks before the work
# ---------------------------------------------------------------------------------------


def check_target(path: Path) -> os.stat_result | None:
    """Raise OutputError when ``path`` cannot be a file we write (without creating anything);
    its stat when it exists."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:  # a parent that is a file (ENOTDIR), a name too long, a loop, no access
        raise OutputError(path, reason(e)) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(path, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(path, "exists and is not a regular file")
        return st
    # the nearest existing ancestor must be a directory
    parent = path.parent
    while True:
        try:
            pst = os.stat(parent)
        except FileNotFoundError:
            if parent == parent.parent:
                return None
            parent = parent.parent
            continue
        except OSError as e:
            raise OutputError(path, reason(e)) from None
        if not stat.S_ISDIR(pst.st_mode):
            raise OutputError(path, f"{plain(str(parent))} is not a directory")
        return None


def input_identities(
    inputs: Iterable[str | os.PathLike[str] | None], not_inputs: Callable[[list[Path]], set[Path]] | None = None
) -> dict[tuple[int, int], str]:
    """(device, inode) → path of every input file, and of every file under an input
    directory but those ``not_inputs`` picks out of a directory's files."""
    ids: dict[tuple[int, int], str] = {}
    for p in inputs:
        if p is None:
            continue
        p = os.fspath(p)
        try:
            st = os.stat(p)
        except OSError:
            continue  # a missing input is the reader's to report
        if stat.S_ISDIR(st.st_mode):
            for root, _dirs, files in os.walk(p):
                skip = not_inputs([Path(root, f) for f in files]) if not_inputs else set()
                for f in files:
                    full = os.path.join(root, f)
                    if Path(full) in skip:
                        continue
                    try:
                        fst = os.stat(full)
                    except OSError:
                        continue
                    ids.setdefault((fst.st_dev, fst.st_ino), full)
        else:
            ids.setdefault((st.st_dev, st.st_ino), p)
    return ids


def check_outputs(
    paths: Mapping[str, Path] | Iterable[Path],
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    not_inputs: Callable[[list[Path]], set[Path]] | None = None,
) -> None:
    """Refuse, before any work, outputs that cannot be written and outputs that would
    replace an input (the same file, through any link; ``not_inputs``: see
    ``input_identities``)."""
    targets = list(paths.values()) if isinstance(paths, Mapping) else list(paths)
    ids = None
    for path in targets:
        st = check_target(Path(path))
        if st is None:
            continue
        if ids is None:
            ids = input_identities(inputs, not_inputs)
        hit = ids.get((st.st_dev, st.st_ino))
        if hit is not None:
            same = os.path.abspath(hit) == os.path.abspath(path)
            raise XpuProfilerError(
                f"{plain(str(path))}: the output would overwrite the input "
                + ("file" if same else plain(hit))
                + "; choose another --output"
            )


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # (not thread-safe: only where /proc says nothing)
    os.umask(old)
    return old


def make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(path, reason(e)) from None


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While a temporary file exists (an output being written, a database's copy being read),
    SIGTERM (when nothing else handles it) unwinds like an exception, so the temporary file is
    removed before the process exits (status 143)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def _exit(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def replacing(
    path: str | os.PathLike[str],
    mode: str = "wb",
    encoding: str | None = None,
    newline: str | None = None,
    errors: str | None = None,
) -> Iterator[IO[Any]]:
    """A file object for a new version of ``path``: a temporary file in the same directory,
    renamed over ``path`` when the block ends without an exception; removed otherwise.
    OS errors become ``OutputError`` naming ``path``."""
    path = Path(path)
    old = check_target(path)
    make_parent(path)
    remove_stale_temps(path)
    with sigterm_unwinds():
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_owner_prefix(path.name), suffix=TEMP_SUFFIX)
        except OSError as e:
            raise OutputError(path, reason(e)) from None
        done = False
        f = None
        try:
            f = os.fdopen(fd, mode, encoding=encoding, newline=newline, errors=errors)
            yield f
            f.close()  # a full disk may first show here, when the buffer is flushed
            os.chmod(tmp, stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask())
            os.replace(tmp, path)
            done = True
        except OSError as e:
            raise OutputError(path, reason(e)) from None
        finally:
            if not done:
                try:
                    if f is not None:
                        f.close()
                    else:
                        os.close(fd)
                except OSError:
                    pass
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    with replacing(path, "wb") as f:
        f.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """``text`` written whole; a lone surrogate in it (a name that was no UTF-8) as its escape."""
    with replacing(path, "w", encoding=encoding, newline="", errors="backslashreplace") as f:
        f.write(text)
    return Path(path)
