"""The analysis: attribution and the summary, stateless functions over a Profile.

- ``attribute(profile, taxonomy)`` fills the derived event columns (depth, step,
  phase, fused op) and each step's busy time (``attribution``);
- ``summarize(profile)`` builds the typed ``Summary`` every exporter reads
  (``summarize``, from ``breakdown``, ``tables``, ``throughput``, ``memory``).

``intervals`` holds the interval sweeps (nesting, containment, unions) everything
here is made of; ``steps`` turns vLLM's step annotations into the steps table.
"""

from .attribution import attribute
from .summarize import summarize

__all__ = ["attribute", "summarize"]
