"""Prometheus exposition: exact text for small cases, histogram counts vs a slow reference."""

import math
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_cluster.metrics import Counter, Gauge, Histogram, Registry

_SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A small independent parser of the text format (sample lines; comments skipped)."""
    samples = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("#"):  # HELP, TYPE and plain comments
            continue
        match = _SAMPLE_RE.match(line)
        assert match, f"not a sample line: {line!r}"
        labels = tuple(
            (k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
            for k, v in _LABEL_RE.findall(match.group(3) or ""))
        samples[(match.group(1), labels)] = float(match.group(4).replace("Inf", "inf"))
    return samples


def test_counter_and_gauge_exact_text():
    registry = Registry()
    c = registry.counter("jobs_total", "Jobs done.", ("status",))
    g = registry.gauge("depth", "Queue depth.")
    c.inc(status="success")
    c.inc(2, status="timeout")
    g.set(3.5)
    assert registry.render() == (
        "# HELP jobs_total Jobs done.\n"
        "# TYPE jobs_total counter\n"
        'jobs_total{status="success"} 1\n'
        'jobs_total{status="timeout"} 2\n'
        "# HELP depth Queue depth.\n"
        "# TYPE depth gauge\n"
        "depth 3.5\n"
    )


def test_label_values_and_help_are_escaped():
    registry = Registry()
    c = registry.counter("odd_total", "line one\nback\\slash", ("v",))
    value = 'quote " back \\ newline \n end'
    c.inc(v=value)
    text = registry.render()
    assert "# HELP odd_total line one\\nback\\\\slash" in text
    assert parse_exposition(text)[("odd_total", (("v", value),))] == 1


def test_wrong_labels_and_bad_names_are_rejected():
    c = Counter("x_total", "x", ("a",))
    with pytest.raises(ValueError, match="labels must be exactly"):
        c.inc(b="1")
    with pytest.raises(ValueError, match="cannot decrease"):
        c.inc(-1, a="1")
    with pytest.raises(ValueError, match="invalid metric name"):
        Counter("1bad", "x")
    with pytest.raises(ValueError, match="reserved"):
        Histogram("h", "x", ("le",))
    with pytest.raises(ValueError, match="strictly increasing"):
        Histogram("h", "x", buckets=(1.0, 1.0))
    registry = Registry()
    registry.counter("dup", "x")
    with pytest.raises(ValueError, match="already registered"):
        registry.counter("dup", "y")


def test_gauge_callback_is_read_at_scrape_time_and_failures_are_contained():
    state = {"v": 1.0}
    registry = Registry()
    registry.gauge("live", "live value", callback=lambda: state["v"])
    registry.gauge("by_feature", "labelled", ("feature",),
                   callback=lambda: [(("cpuset",), 1.0), (("seccomp",), 0.0)])
    registry.gauge("broken", "raises", callback=lambda: 1 / 0)
    registry.counter("after_total", "still rendered").inc()
    state["v"] = 7.0
    text = registry.render()
    samples = parse_exposition(text)
    assert samples[("live", ())] == 7.0
    assert samples[("by_feature", (("feature", "cpuset"),))] == 1.0
    assert "# broken unavailable: ZeroDivisionError" in text
    assert samples[("after_total", ())] == 1.0
    assert Gauge("g", "g", callback=lambda: 4).value() == 4.0
    counted = Registry()
    counted.counter("reads_total", "from a store", callback=lambda: 12)
    assert counted.render() == ("# HELP reads_total from a store\n# TYPE reads_total counter\n"
                                "reads_total 12\n")


@given(st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), max_size=200))
def test_histogram_matches_a_slow_reference(values):
    bounds = (0.01, 0.1, 1.0, 10.0)
    h = Histogram("d_seconds", "durations", ("status",), buckets=bounds)
    for v in values:
        h.observe(v, status="success")
    samples = parse_exposition("\n".join(h.render()) + "\n")
    if not values:
        assert not samples
        return
    for bound in (*bounds, math.inf):
        le = "+Inf" if math.isinf(bound) else repr(bound).rstrip("0").rstrip(".")
        le = {"0.01": "0.01", "0.1": "0.1", "1": "1", "10": "10"}.get(le, le)
        expected = sum(1 for v in values if v <= bound)  # cumulative, le is inclusive
        assert samples[("d_seconds_bucket", (("status", "success"), ("le", le)))] == expected
    assert samples[("d_seconds_count", (("status", "success"),))] == len(values)
    assert samples[("d_seconds_sum", (("status", "success"),))] == pytest.approx(sum(values))
    assert h.count(status="success") == len(values)


def test_counter_is_thread_safe():
    c = Counter("n_total", "n")

    def work():
        for _ in range(2000):
            c.inc()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.value() == 16000
