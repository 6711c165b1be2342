"""Agents of rocprofv3's CSV files: an ``Agent_Id`` (a logical node id, bare until ROCm 6.4,
``"Agent 4"`` from 7.0, ``"GPU 0"`` under ``--agent-index type-relative``) → the GPU's index
(its place among the GPUs by node id, as ``agent_info.csv`` lists them), -1 for a CPU.

Without ``agent_info``, or when it does not list every agent that ran a kernel as a GPU, the
agents that ran kernels are the GPUs, in id order (and a note says so in the latter case).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import common
from .csv_tables import Rows

_MAX_CUS, _MAX_MEM = 1 << 20, 1 << 50  # beyond any GPU: a value there is left out


class Agents:
    def __init__(self, infos: list[Rows]):
        self.by_logical: dict[int, int] = {}
        self.by_node: dict[int, int] = {}
        self.gpus: list[dict] = []
        self.known = False  # agent_info read: it says which agents are GPUs
        self.guessed: dict[int, int] = {}
        for rows in infos[:1]:  # (every process of one machine writes the same agents)
            node, logical = rows.ints("Node_Id", -1), rows.ints("Logical_Node_Id", -1)
            kind = [k.strip().upper() for k in rows.text("Agent_Type")]
            order = sorted(range(len(rows)), key=lambda i: int(node[i]))
            gpus = [i for i in order if kind[i] == "GPU"]
            for i in order:
                idx = gpus.index(i) if i in gpus else -1
                self.by_node[int(node[i])] = idx
                self.by_logical[int(logical[i])] = idx
            self.gpus = [_gpu(rows, i, idx) for idx, i in enumerate(gpus)]
            self.known = bool(gpus)

    def learn(self, kernels: list[Rows], notes: list[str]) -> None:
        """The agents that ran kernels; where agent_info lists one of them as no GPU, those
        agents are the GPUs, in id order."""
        ran: set[int] = set()
        for rows in kernels:
            ran.update(n for lab, n in rows.agents("Agent_Id")[0] if lab not in ("GPU", "CPU") and n >= 0)
        self.guessed = {n: i for i, n in enumerate(sorted(ran))}
        if self.known and any(self.device("", n) < 0 for n in ran):
            odd = sorted(n for n in ran if self.device("", n) < 0)
            notes.append(
                f"agent_info lists no GPU of id {', '.join(map(str, odd[:4]))}, which ran kernels: "
                "the agents that ran kernels are taken as the GPUs, in id order"
            )
            self.known, self.gpus = False, []

    def device(self, label: str, n: int) -> int:
        if n < 0:
            return n  # ODD (unreadable) or -1 (none): as they are
        if label in ("GPU", "CPU"):
            return n if label == "GPU" else -1
        if self.known:
            return self.by_logical.get(n, self.by_node.get(n, -1))
        return self.guessed.get(n, -1)

    def devices(self, values: list[tuple[str, int]], index: np.ndarray) -> np.ndarray:
        lut = np.array([self.device(lab, n) for lab, n in values], np.int64)
        return lut[index] if len(lut) else np.zeros(0, np.int64)


def _gpu(rows: Rows, i: int, index: int) -> dict:
    def col(name: str, top: int = 0) -> Any:
        v = rows.text(name)[i].strip()[:256]
        if not top:
            return v
        return int(v) if v.isdigit() and int(v) < top else ""

    return {
        "type": common.GPU_AGENT,
        "index": index,
        "name": col("Name"),
        "product_name": col("Product_Name") or col("Model_Name"),
        "cu_count": col("Cu_Count", _MAX_CUS),
        "local_mem_size": col("Local_Mem_Size", _MAX_MEM),
    }
