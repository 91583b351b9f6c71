"""The rollout path: P prompts -> G completions each -> programs -> sandbox -> execution
table -> one reward per rollout -> one `RolloutBatch` (`rollouts.batch`), in three named phases.

    sample    one sampler call for a few prompts at once, G rows per prompt
              (`sampling.generate` with the scheme `rollout.sampler` names: "compact" and
              "slots" prefill each prompt once and decode no stopped row, "static" repeats
              each prompt G times and decodes every row until the longest stops; the raw
              model's log-probs kept: the trainer's `old_logp`). `sample_call` is
              this phase without the trainer's bookkeeping: evaluation samples through it
              too (`evaluation.evaluate.sample_programs`), with no sandbox and no environment
    execute   each completion's program (the last closed ```python block) goes to the sandbox
              with the problem's tests; calls run concurrently (the client's `submit` futures),
              so one slow program never serialises a batch
    score     the whole call's results become one execution table and one `RecordBatch`
              (`rollouts.execution_table.results_batch`, rows p*G + g) and go through the
              environment in ONE reward call (`rewards.rewards_and_signals`) against the
              problems' references, each prepared once per run (`rollouts.references`): one
              reward per rollout, NaN where the environment says undefined (inconclusive,
              unrankable); never a number made up here

A completion without a program is the model's failure, not the sandbox's: every test of that
rollout is recorded as `runtime_error` (detail "no program") without a sandbox call.

Score-based tasks (`kind: river` environments, a `rollouts.score_tasks.ScoreTaskBank`) take the
same three phases: the tests are the task's hidden instances, the sandbox runs the task's
checker, and `score` turns the group's `[G, M]` checker scores into RiVER rewards
(`rewards.river_rewards_from_scores`, group by group: each task has its own instances) instead
of laying out a record batch. There are no correctness
tests, so signals `c_cor` = `c_strict` = `g` mean "valid on every instance".

Dimension letters (`jaxopt_rl.dimensions`): P prompts of a sampler call, G rollouts of one
problem, O new tokens, L prompt tokens, T tests.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
from flax import nnx
from jax.sharding import Mesh

from jaxopt_rl.model.prompt import extract_program
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.model.transformer import Transformer
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.environment import rewards_and_signals, river_rewards_from_scores
from jaxopt_rl.rollouts.batch import SIGNAL_NAMES, RolloutBatch
from jaxopt_rl.rollouts.config import RolloutConfig
from jaxopt_rl.rollouts.execution_table import results_batch
from jaxopt_rl.rollouts.problems import ProblemBank, ProblemRun
from jaxopt_rl.rollouts.references import PreparedReferences
from jaxopt_rl.rollouts.score_tasks import ScoreTaskBank, scores_from_results
from jaxopt_rl.sampling.host import generate
from sandbox_cluster.api import Status, TestResult


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One prompt of the data stream; `position` is its index in the loader (for resume)."""

    problem_id: str
    position: int


@dataclasses.dataclass
class Draws:
    """One sampler call's draws, P prompts x G rows (row p*G + g is sample g of prompt p)."""

    prompt_tokens: list[np.ndarray]  # P x int32 [L]
    completion_tokens: list[list[np.ndarray]]  # P x G x int32 [O]
    sampler_logprobs: list[list[np.ndarray]]  # P x G x float32 [O]
    finished_PG: np.ndarray
    programs: list[list[str | None]]  # P x G; None: the completion holds no program
    sample_s: float


