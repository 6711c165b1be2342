"""Large-trace paths on real files: the streamed Kineto reader equals the whole-file read,
the Perfetto export equals a plain json.dumps of the same events, and analyze's
--steps / --max-events keep what they say and report what they skipped."""

from __future__ import annotations

import gzip
import io
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import real_data
from conftest import same_columns

from xpu_profiler import analysis
from xpu_profiler.core import deflate, ordering
from xpu_profiler.core.profile import K_ANNOTATION, KINDS, PHASES
from xpu_profiler.exporters import chrome_trace, trace_stream
from xpu_profiler.exporters.validate import JS_SAFE
from xpu_profiler.knowledge.taxonomy import FUSED_OPS
from xpu_profiler.readers import ReadOptions, kineto
from xpu_profiler.readers.content import content_size
from xpu_profiler.readers.kineto import decode, handoff, stream
from xpu_profiler.testing import gen_trace

ROOT = Path(__file__).resolve().parents[1]

REAL = real_data.path("cuda-ns-resolution-rank0.pt.trace.json.gz")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict]:
    """A real generated trace (~30k events, 40+ steps) with its ground truth; .json and .json.gz."""
    path = tmp_path_factory.mktemp("gen") / "trace.json"
    truth = gen_trace.generate(30_000, str(path), seed=3, gzip_copy=True)
    return path, truth


def whole(path: Path):
    trace, parts, notes = kineto._read_whole(path)
    return kineto._assemble(path, ReadOptions(), trace, parts, notes)


def same(a, b) -> None:
    same_columns(a, b)
    assert a.run == b.run


def inputs(generated) -> list[Path]:
    path, _ = generated
    out = [path, Path(str(path) + ".gz")]
    if REAL.exists():
        out.append(REAL)
    return out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_streamed_equals_whole(generated, tmp_path: Path, monkeypatch, workers: str) -> None:
    """Cut into many small chunks (and decoded by forked workers), .json and .gz, generated
    and real traces: the same columns, strings and run info as one whole-file read."""
    files = inputs(generated)
    if REAL.exists():  # the real trace uncompressed too: the byte-range reader
        plain = tmp_path / "real.json"
        plain.write_bytes(gzip.decompress(REAL.read_bytes()))
        files.append(plain)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", workers)
    for path in files:
        expect = whole(path)
        calls = []
        monkeypatch.setattr(decode, "CHUNK_BYTES", 64 << 10)
        real = stream.read_streamed
        monkeypatch.setattr(kineto, "read_streamed", lambda *a: calls.append(r := real(*a)) or r)
        got = kineto.read(path, ReadOptions())
        assert calls and calls[0] is not None, f"{path.name} was not streamed"
        assert len(calls[0][1]) > 20, f"{path.name}: only {len(calls[0][1])} chunks"
        same(got, expect)
        monkeypatch.undo()
        monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
        monkeypatch.setenv("XPU_PROFILER_WORKERS", workers)


def test_gzip_chunks_reach_workers_in_shared_slots_or_the_pipe(generated, monkeypatch) -> None:
    """A decompressed stream's chunks go to the workers through shared slots; one too
    large for its slot (here: slots barely larger than a chunk) goes through the pipe.
    Either way the columns are those of a whole-file read."""
    gz = Path(str(generated[0]) + ".gz")
    expect = whole(gz)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(stream, "SLOT_SLACK", 200)  # events are ~300-600 bytes: some chunks overshoot
    monkeypatch.setattr(stream, "fork_workers", lambda amount, minimum: 2)  # even beside another test's threads
    sent = []
    tasks = handoff.Ring.tasks
    monkeypatch.setattr(
        handoff.Ring, "tasks", lambda self, parts: (sent.append(type(t)) or t for t in tasks(self, parts))
    )
    calls = []
    real = stream.read_streamed
    monkeypatch.setattr(kineto, "read_streamed", lambda *a: calls.append(r := real(*a)) or r)
    same(kineto.read(gz, ReadOptions()), expect)
    assert calls and calls[0] is not None, "not streamed"
    assert sent.count(tuple) >= 5 and sent.count(bytearray) >= 5, sent


