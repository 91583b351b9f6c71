"""Supervised warm start: the policy learns to answer a problem's prompt with one of its correct
reference solutions, in the fenced block the extractor reads (`model.prompt.extract_program`).

    jaxopt-rl sft --config configs/sft/tiny_mini.yaml [key=value ...]

Examples: for every problem of `data` (split, optional id list), every reference solution
labelled correct and verified (`Solution.verified_correct`); for score tasks (a `kind: river`
environment) every reference heuristic, `data.heuristic_copies` times by expected rank; as
`prompt = problem_prompt(record, config.prompt)`, `completion = "```python\\n" + code + "\\n```" + EOS`.
The example stream is a seeded permutation per epoch (`numpy.random.default_rng([seed,
epoch])`), packed greedily into `grpo.rows` rows of `grpo.horizon` tokens per step by the same
packer as GRPO (`training.packing`, each example a one-rollout group), and trained with the
same jitted step (loss `sft`: next-token cross-entropy on the completion tokens only). So a run
is a pure function of its config: the same seed gives the same losses, step for step.

Output folder: as for `train` (metrics.jsonl, tensorboard/, checkpoints/, config.yaml), plus
`hf/`: the final weights as a Hugging Face folder (`save_pretrained`) with the tokenizer, which
`train`'s `init_from` reads. An example longer than `grpo.horizon` is skipped and counted.
A step that leaves the parameters or the loss non-finite stops the run before it is logged or
checkpointed (`metrics.require_finite`); `checkpoint.best_metric` names one of the logged
metrics (e.g. ``loss`` with ``best_mode: min``), checked from step 1.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import jax
import numpy as np
import yaml
from flax import nnx
from tqdm import tqdm

from jaxopt_rl.config import ConfigError, to_dict
from jaxopt_rl.data.lookup import find_data_set
from jaxopt_rl.model.checkpoint import save_pretrained
from jaxopt_rl.model.prompt import problem_prompt
from jaxopt_rl.model.tokenizer import Tokenizer, copy_tokenizer
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rollouts.score_tasks import ScoreTaskSet
from jaxopt_rl.training import packing
from jaxopt_rl.training.checkpoints import (
    Checkpointer,
    best_metric,
    check_resume_config,
    find_resume,
    resume_message,
)
from jaxopt_rl.training.config import TrainConfig
from jaxopt_rl.training.mesh import mesh_from_config, put_global
from jaxopt_rl.training.metrics import MetricsWriter, require_finite
from jaxopt_rl.training.state import abstract_train_state, init_train_state
from jaxopt_rl.training.step import StepSettings, batch_sharding, make_train_step

FENCE_OPEN, FENCE_CLOSE = "```python\n", "\n```"


@dataclasses.dataclass(frozen=True)
class Example:
    problem_id: str
    solution_id: str
    prompt: np.ndarray  # int32
    completion: np.ndarray  # int32, EOS last


def sft_examples(config: TrainConfig, tokenizer: Tokenizer) -> tuple[list[Example], int]:
    """Every (problem, correct reference) example of the run's data; and how many were too
    long for one row. Score tasks (a `kind: river` environment): every reference heuristic
    that fits, repeated as `data.heuristic_copies` says."""
    river = load_env_config(config.env, config.env_overrides).kind == "river"
    if not river and config.data.heuristic_copies:
        raise ConfigError("data.heuristic_copies: only score tasks (a kind: river environment) "
                          "have ranked heuristics")
    dataset = (ScoreTaskSet.named(config.data.dataset) if river
               else find_data_set(config.data.dataset, key="data.dataset"))
    ids = dataset.problem_ids(config.data.split)
    if config.data.problems:
        ids = [p for p in ids if p in set(config.data.problems)]
    examples, too_long = [], 0
    eos = tokenizer.eos_ids[0]
    for problem_id in ids:
        prompt = np.asarray(
            tokenizer.encode(problem_prompt(dataset.record(problem_id), config.prompt)), np.int32)
        fitting = []
        for solution_id, code in _references(dataset, problem_id, river):
            text = FENCE_OPEN + code.strip("\n") + FENCE_CLOSE
            completion = np.asarray([*tokenizer.encode(text), eos], np.int32)
            if len(prompt) + len(completion) > config.grpo.horizon:
                too_long += 1
                continue
            fitting.append(Example(problem_id, solution_id, prompt, completion))
        copies = config.data.heuristic_copies
        for k, example in enumerate(fitting):
            examples.extend([example] * (copies[k] if k < len(copies) else 1))
    if not examples:
        raise ValueError(f"no SFT example fits grpo.horizon={config.grpo.horizon} in data "
                         f"{config.data.dataset!r} (split {config.data.split!r})")
    return examples, too_long


def _references(dataset, problem_id: str, river: bool) -> list[tuple[str, str]]:
    """(solution id, code) of a problem's correct references; of a score task, its heuristics
    in expected-rank order."""
    if river:
        return [(h.slug, h.code) for h in dataset.task(problem_id).heuristics]
    return [(s.solution_id, s.code) for s in dataset.solutions(problem_id)
            if s.label == "correct" and s.verified_correct is not False]


def example_at(examples: list[Example], seed: int, position: int) -> Example:
    """The example at stream `position`: a seeded order, epoch after epoch."""
    epoch, k = divmod(position, len(examples))
    return examples[int(np.random.default_rng([seed, epoch]).permutation(len(examples))[k])]


def next_batch(examples: list[Example], seed: int, position: int, rows: int, horizon: int
               ) -> tuple[packing.PackResult, int]:
    """The longest run of examples from `position` on that packs into one step's rows, and
    the position after it (so consumption is always a prefix of the stream: a resume neither
    repeats nor skips an example)."""
    chosen = [_as_group(example_at(examples, seed, position))]
    packed = packing.pack(chosen, rows=rows, horizon=horizon)
    while True:
        trial = [*chosen, _as_group(example_at(examples, seed, position + len(chosen)))]
        attempt = packing.pack(trial, rows=rows, horizon=horizon)
        if attempt.leftover:
            return packed, position + len(chosen)
        chosen, packed = trial, attempt


def _as_group(example: Example) -> packing.Trajectories:
    return packing.Trajectories(prompt=example.prompt, completions=[example.completion],
                                sampler_logps=[np.zeros(len(example.completion), np.float32)],
                                adv_G=np.zeros(1, np.float32), label=example.problem_id)


def run_sft(config: TrainConfig, log=print) -> Path:
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.for_checkpoint(None)  # SFT starts from scratch: the project's own
    examples, too_long = sft_examples(config, tokenizer)
    log(f"sft: {len(examples)} examples ({too_long} longer than {config.grpo.horizon} tokens "
        "skipped)")
    mesh = mesh_from_config(config.mesh)
    checkpointer = Checkpointer(output_dir, config.checkpoint)
    resume = find_resume(output_dir, config.checkpoint.on_corrupt)
    if resume is None:
        graphdef, state, shardings, optimizer = init_train_state(config, mesh)
        position = 0
    else:
        check_resume_config(checkpointer.saved_json("config", resume[0]), to_dict(config))
        graphdef, abstract, shardings, optimizer = abstract_train_state(config, mesh)
        restored = checkpointer.restore(abstract, resume[0])
        state, position = restored.state, int(restored.data["position"])
        log(resume_message(*resume))
    grpo = config.grpo
    rows_per_mb = grpo.rows // grpo.microbatches
    step_fn = make_train_step(graphdef, optimizer, StepSettings.from_config(grpo, loss="sft"),
                              shardings, mesh, rows_per_mb)
    sharding = batch_sharding(mesh, rows_per_mb)
    writer = MetricsWriter(output_dir, resume_step=None if resume is None else resume[0],
                           run_config=to_dict(config))
    (output_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    step = int(state.step)
    started = time.perf_counter()
    try:
        with tqdm(total=config.steps, initial=step, desc="sft", unit="step") as bar:
            while step < config.steps:
                packed, position = next_batch(examples, config.seed, position, grpo.rows,
                                              grpo.horizon)
                batch = put_global(packing.split_microbatches(packed.batch, grpo.microbatches),
                                   sharding)
                state, metrics = step_fn(state, batch)
                step += 1
                scalars = {k: float(v) for k, v in jax.device_get(metrics).items()}
                require_finite(scalars, step)  # before the checkpoint: never save a NaN state
                scalars["examples"] = float(len(packed.packed))
                scalars["tokens/trained_per_s"] = packed.tokens / max(
                    time.perf_counter() - started, 1e-9)
                started = time.perf_counter()
                writer.write(step, scalars)
                bar.update(1)
                bar.set_postfix(loss=f"{scalars['loss']:.4f}")
                best_metric(config.checkpoint, scalars, step)  # a bad name stops at step 1
                if step % config.checkpoint.every == 0 or step == config.steps:
                    checkpointer.save(state, data={"position": position}, config=to_dict(config),
                                      metrics=scalars)
    finally:
        checkpointer.wait()
        checkpointer.close()
        writer.close()
    export_dir = output_dir / "hf"
    if export_dir.exists():
        shutil.rmtree(export_dir)
    save_pretrained(nnx.merge(graphdef, state.params), export_dir)
    copy_tokenizer(None, export_dir)  # the folder is then a complete policy for `init_from`
    return output_dir
