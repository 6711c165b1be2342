"""A generated corpus of bad reader inputs, derived at test time from real traces.

Every case starts from a real file (a ROCm MI250 Kineto trace, an SGLang MI300X decode
trace, a two-rank CUDA job, from ``../shared/data/real-traces``) and breaks one thing:
one event's field set to each bad kind of value, a non-object among the events, odd
``[memory]`` args or metadata, odd top-level fields, step names beyond int64, the file
truncated, garbage, empty or its gzip corrupt; the same for [XPURT_PROF] logs and
XProfiler traces made from that trace's kernels, for a bundle written by the real code,
and for a directory of rank files with one bad file.

Each case has its expected class: ``error`` (one line naming the file, exit 2),
``ok_warn`` (exit 0 and a warning holding ``expect``, the kind and the count) or ``ok``
(exit 0, no warning about it). ``CASES`` is the list; ``Case.build(dir)`` writes the
input and returns its path.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import shutil
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "data" / "real-traces"
ROCM = REAL / "rocm-mi250-minitoy.json.gz"
SGLANG = REAL / "tracelens" / "sglang-qwen3-8b-decode.json.gz"
TWO_RANKS = REAL / "two-ranks"
SEEDS = (ROCM, SGLANG, TWO_RANKS / "rank-0.json.gz", TWO_RANKS / "rank-1.json.gz")


@dataclass(frozen=True)
class Case:
    name: str
    expect: str                       # error / ok_warn / ok
    make: Callable[[Path], Path]      # writes the input below a directory, returns its path
    text: str = ""                    # error: part of the line; ok_warn: part of one warning line

    def build(self, where: Path) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        return self.make(where)


@lru_cache(maxsize=None)
def _doc(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def doc(path: Path = ROCM) -> dict:
    return json.loads(_doc(path))


MISSING = object()


class Raw(str):
    """A JSON value written as is (NaN, Infinity, a thousand-digit number)."""


def dumps(value) -> str:
    """JSON with Raw values spliced in verbatim."""
    marks: dict[str, str] = {}

    def walk(v):
        if isinstance(v, Raw):
            key = f"@@RAW{len(marks)}@@"
            marks[key] = str(v)
            return key
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    text = json.dumps(walk(value))
    for key, raw in marks.items():
        text = text.replace(f'"{key}"', raw)
    return text


def write(where: Path, name: str, data: bytes | str) -> Path:
    path = where / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def kernel_index(d: dict, cat: str = "kernel") -> int:
    """A device kernel in the middle of the trace: the event every mutation breaks."""
    idx = [i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == cat]
    return idx[len(idx) // 2]


def mutated(field: str, value, seed: Path = ROCM, cat: str = "kernel", sub: str | None = None) -> Callable:
    def make(where: Path) -> Path:
        d = doc(seed)
        e = d["traceEvents"][kernel_index(d, cat)]
        target = e.setdefault("args", {}) if sub == "args" else e
        if value is MISSING:
            target.pop(field, None)
        else:
            target[field] = value
        return write(where, "mutated.json", dumps(d))
    return make


# -- one event's field set to each bad kind ------------------------------------------------------

BIG = Raw("1" + "0" * 1000)  # a thousand digits
VALUES = {
    "missing": MISSING, "null": None, "true": True, "list": [1], "object": {"a": 1}, "text": "abc",
    "numeric_text": "12.5", "nan": Raw("NaN"), "inf": Raw("Infinity"), "minus_inf": Raw("-Infinity"),
    "negative": -5, "huge_float": 1e300, "int64_overflow": 10 ** 25, "thousand_digits": BIG,
    "minus_int64_overflow": -(10 ** 25),
}
_NUM_BAD = {"null", "true", "list", "object", "text", "nan", "inf", "minus_inf", "huge_float",
            "int64_overflow", "thousand_digits", "minus_int64_overflow"}
# field → value names that make the event odd, and the kind its warning names (a prefix of it)
BAD = {
    "ph": ({"missing", "null", "true", "list", "object", "nan", "inf", "minus_inf", "negative", "huge_float",
            "int64_overflow", "thousand_digits", "minus_int64_overflow"}, None),
    "ts": (_NUM_BAD | {"missing"}, None),
    "dur": (_NUM_BAD | {"missing", "negative"}, None),
    "name": ({"null", "true", "list", "object", "nan", "inf", "minus_inf", "negative", "huge_float",
              "int64_overflow", "thousand_digits", "minus_int64_overflow"}, "with a wrong-typed 'name'"),
    "cat": ({"null", "true", "list", "object", "nan", "inf", "minus_inf", "negative", "huge_float",
             "int64_overflow", "thousand_digits", "minus_int64_overflow"}, "with a wrong-typed 'cat'"),
    # a huge or non-finite pid is a track id like any other (as Perfetto takes it): kept
    "pid": ({"null", "true", "list", "object"}, None),
    "args": ({"null", "true", "list", "text", "numeric_text", "nan", "inf", "minus_inf", "negative", "huge_float",
              "int64_overflow", "thousand_digits", "minus_int64_overflow"}, "with a wrong-typed 'args'"),
}
KIND_OF = {  # the warning's kind for a (field, value name) where the table above says None
    ("ph", "missing"): "with no 'ph' field", ("ts", "missing"): "with no 'ts' field",
    ("dur", "missing"): "with no 'dur' field", ("dur", "negative"): "with a negative duration",
    ("ts", "text"): "with a non-numeric 'ts'", ("dur", "text"): "with a non-numeric 'dur'",
}


def _kind(field: str, vname: str) -> str:
    if (field, vname) in KIND_OF:
        return KIND_OF[(field, vname)]
    fixed = BAD[field][1]
    if fixed:
        return fixed
    if field == "ph":
        return "with a wrong-typed 'ph'" if vname != "null" else "with no 'ph' field"
    if field in ("ts", "dur"):
        if vname in ("nan", "inf", "minus_inf"):
            return "with a non-finite time"
        if vname in ("huge_float", "int64_overflow", "thousand_digits", "minus_int64_overflow"):
            return "with a time out of range"
        return "with no 'ts' field" if (vname == "null" and field == "ts") else \
            "with no 'dur' field" if vname == "null" else f"with a wrong-typed '{field}'"
    if field == "pid":
        return "with an odd field" if vname == "null" else "with a wrong-typed 'pid'"
    raise KeyError((field, vname))


def field_cases() -> list[Case]:
    out = []
    for field, (bad, _) in BAD.items():
        for vname, value in VALUES.items():
            name = f"kineto_{field}_{vname}"
            if vname in bad:
                out.append(Case(name, "ok_warn", mutated(field, value), f"skipped 1 event {_kind(field, vname)}"))
            else:  # loose where Perfetto is (numeric strings, string pids, an unused phase "abc")
                out.append(Case(name, "ok", mutated(field, value)))
    return out


# -- ids, [memory] args, metadata, non-objects, top-level fields -----------------------------

def id_cases() -> list[Case]:
    """Correlation / External ids are loose: an odd one is absent, the event is kept."""
    out = []
    for key in ("correlation", "External id"):
        for vname in ("true", "list", "text", "nan", "int64_overflow", "thousand_digits", "huge_float"):
            out.append(Case(f"kineto_args_{key.replace(' ', '_')}_{vname}", "ok",
                            mutated(key, VALUES[vname], sub="args")))
    return out


def with_memory(args: dict | None = None, ts=MISSING) -> Callable:
    """A Kineto [memory] instant (as torch.profiler's profile_memory writes) beside a real kernel."""
    def make(where: Path) -> Path:
        d = doc()
        k = d["traceEvents"][kernel_index(d)]
        good = {"ph": "i", "s": "t", "name": "[memory]", "pid": k["pid"], "tid": k["tid"], "ts": k["ts"],
                "args": {"Total Allocated": 1 << 20, "Total Reserved": 2 << 20, "Device Type": 1, "Bytes": 512}}
        odd = copy.deepcopy(good)
        odd["args"].update(args or {})
        if ts is not MISSING:
            odd["ts"] = ts
        d["traceEvents"] += [good, odd]
        return write(where, "memory.json", dumps(d))
    return make


def memory_cases() -> list[Case]:
    out = [Case("kineto_memory_good", "ok", with_memory())]
    for vname in ("text", "list", "true", "negative", "nan", "inf", "huge_float", "int64_overflow", "thousand_digits"):
        out.append(Case(f"kineto_memory_alloc_{vname}", "ok_warn",
                        with_memory({"Total Allocated": VALUES[vname]}), "skipped 1 event with odd [memory] args"))
    for vname in ("text", "list", "int64_overflow"):
        out.append(Case(f"kineto_memory_device_type_{vname}", "ok_warn",
                        with_memory({"Device Type": VALUES[vname]}), "skipped 1 event with odd [memory] args"))
    for vname in ("nan", "text", "huge_float", "null"):
        out.append(Case(f"kineto_memory_ts_{vname}", "ok_warn", with_memory(ts=VALUES[vname]),
                        "skipped 1 event with odd [memory] args (no usable time)"))
    return out


def with_events(*extra, seed: Path = ROCM) -> Callable:
    def make(where: Path) -> Path:
        d = doc(seed)
        d["traceEvents"][10:10] = list(extra)
        return write(where, "extra.json", dumps(d))
    return make


def structure_cases() -> list[Case]:
    out = []
    for vname, v in (("number", 5), ("string", "x"), ("null", None), ("list", [1, 2]), ("true", True),
                     ("nan", Raw("NaN"))):
        out.append(Case(f"kineto_non_object_{vname}", "ok_warn", with_events(v),
                        "skipped 1 event that are not JSON objects (first: #10)"))
    out.append(Case("kineto_non_objects_three", "ok_warn", with_events(1, 2, 3),
                    "skipped 3 events that are not JSON objects (first: #10)"))
    for vname in ("true", "list", "int64_overflow", "object"):
        meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": VALUES[vname]}}
        out.append(Case(f"kineto_metadata_name_{vname}", "ok_warn", with_events(meta),
                        "skipped 1 event with odd metadata (first: #10 'thread_name')"))
    # step names with counts beyond int64 (no step name, never a traceback)
    for i, step in enumerate(("ProfilerStep#99999999999999999999",
                              "execute_context_1(99999999999999999999)_generation_3(3)",
                              "step[DECODE bs=99999999999999999999]",
                              "ProfilerStep#" + "9" * 5000,
                              "capture_99999999999999999999999_FULL")):
        ann = {"ph": "X", "cat": "user_annotation", "name": step, "pid": 1, "tid": 1, "ts": 4203669603100.0,
               "dur": 50.0, "args": {}}
        out.append(Case(f"kineto_step_name_overflow_{i}", "ok", with_events(ann)))
        out.append(Case(f"sglang_step_name_overflow_{i}", "ok", with_events(ann, seed=SGLANG)))
    for key, vname in (("baseTimeNanoseconds", "int64_overflow"), ("baseTimeNanoseconds", "negative"),
                       ("baseTimeNanoseconds", "thousand_digits")):
        out.append(Case(f"kineto_top_{key}_{vname}", "ok_warn", top(key, VALUES[vname]), "baseTimeNanoseconds"))
    for key, vname in (("distributedInfo", "text"), ("deviceProperties", "text"), ("schemaVersion", "text"),
                       ("schemaVersion", "nan")):
        out.append(Case(f"kineto_top_{key}_{vname}", "ok_warn", top(key, VALUES[vname]),
                        f"ignored the odd top-level field '{key}'"))
    out.append(Case("kineto_top_rank_overflow", "ok_warn", top("distributedInfo", {"rank": 10 ** 25}),
                    "ignored the odd top-level field 'distributedInfo'"))
    out.append(Case("kineto_input_dims_thousand_digits", "ok", mutated("Input Dims", [[BIG]], cat="cpu_op",
                                                                        sub="args")))
    out.append(Case("kineto_flops_nan", "ok", mutated("flops", Raw("NaN"), cat="cpu_op", sub="args")))
    return out


def top(key: str, value) -> Callable:
    def make(where: Path) -> Path:
        d = doc()
        d[key] = value
        return write(where, "top.json", dumps(d))
    return make


def several_kinds() -> Case:
    """Three kinds at once: one warning per kind, with its count and first example."""
    def make(where: Path) -> Path:
        d = doc()
        ks = [i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == "kernel"]
        for i in ks[:3]:
            d["traceEvents"][i]["dur"] = -1
            d["traceEvents"][i]["name"] = "odd_kernel"
        d["traceEvents"][ks[3]]["ts"] = Raw("NaN")
        d["traceEvents"].insert(ks[4], 7)
        return write(where, "several.json", dumps(d))
    first = kernel_first_index()
    return Case("kineto_three_kinds", "ok_warn", make,
                f"skipped 3 events with a negative duration (first: #{first} 'odd_kernel')")


def kernel_first_index() -> int:
    return next(i for i, e in enumerate(doc()["traceEvents"]) if e.get("cat") == "kernel")


def all_bad() -> list[Case]:
    def make(where: Path) -> Path:
        d = doc()
        for e in d["traceEvents"]:
            if isinstance(e, dict):
                e["dur"] = -1
                e["ts"] = Raw("NaN")
        return write(where, "all_bad.json", dumps(d))
    return [Case("kineto_all_events_bad", "error", make, "no usable event")]


# -- file-level breakage ----------------------------------------------------------------------

def raw_text(seed: Path = ROCM) -> bytes:
    return _doc(seed).encode()


def file_cases() -> list[Case]:
    text = raw_text()
    n = len(text)
    out = []
    for frac in (0.02, 0.1, 0.5, 0.9, 0.999):
        out.append(Case(f"truncated_{frac}", "error", lambda w, k=int(n * frac): write(w, "cut.json", text[:k]),
                        "truncated JSON"))
    out.append(Case("truncated_before_close", "error", lambda w: write(w, "cut.json", text.rstrip()[:-1]),
                    "truncated JSON"))
    for i, at in enumerate((0.3, 0.6)):
        k = int(n * at)
        out.append(Case(f"garbage_inside_{i}", "error",
                        lambda w, k=k: write(w, "garbage.json", text[:k] + b"\x00\xff@@garbage@@" + text[k:]),
                        "malformed JSON"))
    gz = gzip.compress(text, mtime=0)
    out += [
        Case("empty", "error", lambda w: write(w, "empty.json", b""), "empty file"),
        Case("whitespace_only", "error", lambda w: write(w, "blank.json", b"   \n\t\n"), "empty file"),
        Case("binary_garbage", "error", lambda w: write(w, "x.json", bytes(range(256)) * 16), "not a supported"),
        Case("gzip_truncated", "error", lambda w: write(w, "t.json.gz", gz[: len(gz) // 2]), "gzip"),
        Case("gzip_corrupt_middle", "error",
             lambda w: write(w, "t.json.gz", gz[:200] + bytes(b ^ 0x5A for b in gz[200:400]) + gz[400:]), "gzip"),
        Case("gzip_of_garbage", "error", lambda w: write(w, "t.json.gz", gzip.compress(b"\x00garbage" * 100)),
             "not a supported"),
        Case("gzip_empty_member", "error", lambda w: write(w, "t.json.gz", gzip.compress(b"")), "empty file"),
        Case("json_not_a_trace", "error", lambda w: write(w, "t.json", b'{"hello": "world", "ph": 1}'), "not"),
        Case("trace_events_not_array", "error", lambda w: write(w, "t.json", b'{"traceEvents": {"ph": "X"}}'),
             "traceEvents is not an array"),
        Case("deep_nesting", "error",
             lambda w: write(w, "t.json", b'{"traceEvents": [' + b"[" * 100000 + b"]" * 100000 + b"]}"), "deeply"),
        Case("top_level_nan_only", "error", lambda w: write(w, "t.json", b'{"traceEvents": [NaN, NaN]}'),
             "no usable event"),
    ]
    return out


# -- XPURT_PROF logs made from the trace's kernels ----------------------------------------------

def xpurt_lines(n: int | None = None) -> list[str]:
    ks = [e for e in doc()["traceEvents"] if e.get("cat") == "kernel"]
    lines = []
    for e in ks[:n]:
        ns = int(e["dur"] * 1000)
        name = "_Z" + e["name"].split("(")[0].replace(" ", "_").replace(":", "")[:80]
        lines.append(f"[XPURT_PROF] {name} {int(ns * 1.45)} {ns} ns")
    return lines


def xpurt(lines: list[str], name: str = "rank_0.log", tail: str = "") -> Callable:
    return lambda w: write(w, name, "INFO vllm starting\n" + "\n".join(lines) + "\n" + tail)


def xpurt_cases() -> list[Case]:
    good = xpurt_lines()
    out = [Case("xpurt_good", "ok", xpurt(good))]
    for vname, num in (("huge", "9" * 30), ("thousand_digits", "9" * 1000), ("float_huge", "1" + "0" * 400 + ".5")):
        out.append(Case(f"xpurt_number_{vname}", "ok_warn",
                        xpurt(good + [f"[XPURT_PROF] _Zodd_kernel {num} 100 ns"]),
                        "skipped 1 kernel line with a duration out of range (first: '_Zodd_kernel'"))
        out.append(Case(f"xpurt_one_number_{vname}", "ok_warn",
                        xpurt(good + [f"[XPURT_PROF] _Zodd_kernel: {num} ns"]),
                        "skipped 1 kernel line with a duration out of range"))
    out += [
        Case("xpurt_cut_last_line", "ok_warn", xpurt(good, tail="[XPURT_PROF] _Zcut 12"), "the last line is cut short"),
        Case("xpurt_garbage_lines", "ok_warn", xpurt(good + ["[XPURT_PROF] ???", "[XPURT_PROF]"]),
             "2 [XPURT_PROF] line(s) in no known layout"),
        Case("xpurt_binary_noise", "ok", xpurt(good, tail="\x00\x01\x02 binary noise\n")),
        Case("xpurt_empty_rank_log", "error", lambda w: write(w, "rank_0.log", b""), "empty file"),
        Case("xpurt_all_absurd", "error", xpurt([f"[XPURT_PROF] _Zk {'9' * 40} 100 ns"] * 3),
             "duration out of range"),
    ]
    return out


# -- XProfiler traces made from the trace's kernels ---------------------------------------------

def xprofiler_doc() -> dict:
    ev = [{"ph": "M", "name": "process_name", "pid": 9000, "args": {"name": "XPU 0"}}]
    for e in doc()["traceEvents"]:
        if e.get("cat") == "kernel":
            ev.append({"ph": "X", "cat": "KERNEL", "name": e["name"], "pid": 9000, "tid": 3, "ts": e["ts"],
                       "dur": e["dur"], "args": {"stream_id": 3, "token": e["args"].get("correlation", -1)}})
        elif e.get("cat") == "cuda_runtime":
            ev.append({"ph": "X", "cat": "API", "name": "xpu_launch_async", "pid": 4242, "tid": 1, "ts": e["ts"],
                       "dur": e["dur"], "args": {"token": e["args"].get("correlation", -1)}})
    return {"traceEvents": ev}


def xprof(mutate: Callable[[list], None]) -> Callable:
    def make(where: Path) -> Path:
        d = xprofiler_doc()
        mutate(d["traceEvents"])
        return write(where, "xprofiler.trace.json", dumps(d))
    return make


def _set(field, value, i=5):
    def f(ev):
        ev[i][field] = value
    return f


def xprofiler_cases() -> list[Case]:
    out = [Case("xprofiler_good", "ok", xprof(lambda ev: None))]
    for field in ("ts", "dur"):
        for vname in ("nan", "inf", "text", "missing", "list"):
            v = VALUES[vname]
            f = (lambda ev, field=field: ev[5].pop(field)) if v is MISSING else _set(field, v)
            out.append(Case(f"xprofiler_{field}_{vname}", "ok_warn", xprof(f), f"with no usable '{field}'"))
        for vname in ("huge_float", "int64_overflow", "thousand_digits"):
            out.append(Case(f"xprofiler_{field}_{vname}", "ok_warn", xprof(_set(field, VALUES[vname])),
                            "with a time out of range"))
    out += [
        Case("xprofiler_dur_negative", "ok_warn", xprof(_set("dur", -3)), "skipped 1 event with a negative duration"),
        Case("xprofiler_non_object", "ok_warn", xprof(lambda ev: ev.insert(3, 42)), "that are not JSON objects"),
        Case("xprofiler_unknown_phase", "ok_warn", xprof(_set("ph", "Q")), "with a phase this reader cannot map"),
        Case("xprofiler_no_phase", "ok_warn", xprof(lambda ev: ev[5].pop("ph")), "with no 'ph' field"),
        Case("xprofiler_token_overflow", "ok", xprof(lambda ev: ev[5]["args"].update(token=10 ** 30))),
        Case("xprofiler_stream_thousand_digits", "ok", xprof(lambda ev: ev[5]["args"].update(stream_id=BIG))),
        Case("xprofiler_pid_overflow", "ok", xprof(_set("pid", 10 ** 30))),
        Case("xprofiler_device_name_overflow", "ok",
             xprof(lambda ev: ev[0]["args"].update(name="XPU 99999999999999999999"))),
        Case("xprofiler_unmatched_begin", "ok_warn",
             xprof(lambda ev: ev.append({"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"]})),
             "begin/end event(s) without a partner"),
        Case("xprofiler_end_before_begin", "ok_warn",
             xprof(lambda ev: ev.extend([{"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"]},
                                         {"ph": "E", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"] - 10}])),
             "skipped 1 event with a negative duration"),
        Case("xprofiler_counter_nan", "ok",
             xprof(lambda ev: ev.append({"ph": "C", "name": "mem", "pid": 1, "ts": ev[5]["ts"],
                                         "args": {"v": Raw("NaN")}}))),
        Case("xprofiler_counter_odd_args", "ok_warn",
             xprof(lambda ev: ev.append({"ph": "C", "name": "mem", "pid": 1, "ts": ev[5]["ts"], "args": 5})),
             "with odd counter args or time"),
        Case("xprofiler_all_bad", "error", xprof(lambda ev: [e.update(dur=-1) for e in ev[1:]]),
             "no usable event"),
        Case("xprofiler_truncated", "error",
             lambda w: write(w, "xprofiler.trace.json", dumps(xprofiler_doc())[:5000]), "truncated JSON"),
    ]
    return out


# -- bundles written by the real code, then broken ------------------------------------------------

@lru_cache(maxsize=None)
def bundle_bytes() -> bytes:
    """A bundle of the ROCm trace as ``xpu_profiler analyze --format bundle`` writes it."""
    import tempfile

    from xpu_profiler.readers import ReadOptions, kineto

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "seed.json.gz"
        shutil.copy(ROCM, src)
        prof = kineto.read(src, ReadOptions())
        return prof.save(Path(tmp) / "profile.npz").read_bytes()


def bundle_with(change: Callable[[dict], None]) -> Callable:
    def make(where: Path) -> Path:
        with np.load(io.BytesIO(bundle_bytes()), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        change(arrays)
        path = where / "profile.npz"
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)  # "meta" stays the first member
        return path
    return make


def _col(key: str, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], None]:
    def f(a: dict) -> None:
        a[key] = fn(a[key])
    return f


def _meta(fn: Callable[[dict], None]) -> Callable[[dict], None]:
    def f(a: dict) -> None:
        meta = json.loads(bytes(a["meta"]).decode())
        fn(meta)
        a["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    return f


def _set_at(arr: np.ndarray, value, dtype=None) -> np.ndarray:
    arr = arr.astype(dtype or arr.dtype).copy()
    arr[len(arr) // 2] = value
    return arr


def bundle_cases() -> list[Case]:
    broken = "broken xpu_profiler bundle"
    out = [Case("bundle_good", "ok", bundle_with(lambda a: None))]
    for key, value in (("events.name", 10 ** 6), ("events.name", -7), ("events.cat", 10 ** 6),
                       ("events.kind", 99), ("events.kind", -1), ("events.comm", 10 ** 6), ("events.step", 10 ** 6)):
        out.append(Case(f"bundle_{key.replace('.', '_')}_{value}", "error",
                        bundle_with(_col(key, lambda x, v=value: _set_at(x, v))), broken))
    out += [
        Case("bundle_start_nan", "error", bundle_with(_col("events.start", lambda x: _set_at(x, np.nan, np.float64))),
             "expected integers"),
        Case("bundle_start_2d", "error", bundle_with(_col("events.start", lambda x: np.stack([x, x]))),
             "not one-dimensional"),
        Case("bundle_length_mismatch", "error", bundle_with(_col("events.dur", lambda x: x[:-1])),
             "different lengths"),
        Case("bundle_name_int64", "error",
             bundle_with(_col("events.name", lambda x: _set_at(x, 1 << 40, np.int64))), "beyond int32"),
        Case("bundle_strings_not_text", "error", bundle_with(_meta(lambda m: m.update(strings=[1, 2]))),
             "string table"),
        Case("bundle_base_overflow", "error", bundle_with(_meta(lambda m: m.update(base_ns=10 ** 30))), "base_ns"),
        Case("bundle_meta_not_json", "error", bundle_with(lambda a: a.update(meta=np.frombuffer(b"\xff{", np.uint8))),
             broken),
        Case("bundle_object_array", "error", bundle_object_array, broken),
        Case("bundle_truncated", "error", lambda w: write(w, "profile.npz", bundle_bytes()[:2000]), broken),
        Case("bundle_dur_negative", "ok_warn", bundle_with(_col("events.dur", lambda x: _set_at(x, -5))),
             "skipped 1 events row with a negative or out-of-range time"),
        Case("bundle_start_overflowing", "ok_warn",
             bundle_with(_col("events.start", lambda x: _set_at(x, (1 << 63) - 1))), "skipped 1 events row"),
        Case("bundle_counter_nan", "ok_warn", bundle_counter_nan, "skipped 1 counters row"),
    ]
    return out


def bundle_object_array(where: Path) -> Path:
    """A pickled object array inside: never unpickled (``allow_pickle`` stays off)."""
    path = bundle_with(lambda a: None)(where)
    with zipfile.ZipFile(path, "a") as z:
        buf = io.BytesIO()
        np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
        z.writestr("events.track.npy", buf.getvalue())  # a second member of that name: read last
    return path


def bundle_counter_nan(where: Path) -> Path:
    def change(a: dict) -> None:
        a["counters.rank"] = np.zeros(2, np.int32)
        a["counters.name"] = np.zeros(2, np.int32)
        a["counters.t"] = np.array([10, 20], np.int64)
        a["counters.value"] = np.array([1.0, np.nan])
    return bundle_with(change)(where)


# -- a directory of rank files with one bad file ------------------------------------------------

def rank_dir(bad_name: str | None, bad: Callable[[], bytes] | None, n_bad: int = 1) -> Callable:
    def make(where: Path) -> Path:
        d = where / "ranks"
        d.mkdir()
        for f in sorted(TWO_RANKS.glob("rank-*.json.gz")):
            shutil.copy(f, d / f.name)
        if bad_name:
            for i in range(n_bad):
                write(d, bad_name.format(i + 2), bad())
        return d
    return make


def rank_dir_cases() -> list[Case]:
    r1 = lambda: gzip.decompress((TWO_RANKS / "rank-1.json.gz").read_bytes())  # noqa: E731
    out = [Case("ranks_good", "ok", rank_dir(None, None))]
    for what, name, bad, reason in (
            ("empty", "rank-{}.json.gz", lambda: b"", "empty file"),
            ("garbage", "rank-{}.json.gz", lambda: b"\x00garbage" * 50, "not a supported"),
            ("gzip_truncated", "rank-{}.json.gz", lambda: (TWO_RANKS / "rank-1.json.gz").read_bytes()[:3000],
             "truncated gzip"),
            ("json_truncated", "rank-{}.json", lambda: r1()[: len(r1()) // 2], "truncated JSON"),
            ("json_garbage", "rank-{}.json", lambda: r1()[:5000] + b"@@@" + r1()[5000:], "malformed JSON"),
            ("all_events_bad", "rank-{}.json",
             lambda: dumps({"traceEvents": [{"ph": "X", "ts": Raw("NaN"), "dur": 1}] * 3}).encode(),
             "not a valid trace: no usable event"),
            ("not_a_trace", "rank-{}.json", lambda: b'{"hello": 1}', "not a supported")):
        out.append(Case(f"ranks_one_{what}", "ok_warn", rank_dir(name, bad), "rank 2 is missing from the analysis"))
        out.append(Case(f"ranks_reason_{what}", "ok_warn", rank_dir(name, bad), f"dropped ({reason}"))
    out.append(Case("ranks_two_bad", "ok_warn", rank_dir("rank-{}.json.gz", lambda: b"", n_bad=2),
                    "rank 3 is missing from the analysis"))
    out.append(Case("ranks_all_bad", "error", all_bad_rank_dir, "empty file"))
    return out


def all_bad_rank_dir(where: Path) -> Path:
    d = where / "ranks"
    d.mkdir()
    write(d, "rank-0.json.gz", b"")
    write(d, "rank-1.json.gz", b"")
    return d


def all_cases() -> list[Case]:
    cases = (field_cases() + id_cases() + memory_cases() + structure_cases() + [several_kinds()] + all_bad()
             + file_cases() + xpurt_cases() + xprofiler_cases() + bundle_cases() + rank_dir_cases())
    assert len({c.name for c in cases}) == len(cases), "case names are unique"
    return cases


CASES: list[Case] = all_cases() if all(p.exists() for p in SEEDS) else []
