"""Mutation run over the reward and sandbox modules of `TARGETS`, each against its own test
files, with cosmic-ray (mutations written to disk in scratch copies of the tree, one pytest
process per mutant: the jailed harness and jitted kernels see exactly the mutated source).

    .venv/bin/pip install -e '.[mutation]'
    .venv/bin/python benchmarks/mutation.py                      # every target, 2 workers
    .venv/bin/python benchmarks/mutation.py --only fallback records --workers 2
    .venv/bin/python benchmarks/mutation.py --report-only        # re-read the last sessions

Nothing is mutated in the working tree. Each worker is a `cosmic-ray http-worker` running in a
copy of the tree (bytecode caching off, so a mutant is always compiled from its own source);
each target is one cosmic-ray session whose mutants are spread over the workers.

Operators (a selective set, decided before the run): arithmetic and bitwise operators each
swapped for their natural counterpart (+ -, * /, // /, % //, ** *, & |, ^ |, << >>), every
comparison moved across its boundary and negated (< <= >=, == !=, is/is not, in/not in), unary
minus and `not` removed, `not` added to conditions, True/False, and/or, break/continue
swapped, every number literal moved by one, a for loop that iterates zero times, an exception
handler that catches nothing. Left out: cosmic-ray's remaining all-pairs binary swaps (e.g.
`+` -> `<<`: almost all crash at once and say nothing about the tests), decorator removal
(removing `jax.jit` is equivalent by design), and the random variable replacers.

Mutants judged equivalent (no input the module accepts can tell them from the original) are
listed in EQUIVALENT with the reason; they are counted but excluded from the rate. Output:
`OUT/report.json` and `OUT/report.md` (per target: mutants, killed, survived, equivalent,
timeouts, the survivors' lines) and a summary line on stdout. Exit status 0 iff every target's
non-equivalent survivors are at most `--max-survival` of its non-equivalent mutants.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from escaped_bugs import copy_tree  # the same scratch copy of the tree

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    module: str
    tests: tuple[str, ...]
    # Only mutants inside these functions count (the timing part of the harness); None: all.
    functions: tuple[str, ...] | None = None


TARGETS = {
    "records": Target("jaxopt_rl/rewards/records.py", (
        "tests/rewards/test_records.py", "tests/rewards/test_status_classes_from_spec.py",
        "tests/rewards/test_unearned.py")),
    "percentiles": Target("jaxopt_rl/rewards/percentiles.py", (
        "tests/rewards/test_spec_pins.py", "tests/rewards/test_percentiles.py")),
    "composition": Target("jaxopt_rl/rewards/composition.py", (
        "tests/rewards/test_composition.py",)),
    "limits": Target("jaxopt_rl/rewards/limits.py", (
        "tests/rewards/test_limits.py", "tests/rewards/test_unearned.py")),
    "checking": Target("sandbox_cluster/checking.py", ("tests/sandbox_cluster/test_checking.py",)),
    "fallback": Target("sandbox_cluster/fallback.py", (
        "tests/sandbox_cluster/test_fallback_spec.py", "tests/sandbox_cluster/test_fallback.py",
        "tests/sandbox_cluster/test_spec_tables.py")),
    "harness_timing": Target("sandbox_cluster/harness.py", (
        "tests/sandbox_cluster/test_timed_window.py", "tests/sandbox_cluster/test_harness.py"),
        functions=("_child_main", "_wait_exit", "run_test", "_run_child")),
}

_BINARY_KEPT = {("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"),
                ("FloorDiv", "Div"), ("Mod", "FloorDiv"), ("Pow", "Mul"), ("BitAnd", "BitOr"),
                ("BitOr", "BitAnd"), ("BitXor", "BitOr"), ("LShift", "RShift"),
                ("RShift", "LShift")}
_COMPARISON_KEPT = {("Lt", "LtE"), ("Lt", "GtE"), ("LtE", "Lt"), ("LtE", "Gt"), ("Gt", "GtE"),
                    ("Gt", "LtE"), ("GtE", "Gt"), ("GtE", "Lt"), ("Eq", "NotEq"),
                    ("NotEq", "Eq"), ("Is", "IsNot"), ("IsNot", "Is"), ("In", "NotIn"),
                    ("NotIn", "In")}
_UNARY_KEPT = {("USub", "UAdd"), ("Not", "Delete"), ("Invert", "Delete")}
_OTHER_KEPT = {"AddNot", "ReplaceTrueWithFalse", "ReplaceFalseWithTrue", "ReplaceAndWithOr",
               "ReplaceOrWithAnd", "ReplaceBreakWithContinue", "ReplaceContinueWithBreak",
               "NumberReplacer", "ZeroIterationForLoop", "ExceptionReplacer"}


def operator_kept(name: str) -> bool:
    op = name.removeprefix("core/")
    pair = re.fullmatch(r"Replace(Binary|Comparison|Unary)Operator_([A-Za-z]+)_([A-Za-z]+)", op)
    if pair:
        kind, old, new = pair.groups()
        kept = {"Binary": _BINARY_KEPT, "Comparison": _COMPARISON_KEPT, "Unary": _UNARY_KEPT}
        return (old, new) in kept[kind]
    return op in _OTHER_KEPT


# (target, original line, mutated line), both stripped -> why no input the module accepts
# can tell the mutant from the original. Keyed by text, not line number: an edit of the line
# turns its entry off (the mutant then counts as a survivor until judged again).
_UNREACHABLE_INPUT_ERROR = ("unreachable from every entry: api.RunRequest refuses a function or "
                            "checker test input that is not a JSON object before it reaches a "
                            "jail; the harness's own check is defence in depth")
_UNREACHABLE_SETUP_FAILURE = ("the child's setup (dup2, setsid, setresuid, the per-test rlimits, "
                              "all within the jail's hard limits) cannot fail for any request "
                              "api.RunRequest accepts; only the infra_error's detail would differ")
_UNREAD_PARSE_S = ("the result header's parse_s is read by nothing (jails.session takes "
                   "duration_s, which has the parse subtracted); a diagnostic only")
_LAST_AXIS_OF_2D = "the array is [P, H] (2-D, jit-traced with that rank): axis +1 is axis -1"
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("harness_timing", 'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])',
     'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[: 2001])'):
        "the setup report is read whole (one 4096-byte read); the cap only keeps it under that",
    ("harness_timing", 'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])',
     'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[: 1999])'):
        "the setup report is read whole (one 4096-byte read); the cap only keeps it under that",
    ("harness_timing", "status = 1", "status = 2"):
        "reached only if _run_program raises (it catches BaseException around every step but "
        "the answer write); any non-zero exit is the same runtime error",
    ("harness_timing", "status = 1", "status = 0"):
        "reached only if a signal handler raises during the answer write; the answer is then "
        "cut short, so the verdict is a failure either way (wrong answer, not runtime error)",
    ("harness_timing", "except _InputError as exc:", "except CosmicRayTestingException as exc:"):
        _UNREACHABLE_INPUT_ERROR,
    ("harness_timing", 'os.write(3, b"I" + str(exc).encode()[:2000])',
     'os.write(3, b"I" + str(exc).encode()[: 2001])'): _UNREACHABLE_INPUT_ERROR,
    ("harness_timing", 'os.write(3, b"I" + str(exc).encode()[:2000])',
     'os.write(3, b"I" + str(exc).encode()[: 1999])'): _UNREACHABLE_INPUT_ERROR,
    ("harness_timing", '"input_error": setup_report[1:].decode("utf-8", "replace"),',
     '"input_error": setup_report[ 0:].decode("utf-8", "replace"),'): _UNREACHABLE_INPUT_ERROR,
    ("harness_timing", '"input_error": setup_report[1:].decode("utf-8", "replace"),',
     '"input_error": setup_report[ 2:].decode("utf-8", "replace"),'): _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'os.write(3, b"I" + str(exc).encode()[:2000])',
     'os.write(3, b"I" - str(exc).encode()[:2000])'):
        _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'os.write(3, b"I" + str(exc).encode()[:2000])',
     'os.write( 4, b"I" + str(exc).encode()[:2000])'):
        _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'os.write(3, b"I" + str(exc).encode()[:2000])',
     'os.write( 2, b"I" + str(exc).encode()[:2000])'):
        _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'except BaseException as exc:',
     'except CosmicRayTestingException as exc:'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', 'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])',
     'os.write(3, b"0" - f"{type(exc).__name__}: {exc}".encode()[:2000])'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', 'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])',
     'os.write( 4, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', 'os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])',
     'os.write( 2, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', '"setup_error": "" if setup_ok else setup_report[1:].decode("utf-8", "replace"),',
     '"setup_error": "" if not setup_ok else setup_report[1:].decode("utf-8", "replace"),'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', '"setup_error": "" if setup_ok else setup_report[1:].decode("utf-8", "replace"),',
     '"setup_error": "" if setup_ok else setup_report[ 2:].decode("utf-8", "replace"),'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', '"setup_error": "" if setup_ok else setup_report[1:].decode("utf-8", "replace"),',
     '"setup_error": "" if setup_ok else setup_report[ 0:].decode("utf-8", "replace"),'):
        _UNREACHABLE_SETUP_FAILURE,
    ('harness_timing', 'deadline = time.monotonic_ns() + timeout_ms * 1_000_000',
     'deadline = time.monotonic_ns() + timeout_ms * 1000001'):
        "a deadline off by one part in a million (50 ns on a 50 ms wait)",
    ('harness_timing', 'deadline = time.monotonic_ns() + timeout_ms * 1_000_000',
     'deadline = time.monotonic_ns() + timeout_ms * 999999'):
        "a deadline off by one part in a million (50 ns on a 50 ms wait)",
    ('harness_timing', 'while time.monotonic_ns() < deadline:  # kernels before 5.3: 1 ms polling',
     'while time.monotonic_ns() <= deadline:  # kernels before 5.3: 1 ms polling'):
        "differs only when the clock reads the deadline to the nanosecond: one more 1 ms poll",
    ('harness_timing', 'setup_report = os.read(job.setup_r, 4096)',
     'setup_report = os.read(job.setup_r, 4097)'):
        "a setup report is at most 2001 bytes: any read size above that reads it whole",
    ('harness_timing', 'setup_report = os.read(job.setup_r, 4096)',
     'setup_report = os.read(job.setup_r, 4095)'):
        "a setup report is at most 2001 bytes: any read size above that reads it whole",
    ('harness_timing', 'except BlockingIOError:  # the child died before its setup finished',
     'except CosmicRayTestingException:  # the child died before its setup finished'):
        "the child dies before its setup report only if killed from outside (the jail OOM-killed) before any program code runs; no program or input reaches it",
    ('harness_timing', 'parse_ns = struct.unpack(">Q", setup_report[1:9])[0] if setup_ok else 0',
     'parse_ns = struct.unpack(">Q", setup_report[1: 10])[0] if setup_ok else 0'):
        "setup_ok means the report is exactly 9 bytes: [1:9] and [1:10] are the same 8",
    ('harness_timing', '"parse_s": parse_ns / 1e9,',
     '"parse_s": parse_ns * 1e9,'):
        _UNREAD_PARSE_S,
    ('harness_timing', '"parse_s": parse_ns / 1e9,',
     '"parse_s": parse_ns / 1000000001.0,'):
        _UNREAD_PARSE_S,
    ('harness_timing', '"parse_s": parse_ns / 1e9,',
     '"parse_s": parse_ns / 999999999.0,'):
        _UNREAD_PARSE_S,
    ('harness_timing', 'if setup_report[:1] == b"I":',
     'if setup_report[: 2] == b"I":'):
        _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'if setup_report[:1] == b"I":',
     'if setup_report[: 0] == b"I":'):
        _UNREACHABLE_INPUT_ERROR,
    ('harness_timing', 'setup_ok = setup_report[:1] == b"1" and len(setup_report) == 9',
     'setup_ok = setup_report[:1] == b"1" or len(setup_report) == 9'):
        _UNREACHABLE_SETUP_FAILURE,
    ("records", "INCONCLUSIVE = 3", "INCONCLUSIVE = 4"):
        "the class codes are used only by name (== INCONCLUSIVE, = INCONCLUSIVE); no table, "
        "order or count is indexed by their values, and INCONCLUSIVE is the largest either way",
    ("records", "if group == 0:", "if group == 1:"):
        "with one rollout per problem there is no other rollout to disagree with the first: the "
        "check finds nothing either way",
    ("records", "mask_PGT = np.asarray(self.test_mask_BT).reshape(num_problems, group, -1)",
     "mask_PGT = np.asarray(self.test_mask_BT).reshape(num_problems, group, - 2)"):
        "NumPy reads any negative size as the one unknown dimension (reshape(1, 2, -2) of 6 "
        "elements is (1, 2, 3))",
    ("records",
     "values_PGT = np.asarray(getattr(self, name)).reshape(num_problems, group, -1)",
     "values_PGT = np.asarray(getattr(self, name)).reshape(num_problems, group, - 2)"):
        "NumPy reads any negative size as the one unknown dimension (reshape(1, 2, -2) of 6 "
        "elements is (1, 2, 3))",
    ("checking", 'return line.split(":", 1)[0].strip().rsplit(".", 1)[-1]',
     'return line.split(":", 2)[0].strip().rsplit(".", 1)[-1]'):
        "only the first field is kept: splitting at one colon or at two gives the same [0]",
    ("checking", 'return line.split(":", 1)[0].strip().rsplit(".", 1)[-1]',
     'return line.split(":", 1)[0].strip().rsplit(".", 2)[-1]'):
        "only the last field is kept: splitting at the last dot or the last two gives the same "
        "[-1]",
    ("limits", "n_ranked_P = jnp.sum(ranked_PH, axis=-1).astype(jnp.float32)",
     "n_ranked_P = jnp.sum(ranked_PH, axis=+1).astype(jnp.float32)"): _LAST_AXIS_OF_2D,
    ("limits",
     "lower_HH = jnp.arange(key_PH.shape[-1])[None, :] < jnp.arange(key_PH.shape[-1])[:, None]",
     "lower_HH = jnp.arange(key_PH.shape[+1])[None, :] < jnp.arange(key_PH.shape[-1])[:, None]"):
        _LAST_AXIS_OF_2D,
    ("limits",
     "lower_HH = jnp.arange(key_PH.shape[-1])[None, :] < jnp.arange(key_PH.shape[-1])[:, None]",
     "lower_HH = jnp.arange(key_PH.shape[-1])[None, :] < jnp.arange(key_PH.shape[+1])[:, None]"):
        _LAST_AXIS_OF_2D,
    ("limits", "tied_PHH = jnp.abs(other_P1H - mine_PH1) <= RANK_TOLERANCE",
     "tied_PHH = jnp.abs(other_P1H - mine_PH1) < RANK_TOLERANCE"):
        "differs only for mean ranks exactly 1e-6 apart: distinct exact mean (mid-)ranks over T "
        "tests differ by at least 1/(2 T^2) (3e-5 at T = 128), equal ones by float32 rounding",
    ("limits",
     "return jnp.where(count_PH > 0, total_PH / jnp.maximum(count_PH, 1), jnp.nan)",
     "return jnp.where(count_PH > 0, total_PH / jnp.maximum(count_PH, 0), jnp.nan)"):
        "the guard only keeps the branch that jnp.where discards (count 0) finite; the values "
        "kept are the same, and nothing differentiates this function",
    ("limits",
     "before_PHH = (other_P1H < mine_PH1 - RANK_TOLERANCE) | (tied_PHH & lower_HH)",
     "before_PHH = (other_P1H <= mine_PH1 - RANK_TOLERANCE) | (tied_PHH & lower_HH)"):
        "differs only for mean ranks exactly 1e-6 apart (see the tie tolerance above)",
    ("composition", "binned = jnp.maximum(0.0, (9.0 - bin_) / 10.0)",
     "binned = jnp.maximum( -1.0, (9.0 - bin_) / 10.0)"):
        "q is a fraction of tests (in [0, 1]): its bin is at most 9, so (9 - bin) / 10 >= 0 "
        "and the max never binds",
    ("composition", "total_B = jnp.sum(jnp.where(mask_BT, effective_BT, 0.0), axis=-1)",
     "total_B = jnp.sum(jnp.where(mask_BT, effective_BT, 0.0), axis=+1)"):
        "the array is [B, T] (2-D, jit-traced with that rank): axis +1 is axis -1",
    ("composition",
     "dbar_B = jnp.where(count_B > 0, total_B / jnp.maximum(count_B, 1), empty_limit_s)",
     "dbar_B = jnp.where(count_B > 0, total_B / jnp.maximum(count_B, 0), empty_limit_s)"):
        "the guard only keeps the branch that jnp.where discards (count 0) finite; the values "
        "kept are the same, and nothing differentiates a reward",
    ('composition', 'return jnp.where(q == 0, 1.0, binned)',
     'return jnp.where(q == -1, 1.0, binned)'):
        "at q == 0 the bucket formula itself gives bin -1, so binned is already 1.0",
    ('composition', 'return jnp.clip(1.0 - jnp.asarray(d, jnp.float32) / scale_s, 0.0, 1.0)',
     'return jnp.clip(1.0 - jnp.asarray(d, jnp.float32) / scale_s, 0.0, 2.0)'):
        "durations are >= 0, so 1 - d / scale never exceeds 1",
    ('composition', 'd = jnp.maximum(jnp.asarray(d, jnp.float32), 1e-6)',
     'd = jnp.maximum(jnp.asarray(d, jnp.float32), -0.999999)'):
        "durations are >= 0: below 1e-6 s both give log10(d) <= -6, clipped to 1",
    ('composition', 'limit: jax.typing.ArrayLike = 10.0,',
     'limit: jax.typing.ArrayLike = 11.0,'):
        "durations are >= 0 and every value at or above the 10 s scale maps to 0: a 10 s or 11 s stand-in gives the same reward",
    ('composition', 'empty_limit_s: float = 10.0,',
     'empty_limit_s: float = 11.0,'):
        "durations are >= 0 and every value at or above the 10 s scale maps to 0: a 10 s or 11 s stand-in gives the same reward",
    ('composition', 'count_B = jnp.sum(mask_BT, axis=-1)',
     'count_B = jnp.sum(mask_BT, axis=+1)'):
        "the array is [B, T] (2-D, jit-traced with that rank): axis +1 is axis -1",
    ("fallback", "**dict(zip(TEST_KINDS, (CORRECTNESS, CORRECTNESS, OPTIMIZATION), strict=True))}",
     "**dict(zip(TEST_KINDS, (CORRECTNESS, CORRECTNESS, OPTIMIZATION), strict=False))}"):
        "zip of two constant 3-tuples (api.TEST_KINDS is pinned to three kinds by "
        "test_spec_tables): strict only acts on unequal lengths",
}


_ONE_ROLLOUT_AXIS = ("the rollout axis has size 1 here (references per rollout: G = 1); index "
                     "0, -1 and 1 (JAX clamps out-of-bounds reads) read the same element")
_UNUSED_RANKS = ("reference ranks are built but never read: this kernel reads only the "
                 "candidate's percentiles (the pool's ranks serve QP and the reference scores); "
                 "the results are bitwise equal, the mutant only does more work")
_GUARD = ("the guard only keeps the branch that jnp.where discards (count 0) finite; the values "
          "kept are the same, and nothing differentiates this function")
for _other in ("-1", "1"):
    for _orig, _mutated in (
        ("return cand_score_PG[:, 0], ref_score_PGH[:, 0]",
         f"return cand_score_PG[:, {_other}], ref_score_PGH[:, 0]"),
        ("return cand_score_PG[:, 0], ref_score_PGH[:, 0]",
         f"return cand_score_PG[:, 0], ref_score_PGH[:, {_other}]"),
        ("return _scores_jit(*args, with_references=False)[0][:, 0]",
         f"return _scores_jit(*args, with_references=False)[0][:, {_other}]"),
        ("return _qp_jit(*args, tie_tolerance)[:, 0]",
         f"return _qp_jit(*args, tie_tolerance)[:, {_other}]"),
    ):
        EQUIVALENT["percentiles", _orig, _mutated] = _ONE_ROLLOUT_AXIS
EQUIVALENT.update({
    ("percentiles", "ranks=False)", "ranks=True)"): _UNUSED_RANKS,
    ("percentiles", "test_mask_BT, ties, ranks=False)", "test_mask_BT, ties, ranks=True)"):
        _UNUSED_RANKS,
    ("percentiles",
     "q_PG = n_faster_PG / jnp.maximum(1.0, n_ranked_PG)  # N_rank - 1 = number of ranked references",
     "q_PG = n_faster_PG / jnp.maximum( 0.0, n_ranked_PG)  # N_rank - 1 = number of ranked references"):
        "no reference is ranked only when no used test has a usable reference; a(y) is NaN "
        "then (tested: test_qar_and_qp_match_loop), and so is q whatever it is divided by",
    ("percentiles",
     "args = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, False)",
     "args = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, True)"):
        _UNUSED_RANKS,
    ("percentiles",
     "exact_divide(cand_total_PG, jnp.maximum(n_used_PA, 1).astype(jnp.float32)),",
     "exact_divide(cand_total_PG, jnp.maximum(n_used_PA, 0).astype(jnp.float32)),"): _GUARD,
    ("percentiles",
     "ref_n_PAH > 0, exact_divide(ref_total_PGH, jnp.maximum(ref_n_PAH, 1.0)), jnp.nan",
     "ref_n_PAH > 0, exact_divide(ref_total_PGH, jnp.maximum(ref_n_PAH, 0.0)), jnp.nan"): _GUARD,
})


def _mutated_line(diff: str | None) -> str:
    for line in (diff or "").splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            return line[1:].strip()
    return ""


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of every annotation, if the module postpones their evaluation
    (`from __future__ import annotations`): a mutant inside one is never executed."""
    tree = ast.parse(source)
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names)
                    for node in tree.body)
    if not postponed:
        return []
    found = []
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
            annotations = [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        found += [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset))
                  for a in annotations]
    return found


