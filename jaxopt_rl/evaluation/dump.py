"""The evaluation dump: everything a replayed evaluation needs, measured once
(docs/design/dataset-eval.md §5.5). This docstring is the format specification.

A dump is one JSON file (`.json`, or `.json.gz` compressed):

    format            "jaxopt-rl/eval-dump"
    version           1
    model             str: what produced the samples (a folder, a checkpoint, "references", ...)
    n                 int: samples drawn per problem
    created_at        ISO time (UTC)
    dataset           {name, root, fingerprint, campaigns}: the data set the problems, tests and
                      stored reference durations come from; `fingerprint` (see
                      `dataset_fingerprint`) must match for two dumps to be compared
    sampling          free-form: temperature, max_new_tokens, seed, ... (what `eval` used)
    timing_pass       {pass_id (shared by the dumps of one pass), models (the models timed in
                      it), shuffled: bool, references_included: bool, reference_runs, seed,
                      tests (the test-id patterns kept; empty: all), order: [[problem
                      index, "s"|"r", sample or reference index, rerun, model index
                      (-1: reference)], ...] (the executed order), cap_s, kinds,
                      started_at, sandbox_state: {...} (with wall_s)}
    problems          list, one per problem:
      problem_id, difficulty
      tests           {ids, kinds (T0|T+|TO), limit_s (the cap each test ran under), io_chars}
      stored_references  {ids, duration_s [T][H] raw stored seconds (null: none), usable [T][H]}
      fresh_references   null, or {ids, runs: [{status [H][T], duration_s [H][T], timing
                      [H][T]}, ...]}: the references re-executed in the same timing pass (one
                      entry per rerun)
      samples         list of {id, program (str or null: no program could be extracted),
                      status [T] (sandbox statuses; null when not executed), duration_s [T],
                      timing [T] (provenance of each duration, `sandbox_cluster.api.TIMINGS`:
                      fleet, cap, local, none; read by `timed_cells`: a timeout at its cap, a
                      fleet duration kept, none other ranked)}

Statuses are raw `sandbox_cluster.Status` values; durations are raw seconds on the live scale
(a timeout recorded at the cap). Nothing in a dump is calibrated: calibration is a replay
choice. `check_dump` validates a loaded dump and names the first bad field (replay checks every
dump it scores, read from a file or not).

Reference durations are measurements, checked as such (an error names the problem, the test
and the reference):
  * a stored duration is null (no stored value: eq. 10 reads it at the cap, and the reward
    layer counts it as lost) or a finite number in [0, max(test cap, 10 s)]: the stored
    campaign ran under the 10 s service cap, which a replay's own cap may undercut;
  * a fresh duration is a finite number >= 0, and where it would rank (`timed_cells`: a
    timeout, or a success with a fleet provenance) at most the cap of its test: it was measured
    in this pass, under it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.data.execution_table import FLEET, NONE, rankable, timed_duration, timing_code
from jaxopt_rl.rewards.records import STATUS_CODE, TEST_KINDS
from sandbox_cluster.api import Status

FORMAT = "jaxopt-rl/eval-dump"
VERSION = 1
STATUSES = frozenset(s.value for s in Status)
# the service cap the stored references were timed under (eq. 10, docs/design/rewards.md §1)
STORED_CAP_S = 10.0


def timed_cells(status, duration_s, cap_s, timing) -> tuple[np.ndarray, np.ndarray]:
    """Cells of a dump read by the one rule (`data.execution_table.timed_duration`):
    `(timed seconds, rankable)`, arrays of the shape of `status` (raw status words; `duration_s`
    and `cap_s` broadcast to it). `timing` holds provenance words, or is None where the dump
    recorded none: a missing word, like the client's old `measured`, reads as `fleet`; a word
    outside the vocabulary (the timing pass's `none: <error>` of a failed call) as `none`."""
    status_A = np.vectorize(STATUS_CODE.__getitem__, otypes=[np.int8])(
        np.asarray(status, dtype=object))
    if timing is None:
        code_A = np.full(status_A.shape, FLEET, np.int8)
    else:
        code_A = np.vectorize(timing_code, otypes=[np.int8])(np.asarray(timing, dtype=object))
        code_A = np.where(code_A < 0, NONE, code_A)
    timed_A = timed_duration(status_A, np.asarray(duration_s, float), cap_s, code_A)
    return timed_A, rankable(status_A, timed_A)


class DumpError(ValueError):
    """A dump file is malformed, or two dumps cannot be compared."""


def dataset_fingerprint(dataset) -> str:
    """A short digest of what a dump's numbers depend on in a data set: the problem list, the
    tests (ids, kinds, digests) and the stored reference durations."""
    digest = hashlib.sha256()
    for name in ("problems.jsonl", "tests.parquet", "durations.parquet"):
        path = Path(dataset.root) / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:16]


