"""Environments end to end: `rewards_and_signals` against a slow per-rollout Python reading of
docs/design/rewards.md §1-§6 (on random padded RecordBatches, for every environment class), plus
hand-checked cases.

The per-formula helpers (eq. 10, filters, limits, percentiles) come from `reference_impl`; the
orchestration and the compositions (docs/design/rewards.md §5 and §6) are restated here, one
rollout at a time.
"""

import dataclasses
import math
from fractions import Fraction

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import environment, records, river
from jaxopt_rl.rewards.env_config import EnvConfig, load_env_config
from jaxopt_rl.rewards.environment import rewards, rewards_and_signals, river_rewards_from_scores
from tests.rewards import reference_impl as ref

S, TO, F, INC = records.SUCCESS, records.TIMEOUT, records.FAILURE, records.INCONCLUSIVE
P, G, T, H = 3, 2, 6, 5
B = P * G
CAP = 10.0
# the multitask assignment's low-discrepancy rule uses the golden ratio's fractional part,
# stated here from its definition, (sqrt(5) - 1) / 2, not read from the code under test
GOLDEN_RATIO_SPEC = (math.sqrt(5.0) - 1.0) / 2.0


# ---- the slow reference ------------------------------------------------------------------------


def quality_map(q: float, mapping: str) -> float:
    if mapping == "bucket":
        return 1.0 if q == 0 else max(0.0, 0.9 - 0.1 * math.floor(10 * (q - 1e-6)))
    low = {"linear": 0.0, "range_third": 1 / 3, "range_half": 0.5}[mapping]
    return low + (1 - low) * (1 - q)


def signed(z: float) -> float:
    return 2 * z - 1


def compose_one(family, mapping, c_cor, c_strict, g, q, use_opt=False) -> float:
    if family == "multitask":
        family = "optimization" if use_opt else "correctness"
    opt = signed(g) if mapping == "binary" else signed(quality_map(q, mapping))
    if family == "correctness":
        return signed(c_cor)
    if family == "optimization":
        return opt
    if family == "collapsed":
        if mapping == "binary":
            return 1.0 if c_strict and g else -1.0
        return signed(quality_map(q, mapping)) if c_strict else -1.0
    if family == "two_gate":
        if not c_strict:
            return -1.0
        return (1.0 if g else 0.0) if mapping == "binary" else quality_map(q, mapping)
    assert family == "additive"
    return (signed(c_cor) + opt) / 2


def naive_one(c_cor, durations, limits_, how) -> float:
    values = [d if d > 0 else lim for d, lim in zip(durations, limits_)]
    dbar = sum(values) / len(values) if values else CAP
    if how == "lin":
        m = min(1.0, max(0.0, 1 - dbar / 10))
    else:
        m = min(1.0, max(0.0, (1 - math.log10(max(dbar, 1e-6))) / 3))
    return c_cor + m - 1


