"""Expected outputs by agreement: token comparison, groups, ambiguity, normalisation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.data.builder.campaigns import consensus, normalise_output, outputs_agree


def test_token_comparison():
    assert outputs_agree("1 2\n3\n", "1  2 3")
    assert not outputs_agree("1 2", "1 2 3")
    assert not outputs_agree("0.1000001", "0.1")
    assert outputs_agree("0.1000001", "0.1", tolerance=1e-6)
    assert outputs_agree("1000000.5", "1000000.0", tolerance=1e-6)  # relative for large values
    assert not outputs_agree("abc", "abd", tolerance=1.0)


def test_consensus_picks_the_largest_group_and_its_first_member():
    a, b = ["1\n", "2\n"], ["1\n", "3\n"]
    assert consensus([a, b, b, None, a, b], 2, None) == (1, "")
    assert consensus([a, None, a], 2, None) == (0, "")


def test_consensus_rejections():
    a, b = ["1\n"], ["2\n"]
    assert consensus([None, None], 2, None)[1] == "no reference finished every input"
    assert "largest agreeing group 1 < 2" in consensus([a, b], 2, None)[1]
    assert consensus([a, b, a, b], 2, None) == (None, "ambiguous: two agreeing groups of 2")


def test_normalisation():
    assert normalise_output("1 2  \r\n3\n\n\n") == "1 2\n3\n"
    assert normalise_output("") == "" and normalise_output("\n\n") == ""
    assert normalise_output("x") == "x\n"


@given(st.text(alphabet=" \n\tab1.", max_size=30))
def test_normalised_output_agrees_with_the_raw_one(text):
    assert outputs_agree(normalise_output(text), text)
    assert normalise_output(normalise_output(text)) == normalise_output(text)
