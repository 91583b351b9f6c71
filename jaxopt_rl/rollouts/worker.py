"""The rollout path every mode shares: prompts -> G completions -> programs -> sandbox ->
execution records -> one reward per rollout -> a `Group`, in three named phases.

    sample    one sampler call for a few prompts at once, G rows per prompt
              (`sampling.generate_groups`: one prefill per prompt, stopped rows not decoded;
              the raw model's log-probs kept: the trainer's `old_logp`)
    execute   each completion's program (the last closed ```python block) goes to the sandbox
              with the problem's tests; calls run concurrently (the client's `submit` futures),
              so one slow program never serialises a group; a caller that runs `execute` of one
              batch while it samples the next overlaps the two (the training loop does)
    score     the records of a group (one problem) become a padded `RecordBatch` through the one
              layout function (`data.execution_records.batch_from_records`) and go through the
              environment (`rewards.rewards_and_signals`): one reward per rollout, NaN where the
              environment says undefined (inconclusive, unrankable); never a number made up here

A completion without a program is the model's failure, not the sandbox's: every test of that
rollout is recorded as `runtime_error` (detail "no program") without a sandbox call.

Score-based tasks (`kind: river` environments, a `rollouts.score_tasks.ScoreTaskBank`) take the
same three phases: the tests are the task's hidden instances, the sandbox runs the task's
checker, and `score` turns the group's `[G, M]` checker scores into RiVER rewards
(`rewards.river_rewards_from_scores`) instead of laying out records. There are no correctness
tests, so signals `c_cor` = `c_strict` = `g` mean "valid on every instance".

Dimension letters (`jaxopt_rl.dimensions`): G rollouts of one problem, O new tokens, L prompt
tokens, T tests.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Literal

import numpy as np
from flax import nnx
from jax.sharding import Mesh

from jaxopt_rl.data.execution_records import batch_from_records
from jaxopt_rl.model.prompt import extract_program
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.model.transformer import Transformer
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.environment import rewards_and_signals, river_rewards_from_scores
from jaxopt_rl.rollouts.execute import execution_records
from jaxopt_rl.rollouts.problems import ProblemBank, ProblemRun
from jaxopt_rl.rollouts.score_tasks import ScoreTaskBank, scores_from_results
from jaxopt_rl.sampling.host import generate, generate_groups
from sandbox_cluster.api import Status, TestResult

SIGNAL_NAMES = ("c_cor", "c_strict", "g", "q", "inconclusive", "undefined")
# reward families in which a failed correctness test fixes the reward (spec §6: -1)
GATED_FAMILIES = ("correctness", "collapsed", "two_gate")


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are sampled and executed."""

    group_size: int = 8  # G rollouts per prompt
    max_new_tokens: int = 256
    temperature: float = 1.0  # the paper samples at 1.0 with no top-p
    top_k: int | None = None
    top_p: float | None = None
    prompts_per_call: int = 4  # prompts sampled together in one sampler call
    prompt_multiple: int = 32  # prompt padding multiple: a few compiled sampler shapes
    test_pad_multiple: int = 32  # tests padded to a multiple: a few compiled reward shapes
    embedded_is_fleet: bool = True  # see rollouts.execute: embedded durations rank
    cache_segments: int = 4  # decode loops over a growing KV cache (jaxopt_rl.sampling.loop)
    # (choice) How a call's prompts x G rows are decoded (`sampling.generate_groups`): one
    # prefill per prompt either way; "compact" drops stopped rows once they are half the batch,
    # "slots" keeps `slots` decode slots busy (continuous batching; for memory-bound batches),
    # "static" runs every row until the longest stops (the sampler before either). All three
    # draw the same tokens for a seed. Compact is the default: on the demo's SFT rollouts (CPU,
    # 8 prompts x 16) it gave the most useful tokens per second (`benchmarks/sampler.py`).
    sampler: Literal["compact", "slots", "static"] = "compact"
    slots: int = 32  # decode slots of the "slots" sampler (rounded up to the batch shards)
    references: Literal["stored", "fresh"] = "stored"  # fresh: timed on this run's sandbox
    reference_runs: int = 1  # fresh: runs per reference (their mean ranks)
    # (choice) Stop a program's run at its first definitive failure on a correctness test; the
    # tests it skips are `not_run` (a failure without a duration). Exact for the families whose
    # reward a failed correctness gate decides (correctness, collapsed, two_gate): a looping
    # program then costs one cap, not one per test. Refused for the others (see `check_env`).
    stop_after_failure: bool = False
    # (choice) Each test of a rollout (and of a retimed reference) runs this many times and its
    # duration is the minimum (`Limits.repeats`): fewer rewards flipped by a slow moment of
    # the machine, at the cost of repeats x the execution time of correct programs.
    timing_repeats: int = 1

    def __post_init__(self) -> None:
        from jaxopt_rl.config import require

        require(self.group_size >= 2, "group_size", "must be >= 2 (a group needs a baseline)")
        require(self.max_new_tokens >= 1, "max_new_tokens", "must be >= 1")
        require(math.isfinite(self.temperature) and self.temperature >= 0, "temperature",
                f"must be finite and >= 0 (0: greedy), got {self.temperature}")
        require(self.prompts_per_call >= 1, "prompts_per_call", "must be >= 1")
        require(self.prompt_multiple >= 1, "prompt_multiple", "must be >= 1")
        require(self.sampler in ("compact", "slots", "static"), "sampler",
                f"must be 'compact', 'slots' or 'static', got {self.sampler!r}")
        require(self.slots >= 1, "slots", "must be >= 1")
        require(self.test_pad_multiple >= 1, "test_pad_multiple", "must be >= 1")
        require(self.references in ("stored", "fresh"), "references",
                f"must be 'stored' or 'fresh', got {self.references!r}")
        require(self.reference_runs >= 1, "reference_runs", "must be >= 1")
        require(1 <= self.timing_repeats <= 100, "timing_repeats", "must be in [1, 100]")

    def check_env(self, env: EnvConfig) -> None:
        """Refuse `stop_after_failure` where skipped tests could change a failed program's
        reward (its speed or timeout terms still count: optimization, additive, multitask,
        naive)."""
        if self.stop_after_failure and env.kind == "river":
            raise ValueError(f"rollout.stop_after_failure: environment {env.name!r} scores "
                             "hidden instances and has no correctness tests to stop at")
        if env.kind == "river":
            return
        family = env.composition.family
        if self.stop_after_failure and family not in GATED_FAMILIES:
            raise ValueError(
                f"rollout.stop_after_failure: environment {env.name!r} (family {family}) still "
                f"rewards a program that failed a correctness test; it is exact only for "
                f"{', '.join(GATED_FAMILIES)}")


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One prompt of the data stream; `position` is its index in the loader (for resume)."""

    problem_id: str
    position: int


@dataclasses.dataclass(frozen=True)
class Group:
    """G rollouts of one prompt, scored: what crosses the queue from workers to the trainer.

    Token arrays are per rollout (ragged); `sampler_logprobs[g][i]` is the raw model's log-prob
    (temperature 1, no truncation) of `completion_tokens[g][i]` under policy `policy_version`.
    """

    problem_id: str
    position: int
    prompt_tokens: np.ndarray  # int32 [L]
    completion_tokens: tuple[np.ndarray, ...]  # G x int32 [length]
    sampler_logprobs: tuple[np.ndarray, ...]  # G x float32 [length]
    finished_G: np.ndarray  # bool: stopped on EOS (False: cut at max_new_tokens)
    rewards_G: np.ndarray  # float32, NaN: undefined (dropped by the trainer, counted)
    signals: dict[str, np.ndarray]  # SIGNAL_NAMES -> [G]
    policy_version: int
    counts: dict[str, int]  # multihost.COUNT_NAMES
    seconds: dict[str, float]  # sample, execute, score

    @property
    def lengths_G(self) -> np.ndarray:
        return np.array([len(t) for t in self.completion_tokens], np.int32)


@dataclasses.dataclass
class Sampled:
    """The sample phase's output for one prompt, before execution."""

    prompt: Prompt
    run: ProblemRun
    prompt_tokens: np.ndarray
    completion_tokens: list[np.ndarray]
    sampler_logprobs: list[np.ndarray]
    finished_G: np.ndarray
    programs: list[str | None]
    policy_version: int
    sample_s: float


