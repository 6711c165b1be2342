"""SQLite databases that profilers write (Nsight Systems exports, rocpd): opened read-only,
their tables and columns known up front, rows read in batches into numpy columns.

The input is never modified: the database is opened with ``mode=ro`` and ``immutable=1`` (no
lock, no journal written); one with a ``-wal`` or ``-journal`` file beside it is read from a
temporary copy where SQLite applies it, a compressed one (gzip, xz, bzip2, Zstandard:
``core.compression``, told by its first bytes) from a temporary decompressed copy (``opened``).
A file that is no database, a corrupt one, or one that is not the profiler's is one line naming
the file and the problem (``TraceError``), never an ``sqlite3`` traceback.
"""

from __future__ import annotations

import functools
import shutil
import signal
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

import numpy as np

from ..core import compression
from ..core.atomic_write import sigterm_unwinds
from ..core.errors import TraceError
from .vendor_rows import I64_MAX, ODD

MAGIC = b"SQLite format 3\x00"
BATCH = 1 << 16  # rows fetched at a time: memory stays bounded by the columns, not the rows


def is_sqlite(head: bytes) -> bool:
    return head.startswith(MAGIC)


#: the files beside a database that hold what is not in it yet: committed transactions not yet
#: copied back (write-ahead log), or a transaction cut short that must be rolled back (journal)
PENDING = ("-wal", "-journal")


