"""The simulation: many environments x every stored reference x quality bands, one program per
environment structure.

For one environment the simulated curve is (docs/design/simulator.md §1):
  1. replay every stored reference of every problem as a rollout, ranked against the other
     references of its problem (`replay.leave_one_out_records`);
  2. run the environment step on that batch, the online path itself
     (`rewards.environment.environment_step`, what `rewards.rewards` jits); a rollout *passes*
     when its reward is above what the composition gives a correct but slowest rollout
     (`c_cor = c~ = 1, g = 0, q = 1`), or is the maximum reward 1. For binary collapsed /
     two-gate rewards that is `c~ and g` (docs/design/simulator.md §1 step 3); for graded ones
     it is "above the correct-but-slow value"; for the correctness-only reward (whose slowest
     correct rollout already gets 1) it is `c_cor`. An undefined (NaN) reward neither passes
     nor counts;
  3. weigh the pass outcomes by the quality bands (`bands.band_weights`): `curve_CX`.

Many environments: they are grouped by structure (`rewards.env_numbers.structure`: every kind,
map, calibration; the numbers traced), and each structure is one jitted program: `vmap` of the
step over the numbers (`jax.lax.map` in vmapped blocks of `block` configurations to bound
memory) with the band weighting fused in, so configurations x problems x references x bands
are one computation. A long group runs in chunks of at most `chunk` configurations through the
same compiled program (progress is reported per chunk; the last chunk is padded).

Dimension letters: C configurations, X steps, P problems, H references, B rollouts of the
leave-one-out batch (one per existing (problem, reference), problem-major).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards import compose, multitask_rewards, prepare_references
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.env_numbers import EnvNumbers, stack, structure
from jaxopt_rl.rewards.environment import environment_step
from jaxopt_rl.simulator.bands import BandConfig, band_weights
from jaxopt_rl.simulator.metrics import diagnostics
from jaxopt_rl.simulator.replay import StoredRuns, leave_one_out_records, quality_scores


def slowest_correct_reward_B(env: EnvConfig, use_optimization_B: jax.Array) -> jax.Array:
    """The reward the env's composition gives a correct rollout with `g = 0, q = 1`: `[B]`."""
    comp = env.composition
    shape = jnp.shape(use_optimization_B)
    if comp.family == "naive":  # c_cor + m(duration at the limit) - 1 = 0
        return jnp.zeros(shape, jnp.float32)
    yes, no, slowest = jnp.ones(shape, bool), jnp.zeros(shape, bool), jnp.ones(shape, jnp.float32)
    if comp.family == "multitask":
        return multitask_rewards(yes, yes, no, slowest, use_optimization_B, mapping=comp.mapping)
    return compose(yes, yes, no, slowest, comp.family, mapping=comp.mapping)


