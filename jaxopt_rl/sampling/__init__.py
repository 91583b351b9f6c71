"""Jitted sampling: a prefill plus `lax.while_loop` decoding over a KV cache grown in segments.

    batch = generate(model, prompts, max_new_tokens=256, temperature=1.0, stop_tokens=tok.eos_ids)
    batch.tokens, batch.logprobs, batch.model_logprobs, batch.lengths, batch.finished

    batch = generate(model, prompts, 256, stop_tokens=..., group_size=16, scheme="compact")

Three schemes sample a GRPO group of G rows per prompt (rows ``p * G + g``; `generate`'s
`scheme`, the rollout config's `sampler`), all with the same rows and draws: the static sampler
on each prompt repeated G times (*static*: every row decodes until the longest stops), or one
prefill per prompt and no decoding of stopped rows, by compaction whenever half the batch has
stopped (*compact*, `compact.py`, the rollout default) or by continuous batching (*slots*,
`slots.py`).
`logprobs` are under the sampling distribution, `model_logprobs` under the raw model at
temperature 1 (what GRPO's ratio needs). Host work (padding, the compact scheme's calls between
segments, unpadding) lives in `host.py`; the static sampler's jit boundary and the pieces
the compact scheme reuses in `loop.py`; the carried state in `state.py`; the sampling methods in
`methods.py`.
"""

from jaxopt_rl.sampling.host import SampleBatch, generate, left_pad
from jaxopt_rl.sampling.methods import Greedy, Temperature, TopK, TopP, method_from_arguments

__all__ = [
    "Greedy",
    "SampleBatch",
    "Temperature",
    "TopK",
    "TopP",
    "generate",
    "left_pad",
    "method_from_arguments",
]
