"""The Grain pipeline that feeds prompts to training: deterministic, sharded, checkpointable.

Element order is a pure function of `(seed, epoch, process_index, process_count)`:

    epoch e uses the permutation perm_e = numpy.random.default_rng([seed, e]).permutation(N)
    process p (of n) takes positions p, p + n, p + 2n, ... of perm_e

so every epoch is a fresh global shuffle, the processes' shards of an epoch are disjoint, and
together they cover the split. With `drop_remainder` (default) each process gets N // n prompts
per epoch (the left-over positions differ per epoch, so no prompt is excluded for good);
otherwise N is padded up to a multiple of n by wrapping to the start of the permutation.
Because element i is computed from i alone, the iterator's state is just `{"next_index": i}`
(Grain's `DatasetIterator.get_state()`), which Orbax saves with the train state; `set_state`
resumes mid-epoch at exactly the next element.

Each element is a dict: problem_id, prompt (the template filled in), statement, title,
difficulty, time_limit_s, interface, epoch, index.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

import grain
import numpy as np

from jaxopt_rl.config import require
from jaxopt_rl.data.store import Dataset, ProblemRecord

DEFAULT_TEMPLATE = (
    "{statement}\n\n"
    "Write a Python 3 program that reads the input from standard input and writes the answer "
    "to standard output. It must be correct, and as fast as you can make it: it is timed on "
    "large inputs against human solutions. Answer with the complete program in one ```python "
    "code block."
)


@dataclass(frozen=True)
class PromptLoaderConfig:
    split: str = "train"
    seed: int = 0
    num_epochs: int | None = None  # None: repeat forever
    drop_remainder: bool = True
    template: str = DEFAULT_TEMPLATE  # str.format fields: statement, title, time_limit_s, ...
    problems: tuple[str, ...] = ()  # only these problem ids of the split (empty: all of it)

    def __post_init__(self) -> None:
        require(self.num_epochs is None or self.num_epochs >= 1, "num_epochs", "must be >= 1")
        require("{statement}" in self.template, "template", "must contain {statement}")


def render_prompt(record: ProblemRecord, template: str = DEFAULT_TEMPLATE) -> str:
    return template.format(statement=record.statement.strip(), title=record.title,
                           time_limit_s=record.time_limit_s, difficulty=record.difficulty,
                           signature=record.signature or "")


class PromptSource(grain.MapDataset):
    """Random-access view: index i -> the i-th prompt this process sees (over all epochs)."""

    def __init__(self, records: list[ProblemRecord], config: PromptLoaderConfig,
                 process_index: int, process_count: int):
        super().__init__([])
        if not records:
            raise ValueError(f"no problems in split {config.split!r}: nothing to train on")
        if not 0 <= process_index < process_count:
            raise ValueError(f"process_index {process_index} not in [0, {process_count})")
        self.records = records
        self.config = config
        self.process_index = process_index
        self.process_count = process_count
        n = len(records)
        self.per_shard = n // process_count if config.drop_remainder else -(-n // process_count)
        if self.per_shard == 0:
            raise ValueError(f"{n} problems cannot fill {process_count} processes with "
                             "drop_remainder=True")

    def __len__(self) -> int:
        if self.config.num_epochs is None:
            return sys.maxsize
        return self.per_shard * self.config.num_epochs

    @functools.lru_cache(maxsize=4)  # noqa: B019 - one source per run
    def _permutation(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.config.seed, epoch]).permutation(len(self.records))

    def position(self, index: int) -> tuple[int, int]:
        """(epoch, row in `records`) of element `index` of this process."""
        epoch, k = divmod(index, self.per_shard)
        pos = (k * self.process_count + self.process_index) % len(self.records)
        return epoch, int(self._permutation(epoch)[pos])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.slice(index)
        if index < 0 or index >= len(self):
            raise IndexError(f"prompt index {index} out of range")
        epoch, row = self.position(index)
        record = self.records[row]
        return {
            "problem_id": record.problem_id,
            "prompt": render_prompt(record, self.config.template),
            "statement": record.statement,
            "title": record.title,
            "difficulty": record.difficulty,
            "time_limit_s": record.time_limit_s,
            "interface": record.interface,
            "epoch": epoch,
            "index": index,
        }

    def __str__(self) -> str:
        return (f"PromptSource(split={self.config.split}, n={len(self.records)}, "
                f"process={self.process_index}/{self.process_count})")


def prompt_dataset(dataset: Dataset, config: PromptLoaderConfig | None = None,
                   process_index: int | None = None, process_count: int | None = None
                   ) -> grain.IterDataset:
    """The prompt stream of this process (defaults: `jax.process_index()` / `process_count()`)."""
    config = config or PromptLoaderConfig()
    if process_index is None or process_count is None:
        import jax

        process_index = jax.process_index() if process_index is None else process_index
        process_count = jax.process_count() if process_count is None else process_count
    ids = dataset.problem_ids(config.split)
    if config.problems:
        unknown = sorted(set(config.problems) - set(ids))
        if unknown:
            raise ValueError(f"problems {unknown} are not in split {config.split!r} of "
                             f"{dataset.root}")
        ids = [p for p in ids if p in set(config.problems)]
    records = [dataset.record(p) for p in ids]
    return PromptSource(records, config, process_index, process_count).to_iter_dataset()


def prompt_iterator(dataset: Dataset, config: PromptLoaderConfig | None = None,
                    state: dict[str, Any] | None = None, **shard: int) -> grain.DatasetIterator:
    """An iterator over `prompt_dataset`, resumed from a saved `get_state()` when given."""
    iterator = iter(prompt_dataset(dataset, config, **shard))
    if state is not None:
        iterator.set_state(state)
    return iterator
