"""What ``diff`` compares: a summary.json as it is, anything else (trace, directory,
bundle) analysed first. A directory holding exactly one ``*summary.json`` (what the live
command and ``analyze`` write) is read through it."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TraceError
from ..core.regular import require_regular
from ..readers.base import is_json_document, looks_like_kineto
from ..readers.content import is_gzip, read_head
from ..summary import Summary, load_summary

#: distinct kernel names kept per summary analysed here (complete lists align exactly)
DIFF_TOP = 100_000


def _summary_file(p: Path) -> Path | None:
    """The summary.json ``p`` is (or holds, for a directory); None for anything else."""
    if p.is_dir():
        found = sorted(p.glob("*summary.json"))
        return found[0] if len(found) == 1 else None
    if p.suffix == ".json" and not is_gzip(p):
        head = read_head(p)
        if is_json_document(head) and not looks_like_kineto(head):  # a JSON document that is no trace
            return p
    return None


def load_input(path: str | Path, taxonomy=None) -> Summary:
    """The Summary of one side of a diff (findings evaluated afresh by the caller)."""
    from ..analysis import analyze

    p = Path(path)
    if not p.exists():
        raise TraceError(p, "no such file or directory")
    require_regular(p, "pass a summary.json, a trace or a directory", directory_ok=True)
    sfile = _summary_file(p)
    if sfile is not None:
        try:
            return load_summary(sfile)
        except ValueError as e:
            raise TraceError(sfile, str(e).split(": ", 1)[-1]) from None
    return analyze([p], taxonomy=taxonomy, top=DIFF_TOP)[1]
