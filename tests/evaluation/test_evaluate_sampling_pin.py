"""Evaluation's draws pinned across the move of its sampler onto the rollout worker's.

The digests were recorded from `evaluate.sample_programs` BEFORE it called the worker's sample
path (its own `generate_groups` loop): the token ids each problem's n completions drew, for a
seed, with whole problems per call and a short last call padded with copies. A digest that
moves means evaluation draws other completions than before for the same seed, so a dump
sampled before and one sampled after would no longer be the same experiment.

The tokenizer decodes a completion to its token ids and the program extraction keeps the
whole text, so the digest covers every drawn token, not only the (here absent) programs.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from jaxopt_rl.data.mini import load_mini
from jaxopt_rl.evaluation import evaluate as ev

# sha256 of json.dumps(programs, sort_keys=True), programs = {problem id: [token ids, ...]};
# recorded on CPU (JAX_PLATFORMS=cpu) from the pre-change sampler
PINNED = {
    "three_problems_n3_padded":
        "0823a068ba80c5b5cc1c0573496d4fd95156c316d33c5cf8da266bb286f78d47",
    "three_problems_n1_custom_template":
        "88ec6042be52b8fe39b59f7336e3cc4ff6f24f8b24f482cbc1164bd93a3c4d1c",
}
CASES = {
    # batch_size 6, n 3: two problems per call, the second call padded with a copy
    "three_problems_n3_padded": dict(n=3, batch_size=6, seed=5, template=None),
    # n 1 (pass@1 evaluation): two problems per call, again a padded last call
    "three_problems_n1_custom_template": dict(n=1, batch_size=2, seed=11, template="custom"),
}
PROBLEMS = ["mini-011", "mini-012", "mini-014"]


class TokenIdTokenizer:
    """The project's tokenizer, except that a completion decodes to its token ids."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def decode_batch(self, batch, **_):
        return [" ".join(str(int(i)) for i in ids) for ids in batch]


@pytest.fixture(scope="module")
def model_and_tokenizer():
    from jaxopt_rl.model import init_model
    from jaxopt_rl.model.testing import tiny_test_config
    from jaxopt_rl.model.tokenizer import Tokenizer

    tokenizer = Tokenizer.default()
    model = init_model(tiny_test_config("qwen2", vocab_size=tokenizer.vocab_size), seed=1)
    return model, TokenIdTokenizer(tokenizer)


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluation_draws_are_pinned(case, model_and_tokenizer, monkeypatch):
    import jaxopt_rl.rollouts.worker as worker
    from jaxopt_rl.model import prompt

    for module in (prompt, worker):  # keep every completion whole
        monkeypatch.setattr(module, "extract_program", lambda text: text)
    model, tokenizer = model_and_tokenizer
    options = dict(CASES[case])
    if options["template"] == "custom":
        options["template"] = prompt.PromptTemplate(system="", instruction="Write it.",
                                                    problem_text="title")
    n = options.pop("n")
    programs = ev.sample_programs(model, tokenizer, load_mini(), PROBLEMS, n,
                                  max_new_tokens=12, **options)
    assert list(programs) == PROBLEMS and all(len(p) == n for p in programs.values())
    assert all(p and all(t.isdigit() for t in p.split()) for ps in programs.values()
               for p in ps)
    digest = hashlib.sha256(json.dumps(programs, sort_keys=True).encode()).hexdigest()
    assert digest == PINNED[case]
