"""Cases of the other readers: [XPURT_PROF] logs and XProfiler traces made from the seed
trace's kernels, bundles written by the real code then broken, rank directories with one
bad file."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from .common import BIG, MISSING, ROCM, TWO_RANKS, VALUES, Case, Raw, doc, dumps, write

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
        out.append(
            Case(
                f"xpurt_number_{vname}",
                "ok_warn",
                xpurt(good + [f"[XPURT_PROF] _Zodd_kernel {num} 100 ns"]),
                "skipped 1 kernel line with a duration out of range (first: '_Zodd_kernel'",
            )
        )
        out.append(
            Case(
                f"xpurt_one_number_{vname}",
                "ok_warn",
                xpurt(good + [f"[XPURT_PROF] _Zodd_kernel: {num} ns"]),
                "skipped 1 kernel line with a duration out of range",
            )
        )
    out += [
        Case("xpurt_cut_last_line", "ok_warn", xpurt(good, tail="[XPURT_PROF] _Zcut 12"), "the last line is cut short"),
        Case(
            "xpurt_garbage_lines",
            "ok_warn",
            xpurt(good + ["[XPURT_PROF] ???", "[XPURT_PROF]"]),
            "2 [XPURT_PROF] line(s) in no known layout",
        ),
        Case("xpurt_binary_noise", "ok", xpurt(good, tail="\x00\x01\x02 binary noise\n")),
        Case("xpurt_empty_rank_log", "error", lambda w: write(w, "rank_0.log", b""), "empty file"),
        Case("xpurt_all_absurd", "error", xpurt([f"[XPURT_PROF] _Zk {'9' * 40} 100 ns"] * 3), "duration out of range"),
    ]
    return out


# -- XProfiler traces made from the trace's kernels ---------------------------------------------


def xprofiler_doc() -> dict:
    ev = [{"ph": "M", "name": "process_name", "pid": 9000, "args": {"name": "XPU 0"}}]
    for e in doc()["traceEvents"]:
        if e.get("cat") == "kernel":
            ev.append(
                {
                    "ph": "X",
                    "cat": "KERNEL",
                    "name": e["name"],
                    "pid": 9000,
                    "tid": 3,
                    "ts": e["ts"],
                    "dur": e["dur"],
                    "args": {"stream_id": 3, "token": e["args"].get("correlation", -1)},
                }
            )
        elif e.get("cat") == "cuda_runtime":
            ev.append(
                {
                    "ph": "X",
                    "cat": "API",
                    "name": "xpu_launch_async",
                    "pid": 4242,
                    "tid": 1,
                    "ts": e["ts"],
                    "dur": e["dur"],
                    "args": {"token": e["args"].get("correlation", -1)},
                }
            )
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
            out.append(
                Case(
                    f"xprofiler_{field}_{vname}",
                    "ok_warn",
                    xprof(_set(field, VALUES[vname])),
                    "with a time out of range",
                )
            )
    out += [
        Case("xprofiler_dur_negative", "ok_warn", xprof(_set("dur", -3)), "skipped 1 event with a negative duration"),
        Case(
            "xprofiler_non_object",
            "ok_warn",
            xprof(lambda ev: ev.insert(3, 42)),
            "skipped 1 entry that is not a JSON object (first: #3)",
        ),
        Case("xprofiler_unknown_phase", "ok_warn", xprof(_set("ph", "Q")), "with a phase this reader cannot map"),
        Case("xprofiler_no_phase", "ok_warn", xprof(lambda ev: ev[5].pop("ph")), "with no 'ph' field"),
        Case("xprofiler_token_overflow", "ok", xprof(lambda ev: ev[5]["args"].update(token=10**30))),
        Case("xprofiler_stream_thousand_digits", "ok", xprof(lambda ev: ev[5]["args"].update(stream_id=BIG))),
        Case("xprofiler_pid_overflow", "ok", xprof(_set("pid", 10**30))),
        Case(
            "xprofiler_device_name_overflow",
            "ok",
            xprof(lambda ev: ev[0]["args"].update(name="XPU 99999999999999999999")),
        ),
        Case(
            "xprofiler_unmatched_begin",
            "ok_warn",
            xprof(lambda ev: ev.append({"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"]})),
            "begin/end event(s) without a partner",
        ),
        Case(
            "xprofiler_end_before_begin",
            "ok_warn",
            xprof(
                lambda ev: ev.extend(
                    [
                        {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"]},
                        {"ph": "E", "name": "b", "pid": 1, "tid": 1, "ts": ev[5]["ts"] - 10},
                    ]
                )
            ),
            "skipped 1 event with a negative duration",
        ),
        Case(
            "xprofiler_counter_nan",
            "ok",
            xprof(
                lambda ev: ev.append({"ph": "C", "name": "mem", "pid": 1, "ts": ev[5]["ts"], "args": {"v": Raw("NaN")}})
            ),
        ),
        Case(
            "xprofiler_counter_odd_args",
            "ok_warn",
            xprof(lambda ev: ev.append({"ph": "C", "name": "mem", "pid": 1, "ts": ev[5]["ts"], "args": 5})),
            "with odd counter args or time",
        ),
        Case("xprofiler_all_bad", "error", xprof(lambda ev: [e.update(dur=-1) for e in ev[1:]]), "no usable event"),
        Case(
            "xprofiler_truncated",
            "error",
            lambda w: write(w, "xprofiler.trace.json", dumps(xprofiler_doc())[:5000]),
            "truncated JSON",
        ),
    ]
    return out


# -- bundles written by the real code, then broken ------------------------------------------------


@cache
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
    for key, value in (
        ("events.name", 10**6),
        ("events.name", -7),
        ("events.cat", 10**6),
        ("events.kind", 99),
        ("events.kind", -1),
        ("events.comm", 10**6),
        ("events.step", 10**6),
    ):
        out.append(
            Case(
                f"bundle_{key.replace('.', '_')}_{value}",
                "error",
                bundle_with(_col(key, lambda x, v=value: _set_at(x, v))),
                broken,
            )
        )
    out += [
        Case(
            "bundle_start_nan",
            "error",
            bundle_with(_col("events.start", lambda x: _set_at(x, np.nan, np.float64))),
            "expected integers",
        ),
        Case(
            "bundle_start_2d",
            "error",
            bundle_with(_col("events.start", lambda x: np.stack([x, x]))),
            "not one-dimensional",
        ),
        Case("bundle_length_mismatch", "error", bundle_with(_col("events.dur", lambda x: x[:-1])), "different lengths"),
        Case(
            "bundle_name_int64",
            "error",
            bundle_with(_col("events.name", lambda x: _set_at(x, 1 << 40, np.int64))),
            "beyond int32",
        ),
        Case(
            "bundle_strings_not_text", "error", bundle_with(_meta(lambda m: m.update(strings=[1, 2]))), "string table"
        ),
        Case("bundle_base_overflow", "error", bundle_with(_meta(lambda m: m.update(base_ns=10**30))), "base_ns"),
        Case(
            "bundle_meta_not_json",
            "error",
            bundle_with(lambda a: a.update(meta=np.frombuffer(b"\xff{", np.uint8))),
            broken,
        ),
        Case("bundle_object_array", "error", bundle_object_array, broken),
        Case("bundle_truncated", "error", lambda w: write(w, "profile.npz", bundle_bytes()[:2000]), broken),
        Case(
            "bundle_dur_negative",
            "ok_warn",
            bundle_with(_col("events.dur", lambda x: _set_at(x, -5))),
            "skipped 1 events row with a negative or out-of-range time",
        ),
        Case(
            "bundle_start_overflowing",
            "ok_warn",
            bundle_with(_col("events.start", lambda x: _set_at(x, (1 << 63) - 1))),
            "skipped 1 events row",
        ),
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
        (
            "gzip_truncated",
            "rank-{}.json.gz",
            lambda: (TWO_RANKS / "rank-1.json.gz").read_bytes()[:3000],
            "truncated gzip",
        ),
        ("json_truncated", "rank-{}.json", lambda: r1()[: len(r1()) // 2], "truncated JSON"),
        ("json_garbage", "rank-{}.json", lambda: r1()[:5000] + b"@@@" + r1()[5000:], "malformed JSON"),
        (
            "all_events_bad",
            "rank-{}.json",
            lambda: dumps({"traceEvents": [{"ph": "X", "ts": Raw("NaN"), "dur": 1}] * 3}).encode(),
            "not a valid trace: no usable event",
        ),
        ("not_a_trace", "rank-{}.json", lambda: b'{"hello": 1}', "not a supported"),
    ):
        out.append(Case(f"ranks_one_{what}", "ok_warn", rank_dir(name, bad), "rank 2 is missing from the analysis"))
        out.append(Case(f"ranks_reason_{what}", "ok_warn", rank_dir(name, bad), f"dropped ({reason}"))
    out.append(
        Case(
            "ranks_two_bad",
            "ok_warn",
            rank_dir("rank-{}.json.gz", lambda: b"", n_bad=2),
            "rank 3 is missing from the analysis",
        )
    )
    out.append(Case("ranks_all_bad", "error", all_bad_rank_dir, "empty file"))
    return out


def all_bad_rank_dir(where: Path) -> Path:
    d = where / "ranks"
    d.mkdir()
    write(d, "rank-0.json.gz", b"")
    write(d, "rank-1.json.gz", b"")
    return d
