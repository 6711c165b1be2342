"""The native reader (``readers/kineto/_scan.c``) against the pure-Python reader, its oracle.

For any chunk of events the scanner either declines (the pure-Python reader decodes it) or
gives columns equal to the reference's, array for array, dtype for dtype; where the
reference refuses a chunk, the scanner declines it too. Held on every shared real trace,
on the bad-input corpus, on random events of every field type hypothesis makes, and on
random truncations and byte changes of real events. The summary of a whole analysis is
byte-identical with the scanner on and off.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import bad_inputs
import msgspec
import numpy as np
import pytest
import real_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xpu_profiler.readers.base import looks_like_kineto
from xpu_profiler.readers.content import read_bytes
from xpu_profiler.readers.kineto import decode, native
from xpu_profiler.readers.kineto.schema import TAGGED_DECODER

pytestmark = pytest.mark.skipif(not native.built(), reason="the native reader is not built (no C compiler)")


def differs(a, b, where: str = "cols") -> str | None:
    """Where two values (Cols, arrays, containers) differ; None when equal."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{where}: {type(a).__name__} != {type(b).__name__}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        same = np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        # -0.0 and 0.0 are equal to numpy, not to a JSON writer
        if same and a.dtype.kind == "f":
            same = np.array_equal(np.signbit(a), np.signbit(b))
        return None if same else f"{where}: values differ"
    if isinstance(a, msgspec.Struct):
        for f in a.__struct_fields__:
            d = differs(getattr(a, f), getattr(b, f), f"{where}.{f}")
            if d:
                return d
        return None
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: {len(a)} != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = differs(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)[:5]} != {list(b)[:5]}"
        for k in a:
            d = differs(a[k], b[k], f"{where}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, float) and a != a and b != b:
        return None
    return None if a == b else f"{where}: {str(a)[:80]!r} != {str(b)[:80]!r}"


def reference(chunk) -> object:
    """The pure-Python reader's columns of a chunk, or the exception it raises."""
    old = os.environ.get(native.PURE_ENV)
    os.environ[native.PURE_ENV] = "1"
    try:
        return decode.decode_cols(chunk)
    except Exception as e:  # noqa: BLE001 (any refusal: the scanner must decline it too)
        return e
    finally:
        if old is None:
            del os.environ[native.PURE_ENV]
        else:
            os.environ[native.PURE_ENV] = old


def agrees(chunk) -> bool:
    """Assert the scanner declines the chunk or equals the reference; whether it took it."""
    got = native.native_cols(chunk)
    ref = reference(chunk)
    if isinstance(ref, Exception):
        assert got is None, f"the reference refuses the chunk ({ref}); the scanner read it"
        return False
    if got is not None:
        assert differs(got, ref) is None, differs(got, ref)
    return got is not None


def plain(chunk) -> bool:
    """A chunk the scanner must take: every event typed as the schema types it, no
    Begin/End or async event (the reference pairs those), nothing skipped."""
    try:
        events = json.loads(bytes(chunk))
        TAGGED_DECODER.decode(chunk)
    except (ValueError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    ref = reference(chunk)
    return (
        not isinstance(ref, Exception)
        and not ref.skipped
        and not ref.odd
        and all(e.get("ph") not in ("B", "E", "b", "e") for e in events)
    )


@pytest.mark.parametrize("path", real_data.kineto_files("*.json*"), ids=lambda p: p.name)
def test_every_chunk_of_a_real_trace(path: Path) -> None:
    """Each chunk of every shared Kineto trace: equal columns, and every plain chunk taken."""
    data = read_bytes(path)
    _, raw = decode.top_level(path, data)
    for a, b in decode.chunks(raw, 1 << 20):
        chunk = decode.framed(raw[a:b])
        took = agrees(chunk)
        if not took:
            assert not plain(chunk), f"the scanner declined a plain chunk of {path.name} (bytes {a}..{b})"


@pytest.mark.filterwarnings("ignore:Duplicate name")  # a case writes a bundle with one on purpose
def test_the_bad_input_corpus() -> None:
    """Every Kineto case of the bad-input corpus, as chunks: the same columns or declined."""
    if not bad_inputs.CASES:
        pytest.skip(real_data.MISSING)
    import tempfile

    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in bad_inputs.CASES:
            where = Path(tmp) / case.name
            where.mkdir()
            try:
                p = case.build(where)
                data = read_bytes(p) if p.is_file() else b""
            except Exception:  # noqa: BLE001 (cases that are no readable file)
                continue
            if data.lstrip()[:1] not in (b"{", b"[") or not looks_like_kineto(data[:65536]):
                continue
            try:
                _, raw = decode.top_level(p, data)
            except Exception:  # noqa: BLE001 (the array cannot be found: no chunk to compare)
                continue
            for a, b in decode.chunks(raw, 1 << 16):
                agrees(decode.framed(raw[a:b]))
                checked += 1
    assert checked > 50


# ---- random events ----------------------------------------------------------------------

_text = st.one_of(
    st.sampled_from(["", "aten::mm", "[memory]", "thread_name", "process_name", "python_function", "kernel"]),
    st.text(max_size=12),
)
_number = st.one_of(
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -0.0, 1e300, 1.5e-320, 123456789.123456, 2**53 + 1]),
)
_value = st.one_of(_number, _text, st.none(), st.booleans(), st.lists(st.integers(0, 9), max_size=3))
_CATS = ["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "python_function", "Trace", "user_annotation", "odd"]
_ARG_KEYS = [
    "External id",
    "correlation",
    "kernel",
    "kind",
    "bytes",
    "flops",
    "Input Dims",
    "Collective name",
    "Seq",
    "dtype",
    "Group size",
    "Total Allocated",
    "Total Reserved",
    "Device Type",
    "name",
    "other",
]
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "i", "M", "s", "f", "C", "B", "E", "Q", "XX"])},
    optional={
        "name": st.one_of(_text, _value),
        "cat": st.one_of(st.sampled_from(_CATS), _value),
        "pid": st.one_of(st.integers(-5, 2**64), _value),
        "tid": st.one_of(st.integers(-5, 9), _value),
        "ts": st.one_of(st.floats(0, 1e12), _value),
        "dur": st.one_of(st.floats(0, 1e6), _value),
        "args": st.one_of(st.dictionaries(st.sampled_from(_ARG_KEYS), _value, max_size=5), _value),
        "id": _value,
    },
)


