"""Kunlun `[XPURT_PROF]` kernel logs: one text file per rank (`rank_N.log[.gz]`).

With ``XPUAPI_DEBUG=0x1`` and ``XPURT_DISPATCH_MODE=PROFILING`` the Kunlun
runtime prints one line per finished kernel on the process's stdout/stderr,
mixed with everything else the process prints (vLLM's own log lines)::

    [XPURT_PROF] _ZN10xblas_xpu313fc_cdnn_inferI...EEvPKT_... 179220 123600 ns

What is known about these lines comes from vLLM-Kunlun's profiling guide
(``docs/source/developer_guide/performance/performance_benchmark/profiling.md``)
and the parser it ships (``op_log.py``):

- field layout: Kunlun1 ``name x time``, Kunlun2/3 (P800 is Kunlun3)
  ``name time x``; the parser takes ``time`` and divides it by a per-generation
  factor (0.9, 1.3, 1.45 for Kunlun1/2/3) to get nanoseconds. The factors look
  like clock rates in GHz, i.e. ``time`` is in device cycles; the other number
  is then already in ns. When both numbers are present we use their ratio to
  tell the generation (see ``detect_generation``); ``ReadOptions.xpu_gen``
  always wins, and without either we assume Kunlun3 (P800) and say so.
- names are single, C++-mangled tokens (the parser pipes them through
  ``c++filt``); we demangle them through libstdc++'s ``__cxa_demangle`` (or
  ``c++filt``), dropping the parameter list as the parser does.
- lines starting with ``gtest_``, indented 4 spaces per nesting level, name the
  XPU API call that launched the kernels after them. The scope at one level
  (``ReadOptions.extra["xpurt_scope_level"]``, default 0 = outermost) becomes
  each kernel's ``group``.
- a variant prints ``[XPURT_PROF] name: 1234 ns`` (one number, already in ns);
  it is read as such.

The rank comes from the file name (``rank_N``), else ``ReadOptions.rank``,
else 0 with a warning. Lines that are not kernel or scope lines are counted
(``run["xpurt_ranks"][rank]["other_lines"]``), as are ``[XPURT_PROF]`` lines in
no known layout, such as a last line cut short while the file was written.

The lines have no timestamps, streams or step markers, so the Profile holds one
kernel event per line with a duration and no start (``NO_TIME``), and
``Profile.has_timeline`` is False: every output must say that the timeline is
missing rather than invent one.

Parsing runs regular expressions over the whole (bytes) text, split only at
scope lines; the fields are split and converted in bulk, names are interned and
demangled once per distinct name (about 1.5 s per million kernel lines).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np

from ...core import compression
from ...core.errors import TraceError
from ...core.profile import EVENT_SCHEMA, K_KERNEL, NO_TIME, Profile, Table
from ...knowledge.devices import kunlun
from ...knowledge.kernel_names import demangle_names
from ..base import RANK_IN_NAME, ReadOptions, resolve_rank
from ..content import NOT_UTF8, iter_content, read_bytes, text_encoding

NAME = "xpurt_log"

TAG = b"[XPURT_PROF]"

#: cycles per nanosecond (clock in GHz) by Kunlun generation, and the device of each
UNIT_FACTORS, DEFAULT_GEN, GEN_DEVICES = kunlun.CLOCK_GHZ, kunlun.DEFAULT_GENERATION, kunlun.GENERATION_DEVICES

MAX_KERNEL_NS = 1e15  # ~11.6 days: a longer kernel is no real one, and a few would overflow int64 sums
_NUM = rb"\d+(?:\.\d+)?"
# "name a b ns" as one group: joined and split on whitespace in C, not matched per field.
_K3 = re.compile(rb"\[XPURT_PROF\][ \t]+(\S+[ \t]+" + _NUM + rb"[ \t]+" + _NUM + rb")[ \t]+ns\b")
# "name: N ns" / "name N ns" (N already in ns); the name may hold spaces.
_K1 = re.compile(rb"\[XPURT_PROF\][ \t]+(\S(?:[^\r\n]*?\S)?)(:?)[ \t]+(" + _NUM + rb")[ \t]*ns\b")
# a name without the colon that ends in a number: the line held more numbers than a layout has
# ("name a b c ns"), no name with spaces
_ENDS_IN_NUMBER = re.compile(rb"[ \t]" + _NUM + rb"$")
# gtest_ scope lines: indentation (4 spaces a level) and text
_SCOPE = re.compile(rb"^([ \t]*)(gtest_[^\r\n]*)", re.M)
_RANK_FILE = re.compile(RANK_IN_NAME + r"\.(log|txt|out)(\.gz)?", re.I)  # rank_3.log
_TEXT_SUFFIXES = (".log", ".txt", ".out", ".log.gz", ".txt.gz", ".out.gz")
_SCAN_LIMIT = 256 << 20  # bytes a sniff may scan for the tag in a large text log


# -- sniffing ------------------------------------------------------------------


def sniff(path: Path, head: bytes) -> bool:
    """A file holding ``[XPURT_PROF]`` lines, or a per-rank log file (even an empty one)."""
    if TAG in head:
        return True
    if _RANK_FILE.fullmatch(path.name):
        return True
    # vLLM prints a lot before the first kernel runs: look further into text logs.
    if path.name.lower().endswith(_TEXT_SUFFIXES) and len(head) >= 64 * 1024 and not _binary(head):
        return _scan_for_tag(path)
    return False


def _binary(head: bytes) -> bool:
    return b"\x00" in head[:4096]


def _scan_for_tag(path: Path) -> bool:
    try:
        seen, tail = 0, b""
        for chunk in iter_content(path):
            if TAG in tail + chunk[: len(TAG)] or TAG in chunk:
                return True
            tail = chunk[-len(TAG) :]
            seen += len(chunk)
            if seen >= _SCAN_LIMIT:
                return False
    except compression.READ_ERRORS:
        return False
    return False


# -- generation --------------------------------------------------------------------


def detect_generation(first: np.ndarray, second: np.ndarray) -> int | None:
    """Kunlun generation from the two numbers of ``name a b ns`` lines, or None.

    If one number is device cycles and the other nanoseconds, their ratio is the
    clock in GHz: ``a / b`` ≈ 1.3 or 1.45 (Kunlun2/3 layout: time = a) or
    ``b / a`` ≈ 0.9 (Kunlun1 layout: time = b). The call is made only when at least
    90% of the lines agree within 5% and the median within 2%.
    """
    ok = (first > 0) & (second > 0)
    if ok.sum() == 0:
        return None
    a, b = first[ok], second[ok]
    for gen, ratio in ((3, a / b), (2, a / b), (1, b / a)):
        f = UNIT_FACTORS[gen]
        if abs(np.median(ratio) / f - 1) < 0.02 and np.mean(np.abs(ratio / f - 1) < 0.05) >= 0.9:
            return gen
    return None


# -- reading -------------------------------------------------------------------------


def _numbers(tokens: list[bytes]) -> np.ndarray:
    if not tokens:
        return np.zeros(0, dtype=np.float64)
    try:
        return np.array(list(map(int, tokens)), dtype=np.float64)
    except (ValueError, OverflowError):  # decimals; numbers with hundreds of digits (→ inf, skipped)
        return np.array(list(map(float, tokens)), dtype=np.float64)


class _Segment:
    """Kernel lines of one stretch of text (between two scope lines)."""

    __slots__ = ("names3", "first", "second", "names1", "ns1", "group")

    def __init__(self, text: bytes, group: int):
        self.group = group
        found = _K3.findall(text)
        flat = b" ".join(found).split() if found else []
        self.names3 = flat[0::3]
        self.first = flat[1::3]
        self.second = flat[2::3]
        self.names1: list[bytes] = []
        self.ns1: list[bytes] = []
        if text.count(TAG) > len(found):  # other layouts: read them from what is left
            rest = _K3.sub(b"", text) if found else text
            for name, colon, value in _K1.findall(rest):
                if colon or not _ENDS_IN_NUMBER.search(name):  # (the others: in no known layout)
                    self.names1.append(name)
                    self.ns1.append(value)

    def __len__(self) -> int:
        return len(self.names3) + len(self.names1)


def _segments(data: bytes, level_wanted: int, strings) -> tuple[list[_Segment], int]:
    """Split the text at `gtest_` scope lines; each piece knows its scope (group) id."""
    if b"gtest_" not in data:
        return [_Segment(data, -1)], 0
    segs, pos, group, n_scopes = [], 0, -1, 0
    for m in _SCOPE.finditer(data):
        n_scopes += 1
        segs.append(_Segment(data[pos : m.start()], group))
        pos = m.end()
        level = len(m.group(1).replace(b"\t", b"    ")) // 4
        if level == level_wanted:
            label = re.split(rb"[(<]", m.group(2).strip(), maxsplit=1)[0]
            group = strings.intern(label.decode("utf-8", "replace"))
        elif level < level_wanted:
            group = -1  # the enclosing scope ended: kernels after it are outside any
    segs.append(_Segment(data[pos:], group))
    return [s for s in segs if len(s)], n_scopes


def read(path: Path, options: ReadOptions) -> Profile:
    data = read_bytes(path, options.progress)
    encoding = text_encoding(data[:4])
    if encoding and TAG not in data:  # (a log redirected by a Windows shell): no tag would match
        raise TraceError(path, NOT_UTF8.format(encoding))
    prof = Profile()
    prof.run["timeline_note"] = (
        "[XPURT_PROF] logs give per-kernel durations only: no timestamps, "
        "streams or engine steps, so there is no timeline and no phase split"
    )
    rank = resolve_rank(path, options)  # the file name says it; --rank is for one that does not
    if rank is None:
        rank = 0
        prof.warn(f"{path.name}: rank not in the file name (rank_N.log) and not given; taken as rank 0")
    gen_opt = options.xpu_gen
    if gen_opt is not None and gen_opt not in UNIT_FACTORS:
        raise TraceError(path, f"unknown Kunlun generation {gen_opt} (expected 1, 2 or 3)")
    level_wanted = int((options.extra or {}).get("xpurt_scope_level", 0))

    lines = _LineCounts(data)
    segs, n_scopes = _segments(data, level_wanted, prof.strings)
    del data
    lines.count(segs, n_scopes)
    gen, gen_source = _generation(prof, path, segs, gen_opt, lines.n3)
    raw_names, dur_ns, group = _durations(prof, path, segs, gen)
    name_ids, how = _name_ids(prof, raw_names)
    n = len(dur_ns)
    cat = prof.strings.intern("XPURT_PROF")
    prof.events = Table(
        EVENT_SCHEMA,
        {
            "name": name_ids,
            "kind": np.full(n, K_KERNEL, dtype=np.int8),
            "start": np.full(n, NO_TIME, dtype=np.int64),
            "dur": dur_ns,
            "rank": np.full(n, rank, dtype=np.int32),
            "cat": np.full(n, cat, dtype=np.int32),
            "group": group,
        },
        n=n,
    )
    stats = lines.stats(rank, gen, gen_source, how, int(dur_ns.sum()))
    _note_run(prof, path, stats, lines, rank, gen, gen_source)
    return prof


class _LineCounts:
    """What the lines of one log are: kernel lines of each layout, scope lines, the rest."""

    def __init__(self, data: bytes):
        self.lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        self.tags = data.count(TAG)
        last = data[data.rfind(b"\n") + 1 :]
        self.truncated_last = bool(last) and TAG in last and not (_K3.search(last) or _K1.search(last))
        self.scopes = 0
        self.n3 = self.n1 = self.kernels = self.malformed = 0

    def count(self, segs: list[_Segment], scopes: int) -> None:
        """The kernel lines found (``name a b ns``: n3, ``name: N ns``: n1), the scope lines,
        and the tagged lines in neither layout."""
        self.scopes = scopes
        self.n3 = sum(len(s.names3) for s in segs)
        self.n1 = sum(len(s.names1) for s in segs)
        self.kernels = self.n3 + self.n1
        self.malformed = self.tags - self.kernels

    def stats(self, rank: int, gen: int, gen_source: str, demangler, kernel_ns: int) -> dict:
        """The log's record in the run (``xpurt_ranks``, its source entry)."""
        n3, n1 = self.n3, self.n1
        return {
            "rank": int(rank),
            "lines": int(self.lines),
            "kernel_lines": int(self.kernels),
            "scope_lines": int(self.scopes),
            "other_lines": int(max(self.lines - self.kernels - self.scopes - max(self.malformed, 0), 0)),
            "malformed_lines": int(max(self.malformed, 0)),
            "xpu_gen": int(gen),
            "xpu_gen_source": gen_source,
            "cycles_per_ns": UNIT_FACTORS[gen] if n3 else None,
            "layout": ("name x time (Kunlun1)" if gen == 1 else "name time x (Kunlun2/3)")
            if n3
            else ("name time ns" if n1 else None),
            "demangler": demangler,
            "kernel_ns": kernel_ns,
        }