def reference_rollout(batch, b: int, env: EnvConfig) -> dict:
    """docs/design/rewards.md §1-§6 for rollout `b`, written as loops over its tests."""
    p = b // G  # the grouped layout
    if not batch["rollout_mask_B"][b]:
        return {"inconclusive": False, "undefined": True, "untimed": 0, "lost_tests": 0,
                "reward": math.nan}
    tests = [t for t in range(T) if batch["test_mask_BT"][b, t]]
    kind = {t: records.TEST_KINDS[batch["test_kind_BT"][b, t]] for t in tests}
    alpha, beta_s = env.calibration.alpha_beta
    ref_TH = [[float(np.float32(ref.sanitize_one(float(batch["ref_duration_PTH"][p, t, h]),
                                                 alpha, beta_s, env.service_cap_s)))
               for h in range(H)] for t in range(T)]
    mask_TH = batch["ref_mask_PTH"][p].tolist()
    # a stored duration that is null, <= 0 or not finite is lost (no measurement): eq. 10 reads
    # it at the cap, or the environment leaves it out (ranking.lost_references=drop)
    lost_TH = [[mask_TH[t][h] and not (math.isfinite(raw) and raw > 0)
                for h, raw in enumerate(batch["ref_duration_PTH"][p, t].tolist())]
               for t in range(T)]
    if env.ranking.lost_references == "drop":
        mask_TH = [[mask_TH[t][h] and not lost_TH[t][h] for h in range(H)] for t in range(T)]
    cor = [t for t in tests if kind[t] in env.correctness_kinds]
    opt_T = [t in tests and kind[t] in env.optimization_kinds for t in range(T)]

    spec = env.filter
    if spec.kind == "abs":
        used_T = ref.filter_absolute_row(opt_T, ref_TH, mask_TH, spec.threshold_s, spec.aggregate)
    elif spec.kind == "rel":
        used_T = ref.filter_relative_row(opt_T, ref_TH, mask_TH, spec.drop_percent, spec.aggregate)
    elif spec.kind == "len":
        used_T = [opt_T[t] and batch["io_chars_BT"][b, t] <= spec.max_chars for t in range(T)]
    else:
        used_T = list(opt_T)

    lim = env.limit
    cap_T = [float(batch["cap_BT"][b, t]) for t in range(T)]
    if lim.kind == "relative":
        limit_T = [ref.quantile(ref.usable_durations(ref_TH, mask_TH, t), lim.percentile / 100)
                   for t in range(T)]
        used_T = [used_T[t] and limit_T[t] is not None for t in range(T)]
    elif lim.kind == "ranked":
        limit_T, used_T = ref.ranked_reference_limit_row(ref_TH, mask_TH, used_T, lim.percentile,
                                                         lim.aggregate)
    elif lim.kind == "absolute":
        limit_T = [lim.limit_s] * T
    elif lim.kind == "infinite":
        limit_T = [None] * T
    else:
        limit_T = cap_T
    used = [t for t in tests if used_T[t]]
    cor_limit = env.correctness_limit_s
    comp = env.composition
    # which tests' success durations the reward reads (measured on the fleet, within the cap)
    reads_opt = (env.ranking.kind != "none" or lim.kind not in ("default", "infinite")
                 or (comp.family == "naive" and comp.naive_source == "opt"))
    reads = set(used) if reads_opt else set()
    if cor_limit is not None:
        reads |= set(cor)
    if comp.family == "naive" and comp.naive_source == "base":
        reads |= {t for t in cor if kind[t] == "T0"}
    status, duration, limit = {}, {}, {}
    untimed = 0
    for t in tests:
        raw, d = int(batch["status_BT"][b, t]), float(batch["duration_BT"][b, t])
        measured = math.isfinite(d) and 0 <= d <= cap_T[t]
        if raw == S and math.isfinite(d) and d > cap_T[t]:
            raw = TO  # a success beyond its cap is a timeout
        if raw == TO:
            d = cap_T[t]  # a timeout counts at its cap, whatever it carries
        elif raw == S and not measured:
            d = math.nan
            untimed += t in reads
        elif not measured:
            d = cap_T[t]
        duration[t] = d
        limit[t] = limit_T[t] if t in used else (cap_T[t] if cor_limit is None else cor_limit)
        status[t] = ref.post_filter_one(raw, d, limit[t])

    reads_opt_tests = comp.family != "correctness" and not (
        comp.family == "naive" and comp.naive_source == "base")
    inconclusive = any(status[t] == INC for t in cor + (used if reads_opt_tests else []))
    c_cor = all(status[t] == S for t in cor)
    c_strict = c_cor and all(status[t] in (S, TO) for t in used)
    phi = sum(status[t] == TO for t in used) / len(used) if used else 0.0
    g_to = phi <= env.gates.timeout_tolerance
    q_to = 0.0 if lim.kind == "infinite" else phi

    cand_T = [duration.get(t, 0.0) for t in range(T)]
    used_mask_T = [t in used for t in range(T)]
    ties = env.ranking.ties
    q_qar = q_qp = None
    if env.optimization_kinds:
        q_qar = ref.mean_percentiles_row(cand_T, ref_TH, mask_TH, used_mask_T, ties)[0]
        q_qp = ref.qp_row(cand_T, ref_TH, mask_TH, used_mask_T, ties)
    undefined = inconclusive or untimed > 0
    q_dur, g_dur = 0.0, True
    # rankable: a used test has a measured reference duration (all lost: no leaderboard)
    rankable = any(any(mask_TH[t][h] and not lost_TH[t][h] for h in range(H)) for t in used)
    if not rankable:
        q_qar = q_qp = None
    if env.ranking.kind != "none":
        raw_q = q_qar if env.ranking.kind == "qar" else q_qp
        if not rankable:
            undefined |= env.ranking.if_unrankable == "drop"
        elif raw_q is None:  # rankable, but a NaN duration: undefined above
            q_dur, g_dur = math.nan, False
        else:
            q_dur = raw_q
            p_gate = env.gates.quality_threshold
            g_dur = p_gate is None or raw_q <= Fraction(str(p_gate))
    g = g_to and g_dur
    q = 1 - (1 - q_to) * (1 - q_dur)

    use_opt = False
    if comp.family == "multitask":
        position = float(np.float32(p + 1) * np.float32(GOLDEN_RATIO_SPEC))
        use_opt = position - math.floor(position) < comp.multitask_share
    if comp.family == "naive":
        source = used if comp.naive_source == "opt" else [t for t in cor if kind[t] == "T0"]
        limits_ = [cap_T[t] if limit[t] is None else limit[t] for t in source]
        durations = [lt if status[t] == TO else duration[t] for t, lt in zip(source, limits_)]
        reward = naive_one(c_cor, durations, limits_, comp.naive_map)
    else:
        reward = compose_one(comp.family, comp.mapping, c_cor, c_strict, g, float(q), use_opt)
    reads_refs = (env.ranking.kind != "none" or env.filter.kind in ("abs", "rel")
                  or lim.kind in ("relative", "ranked"))
    ran_TH = batch["ref_mask_PTH"][p].tolist()
    lost_tests = sum(any(ran_TH[t]) and all(lost_TH[t][h] for h in range(H) if ran_TH[t][h])
                     for t in used) if reads_refs else 0
    return {"c_cor": c_cor, "c_strict": c_strict, "g": g, "q": float(q), "phi": phi,
            "q_qar": ref.to_float(q_qar), "q_qp": ref.to_float(q_qp),
            "inconclusive": inconclusive, "undefined": bool(undefined), "untimed": untimed,
            "lost_tests": lost_tests, "reward": math.nan if undefined else reward}


