"""The model's own count of a train step's and a decode step's work: FLOPs and HBM bytes, from
the architecture and the batch alone. `plan` divides them by a chip's peak rates for its
roofline figures. They are a projection, never a measurement.

Why our own count. XLA's `cost_analysis()` counts the body of every loop once (a scanned layer
stack of 28 layers costs what one layer costs; verified on libtpu 0.0.42.1), and on the GPU
compile-only path it returns nothing. The count below is checked against XLA's own on a
loop-free program (`tests/planning/test_costs.py`: unrolled layers, dense attention, whole-row
log-probs), where the two must agree.

Train step, over ``tokens`` = rows x N positions:

* matmul parameters ``P_mm`` = every layer's projection and MLP weights + the unembedding
  (V x D); the input embedding is a gather, not a product;
* model FLOPs (what MFU credits): ``6 * tokens * P_mm`` plus attention, ``3 * 4 * Q * E`` per
  (query, attended key) pair and layer, over the causal pairs inside each trajectory
  (trajectories of ``trajectory`` tokens packed end to end: ``(t + 1) / 2`` keys on average);
* executed FLOPs (what the chips run): the model FLOPs, plus one more forward pass of every
  layer when layers are rematerialised, plus one more unembedding when log-probs are chunked
  (their logits are recomputed in the backward pass), with attention counted as the kernel
  runs it: the blockwise and splash kernels skip blocks above the causal diagonal but not the
  blocks between trajectories of one row (``N / 2`` keys per query), the dense kernel computes
  every pair; a flash backward costs 2.5 forward passes (five products to the forward's two).

HBM bytes (per chip; the dominant streams only): every layer's gathered weights read in the
compute dtype once per pass (forward, the recomputation, and twice in the backward: inputs'
and weights' gradients), the optimizer's read and write of parameters, gradients and two
moments (7 x 4 bytes per parameter on this chip's shard), and the activations: ~16 reads or
writes of a ``[tokens, D]`` and ~6 of a ``[tokens, F]`` array per layer and pass (residual,
norms, projections, the MLP's three products). A 32k-token step is far from memory-bound, so
this rough stream changes no conclusion; at short rows it is only an order of magnitude.

Decode step (one token per row): every chip reads the weights it multiplies (the whole model,
or its 1/tensor share) and the KV cache of its rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxopt_rl.model.config import ModelConfig

_DTYPE_BYTES = {"float32": 4, "bfloat16": 2}
FLASH_BACKWARD_PASSES = 2.5  # a flash backward's products relative to its forward's


@dataclass(frozen=True)
class StepCost:
    model_flops: float  # the useful work: 6 P T plus attention over real pairs (all chips)
    executed_flops: float  # what the compiled step runs (recomputation included; all chips)
    hbm_bytes_per_chip: float  # dominant HBM traffic of one chip over the step


def matmul_params(config: ModelConfig) -> tuple[int, int]:
    """``(per layer, unembedding)`` counts of parameters that enter a matrix product."""
    d, e, f = config.hidden_size, config.head_dim, config.intermediate_size
    attention = d * config.num_heads * e * 2 + d * config.num_kv_heads * e * 2
    return attention + 3 * d * f, config.vocab_size * d


def attention_pairs(rows: int, horizon: int, trajectory: int) -> tuple[float, float]:
    """``(real, causal)`` (query, key) pairs of `rows` packed rows: real pairs lie inside one
    trajectory of `trajectory` tokens (the last one of a row is cut at the horizon); causal
    pairs are every pair at or below the row's diagonal."""
    trajectory = max(1, min(trajectory, horizon))
    whole, rest = divmod(horizon, trajectory)
    per_row = whole * trajectory * (trajectory + 1) / 2 + rest * (rest + 1) / 2
    return rows * per_row, rows * horizon * (horizon + 1) / 2


def train_step_cost(config: ModelConfig, *, rows: int, horizon: int, trajectory: int,
                    chips: int, tensor: int = 1) -> StepCost:
    """The cost of one optimizer step on `rows` x `horizon` packed tokens (module docstring).
    `config` must be resolved (`ModelConfig.for_platform`): the execution forms change it."""
    tokens = rows * horizon
    per_layer, unembed = matmul_params(config)
    layers = config.num_layers
    real_pairs, causal_pairs = attention_pairs(rows, horizon, trajectory)
    pair_flops = 4 * config.num_heads * config.head_dim * layers  # QK and PV, per pair, forward
    model = 6 * tokens * (layers * per_layer + unembed) + 3 * pair_flops * real_pairs
    remat = config.remat != "none"
    dense = config.attention == "dense"
    kernel_pairs = tokens * horizon if dense else causal_pairs
    attention_passes = (1 + (1 if remat else 0) + (2 if dense else FLASH_BACKWARD_PASSES))
    executed = (6 * tokens * (layers * per_layer + unembed)
                + (2 * tokens * layers * per_layer if remat else 0)
                + (2 * tokens * unembed if config.logprob_chunk else 0)
                + attention_passes * pair_flops * kernel_pairs)
    compute_bytes = _DTYPE_BYTES[config.compute_dtype]
    weight_passes = 4 if remat else 3
    weights = weight_passes * (layers * per_layer + unembed) * compute_bytes / tensor
    optimizer = 7 * 4 * config.num_params / chips
    local_tokens = tokens / max(1, chips // tensor)
    activation_passes = 4 if remat else 3
    activations = (activation_passes * layers * local_tokens * compute_bytes
                   * (16 * config.hidden_size + 6 * config.intermediate_size / tensor))
    return StepCost(model, executed, weights + optimizer + activations)


def kv_bytes_per_token(config: ModelConfig) -> int:
    """Bytes of one position's keys and values over every layer (the cache is in compute
    dtype)."""
    return (2 * config.num_layers * config.num_kv_heads * config.head_dim
            * _DTYPE_BYTES[config.compute_dtype])


def decode_step_bytes_per_chip(config: ModelConfig, *, rows_per_chip: float,
                               cache_slots: float, tensor: int = 1) -> float:
    """HBM bytes one chip reads in a decode step: the weights it multiplies, in their stored
    dtype (the sampler holds the trainer's parameters), and its rows' KV cache."""
    weights = config.num_params * _DTYPE_BYTES[config.param_dtype] / tensor
    cache = rows_per_chip * cache_slots * kv_bytes_per_token(config) / tensor
    return weights + cache
