"""The analysis: attribution and the summary, stateless functions over a Profile.

- ``attribute(profile, taxonomy, capture)`` fills the derived event columns (depth,
  step, phase, fused op, attribution source) and each step's busy time
  (``attribution``, with graph replays through ``replays``);
- ``summarize(profile)`` builds the typed ``Summary`` every exporter reads
  (``summarize``, from ``breakdown``, ``tables``, ``device_steps``, ``idle``,
  ``sources``, ``throughput``, ``memory``).

``intervals`` holds the interval sweeps (nesting, containment, unions) everything
here is made of; ``steps`` turns step annotations into the steps table; ``launches``
links device work to the runtime call that launched it.
"""

from .attribution import attribute
from .summarizer import summarize

__all__ = ["attribute", "summarize"]
