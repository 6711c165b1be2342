"""Graph replays in the attribution: their share of device time, and their fused ops
through the capture traces of the run (``graphs.attribution``, ``graphs.captures``).

A replayed kernel has no launching op of its own. With capture traces each one is
matched to its captured launch and takes the fused op that launch's op chain or module
gives (source ``capture``); unmatched ones, and all of them without capture traces,
keep the fused op of their own name (source ``name``). What was found and matched is
recorded in ``profile.derived.graphs`` for the summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core.launches import device_mask
from ...core.profile import K_RUNTIME, Profile
from ...core.sources import AttributionSource as Src
from ...knowledge.taxonomy import Taxonomy

if TYPE_CHECKING:
    from .attribution import Replays


def find_replays(profile: Profile, rows: np.ndarray) -> Replays:
    """``graphs.find_replays``, skipped when the trace can hold no replay: no graph launch
    among its runtime calls, and every correlated device event has its runtime call
    (``rows``: ``launches.launch_rows``)."""
    from .attribution import GRAPH_LAUNCH, Replays
    from .attribution import find_replays as find

    ev = profile.events
    rt = np.unique(ev["name"][ev["kind"] == K_RUNTIME])
    dev = device_mask(ev["kind"]) & (ev["corr"] >= 0) & (ev["start"] >= 0)
    if (rows[dev] >= 0).all() and not any(GRAPH_LAUNCH.search(profile.strings[int(i)]) for i in rt.tolist()):
        z = np.zeros(0, np.int64)
        return Replays(launch=z, rank=np.zeros(0, np.int32), corr=z, rows=z, offsets=np.zeros(1, np.int64))
    return find(profile)


def attribute_replays(
    profile: Profile,
    replays: Replays,
    capture: Profile | None,
    taxonomy: Taxonomy,
    fused: np.ndarray,
    source: np.ndarray,
) -> None:
    """Overwrite ``fused``/``source`` of the replayed events the capture traces decide."""
    # graphs and capture build on aggregate.intervals: imported here, not when aggregate loads
    from .attribution import match_replays, replay_share
    from .captures import read_captures

    info = replay_share(profile, replays)
    info["launches"] = int((replays.launch >= 0).sum())
    if capture is not None:
        info["capture_files"] = [str(s.get("path", "")) for s in capture.run.get("sources", [])]
        caps = read_captures(capture, taxonomy, **_capture_hints(capture))
        info["captured_graphs"] = len(caps)
        att = match_replays(profile, replays, caps, taxonomy)
        hit = att.source == Src.CAPTURE
        fused[hit] = att.fused[hit]
        source[hit] = Src.CAPTURE
        info.update(att.stats)
        how = _capture_layers(profile, capture, caps, att.capture_row)
        if how:
            info["capture_layers"] = how
    if len(replays) or capture is not None:
        profile.derived.graphs = info
    else:
        profile.derived.graphs = None


def _capture_layers(profile: Profile, capture: Profile, caps, capture_row: np.ndarray) -> str:
    """Each replayed kernel's layer (or compiled piece) in its graph, from the frame its
    captured launch lies in (``profile.capture_layer``); how they were found, "" none."""
    from ..layers.frames import capture_layer_hints

    hints, how = capture_layer_hints(capture, caps.rows, caps.offsets)
    if not how:
        return ""
    lut = np.full(len(capture.events), -1, np.int32)
    lut[caps.rows] = hints
    matched = capture_row >= 0
    out = np.full(len(profile.events), -1, np.int32)
    out[matched] = lut[capture_row[matched]]
    profile.capture_layer = out
    return how


def _capture_hints(capture: Profile) -> dict:
    """Batch size and mode for a capture trace without capture ranges: what SGLang's
    capture-details.json says of its one file."""
    hints = capture.run.get("capture_details") or {}
    return {"size": int(hints["size"]), "mode": str(hints.get("mode", ""))} if "size" in hints else {}
