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


def test_a_field_is_explained_by_the_comment_beside_it_or_else_the_lines_above_it():
    import dataclasses

    from jaxopt_rl.config_docs import _comments

    @dataclasses.dataclass
    class Sample:
        beside: int = 1  # said beside
        # said above,
        # on two lines
        above: int = 2
        bare: int = 3
        both: int = 4  # beside wins
        #   a continuation of both, not a note for what follows

        def method(self) -> None:
            pass

    assert _comments(Sample) == {"beside": "said beside", "above": "said above, on two lines",
                                 "both": "beside wins"}
