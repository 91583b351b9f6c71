"""Test session set-up: 8 fake CPU devices and a session-wide XLA compilation cache, set before
JAX is imported anywhere.

Sharding tests build meshes over these devices; single-device tests are unaffected. Hypothesis
runs derandomised so CI failures reproduce.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = f"{_flags} --xla_force_host_platform_device_count=8".strip()

# One XLA compilation cache for the session and the trainer processes its tests start (they
# inherit the environment): a test that trains, kills and resumes a run compiles its step once,
# not three times. Fresh for each session, so no test loads what an earlier session compiled.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxopt-rl-xla-")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], True)

from hypothesis import HealthCheck, settings  # noqa: E402

_REPRODUCIBLE = {"derandomize": True, "deadline": None,
                 "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("ci", max_examples=60, **_REPRODUCIBLE)
settings.register_profile("dev", deadline=None, max_examples=200)
# benchmarks/mutation.py: one pytest process per mutant, so fewer (still derandomised) examples.
settings.register_profile("mutation", max_examples=20, **_REPRODUCIBLE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """Files with the most `slow` tests first, the rest in their usual order. pytest-xdist hands
    out whole files (`launch/local.sh test` runs `--dist loadfile --no-loadscope-reorder`): a
    long file started last would leave one worker running alone at the end."""
    slow_per_file: dict = {}
    for item in items:
        if item.get_closest_marker("slow"):
            slow_per_file[item.path] = slow_per_file.get(item.path, 0) + 1
    items.sort(key=lambda item: -slow_per_file.get(item.path, 0))  # stable
