"""Orbax checkpoints of a run: save (asynchronous), keep the last N plus the best by a metric,
restore onto any mesh, detect a resume, and refuse a resume whose config changed a shape.

A checkpoint (one step folder under ``OUT/checkpoints/``) holds three items:

* ``state``: the whole `TrainState` (params, optimizer state, step, RNG key data, reference
  params when KL is on) as a flat ``{"params.layers.0.self_attn.q_proj.kernel": array, ...}``
  dict, so the on-disk names do not depend on how Flax or optax register their pytree nodes;
* ``data``: the data iterator's state and anything else the loop needs to resume (a JSON dict);
* ``config``: the resolved `TrainConfig` as a plain dict.

Restoring takes an abstract target (`jaxopt_rl.training.state.abstract_train_state`) whose
leaves carry the shardings of the CURRENT mesh; Orbax reads each device's block straight into
that layout, so a run saved on 2x2x2 devices resumes on 1x8, one device or another host count.

Integrity: once Orbax has committed a step folder (commit marker written, folder renamed into
place), process 0 seals it with a manifest of every file's size and SHA-256
(`jaxopt_rl.manifest`); an asynchronous save is sealed by a thread that waits for Orbax's
background commit. Every read checks the folder first; which folders count as checkpoints and
which one a run resumes from is `jaxopt_rl.training.checkpoint_folders`.

Choices: checkpoints are written by every process that holds training devices (Orbax
coordinates multi-host writes; a process with a rollout mesh only has nothing to write);
`Checkpointer.save` returns as soon as the device arrays are copied (the write finishes in the
background; `wait` blocks until it is on disk and sealed); best-by-metric keeps exactly one
extra checkpoint beyond the last N.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint.checkpoint_managers import preservation_policy as policies

from jaxopt_rl.config import ConfigError
from jaxopt_rl.manifest import CheckpointError, ManifestMismatch, write_manifest
from jaxopt_rl.training.checkpoint_folders import (
    CHECKPOINT_DIR,
    ITEMS,
    committed_problem,
    examine,
    find_resume,  # noqa: F401  (the trainers import it from here)
    newest_checkpoint,
    refusal,
    resume_message,  # noqa: F401
)
from jaxopt_rl.training.config import SHAPE_KEYS, CheckpointConfig
from jaxopt_rl.training.state import TrainState


def flat_key(keypath: tuple[Any, ...]) -> str:
    """``params.layers.0.self_attn.q_proj.kernel`` from a pytree key path (``.value`` of a Flax
    variable dropped)."""
    parts = []
    for key in keypath:
        if isinstance(key, jax.tree_util.DictKey):
            parts.append(str(key.key))
        elif isinstance(key, jax.tree_util.SequenceKey):
            parts.append(str(key.idx))
        elif isinstance(key, jax.tree_util.GetAttrKey):
            if key.name != "value":
                parts.append(key.name)
        else:
            parts.append(str(getattr(key, "key", key)))
    return ".".join(parts)


def flatten_state(state: TrainState) -> dict[str, Any]:
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    flat = {flat_key(path): leaf for path, leaf in leaves}
    if len(flat) != len(leaves):
        raise ValueError("two train-state leaves map to the same checkpoint name")
    return flat


def unflatten_state(flat: dict[str, Any], like: TrainState) -> TrainState:
    paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    return jax.tree_util.tree_unflatten(treedef, [flat[flat_key(path)] for path, _ in paths])


def best_metric(config: CheckpointConfig, metrics: dict[str, float] | None, step: int
                ) -> dict[str, float] | None:
    """What a checkpoint records for `config.best_metric` out of a step's `metrics` (None when
    it is unset); a name the run does not log is a `ConfigError` naming the key, the name and
    the metrics there are; a non-finite value ranks worst. Trainers also call it on every
    metric line, so a wrong name stops the run at its first line, not at its first save."""
    name = config.best_metric
    if name is None:
        return None
    if metrics is None:
        raise ConfigError(f"checkpoint.best_metric: {name!r} cannot be tracked: this run gives "
                          f"its checkpoints no metrics (step {step}); leave it null")
    if name not in metrics:
        raise ConfigError(f"checkpoint.best_metric: {name!r} is not a metric of this run (step "
                          f"{step}); its metrics: {', '.join(sorted(metrics))}")
    value = float(metrics[name])
    if not np.isfinite(value):  # e.g. reward/mean of a window with every reward undefined:
        # ranked worst, so a step with no value is never kept as the best
        value = float("-inf") if config.best_mode == "max" else float("inf")
    return {name: value}


@dataclasses.dataclass(frozen=True)
class Restored:
    state: TrainState
    data: dict[str, Any]
    config: dict[str, Any]
    step: int
    path: Path


class Checkpointer:
    """An Orbax `CheckpointManager` over ``OUT/checkpoints`` with the run's retention rules."""

    def __init__(self, output_dir: str | Path, config: CheckpointConfig | None = None,
                 holders: set[int] | None = None):
        config = config or CheckpointConfig()
        self.config = config
        # `holders`: the processes that hold training devices (default: all). The others (a
        # rollout mesh of their own) hold no byte of the state: Orbax runs over the holders only
        # and the others learn the JSON items by broadcast. A state held by ONE process of
        # several is saved as host arrays: Orbax refuses process-local jax.Arrays when
        # jax.process_count() > 1.
        everyone = set(range(jax.process_count()))
        self.holders = everyone if holders is None else set(holders)
        self.partial = self.holders != everyone
        self.active = jax.process_index() in self.holders
        self.host_copy = self.partial and len(self.holders) == 1
        self.directory = Path(output_dir).absolute() / CHECKPOINT_DIR
        keep = [policies.LatestN(n=config.keep)]
        best_fn = None
        if config.best_metric is not None:
            metric = config.best_metric

            def best_fn(metrics: dict[str, float]) -> float:
                return float(metrics[metric])

            keep.append(
                policies.BestN(
                    get_metric_fn=best_fn, reverse=config.best_mode == "min", n=1,
                    keep_checkpoints_without_metrics=False,
                )
            )
        options = ocp.CheckpointManagerOptions(
            preservation_policy=policies.AnyPreservationPolicy(keep),
            best_fn=best_fn,
            best_mode=config.best_mode,
            enable_async_checkpointing=config.async_save,
            create=True,
        )
        if self.partial:  # Orbax will not create the folder for a subset of processes
            options.multiprocessing_options = ocp.options.MultiprocessingOptions(
                primary_host=0, active_processes=self.holders)
            options.create = False
            self.directory.mkdir(parents=True, exist_ok=True)
        self.manager = (ocp.CheckpointManager(self.directory, options=options, item_names=ITEMS)
                        if self.active else None)
        self._sealing: threading.Thread | None = None
        self._seal_error: BaseException | None = None

    def save(
        self,
        state: TrainState,
        *,
        data: dict[str, Any],
        config: dict[str, Any],
        metrics: dict[str, float] | None = None,
        force: bool = True,
        step: int | None = None,
    ) -> int:
        """Save `state` at its own step (asynchronously); returns the step. `step`: the
        caller's count of it (a process that holds no training device cannot read it).

        Orbax copies the arrays to host memory before this returns, so the caller may pass
        `state` straight to the (donating) train step; the write to disk, then the manifest
        that seals it, go on behind it."""
        step = int(jax.device_get(state.step)) if step is None else int(step)
        metrics = best_metric(self.config, metrics, step)
        if not self.active:
            return step
        self._join_sealing()
        flat = flatten_state(state)
        if self.host_copy:
            flat = jax.device_get(flat)
        saved = self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(flat),
                data=ocp.args.JsonSave(data),
                config=ocp.args.JsonSave(config),
            ),
            metrics=metrics,
            force=force,
        )
        if not saved:
            return step
        if self.config.async_save:
            self._sealing = threading.Thread(target=self._seal_after_commit, args=(step,),
                                             name=f"seal checkpoint {step}")
            self._sealing.start()
        else:
            self._seal(step)
        return step

    def restore(self, target: TrainState, step: int | None = None) -> Restored:
        """Restore `step` (default: the newest checkpoint) onto `target`'s shardings (see
        module doc), after checking it against its manifest."""
        step = newest_checkpoint(self.directory) if step is None else step
        flat_target = flatten_state(target)
        if not self.active:  # no byte of the state here: empty arrays of its global shape
            state = unflatten_state({k: _no_local_blocks(leaf) for k, leaf in flat_target.items()},
                                    target)
            shared = self._shared(None)
            return Restored(state, shared["data"], shared["config"], step,
                            self.directory / str(step))
        read_as = ({k: np.empty(leaf.shape, leaf.dtype) for k, leaf in flat_target.items()}
                   if self.host_copy else flat_target)
        restored = self._read(step, ocp.args.Composite(
            state=ocp.args.StandardRestore(read_as),
            data=ocp.args.JsonRestore(),
            config=ocp.args.JsonRestore(),
        ))
        flat = dict(restored["state"])
        if self.host_copy:
            flat = {k: jax.device_put(v, flat_target[k].sharding) for k, v in flat.items()}
        state = unflatten_state(flat, target)
        shared = self._shared({"data": dict(restored["data"]),
                               "config": dict(restored["config"])})
        return Restored(state, shared["data"], shared["config"], step, self.directory / str(step))

    def saved_json(self, item: str, step: int | None = None) -> dict[str, Any]:
        """A JSON item of a checkpoint (default: the newest), without its arrays: "config"
        (the resolved config it was written with) or "data" (the loop's data cursor)."""
        if item not in ("config", "data"):
            raise ValueError(f"a checkpoint's JSON items are 'config' and 'data', not {item!r}")
        step = newest_checkpoint(self.directory) if step is None else step
        value = None
        if self.active:
            value = dict(self._read(step, ocp.args.Composite(
                **{item: ocp.args.JsonRestore()}))[item])
        return self._shared(value)

    def _shared(self, value: Any) -> Any:
        """`value` as process 0 read it, on every process (only when some hold no state)."""
        if not self.partial:
            return value
        from jaxopt_rl.training.multihost import broadcast_json

        return broadcast_json(value, is_source=jax.process_index() == 0)

    def _read(self, step: int, args: ocp.args.Composite) -> Any:
        path = self.directory / str(step)
        try:
            verified = examine(path)
        except ManifestMismatch as err:
            raise CheckpointError(refusal(err, self.directory)) from None
        # `find_resume` may have moved folders aside since this manager listed its steps
        self.manager.reload()
        if verified:
            return self.manager.restore(step, args=args)
        try:
            return self.manager.restore(step, args=args)
        except Exception as err:  # unverified bytes: whatever a reader raises names the folder
            raise CheckpointError(f"{path} (no manifest, read unverified) cannot be read: "
                                  f"{type(err).__name__}: {err}") from err

    def _seal(self, step: int) -> None:
        path = self.directory / str(step)
        # process 0 only: the folder is shared, and Orbax's commit is a barrier for all writers
        if jax.process_index() == 0 and path.is_dir() and committed_problem(path) is None:
            write_manifest(path)

    def _seal_after_commit(self, step: int) -> None:
        try:
            self.manager.wait_until_finished()  # Orbax's background write and commit
            self._seal(step)
        except BaseException as err:  # raised in the caller's thread by the next save or wait
            self._seal_error = err

    def _join_sealing(self) -> None:
        if self._sealing is not None:
            self._sealing.join()
            self._sealing = None
        if self._seal_error is not None:
            err, self._seal_error = self._seal_error, None
            raise err

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def best_step(self) -> int | None:
        return self.manager.best_step()

    def all_steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def wait(self) -> None:
        """Block until the last save is on disk, committed and sealed."""
        if self.manager is not None:
            self.manager.wait_until_finished()
        self._join_sealing()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            if self.manager is not None:
                self.manager.close()


