"""Stop detection inside the loop against plain Python."""

import hypothesis.extra.numpy as hnp
import jax.numpy as jnp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.sampling.state import ends_with_stop_sequence, is_stop_token

N = 8


@given(
    hnp.arrays(np.int32, (3, N), elements=st.integers(0, 3)),
    st.integers(0, N - 1),
    st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple), max_size=3).map(tuple),
)
def test_ends_with_stop_sequence_matches_python(tokens, step, sequences):
    expected = [
        any(len(s) <= step + 1 and tuple(row[step + 1 - len(s) : step + 1]) == s for s in sequences)
        for row in tokens.tolist()
    ]
    got = ends_with_stop_sequence(jnp.asarray(tokens), jnp.int32(step), sequences)
    assert np.asarray(got).tolist() == expected


def test_is_stop_token():
    tokens = jnp.asarray([0, 5, 7, 2], jnp.int32)
    assert np.asarray(is_stop_token(tokens, (7, 2))).tolist() == [False, False, True, True]
    assert not np.asarray(is_stop_token(tokens, ())).any()