_int64 = st.integers(-(2**63), 2**63 - 1)
_good_args = st.fixed_dictionaries(
    {},
    optional={
        "External id": _int64,
        "correlation": st.integers(-1, 10**6),
        "kernel": st.one_of(st.none(), _text),
        "kind": st.one_of(st.integers(-1, 5), st.sampled_from(["1", "2", "Dispatch Kernel"])),
        "bytes": st.one_of(st.floats(0, 1e12), st.integers(0, 2**40), st.sampled_from(["128", "x", " 64 "])),
        "flops": st.one_of(st.floats(-1, 1e15), st.integers(0, 2**62)),
        "Input Dims": st.lists(st.lists(st.integers(0, 4096), max_size=3), max_size=3),
        "Collective name": st.one_of(_text, st.integers()),
        "Seq": st.one_of(st.integers(-2, 99), _text),
        "Process Group Ranks": st.lists(st.integers(0, 7), max_size=4),
        "Total Allocated": st.floats(0, 2**40),
        "Total Reserved": st.floats(-1, 2**40),
        "Device Type": st.integers(-1, 2),
        "name": st.one_of(st.none(), _text),
        "Call stack": _text,
    },
)
#: events typed as the schema types them, of the phases the scanner reads: it must take them
_good_event = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "X", "X", "i", "I", "M", "s", "f", "C"]),
        "name": st.one_of(_text, st.sampled_from(["nn.Module: Linear_0", "llm/vllm/worker.py(12): execute_model"])),
        "ts": st.one_of(st.floats(-1e6, 1e13), st.integers(0, 2**52)),
    },
    optional={
        "cat": st.sampled_from(_CATS),
        "pid": st.one_of(_int64, st.sampled_from(["Spans", "0x7f", ""])),
        "tid": st.one_of(st.integers(0, 9), st.sampled_from(["PyTorch Profiler", "stream 7"])),
        "dur": st.one_of(st.floats(0, 1e6), st.integers(0, 10**6)),
        "args": _good_args,
        "id": _value,
    },
)


