"""The RiVER demo's report: what the held-out results, the samples and the training logs become.

    out_dir/report.json       per policy: held-out score (mean and 95 % interval over seeds and
                              instances), per task, feasibility rate, share of samples that are
                              each reference heuristic, best-so-far, training statistics; the
                              three claims with their figures and a verdict computed from them
    out_dir/report.md         what was run, the tables, the verdicts
    out_dir/best_so_far.png   best-so-far held-out score against training step, per task
    out_dir/final_scores.png  final held-out score per task and policy, with intervals
    out_dir/heuristic_share.png  which reference heuristic the samples are, per task and policy
    out_dir/training.png      group feedback resolution and zero-advantage rate over steps

Pure: reads only its arguments (rollout records carry their extracted `program`,
`demo.river.with_programs`), writes only out_dir. The claims compare the first method
(RiVER) with the second (the baseline, Raw-GRPO in the shipped config). Measures:
`demo.river_scores`. Dimension letters: A runs (seeds), G samples, M instances, P tasks.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.demo.river_config import run_name
from jaxopt_rl.demo.river_scores import (
    best_so_far,
    bootstrap_difference,
    bootstrap_mean,
    heuristic_of,
    normalised_scores,
    verdict,
)

SFT = "sft"
MULTI_SCALE_RATIO = 100.0  # a task is multi-scale when its instances' reference spans differ this much
TRAINING_CURVES = (("groups/feedback_resolution", "group feedback resolution"),
                   ("groups/zero_advantage_rate", "zero-advantage group rate"))


class Scorer:
    """Program scores on held-out instances, from the evaluation pass's results."""

    def __init__(self, tasks: dict, results: dict):
        self.tasks = tasks
        self.by_code = {t: {r["code"]: r for r in results[t].values()} for t in tasks}
        self.references = {}
        for t, task in tasks.items():
            refs = [self.by_code[t][h.code] for h in task.heuristics]
            self.references[t] = (np.array([[np.nan if v is None else v for v in r["score"]]
                                            for r in refs]),
                                  np.array([r["valid"] for r in refs]))
        self.instances = {t: self.references[t][0].shape[1] for t in tasks}

    def q(self, task_id: str, program: str | None) -> np.ndarray:
        if program is None:
            return np.zeros(self.instances[task_id])
        r = self.by_code[task_id][program]
        score = [np.nan if v is None else v for v in r["score"]]
        return normalised_scores(score, r["valid"], *self.references[task_id],
                                 self.tasks[task_id].objective)

    def feasible(self, task_id: str, program: str | None) -> bool:
        return program is not None and all(self.by_code[task_id][program]["valid"])

    def span_ratio(self, task_id: str) -> float:
        """max/min over instances of (best - worst reference score): how many orders of
        magnitude the instances' objective ranges differ by."""
        scores, _ = self.references[task_id]
        span = scores.max(axis=0) - scores.min(axis=0)
        span = span[span > 0]
        return float(span.max() / span.min()) if span.size else 1.0


def write_river_report(out_dir: Path, *, config, tasks: dict, results: dict, samples: dict,
                       rollouts: dict, training: dict, phases_s: dict, wall_s: float
                       ) -> dict[str, Path]:
    scorer = Scorer(tasks, results)
    ev, seeds, steps = config.eval, list(config.seeds), config.train.steps
    task_ids = list(tasks)
    policies = {SFT: [SFT]} | {m: [run_name(m, s) for s in seeds] for m in config.methods}

    def q_AGM(names, task_ids_=task_ids):  # instances of the chosen tasks side by side
        return np.stack([np.concatenate([np.stack([scorer.q(t, p) for p in samples[n][t]])
                                         for t in task_ids_], axis=1) for n in names])

    targets = _target_heuristics(tasks, samples, rollouts)
    figures: dict[str, Any] = {}
    for policy, names in policies.items():
        mean, low, high = bootstrap_mean(q_AGM(names), ev.resamples, ev.seed)
        per_task = {}
        for t in task_ids:
            tm, tl, th = bootstrap_mean(q_AGM(names, [t]), ev.resamples, ev.seed)
            drawn = [p for n in names for p in samples[n][t]]
            slugs = [heuristic_of(p, {h.slug: h.code for h in tasks[t].heuristics}) for p in drawn]
            share = {h.slug: slugs.count(h.slug) / len(drawn) for h in tasks[t].heuristics}
            share["other program"] = sum(s is None and p is not None
                                         for s, p in zip(slugs, drawn)) / len(drawn)
            share["no program"] = sum(p is None for p in drawn) / len(drawn)
            per_task[t] = {"score": tm, "ci": [tl, th], "heuristic_share": share,
                           "feasible": float(np.mean([scorer.feasible(t, p) for p in drawn]))}
        entry = {"held_out_score": mean, "ci": [low, high], "per_task": per_task,
                 "feasible": float(np.mean([v["feasible"] for v in per_task.values()])),
                 "target_share": float(np.mean([per_task[t]["heuristic_share"][targets[t]]
                                                for t in task_ids]))}
        if policy != SFT:
            curves = [_best_so_far(scorer, rollouts[n], task_ids, steps) for n in names]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a task no run sampled yet
                entry["best_so_far"] = {t: np.nanmean([c[t] for c in curves], axis=0).tolist()
                                        for t in [*task_ids, "mean"]}
            entry["best_so_far_by_seed"] = {str(s): c["mean"].tolist()
                                            for s, c in zip(seeds, curves)}
            for key, label in TRAINING_CURVES:
                values = [r[key] for n in names for r in training[n] if r.get(key) is not None]
                entry[label] = float(np.mean(values)) if values else None
        figures[policy] = entry
    claims = _claims(config, scorer, samples, rollouts, figures, targets, q_AGM)
    report = {"policies": figures, "claims": claims, "targets": targets, "seeds": seeds,
              "methods": list(config.methods), "steps": steps, "wall_s": wall_s,
              "phases_s": phases_s}
    paths = {"report_json": out_dir / "report.json", "report_md": out_dir / "report.md"}
    paths["report_json"].write_text(json.dumps(report, indent=1, default=float))
    paths.update(_plots(out_dir, report, task_ids, training, policies))
    paths["report_md"].write_text(_markdown(report, task_ids, config))
    return paths


