"""`EnvConfig`: the typed, validated description of one reward environment (docs/design/rewards.md
§1-§7).

An environment turns execution records into the reward-facing signals `(c_cor, c~, g, q)` and a
reward. Every class of the paper's Table 38 (seed 000, l.1474-1494) is one point of this config:

| class (Table 38)            | correctness_kinds | optimization_kinds | filter | limit     | ranking | gates      |
|-----------------------------|-------------------|--------------------|--------|-----------|---------|------------|
| Standard RLVR               | T0                | —                  | id     | default   | none    | —          |
| MC                          | T0, T+            | —                  | id     | default   | none    | —          |
| MC + TLoc                   | T0, T+ (10 s cap) | —                  | id     | default   | none    | —          |
| MC + MO                     | T0, T+            | TO                 | id     | default   | none    | rho = 0    |
| absolute / length / relative filters | T0, T+   | TO                 | abs/len/rel | absolute | none | rho      |
| absolute / relative / ranked timeouts | T0, T+  | TO                 | id     | absolute/relative/ranked | none | rho |
| QAR / QP ranked quality     | T0, T+            | TO                 | id     | infinite  | qar/qp  | threshold p |

The composition section then picks the reward family and quality map of docs/design/rewards.md §6
(or a naive raw-duration baseline of D.5); `kind: river` environments score score-based tasks
(docs/design/rewards.md §7).

Choices made here where the paper is open (each is a config value, not a hidden constant):
* `limit.kind: infinite` is the paper's "infinite intended optimization timeouts" of the
  ranking-only classes: no post-filter and the timeout scalar is inactive (`q_to = 0`), while a
  run the service stopped at its cap is still a timeout recorded at the cap and ranked there.
  `limit.kind: default` keeps the test's own cap as intended limit, so cap timeouts count in phi.
* `correctness_limit_s` (MC + TLoc) is an intended limit on correctness tests applied by the
  same post-filter; `null` keeps each test's own cap.
* `ranking.if_unrankable`: a rollout whose used optimization tests have no usable reference
  duration has no q_QAR / q_QP. `drop` (default) gives it a NaN reward like an inconclusive
  run (dropped and counted); `neutral`, only when chosen explicitly, treats the duration gate
  and scalar as inactive for it (g_dur = 1, q_dur = 0: full speed credit however slow).
* `ranking.lost_references`: a reference that ran but whose stored duration is lost (null,
  <= 0 or not finite: a failed re-timing, a flaky node, a bad data row). `cap` (default) is
  eq. 10 (docs/design/rewards.md §1) as written: psi reads it at the cap. `drop` leaves it out of
  `D_t`, like a reference that never ran. Either way a test whose every reference duration is lost
  is counted (`Signals.lost_tests_B`), and a problem with no *measured* reference duration on a
  used test is unrankable: eq. 10 fills holes in a measured leaderboard, it cannot make one
  (all references at the cap would give every correct rollout q = 0).
* `calibration`: a YAML environment of kind `execution` must name its calibration
  (`calibration: {kind: identity}` until an affine fit exists for the fleet); a file without
  one is refused (`load_env_config`), so no environment silently uses the identity.
* Multitask: `composition.multitask_share` is the fraction of problems (prompt groups) that get
  the optimization-only reward; which ones is decided by the caller or, by default, by a fixed
  low-discrepancy rule on the problem's row in the batch (see `environment.py`).
* RiVER: `river.minimize: true` negates scores so that larger is better (docs/design/rewards.md §7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from jaxopt_rl.config import ConfigError, load_config, load_yaml, require

TestKind = Literal["T0", "T+", "TO"]
QualityMapping = Literal["binary", "bucket", "linear", "range_third", "range_half"]

# Where `load_env_config("qp_p30")` looks for `qp_p30.yaml`: the working directory's configs
# first (a user's own environments), then the configs of the checkout this package lives in.
_REPO_ENV_DIR = Path(__file__).resolve().parents[2] / "configs" / "env"
ENV_SEARCH_DIRS = (Path("configs") / "env", _REPO_ENV_DIR)


def _only_with(value: object, key: str, condition: bool, when: str) -> None:
    """A parameter must be set exactly when its kind uses it (no silently ignored knobs)."""
    if condition:
        require(value is not None, key, f"required when {when}")
    else:
        require(value is None, key, f"only used when {when}; remove it")


_REPO_CALIBRATION_DIR = Path(__file__).resolve().parents[2] / "configs" / "calibration"
CALIBRATION_SEARCH_DIRS = (Path("configs") / "calibration", _REPO_CALIBRATION_DIR)


def load_named_calibration(name: str) -> dict:
    """The stored fit `<name>.yaml` (written by `jaxopt-rl calibrate`), searched in the working
    directory's configs/calibration, then the checkout's; ConfigError naming the key if absent."""
    for directory in CALIBRATION_SEARCH_DIRS:
        path = directory / f"{name}.yaml"
        if path.is_file():
            data = load_yaml(path)
            for key in ("alpha", "beta_s"):
                require(isinstance(data.get(key), int | float), "name",
                        f"{path}: {key} missing or not a number")
            return data
    known = sorted({p.stem for d in CALIBRATION_SEARCH_DIRS if d.is_dir() for p in d.glob("*.yaml")})
    raise ConfigError(f"name: unknown calibration {name!r}; known: {', '.join(known) or 'none'} "
                      "(run `jaxopt-rl calibrate --name ...`)")


@dataclasses.dataclass(frozen=True)
class CalibrationConfig:
    """Gamma of eq. 10 (docs/design/rewards.md §1) applied to stored reference durations (never to
    the candidate).

    `affine`: d_corrected = alpha * d_stored + beta_s, fitted on the fleet that measures the
    candidates (docs/design/sandbox-timing.md §3.5; the paper's fleet gave alpha 0.6306, beta_s
    0.0529).
    """

    kind: Literal["identity", "affine"] = "identity"
    alpha: float | None = None
    beta_s: float | None = None
    # a stored fit (`jaxopt-rl calibrate`): configs/calibration/<name>.yaml gives alpha, beta_s
    name: str | None = None

    def __post_init__(self) -> None:
        if self.name is not None:
            stored = load_named_calibration(self.name)
            # a round trip (to_dict / replace) carries the resolved values: those are fine
            require(self.alpha in (None, stored["alpha"]) and self.beta_s in (None, stored["beta_s"]),
                    "name", "a named calibration brings its own alpha and beta_s; remove them")
            object.__setattr__(self, "kind", "affine")
            object.__setattr__(self, "alpha", stored["alpha"])
            object.__setattr__(self, "beta_s", stored["beta_s"])
        _only_with(self.alpha, "alpha", self.kind == "affine", "kind=affine")
        _only_with(self.beta_s, "beta_s", self.kind == "affine", "kind=affine")
        if self.kind == "affine":
            require(self.alpha > 0, "alpha", f"must be > 0, got {self.alpha}")
            require(abs(self.beta_s) < 10, "beta_s", f"must be in (-10, 10) s, got {self.beta_s}")

    @property
    def alpha_beta(self) -> tuple[float, float]:
        return (1.0, 0.0) if self.kind == "identity" else (self.alpha, self.beta_s)


@dataclasses.dataclass(frozen=True)
class FilterConfig:
    """Pre-execution filter of docs/design/rewards.md §2: which optimization tests are used."""

    kind: Literal["id", "abs", "len", "rel"] = "id"
    threshold_s: float | None = None  # abs: keep t iff dbar_t < threshold_s
    max_chars: int | None = None  # len: keep t iff len(input) + len(expected) <= max_chars
    drop_percent: float | None = None  # rel: drop the slowest drop_percent % of rankable tests
    aggregate: Literal["mean", "median"] = "mean"  # A of dbar_t = A(D_t) (abs and rel)

    def __post_init__(self) -> None:
        _only_with(self.threshold_s, "threshold_s", self.kind == "abs", "kind=abs")
        _only_with(self.max_chars, "max_chars", self.kind == "len", "kind=len")
        _only_with(self.drop_percent, "drop_percent", self.kind == "rel", "kind=rel")
        if self.threshold_s is not None:
            require(self.threshold_s > 0, "threshold_s", f"must be > 0, got {self.threshold_s}")
        if self.max_chars is not None:
            require(self.max_chars > 0, "max_chars", f"must be > 0, got {self.max_chars}")
        if self.drop_percent is not None:
            require(0 <= self.drop_percent <= 100, "drop_percent",
                    f"must be in [0, 100], got {self.drop_percent}")


@dataclasses.dataclass(frozen=True)
class LimitConfig:
    """Intended per-test limit lambda_t of docs/design/rewards.md §3, applied by post-filtering
    after execution."""

    kind: Literal["default", "absolute", "relative", "ranked", "infinite"] = "default"
    limit_s: float | None = None  # absolute: lambda_t = limit_s
    percentile: float | None = None  # relative: quantile of D_t; ranked: best p % of references
    aggregate: Literal["max", "median"] | None = None  # ranked: B over the retained references

    def __post_init__(self) -> None:
        _only_with(self.limit_s, "limit_s", self.kind == "absolute", "kind=absolute")
        _only_with(self.percentile, "percentile", self.kind in ("relative", "ranked"),
                   "kind=relative or kind=ranked")
        _only_with(self.aggregate, "aggregate", self.kind == "ranked", "kind=ranked")
        if self.limit_s is not None:
            require(self.limit_s > 0, "limit_s", f"must be > 0, got {self.limit_s}")
        if self.percentile is not None:
            require(0 < self.percentile <= 100, "percentile",
                    f"must be in (0, 100], got {self.percentile}")

    @property
    def needs_references(self) -> bool:
        return self.kind in ("relative", "ranked")


@dataclasses.dataclass(frozen=True)
class RankingConfig:
    """Post-execution ranking of docs/design/rewards.md §4: which percentile feeds q_dur and
    g_dur."""

    kind: Literal["none", "qar", "qp"] = "none"
    ties: Literal["min", "average"] = "min"
    if_unrankable: Literal["neutral", "drop"] = "drop"
    # a stored reference duration that is lost (null, <= 0 or not finite: no measurement)
    lost_references: Literal["cap", "drop"] = "cap"


@dataclasses.dataclass(frozen=True)
class GateConfig:
    """Hard optimization gates of docs/design/rewards.md §5: g = g_to(rho) * g_dur(p)."""

    timeout_tolerance: float = 1.0  # rho; 1 makes g_to a no-op
    quality_threshold: float | None = None  # p of g_dur = 1{q_dur <= p}; null: g_dur inactive

    def __post_init__(self) -> None:
        require(0 <= self.timeout_tolerance <= 1, "timeout_tolerance",
                f"must be in [0, 1], got {self.timeout_tolerance}")
        if self.quality_threshold is not None:
            require(0 <= self.quality_threshold <= 1, "quality_threshold",
                    f"must be in [0, 1] (a fraction, not a percent), got {self.quality_threshold}")


@dataclasses.dataclass(frozen=True)
class CompositionConfig:
    """Reward composition of docs/design/rewards.md §6 (or a naive raw-duration baseline of D.5)."""

    family: Literal["correctness", "optimization", "collapsed", "two_gate", "additive",
                    "multitask", "naive"] = "collapsed"
    mapping: QualityMapping = "binary"  # binary uses g; the others map q through m(q)
    multitask_share: float | None = None  # multitask: fraction of groups on the optimization reward
    naive_source: Literal["base", "opt"] | None = None  # naive: mean duration over T0 or optimization tests
    naive_map: Literal["lin", "log"] | None = None  # naive: duration map

    def __post_init__(self) -> None:
        naive = self.family == "naive"
        _only_with(self.multitask_share, "multitask_share", self.family == "multitask",
                   "family=multitask")
        _only_with(self.naive_source, "naive_source", naive, "family=naive")
        _only_with(self.naive_map, "naive_map", naive, "family=naive")
        if self.multitask_share is not None:
            require(0 <= self.multitask_share <= 1, "multitask_share",
                    f"must be in [0, 1], got {self.multitask_share}")
        if self.family in ("correctness", "naive"):
            require(self.mapping == "binary", "mapping",
                    f"family={self.family} has no quality map; leave mapping: binary")

    @property
    def graded(self) -> bool:
        return self.mapping != "binary"


@dataclasses.dataclass(frozen=True)
class RiverConfig:
    """Score-based tasks without ground truth (docs/design/rewards.md §7): RiVER or one of its
    baselines."""

    method: Literal["river", "raw_grpo", "raw_binary", "instance_norm", "rank_uniform"] = "river"
    minimize: bool = False  # true: the task's score is a cost; it is negated before ranking


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """One reward environment. Frozen and hashable: it is a static argument of the jitted path."""

    name: str
    kind: Literal["execution", "river"] = "execution"
    description: str = ""
    correctness_kinds: tuple[TestKind, ...] = ("T0", "T+")
    optimization_kinds: tuple[TestKind, ...] = ("TO",)
    service_cap_s: float = 10.0  # the sandbox cap; sanitised reference durations are clamped to it
    correctness_limit_s: float | None = None  # MC + TLoc: intended limit on correctness tests
    calibration: CalibrationConfig = dataclasses.field(default_factory=CalibrationConfig)
    filter: FilterConfig = dataclasses.field(default_factory=FilterConfig)
    limit: LimitConfig = dataclasses.field(default_factory=LimitConfig)
    ranking: RankingConfig = dataclasses.field(default_factory=RankingConfig)
    gates: GateConfig = dataclasses.field(default_factory=GateConfig)
    composition: CompositionConfig = dataclasses.field(default_factory=CompositionConfig)
    river: RiverConfig | None = None

    def __post_init__(self) -> None:
        require(bool(self.name.strip()), "name", "must not be empty")
        _only_with(self.river, "river", self.kind == "river", "kind=river")
        if self.kind == "river":
            defaults = EnvConfig(name=self.name)
            for section in ("filter", "limit", "ranking", "gates", "composition", "calibration"):
                require(getattr(self, section) == getattr(defaults, section), section,
                        "a river environment scores instances, not tests; remove this section")
            return
        self._check_test_sets()
        self._check_signals()

    def _check_test_sets(self) -> None:
        for key in ("correctness_kinds", "optimization_kinds"):
            kinds = getattr(self, key)
            require(len(set(kinds)) == len(kinds), key, f"lists a test kind twice: {list(kinds)}")
        require(len(self.correctness_kinds) > 0, "correctness_kinds",
                "needs at least one test kind (T0 for Standard RLVR)")
        both = set(self.correctness_kinds) & set(self.optimization_kinds)
        require(not both, "optimization_kinds",
                f"{sorted(both)} also in correctness_kinds; a test kind plays one role")
        require(self.service_cap_s > 0, "service_cap_s", f"must be > 0, got {self.service_cap_s}")
        if self.correctness_limit_s is not None:
            require(self.correctness_limit_s > 0, "correctness_limit_s",
                    f"must be > 0, got {self.correctness_limit_s}")

    def _check_signals(self) -> None:
        ranking, gates, comp = self.ranking.kind, self.gates, self.composition
        if not self.optimization_kinds:
            for key, unused in (("filter.kind", self.filter.kind != "id"),
                                ("limit.kind", self.limit.kind != "default"),
                                ("ranking.kind", ranking != "none"),
                                ("gates.timeout_tolerance", gates.timeout_tolerance != 1.0),
                                ("composition.naive_source", comp.naive_source == "opt")):
                require(not unused, key, "needs optimization tests, but optimization_kinds is empty")
        require(gates.quality_threshold is None or ranking != "none", "gates.quality_threshold",
                "a duration gate needs a ranking: set ranking.kind to qar or qp")
        if self.limit.kind == "infinite":
            require(gates.timeout_tolerance == 1.0, "gates.timeout_tolerance",
                    "must be 1 with limit.kind=infinite (no intended limit, no timeout gate)")
        if comp.graded:
            has_q = ranking != "none" or (self.optimization_kinds and self.limit.kind != "infinite")
            require(bool(has_q), "composition.mapping",
                    f"{comp.mapping} maps a quality q, but this environment has none: "
                    "set ranking.kind (q_dur) or use optimization tests with a finite limit (q_to)")
        if comp.family == "naive" and comp.naive_source == "base":
            require("T0" in self.correctness_kinds, "composition.naive_source",
                    "base averages T0 tests, which must be in correctness_kinds")


def resolve_env_path(name_or_path: str | Path) -> Path:
    """`qp_p30` -> `configs/env/qp_p30.yaml` (see ENV_SEARCH_DIRS); an existing path is kept."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"env config file not found: {path}")
        return path
    for directory in ENV_SEARCH_DIRS:
        candidate = directory / f"{name_or_path}.yaml"
        if candidate.is_file():
            return candidate
    known = sorted({p.stem for d in ENV_SEARCH_DIRS if d.is_dir() for p in d.glob("*.yaml")})
    raise ConfigError(f"unknown environment {str(name_or_path)!r}; known: {', '.join(known)}")


def load_env_config(name_or_path: str | Path, overrides: Sequence[str] = ()) -> EnvConfig:
    """Load an environment by name (`qp_p30`) or YAML path, applying `key=value` overrides."""
    path = resolve_env_path(name_or_path)
    try:
        env = load_config(EnvConfig, path, overrides)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    if env.kind == "execution":
        _require_stated_calibration(path, overrides)
    return env


def _require_stated_calibration(path: Path, overrides: Sequence[str]) -> None:
    if any(o.split("=", 1)[0].strip() == "calibration.kind" for o in overrides):
        return
    data = load_yaml(path)
    section = data.get("calibration") if isinstance(data, dict) else None
    if not isinstance(section, dict) or "kind" not in section:
        raise ConfigError(f"{path}: calibration: required: name the calibration of the stored "
                          "reference durations explicitly (calibration: {kind: identity} until "
                          "an affine fit exists for the fleet, or kind: affine with alpha, "
                          "beta_s)")


def available_envs() -> list[str]:
    """Names of the shipped environments."""
    return sorted(p.stem for p in _REPO_ENV_DIR.glob("*.yaml"))
