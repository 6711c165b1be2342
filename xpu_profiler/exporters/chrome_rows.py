"""The bulk of the Perfetto trace as bytes, formatted from the columns a chunk at a time.

Slices, flow arrows, counter samples and Python frames are not formatted one Python
statement per event: each distinct (name, process, kind, fused op, phase, which optional
args) gets one byte template with its fixed text already in place (names repeat: a trace has
hundreds of distinct ones for millions of events). A chunk of rows is one ``%``: its
rows' templates joined into one format, filled from their values laid out in row order
(integer columns split into µs and ns digits in numpy), with no Python call, tuple or
text per row. The few other events (engine steps, device steps, findings) come in as
ready texts. ``Rows.text(lo, hi)`` gives rows ``lo..hi`` of the sorted trace, so a
writer can format, compress and write any range without holding the whole text.
"""

from __future__ import annotations

import msgspec
import numpy as np

from ..core import compiled

ROW_SEP = b",\n"
_enc = msgspec.json.Encoder()

S_SLICE, S_FLOW, S_TEXT, S_COUNTER, S_FRAME = 0, 1, 2, 3, 4
# the optional int args of a slice: step (with its phase) and correlation
_VARIANT_TAIL = {
    0: b"",
    1: b',"step":%d,"phase":"%s"',
    2: b',"correlation":%d',
    3: b',"step":%d,"phase":"%s","correlation":%d',
}


def _objects(items: list) -> np.ndarray:
    """``items`` as an object array, to gather from with an index array."""
    out = np.empty(len(items), object)
    out[:] = items
    return out


_FRAC = _objects([b"%03d" % i for i in range(1000)])  # a ns remainder's 3 digits
_FLOW_FMT = _objects(
    [
        b'{"ph":"s","id":%d,"pid":%d,"tid":%d,"ts":%d.%s,"cat":"ac2g","name":"ac2g"}',
        b'{"ph":"f","id":%d,"pid":%d,"tid":%d,"ts":%d.%s,"cat":"ac2g","name":"ac2g","bp":"e"}',
    ]
)


