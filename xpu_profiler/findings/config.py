"""Threshold overrides from a TOML file (``--findings-config FILE``)::

    min_at_stake = 0.01            # drop findings under 1% of step time (default 0.5%)

    [kv_cache_pressure]            # a rule id
    usage = 0.9                    # one of its thresholds
    window_share = 0.1

    [client_limited]
    enabled = false                # switch a rule off

Unknown rule ids, threshold names or non-numeric values end with one line (exit 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import XpuProfilerError
from ..core.regular import require_regular
from ..core.toml import TOMLDecodeError, loads
from .rules import RULES

MIN_AT_STAKE = 0.005


@dataclass(frozen=True)
class FindingsConfig:
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # rule id → overrides
    disabled: frozenset = frozenset()
    min_at_stake: float = MIN_AT_STAKE
    source: str = ""

    def for_rule(self, rule_id: str) -> dict[str, float]:
        rule = next(r for r in RULES if r.id == rule_id)
        return {**rule.thresholds, **self.thresholds.get(rule_id, {})}


DEFAULT = FindingsConfig()


def load_config(path: str | Path) -> FindingsConfig:
    """Read and check a findings TOML file."""
    p = Path(path)
    try:
        require_regular(p, "the findings config is a TOML file")
        data = loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise XpuProfilerError(f"{p}: no such findings config file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise XpuProfilerError(f"{p}: cannot read findings config ({e})") from None
    except TOMLDecodeError as e:
        raise XpuProfilerError(f"{p}: not valid TOML ({e})") from None
    rules = {r.id: r for r in RULES}
    thresholds: dict[str, dict[str, float]] = {}
    disabled = set()
    min_at_stake = MIN_AT_STAKE
    for key, value in data.items():
        if key == "min_at_stake":
            min_at_stake = _number(p, key, value)
            continue
        if key not in rules:
            raise XpuProfilerError(f"{p}: unknown rule {key!r} (rules: {', '.join(rules)})")
        if not isinstance(value, dict):
            raise XpuProfilerError(f"{p}: [{key}] must be a table of thresholds")
        for name, v in value.items():
            if name == "enabled":
                if not isinstance(v, bool):
                    raise XpuProfilerError(f"{p}: [{key}] enabled must be true or false")
                if not v:
                    disabled.add(key)
            elif name not in rules[key].thresholds:
                known = ", ".join(rules[key].thresholds) or "none"
                raise XpuProfilerError(f"{p}: rule {key!r} has no threshold {name!r} (thresholds: {known})")
            else:
                thresholds.setdefault(key, {})[name] = _number(p, f"{key}.{name}", v)
    return FindingsConfig(thresholds=thresholds, disabled=frozenset(disabled), min_at_stake=min_at_stake, source=str(p))


def _number(p: Path, key: str, v: object) -> float:
    """A threshold: a finite number (TOML reads ``nan`` and ``inf``: a rule judged against them
    says "under nan us" or never fires; a negative one may mean "any": ``drop = -1``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise XpuProfilerError(f"{p}: {key} must be a number, not {v!r}")
    try:
        x = float(v)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise XpuProfilerError(f"{p}: {key} must be a finite number, not {v!r:.40}")
    return x
