"""IBM AIU (Spyre) traces: its runtime names each compute slice ``<op>_<n> Cmpt Prep`` /
``<op>_<n> Cmpt Exec`` (the op, its instance, the phase of its run) and each RDMA transfer
``SenRdmaSend_<n>`` / ``SenRdmaReceive_<n>`` with the collective it serves in ``[sync=...]``.

Source: the Begin/End traces in IBM/aiu-trace-analyzer's test data (Apache-2.0), e.g. an
all-reduce over four ranks. Ops other than ``add`` get their row when a trace shows them.
"""

from __future__ import annotations

from .base import Family

_SRC = "IBM/aiu-trace-analyzer tests/test_data (Begin/End traces of the AIU runtime)"

ROWS: list[Family] = [
    Family(r"^SenRdma(Send|Receive)_\d+", "communication", _SRC, note="RDMA transfer of a collective"),
    Family(r"^add_\d+ Cmpt (Prep|Exec)$", "elementwise", _SRC, note="element-wise add: a compute slice"),
]
