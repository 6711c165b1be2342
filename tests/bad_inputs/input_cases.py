"""Cases of what a path can be and what a file can hold besides a broken event: not a
regular file (a FIFO would make a reader wait forever, a device never end), text in
another encoding, a trace with no events or no timed ones, events of one thread that
overlap without nesting, and odd but valid files (gzip members, odd characters in names)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from .common import ROCM, Case, _doc, doc, write
from .kineto_cases import with_events


def _fifo(where: Path) -> Path:
    p = where / "trace.json"
    os.mkfifo(p)
    return p


def _stretched_pair(where: Path) -> Path:
    """Two ops of one new thread: the second starts inside the first and ends 50 us after it."""
    d = doc()
    t0 = min(e["ts"] for e in d["traceEvents"] if e.get("ph") == "X")
    d["traceEvents"] += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 77, "ts": t0, "dur": 100.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 7, "tid": 77, "ts": t0 + 60, "dur": 90.0},
    ]
    return write(where, "stretched.json", json.dumps(d))


def _gzip_members(where: Path) -> Path:
    text = _doc(ROCM).encode()
    half = len(text) // 2
    return write(where, "t.json.gz", gzip.compress(text[:half], mtime=0) + gzip.compress(text[half:], mtime=0))


def _renamed(name: str):
    """The middle kernel renamed (written with json.dumps: escapes as JSON has them)."""

    def make(where: Path) -> Path:
        d = doc()
        ks = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
        ks[len(ks) // 2]["name"] = name
        return write(where, "renamed.json", json.dumps(d))

    return make


def input_cases() -> list[Case]:
    text = _doc(ROCM)
    meta = {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "worker"}}
    instant = {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 5.0, "s": "t"}
    return [
        Case("path_fifo", "error", _fifo, "not a regular file (a FIFO)"),
        Case("path_char_device", "error", lambda w: Path("/dev/zero"), "not a regular file (a character device)"),
        Case("path_is_a_directory_of_nothing", "error", lambda w: w, "directory holds no trace"),
        # RFC 8259 §8.1: a parser may ignore a UTF-8 byte-order mark; an editor writes one
        Case("text_utf8_bom", "ok", lambda w: write(w, "bom.json", b"\xef\xbb\xbf" + text.encode())),
        Case("text_utf16", "error", lambda w: write(w, "u16.json", text.encode("utf-16")), "UTF-16 text"),
        Case("events_empty_array", "error", lambda w: write(w, "e.json", '{"traceEvents": []}'), "no events"),
        Case(
            "events_metadata_only",
            "error",
            lambda w: write(w, "m.json", json.dumps({"traceEvents": [meta, meta]})),
            "no timed event",
        ),
        Case(
            "events_instant_only",
            "error",
            lambda w: write(w, "i.json", json.dumps({"traceEvents": [instant]})),
            "nothing to analyse: 1 instant event",
        ),
        Case("events_bare_empty_array", "error", lambda w: write(w, "b.json", "[]"), "not a supported"),
        Case(
            "timeline_overlap_without_nesting",
            "ok_warn",
            _stretched_pair,
            "1 host event(s) overlap another on their thread without nesting",
        ),
        Case(
            "timeline_stretch_within_jitter",
            "ok",
            with_events(
                {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 7, "tid": 78, "ts": 10.0, "dur": 5.0},
                {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 7, "tid": 78, "ts": 14.9, "dur": 5.0},
            ),
        ),
        Case("gzip_two_members", "ok", _gzip_members),
        Case("name_with_nul", "ok", _renamed("kernel\x00after_nul")),
        Case("name_of_a_megabyte", "ok", _renamed("k" * (1 << 20))),
        Case("name_lone_surrogate", "ok", _renamed("k\ud800x")),
    ]