def dataset_info(dataset) -> dict[str, Any]:
    return {"name": dataset.manifest.get("name", Path(dataset.root).name),
            "root": str(dataset.root), "fingerprint": dataset_fingerprint(dataset),
            "campaigns": dataset.manifest.get("timing_campaigns", {})}


def write_dump(dump: dict[str, Any], path: str | Path) -> Path:
    check_dump(dump, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dump, separators=(",", ":"))
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def read_dump(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"evaluation dump not found: {path}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt") as handle:
                dump = json.load(handle)
        else:
            dump = json.loads(path.read_text())
    except (OSError, EOFError, ValueError) as err:  # ValueError: JSON, UTF-8, digit limit
        raise DumpError(f"{path}: not a JSON evaluation dump ({err})") from None
    except RecursionError:
        raise DumpError(f"{path}: not a JSON evaluation dump (nested too deeply)") from None
    check_dump(dump, str(path))
    return dump


def _fail(source: str, where: str, message: str) -> DumpError:
    return DumpError(f"{source}: {where}: {message}")


def check_dump(dump: Any, source: str = "dump") -> None:
    """Raise DumpError naming the first malformed field. A field of the wrong JSON type where
    the checks below expect a list or an object is a DumpError too (never a TypeError)."""
    try:
        _check_dump(dump, source)
    except (TypeError, AttributeError, KeyError, IndexError) as err:
        raise _fail(source, "structure", f"a field has the wrong JSON type ({type(err).__name__}: "
                    f"{str(err)[:200]})") from None
    except RecursionError:
        raise _fail(source, "structure", "nested too deeply") from None


def _check_dump(dump: Any, source: str) -> None:
    if not isinstance(dump, dict) or dump.get("format") != FORMAT:
        raise _fail(source, "format", f"not an evaluation dump (expected format {FORMAT!r})")
    if dump.get("version") != VERSION:
        raise _fail(source, "version", f"{dump.get('version')!r}, this code reads {VERSION}")
    for key in ("model", "n", "dataset", "timing_pass", "problems"):
        if key not in dump:
            raise _fail(source, key, "missing")
    if not isinstance(dump["n"], int) or dump["n"] < 1:
        raise _fail(source, "n", f"must be a positive integer, got {dump['n']!r}")
    if not dump["problems"]:
        raise _fail(source, "problems", "empty: a dump needs at least one problem")
    if not isinstance(dump["model"], str):
        raise _fail(source, "model", f"must be a string, got {dump['model']!r}")
    for key in ("dataset", "timing_pass"):
        if not isinstance(dump[key], dict):
            raise _fail(source, key, "must be an object")
    if not isinstance(dump["problems"], list):
        raise _fail(source, "problems", "must be a list")
    if "fingerprint" not in dump["dataset"]:
        raise _fail(source, "dataset.fingerprint", "missing")
    seen = set()
    for p, problem in enumerate(dump["problems"]):
        _check_problem(problem, f"problems[{p}]", source)
        if problem["problem_id"] in seen:
            raise _fail(source, f"problems[{p}].problem_id",
                        f"{problem['problem_id']!r} appears twice")
        seen.add(problem["problem_id"])