# ---- random padded batches ---------------------------------------------------------------------


def record_batches():
    return ref.record_batches(P, G, T, H)


def env_variant(name: str, *overrides: str) -> EnvConfig:
    return load_env_config(name, list(overrides))


ENVS = {
    "standard_rlvr": env_variant("standard_rlvr"),
    "mc": env_variant("mc"),
    "mc_tloc_1.5s": env_variant("mc_tloc", "correctness_limit_s=1.5"),
    "mc_mo": env_variant("mc_mo"),
    "abs_2s": env_variant("abs_2s"),
    "abs_median_affine": env_variant("abs_2s", "filter.aggregate=median", "calibration.kind=affine",
                                     "calibration.alpha=0.6306", "calibration.beta_s=0.0529"),
    "len_1e5": env_variant("len_1e5"),
    "rel_filter_50": env_variant("rel_filter_p10", "filter.drop_percent=50"),
    "rel_timeout_p50": env_variant("rel_timeout_p50"),
    "rw_p80": env_variant("rw_p80"),
    "rw_median_p40": env_variant("rw_p80", "limit.aggregate=median", "limit.percentile=40"),
    "qp_p30": env_variant("qp_p30"),
    "qp_p30_lost_dropped": env_variant("qp_p30", "ranking.lost_references=drop"),
    "rw_p80_lost_dropped": env_variant("rw_p80", "ranking.lost_references=drop"),
    "qp_p50_average_drop": env_variant("qp_p50", "ranking.ties=average",
                                       "ranking.if_unrankable=drop"),
    "qar_p30": env_variant("qar_p30"),
    "qar_default_limit_rho": env_variant("qar_p30", "limit.kind=default",
                                         "gates.timeout_tolerance=0.5"),
    "two_gate_linear": env_variant("two_gate_linear"),
    "two_gate_bucket": env_variant("two_gate_linear", "composition.mapping=bucket"),
    "two_gate_binary": env_variant("two_gate_linear", "composition.mapping=binary"),
    "collapsed_range_third": env_variant("qp_p30", "composition.mapping=range_third"),
    "optimization_half": env_variant("qar_p30", "composition.family=optimization",
                                     "composition.mapping=range_half"),
    "optimization_binary": env_variant("qp_p30", "composition.family=optimization"),
    "correctness": env_variant("qp_p30", "composition.family=correctness"),
    "additive": env_variant("additive"),
    "additive_linear": env_variant("additive", "composition.mapping=linear"),
    "multitask": env_variant("multitask"),
    "naive_opt_log": env_variant("naive_opt_log"),
    "naive_base_lin": env_variant("naive_base_lin"),
}


