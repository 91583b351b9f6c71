"""Everything a run holds before its first step, built in one place: `setup_run(config)`.

Order matters and is the order below: `jax.distributed` first (the device list is fixed at
first use), then the resume decision (a changed shape-defining key fails here, naming it),
the mesh and the state (born sharded, or restored straight onto this mesh's shardings), the
step, the environment, data, sandbox and rollout worker, and the writers.

Choices: every process sees the same prompt stream (process_count 1 for the loader), because
all processes take the same prompts in the same order (see `training.loop`); the samplers use
the training mesh (colocated: time-shared devices, the one-host default) unless
`mesh.rollout_devices` (or async over several processes) gives them a mesh of their own. `init_from` loads the starting weights
from a Hugging Face folder (e.g. the SFT checkpoint the demo ships); the tokenizer comes from
that folder when it has one, else the project's own.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import jax
import yaml
from flax import nnx
from jax.sharding import Mesh

from jaxopt_rl.config import ConfigError, to_dict
from jaxopt_rl.data.loader import PromptLoaderConfig, PromptSource
from jaxopt_rl.data.lookup import find_data_set
from jaxopt_rl.data.materialize import ensure_materialized
from jaxopt_rl.model import partitioning
from jaxopt_rl.model.checkpoint import load_pretrained
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.rewards.env_config import EnvConfig, load_env_config
from jaxopt_rl.rollouts.problems import ProblemBank
from jaxopt_rl.rollouts.score_tasks import ScoreTaskBank, ScoreTaskSet, in_sandbox
from jaxopt_rl.rollouts.worker import RolloutWorker
from jaxopt_rl.training import distributed
from jaxopt_rl.training.checkpoints import (
    Checkpointer,
    check_resume_config,
    find_resume,
    resume_message,
)
from jaxopt_rl.training.config import SHAPE_KEYS, TrainConfig
from jaxopt_rl.training.cursor import DataCursor
from jaxopt_rl.training.mesh import meshes_from_config, put_global, rollout_device_count
from jaxopt_rl.training.metrics import MetricsWriter
from jaxopt_rl.training.state import TrainState, abstract_train_state, init_train_state
from jaxopt_rl.training.step import StepSettings, make_train_step
from jaxopt_rl.training.window import Progress, StepWindow


@dataclasses.dataclass
class Run:
    config: TrainConfig
    output_dir: Path
    mesh: Mesh
    sample_mesh: Mesh | None
    rules: partitioning.ShardingRules
    graphdef: nnx.GraphDef
    state: TrainState
    train_step: Any
    env: EnvConfig
    worker: RolloutWorker
    prompt_source: PromptSource
    cursor: Any
    writer: MetricsWriter
    checkpointer: Checkpointer
    started: float
    resumed_from: int | None
    closers: list

    def put_batch(self, batch, sharding):
        return put_global(batch, sharding)

    def new_window(self) -> StepWindow:
        return StepWindow(peak_flops=peak_flops(), params=count_params(self.state.params),
                          rollout_mesh=self.sample_mesh is not self.mesh)

    def weight_transfer(self):
        """The copy of the parameters onto the rollout mesh (None: it is the training mesh)."""
        if self.sample_mesh is self.mesh:
            return None
        from jaxopt_rl.training.transfer import WeightTransfer

        shardings = partitioning.param_shardings(self.state.params, self.sample_mesh, self.rules)
        return WeightTransfer(self.mesh, self.sample_mesh, shardings)

    @property
    def trains_everywhere(self) -> bool:
        """Every process holds a training device (else metrics come from process 0)."""
        return {d.process_index for d in self.mesh.devices.flat} == set(
            range(jax.process_count()))

    def progress(self, step: int) -> Progress:
        return Progress(self.config.steps, step)

    def close(self) -> None:
        self.checkpointer.wait()
        for close in reversed(self.closers):
            close()


def count_params(params) -> int:
    return int(sum(x.size for x in jax.tree.leaves(params)))


# Dense bf16 peak FLOP/s per device, for MFU; devices not listed report no MFU.
PEAK_FLOPS = {"NVIDIA H100": 989e12, "NVIDIA H200": 989e12, "NVIDIA A100": 312e12,
              "TPU v4": 275e12, "TPU v5 lite": 197e12, "TPU v5e": 197e12, "TPU v5p": 459e12,
              "TPU v6 lite": 918e12}


def peak_flops() -> float | None:
    kind = jax.devices()[0].device_kind
    for name, flops in PEAK_FLOPS.items():
        if kind.startswith(name):
            return flops * jax.device_count()
    return None


def setup_run(config: TrainConfig, *, sandbox: Any = None, log=print) -> Run:
    distributed.initialize(config.distributed)
    mesh, sample_mesh = _meshes(config)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    closers: list = []
    resume = find_resume(output_dir, config.checkpoint.on_corrupt)
    checkpointer = Checkpointer(output_dir, config.checkpoint,
                                holders={d.process_index for d in mesh.devices.flat})
    closers.append(checkpointer.close)
    if resume is not None:
        check_resume_config(checkpointer.saved_json("config", resume[0]), to_dict(config),
                            where=f"the checkpoint {resume[1]}")
        log(resume_message(*resume))
    rules = partitioning.DEFAULT_RULES
    if resume is None:
        graphdef, state, shardings, optimizer = init_train_state(config, mesh, rules)
        state = _load_initial_weights(config, state, shardings, mesh, rules)
        cursor = DataCursor()
    else:
        graphdef, abstract, shardings, optimizer = abstract_train_state(config, mesh, rules)
        restored = checkpointer.restore(abstract, resume[0])
        state, cursor = restored.state, DataCursor.from_json(restored.data["cursor"])
    grpo = config.grpo
    train_step = make_train_step(graphdef, optimizer, StepSettings.from_config(grpo), shardings,
                                 mesh, grpo.rows // grpo.microbatches, rules)
    env = load_env_config(config.env, config.env_overrides)
    river = env.kind == "river"
    if grpo.river != river:
        raise ConfigError(f"grpo.river: must be {str(river).lower()} for environment "
                          f"{env.name!r} (kind {env.kind}): RiVER rewards are advantages as they "
                          "are, every other reward is centred in its group")
    if river and config.data.tests:
        raise ConfigError("data.tests: score tasks run every hidden instance; leave it empty")
    dataset = (ScoreTaskSet.named(config.data.dataset) if river
               else find_data_set(config.data.dataset, key="data.dataset"))
    loader_config = PromptLoaderConfig(split=config.data.split, seed=config.data.seed,
                                       problems=config.data.problems)
    records = [dataset.record(p) for p in dataset.problem_ids(config.data.split)
               if not config.data.problems or p in config.data.problems]
    prompt_source = PromptSource(records, loader_config, process_index=0, process_count=1)
    if sandbox is None:
        from sandbox_cluster import connect

        options = {k: v for k, v in (("slots", config.sandbox.workers),
                                     ("backend", config.sandbox.backend)) if v is not None}
        if config.sandbox.urls:
            sandbox = connect(list(config.sandbox.urls), token=config.sandbox.token)
        else:
            sandbox = connect(None, **options)
        closers.append(sandbox.close)
    tokenizer = Tokenizer.for_checkpoint(config.init_from)
    if river:
        bank = ScoreTaskBank(dataset, env.service_cap_s, in_sandbox(sandbox), config.prompt)
        started = time.perf_counter()
        instances = sum(len(bank[task_id].tests) for task_id in [r.problem_id for r in records])
        log(f"hidden instances generated in the sandbox: {instances} of {len(records)} score "
            f"tasks in {time.perf_counter() - started:.1f} s")
    else:
        if jax.process_index() == 0:  # a fresh clone: recipe tests regenerated once, cached
            ensure_materialized(dataset, sandbox, [r.problem_id for r in records], log)
        bank = ProblemBank(dataset, env.service_cap_s, config.prompt, config.data.tests,
                           config.rollout.timing_repeats)
    if (config.rollout.references == "fresh" and not river
            and jax.process_index() == 0):  # process 0 scores
        retime_references(bank, sandbox, [r.problem_id for r in records], config, log)
    worker = RolloutWorker(config.rollout, tokenizer, bank, sandbox, env)
    writer = MetricsWriter(output_dir, resume_step=None if resume is None else resume[0],
                           run_config=to_dict(config), rollouts=config.loop.log_rollouts)
    closers.append(writer.close)
    (output_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    return Run(config, output_dir, mesh, sample_mesh, rules, graphdef, state, train_step, env,
               worker, prompt_source, cursor, writer, checkpointer, time.time(),
               None if resume is None else resume[0], closers)


def _meshes(config: TrainConfig) -> tuple[Mesh, Mesh]:
    """The training and rollout meshes, checked against what the schedule supports; every
    refusal happens here, at start-up, naming the key (never a hang at step 2)."""
    processes = jax.process_count()
    count = rollout_device_count(config.mesh, config.loop.mode, processes, jax.device_count())
    if processes > 1 and config.loop.mode == "async" and count == 0:
        raise ConfigError("mesh.rollout_devices: async over several processes needs a rollout "
                          "mesh of its own (0 means half of the devices)")
    mesh, sample_mesh = meshes_from_config(config.mesh, rollout_devices=count)
    if processes > 1 and sample_mesh is not mesh:
        if sample_mesh.devices.size != mesh.devices.size:
            # the cross-process weight copy maps the training mesh onto the rollout devices
            # shard for shard (`training.transfer`)
            raise ConfigError(
                f"mesh.rollout_devices: {count} of {jax.device_count()} devices; across "
                f"processes the rollout mesh needs as many devices as the training mesh: set "
                f"it to {jax.device_count() // 2}")
        if 0 not in {d.process_index for d in mesh.devices.flat}:
            raise ConfigError("mesh.rollout_layout: process 0 holds no training device; it "
                              "writes the metrics and the checkpoint's metadata")
    return mesh, sample_mesh


def retime_references(bank: ProblemBank, sandbox: Any, problem_ids: list[str],
                      config: TrainConfig, log=print) -> None:
    """`rollout.references=fresh`: the run's leaderboards are measured on its own sandbox."""
    started = time.perf_counter()
    counts = bank.retime_references(sandbox, problem_ids, config.rollout.reference_runs,
                                    seed=config.seed)
    log(f"references timed on this sandbox: {sum(counts.values())} references of "
        f"{len(problem_ids)} problems x {config.rollout.reference_runs} runs in "
        f"{time.perf_counter() - started:.1f} s")


def _load_initial_weights(config: TrainConfig, state: TrainState, shardings: TrainState,
                          mesh: Mesh, rules: partitioning.ShardingRules):
    if not config.init_from:
        return state
    # each device reads its own blocks of the files: a 7B policy is never whole on one host
    model = load_pretrained(config.init_from, dtype=config.model.param_dtype, mesh=mesh,
                            rules=rules)
    check_resume_config({"model": to_dict(model.config)}, {"model": to_dict(config.model)},
                        where=f"init_from={config.init_from!r}",
                        keys=tuple(k for k in SHAPE_KEYS if k.startswith("model.")))
    params = jax.device_put(nnx.state(model), shardings.params)
    # the reference gets buffers of its own: the train step donates the state, and one buffer
    # donated as both a parameter and its frozen reference is refused by XLA
    ref = (None if state.ref_params is None
           else jax.device_put(nnx.state(model), shardings.ref_params, may_alias=False))
    return state.replace(params=params, ref_params=ref)
