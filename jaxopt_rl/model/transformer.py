"""`Transformer`: the decoder-only language model, its KV cache, and sharded initialisation.

Dimension letters (`jaxopt_rl.dimensions`): B batch rows, L tokens fed in this call, S cache slots,
D model width, V vocabulary, K key/value heads, E head width.

Two entry points share one layer stack:

* ``model(input_ids_BL, positions_BL=None, segment_ids_BL=None) -> logits_BLV``: a full forward
  pass. Without `segment_ids` it is plain causal attention; with them (packed rows, as the GRPO
  trainer builds) a token attends only to earlier tokens of its own segment, and segment 0 is
  padding. Pass per-segment `positions` when packing. The config's execution fields choose the
  attention kernel, each layer's rematerialisation policy and whether the stack runs as one
  `lax.scan` (the layers' parameters stacked on a leading axis at trace time: the stored layout
  stays one module per layer, which Hugging Face checkpoints, Orbax checkpoints and the decode
  path use as they are).
* ``model.decode(input_ids_BL, cache) -> (logits_BLV, cache)``: the sampler's path. The cache
  holds ``S`` slots per row; a batch of prompts is **left padded** so that every row writes the
  same slot at each step, and ``cache.start_B`` (each row's number of left pads) both masks the
  pads out and shifts the RoPE positions, so a padded row computes exactly what it would alone.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx, struct
from jax.sharding import Mesh

from jaxopt_rl.model import partitioning
from jaxopt_rl.model.config import ModelConfig
from jaxopt_rl.model.layers import DecoderLayer, LayerKV, RMSNorm

# [B, L, D] between layers: rows over the batch axes, tokens over the tensor axis
_ACTIVATION_AXES = ("batch", "activation_length", None)


@struct.dataclass
class KVCache:
    """Keys and values of every layer (after RoPE) for `S` slots per row.

    `length` slots are filled: the same for all rows (a scalar, the static sampler's left-padded
    batch) or one count per row (``[B]``, the continuous sampler's slots, each at its own step).
    Row ``b``'s real tokens start at slot ``start_B[b]`` and sit at RoPE position
    ``slot - start_B[b]``.
    """

    keys: tuple[jax.Array, ...]  # per layer, [B, K, S, E]
    values: tuple[jax.Array, ...]  # per layer, [B, K, S, E]
    length: jax.Array  # int32 [] or [B]
    start_B: jax.Array  # int32 [B]

    @classmethod
    def empty(cls, config: ModelConfig, start_B: jax.Array, num_slots: int) -> KVCache:
        shape = (start_B.shape[0], config.num_kv_heads, num_slots, config.head_dim)
        dtype = jnp.dtype(config.compute_dtype)
        keys = tuple(jnp.zeros(shape, dtype) for _ in range(config.num_layers))
        values = tuple(jnp.zeros(shape, dtype) for _ in range(config.num_layers))
        return cls(keys, values, jnp.zeros((), jnp.int32), start_B.astype(jnp.int32))

    @property
    def num_slots(self) -> int:
        return self.keys[0].shape[2]

    def grow(self, num_slots: int) -> KVCache:
        """The same cache with empty slots appended up to `num_slots` (a copy of every array).

        Attention reads every slot of the cache on every step, so a sampler that fills it
        gradually can start small and grow it between decode loops."""
        extra = num_slots - self.num_slots
        if extra < 0:
            raise ValueError(f"cannot shrink a KV cache from {self.num_slots} to {num_slots} slots")
        if extra == 0:
            return self
        pad = ((0, 0), (0, 0), (0, extra), (0, 0))
        return self.replace(
            keys=tuple(jnp.pad(k_BKSE, pad) for k_BKSE in self.keys),
            values=tuple(jnp.pad(v_BKSE, pad) for v_BKSE in self.values),
        )


class Transformer(nnx.Module):
    """Qwen2 / Qwen3 / Llama 3 decoder (see `ModelConfig`); parameter paths mirror Hugging Face."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        if not config.execution_resolved:  # callers that know the target resolve it first
            config = config.for_platform(jax.default_backend())
        self.config = config
        self.embed_tokens = nnx.Embed(
            config.vocab_size,
            config.hidden_size,
            dtype=jnp.dtype(config.compute_dtype),
            param_dtype=jnp.dtype(config.param_dtype),
            embedding_init=jax.nn.initializers.normal(stddev=config.initializer_range),
            rngs=rngs,
        )
        self.layers = nnx.List([DecoderLayer(config, rngs=rngs) for _ in range(config.num_layers)])
        self.norm = RMSNorm(
            config.hidden_size,
            config.rms_norm_eps,
            param_dtype=config.param_dtype,
            compute_dtype=config.compute_dtype,
        )
        if config.tie_word_embeddings:
            self.lm_head = None
        else:
            self.lm_head = nnx.Linear(
                config.hidden_size,
                config.vocab_size,
                use_bias=False,
                dtype=jnp.dtype(config.compute_dtype),
                param_dtype=jnp.dtype(config.param_dtype),
                kernel_init=jax.nn.initializers.normal(stddev=config.initializer_range),
                rngs=rngs,
            )

    def __call__(
        self,
        input_ids_BL: jax.Array,
        positions_BL: jax.Array | None = None,
        segment_ids_BL: jax.Array | None = None,
    ) -> jax.Array:
        """Logits `[B, L, V]` of a full (uncached) forward pass."""
        return self.logits(self.hidden_states(input_ids_BL, positions_BL, segment_ids_BL))

    def hidden_states(
        self,
        input_ids_BL: jax.Array,
        positions_BL: jax.Array | None = None,
        segment_ids_BL: jax.Array | None = None,
    ) -> jax.Array:
        """Final-norm hidden states `[B, L, D]` (for losses that project to logits in chunks)."""
        batch, tokens = input_ids_BL.shape
        if positions_BL is None:
            positions_BL = jnp.broadcast_to(jnp.arange(tokens, dtype=jnp.int32), (batch, tokens))
        if segment_ids_BL is None:
            segment_ids_BL = jnp.ones((batch, tokens), jnp.int32)
        x_BLD = self.embed_tokens(input_ids_BL)
        graphdef, _ = nnx.split(self.layers[0])
        scan = self.config.scan_layers

        def run_layer(x_BLD, layer_state):
            layer = nnx.merge(graphdef, layer_state)
            x_BLD, _ = layer(x_BLD, positions_BL, segment_ids_BL=segment_ids_BL)
            # a loop carry's layout is pinned (`_ACTIVATION_AXES`): sharding propagation
            # through a loop body is not reliable; the unrolled stack needs no help
            return partitioning.constrain(x_BLD, _ACTIVATION_AXES) if scan else x_BLD

        if self.config.remat != "none":
            policy = getattr(jax.checkpoint_policies, self.config.remat)
            # CSE could merge the recomputation back into the forward pass of an unrolled stack;
            # a scan body is safe without the barrier that prevents it
            run_layer = jax.checkpoint(run_layer, policy=policy, prevent_cse=not scan)
        states = [nnx.state(layer) for layer in self.layers]
        if scan:
            stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)
            x_BLD = partitioning.constrain(x_BLD, _ACTIVATION_AXES)
            x_BLD, _ = jax.lax.scan(lambda x, state: (run_layer(x, state), None), x_BLD, stacked)
        else:
            for state in states:
                x_BLD = run_layer(x_BLD, state)
        return self.norm(x_BLD)

    def logits(self, hidden_BLD: jax.Array) -> jax.Array:
        """Project hidden states to vocabulary logits (the tied embedding or `lm_head`)."""
        if self.lm_head is None:
            return self.embed_tokens.attend(hidden_BLD)
        return self.lm_head(hidden_BLD)

    def decode(self, input_ids_BL: jax.Array, cache: KVCache) -> tuple[jax.Array, KVCache]:
        """Feed `L` more tokens per row into the cache; returns their logits and the new cache."""
        hidden_BLD, cache = self.decode_hidden(input_ids_BL, cache)
        return self.logits(hidden_BLD), cache

    def decode_hidden(self, input_ids_BL: jax.Array, cache: KVCache) -> tuple[jax.Array, KVCache]:
        """`decode` without the vocabulary projection (a prefill needs only the last position's)."""
        batch, tokens = input_ids_BL.shape
        length_B1 = jnp.broadcast_to(cache.length, (batch,))[:, None]
        slot_BL = length_B1 + jnp.arange(tokens, dtype=jnp.int32)
        positions_BL = slot_BL - cache.start_B[:, None]
        slot_S = jnp.arange(cache.num_slots, dtype=jnp.int32)
        causal_BLS = slot_S[None, None, :] <= slot_BL[:, :, None]
        mask_BLS = causal_BLS & (slot_S[None, None, :] >= cache.start_B[:, None, None])
        x_BLD = self.embed_tokens(input_ids_BL)
        keys, values = [], []
        for layer, key_BKSE, value_BKSE in zip(self.layers, cache.keys, cache.values, strict=True):
            x_BLD, kv = layer(
                x_BLD, positions_BL, mask_BLS, LayerKV(key_BKSE, value_BKSE), cache.length
            )
            keys.append(kv.key_BKSE)
            values.append(kv.value_BKSE)
        cache = cache.replace(keys=tuple(keys), values=tuple(values), length=cache.length + tokens)
        return self.norm(x_BLD), cache


def init_model(
    config: ModelConfig,
    seed: int = 0,
    mesh: Mesh | None = None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
) -> Transformer:
    """A randomly initialised model; with `mesh`, born sharded (never materialised unsharded).

    With a mesh, initialisation runs under `jax.jit` with the rules' output shardings, and its
    values do not depend on the mesh shape (random bits are generated sharding-independently);
    without one it runs eagerly (cheap for the many small models of tests), which can differ
    from the jitted values by float32 rounding.
    """
    if mesh is None:
        return Transformer(config, rngs=nnx.Rngs(seed))
    abstract = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(seed)))
    graphdef, abstract_state = nnx.split(abstract)
    shardings = partitioning.param_shardings(abstract_state, mesh, rules)

    def init_state():
        return nnx.state(Transformer(config, rngs=nnx.Rngs(seed)))

    state = jax.jit(init_state, out_shardings=shardings)()
    return nnx.merge(graphdef, state)
