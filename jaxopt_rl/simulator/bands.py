"""Quality bands: which references the simulator replays at each step of a curve.

Step `i` of `n` has normalised quality `x_i = i / (n - 1)`, from the weakest (0) to the
strongest (1) references. In each problem the references are ordered by quality score (see
`replay.quality_scores`; higher `a(h)` is slower, so weaker), weakest first, ties by index, and
step `x` sits at rank position `s = x (n_p - 1)` among the problem's `n_p` scored references:
the band of step `x` is the two neighbouring ranks `floor(s)` and `ceil(s)`, the upper one
drawn with probability `frac(s)`. So every problem contributes at every step, whatever its
number of references, and the band moves continuously from its weakest to its strongest one.

  sampling: expected   the band's expected outcome (weights 1 - frac(s), frac(s)): a
                       deterministic curve, no sampling noise
  sampling: draw       `draws` references drawn per problem and step from the band
                       (seeded): the paper's sampled curves, with their noise

Either way the result is a weight per (step, problem, reference), `weight_XPH`, and a curve
point is `sum(weight * pass) / sum(weight * defined)` over problems and references (a
reference whose reward is undefined, e.g. inconclusive, counts in neither). A reference without
a quality score is never replayed.

Dimension letters: X steps of a curve, P problems, H references.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from jaxopt_rl.config import require


@dataclasses.dataclass(frozen=True)
class BandConfig:
    """How a curve samples references (the `bands:` section of a grid)."""

    steps: int = 21  # n points of a curve
    sampling: Literal["expected", "draw"] = "expected"
    draws: int = 8  # draw: references per problem and step
    seed: int = 0  # draw: the generator's seed

    def __post_init__(self) -> None:
        require(self.steps >= 2, "steps", f"must be >= 2, got {self.steps}")
        require(self.draws >= 1, "draws", f"must be >= 1, got {self.draws}")

    @property
    def x_X(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, self.steps)


def strength_ranks(score_PH: np.ndarray) -> np.ndarray:
    """Rank of each reference in its problem, 0 = weakest (highest score); -1 where unscored."""
    scored_PH = ~np.isnan(score_PH)
    order_PH = np.argsort(np.where(scored_PH, -score_PH, np.inf), axis=-1, kind="stable")
    rank_PH = np.empty_like(order_PH)
    np.put_along_axis(rank_PH, order_PH, np.arange(score_PH.shape[-1])[None], axis=-1)
    return np.where(scored_PH, rank_PH, -1)


def band_weights(score_PH: np.ndarray, bands: BandConfig) -> np.ndarray:
    """`weight_XPH` float32 (see the module docstring)."""
    rank_PH = strength_ranks(score_PH)
    n_P = (rank_PH >= 0).sum(-1)
    if (n_P == 0).any():
        raise ValueError(f"problem rows {np.flatnonzero(n_P == 0).tolist()} have no scored "
                         "reference to replay")
    # rounded so that x (n_p - 1) = 3 is not 3.0000000000000004 (a 4e-16 weight on rank 4)
    position_XP = np.round(bands.x_X[:, None] * (n_P - 1)[None, :], 9)
    low_XP = np.floor(position_XP).astype(np.int64)
    high_XP = np.minimum(low_XP + 1, n_P - 1)
    frac_XP = position_XP - low_XP
    rng = np.random.default_rng(bands.seed)
    if bands.sampling == "expected":
        high_weight_XP = frac_XP
        low_weight_XP = 1.0 - frac_XP
    else:
        high_weight_XP = rng.binomial(bands.draws, frac_XP).astype(np.float64)
        low_weight_XP = bands.draws - high_weight_XP
    weight_XPH = np.zeros((bands.steps, *score_PH.shape), np.float32)
    rank_1PH = rank_PH[None]
    weight_XPH += np.where(rank_1PH == low_XP[..., None], low_weight_XP[..., None], 0.0)
    weight_XPH += np.where(rank_1PH == high_XP[..., None], high_weight_XP[..., None], 0.0)
    return weight_XPH


def drawn_references(weight_XPH: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """`(problem_B, reference_B)` replayed at `step` of a `draw` curve, each as many times as
    drawn (the references a rollout batch of that step would hold)."""
    count_PH = weight_XPH[step]
    if not np.array_equal(count_PH, np.round(count_PH)):
        raise ValueError("drawn_references needs the integer weights of sampling: draw")
    problem, reference = np.nonzero(count_PH)
    repeats = count_PH[problem, reference].astype(np.int64)
    return (np.repeat(problem, repeats).astype(np.int32),
            np.repeat(reference, repeats).astype(np.int32))


__all__ = ["BandConfig", "band_weights", "drawn_references", "strength_ranks"]
