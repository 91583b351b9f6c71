"""Scoring under `jax.distributed`: one process runs the sandbox, every process gets the result.

All processes sample the same prompts with the same global arrays, so their completions are
identical; executing them once is enough (and keeps the sandbox load independent of the host
count). Process 0 executes and scores, and broadcasts each group's rewards, signals and counts
(`multihost_utils.broadcast_one_to_all`), so every process packs the same batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxopt_rl.rollouts.worker import SIGNAL_NAMES, Group, RolloutWorker, Sampled

COUNT_NAMES = ("no_program", "tests", "infra_error", "timeout", "not_run", "fallback",
               "executed", "remote_only")


def score_on_process_zero(worker: RolloutWorker, sampled: Sequence[Sampled]) -> list[Group]:
    size = len(sampled[0].completion_tokens)
    if jax.process_index() == 0:
        started = time.perf_counter()
        in_flight = [(s, worker.execute(s)) for s in sampled]
        groups = [worker.score(s, futures, started) for s, futures in in_flight]
        payload = {
            "rewards": np.stack([g.rewards_G for g in groups]).astype(np.float32),
            "signals": np.stack([[g.signals[n] for n in SIGNAL_NAMES] for g in groups]),
            "counts": np.array([[g.counts[n] for n in COUNT_NAMES] for g in groups], np.int64),
            "seconds": np.array([[g.seconds["execute"], g.seconds["score"]] for g in groups]),
        }
    else:
        groups = None
        payload = {
            "rewards": np.zeros((len(sampled), size), np.float32),
            "signals": np.zeros((len(sampled), len(SIGNAL_NAMES), size), bool),
            "counts": np.zeros((len(sampled), len(COUNT_NAMES)), np.int64),
            "seconds": np.zeros((len(sampled), 2)),
        }
    # one flat float32 vector: one collective of one known size on every process
    shapes = {k: v.shape for k, v in payload.items()}
    flat = np.concatenate([np.asarray(payload[k], np.float32).ravel() for k in sorted(shapes)])
    flat = np.asarray(multihost_utils.broadcast_one_to_all(flat))
    at = 0
    for key in sorted(shapes):
        size = int(np.prod(shapes[key]))
        payload[key] = flat[at:at + size].reshape(shapes[key])
        at += size
    payload["signals"] = payload["signals"] > 0.5
    if groups is not None:
        return groups
    out = []
    for i, s in enumerate(sampled):
        out.append(Group(
            problem_id=s.run.problem_id, position=s.prompt.position,
            prompt_tokens=s.prompt_tokens, completion_tokens=tuple(s.completion_tokens),
            sampler_logprobs=tuple(s.sampler_logprobs), finished_G=s.finished_G,
            rewards_G=payload["rewards"][i],
            signals={n: payload["signals"][i, k] for k, n in enumerate(SIGNAL_NAMES)},
            policy_version=s.policy_version,
            counts={n: int(payload["counts"][i, k]) for k, n in enumerate(COUNT_NAMES)},
            seconds={"sample": s.sample_s, "execute": float(payload["seconds"][i, 0]),
                     "score": float(payload["seconds"][i, 1])}))
    return out


