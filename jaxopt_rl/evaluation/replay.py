"""Replayed evaluation: an evaluation dump -> pass@k(p_tau), CIs, win rates, calibration sweeps,
with no sandbox run (docs/design/dataset-eval.md §5.4-§5.7; docs/design/rewards.md §8).

The dump's raw statuses and durations, read by the one status-and-provenance rule
(`dump.timed_cells`: a timeout at its cap, a fleet duration kept, any other NaN), become a
`RecordBatch` through the one constructor (`data.execution_table.record_batch`; problems x
samples x tests, the stored reference durations per problem), the evaluation environment turns it into c~ and q_QP
through the reward layer's own kernels, and pass@k(p_tau) is the unbiased estimator over the
n samples of each problem. The evaluation environment (`EVAL_ENV`, overridable with
`key=value` like any `EnvConfig`): correctness on T0 and T+, every TO test used (no filter),
infinite intended limits (a timeout at the 10 s cap is not a failure, docs/design/dataset-eval.md
§5.2), QP with ties in the candidate's favour.

Calibration Gamma (`calibration.kind=affine` with alpha/beta_s, or `calibration.name=...` for a
stored fit, or `refit=True` to fit it on the dump's own re-executed references) is applied to
the STORED reference durations only (eq. 10), on the host, once per replay; the environment then
runs with the identity, so a calibration sweep reuses one compiled program. `references="fresh"`
ranks against the references' durations from the same timing pass instead (no calibration: both
sides are on the live scale).

Measurement integrity. Every dump is checked (`dump.check_dump`) before it is scored: a NaN,
infinite, negative or beyond-the-cap reference duration is refused with an error naming the
problem, the test and the reference. A null stored duration is lost: eq. 10 reads it at the cap,
and a problem whose used tests have no measured reference duration is unrankable (its samples
never pass a speed threshold below p100; counted). Durations that no reference ranks (an
optimization test without any measured reference duration) cost a sample nothing, so they are
counted and reported (`details["unranked_tests"]`): the tests, the c~ samples that ran them,
how many of those hit the cap there and the seconds they spent.

Choices:
  * a sample without a program, or whose program was not run, fails every test (c~ = 0).
  * a sample with an infra_error on a test the environment needs is inconclusive: it is left
    out of its problem's n (never scored as a failure); the count is reported.
  * bootstrap CIs: percentile intervals of the mean over problems, resampling problems with
    replacement (default 1,000 resamples, 95 %, seed 0); per difficulty the resampling is
    within the slice.
  * win rates (`against`): samples passing c~ on both sides, speed = total duration over all the
    problem's tests (timeouts at the cap), problems of both dumps only (matched by id).
Dimension letters: P problems, G samples per problem, T tests, H references.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxopt_rl.config import apply_overrides, from_dict
from jaxopt_rl.data.execution_table import ExecutionTable, record_batch
from jaxopt_rl.evaluation.dump import DumpError, check_comparable, check_dump, timed_cells
from jaxopt_rl.evaluation.metrics import pass_at_k_p_tau, win_rates
from jaxopt_rl.rewards.env_config import CalibrationConfig, EnvConfig
from jaxopt_rl.rewards.records import STATUS_CODE, TEST_KIND_CODE, TIMEOUT, RecordBatch

TAUS = (100, 90, 80, 70, 60, 50, 40, 30, 20, 10)
KS = (1, 10)
EVAL_ENV: dict[str, Any] = {
    "name": "eval",
    "description": "evaluation: strict correctness (T0, T+; TO success or timeout), q_QP",
    "correctness_kinds": ["T0", "T+"],
    "optimization_kinds": ["TO"],
    "limit": {"kind": "infinite"},
    "ranking": {"kind": "qp", "ties": "min"},
}
_FAILURE = STATUS_CODE["wrong_answer"]
_TINY_S = 1e-9  # a calibrated duration clamped to 0 stays a valid (fastest) duration


def eval_env(overrides: Sequence[str] = ()) -> EnvConfig:
    """The evaluation environment with `key=value` overrides (e.g. calibration.name=...)."""
    env = from_dict(EnvConfig, apply_overrides(EVAL_ENV, overrides))
    if env.ranking.kind == "none":
        raise ValueError("eval: ranking.kind=none has no q for p_tau; use qp (or qar)")
    return env


@dataclasses.dataclass(frozen=True)
class ReplayBatch:
    """A dump as padded arrays (NumPy)."""

    problem_ids: tuple[str, ...]
    difficulty_P: np.ndarray  # object (str)
    batch: RecordBatch  # B = P * G, references raw stored seconds
    sample_mask_PG: np.ndarray  # a real sample
    stored_usable_PTH: np.ndarray
    fresh_duration_PTH: np.ndarray  # mean over reruns, NaN where not usable
    fresh_usable_PTH: np.ndarray
    test_ids: tuple[tuple[str, ...], ...]
    table: ExecutionTable  # what `batch` was laid out from (ranked again against other refs)

    @property
    def shape(self) -> tuple[int, int, int]:
        p, t, _ = self.batch.ref_duration_PTH.shape
        return p, self.batch.num_rollouts // p, t


def dump_batch(dump: dict[str, Any]) -> ReplayBatch:
    check_dump(dump)  # durations it would rank are measurements (see the module docstring)
    problems = dump["problems"]
    p_count = len(problems)
    g_max = max(len(p["samples"]) for p in problems)
    t_max = max(len(p["tests"]["ids"]) for p in problems)
    h_max = max([1] + [len(p["stored_references"]["ids"]) for p in problems]
                + [len((p.get("fresh_references") or {}).get("ids", [])) for p in problems])
    status = np.full((p_count, g_max, t_max), _FAILURE, np.int8)
    duration = np.zeros((p_count, g_max, t_max), np.float32)
    test_mask = np.zeros((p_count, t_max), bool)
    kind = np.zeros((p_count, t_max), np.int8)
    io_chars = np.zeros((p_count, t_max), np.int32)
    cap = np.full((p_count, t_max), 10.0, np.float32)
    sample_mask = np.zeros((p_count, g_max), bool)
    ref = np.full((p_count, t_max, h_max), np.nan, np.float32)
    usable = np.zeros((p_count, t_max, h_max), bool)
    fresh = np.full((p_count, t_max, h_max), np.nan, np.float32)
    fresh_usable = np.zeros((p_count, t_max, h_max), bool)
    for p, problem in enumerate(problems):
        tests = problem["tests"]
        t = len(tests["ids"])
        test_mask[p, :t] = True
        kind[p, :t] = [TEST_KIND_CODE[k] for k in tests["kinds"]]
        io_chars[p, :t] = tests["io_chars"]
        cap[p, :t] = tests["limit_s"]
        for g, sample in enumerate(problem["samples"]):
            sample_mask[p, g] = True
            if sample.get("status") is not None:
                status[p, g, :t] = [STATUS_CODE[s] for s in sample["status"]]
                # the one rule: a timeout at its cap, a fleet duration kept, any other NaN
                duration[p, g, :t] = timed_cells(sample["status"], sample["duration_s"],
                                                 cap[p, :t], sample.get("timing") or None)[0]
        stored = problem["stored_references"]
        h = len(stored["ids"])
        if h:
            values = np.array([[np.nan if v is None else v for v in row]
                               for row in stored["duration_s"]], np.float32)
            ref[p, :t, :h] = values
            usable[p, :t, :h] = np.asarray(stored["usable"], bool)
        runs = (problem.get("fresh_references") or {}).get("runs", [])
        if runs:
            cells = [timed_cells(run["status"], run["duration_s"], cap[p, :t],
                                 run.get("timing") or None) for run in runs]
            times = np.array([seconds for seconds, _ in cells], np.float32)  # [R, H, T]
            ok = np.all([ranked for _, ranked in cells], axis=0)  # [H, T]
            h_fresh = ok.shape[0]
            fresh_usable[p, :t, :h_fresh] = ok.T
            fresh[p, :t, :h_fresh] = np.where(ok, times.mean(axis=0), np.nan).T
    table = ExecutionTable(status_PGT=status, duration_PGT=duration, rollout_mask_PG=sample_mask,
                           test_mask_PT=test_mask, test_kind_PT=kind, io_chars_PT=io_chars,
                           cap_PT=cap)
    batch = record_batch(table, ref, usable)
    return ReplayBatch(tuple(p["problem_id"] for p in problems),
                       np.array([p["difficulty"] for p in problems], dtype=object), batch,
                       sample_mask, usable, fresh, fresh_usable,
                       tuple(tuple(p["tests"]["ids"]) for p in problems), table)


def calibrated_references(rb: ReplayBatch, alpha: float, beta: float) -> np.ndarray:
    """Eq. 10 on the stored references with Gamma = (alpha, beta), each test's own cap."""
    from jaxopt_rl.rewards.calibration import sanitize_reference_durations

    cap_PT1 = rb.batch.cap_BT.reshape(rb.shape)[:, 0, :, None]
    out = np.asarray(sanitize_reference_durations(rb.batch.ref_duration_PTH, alpha, beta,
                                                  cap_PT1))
    return np.maximum(out, _TINY_S)