def _dumps(events: list, indent: int | None) -> bytes:
    return json.dumps(events, indent=indent, ensure_ascii=bool(indent)).encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, max_size=12), st.sampled_from([None, 1]))
def test_random_events(events: list, indent: int | None) -> None:
    agrees(_dumps(events, indent))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_good_event, min_size=1, max_size=12), st.sampled_from([None, 1]))
def test_random_well_typed_events_are_read_natively(events: list, indent: int | None) -> None:
    chunk = _dumps(events, indent)
    assert agrees(chunk) or not plain(chunk)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=6), st.data())
def test_random_bytes_changed(events: list, data) -> None:
    """Truncated, cut, spliced and byte-flipped events: declined or equal, never a crash."""
    raw = bytearray(_dumps(events, None))
    how = data.draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
    at = data.draw(st.integers(0, len(raw)))
    if how == "cut":
        raw = raw[:at]
    elif how == "flip" and at < len(raw):
        raw[at] = data.draw(st.integers(0, 255))
    elif how == "insert":
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    elif at < len(raw):
        del raw[at]
    agrees(bytes(raw))


@functools.cache
def _real_events() -> list[dict]:
    """A few hundred events of real traces of every vendor (the copies in this checkout)."""
    out: list[dict] = []
    for p in real_data.kineto_files("*.json*")[:8]:
        doc = json.loads(read_bytes(p))
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        out += events[:: max(1, len(events) // 60)][:60]
    return out


_KEYS = ["ph", "name", "cat", "pid", "tid", "ts", "dur", "args", "id", *_ARG_KEYS]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_real_events_with_a_field_changed(data) -> None:
    """Real events of other projects' traces, one field (or an args field) set to any value."""
    real = _real_events()
    if not real:
        pytest.skip(real_data.MISSING)
    events = [json.loads(json.dumps(e)) for e in data.draw(st.lists(st.sampled_from(real), min_size=1, max_size=8))]
    for _ in range(data.draw(st.integers(1, 3))):
        e = data.draw(st.sampled_from(events))
        key = data.draw(st.sampled_from(_KEYS))
        value = data.draw(st.one_of(_value, st.dictionaries(st.sampled_from(_ARG_KEYS), _value, max_size=3)))
        if key in _ARG_KEYS and isinstance(e.get("args"), dict):
            e["args"][key] = value
        else:
            e[key] = value
    agrees(_dumps(events, data.draw(st.sampled_from([None, 1]))))


@pytest.mark.parametrize(
    "event",
    [
        b'{"ph":"X","name":"a","ts":1,"dur":1,"ts":2}',  # a known key twice
        b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"correlation":1,"correlation":2}}',
        b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"flops":1},"args":{"flops":2}}',
        b'{"ph":"X","name":"a","ts":1,"dur":1,"args":null,"args":{"flops":2}}',
        b'{"ph":"X","name":"a","ts":1,"dur":1,"x":1,"x":2}',  # an unread key twice: taken
        b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"flops":1,"x":[1,{"y":2}],"x":3}}',
    ],
)
def test_repeated_keys_are_declined_or_equal(event: bytes) -> None:
    """A key written twice: the scanner declines a read key's second value (whichever the
    reference keeps), and reads past the keys it does not read, as the reference does."""
    taken = agrees(b"[" + event + b"," + event + b"]")
    assert taken == (b'"x"' in event)


def test_deep_nesting_and_long_numbers_are_declined_or_equal() -> None:
    deep = b'[{"ph":"X","name":"a","ts":1,"dur":1,"args":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}}]"
    agrees(deep)
    long_num = b'[{"ph":"X","name":"a","ts":' + b"1" * 400 + b'.5,"dur":1}]'
    agrees(long_num)
    agrees(b'[{"ph":"X","name":"a","ts":1,"dur":1}')  # the array left open
    agrees(b"")
    # numbers past a double's range, in every kind of field: inf or 0, as the reference reads them
    for event in (
        b'{"ph":"X","name":"a","cat":"kernel","ts":1e400,"dur":1}',
        b'{"ph":"X","name":"a","cat":"kernel","ts":1,"dur":-1e400}',
        b'{"ph":"X","name":"a","cat":"kernel","ts":1,"dur":1,"args":{"flops":1e400}}',
        b'{"ph":"X","name":"a","cat":"gpu_memcpy","ts":1,"dur":1,"args":{"bytes":1e-400}}',
    ):
        agrees(b"[" + event + b"]")
    agrees(b'[{"ph":"i","name":"[memory]","ts":1,"args":{"Total Allocated":1e400,"Device Type":0}}]')