def test_unstreamable_file_falls_back(tmp_path: Path) -> None:
    """A document whose events array is not where Kineto puts it is read whole, correctly."""
    doc = {
        "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2.0}],
        "otherEvents": [{"x": 1}, {"y": 2}],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    assert stream.read_streamed(path) is None
    prof = kineto.read(path, ReadOptions())
    assert len(prof.events) == 1 and int(prof.events["dur"][0]) == 2000


def _reference(profile) -> list[dict]:
    """The exported slices as a plain json.dumps of each event would write them."""
    ev, s = profile.events, profile.strings
    keep = (ev["start"] >= 0) & ((ev["kind"] != K_ANNOTATION) | (ev["device"] < 0))
    out = []
    for i in np.flatnonzero(keep).tolist():
        args = {"kind": KINDS[int(ev["kind"][i])]}
        if ev["fused"][i] >= 0:
            args["fused_op"] = FUSED_OPS[int(ev["fused"][i])]
        if ev["step"][i] >= 0:
            args["step"] = int(ev["step"][i])
            args["phase"] = PHASES[int(ev["phase"][i])]
        if 0 <= ev["corr"][i] < JS_SAFE:
            args["correlation"] = int(ev["corr"][i])
        out.append(
            {
                "ph": "X",
                "name": s[int(ev["name"][i])] or "[no name]",
                "ts": int(ev["start"][i]) / 1000,
                "dur": int(ev["dur"][i]) / 1000,
                "args": args,
            }
        )
    return json.loads(json.dumps(out))


def _key(e: dict) -> str:
    return json.dumps({k: e[k] for k in ("name", "ts", "dur", "args")}, sort_keys=True)


def test_perfetto_equals_plain_json(generated, tmp_path: Path, monkeypatch) -> None:
    path, truth = generated
    profile, summary = analysis.analyze([path])
    out = chrome_trace.write(profile, summary, tmp_path / "t.json.gz")
    raw = gzip.decompress(out.read_bytes())  # one stream, CRC and length checked
    assert raw == chrome_trace.to_bytes(profile, summary)
    doc = json.loads(raw)
    events = doc["traceEvents"]
    slices = [e for e in events if e["ph"] == "X" and e["tid"] >= chrome_trace.HOST_TID0]
    ref = _reference(profile)
    assert len(slices) == len(ref) > 10_000
    assert sorted(map(_key, slices)) == sorted(map(_key, ref))
    kernels = [e for e in slices if e["args"]["kind"] == "kernel"]
    assert len(kernels) == truth["kernels"]
    # sorted by (ts, longer first), metadata before everything
    body = [e for e in events if e["ph"] != "M"]
    assert all(e["ph"] == "M" for e in events[: len(events) - len(body)])
    order = [(e["ts"], -e.get("dur", 0)) for e in body]
    assert order == sorted(order)
    # flows: each start has its end, at a kernel's launch and at the kernel
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) >= truth["kernels"]
    # the same bytes when made by forked workers in many pieces
    monkeypatch.setattr(trace_stream, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(trace_stream, "PIECE_ROWS", 4096)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", "2")
    out2 = chrome_trace.write(profile, summary, tmp_path / "t2.json.gz")
    assert gzip.decompress(out2.read_bytes()) == raw
    d = zlib.decompressobj(31)
    assert d.decompress(out2.read_bytes()) == raw and d.eof and not d.unused_data  # a single gzip member


def test_trace_made_ahead_is_the_same(generated, tmp_path: Path) -> None:
    """The trace's part that needs neither attribution nor summary, made in a thread while
    the profile is attributed, is used and gives the bytes of a trace made after it."""
    path, _ = generated
    done = analysis.run([path], analysis.AnalyzeOptions(formats=("perfetto",)))
    made = done.ahead.get("perfetto") if done.ahead is not None else None
    assert made is not None and chrome_trace.usable(made, done.profile) is made
    ahead = chrome_trace.write(done.profile, done.summary, tmp_path / "ahead.json", ahead=made).read_bytes()
    profile2, summary2 = analysis.analyze([path])
    assert chrome_trace.write(profile2, summary2, tmp_path / "after.json").read_bytes() == ahead
    # a profile changed after the work was done is not exported from the stale part
    made2 = chrome_trace.ahead(profile2)
    assert chrome_trace.usable(made2, profile2) is made2
    profile2.events["start"] = profile2.events["start"] + 1000
    assert chrome_trace.usable(made2, profile2) is None


def test_lexsort_is_numpys() -> None:
    """ordering.lexsort gives np.lexsort's order, packed or not (spans too wide to pack)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 3000))
        pool = [
            rng.integers(-3, 3, n).astype(np.int8),
            rng.integers(0, 2, n).astype(bool),
            np.sort(rng.integers(0, 10**9, n)),
            rng.integers(-(2**40), 2**40, n),
            rng.integers(0, 50, n).astype(np.int32),
            rng.random(n),
        ]
        keys = [pool[i] for i in rng.choice(len(pool), int(rng.integers(1, 4)))]
        assert (ordering.lexsort(keys) == np.lexsort(keys)).all()


def test_gunzip_blocks_members_and_truncation() -> None:
    a, b = gzip.compress(b"a" * 5000 + bytes(range(256))), gzip.compress(b"b" * 3000)
    for size in (1, 7, len(a) - 1, len(a), len(a) + 1, 1 << 20):
        got = b"".join(t for t, _ in deflate.gunzip_blocks(io.BytesIO(a + b), size))
        assert got == b"a" * 5000 + bytes(range(256)) + b"b" * 3000, size
    with pytest.raises(EOFError):
        list(deflate.gunzip_blocks(io.BytesIO(a[:-12]), 64))


@pytest.mark.parametrize("native", [True, False])
def test_crc32_combine(native: bool, monkeypatch) -> None:
    """ISA-L's combine and the Python one (zlib's algorithm), against zlib's CRC of the whole."""
    if not native:
        monkeypatch.setattr(deflate, "_combine", None)
    elif deflate._combine is None:
        pytest.skip("isal is not installed")
    a, b = b"x" * 1000 + bytes(range(256)), b"abc" * 77777
    assert deflate.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
    assert deflate.crc32_combine(zlib.crc32(a), zlib.crc32(b""), 0) == zlib.crc32(a)
    big = 5 << 32  # a length past 32 bits: combining in two steps is combining at once
    assert deflate.crc32_combine(123, 456, big) == deflate.crc32_combine(deflate.crc32_combine(123, 0, big - 1), 456, 1)


