"""Stages 1-2: decontamination + statement check, and the solution-type filter.

Decontamination (docs/design/dataset-eval.md §2 stage 1; the matcher is UNSPECIFIED there).
**Choice:** statements are normalised (lower case, alphanumeric words), cut into word n-gram
shingles (n = 8 by default), and a problem is removed when `|shared shingles| / min(|problem
shingles|, |benchmark shingles|) >= threshold` (0.5) for any benchmark statement. The
min-denominator catches a statement quoted inside a longer one. Statements shorter than n words are
compared as one shingle of all words. The LLM statement-quality filter is not reproduced: a
structural check (non-empty statement of at least `min_statement_chars`) stands in for it and is
counted in the same row.

Solution types (stage 2): keep problems with enough correct and incorrect Python solutions; the
three removal reasons (correct-only / incorrect-only / none) are reported separately. Problems
with more solutions than `max_*` keep a deterministic seeded sample.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from jaxopt_rl.data.builder.pipeline import StageContext, StageResult
from jaxopt_rl.data.schema import Problem, Solution

_WORD = re.compile(r"[a-z0-9]+")


def shingles(text: str, n: int) -> frozenset[str]:
    words = _WORD.findall(text.lower())
    if not words:
        return frozenset()
    if len(words) < n:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))


class ContaminationIndex:
    """Inverted index shingle -> benchmark statements, for overlap queries."""

    def __init__(self, statements: Iterable[tuple[str, str]], n: int):
        self.n = n
        self.sizes: dict[str, int] = {}
        self.postings: dict[str, list[str]] = defaultdict(list)
        for name, text in statements:
            grams = shingles(text, n)
            if not grams:
                continue
            self.sizes[name] = len(grams)
            for gram in grams:
                self.postings[gram].append(name)

    def best_match(self, text: str) -> tuple[str, float] | None:
        grams = shingles(text, self.n)
        if not grams:
            return None
        shared: dict[str, int] = defaultdict(int)
        for gram in grams:
            for name in self.postings.get(gram, ()):
                shared[name] += 1
        best = None
        for name, count in shared.items():
            score = count / min(len(grams), self.sizes[name])
            if best is None or (score, name) > (best[1], best[0]):
                best = (name, score)
        return best


def read_statements(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(name, statement) pairs from .jsonl / .txt files or folders of .md/.txt files."""
    result = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.suffix in (".md", ".txt") and file.is_file():
                    result.append((str(file.relative_to(path)), file.read_text()))
        elif path.suffix == ".jsonl":
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{lineno}: not valid JSON: {err}") from err
                if not isinstance(row, dict) or not isinstance(row.get("statement"), str):
                    raise ValueError(f"{path}:{lineno}: needs a string field 'statement'")
                result.append((str(row.get("id", f"{path.name}:{lineno}")), row["statement"]))
        elif path.is_file():
            chunks = re.split(r"^---+\s*$", path.read_text(), flags=re.MULTILINE)
            result.extend((f"{path.name}#{i}", c) for i, c in enumerate(chunks) if c.strip())
        else:
            raise FileNotFoundError(f"decontamination.statements: {path} does not exist")
    return result


def decontaminate(problem: Problem, context: StageContext) -> StageResult:
    config = context.config.decontamination
    if len(problem.statement.strip()) < config.min_statement_chars:
        return StageResult(None, f"statement quality: {len(problem.statement.strip())} chars "
                                 f"< {config.min_statement_chars}")
    index: ContaminationIndex | None = context.resources.get("contamination_index")
    if index is not None:
        match = index.best_match(problem.statement)
        if match is not None and match[1] >= config.threshold:
            return StageResult(None, f"contaminated: matches {match[0]!r} "
                                     f"(overlap {match[1]:.2f} >= {config.threshold})")
    return StageResult(problem)


def _sample(solutions: tuple[Solution, ...], limit: int, problem_id: str, seed: int
            ) -> tuple[Solution, ...]:
    if len(solutions) <= limit:
        return solutions

    def rank(s: Solution) -> str:
        return hashlib.sha256(f"{seed}/{problem_id}/{s.solution_id}".encode()).hexdigest()

    keep = {s.solution_id for s in sorted(solutions, key=rank)[:limit]}
    return tuple(s for s in solutions if s.solution_id in keep)


def solution_types(problem: Problem, context: StageContext) -> StageResult:
    config = context.config.solution_types
    correct = problem.solutions_of("correct")
    incorrect = problem.solutions_of("incorrect")
    if len(correct) < config.min_correct and len(incorrect) < config.min_incorrect:
        return StageResult(None, "solution types: no usable solutions")
    if len(correct) < config.min_correct:
        return StageResult(None, f"solution types: incorrect-only ({len(correct)} correct "
                                 f"< {config.min_correct})")
    if len(incorrect) < config.min_incorrect:
        return StageResult(None, f"solution types: correct-only ({len(incorrect)} incorrect "
                                 f"< {config.min_incorrect})")
    kept = (_sample(correct, config.max_correct, problem.problem_id, config.seed)
            + _sample(incorrect, config.max_incorrect, problem.problem_id, config.seed))
    return StageResult(dataclasses.replace(problem, solutions=kept))
