"""One override syntax on the command line: `key=value` words, before or after a command's
options, told apart from paths; `--set` refused with the new form; every command's help free of
the old one."""

from __future__ import annotations

import pytest

from jaxopt_rl import cli
from jaxopt_rl.commands import split_overrides


def test_override_words_are_dotted_keys_and_paths_are_not():
    words = ["replay", "runs/x=1/dump.json.gz", "calibration.name=mini-v1", "a.json",
             "ranking.ties=average", "=5", "9k=1"]
    assert split_overrides(words) == (
        ["replay", "runs/x=1/dump.json.gz", "a.json", "=5", "9k=1"],
        ["calibration.name=mini-v1", "ranking.ties=average"])


def _captured(monkeypatch, command: str):
    import importlib

    module = importlib.import_module(f"jaxopt_rl.commands.{command}")
    seen = []
    monkeypatch.setattr(module, "run", lambda args: seen.append(args) or 0)
    return seen


def test_eval_overrides_before_and_after_options_reach_the_command_in_order(monkeypatch):
    import jaxopt_rl.commands.eval as ev

    replayed = []
    monkeypatch.setattr(ev, "_replay", lambda path, args, out: replayed.append((path, args)) or 0)
    assert cli.main(["eval", "replay", "runs/x=1/dump.json.gz", "calibration.kind=affine",
                     "--out", "o", "calibration.alpha=1.5", "calibration.beta_s=0.01"]) == 0
    path, args = replayed[0]
    assert str(path) == "runs/x=1/dump.json.gz" and args.action == ["replay", str(path)]
    assert args.overrides == ["calibration.kind=affine", "calibration.alpha=1.5",
                              "calibration.beta_s=0.01"]


def test_train_overrides_after_an_option_join_the_others(monkeypatch):
    seen = _captured(monkeypatch, "train")
    assert cli.main(["train", "steps=3", "--config", "c.yaml", "output_dir=runs/x"]) == 0
    assert seen[0].overrides == ["steps=3", "output_dir=runs/x"] and seen[0].config == "c.yaml"


def test_a_stray_word_or_an_override_to_a_command_without_config_is_refused(capsys):
    for argv in (["export", "a", "b", "steps=3"], ["export", "a", "b", "c"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
        assert "unrecognized arguments: " + argv[-1] in capsys.readouterr().err


@pytest.mark.parametrize("command", ["eval", "rewards", "train", "demo", "data"])
def test_set_is_refused_with_the_key_value_form(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--set", "ranking.ties=average"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--set was removed" in err and "ranking.ties=average" in err


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_help_never_offers_set(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert "--set" not in capsys.readouterr().out