def _best_so_far(scorer: Scorer, records: list[dict], task_ids, steps: int) -> dict:
    cache: dict = {}
    curves = {}
    for t in task_ids:
        pairs = []
        for r in records:
            if r["problem_id"] != t or (p := r["program"]) is None:
                continue
            if p not in cache:
                cache[p] = float(scorer.q(t, p).mean())
            pairs.append((r["step"], cache[p]))
        curves[t] = best_so_far(pairs, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a step before any task was sampled
        curves["mean"] = np.nanmean([curves[t] for t in task_ids], axis=0)
    return curves


def _target_heuristics(tasks: dict, samples: dict, rollouts: dict) -> dict[str, str]:
    """Per task, the best-ranked reference heuristic that any policy wrote (in its evaluation
    samples or in training): the best one the SFT start can write, which it writes rarely (the
    'rare strong' heuristic of the frequency claim). The best declared one when none appears."""
    targets = {}
    for t, task in tasks.items():
        codes = {h.slug: h.code for h in task.heuristics}
        seen = {heuristic_of(p, codes) for drawn in samples.values() for p in drawn[t]}
        seen |= {heuristic_of(r["program"], codes) for records in rollouts.values()
                 for r in records if r["problem_id"] == t}
        targets[t] = next((h.slug for h in task.heuristics if h.slug in seen),
                          task.heuristics[0].slug)
    return targets


def _frequency_tasks(tasks: dict, samples: dict, rollouts: dict, targets: dict
                     ) -> dict[str, str]:
    """The tasks in the frequency-dominance setting, each with its common heuristic: the SFT
    start's most frequent heuristic is neither the target nor the worst-ranked heuristic any
    policy wrote, so it is a frequent non-winner that a group still ranks above its average."""
    chosen = {}
    for t, task in tasks.items():
        codes = {h.slug: h.code for h in task.heuristics}
        written = {heuristic_of(p, codes) for drawn in samples.values() for p in drawn[t]}
        written |= {heuristic_of(r["program"], codes)
                    for records in rollouts.values() for r in records if r["problem_id"] == t}
        written.discard(None)
        sft = [slug for slug in (heuristic_of(p, codes) for p in samples[SFT][t]) if slug]
        if not sft:
            continue
        common = max(set(sft), key=sft.count)
        worst = max(written, key=lambda slug: [h.slug for h in task.heuristics].index(slug))
        if common not in (targets[t], worst):
            chosen[t] = common
    return chosen


def _claims(config, scorer, samples, rollouts, figures, targets, q_AGM) -> dict:
    ev, seeds = config.eval, list(config.seeds)
    river, base = config.methods[0], config.methods[1]
    a = [run_name(river, s) for s in seeds]
    b = [run_name(base, s) for s in seeds]
    claims = {"compared": [river, base]}
    multi = [t for t in scorer.tasks if scorer.span_ratio(t) >= MULTI_SCALE_RATIO]
    if multi:
        diff = bootstrap_difference(q_AGM(a, multi), q_AGM(b, multi), ev.resamples, ev.seed)
        wins = sum(q_AGM([x], multi).mean() > q_AGM([y], multi).mean() for x, y in zip(a, b))
        claims["scale_dominance"] = {
            "tasks": {t: scorer.span_ratio(t) for t in multi}, "difference": diff[0],
            "ci": list(diff[1:]), "seeds_won": int(wins), "verdict": verdict(*diff[1:])}

    frequent = _frequency_tasks(scorer.tasks, samples, rollouts, targets)
    claims["frequency_dominance"] = {"tasks": frequent}
    if frequent:
        def target_AGP(names):  # [A, G, P]: 1 where sample n of task t is its target heuristic
            codes = {t: {targets[t]: next(h.code for h in scorer.tasks[t].heuristics
                                          if h.slug == targets[t])} for t in frequent}
            return np.array([[[heuristic_of(p, codes[t]) is not None
                               for t, p in zip(frequent, row)]
                              for row in zip(*[samples[n][t] for t in frequent])]
                             for n in names], float)

        diff = bootstrap_difference(target_AGP(a), target_AGP(b), ev.resamples, ev.seed)
        wins = sum(target_AGP([x]).mean() > target_AGP([y]).mean() for x, y in zip(a, b))
        claims["frequency_dominance"].update(
            sft_share=float(target_AGP([SFT]).mean()), difference=diff[0], ci=list(diff[1:]),
            seeds_won=int(wins), verdict=verdict(*diff[1:]))
    final = [(figures[river]["best_so_far_by_seed"][str(s)][-1],
              figures[base]["best_so_far_by_seed"][str(s)][-1]) for s in seeds]
    area = [(np.nanmean(figures[river]["best_so_far_by_seed"][str(s)]),
             np.nanmean(figures[base]["best_so_far_by_seed"][str(s)])) for s in seeds]
    stronger = sum(x > y for x, y in final)
    earlier = sum(fx == fy and ax > ay for (fx, fy), (ax, ay) in zip(final, area))
    claims["best_so_far"] = {
        "final_by_seed": final, "area_by_seed": area, "seeds_stronger": int(stronger),
        "seeds_equal_but_earlier": int(earlier),
        "verdict": (f"held in {stronger + earlier} of {len(seeds)} seeds" if stronger + earlier
                    else f"did not hold in any of {len(seeds)} seeds")}
    return claims


def _plots(out_dir: Path, report: dict, task_ids, training: dict, policies: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = {}
    figs = report["policies"]
    methods = report["methods"]
    panels = [*task_ids, "mean"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2), squeeze=False)
    for ax, t in zip(axes[0], panels):
        for m in methods:
            curve = figs[m]["best_so_far"][t]
            ax.plot(range(1, len(curve) + 1), curve, label=m)
        ax.set_title(t if t != "mean" else "mean over tasks")
        ax.set_xlabel("training step")
    axes[0][0].set_ylabel("best-so-far held-out score")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    paths["best_so_far_png"] = out_dir / "best_so_far.png"
    fig.savefig(paths["best_so_far_png"], dpi=110)
    plt.close(fig)

    names = [SFT, *methods]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(task_ids) * len(names) / 2), 3.6))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        per = figs[name]["per_task"]
        means = [per[t]["score"] for t in task_ids]
        errors = [[per[t]["score"] - per[t]["ci"][0] for t in task_ids],
                  [per[t]["ci"][1] - per[t]["score"] for t in task_ids]]
        ax.bar(np.arange(len(task_ids)) + k * width, means, width, yerr=errors, label=name,
               capsize=2)
    ax.set_xticks(np.arange(len(task_ids)) + 0.4 - width / 2, task_ids)
    ax.set_ylabel("held-out score (1 = best reference)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths["final_scores_png"] = out_dir / "final_scores.png"
    fig.savefig(paths["final_scores_png"], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(task_ids), figsize=(3.2 * len(task_ids), 3.4), squeeze=False)
    for ax, t in zip(axes[0], task_ids):
        bottom = np.zeros(len(names))
        for slug in figs[SFT]["per_task"][t]["heuristic_share"]:
            share = np.array([figs[n]["per_task"][t]["heuristic_share"][slug] for n in names])
            ax.bar(range(len(names)), share, bottom=bottom, label=slug)
            bottom += share
        ax.set_xticks(range(len(names)), names, rotation=30, fontsize=7)
        ax.set_title(t)
        ax.legend(fontsize=5)
    fig.tight_layout()
    paths["heuristic_share_png"] = out_dir / "heuristic_share.png"
    fig.savefig(paths["heuristic_share_png"], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(TRAINING_CURVES), figsize=(9, 3.2))
    for ax, (key, label) in zip(axes, TRAINING_CURVES):
        for m in methods:
            for k, name in enumerate(policies[m]):
                rows = [r for r in training[name] if r.get(key) is not None]
                ax.plot([r["step"] for r in rows], [r[key] for r in rows], alpha=0.7,
                        color=f"C{methods.index(m)}", label=m if k == 0 else None)
        ax.set_title(label)
        ax.set_xlabel("training step")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    paths["training_png"] = out_dir / "training.png"
    fig.savefig(paths["training_png"], dpi=110)
    plt.close(fig)
    return paths


def _markdown(report: dict, task_ids, config) -> str:
    figs, claims = report["policies"], report["claims"]
    names = [SFT, *report["methods"]]
    lines = ["# RiVER demo", "",
             f"Methods {', '.join(report['methods'])}; seeds {report['seeds']}; "
             f"{report['steps']} GRPO steps per run from the SFT start; tasks "
             f"{', '.join(task_ids)}; {config.eval.samples} samples per task and policy, "
             f"{config.eval.held_out_instances} held-out instances per task. Wall time "
             f"{report['wall_s']:.0f} s.", "",
             "Held-out score: per instance 1 = the task's best reference heuristic, 0 = its "
             "worst (an invalid answer scores 0); mean over tasks, samples, instances and "
             "seeds, 95 % bootstrap interval over seeds and instances. Measured, not projected.",
             "", "| policy | held-out score | " + " | ".join(task_ids)
             + " | feasible | target heuristic share |",
             "|---|---|" + "---|" * len(task_ids) + "---|---|"]
    for n in names:
        f = figs[n]
        cells = [f"{f['per_task'][t]['score']:.3f}" for t in task_ids]
        lines.append(f"| {n} | {f['held_out_score']:.3f} [{f['ci'][0]:.3f}, {f['ci'][1]:.3f}] | "
                     + " | ".join(cells) + f" | {f['feasible']:.2f} | {f['target_share']:.2f} |")
    lines += ["", "Target heuristic per task (the best any policy wrote; the SFT start writes it "
              "rarely): "
              + ", ".join(f"{t}: {h}" for t, h in report["targets"].items()), "",
              "| method | final best-so-far (mean over tasks) | feedback resolution | "
              "zero-advantage rate |", "|---|---|---|---|"]
    for m in report["methods"]:
        f = figs[m]
        fr, za = f["group feedback resolution"], f["zero-advantage group rate"]
        lines.append(f"| {m} | {f['best_so_far']['mean'][-1]:.3f} | "
                     f"{'n/a' if fr is None else f'{fr:.3f}'} | "
                     f"{'n/a' if za is None else f'{za:.3f}'} |")
    river, base = claims["compared"]
    lines += ["", f"## Claims ({river} against {base})", ""]
    if "scale_dominance" in claims:
        c = claims["scale_dominance"]
        lines.append(f"- **Scale dominance** (tasks whose instances' objective ranges differ "
                     f"by >= {MULTI_SCALE_RATIO:.0f}x: {', '.join(c['tasks'])}): held-out score "
                     f"difference {c['difference']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}], "
                     f"{river} ahead in {c['seeds_won']} of {len(report['seeds'])} seeds: "
                     f"{c['verdict']}.")
    c = claims["frequency_dominance"]
    if c["tasks"]:
        lines.append("- **Frequency dominance** (tasks whose SFT start writes a non-winning "
                     "heuristic most often: "
                     + ", ".join(f"{t} ({h})" for t, h in c["tasks"].items())
                     + f"; share of samples that are the target heuristic, SFT start "
                     f"{c['sft_share']:.2f}): difference {c['difference']:+.3f} "
                     f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}], {river} ahead in "
                     f"{c['seeds_won']} of {len(report['seeds'])} seeds: {c['verdict']}.")
    else:
        lines.append("- **Frequency dominance**: no task in its setting (the SFT start's most "
                     "frequent heuristic is the target or the worst written).")
    c = claims["best_so_far"]
    lines.append(f"- **Best so far** (a stronger program found, or the same found earlier): "
                 f"{c['verdict']} (final per seed, {river} vs {base}: "
                 + ", ".join(f"{x:.3f} vs {y:.3f}" for x, y in c["final_by_seed"]) + ").")
    lines += ["", "Phases (s): " + ", ".join(f"{k} {v:.0f}" for k, v in report["phases_s"].items()),
              "", "![best so far](best_so_far.png)", "", "![final scores](final_scores.png)",
              "", "![heuristic share](heuristic_share.png)", "", "![training](training.png)", ""]
    return "\n".join(lines)