def _no_program_results(count: int) -> list[TestResult]:
    return [TestResult(Status.RUNTIME_ERROR, 0.0, detail="no program",
                       extra={"timing": "none", "node": "none"})] * count


class RolloutWorker:
    """Runs the three phases against one model, one sandbox and one environment."""

    def __init__(self, config: RolloutConfig, tokenizer: Tokenizer,
                 bank: ProblemBank | ScoreTaskBank, sandbox: Any, env: EnvConfig):
        if (env.kind == "river") != isinstance(bank, ScoreTaskBank):
            raise ValueError(f"environment {env.name!r} (kind {env.kind}) "
                             + ("scores score tasks: data.dataset must name score tasks"
                                if env.kind == "river" else
                                "runs tests with expected outputs: data.dataset names score "
                                "tasks, which only a kind=river environment scores"))
        if env.kind == "river" and env.river.minimize:
            raise ValueError(f"environment {env.name!r}: river.minimize must be false for score "
                             "tasks (each task states its own objective)")
        if env.service_cap_s != bank.service_cap_s:
            raise ValueError(f"environment {env.name!r} caps tests at {env.service_cap_s} s but "
                             f"the problem bank runs them at {bank.service_cap_s} s")
        config.check_env(env)
        self.config = config
        self.tokenizer = tokenizer
        self.bank = bank
        self.sandbox = sandbox
        self.env = env

    # ---- sample ---------------------------------------------------------------------------
    def sample(self, graphdef: nnx.GraphDef, params: nnx.State, prompts: Sequence[Prompt],
               seed: int, policy_version: int, mesh: Mesh | None = None) -> list[Sampled]:
        """G completions for each prompt in one sampler call (rows p*G .. p*G+G-1)."""
        cfg = self.config
        model: Transformer = nnx.merge(graphdef, params)
        runs = [self.bank[p.problem_id] for p in prompts]
        prompt_ids = [np.asarray(self.tokenizer.encode(run.prompt), np.int32) for run in runs]
        knobs = dict(stop_tokens=self.tokenizer.eos_ids, seed=seed, pad_id=self.tokenizer.pad_id,
                     prompt_multiple=cfg.prompt_multiple, cache_segments=cfg.cache_segments,
                     mesh=mesh)
        start = time.perf_counter()
        if cfg.sampler == "static":
            rows = [ids for ids in prompt_ids for _ in range(cfg.group_size)]
            batch = generate(model, rows, cfg.max_new_tokens, cfg.temperature, cfg.top_k,
                             cfg.top_p, **knobs)
        else:
            batch = generate_groups(model, prompt_ids, cfg.group_size, cfg.max_new_tokens,
                                    cfg.temperature, cfg.top_k, cfg.top_p, scheme=cfg.sampler,
                                    slots=cfg.slots, **knobs)
        elapsed = time.perf_counter() - start
        texts = self.tokenizer.decode_batch(batch.completions())
        out = []
        for p, (prompt, run) in enumerate(zip(prompts, runs)):
            rows_G = range(p * cfg.group_size, (p + 1) * cfg.group_size)
            out.append(Sampled(
                prompt=prompt, run=run, prompt_tokens=prompt_ids[p],
                completion_tokens=[batch.tokens[r, :batch.lengths[r]].copy() for r in rows_G],
                sampler_logprobs=[batch.model_logprobs[r, :batch.lengths[r]].copy()
                                  for r in rows_G],
                finished_G=batch.finished[list(rows_G)].copy(),
                programs=[extract_program(texts[r]) for r in rows_G],
                policy_version=policy_version,
                sample_s=elapsed / len(prompts),
            ))
        return out

    # ---- execute --------------------------------------------------------------------------
    def execute(self, sampled: Sampled) -> list[Future | None]:
        """Start every rollout's sandbox call; None where the completion has no program."""
        run = sampled.run
        futures: list[Future | None] = []
        for program in sampled.programs:
            if program is None:
                futures.append(None)
                continue
            futures.append(self.sandbox.submit(
                program, list(run.tests), run.limits, interface=run.interface,
                float_tolerance=run.float_tolerance, test_kinds=list(run.test_kinds),
                checker=run.checker, stop_after_failure=self.config.stop_after_failure))
        return futures

    # ---- score ----------------------------------------------------------------------------
    def score(self, sampled: Sampled, futures: Sequence[Future | None],
              execute_started: float) -> Group:
        """Wait for the group's results, lay the records out and compute its rewards."""
        run = sampled.run
        results = [_no_program_results(len(run.tests)) if f is None else f.result()
                   for f in futures]
        execute_s = time.perf_counter() - execute_started
        start = time.perf_counter()
        if self.env.kind == "river":
            rewards_G, signal_arrays = self._river_rewards(run, results)
        else:
            rewards_G, signal_arrays = self._execution_rewards(run, results)
        flat = [r for result_T in results for r in result_T]
        counts = {
            "no_program": sum(p is None for p in sampled.programs),
            "tests": len(flat),
            "infra_error": sum(r.status is Status.INFRA_ERROR for r in flat),
            "timeout": sum(r.status is Status.TIMEOUT for r in flat),
            "not_run": sum(r.status is Status.NOT_RUN for r in flat),
            "fallback": sum(bool((r.extra or {}).get("fallback")) for r in flat),
            # spec sandbox-timing.md: a rollout resolved by the fleet alone (no local
            # fallback, nothing inconclusive) counts toward the remote-only (CES-only) rate
            "executed": sum(f is not None for f in futures),
            "remote_only": sum(f is not None and all(
                r.status is not Status.INFRA_ERROR and not (r.extra or {}).get("fallback")
                for r in row) for f, row in zip(futures, results)),
        }
        return Group(
            problem_id=run.problem_id, position=sampled.prompt.position,
            prompt_tokens=sampled.prompt_tokens,
            completion_tokens=tuple(sampled.completion_tokens),
            sampler_logprobs=tuple(sampled.sampler_logprobs),
            finished_G=sampled.finished_G,
            rewards_G=rewards_G,
            signals=signal_arrays, policy_version=sampled.policy_version, counts=counts,
            seconds={"sample": sampled.sample_s, "execute": execute_s,
                     "score": time.perf_counter() - start},
        )

    def _execution_rewards(self, run: ProblemRun, results) -> tuple[np.ndarray, dict]:
        records = []
        for g, result_T in enumerate(results):
            records.extend(execution_records(run.problem_id, str(g), run.specs, result_T,
                                             run.limits.time_s, self.config.embedded_is_fleet))
        batch, _index = batch_from_records(records, run.references,
                                           pad_multiple=self.config.test_pad_multiple,
                                           group_size=self.config.group_size)
        reward_B, signals = rewards_and_signals(batch, self.env)
        g = self.config.group_size
        return np.asarray(reward_B, np.float32)[:g], {
            "c_cor": np.asarray(signals.c_cor_B)[:g], "c_strict": np.asarray(signals.c_strict_B)[:g],
            "g": np.asarray(signals.g_B)[:g], "q": np.asarray(signals.q_B)[:g],
            "inconclusive": np.asarray(signals.inconclusive_B)[:g],
            "undefined": np.asarray(signals.undefined_B)[:g],
        }

    def _river_rewards(self, run: ProblemRun, results) -> tuple[np.ndarray, dict]:
        """RiVER rewards of one group over the task's hidden instances (module docstring of
        `rollouts.score_tasks`: inconclusive solvers are left out of the ranking, NaN)."""
        scores_GM, valid_GM, inconclusive_G = scores_from_results(
            results, self.bank.objective(run.problem_id))
        rewards_G = np.full(len(results), np.nan, np.float32)
        keep = ~inconclusive_G
        if keep.any():
            rewards_G[keep] = np.asarray(
                river_rewards_from_scores(scores_GM[keep], valid_GM[keep], self.env), np.float32)
        valid_G = valid_GM.all(axis=1) & keep
        return rewards_G, {"c_cor": valid_G, "c_strict": valid_G, "g": valid_G,
                           "q": np.zeros(len(results), np.float32),
                           "inconclusive": inconclusive_G, "undefined": ~np.isfinite(rewards_G)}

    # ---- all three ------------------------------------------------------------------------
    def rollout(self, graphdef: nnx.GraphDef, params: nnx.State, prompts: Sequence[Prompt],
                seed: int, policy_version: int, mesh: Mesh | None = None) -> list[Group]:
        """Sample, execute and score `prompts`; every group's sandbox calls run at once."""
        sampled = self.sample(graphdef, params, prompts, seed, policy_version, mesh)
        started = time.perf_counter()
        in_flight = [(s, self.execute(s)) for s in sampled]
        return [self.score(s, futures, started) for s, futures in in_flight]
