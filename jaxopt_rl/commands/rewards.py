"""`jaxopt-rl rewards`: replay execution records through a reward environment and report.

    jaxopt-rl rewards --records FILE --env CONFIG [key=value ...] [--out FILE.parquet|.jsonl]
                      [--per-rollout] [--plot FILE.png]

Loads the record file (format: `jaxopt_rl.data.execution_records`), the environment (a name
under configs/env or a YAML path, with `key=value` overrides of its keys), computes the signals and rewards in
one jitted call, prints a per-problem summary (and, on request, one row per rollout), and writes
per-rollout results. A malformed file or config exits with status 2 and one line naming the
file, row/key and problem (raised as ValueError / ConfigError and printed by `jaxopt_rl.cli`).

`jaxopt-rl rewards --example --env NAME [key=value ...]` (`run_on_example`) is the same report on the shipped
example records, written under runs/rewards_example/.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HELP = "Compute environment signals and rewards from an execution-record file."
RESULT_COLUMNS = ("problem_id", "rollout_id", "c_cor", "c_strict", "g", "q", "phi", "q_qar",
                  "q_qp", "reward", "undefined")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=Path,
                        help="execution-record file (.jsonl or .parquet)")
    parser.add_argument("--example", action="store_true",
                        help="use the shipped example records (writes runs/rewards_example/)")
    parser.add_argument("--env", required=True,
                        help="environment: a name under configs/env (e.g. qp_p30) or a YAML path")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="env config overrides, e.g. gates.quality_threshold=0.5 "
                        "ranking.ties=average")
    parser.add_argument("--out", type=Path, help="write per-rollout results (.parquet or .jsonl)")
    parser.add_argument("--per-rollout", action="store_true", help="also print one row per rollout")
    parser.add_argument("--plot", type=Path, help="write a PNG of the reward distribution")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.rewards.env_config import load_env_config

    if args.example:
        return run_on_example(args.env, args.overrides)
    if args.records is None:
        raise ValueError("rewards: give --records FILE (or --example for the shipped records)")
    if args.out is not None and args.out.suffix not in (".parquet", ".jsonl"):
        raise ValueError(f"--out {args.out}: use a .parquet or .jsonl file name")
    env = load_env_config(args.env, args.overrides)
    results = compute(args.records, env)
    console = _console()
    print_report(console, env, results, per_rollout=args.per_rollout)
    if args.out is not None:
        write_results(args.out, results)
        console.print(f"wrote {len(results['reward'])} rollouts to [bold]{args.out}[/]")
    if args.plot is not None:
        plot_results(args.plot, env, results)
        console.print(f"wrote plot to [bold]{args.plot}[/]")
    return 0


def run_on_example(env_name: str = "qp_p30", overrides: Sequence[str] = ()) -> int:
    """Rewards of one environment (with `key=value` overrides) on the shipped example records."""
    from jaxopt_rl.data.examples import EXAMPLE_RECORDS

    out_dir = Path("runs") / "rewards_example"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = argparse.Namespace(records=EXAMPLE_RECORDS, example=False, env=env_name,
                              overrides=list(overrides),
                              out=out_dir / f"rewards_{Path(env_name).stem}.parquet",
                              per_rollout=True, plot=out_dir / f"rewards_{Path(env_name).stem}.png")
    status = run(args)
    _console().print(
        "\nTry another environment: [bold]jaxopt-rl rewards --example --env abs_2s[/] (or mc, "
        "rw_p80, qar_p30,"
        " two_gate_linear, naive_opt_log, ...), or your own records:\n"
        f"  jaxopt-rl rewards --records {EXAMPLE_RECORDS} --env qp_p50 ranking.ties=average")
    return status


def compute(records_path: Path, env) -> dict[str, np.ndarray]:
    """Per-rollout results as NumPy columns (real rollouts only, in the order of the record
    index), plus per-rollout status counts."""
    from jaxopt_rl.data.execution_records import load_record_batch
    from jaxopt_rl.rewards import records as rec
    from jaxopt_rl.rewards.environment import rewards_and_signals

    if env.kind != "execution":
        raise ValueError(f"environment {env.name!r} is kind={env.kind}: it scores hidden "
                         "instances, not execution records (see river_rewards_from_scores)")
    batch, index = load_record_batch(records_path)
    reward_B, sig = rewards_and_signals(batch, env, all_rankings=True)
    real = index.real  # padding rollouts of the grouped layout never reach a report
    status_BT = real(sig.status_BT)
    considered_BT = real(batch.test_mask_BT)
    results = {
        "problem_id": np.array([p for p, _ in index.rollouts], dtype=object),
        "rollout_id": np.array([r for _, r in index.rollouts], dtype=object),
        "c_cor": real(sig.c_cor_B), "c_strict": real(sig.c_strict_B),
        "g": real(sig.g_B), "q": real(sig.q_B), "phi": real(sig.phi_B),
        "q_qar": real(sig.q_qar_B), "q_qp": real(sig.q_qp_B),
        "reward": real(reward_B), "undefined": real(sig.undefined_B),
        "inconclusive": real(sig.inconclusive_B),
        "untimed": real(sig.untimed_B), "unrankable": real(sig.unrankable_B),
        "lost_tests": real(sig.lost_tests_B),
        "used_tests": real(sig.used_test_mask_BT).sum(-1),
        "lost_references": lost_references(batch, index, env),
    }
    for name, code in (("success", rec.SUCCESS), ("timeout", rec.TIMEOUT),
                       ("failure", rec.FAILURE), ("infra", rec.INCONCLUSIVE)):
        results[f"n_{name}"] = ((status_BT == code) & considered_BT).sum(-1)
    return results


def lost_references(batch, index, env) -> dict:
    """Reference durations that are lost (null, <= 0 or not finite: a failed re-timing, a
    flaky node, a bad row) on the environment's optimization tests: `{"tests": {problem:
    [test ids whose every reference duration is lost]}, "durations": count of lost durations
    on those tests and on tests that keep a measured one}`."""
    from jaxopt_rl.rewards.records import TEST_KIND_CODE
    from jaxopt_rl.rewards.reference_table import lost_durations

    lost_PTH = np.asarray(lost_durations(batch.ref_duration_PTH, batch.ref_mask_PTH))
    ran_PTH = np.asarray(batch.ref_mask_PTH, bool)
    g = batch.group_size
    kind_PT = np.asarray(batch.test_kind_BT)[::g]
    opt_PT = np.asarray(batch.test_mask_BT, bool)[::g] & np.isin(
        kind_PT, [TEST_KIND_CODE[k] for k in env.optimization_kinds])
    all_lost_PT = opt_PT & ran_PTH.any(-1) & ~(ran_PTH & ~lost_PTH).any(-1)
    tests = {index.problem_ids[p]: [index.test_ids[p][t] for t in np.flatnonzero(row)]
             for p, row in enumerate(all_lost_PT) if row.any()}
    return {"tests": tests, "durations": int((lost_PTH & opt_PT[..., None]).sum())}


def _mean(values: np.ndarray, mask: np.ndarray | None = None) -> float:
    values = values.astype(float)
    keep = ~np.isnan(values) if mask is None else mask & ~np.isnan(values)
    return float(values[keep].mean()) if keep.any() else math.nan


def _fmt(value: float, digits: int = 2) -> str:
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def _console():
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or captured: do not squeeze the tables to 80 columns
        console.width = max(console.width, 120)
    return console


def problem_summary(results: dict[str, np.ndarray]) -> list[dict[str, float | str | int]]:
    """One row per problem: pass rates, mean ranked scalars over c~ rollouts, reward stats."""
    rows = []
    problems = list(dict.fromkeys(results["problem_id"].tolist()))
    for problem in problems:
        mine = results["problem_id"] == problem
        defined = mine & ~results["undefined"]
        correct = defined & results["c_strict"]
        reward = results["reward"][defined]
        rows.append({
            "problem": problem, "rollouts": int(mine.sum()),
            "undefined": int((mine & results["undefined"]).sum()),
            "c_cor": _mean(results["c_cor"], defined), "c_strict": _mean(results["c_strict"], defined),
            "g": _mean(results["g"], defined), "phi": _mean(results["phi"], defined),
            "q_qar": _mean(results["q_qar"], correct), "q_qp": _mean(results["q_qp"], correct),
            "reward": float(reward.mean()) if reward.size else math.nan,
            "reward_std": float(reward.std()) if reward.size else math.nan,
        })
    return rows


def print_report(console, env, results: dict[str, np.ndarray], per_rollout: bool) -> None:
    from rich.panel import Panel
    from rich.table import Table

    console.print(Panel(f"[bold]{env.name}[/]  {env.description}\n"
                        f"correctness {'+'.join(env.correctness_kinds)} · optimization "
                        f"{'+'.join(env.optimization_kinds) or '—'} · filter {env.filter.kind} · "
                        f"limit {env.limit.kind} · ranking {env.ranking.kind} · "
                        f"{env.composition.family}/{env.composition.mapping}",
                        title="reward environment", expand=False))
    table = Table(title="per problem", caption="c_cor, c~, g, φ, reward: means over rollouts with "
                  "a defined reward · q_QAR, q_QP: means over c~ rollouts (0 = fastest) · σ: "
                  "reward spread in the group (0 = no GRPO signal)")
    for name, justify in (("problem", "left"), ("rollouts", "right"), ("c_cor", "right"),
                          ("c~", "right"), ("g", "right"), ("φ", "right"), ("q_QAR", "right"),
                          ("q_QP", "right"), ("reward", "right"), ("σ", "right")):
        table.add_column(name, justify=justify, no_wrap=name == "problem")
    summary = problem_summary(results)
    for row in summary:
        rollouts = str(row["rollouts"])
        if row["undefined"]:
            rollouts += f" ([yellow]{row['undefined']} NaN[/])"
        sigma = _fmt(row["reward_std"])
        if row["reward_std"] == 0:
            sigma = f"[dim]{sigma}[/]"
        table.add_row(row["problem"], rollouts, _fmt(row["c_cor"]), _fmt(row["c_strict"]),
                      _fmt(row["g"]), _fmt(row["phi"]), _fmt(row["q_qar"]), _fmt(row["q_qp"]),
                      _reward_text(row["reward"]), sigma)
    defined = ~results["undefined"]
    table.add_section()
    table.add_row("all", str(len(results["reward"])), _fmt(_mean(results["c_cor"], defined)),
                  _fmt(_mean(results["c_strict"], defined)), _fmt(_mean(results["g"], defined)),
                  _fmt(_mean(results["phi"], defined)),
                  _fmt(_mean(results["q_qar"], defined & results["c_strict"])),
                  _fmt(_mean(results["q_qp"], defined & results["c_strict"])),
                  _reward_text(_mean(results["reward"], defined)), "")
    console.print(table)
    if per_rollout:
        console.print(_rollout_table(results))
    console.print(undefined_summary(env, results))


def undefined_summary(env, results: dict[str, np.ndarray]) -> str:
    """One line counting the rollouts without a defined reward, by cause (each rollout under
    its first cause: inconclusive, untimed, unrankable), and the untimed durations."""
    inconclusive = results["inconclusive"].astype(bool)
    untimed = (results["untimed"] > 0) & ~inconclusive
    unrankable = results["unrankable"].astype(bool) & ~inconclusive & ~untimed
    dropped = unrankable if env.ranking.if_unrankable == "drop" else np.zeros_like(unrankable)
    n_undefined = int(results["undefined"].sum())
    parts = [f"{int(inconclusive.sum())} inconclusive (infra_error on a test this environment "
             "reads)",
             f"{int(untimed.sum())} untimed ({int(results['untimed'].sum())} success duration(s) "
             "not measured on the timing fleet, NaN or beyond the cap, on tests whose duration "
             "the environment reads: never ranked)",
             f"{int(dropped.sum())} unrankable (no measured reference duration on a used test, "
             f"ranking.if_unrankable={env.ranking.if_unrankable})"]
    line = (f"{n_undefined} rollout(s) without a defined reward (NaN): {'; '.join(parts)}. The "
            "trainer drops them; they are never scored as failed programs.")
    if env.ranking.if_unrankable == "neutral" and unrankable.any():
        line += (f" {int(unrankable.sum())} unrankable rollout(s) got neutral speed credit "
                 "(ranking.if_unrankable=neutral).")
    lost = results.get("lost_references") or {"tests": {}, "durations": 0}
    if lost["durations"]:
        named = "; ".join(f"{problem}: {', '.join(tests)}"
                          for problem, tests in lost["tests"].items()) or "none"
        how = ("read at the cap, eq. 10 of docs/design/rewards.md §1"
               if env.ranking.lost_references == "cap" else "left out of the ranking")
        line += (f" {lost['durations']} lost reference duration(s) (null, <= 0 or not finite; "
                 f"{how}, ranking.lost_references={env.ranking.lost_references}); "
                 f"optimization tests with every reference duration lost: {named}; "
                 f"{int(((results['lost_tests'] > 0) & ~unrankable).sum())} rankable "
                 "rollout(s) use such a test.")
    flagged = n_undefined or unrankable.any() or lost["durations"]
    return f"[yellow]{line}[/]" if flagged else line


def _reward_text(value: float) -> str:
    if math.isnan(value):
        return "—"
    colour = "green" if value > 0.25 else "red" if value < -0.25 else "yellow"
    return f"[{colour}]{value:+.2f}[/]"


def _rollout_table(results: dict[str, np.ndarray]):
    from rich.table import Table

    table = Table(title="per rollout", caption="S/T/F/I: success/timeout/failure/infra_error "
                  "over all tests, after the environment's limits · used: optimization tests used")
    for name in ("problem", "rollout", "S/T/F/I", "used", "c_cor", "c~", "φ", "q_QAR", "q_QP",
                 "g", "q", "reward"):
        table.add_column(name, justify="left" if name in ("problem", "rollout") else "right",
                         no_wrap=name == "problem")
    previous = None
    for b in range(len(results["reward"])):
        problem = results["problem_id"][b]
        if previous is not None and problem != previous:
            table.add_section()
        previous = problem
        counts = "/".join(str(int(results[f"n_{k}"][b]))
                          for k in ("success", "timeout", "failure", "infra"))
        table.add_row(problem, results["rollout_id"][b], counts, str(int(results["used_tests"][b])),
                      _tick(results["c_cor"][b]), _tick(results["c_strict"][b]),
                      _fmt(results["phi"][b]), _fmt(results["q_qar"][b]), _fmt(results["q_qp"][b]),
                      _tick(results["g"][b]), _fmt(results["q"][b]),
                      _reward_text(float(results["reward"][b])))
    return table


def _tick(value: bool) -> str:
    return "[green]✓[/]" if value else "[red]✗[/]"


def write_results(path: Path, results: dict[str, np.ndarray]) -> None:
    """Per-rollout results; NaN (undefined) becomes null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {name: results[name].tolist() for name in RESULT_COLUMNS}
    for name in ("q", "phi", "q_qar", "q_qp", "reward"):
        columns[name] = [None if math.isnan(v) else float(v) for v in columns[name]]
    if path.suffix == ".jsonl":
        with path.open("w") as handle:
            for b in range(len(columns["reward"])):
                handle.write(json.dumps({name: columns[name][b] for name in RESULT_COLUMNS}) + "\n")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)


def plot_results(path: Path, env, results: dict[str, np.ndarray]) -> None:
    """Reward histogram (by c~) and q_QP against reward for every rollout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    defined = ~results["undefined"]
    reward, correct = results["reward"], results["c_strict"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    bins = np.linspace(-1, 1, 21)
    left.hist([reward[defined & correct], reward[defined & ~correct]], bins=bins, stacked=True,
              label=["c~ = 1", "c~ = 0"], color=["tab:green", "tab:red"])
    left.set(xlabel="reward", ylabel="rollouts", title=f"{env.name}: reward distribution")
    left.legend()
    problems = list(dict.fromkeys(results["problem_id"].tolist()))
    for number, problem in enumerate(problems):
        mine = defined & (results["problem_id"] == problem)
        colour = f"C{number % 10}"
        right.scatter(results["q_qp"][mine & correct], reward[mine & correct], label=problem,
                      color=colour, alpha=0.8)
        right.scatter(results["q_qp"][mine & ~correct], reward[mine & ~correct], color=colour,
                      marker="x", alpha=0.8)
    if env.ranking.kind == "qp" and env.gates.quality_threshold is not None:
        right.axvline(env.gates.quality_threshold, color="grey", linestyle="--", linewidth=1)
    right.set(xlabel="q_QP (0 = faster than every reference)", ylabel="reward",
              title="q_QP vs reward (x: c~ = 0; dashed: threshold p)", xlim=(-0.05, 1.05), ylim=(-1.1, 1.1))
    right.legend(fontsize="small", loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
