"""Prometheus metrics for a sandbox node: counters, gauges, histograms and the text exposition.

Standard library only (sandbox nodes install without `prometheus_client`). The module owns
the metric families and their rendering in the Prometheus text format, version 0.0.4:

    # HELP sandbox_test_results_total Test executions finished, by status.
    # TYPE sandbox_test_results_total counter
    sandbox_test_results_total{status="success"} 42

Families are registered once on a `Registry` with fixed label names; every update names its
label values as keyword arguments, and a wrong label set is an error (not a new series).
Gauges can also be bound to a callback evaluated at scrape time (queue depth, busy slots),
so the exposition always shows the pool's current state instead of a stale copy.

All families are thread-safe: HTTP handler threads update them while `/metrics` renders.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Sub-second resolution where the paper's durations live (optimization-test median ~0.1 s),
# up to the 10 s service cap.
DURATION_BUCKETS_S: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)

_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _format_labels(names: Sequence[str], values: Sequence[str]) -> str:
    if not names:
        return ""
    inner = ",".join(f'{n}="{_escape_label_value(v)}"' for n, v in zip(names, values))
    return "{" + inner + "}"


class _Family:
    kind = "untyped"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = ()):
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in labelnames:
            if not _LABEL_RE.match(label) or label.startswith("__"):
                raise ValueError(f"metric {name}: invalid label name {label!r}")
        self.name = name
        self.help = help_text
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()

    def _key(self, labels: dict[str, object]) -> tuple[str, ...]:
        if set(labels) != set(self.labelnames):
            raise ValueError(
                f"metric {self.name}: labels must be exactly {list(self.labelnames)}, "
                f"got {sorted(labels)}"
            )
        return tuple(str(labels[n]) for n in self.labelnames)

    def _header(self) -> list[str]:
        return [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]

    def render(self) -> list[str]:
        raise NotImplementedError


class Counter(_Family):
    """A monotonically increasing count (resets only when the process restarts)."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = ()):
        super().__init__(name, help_text, labelnames)
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, amount: float = 1.0, **labels: object) -> None:
        if amount < 0:
            raise ValueError(f"counter {self.name} cannot decrease (amount={amount})")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: object) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def render(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        lines = self._header()
        lines += [f"{self.name}{_format_labels(self.labelnames, k)} {_format_value(v)}"
                  for k, v in items]
        return lines


class Gauge(_Family):
    """A value that goes up and down; optionally computed by a callback at scrape time.

    The callback returns either a number (no labels) or an iterable of
    `(label_values_tuple, value)` pairs.
    """

    kind = "gauge"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                 callback: Callable[[], float | Iterable[tuple[tuple[str, ...], float]]]
                 | None = None):
        super().__init__(name, help_text, labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        self._callback = callback

    def set(self, value: float, **labels: object) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = float(value)

    def value(self, **labels: object) -> float:
        return dict(self._samples()).get(self._key(labels), 0.0)

    def _samples(self) -> list[tuple[tuple[str, ...], float]]:
        if self._callback is None:
            with self._lock:
                return sorted(self._values.items())
        produced = self._callback()
        if isinstance(produced, int | float):
            if self.labelnames:
                raise ValueError(f"gauge {self.name}: callback must return labelled samples")
            return [((), float(produced))]
        samples = [(tuple(str(v) for v in key), float(val)) for key, val in produced]
        for key, _ in samples:
            if len(key) != len(self.labelnames):
                raise ValueError(f"gauge {self.name}: sample labels {key} do not match "
                                 f"{list(self.labelnames)}")
        return sorted(samples)

    def render(self) -> list[str]:
        lines = self._header()
        lines += [f"{self.name}{_format_labels(self.labelnames, k)} {_format_value(v)}"
                  for k, v in self._samples()]
        return lines


class CallbackCounter(Gauge):
    """A counter whose value is read from elsewhere at scrape time (e.g. a store's own
    monotonic counts); exposed with TYPE counter."""

    kind = "counter"

    def set(self, value: float, **labels: object) -> None:
        raise TypeError(f"counter {self.name} is read from its callback; it cannot be set")


class Histogram(_Family):
    """Cumulative-bucket histogram (`_bucket{le=...}`, `_sum`, `_count`)."""

    kind = "histogram"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                 buckets: Sequence[float] = DURATION_BUCKETS_S):
        if "le" in labelnames:
            raise ValueError(f"histogram {name}: 'le' is reserved")
        super().__init__(name, help_text, labelnames)
        bounds = [float(b) for b in buckets]
        if not bounds or any(b >= c for b, c in itertools.pairwise(bounds)):
            raise ValueError(f"histogram {name}: buckets must be strictly increasing")
        if math.isinf(bounds[-1]):
            bounds.pop()
        self.bounds = tuple(bounds)
        # Per series: per-bucket (non-cumulative) counts + the +Inf overflow, then sum.
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, value: float, **labels: object) -> None:
        key = self._key(labels)
        index = len(self.bounds)
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                index = i
                break
        with self._lock:
            counts, total = self._series.setdefault(
                key, ([0] * (len(self.bounds) + 1), [0.0]))
            counts[index] += 1
            total[0] += value

    def count(self, **labels: object) -> int:
        with self._lock:
            series = self._series.get(self._key(labels))
            return sum(series[0]) if series else 0

    def render(self) -> list[str]:
        with self._lock:
            items = sorted((k, (list(c), s[0])) for k, (c, s) in self._series.items())
        lines = self._header()
        for key, (counts, total) in items:
            cumulative = 0
            names = (*self.labelnames, "le")
            for bound, n in zip((*self.bounds, math.inf), counts):
                cumulative += n
                le = "+Inf" if math.isinf(bound) else _format_value(bound)
                lines.append(f"{self.name}_bucket{_format_labels(names, (*key, le))} "
                             f"{cumulative}")
            lines.append(f"{self.name}_sum{_format_labels(self.labelnames, key)} "
                         f"{_format_value(total)}")
            lines.append(f"{self.name}_count{_format_labels(self.labelnames, key)} "
                         f"{cumulative}")
        return lines


class Registry:
    """An ordered set of metric families rendered together at `/metrics`."""

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}
        self._lock = threading.Lock()

    def _add(self, family: _Family) -> _Family:
        with self._lock:
            if family.name in self._families:
                raise ValueError(f"metric {family.name} is already registered")
            self._families[family.name] = family
        return family

    def counter(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                callback=None) -> Counter | CallbackCounter:
        family = (Counter(name, help_text, labelnames) if callback is None
                  else CallbackCounter(name, help_text, labelnames, callback))
        return self._add(family)  # type: ignore[return-value]

    def gauge(self, name: str, help_text: str, labelnames: Sequence[str] = (),
              callback=None) -> Gauge:
        return self._add(Gauge(name, help_text, labelnames, callback))  # type: ignore[return-value]

    def histogram(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                  buckets: Sequence[float] = DURATION_BUCKETS_S) -> Histogram:
        return self._add(Histogram(name, help_text, labelnames, buckets))  # type: ignore[return-value]

    def render(self) -> str:
        """The whole exposition. A family whose callback fails is reported, not fatal."""
        with self._lock:
            families = list(self._families.values())
        lines: list[str] = []
        for family in families:
            try:
                lines += family.render()
            except Exception as err:  # a broken gauge callback must not take /metrics down
                lines.append(f"# {family.name} unavailable: {_escape_help(repr(err))}")
        return "\n".join(lines) + "\n"