@pytest.mark.parametrize("name", ENVS)
@settings(max_examples=25)
@given(batch=record_batches())
def test_matches_the_slow_reference(name, batch):
    env = ENVS[name]
    record_batch = records.RecordBatch(**batch)
    record_batch.validate()
    reward_B, sig = rewards_and_signals(record_batch, env, all_rankings=True)
    for b in range(B):
        want = reference_rollout(batch, b, env)
        got = {"c_cor": sig.c_cor_B[b], "c_strict": sig.c_strict_B[b], "g": sig.g_B[b],
               "q": sig.q_B[b], "phi": sig.phi_B[b], "q_qar": sig.q_qar_B[b],
               "q_qp": sig.q_qp_B[b], "inconclusive": sig.inconclusive_B[b],
               "undefined": sig.undefined_B[b], "reward": reward_B[b],
               "untimed": sig.untimed_B[b], "lost_tests": sig.lost_tests_B[b]}
        assert bool(sig.rollout_mask_B[b]) == bool(batch["rollout_mask_B"][b])
        for key, value in want.items():
            if want["untimed"] and key not in ("inconclusive", "undefined", "untimed", "reward",
                                               "lost_tests"):
                continue  # signals computed from a NaN duration carry no meaning
            if isinstance(value, bool):
                assert bool(got[key]) == value, (name, b, key)
            elif key in ("untimed", "lost_tests"):
                assert int(got[key]) == value, (name, b, key)
            else:
                np.testing.assert_allclose(float(got[key]), value, atol=2e-6, rtol=1e-6,
                                           err_msg=f"{name} rollout {b} {key}")
        reward = float(reward_B[b])
        assert math.isnan(reward) or -1.0 <= reward <= 1.0


# ---- hand-checked cases ------------------------------------------------------------------------


