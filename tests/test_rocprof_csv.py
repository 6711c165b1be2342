"""rocprofv3's CSV output: the real JSON output's records written as the CSV files rocprofv3
writes (totals from the records themselves), the synthetic run as three releases wrote it (the
same events as its JSON, steps from ROCTx ranges, RCCL calls as collectives, GPUs as ranks), the
files of one run as one input however they are named, and rows rocprofv3's encoder garbles."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter

import numpy as np
import pytest
import real_data
from cli_run import invoke, one_line_error

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_KERNEL, K_RUNTIME, PHASES
from xpu_profiler.readers import ReadOptions, load
from xpu_profiler.summary import load_summary
from xpu_profiler.testing import gen_rocprof, gen_rocprof_csv
from xpu_profiler.testing.gen_rocprof_csv import line
from xpu_profiler.testing.vendor_workload import Workload

SAMPLE = "other-formats/rocprofv3-mi355x-8gpu-training.json.gz"
KERNEL_7 = gen_rocprof_csv._headers("7.0")["kernel_trace"]
API = gen_rocprof_csv._API


def test_the_real_records_as_csv(tmp_path):
    """The real output's dispatches and HIP calls as rocprofv3 7.0 writes them in CSV (agents
    ``"Agent <logical node id>"``, kinds by name): every dispatch read, on its GPU's rank."""
    (tool,) = json.loads(gzip.decompress(real_data.need(SAMPLE).read_bytes()))["rocprofiler-sdk-tool"]
    kd = tool["buffer_records"]["kernel_dispatch"]
    symbols = {k["kernel_id"]: k["formatted_kernel_name"] for k in tool["kernel_symbols"]}
    agents = {a["id"]["handle"]: a for a in tool["agents"]}
    kinds = [k["kind"] for k in tool["strings"]["buffer_records"]]
    ops = [k["operations"] for k in tool["strings"]["buffer_records"]]
    pid = tool["metadata"]["pid"]
    rows = []
    for k in kd:
        d = k["dispatch_info"]
        agent = f"Agent {agents[d['agent_id']['handle']]['logical_node_id']}"
        row = ["KERNEL_DISPATCH", agent, d["queue_id"]["handle"], 0, k["thread_id"], d.get("dispatch_id", 0)]
        row += [d["kernel_id"], symbols[d["kernel_id"]], k["correlation_id"]["internal"]]
        rows.append(row + [k["start_timestamp"], k["end_timestamp"]] + [0] * 11)
    hip = [
        [kinds[r["kind"]], ops[r["kind"]][r["operation"]], pid, r["thread_id"], r["correlation_id"]["internal"]]
        + [r["start_timestamp"], r["end_timestamp"]]
        for r in tool["buffer_records"]["hip_api"]
    ]
    info = [
        [a["node_id"], a["logical_node_id"], {1: "CPU", 2: "GPU"}[a["type"]], a["name"], a["product_name"]]
        for a in tool["agents"]
    ]
    host = tmp_path / "run" / "node"
    host.mkdir(parents=True)
    (host / f"{pid}_kernel_trace.csv").write_text(line(KERNEL_7) + "".join(map(line, rows)))
    (host / f"{pid}_hip_api_trace.csv").write_text(line(API) + "".join(map(line, hip)))
    head = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Name", "Product_Name"]
    (host / f"{pid}_agent_info.csv").write_text(line(head) + "".join(map(line, info)))

    res = invoke("analyze", tmp_path / "run", "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0, res.output
    s = load_summary(tmp_path / "o" / "summary.json")
    assert s.totals.op_time_ns == sum(k["end_timestamp"] - k["start_timestamp"] for k in kd)
    (gpu,) = {k["dispatch_info"]["agent_id"]["handle"] for k in kd}
    src = s.run.sources[0]
    assert src.format == "rocprofv3-csv" and src.rank == agents[gpu]["gpu_index"]
    assert src.details["devices"] == [agents[gpu]["product_name"]] and s.device.name == "AMD Instinct MI350X"
    profile = load([host / f"{pid}_kernel_trace.csv"])  # a file names its directory: the same input
    ev = profile.events
    assert int((ev["kind"] == K_KERNEL).sum()) == len(kd)
    assert int((ev["kind"] == K_RUNTIME).sum()) == sum(1 for r in hip if r[0].startswith("HIP_"))
    by_name = Counter(profile.strings.lookup(ev["name"][ev["kind"] == K_KERNEL]))
    assert by_name == Counter(symbols[k["dispatch_info"]["kernel_id"]] for k in kd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rocprof_csv")
    truth = {
        rel: gen_rocprof_csv.write_csv(d / f"csv{rel}", Workload(), release=rel) for rel in gen_rocprof_csv.RELEASES
    }
    gen_rocprof.write_json(d / "json7", Workload())
    gen_rocprof.write_json(d / "json62", Workload(), release="6.2")
    return d, truth


@pytest.mark.parametrize("csv_release, json_release", [("7.0", "json7"), ("6.4", "json62")])
def test_the_csv_reads_as_the_json_of_the_same_run(runs, csv_release, json_release):
    """Same kernels, copies, calls and ranges at the same times on the same ranks, devices and
    tracks (a copy's bytes are not in the CSV)."""
    d, _ = runs
    a, b = load([d / f"csv{csv_release}"]), load([d / json_release])
    assert len(a.events) == len(b.events) > 0 and a.base_ns == b.base_ns
    # (the JSON is two files, one per rank, merged rank after rank: the rows in one order)
    cols = ("kind", "start", "dur", "rank", "device", "track", "corr", "copy")
    oa, ob = (np.lexsort([p.events[c] for c in reversed(cols)]) for p in (a, b))
    for col in cols:
        assert np.array_equal(a.events[col][oa], b.events[col][ob]), col
    assert a.strings.lookup(a.events["name"][oa]) == b.strings.lookup(b.events["name"][ob])


@pytest.mark.parametrize("release", gen_rocprof_csv.RELEASES)
def test_steps_collectives_and_ranks(runs, release):
    d, truth = runs
    profile, s = analysis.analyze([d / f"csv{release}"])
    st = profile.steps
    order = np.lexsort((st["start"], st["rank"]))
    got = [(int(st["rank"][i]), int(st["start"][i]) + profile.base_ns, PHASES[st["phase"][i]]) for i in order]
    want = [
        (t["rank"], t["start"], t["phase"])
        for t in sorted(truth[release]["steps"], key=lambda t: (t["rank"], t["start"]))
    ]
    assert got == want
    assert s.totals.device_kernel_ns == truth[release]["kernel_ns"] and sorted(profile.ranks) == [0, 1]
    coll = profile.events["comm"] >= 0  # 6.2 wrote no RCCL trace: its all-reduces are kernels only
    assert int(coll.sum()) == (0 if release == "6.2" else truth[release]["rccl_kernels"])
    assert [w for w in profile.run["warnings"] if "ROCTx mark" in w] == [
        f"{p}_marker_api_trace.csv: not used by the analysis: 1 ROCTx mark(s) or control call(s) with no span"
        for p in (1000, 1001)
    ]


def _copy_run(runs, tmp_path, release="7.0"):
    d, truth = runs
    src = d / f"csv{release}" / ("" if release == "6.2" else gen_rocprof_csv.HOST)
    dst = tmp_path / "run"
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_one_run_is_one_input_however_named(runs, tmp_path):
    """Every file named (a shell's ``*.csv``), one of them, the directory, its parent: one input,
    the same summary; a front-end process's calls are left out and said; without agent_info the
    GPUs are the agents that ran kernels; counters in ``pmc_1/`` are no second run."""
    run = _copy_run(runs, tmp_path)
    (run / "999_hip_api_trace.csv").write_text(
        line(API) + line(["HIP_RUNTIME_API_EXT", "hipGetDevice", 999, 999, 1, 5, 9])
    )
    pmc = tmp_path / "pmc_1"
    pmc.mkdir()
    (pmc / "1000_counter_collection.csv").write_text(line(["Counter_Name", "Counter_Value"]) + line(["SQ_WAVES", 1]))
    whole = load([run])
    files = sorted(run.glob("*.csv"))
    for paths in (files, [files[3]], [tmp_path], [run, files[0]]):
        p = load(paths)
        assert len(p.events) == len(whole.events) and np.array_equal(p.events["start"], whole.events["start"])
    assert any(
        "left out 1 host row(s) of 1 process(es) that ran no device work (pids 999)" in w for w in whole.run["warnings"]
    )
    for f in run.glob("*_agent_info.csv"):
        f.unlink()
    guessed = load([run])
    assert np.array_equal(guessed.events["device"], whole.events["device"]) and sorted(guessed.ranks) == [0, 1]


def test_rows_the_encoder_garbles_are_skipped_and_counted(runs, tmp_path):
    """rocprofv3 escapes nothing: a quote in a ROCTx message breaks its row; a row with a text
    time is no record either. Each is skipped and counted; the rest is read."""
    run = _copy_run(runs, tmp_path)
    marker = run / "1000_marker_api_trace.csv"
    lines = marker.read_text().splitlines(keepends=True)
    domain, rest = lines[2].split('","', 1)  # a message with a quote and a comma, as rocprofv3 writes it
    tail = rest.split('",', 1)[1]
    lines[2] = f'{domain}","say "hi", then go",{tail}'
    marker.write_text("".join(lines))
    kern = run / "1001_kernel_trace.csv"
    rows = list(csv.reader(kern.read_text().splitlines()))
    rows[5][KERNEL_7.index("Start_Timestamp")] = "soon"
    kern.write_text("".join(line([int(v) if v.isdigit() else v for v in row]) for row in rows))
    whole = load([runs[0] / "csv7.0"])
    p = load([run])
    assert int((p.events["kind"] == K_KERNEL).sum()) == int((whole.events["kind"] == K_KERNEL).sum()) - 1
    warnings = p.run["warnings"]
    assert "run: skipped 1 1001_kernel_trace.csv row(s) with a missing or non-integer Start_Timestamp" in warnings
    assert any(
        w.startswith("run: skipped 1 1000_marker_api_trace.csv row(s) with a row whose fields do not match")
        for w in warnings
    )


def test_files_without_a_trace_are_one_line(tmp_path):
    only = tmp_path / "agents"
    only.mkdir()
    (only / "7_agent_info.csv").write_text(line(["Node_Id", "Logical_Node_Id", "Agent_Type"]) + line([0, 0, "CPU"]))
    err = one_line_error(invoke("analyze", only, "-o", tmp_path / "o"))
    assert "nothing to analyse: rocprofv3 CSV files without a kernel, copy or API trace (agent_info)" in err
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "7_kernel_trace.csv").write_text(line(KERNEL_7) + line(["KERNEL_DISPATCH", "Agent 1"] + ["x"] * 20))
    err = one_line_error(invoke("analyze", odd / "7_kernel_trace.csv", "-o", tmp_path / "o"))
    assert "not a valid rocprofv3 CSV output: no usable record; skipped 1 7_kernel_trace.csv row(s) with" in err
    other = tmp_path / "table.csv"  # a CSV of another program (our own kernel table's form)
    other.write_text("fused_op,count,total_ns\nattention,3,100\n")
    assert "not a supported trace or log format" in one_line_error(invoke("analyze", other, "-o", tmp_path / "o"))


def _same_events(a, b) -> None:
    """The same rows (times on the clock, not from each profile's first row)."""
    cols = ("kind", "start", "dur", "rank", "device", "track", "corr")
    got = [{c: p.events[c] + (p.base_ns if c == "start" else 0) for c in cols} for p in (a, b)]
    oa, ob = (np.lexsort([g[c] for c in reversed(cols)]) for g in got)
    assert len(a.events) == len(b.events) > 0
    for col in cols:
        assert np.array_equal(got[0][col][oa], got[1][col][ob]), col


def test_files_without_a_pid_in_their_names(runs, tmp_path):
    """``-o results`` names the files ``results_kernel_trace.csv``...: the process is the one
    its calls name. ``rocpd convert`` merges the processes into ``kernel_trace.csv``... with a
    ``Guid`` first: a kernel is its launching thread's process, a copy that of its GPU's kernels."""
    d, _ = runs
    one = tmp_path / "one"
    one.mkdir()
    src = d / "csv7.0" / gen_rocprof_csv.HOST
    for f in src.glob("1000_*"):
        (one / f.name.replace("1000_", "results_")).write_bytes(f.read_bytes())
    _same_events(load([one]), _only(load([src]), 1000))
    merged = _merge(src, tmp_path / "merged")
    got, want = load([merged]), load([src])
    _same_events(got, want)
    assert not [w for w in got.run["warnings"] if "left out" in w]


def _merge(src, merged, kernel_thread=None):
    """The processes' files merged as ``rocpd convert`` writes them: no prefix, a ``Guid`` first;
    ``kernel_thread``: every kernel's ``Thread_Id`` made that."""
    merged.mkdir()
    for table in ("kernel_trace", "memory_copy_trace", "hip_api_trace", "marker_api_trace", "rccl_api_trace"):
        rows = [list(csv.reader(f.read_text().splitlines())) for f in sorted(src.glob(f"*_{table}.csv"))]
        body = [["guid-0"] + r for part in rows for r in part[1:]]
        if kernel_thread is not None and table == "kernel_trace":
            for r in body:
                r[1 + KERNEL_7.index("Thread_Id")] = str(kernel_thread)
        text = line(["Guid"] + rows[0][0]) + "".join(line([int(v) if v.isdigit() else v for v in r]) for r in body)
        (merged / f"{table}.csv").write_text(text)
    (merged / "agent_info.csv").write_bytes((src / "1000_agent_info.csv").read_bytes())
    return merged


def _only(profile, pid):
    """(the single-process part of the two-process run: rank 0 is pid 1000)"""
    from xpu_profiler.core.profile import Table

    keep = profile.events["rank"] == pid - 1000
    profile.events = Table(profile.events.schema, {k: v[keep] for k, v in profile.events.cols.items()})
    return profile


def test_a_run_in_several_formats_and_copies_is_read_once(runs, tmp_path):
    """``-f csv json``: each process read once, from its JSON; a backup copy (``.bak``) is no
    file of the run; a compressed copy of a table beside it is read once; a broken one is said."""
    d, _ = runs
    run = _copy_run(runs, tmp_path)
    for f in (d / "json7").glob("*_results.json"):
        (run / f.name).write_bytes(f.read_bytes())
    both = load([run])
    _same_events(both, load([d / "json7"]))
    assert any("the same process(es) as 1000_results.json, 1001_results.json" in w for w in both.run["warnings"])
    for f in run.glob("*_results.json"):
        f.unlink()
    kern = run / "1000_kernel_trace.csv"
    (run / "1000_kernel_trace.csv.bak").write_bytes(kern.read_bytes())
    (run / "1000_kernel_trace.csv.gz").write_bytes(gzip.compress(kern.read_bytes()))
    (run / "1001_memory_copy_trace.csv.gz").write_bytes(
        gzip.compress((run / "1001_kernel_trace.csv").read_bytes())[:300]
    )
    got = load([run])
    _same_events(got, load([d / "csv7.0"]))
    notes = got.run["warnings"]
    assert "1000_kernel_trace.csv.gz: not read: the same table as 1000_kernel_trace.csv" in notes
    assert any(w.startswith("1001_memory_copy_trace.csv.gz: not read: ") for w in notes)


def test_an_output_never_replaces_a_file_the_run_reads(runs, tmp_path):
    run = _copy_run(runs, tmp_path)
    before = (run / "1000_hip_api_trace.csv").read_bytes()
    res = invoke("analyze", run / "1000_kernel_trace.csv", "-o", run / "1000_hip_api_trace.csv", "--format", "csv")
    assert "the output would overwrite the input" in one_line_error(res)
    assert (run / "1000_hip_api_trace.csv").read_bytes() == before


def test_headers_and_agents_as_other_writers_leave_them(runs, tmp_path):
    """Spaces after the header's commas and a name beyond the csv module's 128 KiB field limit
    read; a column named twice leaves its file unread, said; a kernel on an agent agent_info does
    not list as a GPU: the agents that ran kernels are the GPUs, said; ``--rank`` does not
    override the GPU a run ran on."""
    run = _copy_run(runs, tmp_path)
    kern = run / "1000_kernel_trace.csv"
    rows = list(csv.reader(kern.read_text().splitlines()))
    rows[1][KERNEL_7.index("Kernel_Name")] = "k" * 200_000
    kern.write_text(
        ", ".join(f'"{c}"' for c in rows[0])
        + "\n"
        + "".join(line([int(v) if v.isdigit() else v for v in r]) for r in rows[1:])
    )
    copies = run / "1001_memory_copy_trace.csv"
    head, body = copies.read_text().split("\n", 1)
    copies.write_text(head + ',"Direction"\n' + body)
    info = run / "1001_agent_info.csv"
    for f in (run / "1000_agent_info.csv", info):
        f.write_text(f.read_text().replace('"GPU"', '"CPU"', 1))  # (the first GPU listed as a CPU)
    p = load([run])
    assert "k" * 200_000 in p.strings.strings and sorted(p.ranks) == [0, 1]
    notes = p.run["warnings"]
    assert "1001_memory_copy_trace.csv: not read: its header names Direction twice" in notes
    assert any(w.startswith("agent_info lists no GPU of id 2, which ran kernels") for w in notes)
    whole = load([runs[0] / "csv7.0"])
    kernels = whole.events["kind"] == K_KERNEL
    assert np.array_equal(p.events["device"][p.events["kind"] == K_KERNEL], whole.events["device"][kernels])
    one = tmp_path / "one"
    one.mkdir()
    for f in (runs[0] / "csv7.0" / gen_rocprof_csv.HOST).glob("1001_*"):
        (one / f.name).write_bytes(f.read_bytes())
    assert sorted(load([one], ReadOptions(rank=5)).ranks) == [1]  # GPU 1's process: rank 1, whatever --rank says


def test_each_process_once_across_formats_copies_and_paths(runs, tmp_path):
    """A JSON of one of the processes beside the CSV files of both: that process from its JSON,
    the other from its CSV files; ``-o results`` names (``results_results.json``) the same;
    copies under other names are not read; one directory by two paths is one input; another
    program's CSV beside the run is no dropped input."""
    d, _ = runs
    run = _copy_run(runs, tmp_path)
    (run / "1000_results.json").write_bytes((d / "json7" / "1000_results.json").read_bytes())
    got = load([run])
    _same_events(got, load([d / "csv7.0"]))  # (the CSV and JSON of a process read alike)
    assert int((got.events["flops"] > 0).sum()) > 0  # (the JSON's copies have their bytes)
    assert (
        "1000_kernel_trace.csv: not read: the same process as 1000_results.json beside it (read from there)"
        in (got.run["warnings"])
    )
    (run / "1000_results.json").write_text('{"results": [1, 2]}')  # (another program's file of that name: no twin)
    _same_events(load([run]), load([d / "csv7.0"]))
    named = tmp_path / "named"
    named.mkdir()
    for f in (d / "csv7.0" / gen_rocprof_csv.HOST).glob("1000_*"):
        (named / f.name.replace("1000_", "results_")).write_bytes(f.read_bytes())
    (named / "results_results.json").write_bytes((d / "json7" / "1000_results.json").read_bytes())
    (named / "Copy of results_kernel_trace.csv").write_bytes((named / "results_kernel_trace.csv").read_bytes())
    (named / "notes.csv").write_text("what,when\nrun,today\n")
    p = load([named])
    _same_events(p, load([named / "results_results.json"]))
    assert any("(rocprofv3 output in another format): read once" in w for w in p.run["warnings"])
    assert not p.run.get("dropped_inputs")
    run2 = _copy_run(runs, tmp_path / "again")
    (run2 / "1000_kernel_trace (1).csv").write_bytes((run2 / "1000_kernel_trace.csv").read_bytes())
    twice = load([run2, tmp_path / "again" / ".." / "again" / "run"])
    _same_events(twice, load([d / "csv7.0"]))
    assert (
        "1000_kernel_trace (1).csv: not read: not named as rocprofv3 names its files (a copy?)" in twice.run["warnings"]
    )


def test_processes_the_files_do_not_tell_apart(runs, tmp_path):
    """Kernels launched from threads no call names: one process per GPU, said; two runs' processes
    on one GPU: each a rank, said; a stray quote that swallows the next row: both counted."""
    run = _merge(runs[0] / "csv7.0" / gen_rocprof_csv.HOST, tmp_path / "merged", kernel_thread=7)
    p = load([run])
    assert sorted(p.ranks) == [0, 1] and int((p.events["kind"] == K_KERNEL).sum()) == 384
    assert np.array_equal(np.unique(p.events["rank"][p.events["kind"] == K_KERNEL]), [0, 1])
    assert any("kernel(s) launched from threads no call names" in w for w in p.run["warnings"])
    two = _copy_run(runs, tmp_path / "two")
    for f in list(two.glob("1000_*")):
        (two / f.name.replace("1000_", "2000_")).write_text(f.read_text().replace(",1000,", ",2000,"))
    q = load([two])
    assert any("several processes ran on one device (GPU 0: pids 1000, 2000)" in w for w in q.run["warnings"])
    quote = _copy_run(runs, tmp_path / "quote")
    kern = quote / "1000_kernel_trace.csv"
    lines = kern.read_text().splitlines(keepends=True)
    cells = lines[3].split(",")
    cells[KERNEL_7.index("Kernel_Name")] = '"say x""'  # (a quote left open: the next row is swallowed)
    lines[3] = ",".join(cells)
    kern.write_text("".join(lines))
    r = load([quote])
    assert any(w.startswith("run: skipped 2 1000_kernel_trace.csv row(s)") for w in r.run["warnings"])


def test_a_run_in_two_formats_whose_files_hold_other_processes_is_refused(runs, tmp_path):
    """The processes' JSON files beside the CSV files ``rocpd convert`` merged from the same run
    (no pid in their names: no twin rule can pair them): every device record of the CSV was
    read from the JSON already. One line naming both, never the run counted twice."""
    d, _ = runs
    both = _merge(d / "csv7.0" / gen_rocprof_csv.HOST, tmp_path / "both")
    for f in (d / "json7").glob("*_results.json"):
        (both / f.name).write_bytes(f.read_bytes())
    err = one_line_error(invoke("analyze", both, "-o", tmp_path / "o"))
    rows = sum(len((both / f"{t}.csv").read_text().splitlines()) - 1 for t in ("kernel_trace", "memory_copy_trace"))
    assert "1000_results.json" in err and "1001_results.json" in err and "the same run in another format" in err
    assert f"{rows:,} of its {rows:,} device records are in" in err, err
    # one process's file first, then the merged files (most of that file's records are in them)
    merged = _merge(d / "csv7.0" / gen_rocprof_csv.HOST, tmp_path / "merged")
    err = one_line_error(invoke("analyze", both / "1000_results.json", merged, "-o", tmp_path / "o"))
    assert "1000_results.json too" in err and "the same run in another format" in err, err
