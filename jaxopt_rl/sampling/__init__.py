"""Jitted sampling: prefill + `lax.while_loop` decode over a preallocated KV cache."""