def _generation(prof: Profile, path: Path, segs: list[_Segment], gen_opt: int | None, n3: int) -> tuple[int, str]:
    """The Kunlun generation and what said it: the option, else the cycles/ns ratio of the
    first lines, else P800 (warned when the lines have two numbers to tell it by)."""
    sample_a = _numbers(list(itertools.islice((t for s in segs for t in s.first), 20000)))
    sample_b = _numbers(list(itertools.islice((t for s in segs for t in s.second), 20000)))
    detected = detect_generation(sample_a, sample_b) if n3 else None
    if gen_opt is not None:
        gen, gen_source = gen_opt, "option"
        if detected is not None and detected != gen_opt:
            prof.warn(
                f"{path.name}: the numbers in the log look like Kunlun{detected} "
                f"but Kunlun{gen_opt} was given; using Kunlun{gen_opt}"
            )
    elif detected is not None:
        gen, gen_source = detected, "detected (cycles/ns ratio of the two numbers per line)"
    else:
        gen, gen_source = DEFAULT_GEN, "default"
        if n3:
            prof.warn(
                f"{path.name}: Kunlun generation not given and not recognisable from the log; "
                f"assuming P800 (Kunlun3: fields name, time, x; {UNIT_FACTORS[3]} cycles/ns). "
                f"Use --xpu-gen to change it"
            )
    return gen, gen_source


