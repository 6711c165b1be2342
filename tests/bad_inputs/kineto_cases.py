"""Kineto cases: one event's field set to each bad kind, ids, [memory] args, metadata,
non-objects, top-level fields, step names beyond int64, and file-level breakage."""

from __future__ import annotations

import copy
import gzip
from collections.abc import Callable
from pathlib import Path

from .common import BIG, CUDA, MISSING, ROCM, SGLANG, VALUES, Case, Raw, _doc, doc, dumps, kernel_index, mutated, write

_NUM_BAD = {
    "null",
    "true",
    "list",
    "object",
    "text",
    "nan",
    "inf",
    "minus_inf",
    "huge_float",
    "int64_overflow",
    "thousand_digits",
    "minus_int64_overflow",
}
# field → value names that make the event odd, and the kind its warning names (a prefix of it)
BAD = {
    "ph": (
        {
            "missing",
            "null",
            "true",
            "list",
            "object",
            "nan",
            "inf",
            "minus_inf",
            "negative",
            "huge_float",
            "int64_overflow",
            "thousand_digits",
            "minus_int64_overflow",
        },
        None,
    ),
    "ts": (_NUM_BAD | {"missing"}, None),
    "dur": (_NUM_BAD | {"missing", "negative"}, None),
    "name": (
        {
            "null",
            "true",
            "list",
            "object",
            "nan",
            "inf",
            "minus_inf",
            "negative",
            "huge_float",
            "int64_overflow",
            "thousand_digits",
            "minus_int64_overflow",
        },
        "with a wrong-typed 'name'",
    ),
    "cat": (
        {
            "null",
            "true",
            "list",
            "object",
            "nan",
            "inf",
            "minus_inf",
            "negative",
            "huge_float",
            "int64_overflow",
            "thousand_digits",
            "minus_int64_overflow",
        },
        "with a wrong-typed 'cat'",
    ),
    # a huge or non-finite pid is a track id like any other (as Perfetto takes it): kept
    "pid": ({"null", "true", "list", "object"}, None),
    "args": (
        {
            "null",
            "true",
            "list",
            "text",
            "numeric_text",
            "nan",
            "inf",
            "minus_inf",
            "negative",
            "huge_float",
            "int64_overflow",
            "thousand_digits",
            "minus_int64_overflow",
        },
        "with a wrong-typed 'args'",
    ),
}
KIND_OF = {  # the warning's kind for a (field, value name) where the table above says None
    ("ph", "missing"): "with no 'ph' field",
    ("ts", "missing"): "with no 'ts' field",
    ("dur", "missing"): "with no 'dur' field",
    ("dur", "negative"): "with a negative duration",
    ("ts", "text"): "with a non-numeric 'ts'",
    ("dur", "text"): "with a non-numeric 'dur'",
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
        return (
            "with no 'ts' field"
            if (vname == "null" and field == "ts")
            else "with no 'dur' field"
            if vname == "null"
            else f"with a wrong-typed '{field}'"
        )
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
            out.append(
                Case(f"kineto_args_{key.replace(' ', '_')}_{vname}", "ok", mutated(key, VALUES[vname], sub="args"))
            )
    return out


def with_memory(args: dict | None = None, ts=MISSING) -> Callable:
    """A Kineto [memory] instant (as torch.profiler's profile_memory writes) beside a real kernel."""

    def make(where: Path) -> Path:
        d = doc()
        k = d["traceEvents"][kernel_index(d)]
        good = {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": k["pid"],
            "tid": k["tid"],
            "ts": k["ts"],
            "args": {"Total Allocated": 1 << 20, "Total Reserved": 2 << 20, "Device Type": 1, "Bytes": 512},
        }
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
        out.append(
            Case(
                f"kineto_memory_alloc_{vname}",
                "ok_warn",
                with_memory({"Total Allocated": VALUES[vname]}),
                "skipped 1 event with odd [memory] args",
            )
        )
    for vname in ("text", "list", "int64_overflow"):
        out.append(
            Case(
                f"kineto_memory_device_type_{vname}",
                "ok_warn",
                with_memory({"Device Type": VALUES[vname]}),
                "skipped 1 event with odd [memory] args",
            )
        )
    for vname in ("nan", "text", "huge_float", "null"):
        out.append(
            Case(
                f"kineto_memory_ts_{vname}",
                "ok_warn",
                with_memory(ts=VALUES[vname]),
                "skipped 1 event with odd [memory] args (no usable time)",
            )
        )
    return out


def with_events(*extra, seed: Path = ROCM) -> Callable:
    def make(where: Path) -> Path:
        d = doc(seed)
        d["traceEvents"][10:10] = list(extra)
        return write(where, "extra.json", dumps(d))

    return make


def structure_cases() -> list[Case]:
    out = []
    for vname, v in (
        ("number", 5),
        ("string", "x"),
        ("null", None),
        ("list", [1, 2]),
        ("true", True),
        ("nan", Raw("NaN")),
    ):
        out.append(
            Case(
                f"kineto_non_object_{vname}",
                "ok_warn",
                with_events(v),
                "skipped 1 entry that is not a JSON object (first: #10)",
            )
        )
    out.append(
        Case(
            "kineto_non_objects_three",
            "ok_warn",
            with_events(1, 2, 3),
            "skipped 3 entries that are not JSON objects (first: #10)",
        )
    )
    for vname in ("true", "list", "int64_overflow", "object"):
        meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": VALUES[vname]}}
        out.append(
            Case(
                f"kineto_metadata_name_{vname}",
                "ok_warn",
                with_events(meta),
                "skipped 1 event with odd metadata (first: #10 'thread_name')",
            )
        )
    # step names with counts beyond int64 (no step name, never a traceback)
    for i, step in enumerate(
        (
            "ProfilerStep#99999999999999999999",
            "execute_context_1(99999999999999999999)_generation_3(3)",
            "step[DECODE bs=99999999999999999999]",
            "ProfilerStep#" + "9" * 5000,
            "capture_99999999999999999999999_FULL",
        )
    ):
        ann = {
            "ph": "X",
            "cat": "user_annotation",
            "name": step,
            "pid": 1,
            "tid": 1,
            "ts": 4203669603100.0,
            "dur": 50.0,
            "args": {},
        }
        out.append(Case(f"kineto_step_name_overflow_{i}", "ok", with_events(ann)))
        out.append(Case(f"sglang_step_name_overflow_{i}", "ok", with_events(ann, seed=SGLANG)))
    for key, vname in (
        ("baseTimeNanoseconds", "int64_overflow"),
        ("baseTimeNanoseconds", "negative"),
        ("baseTimeNanoseconds", "thousand_digits"),
    ):
        out.append(Case(f"kineto_top_{key}_{vname}", "ok_warn", top(key, VALUES[vname]), "baseTimeNanoseconds"))
    for key, vname in (
        ("distributedInfo", "text"),
        ("deviceProperties", "text"),
        ("schemaVersion", "text"),
        ("schemaVersion", "nan"),
    ):
        out.append(
            Case(
                f"kineto_top_{key}_{vname}",
                "ok_warn",
                top(key, VALUES[vname]),
                f"ignored the odd top-level field '{key}'",
            )
        )
    out.append(
        Case(
            "kineto_top_rank_overflow",
            "ok_warn",
            top("distributedInfo", {"rank": 10**25}),
            "ignored the odd top-level field 'distributedInfo'",
        )
    )
    out.append(
        Case("kineto_input_dims_thousand_digits", "ok", mutated("Input Dims", [[BIG]], cat="cpu_op", sub="args"))
    )
    out.append(Case("kineto_flops_nan", "ok", mutated("flops", Raw("NaN"), cat="cpu_op", sub="args")))
    return out


def other_seed_cases() -> list[Case]:
    """The times of a kernel in the SGLang (MI300X, HIP graph) and CUDA two-rank traces; collective
    args and FLOPs with numbers beyond int64."""
    out = []
    for seed, label, vnames in (
        (SGLANG, "sglang", ("nan", "text", "huge_float", "thousand_digits", "missing")),
        (CUDA, "cuda", ("nan",)),
    ):  # the CUDA trace is larger: a few cases
        for field in ("ts", "dur"):
            for vname in vnames:
                out.append(
                    Case(
                        f"{label}_{field}_{vname}",
                        "ok_warn",
                        mutated(field, VALUES[vname], seed=seed),
                        f"skipped 1 event {_kind(field, vname)}",
                    )
                )
        out.append(
            Case(
                f"{label}_dur_negative",
                "ok_warn",
                mutated("dur", -5, seed=seed),
                "skipped 1 event with a negative duration",
            )
        )
        out.append(
            Case(
                f"{label}_name_list",
                "ok_warn",
                mutated("name", [1], seed=seed),
                "skipped 1 event with a wrong-typed 'name'",
            )
        )
    for key in ("Seq", "In msg nelems", "Out msg nelems", "Group size"):
        for vname in ("thousand_digits", "int64_overflow", "nan", "list"):
            out.append(Case(f"kineto_comm_{key.replace(' ', '_')}_{vname}", "ok", with_comm({key: VALUES[vname]})))
    for vname in ("huge_float", "int64_overflow", "thousand_digits", "negative"):
        out.append(Case(f"kineto_flops_{vname}", "ok", mutated("flops", VALUES[vname], cat="cpu_op", sub="args")))
    return out


def with_comm(args: dict) -> Callable:
    """A kernel carrying record_param_comms' collective args (as NCCL kernels do), one of them odd."""

    def make(where: Path) -> Path:
        d = doc()
        e = d["traceEvents"][kernel_index(d)]
        e["args"].update(
            {
                "Collective name": "allreduce",
                "Process Group Name": "0",
                "Seq": 3,
                "In msg nelems": 1024,
                "Out msg nelems": 1024,
                "Group size": 2,
                "dtype": "Float",
            }
        )
        e["args"].update(args)
        return write(where, "comm.json", dumps(d))

    return make


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
    return Case(
        "kineto_three_kinds",
        "ok_warn",
        make,
        f"skipped 3 events with a negative duration (first: #{first} 'odd_kernel')",
    )


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
        out.append(
            Case(
                f"truncated_{frac}",
                "error",
                lambda w, k=int(n * frac): write(w, "cut.json", text[:k]),
                "truncated JSON",
            )
        )
    out.append(
        Case("truncated_before_close", "error", lambda w: write(w, "cut.json", text.rstrip()[:-1]), "truncated JSON")
    )
    for i, at in enumerate((0.3, 0.6)):
        k = int(n * at)
        out.append(
            Case(
                f"garbage_inside_{i}",
                "error",
                lambda w, k=k: write(w, "garbage.json", text[:k] + b"\x00\xff@@garbage@@" + text[k:]),
                "malformed JSON",
            )
        )
    gz = gzip.compress(text, mtime=0)
    out += [
        Case("empty", "error", lambda w: write(w, "empty.json", b""), "empty file"),
        Case("whitespace_only", "error", lambda w: write(w, "blank.json", b"   \n\t\n"), "empty file"),
        Case("binary_garbage", "error", lambda w: write(w, "x.json", bytes(range(256)) * 16), "not a supported"),
        Case("gzip_truncated", "error", lambda w: write(w, "t.json.gz", gz[: len(gz) // 2]), "gzip"),
        Case(
            "gzip_corrupt_middle",
            "error",
            lambda w: write(w, "t.json.gz", gz[:200] + bytes(b ^ 0x5A for b in gz[200:400]) + gz[400:]),
            "gzip",
        ),
        Case(
            "gzip_of_garbage",
            "error",
            lambda w: write(w, "t.json.gz", gzip.compress(b"\x00garbage" * 100)),
            "not a supported",
        ),
        Case("gzip_empty_member", "error", lambda w: write(w, "t.json.gz", gzip.compress(b"")), "empty file"),
        Case("json_not_a_trace", "error", lambda w: write(w, "t.json", b'{"hello": "world", "ph": 1}'), "not"),
        Case(
            "trace_events_not_array",
            "error",
            lambda w: write(w, "t.json", b'{"traceEvents": {"ph": "X"}}'),
            "traceEvents is not an array",
        ),
        Case(
            "deep_nesting",
            "error",
            lambda w: write(w, "t.json", b'{"traceEvents": [' + b"[" * 100000 + b"]" * 100000 + b"]}"),
            "deeply",
        ),
        Case(
            "top_level_nan_only",
            "error",
            lambda w: write(w, "t.json", b'{"traceEvents": [NaN, NaN]}'),
            "no usable event",
        ),
    ]
    return out
