"""Where an event's fused op came from: the attribution sources, strongest first.

The aggregator stores one small integer per event (an ``int8`` column) next to its
fused op; the summary sums time per source, and the report says which share was
inferred from names alone. The codes are part of the saved format: append only.

=========  ====  ==================  ===========================================================
source     code  label               the fused op was decided by
=========  ====  ==================  ===========================================================
NONE       0     none                nothing: the event is not attributed (fused op "other"), or
                                     it is not a basis event
OP_CHAIN   1     launching op        the op chain that launched the event: the outermost custom op
                                     (``vllm::*``, ``_C::*``, ``sglang::*``...), or, when the event's
                                     own name says nothing, its top-level (root) op
MODULE     2     layer module        the innermost layer module range around the launch
                                     (``nn.Module: RMSNorm_3``, ``xpu_module:...``)
CAPTURE    3     capture trace       a graph replay, matched to its launch in the graph-capture
                                     trace and attributed through that launch's op chain or module
NAME       4     kernel name         the event's own name, through the family tables only
STRUCTURE  5     kernel sequence     the event's place in its stream's kernel sequence: inside an
                                     MoE block, an all-reduce's staging copy, attention's
                                     pre-processing (``aggregate/structure.py``)
=========  ====  ==================  ===========================================================

Order matters: when several sources know an event, the first in ``PRECEDENCE`` wins (an
eager kernel's op chain beats its module, which beats the capture trace, which beats the
kernel sequence, which beats its name). A replayed kernel has no op chain or module of
its own, so CAPTURE is its strongest possible source, then STRUCTURE, then NAME.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class AttributionSource(IntEnum):
    NONE = 0
    OP_CHAIN = 1
    MODULE = 2
    CAPTURE = 3
    NAME = 4
    STRUCTURE = 5


#: strongest first (the codes are a saved format and only grow: they are not the order)
PRECEDENCE = (
    AttributionSource.OP_CHAIN,
    AttributionSource.MODULE,
    AttributionSource.CAPTURE,
    AttributionSource.STRUCTURE,
    AttributionSource.NAME,
    AttributionSource.NONE,
)
#: JSON keys, by code (what summary.json and the report use)
KEYS = tuple(s.name.lower() for s in AttributionSource)
DTYPE = np.dtype(np.int8)


def share_by_source(source: np.ndarray, dur: np.ndarray) -> dict[str, float]:
    """Share of ``dur`` per source key (a partition of 1; empty input: {})."""
    total = float(dur.sum())
    if not len(source) or total <= 0:
        return {}
    t = np.bincount(source.astype(np.int64), weights=dur.astype(np.float64), minlength=len(KEYS))
    return {KEYS[i]: float(t[i] / total) for i in range(len(KEYS)) if t[i] > 0}