def _durations(prof: Profile, path: Path, segs: list[_Segment], gen: int) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """(raw names, durations in ns, scope group) of every kernel line: the 3-field lines of
    every segment, then the 1-number lines; durations out of range are skipped and warned."""
    factor = UNIT_FACTORS[gen]
    raw_names: list[bytes] = []
    values: list[bytes] = []
    group_parts = []
    for s in segs:
        raw_names += s.names3
        values += s.second if gen == 1 else s.first
        group_parts.append(np.full(len(s.names3), s.group, dtype=np.int32))
    dur = _numbers(values) / factor
    for s in segs:
        raw_names += s.names1
        group_parts.append(np.full(len(s.names1), s.group, dtype=np.int32))
    ns1 = _numbers([t for s in segs for t in s.ns1])  # "name: N ns": already nanoseconds
    dur_f = np.concatenate([dur, ns1])
    group = np.concatenate(group_parts) if group_parts else np.zeros(0, np.int32)
    absurd = ~(dur_f <= MAX_KERNEL_NS)  # NaN and inf too: the int64 column would wrap
    n_absurd = int(np.count_nonzero(absurd))
    if n_absurd:
        first = raw_names[int(np.argmax(absurd))].decode("utf-8", "replace")
        prof.warn(
            f"{path.name}: skipped {n_absurd} kernel line{'s' if n_absurd > 1 else ''} with a duration "
            f"out of range (first: {first[:60]!r}, {str(dur_f[absurd][0])[:24]} ns)"
        )
        keep = ~absurd
        raw_names = [x for x, k in zip(raw_names, keep.tolist()) if k]
        dur_f, group = dur_f[keep], group[keep]
        if not len(dur_f):
            raise TraceError(path, f"not a valid log: all {n_absurd} kernel lines have a duration out of range")
    return raw_names, np.rint(dur_f).astype(np.int64), group


