"""The project's one table of dimension letters: the shape suffixes of array names.

An array's name ends in one capital letter per axis, outermost first: `status_BT` is
`[rollouts, tests]`, `tokens_BL` is `[rollouts, token positions]`, `ref_duration_PTH` is
`[problems, tests, references]`. A digit `1` marks a broadcast axis of size one. Every letter
means one thing everywhere, so the trainer can hold `tokens_BL` beside `status_BT` without a
comment; a module docstring lists the letters it uses and never redefines one. The README
carries the same table, and `tests/test_dimensions.py` checks that both agree and that every
suffix in the package uses only these letters.

| letter | axis |
|---|---|
| B | rollouts (rows) of a batch; `B = P·G` in the grouped layout |
| P | problems (prompts) |
| G | rollouts (samples, solvers) per problem |
| T | tests of a problem |
| H | reference solutions of a problem |
| M | hidden instances of a score-based task |
| L | token positions: a prompt, a completion or a packed row |
| O | new tokens of the sampler (the `max_new_tokens` budget) |
| Z | tokens of one stop sequence |
| S | key/value-cache slots |
| V | vocabulary |
| D | model width |
| F | MLP width |
| Q | query heads |
| K | key/value heads |
| J | query heads per key/value head (`Q = K·J`) |
| E | head width |
| W | rotary frequencies (`E / 2`) |
| R | packed rows of a train batch |
| U | microbatches of a train step |
| C | environment configurations of a simulator grid |
| X | steps (quality bands) of a simulated pass-rate curve |
| Y | rows of a record file or column set (one execution or reference row each) |
| I | decode slots of the continuous-batching sampler (`sampling/slots.py`) |
| A | any axis of a generic helper (what it holds is up to the caller) |

Not dimensions: `N` is the loss's fixed token horizon (a number, never an axis), `k` in pass@k.
"""

from __future__ import annotations

DIMENSIONS: dict[str, str] = {
    "B": "rollouts (rows) of a batch; B = P·G in the grouped layout",
    "P": "problems (prompts)",
    "G": "rollouts (samples, solvers) per problem",
    "T": "tests of a problem",
    "H": "reference solutions of a problem",
    "M": "hidden instances of a score-based task",
    "L": "token positions: a prompt, a completion or a packed row",
    "O": "new tokens of the sampler (the max_new_tokens budget)",
    "Z": "tokens of one stop sequence",
    "S": "key/value-cache slots",
    "V": "vocabulary",
    "D": "model width",
    "F": "MLP width",
    "Q": "query heads",
    "K": "key/value heads",
    "J": "query heads per key/value head (Q = K·J)",
    "E": "head width",
    "W": "rotary frequencies (E / 2)",
    "R": "packed rows of a train batch",
    "U": "microbatches of a train step",
    "C": "environment configurations of a simulator grid",
    "X": "steps (quality bands) of a simulated pass-rate curve",
    "Y": "rows of a record file or column set (one execution or reference row each)",
    "I": "decode slots of the continuous-batching sampler (sampling/slots.py)",
    "A": "any axis of a generic helper (what it holds is up to the caller)",
}
