"""Rollouts and metrics under `jax.distributed`: one process has them, every process gets them.

A rollout batch is executed and scored once, by one process (the sandbox load does not grow with
the host count), and broadcast whole: completions, sampler log-probs, rewards, signals, counts
(`share_rollouts`, one `multihost_utils.broadcast_one_to_all` of fixed-shape arrays), so every
process packs the same batch and takes the same decisions (drop, stale, step) in the same order.
A process that holds no device of the rollout mesh never sees the completions otherwise.

`host_metrics`: the train step's metrics on every process, broadcast from process 0 (which always
holds training devices) when some process holds none.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxopt_rl.errors import RunStopped
from jaxopt_rl.rollouts.batch import COUNT_NAMES, SECONDS_NAMES, SIGNAL_NAMES, RolloutBatch
from jaxopt_rl.rollouts.worker import Prompt, RolloutWorker, Sampled


def score_on_process_zero(worker: RolloutWorker, sampled: Sampled) -> RolloutBatch:
    """Colocated sync: every process sampled `sampled`; process 0 executes and scores."""
    batch, error = None, None
    if jax.process_index() == 0:
        started = time.perf_counter()
        try:
            batch = worker.score(sampled, worker.execute(sampled), started)
        except Exception as err:  # shared as a failure, then raised here
            error = err
    with raising(error):
            return share_rollouts(batch, is_source=jax.process_index() == 0,
                              prompts=sampled.prompts, prompt_tokens=sampled.prompt_tokens,
                              policy_version=sampled.policy_version,
                              group_size=sampled.finished_PG.shape[1],
                              max_new_tokens=worker.config.max_new_tokens)


@contextlib.contextmanager
def raising(error: BaseException | None):
    """Raise the source's own error (with its traceback) rather than the shared stop."""
    try:
        yield
    except RunStopped:
        if error is not None:
            raise error from None
        raise


def share_rollouts(batch: RolloutBatch | None, *, is_source: bool, prompts: Sequence[Prompt],
                   prompt_tokens: Sequence[np.ndarray], policy_version: int, group_size: int,
                   max_new_tokens: int) -> RolloutBatch:
    """The source process's `batch` on every process. The others pass None and what they know
    of the call (its prompts, their tokens, the version that sampled it); every process must
    call this at the same point of its schedule (it is a collective over all devices). A source
    that failed to score passes None too: every process then raises `RunStopped` together,
    instead of the others waiting in this collective for a batch that never comes."""
    shape = (len(prompts), group_size)
    if is_source and batch is None:  # the source failed: every process stops at this point
        payload = _empty(shape, max_new_tokens)
        payload["failed"][...] = 1
    else:
        payload = (_pack(batch, shape, max_new_tokens) if is_source
                   else _empty(shape, max_new_tokens))
    payload = jax.tree.map(np.asarray,
                           multihost_utils.broadcast_one_to_all(payload, is_source=is_source))
    if payload["failed"]:
        raise RunStopped("the process that scores rollouts failed on this sampler call (its "
                         "log has the error); every process stops here")
    if is_source:
        return batch
    lengths_PG = payload["lengths"]
    return RolloutBatch(
        problem_ids=tuple(p.problem_id for p in prompts),
        positions_P=np.array([p.position for p in prompts], np.int64),
        prompt_tokens=tuple(np.asarray(t, np.int32) for t in prompt_tokens),
        completion_tokens=tuple(tuple(payload["tokens"][p, g, :lengths_PG[p, g]].copy()
                                      for g in range(group_size)) for p in range(shape[0])),
        sampler_logprobs=tuple(tuple(payload["logprobs"][p, g, :lengths_PG[p, g]].copy()
                                     for g in range(group_size)) for p in range(shape[0])),
        finished_PG=payload["finished"] > 0, rewards_PG=payload["rewards"],
        signals={n: (payload["signals"][k] if n == "q" else payload["signals"][k] > 0.5)
                 for k, n in enumerate(SIGNAL_NAMES)},
        policy_version=int(policy_version),
        counts={n: int(payload["counts"][k]) for k, n in enumerate(COUNT_NAMES)},
        seconds={n: float(payload["seconds"][k]) for k, n in enumerate(SECONDS_NAMES)})


def _empty(shape: tuple[int, int], max_new_tokens: int) -> dict[str, np.ndarray]:
    # int32 and float32 only: without jax_enable_x64 a 64-bit array would be narrowed
    return {"tokens": np.zeros((*shape, max_new_tokens), np.int32),
            "logprobs": np.zeros((*shape, max_new_tokens), np.float32),
            "lengths": np.zeros(shape, np.int32), "finished": np.zeros(shape, np.int32),
            "rewards": np.zeros(shape, np.float32),
            "signals": np.zeros((len(SIGNAL_NAMES), *shape), np.float32),
            "counts": np.zeros(len(COUNT_NAMES), np.int32),
            "seconds": np.zeros(len(SECONDS_NAMES), np.float32),
            "failed": np.zeros((), np.int32)}


def _pack(batch: RolloutBatch, shape: tuple[int, int], max_new_tokens: int) -> dict:
    out = _empty(shape, max_new_tokens)
    for p, (tokens_G, logps_G) in enumerate(zip(batch.completion_tokens,
                                                 batch.sampler_logprobs)):
        for g, (tokens, logps) in enumerate(zip(tokens_G, logps_G)):
            if len(tokens) > max_new_tokens:
                raise ValueError(f"rollout {p}/{g} has {len(tokens)} tokens, more than "
                                 f"rollout.max_new_tokens={max_new_tokens}")
            out["tokens"][p, g, :len(tokens)] = tokens
            out["logprobs"][p, g, :len(logps)] = logps
            out["lengths"][p, g] = len(tokens)
    out["finished"][:] = batch.finished_PG
    out["rewards"][:] = batch.rewards_PG
    for k, name in enumerate(SIGNAL_NAMES):
        out["signals"][k] = batch.signals[name]
    out["counts"][:] = [batch.counts[n] for n in COUNT_NAMES]
    out["seconds"][:] = [batch.seconds.get(n, 0.0) for n in SECONDS_NAMES]
    return out


def host_metrics(metrics: dict, everywhere: bool) -> dict:
    """The step's metrics as NumPy on every process. `everywhere`: every process holds a
    training device (each reads its own replica); else process 0 broadcasts them."""
    if everywhere:
        return jax.device_get(metrics)
    is_source = jax.process_index() == 0
    names = sorted(metrics)
    values = (np.array([float(jax.device_get(metrics[n])) for n in names], np.float32)
              if is_source else np.zeros(len(names), np.float32))
    values = np.asarray(multihost_utils.broadcast_one_to_all(values, is_source=is_source))
    return dict(zip(names, values))


def broadcast_json(value: Any, is_source: bool) -> Any:
    """A JSON-able value of the source process on every process (two collectives: its length,
    then its bytes); the others pass anything."""
    data = np.frombuffer(json.dumps(value).encode(), np.uint8) if is_source else np.zeros(0)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(data.size), is_source=is_source))
    buffer = data.astype(np.int32) if is_source else np.zeros(size, np.int32)
    buffer = np.asarray(multihost_utils.broadcast_one_to_all(buffer, is_source=is_source))
    return json.loads(buffer.astype(np.uint8).tobytes().decode())