def _name_ids(prof: Profile, raw_names: list[bytes]) -> tuple[np.ndarray, str]:
    """The kernels' name ids (distinct raw names interned, each demangled once), and the
    demangler used."""
    first_seen: dict[bytes, int] = {}
    sparse = np.fromiter(map(first_seen.setdefault, raw_names, itertools.count()), dtype=np.int64, count=len(raw_names))
    uniq, local_ids = np.unique(sparse, return_inverse=True)
    distinct = [raw_names[i].decode("utf-8", "replace") for i in uniq.tolist()]
    pretty, how = demangle_names(distinct)
    ids = prof.strings.intern_many(pretty)
    return (ids[local_ids] if len(raw_names) else np.zeros(0, np.int32)), how


def _note_run(prof: Profile, path: Path, stats: dict, lines: _LineCounts, rank: int, gen: int, gen_source: str) -> None:
    """The log's record in the run, the device it says, and a warning for each kind of line
    left out (or for a log without kernel lines)."""
    prof.run["sources"] = [{"path": str(path), "format": NAME, **stats}]
    prof.run["xpurt_ranks"] = {str(rank): stats}
    if lines.kernels:  # an empty log says nothing about the device
        prof.run["device"] = GEN_DEVICES[gen]
        prof.run["xpu_gen"] = int(gen)
        prof.run["xpu_gen_source"] = gen_source
    if lines.kernels == 0:
        prof.warn(
            f"{path.name}: no [XPURT_PROF] lines for rank {rank} (were XPUAPI_DEBUG=0x1 and "
            f"XPURT_DISPATCH_MODE=PROFILING set in that process?)"
        )
    other_bad = lines.malformed
    if lines.truncated_last:
        prof.warn(f"{path.name}: the last line is cut short (file still being written?); it was skipped")
        other_bad -= 1
    if other_bad > 0:
        prof.warn(f"{path.name}: {other_bad} [XPURT_PROF] line(s) in no known layout were skipped")