def _check_problem(problem: dict, where: str, source: str) -> None:
    for key in ("problem_id", "difficulty", "tests", "stored_references", "samples"):
        if key not in problem:
            raise _fail(source, f"{where}.{key}", "missing")
    for key in ("problem_id", "difficulty"):
        if not isinstance(problem[key], str):
            raise _fail(source, f"{where}.{key}", f"must be a string, got {problem[key]!r}")
    try:  # a JSON "\ud800" decodes to a lone surrogate, which no report can print
        problem["problem_id"].encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(source, f"{where}.problem_id", "holds a lone surrogate escape") from None
    tests = problem["tests"]
    num_tests = len(tests.get("ids", []))
    if num_tests == 0:
        raise _fail(source, f"{where}.tests.ids", "a problem needs at least one test")
    for key in ("kinds", "limit_s", "io_chars"):
        if len(tests.get(key, [])) != num_tests:
            raise _fail(source, f"{where}.tests.{key}", f"needs {num_tests} entries")
    for t, kind in enumerate(tests["kinds"]):
        if kind not in TEST_KINDS:
            raise _fail(source, f"{where}.tests.kinds[{t}]", f"{kind!r} is not one of {TEST_KINDS}")
    for t, chars in enumerate(tests["io_chars"]):
        if isinstance(chars, bool) or not isinstance(chars, int) or not 0 <= chars < 2**31:
            raise _fail(source, f"{where}.tests.io_chars[{t}]",
                        f"must be an integer in [0, 2^31), got {chars!r}")
    for t, cap in enumerate(tests["limit_s"]):
        if isinstance(cap, bool) or not (isinstance(cap, int | float) and 0 < cap <= 86_400):
            raise _fail(source, f"{where}.tests.limit_s[{t}]",
                        f"must be a number of seconds in (0, 86400], got {cap!r}")
    refs = problem["stored_references"]
    num_refs = len(refs.get("ids", []))
    for key in ("duration_s", "usable"):
        rows = refs.get(key, [])
        if len(rows) != num_tests or any(len(row) != num_refs for row in rows):
            raise _fail(source, f"{where}.stored_references.{key}",
                        f"must be [{num_tests}][{num_refs}] (tests x references)")
    for t, row in enumerate(refs["usable"]):
        for h, flag in enumerate(row):
            if not isinstance(flag, bool):
                raise _fail(source, f"{where}.stored_references.usable[{t}][{h}]",
                            f"must be true or false, got {flag!r}")
    _check_stored_durations(problem, where, source)
    fresh = problem.get("fresh_references")
    if fresh is not None:
        num_fresh = len(fresh.get("ids", []))
        unknown = [h for h in fresh.get("ids", []) if h not in refs.get("ids", [])]
        if unknown:
            raise _fail(source, f"{where}.fresh_references.ids",
                        f"{unknown[0]!r} is not a stored reference of the problem")
        for r, run in enumerate(fresh.get("runs", [])):
            for key in ("status", "duration_s"):
                rows = run.get(key, [])
                if len(rows) != num_fresh or any(len(row) != num_tests for row in rows):
                    raise _fail(source, f"{where}.fresh_references.runs[{r}].{key}",
                                f"must be [{num_fresh}][{num_tests}] (references x tests)")
            _check_statuses(run["status"], f"{where}.fresh_references.runs[{r}].status", source)
            for h, words in enumerate(run.get("timing") or []):
                _check_timing_words(words, num_tests,
                                    f"{where}.fresh_references.runs[{r}].timing[{h}]", source)
            _check_fresh_durations(problem, run, f"{where}.fresh_references.runs[{r}]", source)
    if not problem["samples"]:
        raise _fail(source, f"{where}.samples", "empty")
    for g, sample in enumerate(problem["samples"]):
        here = f"{where}.samples[{g}]"
        status = sample.get("status")
        if status is None:
            if sample.get("program") is not None:
                raise _fail(source, f"{here}.status", "a sample with a program must be executed")
            continue
        if len(status) != num_tests or len(sample.get("duration_s", [])) != num_tests:
            raise _fail(source, here, f"status and duration_s need {num_tests} entries")
        _check_statuses([status], f"{here}.status", source)
        _check_timing_words(sample.get("timing"), num_tests, f"{here}.timing", source)
        for t, value in enumerate(sample["duration_s"]):
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise _fail(source, f"{here}.duration_s[{t}]", f"must be finite >= 0, got {value!r}")