def _split_us(ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer ns → (µs, the ns remainder's 3 digits): the `"%d.%s"` parts (floor division, as `//`)."""
    q, r = np.divmod(ns, 1000)
    return q, _FRAC[r]


def _pct(b: bytes) -> bytes:
    return b.replace(b"%", b"%%")


class Rows:
    """Every non-metadata event of the trace, in the order written, formatted on demand."""

    def __init__(self) -> None:
        self.kind = np.zeros(0, np.int8)  # per sorted row: which source
        self.row = np.zeros(0, np.int64)  # per sorted row: its row in that source
        self.texts_fmt = _objects([])  # the few ready texts, as formats (their "%" doubled)

    # -- sources ------------------------------------------------------------------------

    def set_slices(
        self,
        ev,
        idx: np.ndarray,
        tid: np.ndarray,
        pid: np.ndarray,
        name_json: dict[int, bytes],
        kind_names: list[str],
        fused_names: list[str],
        phase_names: list[str],
        corr_max: int,
    ) -> None:
        """Slices: rows ``idx`` of the event columns ``ev``, on tracks ``tid`` of processes ``pid``.
        The columns are read per chunk through ``idx``: nothing per slice is copied but its
        row, track and template."""
        corr = ev["corr"]
        variant = (ev["step"] >= 0)[idx].astype(np.int8)  # masks of the full columns, then gathered:
        variant += np.int8(2) * ((corr >= 0) & (corr < corr_max))[idx]  # no wide copies
        # one template per distinct (name, pid, kind, fused, variant); phase is an arg
        code = ev["name"][idx].astype(np.int64)  # in place: no temporaries of the full length
        for bits, col in ((12, pid), (4, ev["kind"][idx]), (10, ev["fused"][idx] + 1), (2, variant)):
            code <<= bits
            code += col
        del variant
        uniq_code, key = np.unique(code, return_inverse=True)
        del code
        uniq = np.stack(
            [
                uniq_code >> 28,
                (uniq_code >> 16) & 0xFFF,
                (uniq_code >> 12) & 0xF,
                ((uniq_code >> 2) & 0x3FF) - 1,
                uniq_code & 3,
            ],
            axis=1,
        )
        fmts = []
        for n, p, k, f, v in uniq.tolist():
            args = b'"kind":"' + kind_names[k].encode() + b'"'
            if f >= 0:
                args += b',"fused_op":"' + fused_names[f].encode() + b'"'
            fmts.append(
                b'{"ph":"X","name":'
                + _pct(name_json[n])
                + b',"pid":%d' % p
                + b',"tid":%d,"ts":%d.%s,"dur":%d.%s,"args":{'
                + _pct(args)
                + _VARIANT_TAIL[v]
                + b"}}"
            )
        self.s_fmt = _objects(fmts)
        self.s_key = key.reshape(-1).astype(np.int32)
        del key
        self.s_variant = uniq[:, 4].astype(np.int8)[self.s_key] if len(uniq) else np.zeros(0, np.int8)
        self.s_idx, self.s_tid = idx, tid
        self.s_start, self.s_dur, self.s_step, self.s_corr = ev["start"], ev["dur"], ev["step"], ev["corr"]
        self.s_phase = _objects([p.encode() for p in phase_names])
        self.s_phase_col = ev["phase"]

    def set_texts(self, texts: list[str]) -> None:
        """Events formatted one by one (engine steps, device steps, findings)."""
        self.texts_fmt = _objects([_pct(t.encode()) for t in texts])

    def set_flows(
        self,
        src_ts: np.ndarray,
        src_pid: np.ndarray,
        src_tid: np.ndarray,
        dev_ts: np.ndarray,
        dev_pid: np.ndarray,
        dev_tid: np.ndarray,
    ) -> None:
        """Flow pairs: row 2i is pair i's start, 2i+1 its end (ids 1, 2, ...)."""
        self.f_cols = (
            src_ts,
            src_pid.astype(np.int32),
            src_tid.astype(np.int32),
            dev_ts,
            dev_pid.astype(np.int32),
            dev_tid.astype(np.int32),
        )

    def set_counters(
        self, name_json: dict[int, bytes], name: np.ndarray, pid: np.ndarray, t: np.ndarray, value: np.ndarray
    ) -> None:
        code = name.astype(np.int64) * (1 << 20) + pid.astype(np.int64)
        uniq, key = np.unique(code, return_inverse=True)
        self.c_fmt = _objects(
            [
                b'{"ph":"C","name":'
                + _pct(name_json[int(c) >> 20])
                + b',"pid":%d,"tid":%d' % ((int(c) & 0xFFFFF,) * 2)
                + b',"ts":%d.%s,"args":{"value":%s}}'
                for c in uniq.tolist()
            ]
        )
        self.c_key, self.c_t, self.c_value = key.reshape(-1), t, value

    def set_frames(
        self, name_json: dict[int, bytes], name: np.ndarray, pid: np.ndarray, tid: np.ndarray, start, dur
    ) -> None:
        """Python frames: one template per (name, process); ``start``/``dur`` their times."""
        code = name.astype(np.int64) * (1 << 20) + pid.astype(np.int64)
        uniq, key = np.unique(code, return_inverse=True)
        self.p_fmt = _objects(
            [
                b'{"ph":"X","name":'
                + _pct(name_json[int(c) >> 20])
                + b',"pid":%d' % (int(c) & 0xFFFFF)
                + b',"tid":%d,"ts":%d.%s,"dur":%d.%s,"cat":"python_function"}'
                for c in uniq.tolist()
            ]
        )
        self.p_key, self.p_tid, self.p_start, self.p_dur = key.reshape(-1), tid, start, dur

    # -- formatting -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.kind)

    def _slices(self, rows: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, list]]]:
        fmts = self.s_fmt[self.s_key[rows]]
        groups = []
        var = self.s_variant[rows]
        for v in range(4):
            pos = np.flatnonzero(var == v)
            if not len(pos):
                continue
            e = self.s_idx[rows[pos]]  # event rows
            cols = [self.s_tid[rows[pos]], *_split_us(self.s_start[e]), *_split_us(self.s_dur[e])]
            if v & 1:
                cols += [self.s_step[e], self.s_phase[self.s_phase_col[e]]]
            if v & 2:
                cols.append(self.s_corr[e])
            groups.append((pos, cols))
        return fmts, groups

    def _flows(self, rows: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, list]]]:
        ends = rows & 1
        fmts = _FLOW_FMT[ends]
        groups = []
        for e in (0, 1):
            pos = np.flatnonzero(ends == e)
            if len(pos):
                p = rows[pos] >> 1
                ts, pid, tid = self.f_cols[3 * e : 3 * e + 3]
                groups.append((pos, [p + 1, pid[p], tid[p], *_split_us(ts[p])]))
        return fmts, groups

    def _counters(self, rows: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, list]]]:
        values = _enc.encode(self.c_value[rows].tolist())[1:-1].split(b",")
        return self.c_fmt[self.c_key[rows]], [(np.arange(len(rows)), [*_split_us(self.c_t[rows]), _objects(values)])]

    def _frames(self, rows: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, list]]]:
        cols = [self.p_tid[rows], *_split_us(self.p_start[rows]), *_split_us(self.p_dur[rows])]
        return self.p_fmt[self.p_key[rows]], [(np.arange(len(rows)), cols)]

    def text(self, lo: int, hi: int) -> bytes:
        """Sorted rows lo..hi as one text, ROW_SEP between them: the rows' templates joined
        into one format, filled by one ``%`` from their values laid out in row order."""
        kind, row = self.kind[lo:hi], self.row[lo:hi]
        fmts = np.empty(len(kind), object)
        n_args = np.zeros(len(kind), np.int64)
        filled = []  # (rows of the chunk, their value columns)
        sources = ((S_SLICE, self._slices), (S_FLOW, self._flows), (S_COUNTER, self._counters), (S_FRAME, self._frames))
        for k, fn in sources:
            pos = np.flatnonzero(kind == k)
            if len(pos):
                fmts[pos], groups = fn(row[pos])
                for at, cols in groups:
                    n_args[pos[at]] = len(cols)
                    filled.append((pos[at], cols))
        pos = np.flatnonzero(kind == S_TEXT)
        if len(pos):
            fmts[pos] = self.texts_fmt[row[pos]]
        first = np.cumsum(n_args) - n_args  # each row's first value
        values = np.empty(int(n_args.sum()), object)
        for at, cols in filled:
            for j, col in enumerate(cols):
                values[first[at] + j] = col
        return compiled.fill(ROW_SEP.join(fmts.tolist()), values.tolist())

    def chunk(self, lo: int, hi: int) -> list[bytes]:
        """The texts of sorted rows lo..hi, in order (no row's text holds ROW_SEP: a JSON
        string never holds a raw newline)."""
        return self.text(lo, hi).split(ROW_SEP) if hi > lo else []