def _no_local_blocks(leaf: Any) -> jax.Array:
    return jax.make_array_from_single_device_arrays(leaf.shape, leaf.sharding, [],
                                                    dtype=leaf.dtype)


def resolve_checkpoint(path: str | Path) -> tuple[Path, int | None]:
    """``(run folder, step)`` for a run folder, its ``checkpoints/`` folder, or one step folder
    (step None: the latest)."""
    path = Path(path).absolute()
    if (path / CHECKPOINT_DIR).is_dir():
        return path, None
    if path.name == CHECKPOINT_DIR and path.is_dir():
        return path.parent, None
    if path.name.isdigit() and path.parent.name == CHECKPOINT_DIR and path.is_dir():
        return path.parent.parent, int(path.name)
    raise FileNotFoundError(
        f"{path}: not a run folder (with {CHECKPOINT_DIR}/), a {CHECKPOINT_DIR}/ folder or a "
        "step folder inside one"
    )


def export_pretrained(checkpoint: str | Path, out: str | Path, step: int | None = None,
                      dtype: str | None = None) -> Path:
    """Write a checkpoint's parameters as a Hugging Face folder (`save_pretrained`), the model
    config taken from the checkpoint's resolved config, with the tokenizer the run trained with
    (`init_from`'s own, else the project's: `model.tokenizer.copy_tokenizer`). Restores on all
    local devices. `dtype` ("bfloat16", "float32") casts the saved tensors (None: as trained)."""
    from flax import nnx

    from jaxopt_rl.config import from_dict
    from jaxopt_rl.model.checkpoint import save_pretrained
    from jaxopt_rl.model.tokenizer import copy_tokenizer
    from jaxopt_rl.training.config import MeshConfig, TrainConfig
    from jaxopt_rl.training.mesh import mesh_from_config
    from jaxopt_rl.training.state import abstract_train_state

    run_dir, found_step = resolve_checkpoint(checkpoint)
    step = found_step if step is None else step
    if step is None:
        step = newest_checkpoint(run_dir / CHECKPOINT_DIR)
    ckpt = Checkpointer(run_dir, CheckpointConfig(async_save=False))
    try:
        config = from_dict(TrainConfig, ckpt.saved_json("config", step), "checkpoint config")
        mesh = mesh_from_config(MeshConfig(data=1, fsdp=-1, tensor=1), jax.local_devices())
        graphdef, target, _, _ = abstract_train_state(config, mesh)
        restored = ckpt.restore(target, step)
    finally:
        ckpt.close()
    params = restored.state.params
    if dtype is not None:
        params = jax.tree.map(lambda x: x.astype(dtype), params)
    folder = save_pretrained(nnx.merge(graphdef, params), out)
    copy_tokenizer(config.init_from, folder)
    return folder


def check_resume_config(
    saved: dict[str, Any], current: dict[str, Any], *, where: str = "the checkpoint",
    keys: tuple[str, ...] = SHAPE_KEYS,
) -> None:
    """Raise `ConfigError` naming the first shape-defining key whose value differs, or
    `grpo.kl_coef` when it turns the frozen reference policy on or off (the state then has a
    different structure: `TrainState.ref_params`)."""
    for key in keys:
        old, new = _lookup(saved, key), _lookup(current, key)
        if old != new:
            raise ConfigError(
                f"{key}: {where} was written with {old!r} but this run has {new!r}; a "
                "shape-defining key cannot change on resume (use a new output_dir)"
            )
    if keys is SHAPE_KEYS:
        old, new = _lookup(saved, "grpo.kl_coef"), _lookup(current, "grpo.kl_coef")
        if _MISSING not in (old, new) and (old > 0) != (new > 0):
            raise ConfigError(
                f"grpo.kl_coef: {where} was written with {old!r} but this run has {new!r}; "
                "turning the KL to the reference policy on or off changes the saved state "
                "(its frozen reference) and cannot happen on resume (use a new output_dir)")


_MISSING = "<missing>"


def _lookup(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return list(node) if isinstance(node, tuple) else node