def _inside(position: tuple[int, int], spans) -> bool:
    return any(start <= tuple(position) < end for start, end in spans)


def test_command(target: Target) -> str:
    return " ".join([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                     "-o", "addopts=", *target.tests])


def worker_env(tree: Path, cache_dir: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "JAX_PLATFORMS": "cpu",
            "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_PROFILE": "mutation",
            # A mutant that stops the jail from starting must fail the jail tests, not skip them.
            "JAXOPT_REQUIRE_JAILS": "1",
            # Unchanged kernels compile once for the whole run; a mutated one has its own key.
            "JAX_COMPILATION_CACHE_DIR": str(cache_dir),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def write_config(path: Path, target: Target, timeout_s: float, urls: list[str]) -> None:
    tests = ", ".join(json.dumps(t) for t in target.tests)
    path.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(target.module)}\n"
        f"timeout = {timeout_s:.0f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(test_command(target))}\n"
        f"# tests: {tests}\n"
        "[cosmic-ray.distributor]\nname = \"http\"\n"
        f"[cosmic-ray.distributor.http]\nworker-urls = {json.dumps(urls)}\n")


def cosmic(*args: str, cwd: Path, env: dict | None = None, check: bool = True):
    exe = Path(sys.executable).with_name("cosmic-ray")
    proc = subprocess.run([str(exe), *args], cwd=cwd, env=env, text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"cosmic-ray {args[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def skip_unselected(session: Path, target: Target) -> int:
    """Mark the mutants outside the chosen operators and functions as skipped."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            for mutation in item.mutations:
                outside = (target.functions is not None
                           and mutation.definition_name not in target.functions)
                if outside or not operator_kept(mutation.operator_name):
                    db.set_result(item.job_id, WorkResult(
                        output="not selected", worker_outcome=WorkerOutcome.SKIPPED))
                    skipped += 1
                    break
    return skipped


def reset_results(session: Path, target: Target, name: str, outcomes: list[str]) -> int:
    """Forget the results with these outcomes, so that `exec` runs those mutants again."""
    import sqlite3

    saved = session.with_name(f"{name}.source.py")
    if not saved.exists() or saved.read_text() != (ROOT / target.module).read_text():
        raise SystemExit(f"{name}: {target.module} changed since its session began (or the "
                         "session is missing): run it whole, without --rerun")
    clauses = {"survived": "test_outcome = 'SURVIVED'", "timeout": "output = 'timeout'"}
    with sqlite3.connect(session) as db:
        where = " OR ".join(clauses[o] for o in outcomes)
        return db.execute(f"DELETE FROM work_results WHERE {where}").rowcount


def baseline(tree: Path, target: Target, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(test_command(target), shell=True, cwd=tree, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise SystemExit(f"{target.module}: the unmutated tests fail; fix them first\n{tail}")
    last = proc.stdout.strip().splitlines()[-1]
    if "skipped" in last or "deselected" in last:  # a skipped test can kill no mutant
        raise SystemExit(f"{target.module}: the unmutated tests skip some tests ({last})")
    return time.perf_counter() - start


def read_session(name: str, session: Path) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    target = TARGETS[name]
    # The module as it was mutated (saved at init): later edits must not shift the lines.
    saved = session.with_name(f"{name}.source.py")
    text = (saved if saved.exists() else ROOT / target.module).read_text()
    source, annotations = text.splitlines(), annotation_spans(text)
    counts = {"mutants": 0, "killed": 0, "survived": 0, "equivalent": 0, "incompetent": 0,
              "timeout": 0, "pending": 0}
    survivors, equivalents = [], []
    with use_db(str(session), WorkDB.Mode.open) as db:
        results = dict(db.results)
        for item in db.work_items:
            result = results.get(item.job_id)
            if result is not None and result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            counts["mutants"] += 1
            if result is None:
                counts["pending"] += 1
                continue
            mutation = item.mutations[0]
            line = source[mutation.start_pos[0] - 1].strip()
            key = (name, line, _mutated_line(result.diff))
            if result.test_outcome == TestOutcome.SURVIVED:
                entry = {"line": mutation.start_pos[0], "col": mutation.start_pos[1],
                         "operator": mutation.operator_name,
                         "function": mutation.definition_name, "source": line,
                         "mutant": key[2]}
                why = EQUIVALENT.get(key)
                if why is None and _inside(mutation.start_pos, annotations):
                    why = "inside an annotation, which this module never evaluates"
                if why is not None:
                    counts["equivalent"] += 1
                    equivalents.append({**entry, "why": why})
                else:
                    counts["survived"] += 1
                    survivors.append(entry)
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                counts["incompetent"] += 1  # the mutant does not even import: killed
                counts["killed"] += 1
            else:
                counts["killed"] += 1
                if result.output and "timeout" in result.output.lower():
                    counts["timeout"] += 1
    judged = counts["mutants"] - counts["equivalent"] - counts["pending"]
    counts["survival"] = round(counts["survived"] / judged, 4) if judged else None
    return {"module": target.module, "tests": list(target.tests), **counts,
            "survivors": sorted(survivors, key=lambda s: s["line"]),
            "equivalents": sorted(equivalents, key=lambda s: s["line"])}


def start_workers(count: int, scratch: Path, cache_dir: Path, first_port: int):
    workers = []
    for index in range(count):
        tree = scratch / f"tree{index}"
        copy_tree(tree)
        port = first_port + index
        exe = Path(sys.executable).with_name("cosmic-ray")
        with open(scratch / f"worker{index}.log", "w") as log:  # the worker keeps its own fd
            proc = subprocess.Popen([str(exe), "http-worker", "--port", str(port)], cwd=tree,
                                    env=worker_env(tree, cache_dir), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        workers.append((tree, port, proc))
    time.sleep(3)
    for _, port, proc in workers:
        if proc.poll() is not None:
            raise SystemExit(f"cosmic-ray http-worker on port {port} exited; see its log")
    return workers


def write_report(out: Path, reports: dict, wall_s: dict) -> None:
    (out / "report.json").write_text(json.dumps({"targets": reports, "wall_s": wall_s},
                                                indent=1))
    lines = ["# Mutation run", "", "| target | mutants | killed | survived | equivalent | "
             "survival | wall |", "|---|---|---|---|---|---|---|"]
    for name, report in reports.items():
        lines.append(f"| {name} | {report['mutants']} | {report['killed']} | "
                     f"{report['survived']} | {report['equivalent']} | "
                     f"{report['survival']} | {wall_s.get(name, '')} s |")
    for name, report in reports.items():
        if report["survivors"] or report["equivalents"]:
            lines += ["", f"## {name} ({report['module']})", ""]
        for entry in report["survivors"]:
            lines.append(f"- survived L{entry['line']} `{entry['operator']}` in "
                         f"{entry['function']}: `{entry['source']}` -> `{entry['mutant']}`")
        for entry in report["equivalents"]:
            lines.append(f"- equivalent L{entry['line']} `{entry['operator']}`: "
                         f"`{entry['source']}` -> `{entry['mutant']}` ({entry['why']})")
    (out / "report.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(TARGETS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "mutation")
    parser.add_argument("--port", type=int, default=9876)
    parser.add_argument("--max-survival", type=float, default=0.10)
    parser.add_argument("--rerun", nargs="+", choices=("survived", "timeout"),
                        help="run these outcomes of the existing sessions again (after adding "
                             "tests; refused if the module changed since its session began)")
    parser.add_argument("--report-only", action="store_true",
                        help="re-read the sessions in --out (after editing EQUIVALENT)")
    args = parser.parse_args(argv)
    names = args.only or list(TARGETS)
    args.out = args.out.resolve()  # the sessions are used from inside the scratch trees
    args.out.mkdir(parents=True, exist_ok=True)
    wall_path = args.out / "wall_s.json"
    wall_s = json.loads(wall_path.read_text()) if wall_path.exists() else {}
    if not args.report_only:
        scratch = Path(tempfile.mkdtemp(prefix="mutation-"))
        cache_dir = scratch / "xla"
        workers = start_workers(args.workers, scratch, cache_dir, args.port)
        urls = [f"http://localhost:{port}" for _, port, _ in workers]
        try:
            for name in names:
                target, session = TARGETS[name], args.out / f"{name}.sqlite"
                tree = workers[0][0]
                start = time.perf_counter()
                base_s = baseline(tree, target, worker_env(tree, cache_dir))
                config = args.out / f"{name}.toml"
                write_config(config, target, max(60.0, 4 * base_s), urls)
                if args.rerun:
                    count = reset_results(session, target, name, args.rerun)
                    print(f"{name}: baseline {base_s:.1f} s, {count} mutants to run again",
                          file=sys.stderr, flush=True)
                else:
                    session.unlink(missing_ok=True)
                    cosmic("init", str(config), str(session), cwd=tree)
                    shutil.copyfile(tree / target.module, session.with_name(f"{name}.source.py"))
                    skipped = skip_unselected(session, target)
                    print(f"{name}: baseline {base_s:.1f} s, {skipped} mutants not selected",
                          file=sys.stderr, flush=True)
                cosmic("exec", str(config), str(session), cwd=tree)
                took = round(time.perf_counter() - start, 1)
                wall_s[name] = round(wall_s.get(name, 0.0) + took, 1) if args.rerun else took
                report = read_session(name, session)
                print(json.dumps({name: {k: report[k] for k in (
                    "mutants", "killed", "survived", "survival")}}), file=sys.stderr,
                    flush=True)
                wall_path.write_text(json.dumps(wall_s))
        finally:
            for _, _, proc in workers:
                os.killpg(proc.pid, signal.SIGTERM)
            shutil.rmtree(scratch, ignore_errors=True)
    reports = {name: read_session(name, args.out / f"{name}.sqlite") for name in names
               if (args.out / f"{name}.sqlite").exists()}
    write_report(args.out, reports, wall_s)
    ok = all(r["survival"] is not None and r["survival"] <= args.max_survival
             for r in reports.values())
    print(json.dumps({"benchmark": "mutation", "targets": {
        n: {k: r[k] for k in ("mutants", "killed", "survived", "equivalent", "survival")}
        for n, r in reports.items()}, "wall_s": wall_s, "within_bound": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
