"""docs/config.md is generated from the config dataclasses and must be current."""

from pathlib import Path

from jaxopt_rl.config_docs import render

PAGE = Path(__file__).resolve().parents[1] / "docs" / "config.md"


def test_config_reference_is_current():
    assert PAGE.read_text() == render(), (
        "docs/config.md is stale: run `python -m jaxopt_rl.config_docs > docs/config.md`")


def test_reference_lists_every_section_and_the_overrides_users_reach_for():
    page = render()
    for key in ("`output_dir`", "`steps`", "`rollout.group_size`", "`grpo.horizon`",
                "`loop.mode`", "`checkpoint.every`", "`distributed.mode`", "`model.rms_norm_eps`",
                "`ranking.kind`", "`composition.family`"):
        assert key in page, key
