"""The bulk of the Perfetto trace as bytes, formatted from the columns a chunk at a time.

Slices, flow arrows and counter samples are not formatted one Python statement per
event: each distinct (name, process, kind, fused op, phase, which optional args) gets
one byte template with its fixed text already in place (names repeat: a trace has
hundreds of distinct ones for millions of events), and a whole chunk of rows is
formatted by ``map(bytes.__mod__, templates, tuples)`` over integer columns split into
µs and ns in numpy. The few other events (engine steps, device steps, findings) come
in as ready texts. ``Rows.chunk(lo, hi)`` gives rows ``lo..hi`` of the sorted trace, so
a writer can format, compress and write any range without holding the whole text.
"""

from __future__ import annotations

import numpy as np

import msgspec

ROW_SEP = b",\n"
_enc = msgspec.json.Encoder()

S_SLICE, S_FLOW, S_TEXT, S_COUNTER = 0, 1, 2, 3
# the optional int args of a slice: step (with its phase) and correlation
_VARIANT_TAIL = {0: b"", 1: b',"step":%d,"phase":"%s"', 2: b',"correlation":%d', 3: b',"step":%d,"phase":"%s","correlation":%d'}


def _split_us(ns: np.ndarray) -> tuple[list, list]:
    """Integer ns → (µs, ns remainder) as lists, the `"%d.%03d"` parts (floor division, as `//`)."""
    q, r = np.divmod(ns, 1000)
    return q.tolist(), r.tolist()


def _pct(b: bytes) -> bytes:
    return b.replace(b"%", b"%%")


