"""Scoring under `jax.distributed`: one process runs the sandbox, every process gets the result.

All processes sample the same prompts with the same global arrays, so their completions are
identical; executing them once is enough (and keeps the sandbox load independent of the host
count). Process 0 executes and scores, and broadcasts the batch's rewards, signals and counts
(`multihost_utils.broadcast_one_to_all`), so every process packs the same batch.
"""

from __future__ import annotations

import time

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxopt_rl.rollouts.batch import COUNT_NAMES, SIGNAL_NAMES, RolloutBatch
from jaxopt_rl.rollouts.worker import RolloutWorker, Sampled


def score_on_process_zero(worker: RolloutWorker, sampled: Sampled) -> RolloutBatch:
    prompts, size = sampled.finished_PG.shape
    if jax.process_index() == 0:
        started = time.perf_counter()
        batch = worker.score(sampled, worker.execute(sampled), started)
        payload = {
            "rewards": batch.rewards_PG,
            "signals": np.stack([batch.signals[n] for n in SIGNAL_NAMES]),
            "counts": np.array([batch.counts[n] for n in COUNT_NAMES], np.int64),
            "seconds": np.array([batch.seconds["execute"], batch.seconds["score"]]),
        }
    else:
        batch = None
        payload = {
            "rewards": np.zeros((prompts, size), np.float32),
            "signals": np.zeros((len(SIGNAL_NAMES), prompts, size), bool),
            "counts": np.zeros(len(COUNT_NAMES), np.int64),
            "seconds": np.zeros(2),
        }
    # one flat float32 vector: one collective of one known size on every process
    shapes = {k: v.shape for k, v in payload.items()}
    flat = np.concatenate([np.asarray(payload[k], np.float32).ravel() for k in sorted(shapes)])
    flat = np.asarray(multihost_utils.broadcast_one_to_all(flat))
    at = 0
    for key in sorted(shapes):
        count = int(np.prod(shapes[key]))
        payload[key] = flat[at:at + count].reshape(shapes[key])
        at += count
    if batch is not None:
        return batch
    return sampled.batch(
        payload["rewards"], {n: payload["signals"][k] > 0.5 for k, n in enumerate(SIGNAL_NAMES)},
        {n: int(payload["counts"][k]) for k, n in enumerate(COUNT_NAMES)},
        {"execute": float(payload["seconds"][0]), "score": float(payload["seconds"][1])})
