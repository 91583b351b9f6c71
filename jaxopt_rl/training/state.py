"""`TrainState` (the pytree the train step carries), the optimizer, and sharded initialisation.

A state is born sharded: `jax.eval_shape` gives its abstract tree, the model's partition rules
give every parameter a `NamedSharding` (optimizer moments copy their parameter's, counters are
replicated), and one `jax.jit(init, out_shardings=...)` materialises each device's block where
it lives. Nothing is built on one device and then moved.

The optimizer is AdamW (`optax.adamw`, weight decay on matrices only) after global-norm
clipping, with a linear warmup into a constant, cosine or linear schedule
(`learning_rate_schedule`). Parameters are stored in ``model.param_dtype``; the moments follow
the parameters' dtype. The RNG is raw key data (uint32), so a checkpoint holds plain arrays.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx, struct
from jax.sharding import Mesh

from jaxopt_rl.model import partitioning
from jaxopt_rl.model.transformer import Transformer
from jaxopt_rl.training.config import OptimizerConfig, TrainConfig
from jaxopt_rl.training.mesh import replicated


@struct.dataclass
class TrainState:
    params: nnx.State
    opt_state: Any
    step: jax.Array  # int32 []: optimizer steps taken (the policy version of `params`)
    rng: jax.Array  # uint32 key data of the run's PRNG key, advanced every step
    ref_params: nnx.State | None = None  # the frozen reference policy (only when KL is on)


def learning_rate_schedule(config: OptimizerConfig, steps: int):
    """``step -> learning rate``: linear warmup to the peak over `warmup_steps` (the first step
    already uses peak / warmup_steps), then constant, cosine or linear decay to
    ``end_lr_ratio * peak`` at `decay_steps` (default: the run's `steps`)."""
    peak, warmup = config.learning_rate, config.warmup_steps
    decay_end = config.decay_steps or steps
    span = max(decay_end - warmup, 1)

    def schedule(step):
        step = jnp.asarray(step, jnp.float32)
        warm = jnp.minimum(1.0, (step + 1.0) / warmup) if warmup else 1.0
        t = jnp.clip((step - warmup) / span, 0.0, 1.0)
        end = config.end_lr_ratio
        if config.schedule == "cosine":
            factor = end + (1.0 - end) * 0.5 * (1.0 + jnp.cos(math.pi * t))
        elif config.schedule == "linear":
            factor = 1.0 - (1.0 - end) * t
        else:
            factor = 1.0
        return peak * warm * factor

    return schedule


def make_optimizer(config: OptimizerConfig, steps: int) -> optax.GradientTransformation:
    # Clipping is always in the chain (identity when off) so that turning it on or off does not
    # change the optimizer state's structure (a checkpoint stays loadable).
    clip = (
        optax.identity()
        if config.max_grad_norm is None
        else optax.clip_by_global_norm(config.max_grad_norm)
    )
    adamw = optax.adamw(
        learning_rate_schedule(config, steps),
        b1=config.b1,
        b2=config.b2,
        eps=config.eps,
        weight_decay=config.weight_decay,
        mask=lambda params: jax.tree.map(lambda p: p.ndim > 1, params),
    )
    return optax.chain(clip, adamw)


def state_shardings(
    abstract: TrainState, mesh: Mesh, rules: partitioning.ShardingRules
) -> TrainState:
    """A `TrainState` of `NamedSharding`s for `abstract` (see the module docstring)."""
    params = partitioning.param_shardings(abstract.params, mesh, rules)
    shapes = dict(jax.tree_util.tree_flatten_with_path(abstract.params)[0])
    by_path = {
        path: (sharding, shapes[path].shape)
        for path, sharding in jax.tree_util.tree_flatten_with_path(params)[0]
    }
    depth = max(len(path) for path in by_path)

    def opt_leaf(path, leaf):
        # A moment's path ends with its parameter's path (e.g. 1/0/mu/<param path>); the
        # longest matching suffix of the same shape wins, anything else (counters) is replicated.
        for start in range(max(0, len(path) - depth), len(path)):
            found = by_path.get(tuple(path[start:]))
            if found is not None and found[1] == leaf.shape:
                return found[0]
        return replicated(mesh)

    opt_state = jax.tree_util.tree_map_with_path(opt_leaf, abstract.opt_state)
    ref = None if abstract.ref_params is None else params
    return TrainState(params, opt_state, replicated(mesh), replicated(mesh), ref)


def init_train_state(
    config: TrainConfig,
    mesh: Mesh,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
) -> tuple[nnx.GraphDef, TrainState, TrainState, optax.GradientTransformation]:
    """``(graphdef, state, shardings, optimizer)`` of a fresh run, born sharded on `mesh`.

    Parameter values depend on ``config.seed`` only, not on the mesh's shape."""
    graphdef, init, _, shardings, tx = _plan(config, mesh, rules)
    return graphdef, init(), shardings, tx


def abstract_train_state(
    config: TrainConfig,
    mesh: Mesh,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
) -> tuple[nnx.GraphDef, TrainState, TrainState, optax.GradientTransformation]:
    """``(graphdef, abstract, shardings, optimizer)``: the state's shapes, dtypes and shardings on
    `mesh` without materialising anything (a checkpoint's restore target)."""
    graphdef, _, abstract, shardings, tx = _plan(config, mesh, rules)
    return graphdef, abstract_state(abstract, shardings), shardings, tx


_PLANS: dict = {}  # what the state depends on -> plan: one compiled init per run layout


def _plan(config: TrainConfig, mesh: Mesh, rules):
    """(graphdef, jitted init, abstract state, shardings, optimizer); cached, so building the
    same run twice (a restart, tests) compiles its init once."""
    with_ref = config.grpo.kl_coef > 0
    key = (config.model, config.optimizer, config.steps, config.seed, with_ref, mesh, rules)
    if key in _PLANS:
        return _PLANS[key]
    tx = make_optimizer(config.optimizer, config.steps)
    # the model runs the execution forms of the devices it is compiled for (a TPU mesh built
    # on a CPU host for ahead-of-time compilation gets the TPU's)
    model_config = config.model.for_platform(mesh.devices.flat[0].platform)
    graphdef = nnx.graphdef(nnx.eval_shape(lambda: Transformer(model_config, rngs=nnx.Rngs(0))))

    def init() -> TrainState:
        params = nnx.state(Transformer(model_config, rngs=nnx.Rngs(config.seed)))
        rng = jax.random.key_data(jax.random.key(config.seed + 1))
        return TrainState(
            params=params,
            opt_state=tx.init(params),
            step=jnp.zeros((), jnp.int32),
            rng=rng,
            ref_params=params if with_ref else None,
        )

    abstract = jax.eval_shape(init)
    shardings = state_shardings(abstract, mesh, rules)
    _PLANS[key] = graphdef, jax.jit(init, out_shardings=shardings), abstract, shardings, tx
    return _PLANS[key]


def abstract_state(state_or_shapes: TrainState, shardings: TrainState) -> TrainState:
    """`jax.ShapeDtypeStruct`s carrying `shardings` (a restore target on any mesh)."""
    return jax.tree.map(
        lambda leaf, sharding: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding),
        state_or_shapes,
        shardings,
    )
