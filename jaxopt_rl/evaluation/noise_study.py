"""The synthetic timing-noise playground of the paper's Appendix A.3 (docs/design/sandbox-timing.md
§2, §6; docs/design/dataset-eval.md §5.10): is a timeout comparison or a per-test win rate better at
telling which of two solutions is faster, once the sandbox adds noise?

Per trial, test durations `b_i ~ LogNormal(mu, 0.5)` over `N` tests, two solutions

    d_true[A, i] = b_i (1 + D/2 + eta_A[i]),   d_true[B, i] = b_i (1 - D/2 + eta_B[i]),
    D = 0.2,  eta ~ Normal(0, 0.15^2)           (B is the true winner, A 20 % slower)

observed as `d_obs = d_true (1 + eps_mult) + eps_add` with ONE of the two noise terms active
(zero-mean Gaussians of standard deviation `level`, drawn per solution and test). Two metrics:

  * timeout: `m_tau(S) = 1[max_i d_obs[S, i] <= tau]`; B is named iff `m(B) > m(A)`.
  * win rate: `w(B; A) = sum_i 1[d_obs[B, i] < d_obs[A, i]]`; B is named iff `w(B; A) > w(A; B)`.

Accuracy = share of trials naming B, a tie counted as a coin flip (0.5); chance is 0.5.

Choices where the paper leaves one (its noise grids appear only in figures):
  * the oracle threshold (`timeout_accuracy`) is chosen per trial after the fact from the TRUE
    durations: the midpoint of the two true maxima (the only place a threshold can separate
    the pair; when B's true maximum is not below A's, no threshold can, and the midpoint is
    used anyway). `timeout_accuracy_global` is the other reading: one threshold per setting and
    noise level, the best of a grid over the observed maxima (Fig. 11's sweep, maximised).
  * noise is not clipped: an observed duration may be negative (the additive term is a
    zero-mean model of overhead jitter, as assumed in docs/design/sandbox-timing.md §2).
  * common random numbers: every noise level reuses the same standard-normal draws scaled by
    the level, so the curves are smooth in the level; the trial count is a parameter.

The whole sweep is array work: `[levels, trials, tests]` arrays, no Python loop over trials.
Dimension letters of this module: T tests; trials and noise levels are named in full.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

DELTA = 0.2
ETA_SD = 0.15
LOGNORMAL_SIGMA = 0.5


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    num_tests: int
    mu: float


SETTINGS = (Setting("lcb_like", 35, -2.3), Setting("dmc_like", 122, 1.0))
ADDITIVE_LEVELS_S = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2)
MULTIPLICATIVE_LEVELS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
NOISE_KINDS = {"additive": ADDITIVE_LEVELS_S, "multiplicative": MULTIPLICATIVE_LEVELS}


def _coin(named_b, named_a):
    """Accuracy with ties as coin flips: 1 where B is named, 0 where A is, 0.5 otherwise."""
    return np.where(named_b, 1.0, np.where(named_a, 0.0, 0.5))


def simulate(setting: Setting, kind: str, levels, trials: int = 4000, seed: int = 0,
             num_thresholds: int = 256) -> list[dict]:
    """Accuracies of both metrics at every noise level of one setting: one dict per level."""
    if kind not in NOISE_KINDS:
        raise ValueError(f"noise kind {kind!r}: expected one of {', '.join(NOISE_KINDS)}")
    if trials < 1 or setting.num_tests < 1:
        raise ValueError(f"trials={trials}, tests={setting.num_tests}: both must be >= 1")
    levels_L = np.asarray(levels, np.float64)
    if levels_L.ndim != 1 or levels_L.size == 0 or np.any(levels_L < 0):
        raise ValueError(f"levels {list(levels)}: need a non-empty list of levels >= 0")
    rng = np.random.default_rng([seed, setting.num_tests, list(NOISE_KINDS).index(kind)])
    shape = (trials, setting.num_tests)
    b = rng.lognormal(setting.mu, LOGNORMAL_SIGMA, shape)
    true_a = b * (1 + DELTA / 2 + rng.normal(0, ETA_SD, shape))
    true_b = b * (1 - DELTA / 2 + rng.normal(0, ETA_SD, shape))
    z_a, z_b = rng.normal(size=shape), rng.normal(size=shape)  # shared by all levels
    scale = levels_L[:, None, None]
    if kind == "additive":
        obs_a, obs_b = true_a + scale * z_a, true_b + scale * z_b
    else:
        obs_a, obs_b = true_a * (1 + scale * z_a), true_b * (1 + scale * z_b)
    # win rate: per-test majority
    wins_b = np.sum(obs_b < obs_a, axis=-1)
    wins_a = np.sum(obs_a < obs_b, axis=-1)
    winrate = _coin(wins_b > wins_a, wins_a > wins_b).mean(axis=-1)
    # timeout, per-trial oracle threshold between the true maxima
    max_a, max_b = obs_a.max(axis=-1), obs_b.max(axis=-1)
    tau = 0.5 * (true_a.max(axis=-1) + true_b.max(axis=-1))
    pass_a, pass_b = max_a <= tau, max_b <= tau
    timeout = _coin(pass_b & ~pass_a, pass_a & ~pass_b).mean(axis=-1)
    # timeout, the best single threshold per level over a grid of observed maxima
    # (level_thresholds: [levels, thresholds]; pass_*_at: [levels, thresholds, trials])
    both = np.concatenate([max_a, max_b], axis=-1)
    level_thresholds = np.quantile(both, np.linspace(0, 1, num_thresholds), axis=-1).T
    pass_a_at = max_a[:, None, :] <= level_thresholds[:, :, None]
    pass_b_at = max_b[:, None, :] <= level_thresholds[:, :, None]
    global_accuracy = _coin(pass_b_at & ~pass_a_at, pass_a_at & ~pass_b_at).mean(-1).max(-1)
    return [{
        "setting": setting.name, "tests": setting.num_tests, "mu": setting.mu, "noise": kind,
        "level": float(level), "level_unit": "s" if kind == "additive" else "fraction",
        "trials": trials, "timeout_accuracy": float(timeout[i]),
        "timeout_accuracy_global": float(global_accuracy[i]), "winrate_accuracy": float(winrate[i]),
    } for i, level in enumerate(levels_L)]


def run_study(trials: int = 4000, seed: int = 0, settings=SETTINGS,
              noise_kinds: dict | None = None) -> list[dict]:
    """Every setting x noise kind x level: the rows of `noise.json`."""
    rows = []
    for setting in settings:
        for kind, levels in (noise_kinds or NOISE_KINDS).items():
            rows.extend(simulate(setting, kind, levels, trials=trials, seed=seed))
    return rows


def markdown_table(rows: list[dict]) -> str:
    lines = ["| setting | noise | level | timeout acc. (oracle) | timeout acc. (best global) "
             "| win-rate acc. |", "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        level = (f"{row['level'] * 1000:.0f} ms" if row["noise"] == "additive"
                 else f"{row['level']:.2f}")
        lines.append(f"| {row['setting']} ({row['tests']} tests) | {row['noise']} | {level} | "
                     f"{row['timeout_accuracy']:.3f} | {row['timeout_accuracy_global']:.3f} | "
                     f"{row['winrate_accuracy']:.3f} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys(r["setting"] for r in rows))
    kinds = list(dict.fromkeys(r["noise"] for r in rows))
    fig, axes = plt.subplots(len(settings), len(kinds), figsize=(5 * len(kinds),
                             3.6 * len(settings)), squeeze=False)
    for i, setting in enumerate(settings):
        for j, kind in enumerate(kinds):
            mine = [r for r in rows if r["setting"] == setting and r["noise"] == kind]
            x = [r["level"] * (1000 if kind == "additive" else 1) for r in mine]
            ax = axes[i][j]
            ax.plot(x, [r["winrate_accuracy"] for r in mine], "o-", label="win rate")
            ax.plot(x, [r["timeout_accuracy"] for r in mine], "s-", label="timeout (oracle)")
            ax.plot(x, [r["timeout_accuracy_global"] for r in mine], "^--",
                    label="timeout (best global tau)", alpha=0.7)
            ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
            ax.set(ylim=(0.4, 1.02), title=f"{setting}: {kind} noise",
                   xlabel="noise sd (ms)" if kind == "additive" else "noise sd (fraction)",
                   ylabel="accuracy (B named faster)")
            ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(rows: list[dict], out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "noise.json", "table": out_dir / "noise.md",
             "plot": out_dir / "noise.png"}
    paths["json"].write_text(json.dumps(rows, indent=1) + "\n")
    paths["table"].write_text(markdown_table(rows))
    plot(rows, paths["plot"])
    return paths
