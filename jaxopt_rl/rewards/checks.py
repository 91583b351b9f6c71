"""Host-side argument checks shared by the reward kernels: one message shape for a bad choice or
an out-of-range threshold, raised before tracing."""

from __future__ import annotations

import numbers

TIE_RULES = ("min", "average")


def check_choice(value: str, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(allowed)}")


def check_range(value, low: float, high: float, name: str) -> None:
    """Validate a threshold on the host when it is a plain number (traced values pass through)."""
    if isinstance(value, numbers.Real) and not low <= float(value) <= high:
        raise ValueError(f"{name}={value!r}: must lie in [{low}, {high}]")


def check_ties(ties: str) -> None:
    if ties not in TIE_RULES:
        raise ValueError(f"ties={ties!r}: expected one of {', '.join(TIE_RULES)}")