@dataclasses.dataclass(frozen=True)
class ReplaySignals:
    """What a replay reads of the environment's signals, `[P, G]` each (NumPy)."""

    c_strict_PG: np.ndarray
    q_PG: np.ndarray  # the environment's ranked scalar; NaN where unrankable
    counted_PG: np.ndarray  # a real sample with a verdict (not inconclusive)
    inconclusive: int
    unrankable_PG: np.ndarray


def _signals(rb: ReplayBatch, env: EnvConfig, refs) -> ReplaySignals:
    """The evaluation environment's signals under the identity Gamma (`refs`: the
    `(durations, mask, lost)` of `references_for`)."""
    from jaxopt_rl.rewards.environment import signals
    from jaxopt_rl.rewards.reference_table import prepare_references

    ref_PTH, mask_PTH, lost_PTH = refs
    identity = dataclasses.replace(env, calibration=CalibrationConfig())
    batch = record_batch(rb.table, ref_PTH, mask_PTH)
    # the durations are sanitised here already: say which ones were lost before that
    table = prepare_references(ref_PTH, mask_PTH, identity, all_rankings=True, lost_PTH=lost_PTH)
    sig = signals(batch, identity, references=table, all_rankings=True)
    shape = rb.sample_mask_PG.shape
    q = sig.q_qp_B if env.ranking.kind == "qp" else sig.q_qar_B
    inconclusive = np.asarray(sig.inconclusive_B).reshape(shape) & rb.sample_mask_PG
    counted = rb.sample_mask_PG & ~inconclusive
    return ReplaySignals(np.asarray(sig.c_strict_B).reshape(shape), np.asarray(q).reshape(shape),
                         counted, int(inconclusive.sum()),
                         np.asarray(sig.unrankable_B).reshape(shape) & counted)


