"""Record `jaxopt-rl rewards` on the shipped example file for every shipped execution
environment, as JSON (`{env: {"problem/rollout": reward or null}}`).

Run once at a reference commit, keep the JSON beside the tests (`example_rewards_before.json`),
and `test_example_rewards.py` compares today's rewards with it, allowing only the changes it
lists with their reason (hardening the reward path was to give the same rewards as before,
except where a listed change says otherwise).

    PYTHONPATH=$PWD python tests/commands/record_example_rewards.py OUT.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def example_rewards() -> dict[str, dict[str, float | None]]:
    from jaxopt_rl.commands.rewards import compute
    from jaxopt_rl.data.examples import EXAMPLE_RECORDS
    from jaxopt_rl.rewards.env_config import available_envs, load_env_config

    out: dict[str, dict[str, float | None]] = {}
    for name in available_envs():
        env = load_env_config(name)
        if env.kind != "execution":
            continue
        results = compute(EXAMPLE_RECORDS, env)
        out[name] = {
            f"{p}/{r}": (None if math.isnan(float(v)) else float(v))
            for p, r, v in zip(results["problem_id"], results["rollout_id"], results["reward"])
        }
    return out


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    path.write_text(json.dumps(example_rewards(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