class Rows:
    """Every non-metadata event of the trace, in the order written, formatted on demand."""

    def __init__(self) -> None:
        self.kind = np.zeros(0, np.int8)   # per sorted row: which source
        self.row = np.zeros(0, np.int64)   # per sorted row: its row in that source
        self.texts: list[bytes] = []

    # -- sources ------------------------------------------------------------------------

    def set_slices(self, ev, idx: np.ndarray, tid: np.ndarray, pid: np.ndarray, name_json: dict[int, bytes],
                   kind_names: list[str], fused_names: list[str], phase_names: list[str], corr_max: int) -> None:
        """Slices: rows ``idx`` of the event columns ``ev``, on tracks ``tid`` of processes ``pid``.
        The columns are read per chunk through ``idx``: nothing per slice is copied but its
        row, track and template."""
        step, corr = ev["step"][idx], ev["corr"][idx]
        variant = (step >= 0).astype(np.int8) + np.int8(2) * ((corr >= 0) & (corr < corr_max))
        del step, corr
        # one template per distinct (name, pid, kind, fused, variant); phase is an arg
        code = ev["name"][idx].astype(np.int64)  # in place: no temporaries of the full length
        for bits, col in ((12, pid), (4, ev["kind"][idx]), (10, ev["fused"][idx] + 1), (2, variant)):
            code <<= bits
            code += col
        del variant
        uniq_code, key = np.unique(code, return_inverse=True)
        del code
        uniq = np.stack([uniq_code >> 28, (uniq_code >> 16) & 0xFFF, (uniq_code >> 12) & 0xF,
                         ((uniq_code >> 2) & 0x3FF) - 1, uniq_code & 3], axis=1)
        fmts = []
        for n, p, k, f, v in uniq.tolist():
            args = b'"kind":"' + kind_names[k].encode() + b'"'
            if f >= 0:
                args += b',"fused_op":"' + fused_names[f].encode() + b'"'
            fmts.append(b'{"ph":"X","name":' + _pct(name_json[n]) + b',"pid":%d' % p
                        + b',"tid":%d,"ts":%d.%03d,"dur":%d.%03d,"args":{' + _pct(args) + _VARIANT_TAIL[v] + b"}}")
        self.s_fmt = fmts
        self.s_key = key.reshape(-1).astype(np.int32)
        del key
        self.s_variant = uniq[:, 4].astype(np.int8)[self.s_key] if len(uniq) else np.zeros(0, np.int8)
        self.s_idx, self.s_tid = idx, tid
        self.s_start, self.s_dur, self.s_step, self.s_corr = ev["start"], ev["dur"], ev["step"], ev["corr"]
        self.s_phase = [p.encode() for p in phase_names]
        self.s_phase_col = ev["phase"]

    def set_flows(self, src_ts: np.ndarray, src_pid: np.ndarray, src_tid: np.ndarray,
                  dev_ts: np.ndarray, dev_pid: np.ndarray, dev_tid: np.ndarray) -> None:
        """Flow pairs: row 2i is pair i's start, 2i+1 its end (ids 1, 2, ...)."""
        self.f_cols = (src_ts, src_pid.astype(np.int32), src_tid.astype(np.int32),
                       dev_ts, dev_pid.astype(np.int32), dev_tid.astype(np.int32))

    def set_counters(self, name_json: dict[int, bytes], name: np.ndarray, pid: np.ndarray, t: np.ndarray,
                     value: np.ndarray) -> None:
        code = name.astype(np.int64) * (1 << 20) + pid.astype(np.int64)
        uniq, key = np.unique(code, return_inverse=True)
        self.c_fmt = [b'{"ph":"C","name":' + _pct(name_json[int(c) >> 20]) + b',"pid":%d,"tid":%d' % ((int(c) & 0xFFFFF,) * 2)
                      + b',"ts":%d.%03d,"args":{"value":%s}}' for c in uniq.tolist()]
        self.c_key, self.c_t, self.c_value = key.reshape(-1), t, value

    # -- formatting -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.kind)

    def _slices(self, rows: np.ndarray) -> list[bytes]:
        out = np.empty(len(rows), object)
        var = self.s_variant[rows]
        for v in range(4):
            pos = np.flatnonzero(var == v)
            if not len(pos):
                continue
            r = rows[pos]
            e = self.s_idx[r]  # event rows
            cols = [self.s_tid[r].tolist(), *_split_us(self.s_start[e]), *_split_us(self.s_dur[e])]
            if v & 1:
                cols.append(self.s_step[e].tolist())
                cols.append(list(map(self.s_phase.__getitem__, self.s_phase_col[e].tolist())))
            if v & 2:
                cols.append(self.s_corr[e].tolist())
            fmts = map(self.s_fmt.__getitem__, self.s_key[r].tolist())
            out[pos] = list(map(bytes.__mod__, fmts, zip(*cols)))
        return out.tolist()

    def _flows(self, rows: np.ndarray) -> list[bytes]:
        out = np.empty(len(rows), object)
        pair = rows >> 1
        ends = rows & 1
        for e, tmpl in ((0, b'{"ph":"s","id":%d,"pid":%d,"tid":%d,"ts":%d.%03d,"cat":"ac2g","name":"ac2g"}'),
                        (1, b'{"ph":"f","id":%d,"pid":%d,"tid":%d,"ts":%d.%03d,"cat":"ac2g","name":"ac2g","bp":"e"}')):
            pos = np.flatnonzero(ends == e)
            if not len(pos):
                continue
            p = pair[pos]
            ts, pid, tid = self.f_cols[3 * e: 3 * e + 3]
            cols = [(p + 1).tolist(), pid[p].tolist(), tid[p].tolist(), *_split_us(ts[p])]
            out[pos] = list(map(tmpl.__mod__, zip(*cols)))
        return out.tolist()

    def _counters(self, rows: np.ndarray) -> list[bytes]:
        values = _enc.encode(self.c_value[rows].tolist())[1:-1].split(b",") if len(rows) else []
        fmts = map(self.c_fmt.__getitem__, self.c_key[rows].tolist())
        return list(map(bytes.__mod__, fmts, zip(*_split_us(self.c_t[rows]), values)))

    def chunk(self, lo: int, hi: int) -> list[bytes]:
        """The texts of sorted rows lo..hi, in order."""
        kind, row = self.kind[lo:hi], self.row[lo:hi]
        out = np.empty(len(kind), object)
        for k, fn in ((S_SLICE, self._slices), (S_FLOW, self._flows), (S_COUNTER, self._counters)):
            pos = np.flatnonzero(kind == k)
            if len(pos):
                out[pos] = fn(row[pos])
        pos = np.flatnonzero(kind == S_TEXT)
        if len(pos):
            out[pos] = list(map(self.texts.__getitem__, row[pos].tolist()))
        return out.tolist()