def references_for(rb: ReplayBatch, env: EnvConfig, references: str,
                   gamma: tuple[float, float] | None = None):
    """`(durations, mask, lost)` `[P, T, H]` the candidates are ranked against: `lost` marks the
    usable references whose stored duration is null (read at the cap, eq. 10)."""
    if references == "fresh":
        if not rb.fresh_usable_PTH.any():
            raise DumpError("references=fresh: this dump has no re-executed references")
        return (np.nan_to_num(rb.fresh_duration_PTH, nan=0.0), rb.fresh_usable_PTH,
                np.zeros(rb.fresh_usable_PTH.shape, bool))
    if references != "stored":
        raise ValueError(f"references={references!r}: expected 'stored' or 'fresh'")
    alpha, beta = gamma if gamma is not None else env.calibration.alpha_beta
    raw_PTH = rb.batch.ref_duration_PTH
    lost_PTH = rb.stored_usable_PTH & ~(np.isfinite(raw_PTH) & (raw_PTH > 0))
    return calibrated_references(rb, alpha, beta), rb.stored_usable_PTH, lost_PTH


def unranked_tests(rb: ReplayBatch, env: EnvConfig, refs, sig: ReplaySignals) -> dict[str, Any]:
    """Optimization tests no measured reference duration ranks (none usable, or every one
    lost), and what the c~ samples did there: a sample slow on them loses nothing, so it is
    counted here instead."""
    from jaxopt_rl.rewards.records import TEST_KIND_CODE

    _, mask_PTH, lost_PTH = refs
    p, g, t = rb.shape
    test_mask_PT = rb.batch.test_mask_BT.reshape(p, g, t)[:, 0]
    kind_PT = rb.batch.test_kind_BT.reshape(p, g, t)[:, 0]
    opt_PT = test_mask_PT & np.isin(kind_PT, [TEST_KIND_CODE[k] for k in env.optimization_kinds])
    no_reference_PT = opt_PT & ~mask_PTH.any(-1)
    lost_PT = opt_PT & mask_PTH.any(-1) & ~(mask_PTH & ~lost_PTH).any(-1)
    unranked_PT = no_reference_PT | lost_PT
    status_PGT = rb.batch.status_BT.reshape(p, g, t)
    duration_PGT = rb.batch.duration_BT.reshape(p, g, t)
    cap_P1T = rb.batch.cap_BT.reshape(p, g, t)[:, :1]
    ran_PG = sig.c_strict_PG & sig.counted_PG & unranked_PT.any(-1)[:, None]
    timeout_PGT = unranked_PT[:, None] & ((status_PGT == TIMEOUT) | (duration_PGT >= cap_P1T))
    seconds_PGT = np.where(status_PGT == TIMEOUT, cap_P1T, np.nan_to_num(duration_PGT))
    by_problem = {}
    for row, pid in enumerate(rb.problem_ids):
        if unranked_PT[row].any():
            by_problem[pid] = {
                "no_reference": [rb.test_ids[row][k] for k in np.flatnonzero(no_reference_PT[row])],
                "lost": [rb.test_ids[row][k] for k in np.flatnonzero(lost_PT[row])]}
    return {"tests": int(unranked_PT.sum()), "by_problem": by_problem,
            "samples": int(ran_PG.sum()),
            "samples_at_cap": int((ran_PG & timeout_PGT.any(-1)).sum()),
            "seconds": float((seconds_PGT * unranked_PT[:, None])[ran_PG].sum())}