def _check_timing_words(words: Any, count: int, where: str, source: str) -> None:
    """A row of provenance words: absent (null), or `count` strings or nulls."""
    if words is None:
        return
    if not isinstance(words, list) or len(words) != count:
        raise _fail(source, where, f"must be null or a list of {count} provenance words")
    for t, word in enumerate(words):
        if word is not None and not isinstance(word, str):
            raise _fail(source, f"{where}[{t}]", f"must be a provenance word, got {word!r}")


def _seconds(value) -> float | None:
    """A JSON number as a float (None for anything else, booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _check_stored_durations(problem: dict, where: str, source: str) -> None:
    tests, refs = problem["tests"], problem["stored_references"]
    for t, row in enumerate(refs["duration_s"]):
        bound = max(float(tests["limit_s"][t]), STORED_CAP_S)
        for h, value in enumerate(row):
            if value is None:
                continue  # no stored value: read at the cap (eq. 10) and counted as lost
            seconds = _seconds(value)
            if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= bound:
                raise _fail(source, f"{where}.stored_references.duration_s[{t}][{h}]",
                            f"problem {problem['problem_id']!r}, test {tests['ids'][t]!r}, "
                            f"reference {refs['ids'][h]!r}: a stored duration must be null or "
                            f"a finite number of seconds in [0, {bound:g}], got {value!r}")


def _check_fresh_durations(problem: dict, run: dict, where: str, source: str) -> None:
    tests, ids = problem["tests"], problem["fresh_references"]["ids"]
    if not ids:
        return
    _, ranked_HT = timed_cells(run["status"], np.zeros((len(ids), len(tests["ids"]))),
                               np.asarray(tests["limit_s"], float), run.get("timing") or None)
    for h, row in enumerate(run["duration_s"]):
        for t, value in enumerate(row):
            seconds = _seconds(value)
            cap = float(tests["limit_s"][t])
            ranked = bool(ranked_HT[h, t])
            if (seconds is None or not math.isfinite(seconds) or seconds < 0
                    or (ranked and seconds > cap)):
                bound = f"[0, {cap:g}] (the test's cap)" if ranked else ">= 0"
                raise _fail(source, f"{where}.duration_s[{h}][{t}]",
                            f"problem {problem['problem_id']!r}, test {tests['ids'][t]!r}, "
                            f"reference {ids[h]!r}: a fresh {run['status'][h][t]} duration must "
                            f"be a finite number of seconds in {bound}, got {value!r}")


def _check_statuses(rows, where: str, source: str) -> None:
    for row in rows:
        for t, value in enumerate(row):
            if value not in STATUSES:
                raise _fail(source, f"{where}[{t}]", f"{value!r} is not a sandbox status")


def check_comparable(dumps: list[dict], names: list[str]) -> None:
    """Dumps compared side by side must come from the same data set (same fingerprint)."""
    first = dumps[0]["dataset"]["fingerprint"]
    for dump, name in zip(dumps[1:], names[1:]):
        if dump["dataset"]["fingerprint"] != first:
            raise DumpError(f"{name}: dump from another data set ({dump['dataset'].get('name')} "
                            f"fingerprint {dump['dataset']['fingerprint']}) than {names[0]} "
                            f"({dumps[0]['dataset'].get('name')} fingerprint {first})")