def hand_batch() -> records.RecordBatch:
    """One problem: t0 (T0), t1 (T+), o0, o1 (TO); four references per optimization test.

    o0 references 0.2/0.4/0.6/0.8 s (mean 0.5 s), o1 references 2/3/4/5 s (mean 3.5 s).
      r0  fast and correct            o0 0.1, o1 1.0
      r1  wrong answer on t1 (T+)
      r2  correct, o0 0.7, o1 times out at the 10 s cap
      r3  infra_error on o0
      r4  runtime error on t0
    """
    status = np.full((5, 4), S, np.int8)
    duration = np.array([[0.1, 0.1, 0.1, 1.0]] * 5, np.float32)
    status[1, 1] = F
    duration[2, 2:] = (0.7, CAP)
    status[2, 3] = TO
    status[3, 2], duration[3, 2] = INC, 0.0
    status[4, 0] = F
    ref_PTH = np.zeros((1, 4, 4), np.float32)
    ref_PTH[0, 2], ref_PTH[0, 3] = (0.2, 0.4, 0.6, 0.8), (2.0, 3.0, 4.0, 5.0)
    ref_mask = np.zeros((1, 4, 4), bool)
    ref_mask[0, 2:] = True
    return records.RecordBatch(
        status_BT=status, duration_BT=duration, test_mask_BT=np.ones((5, 4), bool),
        test_kind_BT=np.array([[0, 1, 2, 2]] * 5, np.int8), io_chars_BT=np.full((5, 4), 10),
        cap_BT=np.full((5, 4), CAP, np.float32), rollout_mask_B=np.ones(5, bool),
        ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask)


NAN = math.nan
HAND_CASES = {
    # env: rewards of r0..r4
    "standard_rlvr": [1, 1, 1, 1, -1],  # T+ failure and the infra_error on o0 are not needed
    "mc": [1, -1, 1, 1, -1],
    "mc_mo": [1, -1, -1, NAN, -1],  # r2: one timeout of two > rho = 0
    "abs_2s": [1, -1, -1, NAN, -1],  # o1 filtered (mean 3.5 s >= 2 s); r2: 0.7 s >= 0.5 s limit
    "rw_p80": [1, -1, -1, NAN, -1],  # limits o0 0.8 s, o1 5 s; r2 times out on o1
    "qp_p30": [1, -1, -1, NAN, -1],  # r2: q_QP = 3/4 (see below)
    "qp_p50": [1, -1, -1, NAN, -1],
    "two_gate_linear": [1, -1, 0.25, NAN, -1],  # 1 - q_QP
    "additive": [1, 0, 0, NAN, 0],  # r1, r4: (s(0) + s(g=1)) / 2 = 0 (fast but wrong)
    "naive_opt_log": [(1 - math.log10(0.55)) / 3, (1 - math.log10(0.55)) / 3 - 1,
                      (1 - math.log10(5.35)) / 3, NAN, (1 - math.log10(0.55)) / 3 - 1],
}


@pytest.mark.parametrize("name", HAND_CASES)
def test_hand_checked_rewards(name):
    reward_B = np.asarray(rewards(hand_batch(), load_env_config(name)))
    np.testing.assert_allclose(reward_B, HAND_CASES[name], atol=1e-6)


def test_hand_checked_signals_of_the_slow_rollout():
    # r2 on o0 (0.7 s): 3 of 4 references faster -> 3/4; on o1 (10 s): 4/4 -> a = 7/8.
    # References inside the pool with r2: a(h) = 0, 1/4, 1/2, 7/8 -> 3 strictly faster -> 3/4.
    sig = environment.signals(hand_batch(), load_env_config("qp_p30"), all_rankings=True)
    assert float(sig.q_qar_B[2]) == pytest.approx(7 / 8)
    assert float(sig.q_qp_B[2]) == pytest.approx(3 / 4)
    assert float(sig.q_qp_B[0]) == 0.0 and float(sig.q_qar_B[0]) == 0.0
    assert bool(sig.c_strict_B[2]) and not bool(sig.g_B[2])
    assert float(sig.phi_B[2]) == 0.5 and float(sig.q_B[2]) == pytest.approx(3 / 4)  # q_to off
    assert sig.inconclusive_B.tolist() == [False, False, False, True, False]
    abs_sig = environment.signals(hand_batch(), load_env_config("abs_2s"))
    assert abs_sig.used_test_mask_BT[0].tolist() == [False, False, True, False]
    assert int(abs_sig.status_BT[2, 2]) == TO and float(abs_sig.limit_BT[2, 2]) == 0.5
    assert math.isnan(float(abs_sig.q_qp_B[0])), "not computed unless all_rankings"
    rw = environment.signals(hand_batch(), load_env_config("rw_p80", ["limit.percentile=50"]))
    np.testing.assert_allclose(np.asarray(rw.limit_BT[0, 2:]), [0.4, 3.0])