def pass_values(c_PG, q_PG, counted_PG, taus=TAUS, ks=KS) -> dict[int, dict[int, np.ndarray]]:
    """Per-problem pass@k(p_tau): {k: {tau: [P]}} (NaN where a problem has no counted sample)."""
    return {k: {tau: np.asarray(pass_at_k_p_tau(c_PG, q_PG, tau, k, counted_PG), np.float64)
                for tau in taus} for k in ks}


def bootstrap_ci(values_MP: np.ndarray, resamples: int = 1000, level: float = 0.95,
                 seed: int = 0) -> np.ndarray:
    """Percentile bootstrap CI of the mean over problems for each row: `[M, 2]`.

    Problems are resampled with replacement (one index matrix shared by every row, so rows
    stay paired); NaN problems are ignored in each mean."""
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"bootstrap: resamples={resamples} must be >= 1 and level={level} "
                         "in (0, 1)")
    values_MP = np.asarray(values_MP, np.float64)
    num_problems = values_MP.shape[-1]
    index_RP = np.random.default_rng(seed).integers(0, num_problems, (resamples, num_problems))
    sampled_MRP = values_MP[:, index_RP]
    with np.errstate(invalid="ignore"), _quiet():
        means_MR = np.nanmean(sampled_MRP, axis=-1)
    low = (1 - level) / 2
    return np.stack([np.nanquantile(means_MR, low, axis=-1),
                     np.nanquantile(means_MR, 1 - low, axis=-1)], axis=-1)


class _quiet:
    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


