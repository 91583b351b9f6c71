"""Test doubles for code that needs a model: very small configurations of each family that
compile in a second or two on CPU (for the trainer's, the sampler's and the evaluation's tests).

    model = init_model(tiny_test_config("qwen3"), seed=0)
"""

from __future__ import annotations

from typing import Any

from jaxopt_rl.model.config import ModelConfig, RopeScaling


def tiny_test_config(family: str = "qwen2", **overrides: Any) -> ModelConfig:
    """2 layers, width 64, 4 query / 2 key-value heads, vocabulary 128, float32.

    Llama gets "llama3" RoPE scaling with a short original context, so the scaling actually
    changes the frequencies of a 16-wide head; the init scale is large enough that logits vary.
    """
    fields: dict[str, Any] = dict(
        family=family,
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=family != "llama",
        initializer_range=0.2,
        eos_token_ids=(2,),
        pad_token_id=0,
        bos_token_id=1,
    )
    if family == "llama":
        fields.update(
            rope_theta=500000.0,
            rope_scaling=RopeScaling(
                factor=8.0,
                low_freq_factor=1.0,
                high_freq_factor=4.0,
                original_max_position_embeddings=32,
            ),
        )
    fields.update(overrides)
    return ModelConfig(**fields)
