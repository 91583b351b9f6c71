"""Timing calibration: fit Gamma (stored -> fresh reference durations), validate it, store it by
name, and watch it drift (docs/design/sandbox-timing.md §3; docs/design/dataset-eval.md §4.2).

A calibration campaign is an evaluation dump with no candidates and R reruns of every stored
reference (`evaluate.build_dump(..., reference_runs=R)`), so it runs in one shuffled timing
pass with the sandbox state recorded; `reference_campaign` runs one (`jaxopt-rl calibrate` and
`jaxopt-rl study ranking` both do). From it:

  * `pooled_observations`: one observation per (problem, optimization test, reference) whose
    stored duration is a success > 0 and whose R fresh runs all succeeded with a duration the
    one rule ranks (`dump.timed_cells`: measured on the timing fleet); fresh = mean over the
    R runs (the paper pools ~20 reruns).
  * fits `multiplicative` (f = a s), `affine` (f = a s + b, the chosen model), `quadratic`
    (f = c2 s^2 + c1 s + c0), ordinary least squares; leave-one-problem-out CV (each fold
    holds out a whole problem): pooled R^2_CV and RMSE_CV, and the training R^2.
  * ranking agreement: each reference plays the candidate with its FRESH durations and is
    ranked (mean per-test percentile, QAR, ties min) among the other references, once against
    their stored durations (raw, then Gamma-corrected with the problem held out of the fit) and
    once against their fresh durations; Spearman between the stored-based and fresh-based
    percentiles over all (problem, reference) pairs, before and after, plus the per-problem
    bias (mean signed difference, pp) and how many problems share its sign.
  * `store_calibration`: `configs/calibration/<name>.yaml` (alpha, beta_s, the fits, the
    sandbox state and the data set fingerprint, a format version); `calibration.name=<name>`
    in any EnvConfig loads it (`jaxopt_rl.rewards.env_config`).
  * `drift_check`: rerun a few canary references and compare with Gamma(stored); a dict of
    figures for the trainer's metrics and a warning when a refit is due.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from jaxopt_rl.evaluation.dump import timed_cells

FAMILIES = ("multiplicative", "affine", "quadratic")
FORMAT_VERSION = 1
TO = "TO"


# ---- the campaign ---------------------------------------------------------------------------


def reference_campaign(data: str, problems: list[str] | None, *, reruns: int, seed: int = 0,
                       sample: int | None = None, cap_s: float = 10.0,
                       max_references: int | None = None, urls: str = "",
                       cache_dir: Path | None = None) -> dict[str, Any]:
    """A campaign dump: every reference of the problems (all of data set `data`, or a random
    `sample` of them) rerun `reruns` times on its TO tests in one shuffled pass, on the fleet at
    `urls` (comma-separated; default: the embedded pool), never with local fallback: a fit on
    durations from another machine would calibrate nothing. Recipe tests are materialised under
    `cache_dir` (default: the command-line tools' cache, `data.lookup.command_cache_dir`)."""
    from jaxopt_rl.data.lookup import command_cache_dir, find_data_set
    from jaxopt_rl.evaluation.evaluate import build_dump, check_problems
    from sandbox_cluster import connect

    if reruns < 1:
        raise ValueError(f"--reruns {reruns}: must be >= 1")
    dataset = find_data_set(data, cache_dir or command_cache_dir(data))
    ids = check_problems(dataset, problems)
    if sample is not None:
        if sample < 2:
            raise ValueError(f"--sample {sample}: leave-one-problem-out needs >= 2 problems")
        rng = np.random.default_rng(seed)
        ids = sorted(rng.choice(ids, size=min(sample, len(ids)), replace=False).tolist())
    fleet = [u for u in urls.split(",") if u.strip()]
    sandbox = connect(fleet or None, fallback="none")
    try:
        return build_dump(dataset, ids, {pid: [None] for pid in ids}, sandbox,
                          model_name="@calibration", reference_runs=reruns, seed=seed,
                          cap_s=cap_s, kinds=("TO",), max_references=max_references,
                          on_layout=lambda pid: print(f"prepared {pid}", flush=True))
    finally:
        sandbox.close()


# ---- observations ---------------------------------------------------------------------------


def problem_blocks(dump: dict[str, Any]) -> list[dict[str, Any]]:
    """Per problem, on its optimization tests: stored `[T, H]`, fresh mean `[T, H]`, and which
    (test, reference) cells are valid observations."""
    blocks = []
    for problem in dump["problems"]:
        fresh = problem.get("fresh_references")
        if not fresh or not fresh.get("runs"):
            continue
        opt = [t for t, kind in enumerate(problem["tests"]["kinds"]) if kind == TO]
        stored_ids = problem["stored_references"]["ids"]
        columns = [stored_ids.index(h) for h in fresh["ids"]]
        stored = np.array([[np.nan if v is None else v for v in row]
                           for row in problem["stored_references"]["duration_s"]], float)
        usable = np.asarray(problem["stored_references"]["usable"], bool)
        if not opt or not columns:
            continue
        stored_TH = stored[np.ix_(opt, columns)]
        usable_TH = usable[np.ix_(opt, columns)]
        status_RHT = np.array([run["status"] for run in fresh["runs"]], dtype=object)
        times_RHT = np.array([run["duration_s"] for run in fresh["runs"]], float)
        cap_T = np.asarray(problem["tests"]["limit_s"], float)
        # the one rule reads each run (a fleet success ranks; a timeout is no observation)
        ranked_RHT = np.array([timed_cells(run["status"], run["duration_s"], cap_T,
                                           run.get("timing") or None)[1]
                               for run in fresh["runs"]], bool)
        ok_HT = np.all((status_RHT == "success") & ranked_RHT, axis=0)
        fresh_TH = times_RHT.mean(axis=0).T[opt]
        runs_RTH = np.transpose(times_RHT, (0, 2, 1))[:, opt]
        valid_TH = (usable_TH & ok_HT.T[opt] & np.isfinite(stored_TH) & (stored_TH > 0)
                    & (fresh_TH > 0))
        blocks.append({"problem_id": problem["problem_id"], "stored_TH": stored_TH,
                       "fresh_TH": fresh_TH, "runs_RTH": runs_RTH, "valid_TH": valid_TH,
                       "reference_ids": list(fresh["ids"])})
    return blocks


def pooled_observations(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(problem index, stored, fresh mean) of every valid observation."""
    problem, stored, fresh = [], [], []
    for p, block in enumerate(blocks):
        mask = block["valid_TH"]
        problem.append(np.full(int(mask.sum()), p))
        stored.append(block["stored_TH"][mask])
        fresh.append(block["fresh_TH"][mask])
    if not problem:
        return np.zeros(0, int), np.zeros(0), np.zeros(0)
    return np.concatenate(problem), np.concatenate(stored), np.concatenate(fresh)


# ---- fits ------------------------------------------------------------------------------------


def fit(family: str, stored: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    """Least-squares coefficients, highest power first (np.polyval order)."""
    if family == "multiplicative":
        denominator = float(np.dot(stored, stored))
        return np.array([float(np.dot(stored, fresh)) / denominator if denominator else 1.0, 0.0])
    degree = {"affine": 1, "quadratic": 2}.get(family)
    if degree is None:
        raise ValueError(f"fit family {family!r}: expected one of {', '.join(FAMILIES)}")
    if len(stored) <= degree:
        raise ValueError(f"{family} fit needs more than {degree} observations, got {len(stored)}")
    return np.polyfit(stored, fresh, degree)


def _r2(truth, prediction) -> float:
    total = float(np.sum((truth - truth.mean()) ** 2))
    return float(1 - np.sum((truth - prediction) ** 2) / total) if total > 0 else float("nan")


def lopo(family: str, problem, stored, fresh) -> dict[str, Any]:
    """Training fit plus leave-one-problem-out predictions and scores."""
    coefficients = fit(family, stored, fresh)
    predicted = np.empty_like(fresh)
    folds = {}
    for p in np.unique(problem):
        held = problem == p
        if (~held).sum() <= 2:
            raise ValueError("leave-one-problem-out CV needs at least two problems with data")
        fold = fit(family, stored[~held], fresh[~held])
        folds[int(p)] = fold
        predicted[held] = np.polyval(fold, stored[held])
    return {"coefficients": coefficients.tolist(),
            "train_r2": _r2(fresh, np.polyval(coefficients, stored)),
            "cv_r2": _r2(fresh, predicted),
            "cv_rmse_s": float(np.sqrt(np.mean((fresh - predicted) ** 2))),
            "folds": folds}


def affine_alpha_beta(coefficients) -> tuple[float, float]:
    return float(coefficients[0]), float(coefficients[1])


# ---- ranking agreement -----------------------------------------------------------------------


def _loo_percentile(cand_TH, pool_TH, valid_TH) -> np.ndarray:
    """Mean per-test percentile (ties min) of each reference's candidate durations among the
    OTHER references' pool durations: `[H]` (NaN where undefined)."""
    h_count = cand_TH.shape[1]
    out = np.full(h_count, np.nan)
    for h in range(h_count):
        others = valid_TH.copy()
        others[:, h] = False
        tests = valid_TH[:, h] & others.any(axis=1)
        if not tests.any():
            continue
        less = np.sum(others & (pool_TH < cand_TH[:, [h]]), axis=1)
        count = others.sum(axis=1)
        out[h] = float(np.mean(less[tests] / count[tests]))
    return out


def ranking_agreement(blocks, folds: dict[int, Any] | None) -> dict[str, Any]:
    """Spearman of stored-based vs fresh-based percentiles (see the module docstring)."""
    from scipy.stats import spearmanr

    stored_all, fresh_all, bias = [], [], []
    for p, block in enumerate(blocks):
        pool = block["stored_TH"]
        if folds is not None:
            if p not in folds:
                continue
            pool = np.polyval(folds[p], pool)
        on_stored = _loo_percentile(block["fresh_TH"], pool, block["valid_TH"])
        on_fresh = _loo_percentile(block["fresh_TH"], block["fresh_TH"], block["valid_TH"])
        keep = np.isfinite(on_stored) & np.isfinite(on_fresh)
        stored_all.append(on_stored[keep])
        fresh_all.append(on_fresh[keep])
        if keep.any():
            bias.append(100 * float(np.mean(on_stored[keep] - on_fresh[keep])))
    a = np.concatenate(stored_all) if stored_all else np.zeros(0)
    b = np.concatenate(fresh_all) if fresh_all else np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = float(spearmanr(a, b).statistic) if len(a) > 2 else float("nan")
    signs = np.sign(bias) if bias else np.zeros(0)
    majority = max(int((signs > 0).sum()), int((signs < 0).sum())) if bias else 0
    return {"spearman": rho, "pairs": len(a),
            "mean_abs_diff_pp": float(100 * np.mean(np.abs(a - b))) if len(a) else float("nan"),
            "problem_bias_pp": float(np.mean(np.abs(bias))) if bias else float("nan"),
            # > 0: against stored durations the candidates look slower than against fresh ones
            "problem_bias_signed_pp": float(np.mean(bias)) if bias else float("nan"),
            "problems_same_sign": majority, "problems": len(bias)}


# ---- the campaign report ---------------------------------------------------------------------


def fit_campaign(dump: dict[str, Any]) -> dict[str, Any]:
    """All three fits with LOPO CV, and the ranking Spearman before/after (affine, LOPO)."""
    blocks = problem_blocks(dump)
    problem, stored, fresh = pooled_observations(blocks)
    if len(np.unique(problem)) < 2:
        raise ValueError("calibration needs re-executed references on at least two problems "
                         f"with valid observations, got {len(np.unique(problem))}")
    fits = {family: lopo(family, problem, stored, fresh) for family in FAMILIES}
    alpha, beta = affine_alpha_beta(fits["affine"]["coefficients"])
    agreement = {
        "before": ranking_agreement(blocks, None),
        "after_multiplicative": ranking_agreement(blocks, fits["multiplicative"]["folds"]),
        "after_affine": ranking_agreement(blocks, fits["affine"]["folds"]),
        "after_quadratic": ranking_agreement(blocks, fits["quadratic"]["folds"]),
    }
    for family in FAMILIES:
        fits[family].pop("folds")
    ratio = fresh / stored
    return {"alpha": alpha, "beta_s": beta, "fits": fits, "ranking": agreement,
            "observations": len(stored), "problems": len(np.unique(problem)),
            "reruns": len(dump["problems"][0].get("fresh_references", {}).get("runs", [])),
            "fresh_over_stored": {"median": float(np.median(ratio)),
                                  "p5": float(np.percentile(ratio, 5)),
                                  "p95": float(np.percentile(ratio, 95))},
            "stored_s": {"median": float(np.median(stored)), "max": float(stored.max())},
            "fresh_s": {"median": float(np.median(fresh)), "max": float(fresh.max())},
            "rerun_cv": _rerun_cv(blocks)}


def _rerun_cv(blocks) -> dict[str, float]:
    """Short-run noise: per-observation CV and std across the R fresh runs
    (docs/design/sandbox-timing.md §3.3)."""
    cv, sd = [], []
    for block in blocks:
        runs = block["runs_RTH"]
        if runs.shape[0] < 2:
            continue
        mask = block["valid_TH"]
        std = runs.std(axis=0, ddof=1)[mask]
        mean = runs.mean(axis=0)[mask]
        cv.append(std / mean)
        sd.append(std)
    if not cv:
        return {"cv_mean": float("nan"), "cv_median": float("nan"), "std_ms_mean": float("nan")}
    cv_all, sd_all = np.concatenate(cv), np.concatenate(sd)
    return {"cv_mean": float(cv_all.mean()), "cv_median": float(np.median(cv_all)),
            "std_ms_mean": float(1000 * sd_all.mean()), "std_ms_median": float(1000 * np.median(sd_all))}


def fit_from_replay_batch(rb) -> dict[str, float]:
    """Affine Gamma fitted on a replay batch's re-executed references (replay --refit)."""
    problem, stored, fresh = [], [], []
    kind_PT = rb.batch.test_kind_BT.reshape(rb.shape)[:, 0]
    for p in range(rb.shape[0]):
        mask_TH = (rb.stored_usable_PTH[p] & rb.fresh_usable_PTH[p] & (kind_PT[p] == 2)[:, None]
                   & (rb.batch.ref_duration_PTH[p] > 0) & (rb.fresh_duration_PTH[p] > 0))
        problem.append(np.full(int(mask_TH.sum()), p))
        stored.append(rb.batch.ref_duration_PTH[p][mask_TH])
        fresh.append(rb.fresh_duration_PTH[p][mask_TH])
    stored_all, fresh_all = np.concatenate(stored), np.concatenate(fresh)
    if len(stored_all) < 3:
        raise ValueError("--refit: the dump has fewer than 3 re-executed reference observations "
                         "on optimization tests")
    alpha, beta = affine_alpha_beta(fit("affine", stored_all.astype(float),
                                        fresh_all.astype(float)))
    return {"alpha": alpha, "beta_s": beta, "observations": len(stored_all)}


# ---- storing by name -------------------------------------------------------------------------


def calibration_dir(root: str | Path | None = None) -> Path:
    return Path(root) if root is not None else Path("configs") / "calibration"


def store_calibration(name: str, report: dict[str, Any], dump: dict[str, Any],
                      directory: str | Path | None = None, family: str = "affine") -> Path:
    """Write `<directory>/<name>.yaml`: the Gamma that `calibration.name=<name>` loads.

    `family`: affine (the paper's choice) or multiplicative (beta = 0); the reward kernels
    apply an affine map, so a quadratic fit is reported but cannot be stored."""
    if not name or any(c in name for c in "/\\ ") or name.startswith("."):
        raise ValueError(f"calibration name {name!r}: use letters, digits, '-', '_' and '.'")
    if family not in ("affine", "multiplicative"):
        raise ValueError(f"family {family!r}: only affine or multiplicative fits can be stored "
                         "(the reward kernels apply Gamma(d) = alpha d + beta)")
    alpha, beta = affine_alpha_beta(report["fits"][family]["coefficients"])
    path = calibration_dir(directory) / f"{name}.yaml"
    document = {
        "name": name, "format_version": FORMAT_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kind": "affine", "family": family, "alpha": round(alpha, 6), "beta_s": round(beta, 6),
        "dataset": {k: dump["dataset"].get(k) for k in ("name", "fingerprint")},
        "sandbox_state": dump["timing_pass"].get("sandbox_state", {}),
        "campaign": {"problems": report["problems"], "reruns": report["reruns"],
                     "observations": report["observations"], "seed": dump["timing_pass"].get("seed")},
        "fits": {family: {k: v for k, v in values.items()} for family, values in report["fits"].items()},
        "ranking_spearman": {k: v["spearman"] for k, v in report["ranking"].items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(_plain(document), sort_keys=False))
    return path


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# ---- drift ---------------------------------------------------------------------------------


def drift_check(dataset, sandbox, calibration: tuple[float, float] | Any,
                canaries: Sequence[str], *, reruns: int = 1, cap_s: float = 10.0,
                max_relative_error: float = 0.10, seed: int = 0) -> dict[str, Any]:
    """Rerun the references of the canary problems and compare with Gamma(stored).

    `calibration`: (alpha, beta_s) or a CalibrationConfig. Returns flat figures (prefixed
    `calibration_drift/`) for the trainer's metrics, plus `refit_due` and `warning`. A refit is
    due when the median relative error |fresh - Gamma(stored)| / fresh on the canaries'
    optimization tests exceeds `max_relative_error` (default 10 %)."""
    from jaxopt_rl.evaluation.evaluate import build_dump

    alpha, beta = calibration if isinstance(calibration, tuple) else calibration.alpha_beta
    if not canaries:
        raise ValueError("drift_check: empty canary problem list")
    dump = build_dump(dataset, list(canaries), {pid: [None] for pid in canaries}, sandbox,
                      model_name="@drift-check", reference_runs=reruns, seed=seed, cap_s=cap_s,
                      kinds=("TO",))
    _, stored, fresh = pooled_observations(problem_blocks(dump))
    if len(stored) == 0:
        return {"calibration_drift/observations": 0, "refit_due": False,
                "warning": "drift check: no valid canary observation (every run failed?)"}
    predicted = np.clip(alpha * stored + beta, 0, cap_s)
    relative = (fresh - predicted) / fresh
    median_relative = float(np.median(np.abs(relative)))
    figures = {
        "calibration_drift/observations": len(stored),
        "calibration_drift/median_rel_error": median_relative,
        "calibration_drift/median_signed_rel_error": float(np.median(relative)),
        "calibration_drift/mean_abs_error_ms": float(1000 * np.mean(np.abs(fresh - predicted))),
        "calibration_drift/fresh_over_predicted": float(np.median(fresh / np.maximum(predicted,
                                                                                       1e-9))),
    }
    due = median_relative > max_relative_error
    figures["refit_due"] = bool(due)
    figures["warning"] = (f"calibration drift: median |fresh - Gamma(stored)| / fresh = "
                          f"{median_relative:.1%} > {max_relative_error:.0%} on "
                          f"{len(canaries)} canary problem(s): refit the calibration "
                          "(jaxopt-rl calibrate)" if due else None)
    if due:
        warnings.warn(figures["warning"], stacklevel=2)
    return figures
