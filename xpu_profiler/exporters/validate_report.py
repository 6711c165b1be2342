"""The problems ``validate`` found, for the terminal: what fails a trace and what is a warning
(what Perfetto rejects or drops against what it imports through), and problems of one kind
counted once."""

from __future__ import annotations

import re

#: problems Perfetto imports through (a loss of precision, order it restores, a name or a flow
#: it reports in its stats): warnings for a trace of another writer; every other problem makes
#: it drop events or fail the import. Our own exports are held to all of them (``validate_bytes``).
TOLERATED = re.compile(
    r"more than 3 decimals|beyond 2\^53|not relative to a base|must start with \{\"traceEvents\"|not sorted by|"
    r"B/E pairs are fragile|'T' means different|has no process_name|has no thread_name|times for .*exactly one|"
    r"metadata with a ts|is ignored by Perfetto|counter series set differs|flow end without|^flow |inside no slice|"
    r"traceEvents is empty|partially overlaps its parent|is not an integer in 0\.\.2\^32-1"
)


def split_problems(problems: list[str]) -> tuple[list[str], list[str]]:
    """(what Perfetto rejects or drops, what it tolerates) of ``problems``."""
    errors = [p for p in problems if not TOLERATED.search(p)]
    return errors, [p for p in problems if TOLERATED.search(p)]


#: what differs between two problems of one kind: the event, its name, ids and numbers
_PARTICULARS = re.compile(r"event #\d+( \('(?:[^'\\]|\\.)*'\))?|'[^']*'|\"[^\"]*\"|-?\d[\d.e+]*")


def by_kind(problems: list[str]) -> list[tuple[str, int]]:
    """The problems by kind: (the first of each, how many), in the order first seen."""
    kinds: dict[str, list] = {}
    for p in problems:
        kinds.setdefault(_PARTICULARS.sub("#", p), [p, 0])[1] += 1
    return [(first, n) for first, n in kinds.values()]
