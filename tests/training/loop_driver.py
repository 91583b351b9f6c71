"""Runs one tiny GRPO run in its own process (one CPU device, as on a laptop), for test_loop.

    python tests/training/loop_driver.py OUT_DIR SLOW_TRAINER_S key=value ...

The sandbox is `HashSandbox` (a program's verdict is a hash of its text) and every completion
counts as a program, so groups carry signal without a trained model. Prints one line per log
message of the run on stdout.
"""

from __future__ import annotations

import os
import sys

# one CPU device unless LOOP_DRIVER_DEVICES says more (a rollout mesh of its own needs two)
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count="
                           + os.environ.get("LOOP_DRIVER_DEVICES", "1"))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sandbox_cluster.testing import HashSandbox

# the shared tiny config, pointed at problems with inline tests and no checkpoint: the hash
# sandbox gives groups a signal without a trained model or a materialised test
LOOP_TEST_BASE = ["init_from=null", "data.problems=[mini-012, mini-018]", "data.tests=[]",
                  "rollout.references=stored"]


def main(argv: list[str]) -> int:
    import jaxopt_rl.rollouts.worker as worker
    from jaxopt_rl.config import ConfigError
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.loop import train

    out_dir, slow, *overrides = argv
    worker.extract_program = lambda text: text or "pass"
    try:
        config = load_train_config("configs/train/tiny_qp_p30.yaml",
                                   [*LOOP_TEST_BASE, f"output_dir={out_dir}", *overrides])
        train(config, sandbox=HashSandbox(), log=lambda m: print(m, flush=True),
              slow_trainer_s=float(slow))
    except ConfigError as err:
        print(f"config error: {err}", flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
