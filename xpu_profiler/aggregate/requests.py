"""Per-request latencies: the requests table → one entry per request (TTFT, TPOT, end to end)."""

from __future__ import annotations

import numpy as np

from ..core.profile import Profile
from ..summary import Requests


def requests(profile: Profile) -> Requests:
    req = profile.requests
    if not len(req):
        return Requests()
    arr, first, fin, out = req["arrival"], req["first_token"], req["finish"], req["output_len"]
    seen, has_first, done = arr >= 0, first >= 0, fin >= 0

    def col(values: np.ndarray, ok: np.ndarray, cast=int) -> list:
        return [cast(v) if k else None for v, k in zip(values.tolist(), ok.tolist())]

    tpot_ok = has_first & done & (out > 1)
    tpot = (fin - first) / np.maximum(out - 1, 1)
    order = np.argsort(np.where(seen, arr, np.iinfo(np.int64).max), kind="stable")
    r = {k: req[k][order] for k in ("rank", "req", "prompt_len")}
    arr, first, fin, out = arr[order], first[order], fin[order], out[order]
    seen, has_first, done, tpot_ok, tpot = seen[order], has_first[order], done[order], tpot_ok[order], tpot[order]
    return Requests(
        req=profile.strings.lookup(r["req"]),
        rank=r["rank"].tolist(),
        arrival_ns=col(arr, seen),
        prompt_len=r["prompt_len"].tolist(),
        output_len=out.tolist(),
        ttft_ns=col(first - arr, seen & has_first),
        tpot_ns=col(tpot, tpot_ok, float),
        e2e_ns=col(fin - arr, seen & done),
    )
