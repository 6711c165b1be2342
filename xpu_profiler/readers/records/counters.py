"""Counter samples of the records (device allocator, host RSS, KV-cache usage) → the counters table."""

from __future__ import annotations

import numpy as np

from ...core.profile import COUNTER_SCHEMA, StringTable, Table


def counters_table(samples: list, strings: StringTable, base_ns: int) -> Table:
    """(rank, name, t ns, value) samples → the counters table."""
    if not samples:
        return Table(COUNTER_SCHEMA)
    samples = sorted(samples, key=lambda s: (s[0], s[1], s[2]))
    return Table(
        COUNTER_SCHEMA,
        {
            "rank": np.array([s[0] for s in samples], np.int32),
            "name": strings.intern_many(s[1] for s in samples),
            "t": np.array([int(s[2]) - base_ns for s in samples], np.int64),
            "value": np.array([float(s[3]) if s[3] is not None else np.nan for s in samples], np.float64),
        },
    )
