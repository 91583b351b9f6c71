"""Print what `benchmarks/device_check.sh` measured on a GPU beside what `jaxopt-rl plan`
predicted for the same programs (run by the script; reads the JSON files in its output folder).

    python benchmarks/device_compare.py /tmp/device_check

Rows: the train step's MFU (measured by `train_step.py` over the device's peak; plan's is a
roofline projection) and its peak device memory (measured: the allocator's peak; plan's: the
compiler's peak of the compiled step), and the sampler's decode rate (measured by
`sampler_bandwidth.py` with bfloat16 weights, batch 64; predicted here by the plan's own
decode-step count for that same batch, `jaxopt_rl.planning.costs`, over the chip's bandwidth).
A missing file prints as missing: the script never fails on a partial run.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "/tmp/device_check")
    plan, train, sampler = (_load(out / name) for name in
                            ("plan.json", "train_step.json", "sampler.json"))
    rows = []
    if plan and train:
        measured = train["results"][0]
        rows.append(("train MFU", f"{measured.get('mfu', float('nan')):.1%}",
                     f"{plan['train']['projected_mfu']:.1%} (roofline projection)"))
        peak = measured.get("device_peak_mb")
        rows.append(("train peak memory", "n/a" if peak is None else f"{peak / 1024:.2f} GiB",
                     f"{plan['train']['peak_bytes'] / 2**30:.2f} GiB (compiled step)"))
    if plan and sampler:
        from jaxopt_rl.config import load_config
        from jaxopt_rl.model.config import ModelConfig
        from jaxopt_rl.planning import costs
        from jaxopt_rl.planning.hardware import parse_slice

        chip = parse_slice(plan["topology"]).chip
        model = load_config(ModelConfig, ROOT / sampler["model"])
        model = dataclasses.replace(model, param_dtype="bfloat16", compute_dtype="bfloat16")
        # the slots a step reads, as the benchmark counted them (prompt + mean segment limit)
        slots = sampler["kv_mb_per_step"] * 1e6 / (sampler["batch"]
                                                   * costs.kv_bytes_per_token(model))
        step = costs.decode_step_bytes_per_chip(model, rows_per_chip=sampler["batch"],
                                                cache_slots=slots) / chip.hbm_bytes_per_s
        rows.append(("decode tokens/s", f"{sampler['decode_tokens_per_s']:.0f}",
                     f"{sampler['batch'] / step:.0f} (bandwidth roofline)"))
    if not rows:
        print(f"nothing to compare in {out} (plan.json, train_step.json, sampler.json)")
        return 0
    print(f"{'figure':22s} {'measured':>14s}   predicted by plan")
    for name, measured, predicted in rows:
        print(f"{name:22s} {measured:>14s}   {predicted}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
