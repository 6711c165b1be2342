"""``xpu_profiler diff BASE NEW``: what changed between two runs, per token, by phase.

``inputs.load_input`` turns a summary.json, trace, directory or bundle into a Summary;
``compare.compare`` aligns two of them into a ``summary.diff.DiffReport`` (stateless);
``compare.gate`` is ``--fail-on``; its terminal table is ``terminal.diff``.
"""

from .comparison import compare, gate
from .inputs import load_input

__all__ = ["compare", "gate", "load_input"]
