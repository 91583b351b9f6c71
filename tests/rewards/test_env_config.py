"""EnvConfig: every Table 38 class is expressible, bad values name their key, configs resolve by name."""

import dataclasses

import pytest

from jaxopt_rl.config import ConfigError, from_dict
from jaxopt_rl.rewards.env_config import (
    EnvConfig,
    available_envs,
    load_env_config,
    resolve_env_path,
)

QP = {"name": "x", "limit": {"kind": "infinite"}, "ranking": {"kind": "qp"},
      "gates": {"quality_threshold": 0.3}}


def make(**sections):
    return from_dict(EnvConfig, {"name": "x", **sections})


def test_defaults_are_an_mc_mo_like_collapsed_binary_env():
    env = make()
    assert env.kind == "execution"
    assert env.correctness_kinds == ("T0", "T+") and env.optimization_kinds == ("TO",)
    assert (env.filter.kind, env.limit.kind, env.ranking.kind) == ("id", "default", "none")
    assert (env.composition.family, env.composition.mapping) == ("collapsed", "binary")
    assert env.gates.timeout_tolerance == 1.0 and env.gates.quality_threshold is None


def test_every_environment_class_of_table_38_is_expressible():
    classes = [
        {"correctness_kinds": ["T0"], "optimization_kinds": []},
        {"optimization_kinds": []},
        {"optimization_kinds": [], "correctness_limit_s": 10},
        {"gates": {"timeout_tolerance": 0}},
        {"filter": {"kind": "abs", "threshold_s": 2}, "limit": {"kind": "absolute", "limit_s": 0.5},
         "gates": {"timeout_tolerance": 0.1}},
        {"filter": {"kind": "len", "max_chars": 1000}, "limit": {"kind": "absolute", "limit_s": 1}},
        {"filter": {"kind": "rel", "drop_percent": 20, "aggregate": "median"},
         "limit": {"kind": "absolute", "limit_s": 1}},
        {"limit": {"kind": "relative", "percentile": 50}},
        {"limit": {"kind": "ranked", "percentile": 80, "aggregate": "max"}},
        {"limit": {"kind": "ranked", "percentile": 20, "aggregate": "median"}},
        {"limit": {"kind": "infinite"}, "ranking": {"kind": "qar", "ties": "average"},
         "gates": {"quality_threshold": 0.5}},
        {key: value for key, value in QP.items() if key != "name"},
    ]
    for sections in classes:
        env = make(**sections)
        hash(env)  # a static jit argument must be hashable


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"filter": {"kind": "abs"}}, "filter.threshold_s: required when kind=abs"),
        ({"filter": {"kind": "abs", "threshold_s": 0}}, "filter.threshold_s: must be > 0"),
        ({"filter": {"threshold_s": 2}}, "filter.threshold_s: only used when kind=abs"),
        ({"filter": {"kind": "rel", "drop_percent": 120}}, "filter.drop_percent: must be in"),
        ({"filter": {"kind": "len", "max_chars": 1.5}}, "filter.max_chars: expected an integer"),
        ({"limit": {"kind": "ranked", "percentile": 80}}, "limit.aggregate: required"),
        ({"limit": {"kind": "relative", "percentile": 0}}, "limit.percentile: must be in"),
        ({"limit": {"kind": "absolute", "limit_s": -1}}, "limit.limit_s: must be > 0"),
        ({"gates": {"quality_threshold": 30}}, "gates.quality_threshold: must be in \\[0, 1\\]"),
        ({"gates": {"timeout_tolerance": 1.5}}, "gates.timeout_tolerance: must be in"),
        ({"gates": {"quality_threshold": 0.3}}, "gates.quality_threshold: a duration gate needs"),
        ({"limit": {"kind": "infinite"}, "gates": {"timeout_tolerance": 0.1}},
         "gates.timeout_tolerance: must be 1 with limit.kind=infinite"),
        ({"composition": {"mapping": "linear"}, "limit": {"kind": "infinite"}},
         "composition.mapping: linear maps a quality q"),
        ({"composition": {"family": "correctness", "mapping": "bucket"}},
         "composition.mapping: family=correctness has no quality map"),
        ({"composition": {"family": "multitask"}}, "composition.multitask_share: required"),
        ({"composition": {"family": "naive", "naive_source": "opt"}},
         "composition.naive_map: required"),
        ({"composition": {"naive_map": "log"}}, "composition.naive_map: only used when"),
        ({"optimization_kinds": [], "ranking": {"kind": "qp"}},
         "ranking.kind: needs optimization tests"),
        ({"correctness_kinds": ["T0", "TO"]}, "optimization_kinds: \\['TO'\\] also in"),
        ({"correctness_kinds": []}, "correctness_kinds: needs at least one"),
        ({"correctness_kinds": ["T1"]}, "correctness_kinds\\[0\\]: 'T1' is not one of"),
        ({"calibration": {"alpha": 0.6}}, "calibration.alpha: only used when kind=affine"),
        ({"calibration": {"kind": "affine", "alpha": 0.6}}, "calibration.beta_s: required"),
        ({"calibration": {"kind": "affine", "alpha": -1, "beta_s": 0}},
         "calibration.alpha: must be > 0"),
        ({"ranking": {"ties": "max"}}, "ranking.ties: 'max' is not one of"),
        ({"kind": "river"}, "river: required when kind=river"),
        ({"river": {"method": "river"}}, "river: only used when kind=river"),
        ({"kind": "river", "river": {}, "ranking": {"kind": "qp"}}, "ranking: a river environment"),
        ({"name": " "}, "name: must not be empty"),
        ({"filtre": {}}, "filtre: unknown key; did you mean filter"),
    ],
)
def test_validation_names_the_key(data, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(EnvConfig, {"name": "x", **data})


def test_load_by_name_by_path_and_with_overrides(tmp_path):
    env = load_env_config("qp_p30")
    assert env.name == "qp_p30" and env.ranking.kind == "qp" and env.gates.quality_threshold == 0.3
    assert load_env_config(resolve_env_path("qp_p30")) == env
    changed = load_env_config("qp_p30", ["gates.quality_threshold=0.5", "ranking.ties=average"])
    assert changed == dataclasses.replace(
        env, gates=dataclasses.replace(env.gates, quality_threshold=0.5),
        ranking=dataclasses.replace(env.ranking, ties="average"))
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\noptimization_kinds: []\ncalibration: {kind: identity}\n")
    assert load_env_config(own).optimization_kinds == ()


def test_load_errors_name_the_file_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown environment 'nope'; known: .*qp_p30"):
        load_env_config("nope")
    with pytest.raises(ConfigError, match="env config file not found"):
        load_env_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=r"qp_p30.yaml: gates.quality_threshold: must be in"):
        load_env_config("qp_p30", ["gates.quality_threshold=50"])


def test_available_envs_lists_the_retained_settings():
    names = set(available_envs())
    assert {"standard_rlvr", "mc", "mc_tloc", "mc_mo", "abs_2s", "rw_p80", "qp_p50", "qp_p30",
            "qar_p30", "two_gate_linear", "additive", "naive_opt_log", "river"} <= names
