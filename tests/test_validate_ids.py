"""``validate`` on events whose pid, tid, name, category or id is an array or an object (on any
phase, metadata too): the event is one problem line, as every other problem (exit 1), and the
other events are still checked; never a traceback."""

from __future__ import annotations

import json

import pytest
from cli_run import invoke, run

#: a trace Perfetto imports cleanly, one event of each kind that names or places itself
CLEAN = [
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
    {"ph": "X", "name": "a", "cat": "c", "ts": 1, "dur": 5, "pid": 1, "tid": 1},
    {"ph": "C", "name": "n", "ts": 1, "pid": 1, "args": {"v": 1}},
    {"ph": "s", "name": "f", "cat": "c", "ts": 2, "pid": 1, "tid": 1, "id": 1},
    {"ph": "f", "name": "f", "cat": "c", "ts": 3, "pid": 1, "tid": 1, "id": 1, "bp": "e"},
]
#: what each field must be, as the problem line says it
WANTED = {"pid": "an integer or a string", "tid": "an integer or a string", "name": "a string"}
WANTED |= {"cat": "a string", "id": "an integer or a string"}


def _write(path, events) -> None:
    path.write_text(json.dumps({"traceEvents": events}))


@pytest.mark.parametrize("value", [[1], {"a": 1}], ids=["array", "object"])
@pytest.mark.parametrize("row", range(len(CLEAN)), ids=[e["ph"] + e["name"] for e in CLEAN])
def test_a_field_of_another_type_is_one_problem(tmp_path, row, value):
    for field in [f for f in WANTED if f in CLEAN[row] or f in ("pid", "tid")]:
        events = json.loads(json.dumps(CLEAN))
        events[row][field] = value
        _write(tmp_path / "t.json", events)
        res = invoke("validate", tmp_path / "t.json")
        kind = "array" if isinstance(value, list) else "object"
        want = f"event #{row}: {field} {json.dumps(value)} is an {kind}, not {WANTED[field]}"
        lines = res.stdout.splitlines()
        assert res.exit_code == 1 and lines[0].startswith(want), (field, res.stdout)
        assert "Traceback" not in res.output


def test_the_files_as_a_user_has_them(tmp_path):
    """A list tid, an object pid, a list pid on metadata; each beside another event with a problem
    of its own, which is still found."""
    late = {"ph": "X", "name": "late", "cat": "c", "dur": 1, "pid": 1, "tid": 1}  # no ts
    for field, value, row in (("tid", [1], 2), ("pid", {"a": 1}, 2), ("pid", [1], 0)):
        events = json.loads(json.dumps(CLEAN)) + [late]
        events[row][field] = value
        path = tmp_path / f"{field}.json"
        _write(path, events)
        res = run("validate", path)
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        assert f"event #{row}: {field} {json.dumps(value)} is an" in res.stdout
        assert f"event #{len(CLEAN)} ('late'): ts missing or not a number" in res.stdout
