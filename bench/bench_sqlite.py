#!/usr/bin/env python3
"""Reading a large Nsight Systems export: the reader's batched columns against a plain ``SELECT``
of the same columns into numpy, in time and peak memory.

A kernel table of ``--kernels`` rows (10M by default; the export is made once and kept in
``bench/.cache/``) is read, each case in a fresh process:

  plain    ``np.array(conn.execute(SELECT start, end, deviceId, streamId, correlationId,
           globalPid, demangledName ...).fetchall())``: every row a Python tuple at once
  reader   the reader's kernel block (``readers.nsys.tables.device_blocks``): the same columns,
           read ``sqlite_db.BATCH`` rows at a time into preallocated arrays

Prints seconds and peak RSS of each (median of ``--repeat`` runs) and the ratios reader/plain.
Target: time ≤ 2.0× the plain read; memory bounded by the columns, not the rows.

    python bench/bench_sqlite.py [--kernels 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
TARGET = 2.0

PLAIN = r"""
import sqlite3, sys, time, resource
import numpy as np
t = time.perf_counter()
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro&immutable=1", uri=True)
rows = c.execute("SELECT start, end, deviceId, streamId, coalesce(correlationId, -1), coalesce(globalPid, 0), "
                 "coalesce(demangledName, -1) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
a = np.array(rows, np.int64)
del rows
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(a))
"""

READER = r"""
import sys, time, resource
t = time.perf_counter()
from xpu_profiler.readers.nsys import tables
from xpu_profiler.readers.sqlite_db import opened, schema
with opened(sys.argv[1]) as conn:
    sch = schema(conn)
    (b,) = tables.device_blocks(conn, sch, tables.Strings(conn, sch), {})
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(b))
"""


def make(path: Path, n: int) -> None:
    """An export's kernel table (schema 3.17 columns that the reader reads) and its strings."""
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    rng = random.Random(0)
    c = sqlite3.connect(tmp)
    c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    c.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, f"kernel_{i}") for i in range(200)])
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER, "
        "contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, "
        "demangledName INTEGER, shortName INTEGER, graphNodeId INTEGER)"
    )
    t = 1_000_000
    gpid = (1 << 48) | (4242 << 24)
    batch = []
    for i in range(n):
        d = rng.randrange(2_000, 40_000)
        batch.append((t, t + d, 0, 1, 0, 7, i + 1, gpid, i % 200, i % 200, None))
        t += d + 500
        if len(batch) == 200_000:
            c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?)", batch)
            batch.clear()
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?)", batch)
    c.commit()
    c.close()
    tmp.rename(path)


def measure(code: str, db: Path) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True)
    secs, rss_kib, rows = out.stdout.split()
    return float(secs), int(rss_kib) / 1024, int(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    CACHE.mkdir(exist_ok=True)
    db = CACHE / f"nsys_kernels_{a.kernels}.sqlite"
    if not db.exists():
        t = time.perf_counter()
        make(db, a.kernels)
        print(f"made {db.name} ({db.stat().st_size / 2**20:,.0f} MiB) in {time.perf_counter() - t:.1f} s")
    got: dict[str, list[tuple[float, float, int]]] = {"plain": [], "reader": []}
    for _ in range(a.repeat):  # interleaved: both see the same machine
        for name, code in (("plain", PLAIN), ("reader", READER)):
            got[name].append(measure(code, db))
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), v[0][2]) for k, v in got.items()}
    for k, (s, m, n) in med.items():
        print(f"{k:7s} {s:7.2f} s  peak RSS {m:8,.0f} MiB  {n:,} rows")
    ratio = med["reader"][0] / med["plain"][0]
    print(f"reader/plain: time {ratio:.2f}x (target <= {TARGET}x), memory {med['reader'][1] / med['plain'][1]:.2f}x")
    return 0 if ratio <= TARGET and med["reader"][2] == med["plain"][2] else 1


if __name__ == "__main__":
    sys.exit(main())
