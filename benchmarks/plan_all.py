"""Plan every accelerator config for its declared TPU slice and GPU nodes, and print the
"`jaxopt-rl plan`" table of docs/guides/benchmarks.md (markdown) and one JSON object.

    .venv/bin/python benchmarks/plan_all.py                  # compiles them all: ~1 hour here
    .venv/bin/python benchmarks/plan_all.py --from /tmp/plans --only qwen25_32b

Each plan runs `jaxopt-rl plan --config CONFIG [--gpu] --json OUT/NAME_{tpu,gpu}.json` in its own
process, one at a time (a compile takes both cores of this VM). `--from DIR` reads plans already
written there instead of compiling the missing ones. Memory columns are the compiler's figures
per chip; the MFU and decode columns are projections (roofline), not measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def plan(config: Path, kind: str, out: Path) -> dict | None:
    target = out / f"{config.stem}_{kind}.json"
    if not target.is_file():
        command = [sys.executable, "-m", "jaxopt_rl.cli", "plan", "--config", str(config),
                   "--json", str(target)] + (["--gpu"] if kind == "gpu" else [])
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS="cpu"),
                              capture_output=True, text=True)
        print(f"{config.stem} {kind}: exit {done.returncode} in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        if not target.is_file():
            print(done.stderr[-2000:], file=sys.stderr)
            return None
    return json.loads(target.read_text())


def row(name: str, result: dict) -> str:
    train, sampler = result["train"], result["sampler"]
    compile_s = train["compile_s"] + sampler["compile_s"]
    return (f"| `{name}` | {result['topology']} | {result['chips']} | "
            f"{train['peak_bytes'] / GiB:.1f} GiB ({train['headroom']:.0%}) | "
            f"{sampler['peak_bytes'] / GiB:.1f} GiB ({sampler['headroom']:.0%}) | "
            f"{'yes' if result['fits'] else '**no**'} | {compile_s / 60:.1f} min | "
            f"{train['projected_mfu']:.0%} | {sampler['tokens_per_s_per_chip']:.0f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="out", type=Path, default=Path("runs/plans"))
    parser.add_argument("--only", default="", help="configs whose name contains this")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    configs = sorted(p for p in (ROOT / "configs/train").glob("qwen*.yaml")
                     if args.only in p.stem)
    lines = ["| config | target | chips | train peak / chip (headroom) | sampler peak / chip "
             "(headroom) | fits | compile here | projected MFU | projected decode tokens/s "
             "/ chip |", "|---|---|---|---|---|---|---|---|---|"]
    results = {}
    for config in configs:
        for kind in ("tpu", "gpu"):
            result = plan(config, kind, args.out)
            if result is not None:
                results[f"{config.stem}_{kind}"] = result
                lines.append(row(config.stem, result))
    print("\n".join(lines))
    print(json.dumps({name: {"fits": r["fits"], "topology": r["topology"],
                             "train_peak_bytes": r["train"]["peak_bytes"],
                             "sampler_peak_bytes": r["sampler"]["peak_bytes"],
                             "projected_mfu": r["train"]["projected_mfu"]}
                      for name, r in results.items()}, indent=2))
    return 0 if results and all(r["fits"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
