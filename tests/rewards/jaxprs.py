"""Walk a traced computation: every equation of a jaxpr and of the jaxprs nested in it (jit,
while/fori loops, conditionals). Used by tests that pin what a kernel never builds."""

from __future__ import annotations

from collections.abc import Iterator

import jax
from jax.extend import core as jex_core


def equations(fn, *args, **kwargs) -> Iterator[jex_core.JaxprEqn]:
    """Every equation of `jax.make_jaxpr(fn)(*args, **kwargs)`, nested ones included."""
    yield from _walk(jax.make_jaxpr(fn, **kwargs)(*args).jaxpr)


def _walk(jaxpr) -> Iterator[jex_core.JaxprEqn]:
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                if isinstance(sub, jex_core.ClosedJaxpr):
                    yield from _walk(sub.jaxpr)
                elif isinstance(sub, jex_core.Jaxpr):
                    yield from _walk(sub)


def max_rank(fn, *args) -> int:
    """The largest number of dimensions of any value the computation produces."""
    return max((v.aval.ndim for eqn in equations(fn, *args) for v in eqn.outvars), default=0)


def primitives(fn, *args) -> set[str]:
    return {eqn.primitive.name for eqn in equations(fn, *args)}