def test_content_size_of_plain_and_gzip_files(generated, tmp_path: Path) -> None:
    """What bounds memory is the decompressed size, read from a gzip file's trailer."""
    path, _ = generated
    gz = Path(f"{path}.gz")
    assert content_size(path) == path.stat().st_size
    assert content_size(gz) == path.stat().st_size > 3 * gz.stat().st_size
    # over 4 GiB of content, which the trailer holds modulo 4 GiB: 65 self-contained
    # deflate pieces of 64 MiB of zeros (a full flush ends each), one gzip member
    zeros = bytes(64 << 20)
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    piece = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    n, crc = 65, zlib.crc32(zeros)
    total_crc = crc
    for _ in range(n - 1):
        total_crc = deflate.crc32_combine(total_crc, crc, len(zeros))
    big = tmp_path / "zeros.gz"
    with open(big, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        for _ in range(n):
            f.write(piece)
        f.write(c.flush())
        f.write(struct.pack("<II", total_crc, (n * len(zeros)) & 0xFFFFFFFF))
    assert big.stat().st_size < 32 << 20
    with open(big, "rb") as f:  # a genuine gzip file: it inflates to all of it, its crc checked
        assert sum(len(b) for b, _ in deflate.gunzip_blocks(f, 1 << 20)) == n * len(zeros)
    assert content_size(big) == n * len(zeros)


def _analyze(trace: Path, out: Path, *extra: str) -> tuple[dict, str]:
    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(trace), "-o", str(out), "--format", "json", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text()), r.stderr


def test_steps_and_max_events(generated, tmp_path: Path) -> None:
    path, truth = generated
    full, err = _analyze(path, tmp_path / "full")
    assert full["selection"] is None and "skipped" not in err
    assert full["totals"]["steps"] == truth["steps"] > 10
    n_all = len(analysis.analyze([path])[0].events)

    part, err = _analyze(path, tmp_path / "part", "--steps", "3:7")
    assert part["steps"]["step_id"] == [3, 4, 5, 6]
    sel = part["selection"]
    assert sel["steps"] == "3:7" and sel["events_total"] == n_all
    assert 0 < sel["events_kept"] < n_all
    assert sel["skipped_share"] == pytest.approx((n_all - sel["events_kept"]) / n_all, abs=1e-6)
    lines = [x for x in err.splitlines() if "skipped" in x]
    assert lines == [
        f"warning: kept {sel['events_kept']:,} of {n_all:,} events (steps 3:7): "
        f"{100 * sel['skipped_share']:.1f} % skipped"
    ]
    # every kept step's kernels are all there: the four steps' kernel time from the full run
    full_rows = [i for i, s in enumerate(full["steps"]["step_id"]) if 3 <= s < 7]
    assert part["steps"]["busy_ns"] == [full["steps"]["busy_ns"][i] for i in full_rows]

    first, err = _analyze(path, tmp_path / "first", "--max-events", "5000")
    sel = first["selection"]
    assert sel["events_kept"] == 5000 and sel["events_total"] == n_all and sel["max_events"] == 5000
    assert sel["skipped_share"] == pytest.approx(1 - 5000 / n_all, abs=1e-6)
    assert 0 < first["totals"]["steps"] < truth["steps"]
    assert "at most 5,000 events" in err

    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(path), "-o", str(tmp_path / "bad"), "--steps", "7:3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--steps '7:3'" in r.stderr
