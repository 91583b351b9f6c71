"""`DataCursor`: which prompt-stream positions the trainer has consumed, as a checkpoint holds it.

A position is consumed when its group was trained or dropped (stale, no signal, no baseline);
a group in flight or waiting in the queue at a checkpoint is not, so a resumed run samples it
again and never skips or repeats a prompt.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class DataCursor:
    """Which loader positions the trainer has consumed (see the module docstring)."""

    next_position: int = 0  # every position below is consumed
    consumed_above: set[int] = dataclasses.field(default_factory=set)

    def consume(self, position: int) -> None:
        self.consumed_above.add(position)
        while self.next_position in self.consumed_above:
            self.consumed_above.discard(self.next_position)
            self.next_position += 1

    def to_json(self) -> dict[str, Any]:
        return {"next_position": self.next_position, "consumed_above": sorted(self.consumed_above)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DataCursor:
        return cls(int(data["next_position"]), {int(p) for p in data["consumed_above"]})