def test_multitask_follows_the_callers_assignment():
    env = load_env_config("multitask")
    batch = hand_batch()
    use_opt = np.array([True, True, False, False, False])
    reward_B = np.asarray(rewards(batch, env, use_opt))
    # r0: s(g) = 1; r1 (optimization task, g = 1 since fast): 1; r2: s(c_cor) = 1
    np.testing.assert_allclose(reward_B, [1, 1, 1, NAN, -1])
    sig = rewards_and_signals(batch, env, use_opt)[1]
    assert sig.use_optimization_B.tolist() == use_opt.tolist()


def one_test_problems(num_problems: int) -> records.RecordBatch:
    """`num_problems` problems, one rollout each, one passing T0 test, no references."""
    ones = np.ones((num_problems, 1))
    return records.RecordBatch(
        status_BT=np.full((num_problems, 1), S, np.int8), duration_BT=ones.astype(np.float32),
        test_mask_BT=ones.astype(bool), test_kind_BT=np.zeros((num_problems, 1), np.int8),
        io_chars_BT=ones.astype(np.int32), cap_BT=np.full((num_problems, 1), CAP, np.float32),
        rollout_mask_B=np.ones(num_problems, bool),
        ref_duration_PTH=np.zeros((num_problems, 1, 1), np.float32),
        ref_mask_PTH=np.zeros((num_problems, 1, 1), bool))


# frac(k * 0.6180339887...) for k = p + 1 = 1 .. 8, by hand: 0.618, 0.236, 0.854, 0.472, 0.090,
# 0.708, 0.326, 0.944. Row p gets the optimization task iff that is below the share. (A
# constant 0.5 in place of the golden ratio gives 0.5, 0, 0.5, 0, ...: the same first three
# rows at share 0.5, different from row 4 on.)
@pytest.mark.parametrize(("share", "want"), [
    (0.5, [False, True, False, True, True, False, True, False]),
    (0.3, [False, True, False, False, True, False, False, False]),
    (0.75, [True, True, False, True, True, True, True, False]),
])
def test_multitask_default_assignment_is_the_golden_ratio_sequence(share, want):
    env = load_env_config("multitask", [f"composition.multitask_share={share}"])
    sig = rewards_and_signals(one_test_problems(len(want)), env)[1]
    assert np.asarray(sig.use_optimization_B).tolist() == want


def test_padding_and_extra_problems_do_not_change_rewards():
    batch = hand_batch()
    env = load_env_config("qp_p30")
    want = np.asarray(rewards(batch, env))
    wide = {f.name: np.asarray(getattr(batch, f.name)) for f in dataclasses.fields(batch)}

    def pad_t(a, value):  # three more padded tests
        return np.concatenate([a, np.full((a.shape[0], 3, *a.shape[2:]), value, a.dtype)], axis=1)

    def pad_b(a, value):  # a second group of five rows: a problem with only padding rollouts
        return np.concatenate([a, np.full_like(a, value)])

    wide["status_BT"] = pad_b(pad_t(wide["status_BT"], F), INC)
    wide["duration_BT"] = pad_b(pad_t(wide["duration_BT"], np.nan), -1.0)
    wide["test_mask_BT"] = pad_b(pad_t(wide["test_mask_BT"], False), True)
    wide["test_kind_BT"] = pad_b(pad_t(wide["test_kind_BT"], 2), 2)
    wide["io_chars_BT"] = pad_b(pad_t(wide["io_chars_BT"], -1), 7)
    wide["cap_BT"] = pad_b(pad_t(wide["cap_BT"], np.inf), 1.0)
    wide["rollout_mask_B"] = pad_b(wide["rollout_mask_B"], False)
    extra = np.full((1, 7, 4), -5.0, np.float32)  # the padding problem's references
    wide["ref_duration_PTH"] = np.concatenate([pad_t(wide["ref_duration_PTH"], 1e30), extra])
    wide["ref_mask_PTH"] = np.concatenate([pad_t(wide["ref_mask_PTH"], False), extra > 0])
    padded = records.RecordBatch(**wide)
    padded.validate()
    reward_B, sig = rewards_and_signals(padded, env)
    np.testing.assert_array_equal(np.asarray(reward_B)[:5], want)
    assert np.all(np.isnan(np.asarray(reward_B)[5:]))
    assert sig.undefined_B.tolist() == [False] * 3 + [True] + [False] + [True] * 5
    assert not np.asarray(sig.inconclusive_B)[5:].any(), "padding is never inconclusive"
    assert sig.rollout_mask_B.tolist() == [True] * 5 + [False] * 5


