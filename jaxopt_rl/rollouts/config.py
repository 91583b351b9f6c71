"""`RolloutConfig`: how rollouts are sampled, executed and timed (the `rollout:` block of a
train config), validated at load, with the check that refuses `stop_after_failure` where skipped
tests could change a reward."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from jaxopt_rl.rewards.env_config import EnvConfig

# reward families in which a failed correctness test fixes the reward at -1
# (docs/design/rewards.md §6)
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
    # (choice) How a call's prompts x G rows are decoded (`sampling.generate`'s scheme):
    # "compact" and "slots" prefill each prompt once; "compact" drops stopped rows once they
    # are half the batch, "slots" keeps `slots` decode slots busy (continuous batching; for
    # memory-bound batches); "static" prefills each prompt G times and runs every row until the
    # longest stops (the sampler before either). All three
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
    # (choice) The samplers' copy of the weights: "param" as trained (model.param_dtype);
    # "compute": every floating matrix (embeddings, projections) in model.compute_dtype, vectors
    # (norm scales, biases) as trained. The model casts those matrices to compute_dtype at use,
    # so the samples are the same, from half the bytes moved and held when params are float32
    # and compute bfloat16 (`training.transfer.sampler_weights`).
    weight_dtype: Literal["param", "compute"] = "param"

    def __post_init__(self) -> None:
        from jaxopt_rl.config import require

        require(self.weight_dtype in ("param", "compute"), "weight_dtype",
                f"must be 'param' or 'compute', got {self.weight_dtype!r}")

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
