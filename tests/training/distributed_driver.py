"""One process of a two-process `jax.distributed` run on localhost (4 CPU devices each), for
test_distributed_run.py:

    JAXOPT_COORDINATOR_ADDRESS=127.0.0.1:PORT JAXOPT_NUM_PROCESSES=2 JAXOPT_PROCESS_ID=i \
        python tests/training/distributed_driver.py [--embedded-sandbox] OUT_DIR key=value ...

By default programs are scored by the hash sandbox (any text is a program; a group's rewards
differ by chance, so every step has signal without a trained model). `--embedded-sandbox`
runs the real programs in the embedded sandbox, from the shipped SFT policy's completions.
"""

from __future__ import annotations

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sandbox_cluster.testing import HashSandbox

# the shared tiny config, pointed at problems with inline tests and no checkpoint: the hash
# sandbox gives groups a signal without a trained model or a materialised test
LOOP_TEST_BASE = ["init_from=null", "data.problems=[mini-012, mini-018]", "data.tests=[]",
                  "rollout.references=stored"]


class _FailingAfter:
    """The hash sandbox, whose calls fail (an infrastructure error) after the first `count`."""

    def __init__(self, sandbox, count: int):
        self._sandbox, self._left = sandbox, count

    def submit(self, program, tests, limits, **options):
        from concurrent.futures import Future

        self._left -= 1
        if self._left >= 0:
            return self._sandbox.submit(program, tests, limits, **options)
        future = Future()
        future.set_exception(ConnectionError("the sandbox fleet went away"))
        return future

    def close(self):
        self._sandbox.close()


def main(argv: list[str]) -> int:
    import jaxopt_rl.rollouts.worker as worker
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.loop import train

    embedded = argv[0] == "--embedded-sandbox"
    out_dir, *overrides = argv[1:] if embedded else argv
    base = LOOP_TEST_BASE
    if embedded:  # the shipped SFT policy writes programs; they run for real
        base = [o for o in LOOP_TEST_BASE if not o.startswith("init_from")]
    else:
        worker.extract_program = lambda text: text or "pass"
    config = load_train_config("configs/train/tiny_qp_p30.yaml",
                               [*base, f"output_dir={out_dir}", *overrides])
    sandbox = None if embedded else HashSandbox()
    if os.environ.get("DRIVER_SANDBOX_FAILS_AFTER"):  # a sandbox that breaks mid-run
        sandbox = _FailingAfter(sandbox, int(os.environ["DRIVER_SANDBOX_FAILS_AFTER"]))
    train(config, sandbox=sandbox, log=lambda m: print(m, flush=True))
    import jax

    print(f"process {jax.process_index()} of {jax.process_count()}: {jax.device_count()} "
          "devices, done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