def summarise(values: dict[int, dict[int, np.ndarray]], select_P: np.ndarray, resamples: int,
              level: float, seed: int) -> dict[str, dict[str, dict[str, Any]]]:
    """{"1": {"p100": {"value", "ci"}, ...}, "10": {...}} over the selected problems."""
    keys = [(k, tau) for k in values for tau in values[k]]
    rows_MP = np.stack([values[k][tau][select_P] for k, tau in keys])
    ci_M2 = bootstrap_ci(rows_MP, resamples, level, seed)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    with _quiet():
        means = np.nanmean(rows_MP, axis=-1)
    for m, (k, tau) in enumerate(keys):
        out.setdefault(str(k), {})[f"p{tau}"] = {"value": _num(means[m]),
                                                 "ci": [_num(ci_M2[m, 0]), _num(ci_M2[m, 1])]}
    return out


def _num(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


def resolve_gamma(dump: dict[str, Any], rb: ReplayBatch, env: EnvConfig, refit: bool):
    """(alpha, beta, description) of the calibration a replay uses."""
    if refit:
        from jaxopt_rl.evaluation.calibration import fit_from_replay_batch

        fit = fit_from_replay_batch(rb)
        return fit["alpha"], fit["beta_s"], {"kind": "affine", "source": "refit on this dump",
                                             **fit}
    alpha, beta = env.calibration.alpha_beta
    described = {"kind": env.calibration.kind, "alpha": alpha, "beta_s": beta}
    name = getattr(env.calibration, "name", None)
    if name:
        described["name"] = name
    return alpha, beta, described


def replay(dump: dict[str, Any], env: EnvConfig | None = None, *, references: str = "stored",
           refit: bool = False, resamples: int = 1000, level: float = 0.95, seed: int = 0,
           against: dict[str, Any] | None = None, taus=TAUS, ks=KS) -> dict[str, Any]:
    """Score a dump offline. Returns `{"eval": <eval.json>, "details": {...}}`."""
    env = env or eval_env()
    rb = dump_batch(dump)
    alpha, beta, calibration = resolve_gamma(dump, rb, env, refit)
    refs = references_for(rb, env, references, (alpha, beta))
    sig = _signals(rb, env, refs)
    c_PG, q_PG, counted_PG = sig.c_strict_PG, sig.q_PG, sig.counted_PG
    values = pass_values(c_PG, q_PG, counted_PG, taus, ks)
    everything = np.ones(len(rb.problem_ids), bool)
    timing = dump["timing_pass"]
    result = {
        "model": dump["model"], "n": dump["n"], "problems": len(rb.problem_ids),
        "pass_at": summarise(values, everything, resamples, level, seed),
        "timing_pass": {"shuffled": bool(timing.get("shuffled")),
                        "references_included": bool(timing.get("references_included")),
                        "sandbox_state": timing.get("sandbox_state", {})},
    }
    by_difficulty = {}
    for difficulty in sorted(set(rb.difficulty_P.tolist())):
        select = rb.difficulty_P == difficulty
        by_difficulty[difficulty] = {"problems": int(select.sum()),
                                     "pass_at": summarise(values, select, resamples, level, seed)}
    details = {
        "dataset": dump["dataset"].get("name"), "fingerprint": dump["dataset"]["fingerprint"],
        "calibration": calibration, "references": references, "env": env.name,
        "ranking": env.ranking.kind, "ties": env.ranking.ties,
        "bootstrap": {"resamples": resamples, "level": level, "seed": seed},
        "inconclusive_samples": sig.inconclusive,
        "unrankable_samples": int(sig.unrankable_PG.sum()),
        "unranked_tests": unranked_tests(rb, env, refs, sig),
        "by_difficulty": by_difficulty,
        "per_problem": {pid: {"c_strict": int(c_PG[p][counted_PG[p]].sum()),
                              "counted": int(counted_PG[p].sum()),
                              **{f"pass@1_p{tau}": _num(values[ks[0]][tau][p]) for tau in taus}}
                        for p, pid in enumerate(rb.problem_ids)},
    }
    if against is not None:
        details["win_rates"] = compare_speed(dump, against, env)
    return {"eval": result, "details": details}


def _passing_durations(dump, env, problem_ids):
    rb = dump_batch(dump)
    sig = _signals(rb, env, references_for(rb, env, "stored", (1.0, 0.0)))
    c_PG, counted_PG = sig.c_strict_PG, sig.counted_PG
    row = {pid: p for p, pid in enumerate(rb.problem_ids)}
    rows = [row[pid] for pid in problem_ids]
    duration_PGT = rb.batch.duration_BT.reshape(rb.shape)[rows]
    test_mask_PT = rb.batch.test_mask_BT.reshape(rb.shape)[rows, 0]
    return duration_PGT, (c_PG & counted_PG)[rows], test_mask_PT


def compare_speed(model_dump: dict[str, Any], base_dump: dict[str, Any],
                  env: EnvConfig | None = None) -> dict[str, Any]:
    """WR_b and WR_m of `model_dump` against `base_dump` on their common problems."""
    env = env or eval_env()
    check_comparable([model_dump, base_dump], ["model dump", "baseline dump"])
    base_ids = {p["problem_id"] for p in base_dump["problems"]}
    common = [p["problem_id"] for p in model_dump["problems"] if p["problem_id"] in base_ids]
    if not common:
        raise DumpError("win rates: the two dumps have no problem in common")
    model = _passing_durations(model_dump, env, common)
    base = _passing_durations(base_dump, env, common)
    t = max(model[0].shape[-1], base[0].shape[-1])

    def pad(duration_PGT, pass_PG, test_mask_PT):
        extra = t - duration_PGT.shape[-1]
        return (np.pad(duration_PGT, ((0, 0), (0, 0), (0, extra))), pass_PG,
                np.pad(test_mask_PT, ((0, 0), (0, extra))))

    (md, mp, mask), (bd, bp, _) = pad(*model), pad(*base)
    out = {"baseline": base_dump["model"], "problems": len(common)}
    for name, how in (("WR_b", "best"), ("WR_m", "median")):
        wr = win_rates(md, mp, bd, bp, mask, how=how)
        out[name] = {"win_rate": _num(float(wr.win_rate)), "wins": int(wr.wins),
                     "losses": int(wr.losses), "draws": int(wr.draws),
                     "excluded": int(wr.excluded)}
    return out


def calibration_sweep(dump: dict[str, Any], env: EnvConfig | None = None, *,
                      beta_offsets_s: Sequence[float] = (-0.03, -0.02, -0.01, 0.0, 0.01, 0.02,
                                                         0.03),
                      alpha_factors: Sequence[float] = (0.8, 0.9, 1.0, 1.1, 1.2),
                      base: tuple[float, float] | None = None, taus=(100, 50, 30, 10),
                      k: int = 1) -> dict[str, Any]:
    """pass@k(p_tau) as Gamma moves around `base` (default: the env's calibration), one axis at
    a time (paper Fig. 6; docs/design/dataset-eval.md §5.5, docs/design/sandbox-timing.md §3.7):
    `{"base", "beta": [...rows], "alpha": [...rows]}`."""
    env = env or eval_env()
    rb = dump_batch(dump)
    alpha0, beta0 = base if base is not None else env.calibration.alpha_beta
    out: dict[str, Any] = {"base": {"alpha": alpha0, "beta_s": beta0}, "k": k,
                           "beta": [], "alpha": []}
    points = ([("beta", alpha0, beta0 + d) for d in beta_offsets_s]
              + [("alpha", alpha0 * f, beta0) for f in alpha_factors])
    for axis, alpha, beta in points:
        sig = _signals(rb, env, references_for(rb, env, "stored", (alpha, beta)))
        values = pass_values(sig.c_strict_PG, sig.q_PG, sig.counted_PG, taus, (k,))[k]
        with _quiet():
            row = {f"p{tau}": _num(float(np.nanmean(values[tau]))) for tau in taus}
        out[axis].append({"alpha": alpha, "beta_s": beta, **row})
    return out
