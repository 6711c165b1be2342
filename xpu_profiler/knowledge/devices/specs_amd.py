"""AMD Instinct parts: peak dense FLOP/s per dtype, HBM bandwidth and size, from AMD's data
sheets; ``match`` words identify the part in a device name ("AMD Instinct MI300X")."""

from __future__ import annotations

from .base import SpecRow

AMD: tuple[SpecRow, ...] = ()
