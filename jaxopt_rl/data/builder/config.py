"""`BuildConfig`: every knob and threshold of `jaxopt-rl data build` (docs/design/dataset-eval.md
§2).

Defaults are the paper's (Tables 10-13; the filterability threshold of
docs/design/dataset-eval.md §3); `configs/data/*.yaml` override them. Sections follow
the stage order. Loaded with `jaxopt_rl.config.load_config(BuildConfig, path, overrides)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from jaxopt_rl.config import require


@dataclass(frozen=True)
class SourceConfig:
    kind: Literal["mini", "codecontests", "jsonl"] = "mini"
    # mini: the sources folder (empty = the packaged jaxopt_rl/data/mini/sources);
    # codecontests: Parquet shards (files or folders); jsonl: problems in our schema, one a line.
    paths: tuple[str, ...] = ()
    problem_ids: tuple[str, ...] = ()  # keep only these (empty = all)
    max_problems: int | None = None  # first N by id after `problem_ids`
    # codecontests: extra generator sources, `<dir>/<problem_id>/*.py` (e.g. LLM-written offline)
    generators_dir: str = ""

    def __post_init__(self) -> None:
        require(self.kind == "mini" or bool(self.paths), "paths", f"{self.kind} needs paths")
        require(self.max_problems is None or self.max_problems > 0, "max_problems", "must be > 0")


@dataclass(frozen=True)
class SandboxConfig:
    urls: tuple[str, ...] = ()  # empty = embedded pool (sandbox_cluster.connect())
    problem_workers: int = 4  # problems processed at once
    max_in_flight: int = 16  # sandbox runs in flight at once, all problems together
    retries: int = 2  # immediate retries of an inconclusive run
    time_cap_s: float = 10.0  # service cap; a problem's own limit applies when lower
    memory_mb: int = 1024

    def __post_init__(self) -> None:
        require(self.problem_workers >= 1, "problem_workers", "must be >= 1")
        require(self.max_in_flight >= 1, "max_in_flight", "must be >= 1")
        require(self.retries >= 0, "retries", "must be >= 0")
        require(0 < self.time_cap_s <= 600, "time_cap_s", "must be in (0, 600]")


@dataclass(frozen=True)
class DecontaminationConfig:
    # Files of statements to decontaminate against: .jsonl (a `statement` field per line),
    # .txt (statements separated by lines of '---') or folders of .md/.txt files.
    statements: tuple[str, ...] = ()
    ngram: int = 8  # word n-gram shingles
    threshold: float = 0.5  # overlap / min(#shingles) at or above which a problem is removed
    min_statement_chars: int = 40  # structural statement-quality check (no LLM here)

    def __post_init__(self) -> None:
        require(self.ngram >= 1, "ngram", "must be >= 1")
        require(0 < self.threshold <= 1, "threshold", "must be in (0, 1]")


@dataclass(frozen=True)
class SolutionTypesConfig:
    min_correct: int = 1
    min_incorrect: int = 1
    max_correct: int = 64  # kept per problem (a deterministic seeded sample)
    max_incorrect: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        require(self.min_correct >= 1, "min_correct", "must be >= 1")
        require(self.max_correct >= self.min_correct, "max_correct", "must be >= min_correct")
        require(self.max_incorrect >= self.min_incorrect, "max_incorrect", "must be >= min_incorrect")


@dataclass(frozen=True)
class ValidationConfig:
    min_verified_correct: int = 1
    min_incorrect: int = 1


@dataclass(frozen=True)
class CampaignConfig:
    """One test-generation campaign (Table 11): attempts x rounds x schedule calls."""

    schedule: tuple[str, ...] = ("edge", "small", "sample")
    attempts: int = 10
    rounds: int = 5  # the schedule is repeated `rounds` times: 3 x 5 = 15 calls per attempt
    verification_pool: int = 10  # verified-correct solutions run on each attempt's inputs
    min_agree: int = 2  # solutions that must produce the same whole output list
    dedupe_inputs: bool = True  # drop an input equal to one already accepted for the problem
    max_test_chars: int | None = None  # drop inputs+outputs longer than this (size budget)
    generator_time_s: float = 10.0

    def __post_init__(self) -> None:
        require(len(self.schedule) > 0, "schedule", "must not be empty")
        for method in self.schedule:
            require(method in ("edge", "small", "sample", "large"), "schedule", f"bad method {method!r}")
        require(self.attempts >= 1, "attempts", "must be >= 1")
        require(self.rounds >= 1, "rounds", "must be >= 1")
        require(self.min_agree >= 1, "min_agree", "must be >= 1")
        require(self.verification_pool >= self.min_agree, "verification_pool", "must be >= min_agree")


@dataclass(frozen=True)
class FilterConfig:
    """One filtering round (Table 13)."""

    timeout_fraction: float = 0.2  # remove a test if MORE than this share of correct sols time out
    timeout_cap: float = 0.25  # ... removing at most this share of the generated tests
    failure_fraction: float = 0.4  # remove if more than this share fail (syntax errors excluded)
    failure_cap: float = 0.30  # ... at most this share of the remaining generated tests
    timeout_is_success: bool = False  # optimization round: a timeout is a duration outcome
    min_correct: int = 5
    min_incorrect: int = 1
    max_correct_drop: float = 0.25
    max_false_positive: float | None = 0.05  # strict `<`; None = gate off

    def __post_init__(self) -> None:
        for name in ("timeout_fraction", "timeout_cap", "failure_fraction", "failure_cap",
                     "max_correct_drop"):
            require(0 <= getattr(self, name) <= 1, name, "must be in [0, 1]")
        require(self.min_correct >= 1, "min_correct", "must be >= 1")


@dataclass(frozen=True)
class OptimizationCampaignConfig(CampaignConfig):
    """The TO campaign: same knobs, large inputs in the schedule (a partial YAML section keeps
    these defaults, which a shared class with a factory default would lose)."""

    schedule: tuple[str, ...] = ("edge", "large", "sample")


@dataclass(frozen=True)
class OptimizationFilterConfig(FilterConfig):
    """Table 13, optimization round: relaxed timeouts, timeouts pass, FP gate off."""

    timeout_fraction: float = 0.9
    timeout_is_success: bool = True
    min_correct: int = 1
    max_false_positive: float | None = None


@dataclass(frozen=True)
class DurationsConfig:
    kinds: tuple[str, ...] = ("TO",)  # test kinds whose reference durations are traced
    repeats: int = 1  # sandbox Limits.repeats (min over k runs per test)
    max_in_flight: int = 4  # lower than the build's: timing wants a quiet machine
    campaign_id: str = "build"

    def __post_init__(self) -> None:
        require("TO" in self.kinds, "kinds", "must include TO (filterability is measured on it)")
        for kind in self.kinds:
            require(kind in ("T0", "T+", "TO"), "kinds", f"bad kind {kind!r}")
        require(self.repeats >= 1, "repeats", "must be >= 1")


@dataclass(frozen=True)
class FilterabilityConfig:
    threshold: float = 0.3  # robust CV = IQR / median of per-test mean duration on TO
    aggregate: Literal["mean", "median"] = "mean"


@dataclass(frozen=True)
class SplitConfig:
    seed: int = 42
    test_fraction: float = 0.25  # of the duration-filterable pool; non-filterable -> "complement"

    def __post_init__(self) -> None:
        require(0 <= self.test_fraction <= 1, "test_fraction", "must be in [0, 1]")


@dataclass(frozen=True)
class ExportConfig:
    # full: every kept solution, all test kinds, all durations; light (docs/design/dataset-eval.md
    # §8 item 3): one verified correct + one negative control per problem and no TO tests.
    variant: Literal["full", "light"] = "full"
    include_incorrect: bool = True  # False: drop the negatives (an RL-training-only artifact)
    name: str = "dmc-optim"
    # Generated tests with len(input) + len(expected) above this are stored as recipes
    # (generator seed + reference solution + SHA-256 digests) and rebuilt by
    # `jaxopt-rl data materialize`; None stores every test inline.
    inline_max_chars: int | None = None

    def __post_init__(self) -> None:
        require(self.inline_max_chars is None or self.inline_max_chars >= 0, "inline_max_chars",
                "must be >= 0 or null")


@dataclass(frozen=True)
class BuildConfig:
    output_dir: str = "runs/data/dmc-optim"
    work_dir: str = ""  # checkpoints; empty = <output_dir>.work
    source: SourceConfig = field(default_factory=SourceConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    solution_types: SolutionTypesConfig = field(default_factory=SolutionTypesConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    correctness_campaign: CampaignConfig = field(default_factory=CampaignConfig)
    correctness_filter: FilterConfig = field(default_factory=FilterConfig)
    optimization_campaign: OptimizationCampaignConfig = field(
        default_factory=OptimizationCampaignConfig)
    optimization_filter: OptimizationFilterConfig = field(default_factory=OptimizationFilterConfig)
    durations: DurationsConfig = field(default_factory=DurationsConfig)
    filterability: FilterabilityConfig = field(default_factory=FilterabilityConfig)
    split: SplitConfig = field(default_factory=SplitConfig)
    export: ExportConfig = field(default_factory=ExportConfig)

    def __post_init__(self) -> None:
        require(bool(self.output_dir), "output_dir", "must not be empty")
