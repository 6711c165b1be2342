"""Equal-length numpy columns with a fixed schema (``Table``), and interned names
(``StringTable``): the two containers every record of a ``Profile`` lives in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

# Defaults used when a column is not given: ids that mean "none" are -1.
_DEFAULTS = {
    "corr": -1,
    "ext": -1,
    "step": -1,
    "fused": -1,
    "depth": -1,
    "group": -1,
    "launch": -1,
    "device": -1,
    "flops": -1,
    "cat": -1,
    "running": -1,
    "waiting": -1,
    "kv_usage": np.nan,
    "first_token": -1,
    "finish": -1,
    "step_id": -1,
    "name": -1,
    "comm": -1,
    "coll": -1,
    "pg": -1,
    "pg_ranks": -1,
    "seq": -1,
    "in_nelems": -1,
    "out_nelems": -1,
    "group_size": -1,
    "dtype": -1,
}


class Table:
    """Equal-length numpy columns with a fixed schema."""

    __slots__ = ("schema", "cols")

    def __init__(self, schema: Mapping[str, np.dtype], cols: Mapping[str, Any] | None = None, n: int | None = None):
        self.schema = dict(schema)
        cols = dict(cols or {})
        unknown = set(cols) - set(self.schema)
        if unknown:
            raise KeyError(f"unknown columns {sorted(unknown)}")
        if n is None:
            n = len(next(iter(cols.values()))) if cols else 0
        self.cols: dict[str, np.ndarray] = {}
        for name, dtype in self.schema.items():
            if name in cols:
                arr = np.asarray(cols[name], dtype=dtype)
                if arr.shape != (n,):
                    raise ValueError(f"column {name!r} has shape {arr.shape}, expected ({n},)")
            else:
                arr = np.full(n, _DEFAULTS.get(name, 0), dtype=dtype)
            self.cols[name] = arr

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def __setitem__(self, name: str, values: Any) -> None:
        arr = np.asarray(values, dtype=self.schema[name])
        if arr.shape != (len(self),):
            raise ValueError(f"column {name!r} has shape {arr.shape}, expected ({len(self)},)")
        self.cols[name] = arr

    def take(self, index: Any) -> Table:
        return Table(self.schema, {k: v[index] for k, v in self.cols.items()})

    @staticmethod
    def concat(schema: Mapping[str, np.dtype], tables: Iterable[Table]) -> Table:
        tables = [t for t in tables if len(t)]
        if not tables:
            return Table(schema)
        return Table(schema, {k: np.concatenate([t.cols[k] for t in tables]) for k in schema})


class StringTable:
    """Interned names: one id per distinct string."""

    __slots__ = ("strings", "_ids")

    def __init__(self, strings: Iterable[str] = ()):
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}
        for s in strings:
            self.intern(s)

    def intern(self, s: str) -> int:
        i = self._ids.get(s)
        if i is None:
            i = self._ids[s] = len(self.strings)
            self.strings.append(s)
        return i

    def intern_many(self, names: Iterable[str]) -> np.ndarray:
        """Ids for many names at once; the hot path of every reader (C-level loops only)."""
        names = names if isinstance(names, list) else list(names)
        ids, strings = self._ids, self.strings
        for s in dict.fromkeys(names):  # distinct, in first-seen order
            if s not in ids:
                ids[s] = len(strings)
                strings.append(s)
        return np.fromiter(map(ids.__getitem__, names), dtype=np.int32, count=len(names))

    def get(self, s: str) -> int:
        return self._ids.get(s, -1)

    def __getitem__(self, i: int) -> str:
        return self.strings[i]

    def __len__(self) -> int:
        return len(self.strings)

    def lookup(self, ids: np.ndarray) -> list[str]:
        strings = self.strings
        return [strings[i] if i >= 0 else "" for i in ids.tolist()]