def test_outputs_identical_with_the_compiled_parts_on_and_off(tmp_path: Path) -> None:
    """A whole analysis, in two processes: summary.json and the Perfetto trace byte for byte,
    on a real vLLM trace and a generated one large enough to be read in parallel chunks."""
    from xpu_profiler.testing import gen_trace

    gen = tmp_path / "gen.json"
    gen_trace.generate(230_000, str(gen), seed=3)  # ~70 MB: past decode.PARALLEL_MIN_BYTES
    assert gen.stat().st_size > decode.PARALLEL_MIN_BYTES
    for p in (real_data.need("gpu-inference/vllm-llama-tp4-h100-rank0.pt.trace.json.gz"), gen):
        outs = []
        for pure in ("0", "1"):
            out = tmp_path / f"{p.name}.{pure}"
            env = {**os.environ, native.PURE_ENV: pure}
            r = subprocess.run(
                [sys.executable, "-m", "xpu_profiler", "analyze", str(p), "--format", "json,perfetto", "-o", str(out)],
                env=env,
                capture_output=True,
                text=True,
            )
            assert r.returncode == 0, r.stderr
            outs.append(((out / "summary.json").read_bytes(), gzip.decompress((out / "trace.json.gz").read_bytes())))
        assert outs[0][0] == outs[1][0], f"{p.name}: summary.json"
        assert outs[0][1] == outs[1][1], f"{p.name}: the Perfetto trace"


# ---- template filling (the trace writer's, core/_fill.c) against Python's own % ----------

_piece = st.one_of(
    st.sampled_from([b"%d", b"%s", b"%%", b"%x", b"%03d", b"%", b'{"ph":"X","ts":', b"\xff\x00"]),
    st.binary(max_size=8).map(lambda b: b.replace(b"%", b"")),
)
_fill_value = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**70), 2**70),
    st.binary(max_size=6),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_piece, max_size=12), st.lists(_fill_value, max_size=8))
def test_fill_is_pythons_percent(pieces: list, values: list) -> None:
    from xpu_profiler.core import compiled

    fmt = b"".join(pieces)
    try:
        want: object = fmt % tuple(values)
    except Exception as e:  # noqa: BLE001 (the same error either way)
        want = type(e)
    try:
        got: object = compiled.fill(fmt, values)
    except Exception as e:  # noqa: BLE001
        got = type(e)
    assert got == want


def test_fill_of_typed_templates_is_done_in_c() -> None:
    """The trace writer's templates (%d ints, %s bytes, %%) never fall back to Python's %."""
    _fill = pytest.importorskip("xpu_profiler.core._fill")

    fmt = b'{"name":"a%%b","pid":%d,"ts":%d.%s},\n' * 3
    values = [1, -(2**63), b"000", 0, 2**63 - 1, b"999", -7, 12, b""]
    assert _fill.fill(fmt, values) == fmt % tuple(values)
    assert _fill.fill(b"%d", [True]) is None and _fill.fill(b"%d", [2**64]) is None


def test_version_says_which_reader(monkeypatch) -> None:
    from click.testing import CliRunner

    from xpu_profiler.cli.main import main

    monkeypatch.delenv(native.PURE_ENV, raising=False)
    out = CliRunner().invoke(main, ["--version"])
    assert out.exit_code == 0 and out.output.splitlines()[-1] == "native reader: yes"
    monkeypatch.setenv(native.PURE_ENV, "1")
    out = CliRunner().invoke(main, ["--version"])
    assert out.output.splitlines()[-1] == f"native reader: no ({native.PURE_ENV} is set: the pure-Python reader)"
    assert native.native_cols(b'[{"ph":"X","name":"a","ts":1,"dur":1}]') is None  # and it is not used
