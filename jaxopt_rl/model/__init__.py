"""Flax NNX decoder (Qwen2/Qwen3/Llama 3), checkpoint import/export, tokenizer, partition rules."""
