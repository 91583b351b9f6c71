"""Generate `example_records.jsonl`: a small, realistic, deterministic execution-record file.

Six problems x 8 rollouts, 14-40 tests each (T0 original, T+ generated correctness, TO generated
optimization), 8-30 reference solutions with stored durations on the optimization tests.
Durations follow the shape of DMC-Optim (docs/design/dataset-eval.md §1,
docs/design/sandbox-timing.md §1): tiny correctness tests, optimization tests whose reference
medians spread from ~50 ms to seconds, a 10 s service cap with timeouts recorded at the cap.

Each rollout follows a profile, so every reward path has something to show:
  fast / typical / slow   correct, at 0.5x / 1x / 2x the median reference speed;
  quadratic               correct but super-linear: times out (at 10 s) on the largest tests;
  wrong_plus              passes T0, fails a generated correctness test (MC catches it);
  wrong_opt               passes every correctness test, wrong answer on one optimization test;
  crash                   runtime errors on some tests;
  memory                  exceeds the memory limit on the largest optimization tests;
  infra                   typical, but the sandbox returned infra_error on one test (the only
                          one in the file): its reward is undefined, never a failure.
References: per-solution speed factors, a few quadratic ones, one stored duration of 0 (a lost
measurement, sanitised to the cap by eq. 10 of docs/design/rewards.md §1) and one missing row
(unusable there).

Run from the repository root; it rewrites the shipped file byte for byte:
    python -m jaxopt_rl.data.examples.make_example_records
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from jaxopt_rl.data.execution_records import ExecutionRecord, ReferenceDuration, write_records
from sandbox_cluster.api import Status

SEED = 20240611
CAP_S = 10.0

# (problem id, log-median optimization workload in s, tests (T0, T+, TO), references, profiles)
PROBLEMS = (
    ("cf-1466F", -2.6, (5, 6, 12), 24,
     ("fast", "typical", "typical", "slow", "wrong_plus", "typical", "fast", "crash")),
    ("cf-1398C", -1.2, (6, 8, 16), 30,
     ("typical", "quadratic", "quadratic", "typical", "wrong_opt", "fast", "typical", "slow")),
    ("cf-1420B", -1.9, (4, 4, 6), 12,
     ("typical", "typical", "fast", "infra", "wrong_plus", "slow", "typical", "memory")),
    ("cf-1366D", -0.4, (8, 12, 20), 18,
     ("quadratic", "quadratic", "typical", "slow", "crash", "wrong_opt", "typical", "fast")),
    ("cf-1455E", -1.5, (5, 7, 10), 8,
     ("crash", "wrong_plus", "wrong_plus", "crash", "wrong_opt", "crash", "wrong_plus", "typical")),
    ("cf-1433F", -2.2, (6, 6, 14), 20,
     ("fast", "fast", "typical", "typical", "typical", "fast", "slow", "typical")),
)
SPEED = {"fast": (0.35, 0.7), "typical": (0.8, 1.3), "slow": (1.8, 2.6), "quadratic": (0.9, 1.2)}


def _measure(rng: np.random.Generator, true_s: float) -> float:
    """A timed run: multiplicative and additive noise of the scale of docs/design/sandbox-timing.md
    §3.3."""
    noisy = true_s * (1 + rng.normal(0, 0.05)) + abs(rng.normal(0.004, 0.003))
    return round(min(CAP_S, max(0.001, noisy)), 4)


def _test_layout(rng, counts):
    """(test id, kind, io_chars, workload at median reference speed in s) per test."""
    layout = []
    for kind, count, prefix in zip(("T0", "T+", "TO"), counts, ("t0", "tp", "to")):
        for k in range(count):
            if kind == "TO":
                io_chars = int(10 ** rng.uniform(3, 6.3))
                layout.append((f"{prefix}-{k:02d}", kind, io_chars, None))
            else:
                io_chars = int(rng.integers(12, 60 if kind == "T0" else 400))
                layout.append((f"{prefix}-{k:02d}", kind, io_chars, float(rng.uniform(0.015, 0.06))))
    return layout


def build_example(seed: int = SEED) -> tuple[list[ExecutionRecord], list[ReferenceDuration]]:
    rng = np.random.default_rng(seed)
    executions: list[ExecutionRecord] = []
    references: list[ReferenceDuration] = []
    for problem_index, (problem, log_median, counts, num_refs, profiles) in enumerate(PROBLEMS):
        layout = _test_layout(rng, counts)
        opt = [i for i, (_, kind, _, _) in enumerate(layout) if kind == "TO"]
        # optimization workloads grow with input size; the largest few dominate
        sizes = np.sort(rng.uniform(0, 1, len(opt)))
        work = np.exp(log_median + 2.0 * (sizes - 0.5) + rng.normal(0, 0.25, len(opt)))
        layout = [(tid, kind, chars, w if kind != "TO" else float(work[opt.index(i)]))
                  for i, (tid, kind, chars, w) in enumerate(layout)]
        largest = {layout[i][0] for i in opt[-max(1, len(opt) // 5):]}

        for h in range(num_refs):
            speed = float(np.exp(rng.normal(0, 0.45)))
            quadratic = rng.uniform() < 0.15
            for i in opt:
                tid, _, _, w = layout[i]
                true_s = w * speed * ((1 + 20 * w) if quadratic else 1.0)
                duration = _measure(rng, true_s)
                if problem_index == 2 and h == 3 and tid == "to-01":
                    continue  # a reference with no stored duration on this test
                if problem_index == 2 and h == 5 and tid == "to-02":
                    duration = 0.0  # a lost measurement: eq. 10 maps it to the cap
                references.append(ReferenceDuration(problem, tid, f"h{h:02d}", duration))

        for r, profile in enumerate(profiles):
            speed = float(rng.uniform(*SPEED.get(profile, SPEED["typical"])))
            wrong_plus = {tid for tid, kind, _, _ in layout if kind == "T+"}
            wrong_plus = set(rng.choice(sorted(wrong_plus), size=1)) if wrong_plus else set()
            wrong_opt = set(rng.choice(sorted(layout[i][0] for i in opt), size=1))
            crash_rate = float(rng.uniform(0.2, 0.6))
            infra_test = layout[opt[len(opt) // 2]][0]
            wrong_tests = {"wrong_plus": wrong_plus, "wrong_opt": wrong_opt}.get(profile, set())
            for tid, kind, chars, w in layout:
                true_s = w * speed * ((1 + 20 * w) if profile == "quadratic" else 1.0)
                status, duration = Status.SUCCESS, _measure(rng, true_s)
                if duration >= CAP_S or true_s >= CAP_S:
                    status, duration = Status.TIMEOUT, CAP_S
                if tid in wrong_tests:
                    status = Status.WRONG_ANSWER
                elif profile == "crash" and rng.uniform() < crash_rate:
                    status, duration = Status.RUNTIME_ERROR, round(float(rng.uniform(0.01, 0.03)), 4)
                elif profile == "memory" and tid in largest:
                    status, duration = Status.MEMORY_LIMIT, round(min(CAP_S, 0.4 * duration), 4)
                elif profile == "infra" and tid == infra_test:
                    status, duration = Status.INFRA_ERROR, 0.0
                cpu_s = round(duration * 0.97, 4) if status is not Status.INFRA_ERROR else None
                executions.append(ExecutionRecord(problem, f"r{r}", tid, kind, status, duration,
                                                  CAP_S, chars, cpu_s))
    return executions, references


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("example_records.jsonl"))
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    executions, references = build_example(args.seed)
    write_records(args.out, executions, references)
    print(f"wrote {len(executions)} execution rows and {len(references)} reference rows "
          f"to {args.out}")


if __name__ == "__main__":
    main()