@dataclasses.dataclass
class Sampled(Draws):
    """The sample phase's output for one sampler call (P prompts x G rollouts), before
    execution: the call's draws and what the trainer needs of the prompts they came from."""

    prompts: list[Prompt]
    runs: list[ProblemRun]
    policy_version: int

    def batch(self, rewards_PG: np.ndarray, signals: dict[str, np.ndarray],
              counts: dict[str, int], seconds: dict[str, float]) -> RolloutBatch:
        """The scored batch of these rollouts."""
        return RolloutBatch(
            problem_ids=tuple(run.problem_id for run in self.runs),
            positions_P=np.array([p.position for p in self.prompts], np.int64),
            prompt_tokens=tuple(self.prompt_tokens),
            completion_tokens=tuple(tuple(t) for t in self.completion_tokens),
            sampler_logprobs=tuple(tuple(t) for t in self.sampler_logprobs),
            finished_PG=self.finished_PG, rewards_PG=np.asarray(rewards_PG, np.float32),
            signals=signals, policy_version=self.policy_version, counts=counts,
            seconds={"sample": self.sample_s, **seconds})


def sample_call(model: Transformer, tokenizer: Tokenizer, prompts: Sequence[str],
                group_size: int, config: RolloutConfig, seed: int,
                mesh: Mesh | None = None) -> Draws:
    """`group_size` completions of each prompt in ONE sampler call, decoded and with their
    programs extracted: the sample phase of training (`RolloutWorker.sample`) and of evaluation
    (`evaluation.evaluate.sample_programs`).

    `config` gives the sampler and its knobs (scheme, slots, temperature, top-k/p, token
    budget, prompt padding, cache segments); its `group_size` is not read, since evaluation
    may draw a single completion per problem where a training group needs two."""
    prompt_ids = [np.asarray(tokenizer.encode(text), np.int32) for text in prompts]
    start = time.perf_counter()
    batch = generate(model, prompt_ids, config.max_new_tokens, config.temperature, config.top_k,
                     config.top_p, tokenizer.eos_ids, seed, group_size=group_size,
                     scheme=config.sampler, slots=config.slots, pad_id=tokenizer.pad_id,
                     prompt_multiple=config.prompt_multiple, cache_segments=config.cache_segments,
                     mesh=mesh)
    elapsed = time.perf_counter() - start
    texts = tokenizer.decode_batch(batch.completions())
    rows_PG = np.arange(len(prompts) * group_size).reshape(len(prompts), group_size)
    return Draws(
        prompt_tokens=prompt_ids,
        completion_tokens=[[batch.tokens[r, :batch.lengths[r]].copy() for r in rows_G]
                           for rows_G in rows_PG],
        sampler_logprobs=[[batch.model_logprobs[r, :batch.lengths[r]].copy() for r in rows_G]
                          for rows_G in rows_PG],
        finished_PG=batch.finished[rows_PG].copy(),
        programs=[[extract_program(texts[r]) for r in rows_G] for rows_G in rows_PG],
        sample_s=elapsed)


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
        self.references = PreparedReferences(env, config.test_pad_multiple)
        self.config = config
        self.tokenizer = tokenizer
        self.bank = bank
        self.sandbox = sandbox
        self.env = env

    # ---- sample ---------------------------------------------------------------------------
    def sample(self, graphdef: nnx.GraphDef, params: nnx.State, prompts: Sequence[Prompt],
               seed: int, policy_version: int, mesh: Mesh | None = None) -> Sampled:
        """G completions for each prompt in one sampler call (rows p*G .. p*G+G-1)."""
        model: Transformer = nnx.merge(graphdef, params)
        runs = [self.bank[p.problem_id] for p in prompts]
        draws = sample_call(model, self.tokenizer, [run.prompt for run in runs],
                            self.config.group_size, self.config, seed, mesh)
        return Sampled(**vars(draws), prompts=list(prompts), runs=runs,
                       policy_version=policy_version)

    # ---- execute --------------------------------------------------------------------------
    def execute(self, sampled: Sampled) -> list[list[Future | None]]:
        """Start every rollout's sandbox call, all at once; None where there is no program."""
        stop = self.config.stop_after_failure
        return [[None if program is None else self.sandbox.submit(
                    program, list(run.tests), run.limits, interface=run.interface,
                    float_tolerance=run.float_tolerance, test_kinds=list(run.test_kinds),
                    checker=run.checker, stop_after_failure=stop)
                 for program in programs_G]
                for run, programs_G in zip(sampled.runs, sampled.programs)]

    # ---- score ----------------------------------------------------------------------------
    def score(self, sampled: Sampled, futures_PG: Sequence[Sequence[Future | None]],
              execute_started: float) -> RolloutBatch:
        """Wait for the batch's results and compute its rewards: one row per prompt."""
        results_PG = [[_no_program_results(len(run.tests)) if f is None else f.result()
                       for f in futures_G] for run, futures_G in zip(sampled.runs, futures_PG)]
        execute_s = time.perf_counter() - execute_started
        start = time.perf_counter()
        if self.env.kind == "river":
            scored = [self._river_rewards(run, results)
                      for run, results in zip(sampled.runs, results_PG)]
            rewards_PG = np.stack([rewards_G for rewards_G, _ in scored])
            signals_PG = {name: np.stack([s[name] for _, s in scored]) for name in SIGNAL_NAMES}
            lost = {"unrankable": 0, "lost_tests": 0}
        else:
            rewards_PG, signals_PG, lost = self._execution_rewards(sampled.runs, results_PG)
        flat = [r for results in results_PG for result_T in results for r in result_T]
        executed = [(f, row) for futures_G, results in zip(futures_PG, results_PG)
                    for f, row in zip(futures_G, results) if f is not None]
        counts = {
            "no_program": sum(p is None for programs in sampled.programs for p in programs),
            "tests": len(flat),
            "infra_error": sum(r.status is Status.INFRA_ERROR for r in flat),
            "timeout": sum(r.status is Status.TIMEOUT for r in flat),
            "not_run": sum(r.status is Status.NOT_RUN for r in flat),
            "fallback": sum(bool((r.extra or {}).get("fallback")) for r in flat),
            # docs/design/sandbox-timing.md §1.12: a rollout resolved by the fleet alone (no local
            # fallback, nothing inconclusive) counts toward the remote-only (CES-only) rate
            "executed": len(executed),
            "remote_only": sum(all(r.status is not Status.INFRA_ERROR
                                   and not (r.extra or {}).get("fallback") for r in row)
                               for _, row in executed),
            **lost,
        }
        return sampled.batch(rewards_PG, signals_PG, counts,
                             {"execute": execute_s, "score": time.perf_counter() - start})

    def _execution_rewards(self, runs: Sequence[ProblemRun], results_PG
                           ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, int]]:
        """One reward call for the whole sampler call: its execution table as a `RecordBatch`
        (rows p*G + g) against the problems' references, prepared once per run. Also counts
        the rollouts that could not be ranked and the used tests that lost every reference
        duration (eq. 10's lost references, docs/design/rewards.md §1), for the metrics."""
        batch = results_batch(runs, results_PG, self.config.group_size,
                              self.config.test_pad_multiple, self.config.embedded_is_fleet)
        _, num_t, num_h = batch.ref_duration_PTH.shape
        references = self.references.table(runs, num_t, num_h)
        reward_B, signals = rewards_and_signals(batch, self.env, references=references)
        shape = (len(runs), self.config.group_size)
        real_B = np.asarray(signals.rollout_mask_B)
        lost = {"unrankable": int(np.sum(np.asarray(signals.unrankable_B) & real_B)),
                "lost_tests": int(np.sum(np.where(real_B, np.asarray(signals.lost_tests_B), 0)))}
        values = {"c_cor": signals.c_cor_B, "c_strict": signals.c_strict_B, "g": signals.g_B,
                  "q": signals.q_B, "inconclusive": signals.inconclusive_B,
                  "undefined": signals.undefined_B}
        return (np.asarray(reward_B, np.float32).reshape(shape),
                {name: np.asarray(values[name]).reshape(shape) for name in SIGNAL_NAMES}, lost)

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
                seed: int, policy_version: int, mesh: Mesh | None = None) -> RolloutBatch:
        """Sample, execute and score `prompts`; every rollout's sandbox call runs at once."""
        sampled = self.sample(graphdef, params, prompts, seed, policy_version, mesh)
        started = time.perf_counter()
        return self.score(sampled, self.execute(sampled), started)