@contextmanager
def opened(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection; SQLite's errors become one line naming the file. A database with
    a non-empty ``-wal`` or ``-journal`` beside it (a writer still open, or one that crashed) is
    read from a temporary copy of the two, where SQLite applies them as it opens it: the input
    stays as it is, and its rows are what SQLite itself would read. A compressed database is
    read from a temporary decompressed copy, as the uncompressed file would be."""
    path = Path(path)
    real = path.resolve()  # (the logs lie beside the database, not beside a link to it)
    packed = packed_as(real)
    pending = [] if packed else [s for s in PENDING if _size(Path(f"{real}{s}"))]
    copied = bool(packed or pending)
    with (
        sigterm_unwinds() if copied else nullcontext(),
        _copy_dir() if copied else nullcontext() as tmp,
    ):
        where = real
        if tmp is not None:
            where = Path(tmp) / "db"
            if packed:
                decompress(path, packed, where)
            else:
                _copy(path, real, pending, where)
        uri = f"file:{quote(str(where))}?mode={'rw' if pending else 'ro&immutable=1'}"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as e:
            raise TraceError(path, f"cannot open the SQLite database ({e})") from None
        try:
            yield conn
        except sqlite3.DatabaseError as e:
            raise TraceError(path, f"corrupt or unreadable SQLite database ({e})") from None
        finally:
            conn.close()


def packed_as(path: Path) -> str | None:
    """The compression of a file (``core.compression``: gzip, xz, bzip2, zstd), None for none."""
    try:
        with open(path, "rb") as f:
            return compression.kind_of(f.read(6))
    except OSError:
        return None


def _copy(path: Path, real: Path, pending: list[str], where: Path) -> None:
    """The database and its pending logs copied to ``where`` (the logs beside it, as SQLite finds them)."""
    try:
        for suffix in ("", *pending):
            shutil.copyfile(f"{real}{suffix}", f"{where}{suffix}")
    except OSError as e:
        raise TraceError(path, f"cannot copy it to read its {pending[0]} file ({e.strerror or e})") from None


def decompress(path: Path, kind: str, where: Path) -> None:
    """The decompressed content of ``path`` (compressed by ``kind``) written to ``where``; a
    corrupt or cut stream, a missing package, a full disk: one line naming ``path``."""
    try:
        with open(path, "rb") as f, open(where, "wb") as out:
            for part, _ in compression.blocks(f, kind, 1 << 20):
                _write(out, part, path)
    except TraceError:
        raise
    except compression.MissingPackage as e:
        raise TraceError(path, str(e)) from None
    except EOFError:
        raise TraceError(path, f"truncated {kind} file (compressed stream ends early)") from None
    except compression.ERRORS as e:
        raise TraceError(path, f"corrupt {kind} data ({e})") from None


def _write(out: BinaryIO, part: bytes, path: Path) -> None:
    try:
        out.write(part)
    except OSError as e:
        raise TraceError(path, f"cannot decompress it to a temporary file ({e.strerror or e})") from None


@contextmanager
def _copy_dir() -> Iterator[str]:
    """A temporary directory, removed at the end whatever ends it: Ctrl-C and SIGTERM wait
    while it is removed (one arriving in the middle left it behind, its files gone)."""
    tmp = tempfile.mkdtemp(prefix="xpu_profiler_db_")
    try:
        yield tmp
    finally:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _size(p: Path) -> int:
    try:
        return p.stat().st_size if p.is_file() else 0
    except OSError:
        return 0


def schema(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every table and view: its columns (names as the database spells them)."""
    out: dict[str, set[str]] = {}
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    for name in names:
        out[name] = {r[1] for r in conn.execute(f"PRAGMA table_info([{name}])")}
    return out


def tables_of(path: Path) -> dict[str, set[str]] | None:
    """The schema of a database file, None when it is none (what sniffing asks). A compressed
    one is decompressed once, whichever readers sniff it (while the file is unchanged)."""
    real = Path(path).resolve()
    if packed_as(real) is None:
        return _tables_of(path)
    try:
        st = real.stat()
    except OSError:
        return None
    found = _packed_tables_of(str(real), st.st_size, st.st_mtime_ns)
    return None if found is None else {k: set(v) for k, v in found.items()}


def _tables_of(path: Path) -> dict[str, set[str]] | None:
    try:
        with opened(path) as conn:
            return schema(conn)
    except TraceError:
        return None


@functools.lru_cache(maxsize=16)
def _packed_tables_of(real: str, size: int, mtime_ns: int) -> dict[str, frozenset[str]] | None:
    found = _tables_of(Path(real))
    return None if found is None else {k: frozenset(v) for k, v in found.items()}


def why_unreadable(path: Path) -> str:
    """Why an SQLite file is no input: corrupt, or of another program (what its tables say)."""
    try:
        with opened(path) as conn:
            tables = sorted(schema(conn))
    except TraceError as e:
        return e.problem
    shown = ", ".join(tables[:6]) + (", ..." if len(tables) > 6 else "") if tables else "no tables"
    return (
        "an SQLite database that is neither an Nsight Systems export (nsys export --type sqlite) nor a rocpd "
        f"database (rocprofv3): it holds {shown}"
    )


def _int(v: object) -> int:
    """One value of an integer column: itself, a REAL truncated (as numpy does), else ``ODD``."""
    if isinstance(v, int) and ODD < v <= I64_MAX:
        return v
    if isinstance(v, float) and -(2.0**63) < v < 2.0**63:  # false for NaN
        return int(v)
    return ODD


def _ints(rows: list, n: int) -> np.ndarray:
    """A batch of rows of ``n`` integer columns as an (rows, n) array; a NULL, a text, a blob
    is ``ODD`` there (the readers skip and count those rows: ``vendor_rows.usable``). A batch
    of integers alone is one numpy conversion: numpy's own choice of type tells it (a text,
    even one of digits, makes it a string array, a NULL an object one, a REAL or a number
    beyond int64 a float one), so that a row reads the same whatever its neighbours."""
    try:
        block = np.array(rows)
    except (TypeError, ValueError, OverflowError):
        block = np.zeros(0, object)
    if block.dtype == np.int64:
        return block.reshape(len(rows), n)
    return np.array([[_int(v) for v in r] for r in rows], np.int64).reshape(len(rows), n)


def columns(conn: sqlite3.Connection, sql: str, n: int, params: tuple = ()) -> list[np.ndarray]:
    """The ``n`` integer columns of a query, read in batches into preallocated columns: the
    rows never exist all at once as Python tuples. A value that is NULL (where the SQL does not
    replace it) or no integer is ``ODD``."""
    (total,) = conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()
    out = [np.empty(total, np.int64) for _ in range(n)]
    cur = conn.execute(sql, params)
    at = 0
    while at < total:
        rows = cur.fetchmany(min(BATCH, total - at))
        if not rows:
            break
        block = _ints(rows, n)
        for i in range(n):
            out[i][at : at + len(rows)] = block[:, i]
        at += len(rows)
    return [c[:at] for c in out]


def with_text(conn: sqlite3.Connection, sql: str, n: int, k: int, params: tuple = ()) -> tuple[list[np.ndarray], list]:
    """A query's first ``n`` integer columns (``ODD``: NULL or no integer), then ``k`` text
    columns as (ids, distinct texts in first-seen order) each, read in batches (NULL text is "")."""
    ints: list[np.ndarray] = []
    index: list[dict[str, int]] = [{} for _ in range(k)]
    ids: list[list[int]] = [[] for _ in range(k)]
    cur = conn.execute(sql, params)
    while rows := cur.fetchmany(BATCH):
        ints.append(_ints([r[:n] for r in rows], n))
        for j in range(k):
            seen, out = index[j], ids[j]
            for r in rows:
                t = r[n + j]
                t = t if isinstance(t, str) else "" if t is None else str(t)
                out.append(seen.setdefault(t, len(seen)))
    block = np.concatenate(ints) if ints else np.zeros((0, n), np.int64)
    cols = [np.ascontiguousarray(block[:, i]) for i in range(n)]
    return cols, [(np.array(ids[j], np.int64), list(index[j])) for j in range(k)]


def strings(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> dict[int, str]:
    """An id → text table (``StringIds``, ``rocpd_string``); a row whose id is no integer is
    ignored (no row can name it)."""
    return {i: str(v) if v is not None else "" for i, v in conn.execute(sql, params) if isinstance(i, int)}
