"""Findings: what to change in vLLM, ranked by the step time at stake.

``rules.RULES`` is the ordered, declarative rule table; ``engine.evaluate(summary)``
runs it on a Summary (stateless) and returns ``summary.Finding`` rows; ``config``
reads threshold overrides from a TOML file. Every output shows the findings first.
"""

from .config import DEFAULT, FindingsConfig, load_config
from .evaluation import attach, evaluate
from .rules import RULE_IDS, RULES, Rule

__all__ = [
    "DEFAULT",
    "FindingsConfig",
    "RULES",
    "RULE_IDS",
    "Rule",
    "attach",
    "evaluate",
    "load_config",
]
