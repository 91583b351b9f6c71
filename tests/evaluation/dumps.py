"""Synthetic evaluation dumps for the replay tests (no sandbox, no data set)."""

from __future__ import annotations

import numpy as np

from jaxopt_rl.evaluation.dump import FORMAT, VERSION


def make_dump(seed: int = 0, problems: int = 4, n: int = 5, tests: tuple = (2, 1, 4),
              references: int = 3, model: str = "synthetic", fingerprint: str = "f" * 16,
              fresh_runs: int = 1, p_fail: float = 0.3, p_timeout: float = 0.05,
              drift: tuple = (1.5, 0.01)) -> dict:
    """`tests` = (#T0, #T+, #TO). Candidates fail with probability p_fail (on one random test),
    time out on TO with p_timeout; fresh reference runs = drift[0] * stored + drift[1] + noise."""
    rng = np.random.default_rng(seed)
    kinds = ["T0"] * tests[0] + ["T+"] * tests[1] + ["TO"] * tests[2]
    t_count = len(kinds)
    out = []
    for p in range(problems):
        stored_TH = rng.lognormal(-4, 1.0, (t_count, references))
        usable_TH = rng.random((t_count, references)) > 0.1
        samples = []
        for g in range(n):
            status = ["success"] * t_count
            duration = list(rng.lognormal(-4, 1.0, t_count) * drift[0] + drift[1])
            if rng.random() < p_fail:
                status[int(rng.integers(t_count))] = str(rng.choice(
                    ["wrong_answer", "runtime_error", "memory_limit"]))
            for t, kind in enumerate(kinds):
                if kind == "TO" and rng.random() < p_timeout:
                    status[t], duration[t] = "timeout", 10.0
            samples.append({"id": f"s{g}", "program": f"print({g})", "status": status,
                            "duration_s": [float(d) for d in duration],
                            "timing": ["measured"] * t_count})
        if rng.random() < 0.2:
            samples[0] = {"id": "s0", "program": None, "status": None, "duration_s": None,
                          "timing": None}
        runs = []
        for _ in range(fresh_runs):
            fresh_HT = (drift[0] * stored_TH + drift[1]).T * rng.lognormal(0, 0.05,
                                                                            (references, t_count))
            runs.append({"status": [["success"] * t_count for _ in range(references)],
                         "duration_s": fresh_HT.tolist()})
        out.append({
            "problem_id": f"p{p:02d}", "difficulty": ["easy", "medium", "hard"][p % 3],
            "tests": {"ids": [f"{k}/{t}" for t, k in enumerate(kinds)], "kinds": kinds,
                      "limit_s": [10.0] * t_count, "io_chars": [10] * t_count},
            "stored_references": {"ids": [f"r{h}" for h in range(references)],
                                  "duration_s": stored_TH.tolist(), "usable": usable_TH.tolist()},
            "fresh_references": {"ids": [f"r{h}" for h in range(references)], "runs": runs},
            "samples": samples,
        })
    return {"format": FORMAT, "version": VERSION, "model": model, "n": n,
            "created_at": "2026-01-01T00:00:00Z",
            "dataset": {"name": "synthetic", "root": "-", "fingerprint": fingerprint,
                        "campaigns": {}},
            "sampling": {}, "timing_pass": {"shuffled": True, "references_included": True,
                                            "seed": 0, "order": [], "sandbox_state": {"x": 1}},
            "problems": out}
