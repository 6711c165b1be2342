"""Scheduler hooks (EngineCore process): one record per engine step.

``schedule()`` is wrapped to note the step's start, its prefill/decode split and the
queue state; ``update_from_output()`` closes the step (paired with its SchedulerOutput
by object identity, which also holds with async scheduling's batch queue) and tracks
each request's first token and finish. The step id is tagged onto the SchedulerOutput
so that the workers' records join it exactly (and, inside a profile window a running
server was asked for, the window: see ``windows``).

Each EngineCore numbers its own steps; a data-parallel engine's rows carry its DP index
(``dp_rank``), and its KV-cache and host samples are filed under the global rank of its
first worker, so that engines never overwrite each other (see ``adopt``).
"""

from __future__ import annotations

from ...core.records import STEP_TAG
from . import compat, patching
from .recorder import REC, now
from .windows import WINDOWS


def adopt(sched) -> None:
    """This engine's place in the parallel layout, from the scheduler's configuration."""
    dp, world = compat.engine_place(sched)
    REC.dp_rank, REC.global_rank = dp, dp * world
    REC.place = {"dp": dp, "world": world, "rank": REC.global_rank}


def split_tokens(sched, so) -> tuple[int, int, int, int, int]:
    """Prefill and decode tokens and requests of one scheduler output, and how many
    requests finish their prefill in it (they sample their first token).

    A request's tokens up to its prompt length are prefill, the rest decode. The
    scheduler has already advanced ``num_computed_tokens`` by the scheduled count.
    """
    prefill = decode = p_reqs = d_reqs = done = 0
    reqs = compat.sched_requests(sched)
    track = REC.throughput
    open_reqs = REC.open_requests
    for req_id, n in compat.so_tokens_by_request(so).items():
        req = reqs.get(req_id)
        if req is None:
            decode += n
            d_reqs += 1
            continue
        prompt = compat.req_prompt_len(req)
        before = compat.req_computed(req) - n
        p = prompt - before
        p = 0 if p < 0 else (n if p > n else p)
        prefill += p
        decode += n - p
        if p:
            p_reqs += 1
            if before + p >= prompt:
                done += 1
        else:
            d_reqs += 1
        if track and req_id not in open_reqs:
            open_reqs[req_id] = [req_id, compat.req_arrival_ns(req), -1, -1, int(prompt), 0]
    return prefill, decode, p_reqs, d_reqs, done


def wrap_schedule(orig):
    @patching.wrapper_of(orig)
    def wrapper(self, *args, **kwargs):
        if not REC.active:
            return orig(self, *args, **kwargs)
        t0 = now()
        so = orig(self, *args, **kwargs)
        t1 = now()
        try:
            if REC.place is None:
                adopt(self)
            if compat.so_total_tokens(so) > 0:
                sid = REC.next_step
                REC.next_step += 1
                pt, dt, pr, dr, done = split_tokens(self, so)
                run, wait = compat.queue_lengths(self)
                setattr(so, STEP_TAG, sid)
                REC.pending[id(so)] = (sid, t0, t1, pt, dt, pr, dr, run, wait, done, compat.kv_usage(self))
                if sid == 0:
                    REC.meta = {
                        "engine": compat.scheduler_engine_config(self),
                        "model_config": compat.scheduler_model_config(self),
                    }
                WINDOWS.engine_step(self, so, sid, t0)  # a profile window asked for: tag its steps
        except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
            REC.failed("Scheduler.schedule", e)
        REC.hook_ns += now() - t1
        return so

    return wrapper


def wrap_update(orig):
    @patching.wrapper_of(orig)
    def wrapper(self, scheduler_output, *args, **kwargs):
        out = orig(self, scheduler_output, *args, **kwargs)
        if not REC.active:
            return out
        t = now()
        try:
            end_step(self, scheduler_output, out, t)
        except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
            REC.failed("Scheduler.update_from_output", e)
        REC.hook_ns += now() - t
        return out

    return wrapper


def end_step(sched, so, out, t: int) -> None:
    p = REC.pending.pop(id(so), None)
    if p is not None:
        sid, t0, t1, pt, dt, pr, dr, run, wait, done, kv = p
        # KV usage as the step ran it (after the scheduler allocated its slots)
        REC.sched.append((sid, t0, t1, t, pt, dt, pr, dr, run, wait, kv, REC.dp_rank, done))
        if REC.memory:
            REC.counters.append((REC.global_rank, "kv_cache_usage", t1, kv))
            REC.counters.append((REC.global_rank, "kv_cache_usage", t, compat.kv_usage(sched)))
    if REC.throughput and out:
        track_requests(out, t)
    if REC.memory:
        REC.mem.host(REC.counters, t, REC.global_rank, "engine_core")
    if REC.file_dir is not None:
        REC.maybe_flush(t, idle=not compat.has_requests(sched))


def track_requests(outputs, t: int) -> None:
    reqs = REC.open_requests
    for req_id, n, finished in compat.step_outputs(outputs):
        r = reqs.get(req_id)
        if r is None:
            continue
        if n and r[2] < 0:
            r[2] = t
        r[5] += n
        if finished:
            r[3] = t
            REC.done_requests.append(tuple(reqs.pop(req_id)))


def install(cls) -> dict[str, bool]:
    """Wrap ``schedule`` and ``update_from_output`` wherever ``cls`` and its bases define
    them; returns {symbol: a wrapper of ours is now what ``cls`` calls}."""
    patching.wrap_methods(cls, {compat.SCHEDULE: wrap_schedule, compat.UPDATE: wrap_update})
    return compat.hook_status(cls, compat.SCHEDULER_HOOKS)