@settings(max_examples=10)
@given(batch=record_batches(), data=st.data())
def test_what_padding_rollouts_hold_never_matters(batch, data):
    env = ENVS["qp_p50_average_drop"]
    other = dict(batch)
    pad_BT = ~batch["rollout_mask_B"][:, None] & np.ones((1, T), bool)
    other["status_BT"] = np.where(pad_BT, data.draw(
        hnp.arrays(np.int8, (B, T), elements=st.sampled_from([S, TO, F, INC]))), batch["status_BT"])
    other["duration_BT"] = ref.fill_padding(batch["duration_BT"], ~pad_BT,
                                            data.draw(ref.garbage((B, T))))
    got = rewards_and_signals(records.RecordBatch(**other), env, all_rankings=True)
    want = rewards_and_signals(records.RecordBatch(**batch), env, all_rankings=True)
    real = batch["rollout_mask_B"]
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim and a.shape[0] == B:
            np.testing.assert_array_equal(a[real], b[real])


def test_one_compilation_per_environment_and_shape():
    env = load_env_config("qp_p50", ["gates.quality_threshold=0.45"])  # a fresh static argument
    before = environment._signals_and_rewards_jit._cache_size()
    batch = hand_batch()
    rewards(batch, env)
    slower = dataclasses.replace(batch, duration_BT=np.asarray(batch.duration_BT) * 2)
    rewards(slower, env)
    assert environment._signals_and_rewards_jit._cache_size() == before + 1


def test_wrong_kind_of_environment_is_refused():
    with pytest.raises(ValueError, match="kind=river"):
        rewards(hand_batch(), load_env_config("river"))
    with pytest.raises(ValueError, match="kind=execution"):
        river_rewards_from_scores(np.zeros((4, 2)), np.ones((4, 2), bool), load_env_config("mc"))
    with pytest.raises(ValueError, match="use_optimization_B only applies to family=multitask"):
        rewards(hand_batch(), load_env_config("qp_p30"), np.ones(5, bool))
    with pytest.raises(ValueError, match="scores must be"):
        river_rewards_from_scores(np.zeros(4), np.ones(4, bool), load_env_config("river"))


def test_river_environments_dispatch_to_their_method():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 6, 4)).astype(np.float32)  # [P, G, M]
    valid = rng.uniform(size=scores.shape) > 0.2
    got = river_rewards_from_scores(scores, valid, load_env_config("river"))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(river.river_rewards(scores, valid)))
    baseline = river_rewards_from_scores(scores[0], valid[0], load_env_config("river_raw_grpo"))
    np.testing.assert_array_equal(np.asarray(baseline),
                                  np.asarray(river.raw_grpo_rewards(scores[0], valid[0])))
    costs = load_env_config("river", ["river.minimize=true"])
    np.testing.assert_array_equal(np.asarray(river_rewards_from_scores(-scores, valid, costs)),
                                  np.asarray(got))
