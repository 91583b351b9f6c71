"""`jaxopt-rl study`: the measurement studies of the papers, on synthetic data or on our data set.

    jaxopt-rl study noise   [--out DIR] [--trials N] [--seed S]
        Appendix A.3 playground: timeout vs win-rate accuracy under additive / multiplicative
        noise (`jaxopt_rl.evaluation.noise_study`) -> noise.json, noise.md, noise.png
    jaxopt-rl study ranking [--out DIR] [--data mini] [--problems ...] [--reruns R]
                            [--from-dump CAMPAIGN]
        the 17 ranking metrics under reruns, LOPO calibration and strong-vs-weak separation
        (`jaxopt_rl.evaluation.ranking_study`, needs the sandbox) -> ranking.json, ranking.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Measurement studies: timing-noise playground (noise), ranking-metric stability (ranking)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    noise = sub.add_parser("noise", help="timeout vs win-rate accuracy under synthetic noise")
    noise.add_argument("--out", type=Path, default=Path("runs/study_noise"))
    noise.add_argument("--trials", type=int, default=4000, help="Monte Carlo trials per level")
    noise.add_argument("--seed", type=int, default=0)
    ranking = sub.add_parser("ranking", help="stability of the 17 ranking metrics (sandbox)")
    ranking.add_argument("--out", type=Path, default=Path("runs/study_ranking"))
    ranking.add_argument("--data", default="mini", help="'mini' or a built dataset folder")
    ranking.add_argument("--problems", nargs="*", default=None,
                         help="problem ids (default: every problem of the data set)")
    ranking.add_argument("--reruns", type=int, default=3, help="reruns R of every reference")
    ranking.add_argument("--max-references", type=int, default=None,
                         help="at most this many references per problem (fastest-first spread)")
    ranking.add_argument("--urls", default="", help="sandbox fleet URLs (default: embedded pool)")
    ranking.add_argument("--seed", type=int, default=0)
    ranking.add_argument("--from-dump", type=Path, default=None,
                         help="a calibration campaign dump (jaxopt-rl calibrate writes one): "
                         "no sandbox run")


def run(args: argparse.Namespace) -> int:
    if args.study == "noise":
        return _noise(args)
    return _ranking(args)


def _noise(args) -> int:
    import time

    from rich.console import Console

    from jaxopt_rl.evaluation import noise_study

    if args.trials < 1:
        raise ValueError(f"--trials {args.trials}: must be >= 1")
    console = Console()
    started = time.perf_counter()
    with console.status("simulating the noise sweep"):
        rows = noise_study.run_study(trials=args.trials, seed=args.seed)
    paths = noise_study.write_outputs(rows, args.out)
    console.print(noise_study.markdown_table(rows))
    console.print(f"{len(rows)} settings x levels, {args.trials} trials each, "
                  f"{time.perf_counter() - started:.1f} s; wrote {paths['json']}, "
                  f"{paths['table']}, {paths['plot']}")
    return 0


def _ranking(args) -> int:
    import json

    from jaxopt_rl.evaluation import ranking_study
    from jaxopt_rl.evaluation.dump import read_dump, write_dump

    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_dump is not None:
        dump = read_dump(args.from_dump)
    else:
        if args.reruns < 2:
            raise ValueError(f"--reruns {args.reruns}: rerun noise needs >= 2")
        from jaxopt_rl.evaluation.calibration import reference_campaign

        dump = reference_campaign(args.data, args.problems, reruns=args.reruns, seed=args.seed,
                                  max_references=args.max_references, urls=args.urls)
        write_dump(dump, args.out / "campaign.json.gz")
    result = ranking_study.study(dump)
    (args.out / "ranking.json").write_text(json.dumps(result, indent=1) + "\n")
    text = ranking_study.markdown(result)
    (args.out / "ranking.md").write_text(text)
    print(text)
    print(f"wrote {args.out / 'ranking.json'}, {args.out / 'ranking.md'}")
    return 0
