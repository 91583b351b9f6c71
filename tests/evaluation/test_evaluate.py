"""The live half of a replayed evaluation: one shared shuffled timing pass over candidates and
references, the dump it writes, and `jaxopt-rl eval --model` end to end with a tiny model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxopt_rl.data.mini import load_mini
from jaxopt_rl.evaluation import evaluate as ev
from jaxopt_rl.evaluation import replay as rp
from jaxopt_rl.evaluation.dump import check_dump
from tests.evaluation.fakes import StoredTimesSandbox

INLINE_PROBLEMS = ["mini-011", "mini-012"]  # every test stored inline: no materialising


@pytest.fixture(scope="module")
def dataset():
    return load_mini()


def test_reference_candidates_give_known_pass_rates(dataset):
    sandbox = StoredTimesSandbox(dataset, INLINE_PROBLEMS, scale=1.0)
    n = 8
    programs = ev.reference_programs(dataset, INLINE_PROBLEMS, n)
    dump = ev.build_dump(dataset, INLINE_PROBLEMS, programs, sandbox, model_name="refs",
                         seed=3, reference_runs=2)
    check_dump(dump)
    timing = dump["timing_pass"]
    assert timing["shuffled"] and timing["references_included"]
    executed = [tuple(k) for k in timing["order"]]
    assert len(executed) == len(set(executed)) == sandbox.calls
    assert executed != sorted(executed)  # candidates and references interleaved
    assert {k[1] for k in executed[:10]} == {"s", "r"}
    result = rp.replay(dump, resamples=50)
    # the fake passes exactly the verified-correct solutions: c~ = 1 iff the candidate is one
    expected = [sum(programs[pid][g] in sandbox.correct for g in range(n)) / n
                for pid in INLINE_PROBLEMS]
    p100 = result["eval"]["pass_at"]["1"]["p100"]["value"]
    assert p100 == pytest.approx(sum(expected) / len(expected))
    assert 0 < p100 < 1
    # the candidates ARE the references, re-run on the stored scale: they rank among them
    p50 = result["eval"]["pass_at"]["1"]["p50"]["value"]
    assert 0 < p50 <= p100
    fresh = rp.replay(dump, references="fresh", resamples=10)["eval"]["pass_at"]["1"]
    assert fresh["p100"]["value"] == p100


def test_a_layout_is_the_data_sets_stored_table_on_the_banks_tests(dataset):
    """The layout reads tests and stored durations through the problem bank; what it writes is
    the data set's stored reference table (`Dataset.reference_times`, read independently here)
    on the tests the bank keeps and the kinds asked for, and max_references spreads its picks
    over the references ranked by total stored duration."""
    from jaxopt_rl.rollouts.problems import ProblemBank

    pid, patterns, kinds = "mini-011", ("T0/*", "TO/a0*"), ("TO",)
    refs = dataset.reference_times(pid)
    tests = dataset.tests(pid)
    rows = [t for t, test in enumerate(tests) if test.kind in kinds
            and (test.test_id.startswith("T0/") or test.test_id.startswith("TO/a0"))]
    assert rows and len(rows) < len(tests)
    lay = ev.problem_layout(ProblemBank(dataset, 4.0, tests=patterns), pid, None, kinds=kinds)
    assert lay["tests"] == {"ids": [tests[t].test_id for t in rows], "kinds": ["TO"] * len(rows),
                            "limit_s": [4.0] * len(rows),
                            "io_chars": refs.io_chars_T[rows].tolist()}
    assert [c.input for c in lay["cases"]] == [tests[t].input for t in rows]
    stored = lay["stored_references"]
    assert stored["ids"] == list(refs.solution_ids)
    assert stored["duration_s"] == refs.duration_TH[rows].astype(float).tolist()
    assert stored["usable"] == refs.mask_TH[rows].tolist()
    code = {s.solution_id: s.code for s in dataset.solutions(pid)}
    assert lay["reference_code"] == [code[h] for h in refs.solution_ids]

    picked = ev.problem_layout(ProblemBank(dataset, 4.0), pid, None, max_references=3)
    total_H = np.where(refs.mask_TH, refs.duration_TH, 0).sum(axis=0)
    ranked = [refs.solution_ids[h] for h in np.argsort(total_H, kind="stable")]
    assert len(ranked) == 6  # picks 0, 2.5 -> 2, 5 of six ranked references
    assert set(picked["stored_references"]["ids"]) == {ranked[0], ranked[2], ranked[5]}


def test_bad_inputs_fail_with_one_line(dataset, tmp_path, capsys):
    from jaxopt_rl.cli import main

    assert main(["eval", "--model", str(tmp_path / "nope"), "--problems", "mini-011"]) == 2
    assert "unknown checkpoint" in capsys.readouterr().err
    assert main(["eval", "--model", "@references", "--problems"]) == 2
    assert "empty problem list" in capsys.readouterr().err
    assert main(["eval", "--model", "@references", "--problems", "mini-999"]) == 2
    assert "not in data set" in capsys.readouterr().err
    assert main(["eval", "frobnicate"]) == 2
    with pytest.raises(ValueError, match="same number n"):
        ev.build_dump(dataset, ["mini-011"], {"mini-011": []}, None, model_name="x")


@pytest.mark.slow
def test_eval_of_a_tiny_model_folder_end_to_end(tmp_path):
    """Random weights write no program; the pass still times the references and replays."""
    from jaxopt_rl.cli import main
    from jaxopt_rl.model import Tokenizer, init_model
    from jaxopt_rl.model.checkpoint import save_pretrained
    from jaxopt_rl.model.testing import tiny_test_config

    tokenizer = Tokenizer.default()
    model = init_model(tiny_test_config("qwen2", vocab_size=tokenizer.vocab_size,
                                        max_position_embeddings=2048, eos_token_ids=(4, 2)),
                       seed=0)
    folder = save_pretrained(model, tmp_path / "policy")
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(folder), "--problems", "mini-011", "--n", "2",
                 "--max-new-tokens", "8", "--max-references", "2", "--cap", "2",
                 "--resamples", "20", "--out", str(out), "--no-sweep"]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["model"] == str(folder) and report["n"] == 2 and report["problems"] == 1
    assert report["pass_at"]["1"]["p100"]["value"] == 0.0  # garbage programs
    state = report["timing_pass"]["sandbox_state"]
    assert state["pool"]["backend"] and report["timing_pass"]["references_included"]
    assert (out / "dump.json.gz").is_file() and (out / "p_tau.png").stat().st_size > 0


def test_two_models_share_one_timing_pass(dataset, tmp_path):
    from jaxopt_rl.cli import main
    from jaxopt_rl.evaluation.dump import write_dump

    sandbox = StoredTimesSandbox(dataset, ["mini-011"])
    good = ev.reference_programs(dataset, ["mini-011"], 4, include_incorrect=False)
    bad = {"mini-011": ["print(0)\n", None, "print(1)\n", "import sys\n"]}
    dumps = ev.build_dumps(dataset, ["mini-011"], {"good": (good, {}), "bad": (bad, {})},
                           sandbox, seed=1)
    a, b = dumps["good"], dumps["bad"]
    assert a["timing_pass"]["pass_id"] == b["timing_pass"]["pass_id"]
    assert a["problems"][0]["fresh_references"] == b["problems"][0]["fresh_references"]
    models_in_order = {k[4] for k in a["timing_pass"]["order"]}
    assert models_in_order == {-1, 0, 1}
    assert sandbox.calls == 4 + 3 + len(a["problems"][0]["stored_references"]["ids"])
    wr = rp.compare_speed(a, b)
    assert wr["WR_m"]["excluded"] == 1  # the bad model never passes
    paths = [write_dump(d, tmp_path / f"{name}.json") for name, d in dumps.items()]
    out = tmp_path / "cmp"
    assert main(["eval", "compare", *map(str, paths), "--out", str(out), "--resamples", "10"]) == 0
    assert "ONE shared timing pass" in (out / "compare.md").read_text()


def test_stop_after_failure_reaches_the_candidates_only(dataset):
    """Candidates may stop at their first failed correctness test (pass@k(p_tau) is decided
    there); references always run every test, since they rank on every test."""

    class Recording(StoredTimesSandbox):
        def submit(self, program, tests, limits, **options):
            self.seen.append((program in self.reference_code, options["stop_after_failure"],
                              tuple(options["test_kinds"])))
            return super().submit(program, tests, limits, **options)

    sandbox = Recording(dataset, ["mini-011"])
    sandbox.seen = []
    sandbox.reference_code = {s.code for s in dataset.solutions("mini-011")}
    bad = {"mini-011": ["print(0)\n", "print(1)\n"]}
    dump = ev.build_dumps(dataset, ["mini-011"], {"bad": (bad, {})}, sandbox,
                          stop_after_failure=True)["bad"]
    assert dump["timing_pass"]["stop_after_failure"] is True
    assert {stop for is_ref, stop, _ in sandbox.seen if not is_ref} == {True}
    assert {stop for is_ref, stop, _ in sandbox.seen if is_ref} == {False}
    kinds = {k for _, _, ks in sandbox.seen for k in ks}
    assert kinds <= {"T0", "T+", "TO"} and "T0" in kinds


@pytest.mark.slow
def test_eval_of_a_trainer_checkpoint(tmp_path):
    """A trainer run folder (Orbax checkpoint) is exported to OUT/policies/, then sampled and
    timed like any policy."""
    from jaxopt_rl.cli import main
    from jaxopt_rl.config import to_dict
    from jaxopt_rl.training.checkpoints import Checkpointer
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.mesh import mesh_from_config
    from jaxopt_rl.training.state import init_train_state

    run = tmp_path / "run"
    config = load_train_config("configs/train/tiny_qp_p30.yaml",
                               [f"output_dir={run}", "checkpoint.async_save=false"])
    _, state, _, _ = init_train_state(config, mesh_from_config(config.mesh))
    checkpointer = Checkpointer(run, config.checkpoint)
    checkpointer.save(state, data={"cursor": {"next_position": 0, "consumed_above": []}},
                      config=to_dict(config))
    checkpointer.wait()
    checkpointer.close()
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(run), "--problems", "mini-011", "--n", "1",
                 "--max-new-tokens", "8", "--max-references", "2", "--cap", "2",
                 "--resamples", "20", "--out", str(out), "--no-sweep"]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["n"] == 1 and report["problems"] == 1
    assert report["model"] == str(run)
    assert [p.name for p in (out / "policies").iterdir()] and all(
        (p / "config.json").is_file() for p in (out / "policies").iterdir())
    assert (out / "dump.json.gz").is_file() and (out / "report.md").is_file()
    assert (out / "p_tau.png").stat().st_size > 0


def test_sampled_programs_are_the_static_samplers_draws(dataset, monkeypatch):
    """sample_programs decodes whole problems per call with the rollout worker's group sampler
    (`rollouts.worker.sample_call`); with batch_size
    a multiple of n its draws are the static sampler's on each prompt repeated n times, in
    chunks of batch_size rows seeded by seed + the chunk's first row (and the short last chunk
    is padded, not decoded into the result)."""
    import jaxopt_rl.rollouts.worker as worker
    from jaxopt_rl.model import init_model, prompt
    from jaxopt_rl.model.testing import tiny_test_config
    from jaxopt_rl.model.tokenizer import Tokenizer
    from jaxopt_rl.sampling import generate

    monkeypatch.setattr(worker, "extract_program", lambda text: text)  # compare whole texts
    tokenizer = Tokenizer.default()
    model = init_model(tiny_test_config("qwen2", vocab_size=tokenizer.vocab_size), seed=1)
    template = prompt.PromptTemplate(system="", instruction="Write it.", problem_text="title")
    problems, n, batch_size = ["mini-011", "mini-012", "mini-014"], 3, 6
    got = ev.sample_programs(model, tokenizer, dataset, problems, n, max_new_tokens=12,
                             seed=5, batch_size=batch_size, template=template)
    rows = [prompt.problem_prompt(dataset.record(pid), template) for pid in problems
            for _ in range(n)]
    texts = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        chunk += chunk[-1:] * (batch_size - len(chunk))
        batch = generate(model, tokenizer.encode_batch(chunk), 12, seed=5 + start,
                         stop_tokens=tokenizer.eos_ids, pad_id=tokenizer.pad_id)
        texts += tokenizer.decode_batch(batch.completions())
    expected = {pid: texts[i * n:(i + 1) * n] for i, pid in enumerate(problems)}
    assert got == expected
    assert len(set(texts[:len(problems) * n])) == len(problems) * n  # every draw differs