def pass_outcome_B(reward_B: jax.Array, env: EnvConfig,
                   use_optimization_B: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(pass_B, defined_B)` from the rewards of a batch (the rule of the module docstring)."""
    defined_B = ~jnp.isnan(reward_B)
    slow_B = slowest_correct_reward_B(env, use_optimization_B)
    return defined_B & ((reward_B > slow_B) | (reward_B >= 1.0)), defined_B


@functools.partial(jax.jit, static_argnames=("env", "block"))
def _simulate_structure(records, references, numbers_C: EnvNumbers, weight_XB, env: EnvConfig,
                        block: int):
    def one(numbers):
        reward_B, signals = environment_step(records, env, references, numbers)
        pass_B, defined_B = pass_outcome_B(reward_B, env, signals.use_optimization_B)
        passed_X = weight_XB @ pass_B.astype(jnp.float32)
        counted_X = weight_XB @ defined_B.astype(jnp.float32)
        return pass_B, defined_B, passed_X / counted_X

    return jax.lax.map(one, numbers_C, batch_size=block)


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """Curves and diagnostics of C environments (in the order given)."""

    envs: tuple[EnvConfig, ...]
    x_X: np.ndarray
    curve_CX: np.ndarray  # NaN at a step where no replayed reward is defined
    pass_CPH: np.ndarray  # bool: the reference passes under the environment
    defined_CPH: np.ndarray  # bool: its reward is defined
    diagnostics: dict[str, np.ndarray]
    num_structures: int


class Simulator:
    """Stored reference runs, their quality bands, and the compiled programs that replay them.

    `Simulator(runs, bands, window).run(envs)` -> `SimulationResult`."""

    def __init__(self, runs: StoredRuns, bands: BandConfig | None = None, window: int = 5,
                 chunk: int = 256, block: int = 128):
        bands = BandConfig() if bands is None else bands
        if window > bands.steps:
            raise ValueError(f"window={window} is longer than a curve (bands.steps="
                             f"{bands.steps})")
        self.runs, self.bands, self.window = runs, bands, window
        self.chunk, self.block = chunk, block
        self.score_PH = quality_scores(runs)
        self.weight_XPH = band_weights(self.score_PH, bands)
        self.problem_B, self.reference_B = runs.pairs()
        self._weight_XB = jnp.asarray(self.weight_XPH[:, self.problem_B, self.reference_B])
        self._records = {}

    def records(self, env: EnvConfig):
        """The leave-one-out batch of every stored reference under `env`'s calibration."""
        alpha, beta_s = env.calibration.alpha_beta
        key = (float(alpha), float(beta_s), float(env.service_cap_s))
        if key not in self._records:
            self._records[key] = leave_one_out_records(self.runs, self.problem_B,
                                                       self.reference_B, *key)
        return self._records[key]

    def _to_PH(self, value_CB: np.ndarray) -> np.ndarray:
        out_CPH = np.zeros((len(value_CB), *self.runs.reference_PH.shape), bool)
        out_CPH[:, self.problem_B, self.reference_B] = value_CB
        return out_CPH

    def run(self, envs: Sequence[EnvConfig],
            progress: Callable[[int], None] | None = None) -> SimulationResult:
        """Simulate `envs`; `progress(n)` is called as each chunk of n configurations ends."""
        envs = tuple(envs)
        if not envs:
            raise ValueError("nothing to simulate: no environment configurations")
        groups: dict[EnvConfig, list[int]] = {}
        for index, env in enumerate(envs):
            if env.kind != "execution":
                raise ValueError(f"environment {env.name!r} is kind={env.kind}: the simulator "
                                 "replays execution records")
            groups.setdefault(structure(env), []).append(index)
        steps, b = self.bands.steps, len(self.problem_B)
        curve_CX = np.full((len(envs), steps), np.nan)
        pass_CB = np.zeros((len(envs), b), bool)
        defined_CB = np.zeros((len(envs), b), bool)
        for shape, indices in groups.items():
            records = self.records(shape)
            table = prepare_references(records.ref_duration_PTH, records.ref_mask_PTH, shape)
            size = min(self.chunk, 1 << (len(indices) - 1).bit_length())
            for start in range(0, len(indices), size):
                rows = indices[start:start + size]
                padded = rows + [rows[-1]] * (size - len(rows))
                numbers = stack([envs[i] for i in padded])
                out = _simulate_structure(records, table, numbers, self._weight_XB, env=shape,
                                          block=min(self.block, size))
                got_pass, got_defined, got_curve = (np.asarray(x)[:len(rows)] for x in out)
                pass_CB[rows], defined_CB[rows], curve_CX[rows] = got_pass, got_defined, got_curve
                if progress is not None:
                    progress(len(rows))
        # a step with no defined reward passes nothing (NaN stays in curve_CX for the tables)
        values = diagnostics(self.bands.x_X, np.nan_to_num(curve_CX, nan=0.0), self.window)
        return SimulationResult(envs=envs, x_X=self.bands.x_X, curve_CX=curve_CX,
                                pass_CPH=self._to_PH(pass_CB), defined_CPH=self._to_PH(defined_CB),
                                diagnostics=values, num_structures=len(groups))


__all__ = ["SimulationResult", "Simulator", "pass_outcome_B", "slowest_correct_reward_B"]
